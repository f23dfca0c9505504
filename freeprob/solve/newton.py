"""Solvers of the Dyson equation (docs/math.md §4).

They take a numeric system (:mod:`freeprob.solve.numeric`) and points, and know
nothing of expressions.

* :func:`solve_fast`: double precision, vectorized over all points. From
  ``Im z`` large (where the damped fixed-point iteration converges at once)
  it follows a path down to each target, Newton at every step, halving steps
  that fail; then it sends the regularization ``eps`` of the non-``u`` rows to
  exactly 0, and polishes with Newton steps at the target until they stop
  shrinking (machine precision). Points on the real axis are solved a little
  above it and then by Newton's method on the axis itself.
* :func:`solve_mp`: Newton's method in an mpmath context from a starting
  point (usually the double-precision solution), returned only if the
  residual is below the tolerance and the answer lies in the right half-plane.
* :func:`solve_point`: the one verified high-precision point solve: guard
  digits, the double-precision start, :func:`solve_mp`, and a second solve
  with 10 more digits that must agree to the digits asked for.
"""

import threading
import weakref
from dataclasses import dataclass

import numpy as np

from .._errors import ConvergenceError
from .._precision import context, guard_digits, to_mpc
from .numeric import NumericSystems

__all__ = ["DysonSolution", "PointSolution", "solve_fast", "solve_mp", "solve_point", "solve_points", "newton_mp"]


@dataclass(frozen=True)
class DysonSolution:
    """Result of a solve at one point.

    Attributes
    ----------
    z : complex or mpc
    g : tuple
        The unknowns.
    outputs : tuple
        ``G`` on the ``u`` rows.
    residual : float or mpf
        ``max |g - Phi(g)|`` at the solution.
    iterations : int
    dps : int or None
        Decimal digits asked for (None for double precision).
    method : str
    converged : bool
    """

    z: object
    g: tuple
    outputs: tuple
    residual: object
    iterations: int
    dps: object
    method: str
    converged: bool


#: An intermediate Newton step of a path is given up once its residual exceeds its best so far this many times
#: (from the third iteration). A residual that only stalls, or rises a little before it falls, is kept: from a
#: start a decade away from an atom's pole it rises four-fold, then converges, where halving the step costs
#: two more solves.
DIVERGED = 10.0


def _newton_fast(fast, g, z, eps, maxiter=12, tol=1e-10, verify=True):
    """Newton on all points; returns g, converged mask, residual, outputs.

    With ``verify=False`` (intermediate steps of a path) a point also counts as
    converged once its Newton step is below ``1e-5`` relative: quadratic
    convergence then puts the residual near ``1e-10``, and the final,
    verified step of the path checks it anyway.
    """
    P = g.shape[0]
    g = g.copy()
    conv = np.zeros(P, bool)
    res = np.full(P, np.inf)
    outs = np.zeros((P, len(fast.outputs)), complex)
    eye = np.eye(fast.r)
    # only the points still moving are evaluated: a converged point (step 0) or
    # one whose step is not finite (left where it is) would give the same values
    # at every further iteration
    live = np.arange(P)
    best = np.full(P, np.inf)  # the smallest residual so far
    for it in range(maxiter):
        gl = g[live]
        phi, outs[live], jac = fast.phi(gl, z[live], eps[live], jacobian=True)
        r = gl - phi
        scale = 1 + np.max(np.abs(gl), axis=1)
        res[live] = np.max(np.abs(r), axis=1) / scale
        last = DIVERGED * best[live]
        best[live] = np.minimum(best[live], res[live])
        cl = np.isfinite(res[live]) & (res[live] < tol)
        conv[live] = cl
        if conv.all():
            return g, conv, res, outs
        if not verify and it >= 2:
            # an intermediate step of a path whose residual has grown DIVERGED times above its best has left
            # Newton's basin: it is given up now (the path halves the step), not after maxiter iterations
            keep = cl | (res[live] < last)
            if not keep.all():
                live, r, jac, gl, cl, scale = (live[keep], r[keep], jac[keep], gl[keep], cl[keep], scale[keep])
                if not len(live):
                    break
        with np.errstate(all="ignore"):
            try:
                delta = np.linalg.solve(eye[None] - jac, r[:, :, None])[:, :, 0]
            except np.linalg.LinAlgError:
                delta = np.stack([_lstsq(eye - jac[i], r[i]) for i in range(len(live))])
        delta[cl] = 0
        bad = ~np.isfinite(delta).all(axis=1)
        delta[bad] = 0
        g[live] = gl - delta
        if not verify:
            step = np.max(np.abs(delta), axis=1) / scale
            small = ~bad & (step < 1e-5)
            if (cl | small).all() and conv.sum() + (small & ~cl).sum() == P:
                res[live] = np.where(cl, res[live], step**2)
                conv[live] = cl | small
                return g, conv, res, outs
        live = live[~cl & ~bad]
        if not len(live):
            break
    phi, outs, _ = fast.phi(g, z, eps)
    res = np.max(np.abs(g - phi), axis=1) / (1 + np.max(np.abs(g), axis=1))
    conv = np.isfinite(res) & (res < tol)
    return g, conv, res, outs


def _lstsq(a, b):
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        # LAPACK's least squares prints "illegal value" on non-finite input
        return np.full_like(b, np.nan)
    try:
        return np.linalg.lstsq(a, b, rcond=None)[0]
    except np.linalg.LinAlgError:
        return np.full_like(b, np.nan)


def _halfplane_ok(outs, z, tol):
    # Im G < 0 on the u rows when Im z > 0 (<= tol on the axis)
    return np.all(outs.imag <= tol * (1 + np.abs(outs)), axis=1) | (z.imag <= 0)


def _advance(fast, g, z0, e0, z1, e1, depth, tol, verify=True):
    """Move solutions from (z0, e0) to (z1, e1), splitting failed steps."""
    g1, conv, res, outs = _newton_fast(fast, g.copy(), z1, e1, tol=tol, verify=verify)
    conv &= _halfplane_ok(outs, z1, 1e-8)
    if conv.all() or depth == 0:
        return g1, conv, res
    bad = ~conv
    zm, em = _midpoints(z0[bad], e0[bad], z1[bad], e1[bad])
    gm, cm, _ = _advance(fast, g[bad], z0[bad], e0[bad], zm, em, depth - 1, tol, verify)
    g2, c2, r2 = _advance(fast, gm, zm, em, z1[bad], e1[bad], depth - 1, tol, verify)
    g1[bad] = g2
    conv[bad] = c2 & cm
    res[bad] = r2
    return g1, conv, res


#: Largest relative change of the solution between x + ih and x + 2ih for a
#: real point kept at x + ih (its error as the boundary value is about that).
AXIS_KEEP = 1e-12

#: Times a real point refused on the axis is brought 1000 times nearer to it and tried again.
AXIS_RETRIES = 3

#: Largest |z| the double-precision solve takes: its path starts at twice the
#: largest point, and squares of the unknowns must stay finite.
MAX_POINT = 1e150


def solve_fast(fast, z, eps=0.0, steps_per_decade=1.0, depth=10, tol=1e-10, raise_on_failure=True, anchors=True,
               polish=True, axis_offset=1e-12, radius=None):
    """Solve at every point of ``z`` (Im z >= 0) in double precision.

    Parameters
    ----------
    fast : FastSystem
    z : array of complex
        Targets with ``Im z >= 0``. A point with ``Im z == 0`` asks for the
        boundary value ``lim_{y -> 0+}`` of the solution at ``z + iy`` (see
        ``axis_offset``).
    eps : float
        Final regularization of the non-``u`` rows (0 by default).
    tol : float
        Residual ``max |g - Phi(g)| / (1 + max |g|)`` a solution must reach.
    anchors : bool
        With 200 points or more, follow full paths only for every 8th point and
        start the others from their neighbours (see ``_solve_by_anchors``).
    polish : bool
        Once a point has converged to ``tol``, take further Newton steps at
        the target while they shrink, down to rounding error (see
        ``_polish``); the polished solution is kept only if its residual is
        no larger. Without polishing a solution is accurate to about
        ``tol`` times the conditioning of the system.
    axis_offset : float
        A point ``x`` on the real axis is first solved at ``x + i h`` with
        ``h = axis_offset (1 + |x|)``, then by Newton's method at ``x`` itself
        (inside the support the boundary value is a regular solution there:
        its imaginary part is nonzero). The axis solution is kept when Newton
        converges to ``tol``, stays within :data:`AXIS_MOVE` (relative) of
        its start and has ``Im G <= 1e-8 (1 + |G|)`` on the ``u`` rows;
        otherwise (at an atom, or so close to an edge that the axis solution
        is ill-conditioned: about ``1e-10`` of the support's scale) ``h`` is
        cut by factors of 1000 (:data:`AXIS_RETRIES` times) and the axis step
        tried again, and a point still refused keeps the solution at
        ``x + i h`` only if it moves by at most :data:`AXIS_KEEP` between
        ``x + ih`` and ``x + 2ih`` (else it is unverified).

    radius : float, optional
        A bound ``R`` of the support of the law whose Cauchy transform is the
        first output (in the system's variable). With it, a point above the
        axis must satisfy ``-Im G >= y / ((|x| + R)^2 + y^2) / 2`` (half the
        strict Herglotz bound), which refuses a real branch next to an atom.

    A real point whose axis step is refused keeps the solution at ``x + ih``
    only where it moves by at most :data:`AXIS_KEEP` (relative) between
    ``x + ih`` and ``x + 2ih``; otherwise it is unverified.

    Returns
    -------
    g : (P, r) complex array
    outputs : (P, n_u) complex array
    converged : (P,) bool array
    residual : (P,) float array

    Raises
    ------
    ConvergenceError
        With the point and its residual, when a point does not converge and
        ``raise_on_failure`` is set (unconverged points are otherwise flagged
        in ``converged``), or when a point is not finite.
    """
    z = np.atleast_1d(np.asarray(z, dtype=complex))
    with np.errstate(over="ignore", invalid="ignore"):
        too_far = ~np.isfinite(z) | ~(np.abs(z) <= MAX_POINT)
    if too_far.any():
        bad = z[too_far][0]
        raise ConvergenceError(
            f"a point of the double-precision solve is not finite or beyond {MAX_POINT:.0e} ({bad}): either the "
            f"point is too far out (G(z) is 1/z to double precision there), or the law's scale overflows double "
            f"precision (its high moments, which set the search range, are beyond 1e308; rescale the model)",
            point=complex(bad),
        )
    P = len(z)
    axis = z.imag == 0
    zt = np.where(axis, z + 1j * axis_offset * (1 + np.abs(z)), z)
    # real points between two remembered ones start from them (the law's later solves: a scan's refinements,
    # edge checks, the mass check); the others, and those whose start is refused, follow paths
    memory = _memory_of(fast) if (radius is not None and anchors and not eps) else None
    g = np.zeros((P, fast.r), complex)
    outs = np.zeros((P, len(fast.outputs)), complex)
    conv = np.zeros(P, bool)
    res = np.full(P, np.inf)
    known = np.zeros(P, bool)
    if memory is not None and axis.any():
        on = np.flatnonzero(axis)
        gk, ok, rk, found = memory.solve(fast, zt[on], tol, radius)
        hit = on[found]
        g[hit], outs[hit], res[hit] = gk[found], ok[found], rk[found]
        conv[hit] = known[hit] = True
    rest = np.flatnonzero(~known)
    if len(rest):
        solve = _solve_by_anchors if len(rest) >= 200 and anchors else _solve_paths
        g[rest], outs[rest], conv[rest], res[rest] = solve(fast, zt[rest], eps, tol, depth, steps_per_decade)
    eps_arr = np.full(P, float(eps))
    if radius is not None:
        # before any axis step: a start on a real branch would lead it astray
        conv &= _herglotz_ok(outs, zt, radius)
    todo = conv.copy()  # converged points still to polish at zt
    at_axis = np.zeros(P, bool)  # points whose solution is the one on the axis itself
    on = np.flatnonzero(conv & axis)
    if len(on):
        # Newton on the axis from the solution at x + i h; where that is
        # refused (too close to an edge for the start's accuracy), the start
        # is polished first and the axis step tried once more
        kept = _to_axis(fast, g, outs, res, on, z, eps_arr, tol)
        todo[on[kept]] = False
        at_axis[on[kept]] = True
        again = on[~kept]
        if polish and len(again):
            _polish_into(fast, g, outs, res, again, zt, eps_arr)
            todo[again] = False
            at_axis[again[_to_axis(fast, g, outs, res, again, z, eps_arr, tol)]] = True
        # still refused: the offset h may be large against the width of the law
        # (a law 4e-10 wide moved by 5e-3 of G between x + ih and x); come down
        # towards the axis by factors of 1000 and try again each time
        left = on[~at_axis[on]]
        for _ in range(AXIS_RETRIES):
            if not polish or not len(left):
                break
            zl = z[left] + 1j * (zt[left].imag * 1e-3)
            g1, c1, r1, o1 = _newton_fast(fast, g[left].copy(), zl, eps_arr[left], tol=tol)
            c1 &= _halfplane_ok(o1, zl, 1e-8)
            # nearer a branch point the system is worse conditioned: a move is
            # kept only where its Newton correction still verifies it
            c1[c1] &= _correction(fast, g1[c1], zl[c1], eps_arr[left][c1]) <= tol
            moved = left[c1]
            g[moved], outs[moved], res[moved], zt[moved] = g1[c1], o1[c1], r1[c1], zl[c1]
            _polish_into(fast, g, outs, res, moved, zt, eps_arr)
            kept = _to_axis(fast, g, outs, res, moved, z, eps_arr, tol)
            at_axis[moved[kept]] = True
            left = moved[~kept]
    if polish and todo.any():
        _polish_into(fast, g, outs, res, np.flatnonzero(todo), zt, eps_arr)
    if polish and conv.any():
        # The residual alone does not bound the error where the system is
        # ill-conditioned: next to a large atom the unknowns are about 1e4
        # and their imaginary parts about 1, and a residual of 1e-11
        # (relative) passed a density off by a factor of 2. The Newton
        # correction at the final solution estimates the error itself.
        idx = np.flatnonzero(conv)
        step = _correction(fast, g[idx], np.where(at_axis[idx], z[idx], zt[idx]), eps_arr[idx])
        conv[idx] = step <= tol
    off = np.flatnonzero(conv & axis & ~at_axis)
    if len(off):
        # a real point whose axis step was refused carries the solution at x + ih:
        # it stands for the boundary value only where that solution hardly moves
        # between x + ih and x + 2ih (h |dg/dz| below AXIS_KEEP); next to an atom
        # or a branch point it does not, and the point is unverified
        z2 = z[off] + 2j * zt[off].imag
        g2, c2, _, _ = _newton_fast(fast, g[off].copy(), z2, eps_arr[off], tol=tol)
        with np.errstate(all="ignore"):
            drift = np.max(np.abs(g2 - g[off]), axis=1) / (1 + np.max(np.abs(g[off]), axis=1))
        conv[off] = c2 & (drift <= AXIS_KEEP)
    if radius is not None:
        idx = np.flatnonzero(conv & ~at_axis)
        conv[idx] = _herglotz_ok(outs[idx], zt[idx], radius)
    if memory is not None:
        # a point started from the memory that failed a later check (next to an edge its Newton correction can
        # end just above the tolerance where its path's ends just below) gets its path: the memory never
        # leaves a point unverified that the path would verify
        retry = np.flatnonzero(known & ~conv)
        if len(retry):
            g[retry], outs[retry], conv[retry], res[retry] = solve_fast(
                fast, z[retry], eps, steps_per_decade, depth, tol, raise_on_failure=False, anchors=False,
                polish=polish, axis_offset=axis_offset, radius=radius)
        keep = conv & axis
        memory.add(z.real[keep], g[keep])
    if raise_on_failure and not conv.all():
        i = int(np.argmin(conv))
        raise ConvergenceError(
            f"the double-precision Dyson solve did not converge at z = {z[i]!r} (residual {res[i]:.3g}); "
            f"the point may sit on a support edge: move it slightly or use the high-precision path",
            point=z[i],
            residual=float(res[i]),
        )
    return g, outs, conv, res


def _polish(fast, g, z, eps, maxiter=8, floor=1e-15):
    """Newton steps at ``(z, eps)`` while they shrink; returns ``(g, outputs, residual)``.

    A step is taken only if it is smaller than the one before (relative to
    ``1 + max |g|``) and larger than ``floor`` (a few units of rounding); a
    point stops at the first step that is not, which is rounding noise once
    Newton has converged. The residual and outputs returned are those
    evaluated at the final ``g`` (in the round that computed the step not
    taken, or afresh for a point still moving after ``maxiter`` steps).
    """
    g = g.copy()
    P, r = g.shape
    outs = np.zeros((P, len(fast.outputs)), complex)
    res = np.full(P, np.inf)
    last = np.full(P, np.inf)
    active = np.ones(P, bool)
    eye = np.eye(r)
    for _ in range(maxiter):
        idx = np.flatnonzero(active)
        if not len(idx):
            break
        gi = g[idx]
        phi, outs[idx], jac = fast.phi(gi, z[idx], eps[idx], jacobian=True)
        with np.errstate(all="ignore"):
            scale = 1 + np.max(np.abs(gi), axis=1)
            res[idx] = np.max(np.abs(gi - phi), axis=1) / scale
            try:
                delta = np.linalg.solve(eye[None] - jac, (gi - phi)[:, :, None])[:, :, 0]
            except np.linalg.LinAlgError:
                delta = np.stack([_lstsq(eye - jac[i], (gi - phi)[i]) for i in range(len(idx))])
            size = np.max(np.abs(delta), axis=1) / scale
        take = np.isfinite(size) & (size < last[idx]) & (size > floor)
        g[idx[take]] = gi[take] - delta[take]
        last[idx[take]] = size[take]
        active[idx[~take]] = False
    idx = np.flatnonzero(active)
    if len(idx):
        phi, outs[idx], _ = fast.phi(g[idx], z[idx], eps[idx])
        with np.errstate(all="ignore"):
            res[idx] = np.max(np.abs(g[idx] - phi), axis=1) / (1 + np.max(np.abs(g[idx]), axis=1))
    return g, outs, np.where(np.isfinite(res), res, np.inf)


def _herglotz_ok(outs, z, radius):
    """Herglotz, strictly: for a probability measure within ``[-R, R]``,
    ``-Im G(x + iy) >= y / ((|x| + R)^2 + y^2)``; half of it is required of the
    first output (a real branch next to an atom, ``Im G`` about 0 or of the
    wrong sign, fails it)."""
    floor = z.imag / ((np.abs(z.real) + float(radius)) ** 2 + z.imag ** 2)
    return -outs[:, 0].imag >= 0.5 * floor


def _correction(fast, g, z, eps):
    """Size of the Newton correction at ``g`` (max-norm, relative to ``1 + max |g|``): the error estimate."""
    if not len(g):
        return np.zeros(0)
    phi, _, jac = fast.phi(g, z, eps, jacobian=True)
    eye = np.eye(g.shape[1])
    with np.errstate(all="ignore"):
        try:
            delta = np.linalg.solve(eye[None] - jac, (g - phi)[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            delta = np.stack([_lstsq(eye - jac[i], (g - phi)[i]) for i in range(len(g))])
        size = np.max(np.abs(delta), axis=1) / (1 + np.max(np.abs(g), axis=1))
    return np.where(np.isfinite(size), size, np.inf)


def _polish_into(fast, g, outs, res, idx, z, eps):
    """:func:`_polish` the points ``idx`` at ``(z, eps)`` in place, where the residual does not grow."""
    gp, op, rp = _polish(fast, g[idx], z[idx], eps[idx])
    keep = rp <= res[idx]
    k = idx[keep]
    g[k], outs[k], res[k] = gp[keep], op[keep], rp[keep]


#: Largest relative change of the unknowns accepted from the start (the
#: solution at ``x + i h``) to the solution on the axis. The change is the
#: start's own error plus ``h |dg/dz|``; near an edge both grow like
#: ``1/sigma`` (``sigma``: smallest singular value of ``I - dPhi``, about the
#: square root of the distance to the edge), while the nearest other solution
#: of the equations is about ``sigma`` away. On Marchenko-Pastur a start
#: polished to rounding error passes this bound down to about ``1e-10`` of the
#: width from an edge, where ``sigma`` is still about ``1e-5``, a hundred
#: times the bound; closer in, the value at ``x + i h`` is kept.
AXIS_MOVE = 1e-7


def _to_axis(fast, g, outs, res, idx, z, eps, tol):
    """Newton at the real points ``z[idx]`` from ``g[idx]``; in place where accepted.

    Accepted: residual below ``tol``, a change from the start of at most
    :data:`AXIS_MOVE` (relative), and ``Im G <= 1e-8 (1 + |G|)`` on the ``u``
    rows (inside the support the only other nearby solution is the complex
    conjugate, with ``Im G > 0``). Returns the accepted mask over ``idx``.
    """
    g0 = g[idx]
    ga, oa, ra = _polish(fast, g0, z[idx], eps[idx])
    with np.errstate(all="ignore"):
        move = np.max(np.abs(ga - g0), axis=1) / (1 + np.max(np.abs(g0), axis=1))
        ok = (ra < tol) & (move <= AXIS_MOVE) & np.all(oa.imag <= 1e-8 * (1 + np.abs(oa)), axis=1)
    k = idx[ok]
    g[k], outs[k], res[k] = ga[ok], oa[ok], ra[ok]
    return ok


def _midpoints(z0, e0, z1, e1):
    """Midpoints of failed steps: geometric in ``Im z`` (and ``eps``) when both ends are above the axis.

    A step down towards the axis that fails is split in the logarithm of the
    height (a linear midpoint would only halve it: ten splits of a step from
    ``1e-5`` to ``1e-12`` would never get below ``1e-8``).
    """
    y0, y1 = z0.imag, z1.imag
    up = (y0 > 0) & (y1 > 0)
    ym = np.where(up, np.sqrt(np.abs(y0 * y1)), (y0 + y1) / 2)
    zm = (z0.real + z1.real) / 2 + 1j * ym
    pos = (e0 > 0) & (e1 > 0)
    em = np.where(pos, np.sqrt(np.abs(e0 * e1)), (e0 + e1) / 2)
    return zm, em


def _interpolated(fast, zs, x_lo, x_hi, g_lo, g_hi, tol, eps=0.0):
    """Newton at ``zs`` from the linear interpolation of solutions ``g_lo``, ``g_hi`` at real parts ``x_lo``,
    ``x_hi`` on either side; returns ``(g, outputs, residual, good)``. A result is good only if the two
    differ by at most a tenth of their size (else they straddle an edge or an atom, where the interpolant is
    no start) and it stays within a quarter of their difference of the interpolant (the scale on which a
    smooth branch moves between them): so every accepted point is on the branch its neighbours are on."""
    w = ((zs.real - x_lo) / (x_hi - x_lo + 1e-300))[:, None]
    g0 = (1 - w) * g_lo + w * g_hi
    spread = np.max(np.abs(g_hi - g_lo), axis=1)
    g1, c1, r1, o1 = _newton_fast(fast, g0.copy(), zs, np.full(len(zs), float(eps)), tol=tol)
    c1 &= _halfplane_ok(o1, zs, 1e-8)
    near = np.max(np.abs(g1 - g0), axis=1) <= 0.25 * spread + 1e-8 * (1 + np.max(np.abs(g1), axis=1))
    smooth = spread <= 0.1 * (1 + np.maximum(np.max(np.abs(g_lo), axis=1), np.max(np.abs(g_hi), axis=1)))
    return g1, o1, r1, c1 & near & smooth


#: Most real points a system remembers (:class:`_AxisMemory`); beyond it the oldest half is forgotten.
MEMORY_POINTS = 20000
#: Widest gap, relative to the support's bound ``R``, between two remembered points that start a point between.
MEMORY_SPAN = 1 / 16


class _AxisMemory:
    """Verified double-precision solutions of one system at real points, by real part.

    :func:`solve_fast` (with a support bound, as the law's double-precision
    entry points call it) adds every real point it verifies, and starts a
    later real point lying between two remembered ones, at most
    :data:`MEMORY_SPAN` ``R`` apart, from their interpolation
    (:func:`_interpolated`, the test of :func:`_solve_by_anchors`). Such a
    point still passes every check of :func:`solve_fast` (the Herglotz bound
    first, which refuses a real branch inside the support, then the axis step
    and the Newton correction); a refused start falls back to the path from
    ``Im z`` large. The law's later solves (a scan's refinements, the edge
    checks, the mass check, the grid) then cost a Newton solve per point, not
    a path.
    """

    def __init__(self, r):
        self.lock = threading.Lock()
        self.x = np.zeros(0)
        self.g = np.zeros((0, r), complex)
        self.order = np.zeros(0, np.int64)  # insertion stamps, to forget the oldest
        self.stamp = 0

    def add(self, x, g):
        if not len(x):
            return
        with self.lock:
            stamps = self.stamp + np.arange(len(x))
            self.stamp += len(x)
            xs = np.concatenate([x, self.x])  # new values first: they win a tie
            gs = np.concatenate([g, self.g])
            st = np.concatenate([stamps, self.order])
            xs, first = np.unique(xs, return_index=True)
            gs, st = gs[first], st[first]
            if len(xs) > MEMORY_POINTS:
                keep = np.sort(np.argsort(st)[len(xs) - MEMORY_POINTS // 2:])
                xs, gs, st = xs[keep], gs[keep], st[keep]
            self.x, self.g, self.order = xs, gs, st

    def at(self, x):
        """The remembered solution at the real point ``x`` itself, or None."""
        with self.lock:
            mx, mg = self.x, self.g
        i = int(np.searchsorted(mx, x))
        return mg[i].copy() if i < len(mx) and mx[i] == x else None

    def solve(self, fast, zs, tol, radius):
        """``(g, outputs, residual, found)`` at the points ``zs`` (just above the axis) that lie between two
        remembered points; ``found`` marks the points whose start was accepted (the others are left empty)."""
        P = len(zs)
        found = np.zeros(P, bool)
        g = np.zeros((P, fast.r), complex)
        outs = np.zeros((P, len(fast.outputs)), complex)
        res = np.full(P, np.inf)
        with self.lock:
            mx, mg = self.x, self.g
        if len(mx) < 2:
            return g, outs, res, found
        x = zs.real
        hi = np.searchsorted(mx, x, side="right")
        lo = hi - 1
        inside = (lo >= 0) & (hi < len(mx))
        idx = np.flatnonzero(inside)
        idx = idx[mx[hi[idx]] - mx[lo[idx]] <= MEMORY_SPAN * radius]
        if not len(idx):
            return g, outs, res, found
        g1, o1, r1, good = _interpolated(fast, zs[idx], mx[lo[idx]], mx[hi[idx]], mg[lo[idx]], mg[hi[idx]], tol)
        good &= _herglotz_ok(o1, zs[idx], radius)
        hit = idx[good]
        g[hit], outs[hit], res[hit] = g1[good], o1[good], r1[good]
        found[hit] = True
        return g, outs, res, found


_MEMORIES = weakref.WeakKeyDictionary()
_MEMORIES_LOCK = threading.Lock()


def remembered(fast, x):
    """The verified double-precision solution of ``fast`` at the real point ``x``, when a law's solve has
    remembered it (:class:`_AxisMemory`), else None."""
    with _MEMORIES_LOCK:
        mem = _MEMORIES.get(fast)
    return None if mem is None else mem.at(x)


def _memory_of(fast):
    """The :class:`_AxisMemory` of a system (made when first asked for; it lives as long as the system)."""
    with _MEMORIES_LOCK:
        mem = _MEMORIES.get(fast)
        if mem is None:
            mem = _MEMORIES[fast] = _AxisMemory(fast.r)
        return mem


def _solve_by_anchors(fast, z, eps, tol, depth, steps_per_decade, stride=8):
    """Many points: full paths for every ``stride``-th point (by real part),
    Newton straight at the target for the others from the linear interpolation
    of their two neighbouring anchors.

    A result from an interpolated start is kept only if the anchors differ by
    at most a tenth of their size and it stays close to the interpolant
    (within a quarter of the anchors' own difference, which is the scale on
    which a smooth branch moves between them); otherwise, as near an edge or
    an atom where the branch is not smooth, the point gets a full path of its
    own.
    This keeps every point on the branch continued from ``Im z`` large.
    """
    order = np.argsort(z.real, kind="stable")
    zs = z[order]
    idx = np.arange(len(zs))
    is_anchor = (idx % stride == 0) | (idx == len(zs) - 1)
    ga, oa, ca, ra = _solve_paths(fast, zs[is_anchor], eps, tol, depth, steps_per_decade)
    a_pos = idx[is_anchor]
    P = len(zs)
    g = np.zeros((P, fast.r), complex)
    outs = np.zeros((P, len(fast.outputs)), complex)
    conv = np.zeros(P, bool)
    res = np.full(P, np.inf)
    g[is_anchor], outs[is_anchor], conv[is_anchor], res[is_anchor] = ga, oa, ca, ra
    rest = idx[~is_anchor]
    hi = np.searchsorted(a_pos, rest)
    lo = hi - 1
    ok_anchor = ca[lo] & ca[hi]
    g1, o1, r1, good = _interpolated(fast, zs[rest], zs.real[a_pos[lo]], zs.real[a_pos[hi]], ga[lo], ga[hi], tol,
                                     eps)
    good &= ok_anchor
    g[rest[good]], outs[rest[good]], conv[rest[good]], res[rest[good]] = g1[good], o1[good], True, r1[good]
    redo = rest[~good]
    if len(redo):
        gr, orr, cr, rr = _solve_paths(fast, zs[redo], eps, tol, depth, steps_per_decade)
        g[redo], outs[redo], conv[redo], res[redo] = gr, orr, cr, rr
    inv = np.empty_like(order)
    inv[order] = idx
    return g[inv], outs[inv], conv[inv], res[inv]


def _solve_paths(fast, z, eps, tol, depth, steps_per_decade):
    """Every point by its own path from ``Im z`` large (vectorized).

    A path has one step per decade between the start and its point's
    ``y_mid`` (below): points are grouped by that count (in fours), so that one
    point next to 0 does not make every point of the batch take its many
    steps.
    """
    P = len(z)
    if P == 0:
        return (np.zeros((0, fast.r), complex), np.zeros((0, len(fast.outputs)), complex), np.zeros(0, bool),
                np.zeros(0))
    scale = max(4.0, 2.0 * float(np.max(np.abs(z))))
    y_mid = np.maximum(np.maximum(z.imag, 1e-300), 1e-3 * np.minimum(scale, np.abs(z.real)))
    with np.errstate(all="ignore"):
        group = np.ceil(np.ceil(steps_per_decade * np.log10(scale / y_mid)) / 4)
    keys = np.unique(group)
    if len(keys) == 1:
        return _solve_path_group(fast, z, eps, tol, depth, steps_per_decade)
    g = np.zeros((P, fast.r), complex)
    outs = np.zeros((P, len(fast.outputs)), complex)
    conv = np.zeros(P, bool)
    res = np.full(P, np.inf)
    for key in keys:
        idx = np.flatnonzero(group == key)
        g[idx], outs[idx], conv[idx], res[idx] = _solve_path_group(fast, z[idx], eps, tol, depth, steps_per_decade)
    return g, outs, conv, res


def _solve_path_group(fast, z, eps, tol, depth, steps_per_decade):
    """:func:`_solve_paths` for one group: every point takes the same number of steps."""
    P = len(z)
    y_target = np.maximum(z.imag, 1e-300)
    scale = max(4.0, 2.0 * float(np.max(np.abs(z)))) if P else 4.0
    t0 = np.full(P, scale)
    # initial solution far up: damped fixed-point iteration, then Newton
    zt = z.real + 1j * t0
    g = np.zeros((P, fast.r), complex)
    for _ in range(100):
        # far from the axis the map is a strong contraction: a few plain
        # iterations give Newton a start well inside its basin
        phi, _, _ = fast.phi(g, zt, t0)
        done = np.max(np.abs(phi - g)) < 1e-4
        g = phi
        if done:
            break
    # phase 1: down to y = max(target, 1e-3 min(scale, |Re z|)) in steps, then
    # one jump to the target. The solution varies on the scale of the distance
    # to the nearest singular point; next to an atom at 0 that is |Re z|, so a
    # jump from 1e-3 of the scale could land on another branch (a real
    # solution inside the support, which the half-plane check cannot tell)
    y_mid = np.maximum(y_target, 1e-3 * np.minimum(t0, np.abs(z.real)))
    n = int(np.ceil(steps_per_decade * np.log10(scale / float(np.min(y_mid))))) + 1
    ys = [t0 * (y_mid / t0) ** (k / n) for k in range(n + 1)] + [y_target]
    loose = max(tol, 1e-7)
    for k in range(1, len(ys)):
        y0, y1 = ys[k - 1], ys[k]
        # intermediate failures only slow the path down; the final step is what is verified
        g, c, res = _advance(fast, g, z.real + 1j * y0, y0, z.real + 1j * y1, y1, depth, loose, verify=False)
    # phase 2: the regularization eps of the non-u rows goes to its final value at the target
    g, conv, res = _advance(fast, g, z, y_target, z, np.full(P, float(eps)), depth, tol)
    phi, outs, _ = fast.phi(g, z, np.full(P, float(eps)))
    return g, outs, conv, res


def newton_mp(mpsys, g, z, eps, tol, maxiter=60):
    """Newton's method in the context of ``mpsys``; returns (g, outputs, residual, iterations).

    Each step is :meth:`~freeprob.solve.numeric.MPSystem.newton_step` (the
    linear system solved in flint at the working precision). Stops when the
    residual (:meth:`~freeprob.solve.numeric.MPSystem.residual`) is below
    ``tol``, when ``I - dPhi`` is singular, or after ``maxiter`` steps; the
    caller checks the residual returned.
    """
    it = 0
    for it in range(1, maxiter + 1):
        phi, outs, res, delta = mpsys.newton_step(g, z, eps, tol)
        if res < tol:
            return g, outs, res, it
        if delta is None:
            break
        g = [a - b for a, b in zip(g, delta)]
    phi, outs, _ = mpsys.phi(g, z, eps)
    return g, outs, mpsys.residual(g, phi), it


def solve_mp(mpsys, z, g0, dps, eps=0):
    """High-precision solution at ``z`` from the start ``g0``.

    The context of ``mpsys`` must already carry guard digits beyond ``dps``.
    The value is accepted only if the residual is below ``10^-(ctx.dps - 5)``
    and ``Im G < 0`` on the ``u`` rows when ``Im z > 0`` (up to ``10^-dps``).
    Stability under a precision increase is checked by :func:`solve_point`.

    Raises
    ------
    ConvergenceError
        With the point, the residual and ``dps``.
    """
    ctx = mpsys.ctx
    z = ctx.mpc(z)
    eps = ctx.mpf(eps)
    g = [ctx.mpc(x) for x in g0]
    tol = ctx.mpf(10) ** (-(ctx.dps - 5))
    g, outs, res, it = newton_mp(mpsys, g, z, eps, tol)
    if not res < tol:
        raise ConvergenceError(
            f"Newton's method on the Dyson equation did not converge at z = {ctx.nstr(z, 15)}: residual "
            f"{ctx.nstr(res, 5)} after {it} iterations at {ctx.dps} working digits (asked for {dps}); "
            f"the point may be on or very near a support edge",
            point=z,
            residual=res,
            dps=dps,
        )
    if z.imag > 0:
        bound = ctx.mpf(10) ** (-dps)
        for x in outs:
            if x.imag > bound * (1 + abs(x)):
                raise ConvergenceError(
                    f"the solution at z = {ctx.nstr(z, 15)} lies in the wrong half-plane (Im G = "
                    f"{ctx.nstr(x.imag, 5)} > 0): a wrong branch was reached; refusing to return it",
                    point=z,
                    residual=res,
                    dps=dps,
                )
    return DysonSolution(z, tuple(g), tuple(outs), res, it, dps, "newton-mpmath", True)


@dataclass(frozen=True)
class PointSolution:
    """A verified high-precision solution at one point (:func:`solve_point`).

    Attributes
    ----------
    z : mpc
        The point solved at (system variable, with the axis offset if any).
    value : mpc
        The checked quantity (``outputs[0]`` unless the caller maps it).
    g, outputs : tuple of mpc
        The unknowns and ``G`` on the ``u`` rows, at ``work_dps`` digits.
    residual : mpf
    iterations : int
    dps : int
        Digits asked for.
    work_dps : int
        Working digits (``dps`` plus guard digits) of ``z``, ``value``, ``g``, ``outputs``.
    difference : mpf
        ``|value - value'|`` against the second solve at ``work_dps + 10`` digits.
    stable_digits : int
        Digits on which the two solves agree (relative to ``1 + |value|``), at least ``dps``.
    """

    z: object
    value: object
    g: tuple
    outputs: tuple
    residual: object
    iterations: int
    dps: int
    work_dps: int
    difference: object
    stable_digits: int


def _first_output(z, outputs):
    return outputs[0]


def _start_point(zs):
    """The point of the double-precision start for the target ``zs`` (mpc): lifted to ``1e-9 (1 + |z|)`` above
    the axis when it is closer to it."""
    z0 = complex(zs)
    if z0.imag < 1e-9 * (1 + abs(z0)):
        z0 = complex(z0.real, 1e-9 * (1 + abs(z0)))
    return z0


def solve_points(system, zs, dps, *, on_axis=False, value=None, where=None):
    """:func:`solve_point` at each point of ``zs``, with the double-precision starts of all of them from one
    vectorized :func:`solve_fast` (a start for one point costs about as much as for a hundred). A point whose
    start does not converge there gets its own, as in :func:`solve_point` (which raises if that fails too).
    ``on_axis`` and ``where`` are one value for all points or a list; returns a list of
    :class:`PointSolution`."""
    systems = system if isinstance(system, NumericSystems) else NumericSystems(system)
    n = len(zs)
    axis = list(on_axis) if isinstance(on_axis, (list, tuple)) else [on_axis] * n
    wheres = list(where) if isinstance(where, (list, tuple)) else [where] * n
    if not n:
        return []
    ctx = context(dps + guard_digits(dps))
    targets = [_start_point(z(ctx) if callable(z) else to_mpc(ctx, z)) for z in zs]
    g0, _, conv, _ = solve_fast(systems.fast, np.array(targets), raise_on_failure=False, anchors=False)
    return [solve_point(systems, z, dps, on_axis=a, value=value, where=w, start=g0[i] if conv[i] else None)
            for i, (z, a, w) in enumerate(zip(zs, axis, wheres))]


def solve_point(system, z, dps, *, on_axis=False, value=None, where=None, start=None):
    """The verified solution at one point to ``dps`` digits.

    Parameters
    ----------
    system : NumericSystems or DysonSystem
        A fully substituted system; pass a :class:`~freeprob.solve.numeric.NumericSystems`
        to reuse its numeric forms across points.
    z : number or callable
        The point (``Im z >= 0``) in the system's variable, or ``z(ctx)``
        giving it in an mpmath context (so that a derived point, such as a
        square root, is computed at each working precision).
    dps : int
        Decimal digits asked for; the solve runs with :func:`guard_digits` more.
    on_axis : bool
        ``z`` is on the real axis: solve at ``z + i 10^-work``, the boundary value.
    value : callable, optional
        ``value(z, outputs)``: the quantity whose stability is checked (default ``outputs[0]``).
    where : optional
        The point as the caller knows it, for error messages.
    start : array, optional
        A converged double-precision solution near the point (from :func:`solve_points`); without it one
        is computed.

    Returns
    -------
    PointSolution

    Raises
    ------
    ConvergenceError
        With the point, the residual (or the change under the precision
        increase) and ``dps``, when the double-precision start fails (at or
        next to an atom or an edge), Newton's method does not converge, the
        solution is in the wrong half-plane, or the second solve with 10 more
        digits disagrees beyond ``10^-dps``.
    """
    systems = system if isinstance(system, NumericSystems) else NumericSystems(system)
    point = z if callable(z) else (lambda ctx: to_mpc(ctx, z))
    value = value or _first_output
    where = z if where is None else where
    work = dps + guard_digits(dps)

    def at(ctx):
        zs = point(ctx)
        if on_axis:
            zs = ctx.mpc(zs.real, zs.imag + ctx.mpf(10) ** (-work))
        return zs

    ctx = context(work)
    zs = at(ctx)
    if start is None:
        # double-precision start, slightly above the target
        g0, _, conv, res = solve_fast(systems.fast, np.array([_start_point(zs)]), raise_on_failure=False)
        if not conv[0]:
            raise ConvergenceError(
                f"no verified starting point for Newton's method at {where} (double-precision residual "
                f"{res[0]:.3g}): the point is at or next to an atom or a support edge; move it away, or ask "
                f"for the atom's mass (atoms()) or the edge (support())",
                point=where,
                residual=float(res[0]),
                dps=dps,
            )
        start = g0[0]
    sol = solve_mp(systems.mp(ctx), zs, [complex(x) for x in start], dps)
    # stability under a precision increase: one more solve at +10 digits
    ctx2 = context(work + 10)
    zs2 = at(ctx2)
    sol2 = solve_mp(systems.mp(ctx2), zs2, [ctx2.mpc(x) for x in sol.g], dps)
    v1 = value(zs, sol.outputs)
    v2 = value(zs2, sol2.outputs)
    diff = abs(ctx2.mpc(v1) - v2)
    scale = 1 + abs(v2)
    if diff > ctx2.mpf(10) ** (-dps) * scale:
        raise ConvergenceError(
            f"the value at {where} is not stable under a precision increase (change {ctx2.nstr(diff, 5)} at "
            f"{work + 10} digits); ask for fewer digits or move away from the edge",
            point=where,
            residual=diff,
            dps=dps,
        )
    stable = work + 10 if diff == 0 else max(dps, min(work + 10, int(-ctx2.log10(diff / scale))))
    return PointSolution(zs, v1, sol.g, sol.outputs, sol.residual, sol.iterations, dps, work, diff, stable)
