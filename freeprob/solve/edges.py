"""Support edges and atoms from the Dyson system.

* Edges: outside the support the Dyson system has a real solution; at a soft
  edge two real solutions merge, so the Jacobian ``I - dPhi`` becomes
  singular. The edge solves the augmented (fold) system
  ``g = Phi(g, x)``, ``(I - dPhi) v = 0``, ``c . v = 1`` in ``(g, x, v)``, which
  is regular at a fold; Newton's method (finite-difference Jacobian at twice
  the working precision) converges to it from a grid bracket.
  Newton's method runs in double precision first (its Jacobian by complex
  steps where the system is real outside the support, else by central
  differences, all columns in one vectorized evaluation; steps equilibrated
  and damped by the natural monotonicity test) and is then finished in mpmath
  by chord steps with that Jacobian, each of which gains the digits the
  double-precision Jacobian carries; the full finite-difference Newton at
  twice the working precision is the fallback.
* Atoms: the mass at ``x0`` is ``lim_{y -> 0} iy G(x0 + iy)``. On the
  imaginary direction ``M(y) = Re(iy G(x0 + iy)) = mu({x0}) + int_{x != x0}
  y^2/(y^2 + (x - x0)^2) dmu(x)`` decreases to the mass, so every verified
  ``M(y)`` is an upper bound of it. With an exact lower bound (the rank
  deficiency of the expression, computed by the caller) the mass is settled
  when the two agree to the digits asked for (:func:`atom_at`): at a point
  where the solution is regular one solve next to it suffices; otherwise the
  Dyson solution is continued down ``y`` in mpmath with steps that grow while
  the solution follows its power law in ``y``. Richardson extrapolation of
  ``M(y)`` (:func:`atom_mass`) is the fallback when the bound is not attained.
* Hard edges: a support interval that ends at a candidate point (0) with a
  density growing towards it ends there exactly when the density is verified
  positive at ``10^-dps`` of the support's scale from it (and zero as far on
  the other side): the solution on the imaginary axis is turned on a quarter
  circle of that radius to the real axis (:func:`hard_edge_at`).

Both work in the system's variable ``z`` (``z = x`` for eigenvalues,
``z = sqrt(x)`` for squared singular values) and know nothing of expressions.
"""

from fractions import Fraction

import numpy as np

from .._errors import ConvergenceError
from .numeric import FastSystem, MPSystem, NumericSystems
from .._precision import context, flint_precision, guard_digits, to_mpf
from .newton import _newton_fast, newton_mp, remembered, solve_fast, solve_point

__all__ = [
    "refine_edge",
    "atom_mass",
    "atom_at",
    "hard_edge_at",
    "probe_range",
    "coarse_range",
    "support_grid",
    "support_runs",
    "shrink_bracket",
    "support_by_density",
    "support_by_folds",
    "bracketed_edge",
    "bracketed_edges",
    "edge_sides_ok",
    "adaptive_scan",
]


def _fold_residual(mpsys, unk, r, c):
    ctx = mpsys.ctx
    g = [ctx.mpc(x) for x in unk[:r]]
    x = unk[r]
    v = unk[r + 1:]
    re_v = [ctx.re(t) for t in v]
    phi, jv = mpsys.phi_and_jv(g, ctx.mpc(x), 0, re_v)
    out = [(g[k] - phi[k]).real for k in range(r)]
    # Re(dPhi) v, as (dPhi Re v).real (+ i (dPhi Im v).real for a complex v)
    if any(ctx.im(t) != 0 for t in v):
        _, jv_im = mpsys.phi_and_jv(g, ctx.mpc(x), 0, [ctx.im(t) for t in v])
        out.extend(v[a] - ctx.mpc(jv[a].real, jv_im[a].real) for a in range(r))
    else:
        out.extend(v[a] - jv[a].real for a in range(r))
    out.append(sum(ci * vi for ci, vi in zip(c, v)) - 1)
    return out


def _pinv_solve(ctx, a, b):
    """Minimum-norm least-squares solution of ``a x = b`` (SVD, relative cut-off)."""
    u, sv, v = ctx.svd_r(a)
    cut = max(sv) * ctx.mpf(10) ** (-(ctx.dps // 2))
    n = a.cols
    ub = [sum(u[i, k] * b[i] for i in range(a.rows)) for k in range(len(sv))]
    coef = [ub[k] / sv[k] if sv[k] > cut else 0 for k in range(len(sv))]
    return [sum(v[k, j] * coef[k] for k in range(len(sv))) for j in range(n)]


def _solve(ctx, a, b, unk):
    """LU solve; the (slow) SVD least-squares solve when LU fails or gives an
    absurd step (a Jacobian singular up to finite-difference noise, as when
    two unknowns are always equal)."""
    try:
        step = _ball_solve(ctx, a, b)
        if max(abs(v) for v in step) <= 1e6 * (1 + max(abs(v) for v in unk)):
            return step
    except (ZeroDivisionError, TypeError):
        pass
    return _pinv_solve(ctx, a, b)


def _ball_solve(ctx, a, b):
    """``a x = b`` by flint's ``acb_mat.solve`` at ``ctx``'s precision (LU on midpoints, in C:
    mpmath's ``lu_solve`` took 2.6 s for the 61 unknowns of a 64-head fold system)."""
    import flint

    n = a.rows
    with flint_precision(ctx.prec + 10):
        am = flint.acb_mat([[flint.acb(ctx.mpc(a[i, j])) for j in range(a.cols)] for i in range(n)])
        bm = flint.acb_mat([[flint.acb(ctx.mpc(b[i]))] for i in range(n)])
        x = am.solve(bm, algorithm="approx")
        out = [ctx.make_mpc((x[i, 0].real.mid()._mpf_, x[i, 0].imag.mid()._mpf_)) for i in range(a.cols)]
    if all(v.imag == 0 for v in out):
        return [ctx.mpf(v.real) for v in out]
    return out


#: Working precisions are multiples of this many digits, so that the numeric
#: systems built for one (the sympy -> ball crossing is their costly part) serve
#: the edges, the atoms and the checks alike.
_LEVEL = 20


def _level(digits):
    """The working precision level at or above ``digits``."""
    return _LEVEL * ((int(digits) + _LEVEL - 1) // _LEVEL)


def _systems(system):
    """A :class:`NumericSystems` for a substituted ``DysonSystem`` (or the one given)."""
    return system if isinstance(system, NumericSystems) else NumericSystems(system)


def _fold_complex(fast, u, r, c):
    """The fold residuals at the rows of ``u`` (``P x (2r + 1)``, complex allowed), without taking real parts.

    ``Phi`` is holomorphic in ``(g, z)`` (``eta`` is linear, the rest an inverse), so this is a
    holomorphic function of ``u``; where it is real at real ``u`` it equals :func:`_fold_fast`.
    """
    g = u[:, :r]
    v = u[:, r + 1:]
    phi, _, jac = fast.phi(g, u[:, r], np.zeros(len(u)), jacobian=True)
    f2 = v - np.einsum("pab,pb->pa", jac, v)
    return np.concatenate([g - phi, f2, (v @ c - 1)[:, None]], axis=1)


def _fold_fast(fast, u, r, c):
    """Fold residuals at the rows of ``u`` (``P x (2r + 1)``, real), in double precision."""
    g = u[:, :r].astype(complex)
    x = u[:, r].astype(complex)
    v = u[:, r + 1:]
    phi, _, jac = fast.phi(g, x, np.zeros(len(u)), jacobian=True)
    f1 = u[:, :r] - phi.real
    f2 = v - np.einsum("pab,pb->pa", jac.real, v)
    f3 = v @ c - 1
    return np.concatenate([f1, f2, f3[:, None]], axis=1)


def _fold_jacobian_fast(fast, u, r, c):
    """Central-difference Jacobian of :func:`_fold_fast` at ``u`` (all columns in one evaluation)."""
    n = len(u)
    h = 1e-6 * (1 + np.abs(u))
    f = _fold_fast(fast, np.concatenate([u + np.diag(h), u - np.diag(h)]), r, c)
    return ((f[:n] - f[n:]) / (2 * h)[:, None]).T


def _fold_jacobian_exact(fast, u, r, c):
    """The fold Jacobian at real ``u`` by complex steps, and whether it is exact.

    Where the fold residuals are real at real arguments (outside the support the
    solution is real), the holomorphic residual gives each column as
    ``(Im F(u + i h e_j) - Im F(u)) / h`` with ``h = 1e-20 (1 + |u_j|)`` (``Im F(u)``
    is 0 up to rounding): no cancellation, so the Jacobian is correct to rounding
    (central differences lose half the digits, too few for the ill-conditioned
    fold systems of many-head models). Elsewhere the central-difference
    Jacobian, and False. Either way the edge is verified in mpmath afterwards:
    a poor Jacobian costs time, never digits.
    """
    n = len(u)
    with np.errstate(all="ignore"):
        f0 = _fold_complex(fast, u[None, :].astype(complex), r, c)[0]
        if np.isfinite(f0).all() and np.max(np.abs(f0.imag)) <= 1e-13 * (1 + np.max(np.abs(u))):
            h = 1e-20 * (1 + np.abs(u))
            jac = ((_fold_complex(fast, u[None, :] + 1j * np.diag(h), r, c).imag - f0.imag) / h[:, None]).T
            if np.isfinite(jac).all():
                return jac, True
    return _fold_jacobian_fast(fast, u, r, c), False


def _scaled_pinv(jac, rcond):
    """Pseudo-inverse of ``jac`` after equilibration (columns, then rows, to unit norm).

    The unknowns of a fold system span many decades (heads of width ``1/(2H)``
    give entries from ``1e-9`` to ``1e3``): unscaled, the small singular values
    a cut-off drops are those of the scaling, not of the system. Returns
    ``(pinv, col)`` with ``col`` the column scales (steps in units of ``col``
    are the natural measure of a step).
    """
    col = np.sqrt((jac * jac).sum(axis=0))
    col[~(col > 0)] = 1.0
    js = jac / col
    row = np.sqrt((js * js).sum(axis=1))
    row[~(row > 0)] = 1.0
    js = js / row[:, None]
    sv = np.linalg.svd(js, compute_uv=False)
    if sv[-1] > rcond * sv[0]:
        # regular: the LU inverse is the pseudo-inverse (and, unlike an SVD with
        # vectors, does not stall on threaded BLAS when the machine is busy)
        inv = np.linalg.inv(js)
    else:
        inv = np.linalg.pinv(js, rcond=rcond)
    return (inv / row[None, :]) / col[:, None], col


def _fold_newton_fast(fast, u, r, c, maxiter=40, window=None):
    """Newton's method on the fold system in double precision; ``(u, pinv)`` or ``(None, None)``.

    ``pinv`` is the (equilibrated) pseudo-inverse of the Jacobian at the result,
    for the chord steps at higher precision. Minimum-norm steps: the fold
    Jacobian is singular when unknowns are equal by symmetry (identical heads),
    and consistent with it. Steps are damped by the natural monotonicity test
    (the next step, with the same Jacobian, must be shorter in the scaled
    norm): from a point outside the support the first full step overshoots the
    fold and raises the residual, yet is the right step. With ``window = (lo,
    hi)``, the edge's coordinate stays inside it.
    """
    lams = np.array([2.0 ** -k for k in range(8)])
    pinv = None
    with np.errstate(all="ignore"):
        for _ in range(maxiter):
            f = _fold_fast(fast, u[None, :], r, c)[0]
            jac, exact = _fold_jacobian_exact(fast, u, r, c)
            if not (np.isfinite(f).all() and np.isfinite(jac).all()):
                return None, None
            try:
                pinv, col = _scaled_pinv(jac, 1e-12 if exact else 1e-7)
            except np.linalg.LinAlgError:
                return None, None
            step = pinv @ f
            size = np.max(np.abs(step / col))
            if np.max(np.abs(step)) < 1e-14 * (1 + np.max(np.abs(u))):
                break
            trials = u[None, :] - lams[:, None] * step[None, :]
            nxt = np.max(np.abs((_fold_fast(fast, trials, r, c) @ pinv.T) / col), axis=1)
            good = np.isfinite(nxt) & (nxt < (1 - lams / 4) * size)
            if window is not None:
                good &= (trials[:, r] >= window[0]) & (trials[:, r] <= window[1])
            ok = np.nonzero(good)[0]
            if not len(ok):
                if np.max(np.abs(f)) < 1e-12 * (1 + np.max(np.abs(u))):
                    break  # at the rounding level already
                return None, None
            lam = lams[ok[0]]
            u = u - lam * step
            if lam == 1.0 and np.max(np.abs(step)) < 1e-13 * (1 + np.max(np.abs(u))):
                jac, exact = _fold_jacobian_exact(fast, u, r, c)
                pinv, _ = _scaled_pinv(jac, 1e-12 if exact else 1e-7)
                break
        else:
            return None, None
    if window is not None and not window[0] <= u[r] <= window[1]:
        return None, None
    return u, pinv


def _chord(ctx, mpsys, unk, jinv, r, cq, tol, maxiter=60):
    """Chord steps ``u -= J^-1 F(u)`` in ``ctx`` with a fixed (double-precision) inverse Jacobian.

    Returns the new unknowns, or None when the steps stop shrinking by at least a factor 4.
    """
    n = len(unk)
    last = None
    for _ in range(maxiter):
        f = _fold_residual(mpsys, unk, r, cq)
        # the step is a small correction: double precision carries all the digits it needs
        # (16 relative to itself), the residual being evaluated at the working precision
        step = [ctx.mpf(float(x)) for x in jinv @ np.array([float(x) for x in f])]
        unk = [unk[i] - step[i] for i in range(n)]
        size = max(abs(x) for x in step)
        if size < tol * (1 + max(abs(x) for x in unk)):
            return unk
        if last is not None and size > last / 4:
            return None
        last = size
    return None


def _refine_mp(ctx, mpsys, unk, r, cq, work):
    """The former Newton: finite-difference Jacobian at twice the working precision (the fallback)."""
    n = len(unk)
    h = ctx.mpf(10) ** (-work)
    tol = ctx.mpf(10) ** (-(work - 2))
    jm = None
    last = None
    for _ in range(80):
        f0 = _fold_residual(mpsys, unk, r, cq)
        if jm is None:
            jm = ctx.matrix(n, n)
            for j in range(n):
                u2 = list(unk)
                u2[j] += h
                f1 = _fold_residual(mpsys, u2, r, cq)
                for i in range(n):
                    jm[i, j] = (f1[i] - f0[i]) / h
        step = _solve(ctx, jm, f0, unk)
        size = max(abs(x) for x in step)
        if last is not None and size > last / 10:
            jm = None  # chord step too slow: fresh Jacobian next time
        last = size
        unk = [unk[i] - step[i] for i in range(n)]
        if abs(step[r]) < tol * (1 + abs(unk[r])):
            return unk
    return None


def refine_edge(system, z_out, dps, bracket=None, fallback=True):
    """A soft edge of the support, in the system variable, to ``dps`` digits.

    Parameters
    ----------
    system : DysonSystem (fully substituted) or NumericSystems
    z_out : float
        A point just outside the support near the edge.
    dps : int
    bracket : (float, float), optional
        The edge must lie in this interval (with a margin of one bracket
        width) or the result is refused.
    fallback : bool
        When Newton's method in double precision or the chord steps fail,
        fall back to Newton with a finite-difference Jacobian at twice the
        working precision (slow); otherwise raise at once.

    Returns
    -------
    mpf
        The edge, at ``dps`` plus guard digits; it is returned only when the
        fold residual is below ``10^-(work - 5)`` and a second refinement with
        10 more digits moves it by less than ``10^-dps`` (relative to
        ``max(1, |edge|)``).

    Raises
    ------
    ConvergenceError
    """
    systems = _systems(system)
    fast = systems.fast
    # the start: the solution at z_out, which the scan that found the bracket usually remembers
    g = remembered(fast, float(z_out))
    if g is None:
        g = solve_fast(fast, np.array([complex(z_out, 1e-12 * (1 + abs(z_out)))]), raise_on_failure=False)[0][0]
    g = g.real
    r = len(g)
    _, _, jac = fast.phi(g[None, :].astype(complex), np.array([complex(z_out)]), np.array([0.0]), jacobian=True)
    jr = np.eye(r) - jac[0].real
    _, _, vh = np.linalg.svd(jr)
    v = vh[-1]
    c = v / np.dot(v, v)
    work = dps + guard_digits(dps)
    u0 = np.concatenate([g, [z_out], v])
    window = None
    if bracket is not None:
        lo, hi = sorted(bracket)
        window = (lo - (hi - lo), hi + (hi - lo))
    u, jfast = _fold_newton_fast(fast, u0, r, c, window=window)
    edges = []
    # two working precisions at least 10 digits apart, on the shared levels
    for w in (_level(work), _level(work) + _LEVEL):
        unk = None
        if u is not None:
            ctx = context(w)
            mpsys = systems.mp(ctx)
            cq = [ctx.mpf(x) for x in c]
            start = [ctx.mpf(x) for x in u] if not edges else [ctx.mpf(x) for x in edges[-1][1]]
            try:
                unk = _chord(ctx, mpsys, start, jfast, r, cq, ctx.mpf(10) ** (-(w - 3)))
            except (np.linalg.LinAlgError, ConvergenceError):
                unk = None
        bound = ctx.mpf(10) ** (-(w - 5)) if unk is not None else None
        fres = max(abs(x) for x in _fold_residual(mpsys, unk, r, cq)) if unk is not None else None
        if unk is None or fres > bound:
            # no chord result, or the chord steps stalled above the bound (seen on quotient systems)
            if not fallback:
                raise ConvergenceError(f"Newton's method on the fold system did not converge from z = {z_out}",
                                       point=z_out, dps=dps)
            # the fallback: finite differences at twice the precision
            ctx = context(2 * w)
            mpsys = MPSystem(systems.system, ctx)
            cq = [ctx.mpf(x) for x in c]
            start = [ctx.mpf(x) for x in (u if u is not None else u0)] if not edges else [ctx.mpf(x) for x in edges[-1][1]]
            unk = _refine_mp(ctx, mpsys, start, r, cq, w)
            if unk is None:
                raise ConvergenceError(f"no support edge found near z = {z_out}", point=z_out, dps=dps)
            bound = ctx.mpf(10) ** (-(w - 5))
            fres = max(abs(x) for x in _fold_residual(mpsys, unk, r, cq))
        if fres > bound:
            raise ConvergenceError(f"edge residual {ctx.nstr(fres, 5)} too large near z = {z_out}", point=z_out,
                                   residual=fres, dps=dps)
        edges.append((unk[r], unk))
    edge, edge2 = edges[0][0], edges[1][0]
    change = abs(edge2 - edge)
    if change > context(work + 10).mpf(10) ** (-dps) * max(1, abs(edge2)):
        raise ConvergenceError(
            f"the edge near z = {z_out} is not stable under a precision increase (change {float(change):.3g})",
            point=z_out, residual=change, dps=dps)
    if bracket is not None:
        lo, hi = sorted(bracket)
        width = hi - lo
        if not (lo - width <= float(edge) <= hi + width):
            raise ConvergenceError(
                f"the edge search from z = {z_out} converged to {float(edge):.10g}, outside its bracket "
                f"[{lo}, {hi}]",
                point=z_out,
                dps=dps,
            )
    return context(work).mpf(edge)


def atom_mass(system, z0, dps, output=0):
    """``lim_{y -> 0} iy G_u(z0 + iy)`` for the ``u`` output ``output``, to ``dps`` digits.

    ``M(y) = iy G(z0 + iy)`` is computed at ``y = 10^-2, 10^-3, ...`` (Newton at
    each step from a componentwise geometric predictor) and extrapolated to
    ``y = 0`` by Richardson (Neville) extrapolation in ``y``, which converges
    fast when ``z0`` is isolated from the rest of the support or sits at a
    square-root hard edge. The value is accepted only when two successive
    extrapolants agree to ``10^-dps``; the working precision carries twice the
    decades of ``y`` spanned, since the system's condition number grows like
    ``1/y^2``. Returns an mpf.
    """
    n_steps = max(8, dps // 3 + 4)
    work = dps + 2 * (n_steps + 2) + 15
    ctx = context(work)
    mpsys = MPSystem(system, ctx)
    ys = [ctx.mpf(10) ** (-2 - j) for j in range(n_steps)]
    fast = FastSystem(system)
    # double-precision starts where the double solve is well conditioned
    y_fast = [float(y) for y in ys if y >= 1e-6]
    gf, outs, conv, res = solve_fast(fast, np.array([complex(z0, y) for y in y_fast]), raise_on_failure=False)
    g = [ctx.mpc(x) for x in gf[0]]
    prev = None
    masses = []
    table = []
    best = None
    for j, y in enumerate(ys):
        tol = ctx.mpf(10) ** (-(work - 2 * (j + 3) - 5))
        if j < len(y_fast) and conv[j]:
            pred = [ctx.mpc(x) for x in gf[j]]
        else:
            pred = [a * (a / b) if (prev is not None and b != 0) else a for a, b in zip(g, prev or g)]
        gn, outs, r, it = newton_mp(mpsys, pred, ctx.mpc(z0, y), 0, tol, maxiter=80)
        if not r < tol:
            gn, outs, r, it = newton_mp(mpsys, list(g), ctx.mpc(z0, y), 0, tol, maxiter=200)
        if not r < tol:
            raise ConvergenceError(
                f"the Dyson solution could not be continued to z = {z0} + i {ctx.nstr(y, 5)} "
                f"(residual {ctx.nstr(r, 5)})",
                point=complex(z0, float(y)),
                residual=r,
                dps=dps,
            )
        prev, g = g, gn
        masses.append(ctx.mpc(0, y) * outs[output])
        # Neville: table[i] extrapolates masses[i..j] to y = 0
        row = [masses[j]]
        for i in range(1, j + 1):
            yi = ys[j - i]
            row.append(row[i - 1] + (row[i - 1] - table[i - 1]) * ys[j] / (yi - ys[j]))
        table = row
        est = table[-1]
        if best is not None and j >= 3 and abs(est - best) < ctx.mpf(10) ** (-dps - 3):
            if abs(est.imag) > ctx.mpf(10) ** (-dps):
                break
            return est.real
        best = est
    raise ConvergenceError(
        f"the mass at {z0} did not settle as y -> 0 (last extrapolants {ctx.nstr(best, 10)}); "
        f"the density may be singular there",
        point=z0,
        dps=dps,
    )


def _newton(mpsys, g, z, tol, maxiter=30):
    """Newton's method on the Dyson system at ``z`` (``eps = 0``) in the context of ``mpsys``.

    As :func:`~freeprob.solve.newton.newton_mp` (the same relative residual,
    ``max |g - Phi(g)| / max(1, |g|)``, and the same step,
    :meth:`~freeprob.solve.numeric.MPSystem.newton_step`: solved in
    python-flint, an approximate LU on ball midpoints; the residual decides),
    with damped steps.
    Returns ``(g, outputs, residual, iterations)``.
    """
    ctx = mpsys.ctx
    r = mpsys.r
    res = ctx.inf
    outs = None
    history = []
    for it in range(1, maxiter + 1):
        # the Jacobian stays in flint's balls from its evaluation to the solve
        phi, outs, res, step = mpsys.newton_step(g, z, 0, tol)
        if res < tol:
            return g, outs, res, it
        history.append(res)
        if len(history) >= 5 and not history[-1] < history[-3] / 100:
            break  # not converging (quadratically or fast linearly): give up early
        if step is None:
            break  # I - dPhi singular at the working precision
        # damped: halve the step while the residual grows (the basin is narrow where
        # some unknowns are large and nearly undetermined)
        lam = 1
        for _ in range(6):
            trial = [g[k] - lam * step[k] for k in range(r)]
            phi_t, _, _ = mpsys.phi(trial, z, 0)
            tnorm = max([abs(x) for x in trial] + [ctx.mpf(1)])
            if max(abs(trial[k] - phi_t[k]) for k in range(r)) / tnorm < res:
                break
            lam /= 2
        g = trial
    phi, outs, _ = mpsys.phi(g, z, 0)
    gnorm = max([abs(x) for x in g] + [ctx.mpf(1)])
    res = max([abs(g[k] - phi[k]) for k in range(r)] + [ctx.mpf(0)]) / gnorm
    return g, outs, res, maxiter


def _three_point(xs, vs, xn, last):
    """Predict ``v(xn)`` from three values of ``v(x) = b + a e^(alpha x)`` at ``xs`` (decreasing).

    ``alpha`` from :func:`_exponent`; a sequence that is not of that form (or
    not yet) is continued by its two-point power law. ``last`` is the latest
    value.
    """
    x0, x1, x2 = xs
    v0, v1, v2 = vs
    al = _exponent(xs, vs)
    if al is None or al == 0:
        return _power_step(last, v1, (xn - x2) / (x2 - x1)) if v1 else last
    a = (v2 - v1) / (np.exp(al * x2) - np.exp(al * x1))
    return last + a * (np.exp(al * xn) - np.exp(al * x2))


def _exponent(xs, vs):
    """``alpha`` of ``v(x) = b + a e^(alpha x)`` through three points (bisection on [-4, 4]); None if none fits."""
    x0, x1, x2 = xs
    v0, v1, v2 = vs
    d1, d2 = v1 - v0, v2 - v1
    if d1 == 0 or d2 == 0 or (d1 > 0) != (d2 > 0):
        return None

    def f(al):
        e0, e1 = np.exp(al * (x0 - x2)), np.exp(al * (x1 - x2))
        return (1.0 - e1) / (e1 - e0) - d2 / d1

    lo, hi = -4.0, 4.0
    with np.errstate(all="ignore"):
        if not f(lo) * f(hi) < 0:
            return None
        for _ in range(60):
            mid = (lo + hi) / 2 or 1e-9
            if f(lo) * f(mid) <= 0:
                hi = mid
            else:
                lo = mid
    return (lo + hi) / 2


def _power_step(a, b, q):
    """``a (a/b)^q``: the next value of a real sequence that follows a power law (``a`` when the signs differ)."""
    if a == 0 or b == 0 or (a > 0) != (b > 0):
        return a
    return a * (a / b) ** q


class _AxisPath:
    """Verified solutions of the Dyson system at ``z = z0 + i t`` for decreasing ``t`` (system variable).

    Double precision down to ``1e-6`` of ``scale``, then Newton in mpmath from
    a componentwise power-law predictor (the solution behaves like a power of
    ``t`` as ``t -> 0``), with steps in ``log t`` that double after an easy
    solve and halve after a failed one. The working precision carries twice
    the decades of ``t`` below ``scale``, as the system's condition number
    grows like ``(scale/t)^2``.
    """

    def __init__(self, systems, z0, dps, scale):
        self.systems = systems
        self.z0 = float(z0)
        self.dps = dps
        self.scale = float(scale)
        self.points = []  # (t as mpf, g, outputs, working digits)
        self.delta = 1.0
        self.extra = 0  # digits added after a failure that more precision cured
        self.stuck = False  # Newton's method stopped converging (steps below 1/16 decade)
        self.last_residual = None

    def work(self, t):
        decades = max(0.0, float(np.log10(self.scale / float(t)))) if float(t) > 0 else 0.0
        w = self.dps + guard_digits(self.dps) + int(2 * decades) + 10 + self.extra
        return _level(w)

    def start(self):
        """Double precision from ``t = scale``: Newton's method along the path while it converges
        within 6 iterations to a relative residual of ``1e-10`` (down to ``1e-5`` of the scale)."""
        fast = self.systems.fast
        ts = self.scale * np.array([1.0, 10 ** -0.5])
        g, outs, conv, res = solve_fast(fast, self.z0 + 1j * ts, raise_on_failure=False)
        if not conv.all():
            raise ConvergenceError(
                f"no verified solution on the imaginary axis above z = {self.z0} (double-precision residual "
                f"{max(res):.3g} at t = {ts[np.argmax(res)]:.3g})", point=self.z0, residual=float(max(res)),
                dps=self.dps)
        pts = [(ts[0], g[0], outs[0]), (ts[1], g[1], outs[1])]
        delta = 0.5
        while pts[-1][0] > 1e-5 * self.scale and delta >= 1 / 16:
            (t0, g0, _), (t1, g1, _) = pts[-2], pts[-1]
            t_new = max(t1 * 10.0 ** (-delta), 1e-5 * self.scale)
            q = np.log(t_new / t1) / np.log(t1 / t0)
            pred = np.array([complex(_power_step(a.real, b.real, q), _power_step(a.imag, b.imag, q))
                             for a, b in zip(g1, g0)])
            z = np.array([complex(self.z0, t_new)])
            gn, ok, _, on = _newton_fast(fast, pred[None, :], z, np.zeros(1), maxiter=6, tol=1e-10)
            if ok[0] and on[0, 0].imag <= 1e-8 * abs(on[0, 0]) and np.isfinite(gn).all():
                pts.append((t_new, gn[0], on[0]))
                delta = min(2 * delta, 2.0)
            else:
                delta /= 2
        ctx = context(self.work(pts[-1][0]))
        for t, gk, ok in pts:
            self.points.append((ctx.mpf(float(t)), [ctx.mpc(x) for x in gk], [ctx.mpc(x) for x in ok], None))
        return self

    @property
    def t(self):
        return self.points[-1][0]

    def solve(self, t_new, pred, extra=0):
        """Newton at ``z0 + i t_new`` from ``pred``; ``(g, outputs, iterations, ctx)`` or None."""
        ctx = context(self.work(t_new) + (_LEVEL if extra else 0))
        mpsys = self.systems.mp(ctx)
        t_new = ctx.mpf(t_new)
        # relative residual: the working digits beyond dps + guard absorb the
        # condition number, which grows like (scale/t)^2
        tol = ctx.mpf(10) ** (-(self.dps + guard_digits(self.dps) + 5))
        try:
            g, outs, res, it = _newton(mpsys, [ctx.mpc(x) for x in pred], ctx.mpc(self.z0, t_new), tol, maxiter=12)
        except ConvergenceError:  # a singular matrix on the way
            return None
        if not res < tol:
            self.last_residual = res
            return None
        if outs[0].imag > ctx.mpf(10) ** (-self.dps) * abs(outs[0]):
            return None  # wrong half-plane: a wrong branch
        return g, outs, it, ctx

    def advance(self, t_new):
        """One step to ``t_new`` (below the last ``t``); the Newton iterations it took, or None."""
        t2, g2, _, _ = self.points[-1]
        # three points about a decade apart each (not the last, possibly tiny, steps)
        t1, g1, _, _ = next((p for p in reversed(self.points[:-1]) if float(p[0]) >= 3 * float(t2)), self.points[0])
        t0, g0, _, _ = next((p for p in reversed(self.points[:-1]) if float(p[0]) >= 3 * float(t1)), self.points[0])
        xs = [float(np.log(float(t))) for t in (t0, t1, t2)]
        xn = float(np.log(float(t_new)))
        pred = []
        for a, b, c in zip(g0, g1, g2):
            parts = [_three_point(xs, (float(u), float(v), float(w)), xn, w) for u, v, w in
                     ((a.real, b.real, c.real), (a.imag, b.imag, c.imag))]
            pred.append(type(c)(*parts))
        out = self.solve(t_new, pred)
        if out is None:
            return None
        g, outs, it, ctx = out
        self.points.append((ctx.mpf(t_new), g, outs, ctx.dps))
        return it

    def descend(self, t_target, stop=None):
        """Continue down to ``t_target``; True when ``stop()`` held on the way."""
        while float(self.t) > float(t_target) * (1 + 1e-12):
            t_new = max(float(t_target), float(self.t) * 10.0 ** (-self.delta))
            self.last_residual = None
            it = self.advance(t_new)
            if it is None and self.delta <= 0.5 and self.extra < 60 and self.last_residual is not None \
                    and self.last_residual < 1e-12:
                # a condition number beyond (scale/t)^2 (a branch point at z0): more digits first
                self.extra += 20
                it = self.advance(t_new)
                if it is None:
                    self.extra -= 20
            if it is None:
                self.delta /= 2
                if self.delta < 1 / 16:
                    self.stuck = True
                    return False
                continue
            if it <= 6:
                self.delta = min(2 * self.delta, 8.0)
            if stop is not None and stop():
                return True
        return False

    def extrapolate(self, k=8):
        """Richardson (Neville) extrapolation of the mass to ``t = 0`` from the last mpmath points.

        ``M(t) = m + c t^beta + ...``: ``beta`` is read off the last three
        points about a decade apart (:func:`_three_point`'s fit), and the
        expansion is taken in powers of ``s = t^beta``. Returns ``(estimate,
        change)``, the change being the difference between the extrapolants
        from the last ``k`` and ``k - 1`` points, or None with too few points.
        """
        pts = [p for p in self.points if p[3] is not None]
        if len(pts) < 5:
            return None
        t2 = pts[-1]
        t1 = next((p for p in reversed(pts[:-1]) if float(p[0]) >= 3 * float(t2[0])), None)
        t0 = next((p for p in reversed(pts[:-1]) if t1 is not None and float(p[0]) >= 3 * float(t1[0])), None)
        if t0 is None:
            return None
        xs = [float(np.log(float(p[0]))) for p in (t0, t1, t2)]
        vs = [float(self.mass(p)) for p in (t0, t1, t2)]
        beta = _exponent(xs, vs)
        if beta is None or not beta > 0.05:
            return None
        # the exponents of an algebraic function's expansion are rationals with
        # small denominators: use the nearest one (and nothing if none is near)
        frac = min((Fraction(round(beta * q), q) for q in range(1, 13)), key=lambda f: abs(float(f) - beta))
        if abs(float(frac) - beta) > 0.02 or frac <= 0:
            return None
        ctx = context(self.dps + guard_digits(self.dps))
        use = pts[-k:]
        ss = [ctx.mpf(p[0]) ** (ctx.mpf(frac.numerator) / frac.denominator) for p in use]
        ms = [ctx.mpf(self.mass(p)) for p in use]

        def neville(s_, m_):
            table = list(m_)
            n = len(s_)
            for level in range(1, n):
                table = [(s_[i + level] * table[i] - s_[i] * table[i + 1]) / (s_[i + level] - s_[i])
                         for i in range(n - level)]
            return table[0]

        # extrapolants from the last 3, 4, ... points: the last three must agree
        ests = [neville(ss[-j:], ms[-j:]) for j in range(3, len(ss) + 1)]
        if len(ests) < 3:
            return None
        return ests[-1], max(abs(ests[-1] - ests[-2]), abs(ests[-1] - ests[-3]))

    def mass(self, point=None):
        """``Re(i t G_u(z0 + i t))`` at the last (or the given) point."""
        t, _, outs, _ = point or self.points[-1]
        return -t * outs[0].imag

    def recheck(self):
        """The last point solved again with 10 more digits; its mass."""
        t, g, outs, _ = self.points[-1]
        out = self.solve(t, g, extra=10)
        if out is None:
            raise ConvergenceError(f"the solution at z = {self.z0} + i {float(t):.3g} is not stable under a precision "
                                   f"increase", point=complex(self.z0, float(t)), dps=self.dps)
        g2, outs2, _, ctx = out
        return self.mass((ctx.mpf(t), g2, outs2, ctx.dps))


def _direct_bound(systems, z0, dps):
    """An upper bound of the mass at ``z0`` from one verified solve next to it, or None.

    At a point where the Dyson solution is regular (outside the support, or
    inside it where the density is finite) the boundary value ``G(z0 + i0)``
    is solved directly (:func:`~freeprob.solve.newton.solve_point` on the
    axis: at ``z0 + i t``, ``t = 10^-(dps + guard)``, checked under a
    precision increase), and ``M(t) = -t Im G_u(z0 + i t)`` (plus ``t`` times
    the change under that increase) bounds the mass from above, as every
    value of ``M`` does. Next to an atom or a singular edge the solve fails or
    the bound is not small, and None or a large bound is returned; the caller
    then continues the solution down the imaginary direction.
    """
    try:
        sol = solve_point(systems, z0, dps, on_axis=True, where=z0)
    except ConvergenceError:
        return None
    t = sol.z.imag
    return -t * sol.outputs[0].imag + t * sol.difference


def atom_at(system, kind, x0, dps, lower=0, scale=1.0, hard_edge=False):
    """The mass at ``x0`` to ``dps`` digits, given an exact lower bound ``lower`` of it.

    ``M(y) = Re(iy G(x0 + iy))`` (for squared singular values at 0,
    ``-y G(-y)``, which is ``Re(i t G_u(i t))`` at ``t = sqrt(y)`` in the
    system variable) decreases to the mass as ``y -> 0``: each verified value
    is an upper bound. For eigenvalues with ``lower = 0``, where the solution
    is regular at ``x0`` (a gap of the support, or a finite density) one
    verified solve at ``y = 10^-(dps + guard)`` (:func:`_direct_bound`) gives
    a bound below ``10^-(dps+1)``, and the mass is 0 (``"bound"``).
    Otherwise (an atom, a singular density, squared singular values, and
    always with ``hard_edge``) the Dyson solution is continued down the
    imaginary direction (:class:`_AxisPath`) until

    * ``M - lower < 10^-(dps+1)``: the value is solved again with 10 more
      digits, and the mass lies in ``[lower, lower + 10^-(dps+1))``; or
    * the Richardson extrapolation of ``M`` to ``y = 0`` in powers of
      ``y^beta`` (``beta`` read off the values, :meth:`_AxisPath.extrapolate`)
      settles to ``10^-(dps+1)`` (where the density is singular at ``x0``,
      ``M - mass`` decays like a fractional power and the bound alone would
      need ``y`` far below ``10^-dps``). The estimate must lie between
      ``lower`` and the last upper bound.

    Parameters
    ----------
    system : DysonSystem or NumericSystems
    kind : {"eigenvalues", "squared-singular-values"}
    x0 : float
        The candidate (the user's variable).
    dps : int
    lower : number
        A lower bound of the mass (for instance ``1 - rank/rows`` at 0);
        ``0`` when none is known.
    scale : float
        The law's scale (a bound of ``|x|`` on its support).
    hard_edge : bool
        Also verify that absolutely continuous mass reaches ``x0`` (see
        :func:`hard_edge_at`).

    Returns
    -------
    (mpf, str)
        The mass and how it was settled: ``"bound"`` (it is ``lower``, the two
        bounds agree), ``"extrapolated-bound"`` (the extrapolated value agrees
        with ``lower`` to ``10^-(dps+1)``; the mass is ``lower``) or
        ``"extrapolated"`` (the extrapolated value, above ``lower``).

    Raises
    ------
    ConvergenceError
        With the bounds and the last extrapolants, when neither settles, a
        value is not stable under a precision increase, or the upper bound
        falls below ``lower``.
    """
    systems = _systems(system)
    ssv = kind == "squared-singular-values"
    if ssv and float(x0) != 0:
        return _mass_off_zero(systems.system, float(x0), dps), "extrapolated"
    ctx = context(dps + guard_digits(dps))
    low = to_mpf(ctx, lower)
    scale = float(scale)
    z0 = 0.0 if ssv else float(x0)
    zscale = float(np.sqrt(scale)) if ssv else scale
    tol = ctx.mpf(10) ** (-(dps + 1))
    # one solve next to x0 settles a zero mass at a regular point; with an atom expected (a positive lower
    # bound) or in the hermitized variable (singular at 0 for a non-square shape) it fails, slowly: not tried
    if not hard_edge and not ssv and low == 0:
        upper = _direct_bound(systems, z0, dps)
        if upper is not None:
            if upper < low - ctx.mpf(10) ** (-dps):
                raise ConvergenceError(
                    f"the mass at {x0} is at most {ctx.nstr(upper, 12)} (the solve at x0 + i 10^-{dps + guard_digits(dps)}), "
                    f"below its lower bound {ctx.nstr(low, 12)} from the ranks of the expression", point=x0, dps=dps)
            if upper - low < tol:
                return low, "bound"
    path = _AxisPath(systems, z0, dps, zscale).start()
    decades = 3 * dps + 20
    t_min = max(zscale * 10.0 ** (-(decades / 2 if ssv else decades)), 1e-300)
    state = {}

    def settled():
        if path.mass() - low < tol:
            state["how"] = "bound"
            return True
        ext = path.extrapolate()
        if ext is not None and ext[1] < tol:
            state["how"], state["value"] = "extrapolated", ext[0]
            return True
        return False

    path.descend(t_min, stop=settled)
    upper = path.mass()
    if upper < low - ctx.mpf(10) ** (-dps):
        raise ConvergenceError(
            f"the mass at {x0} is at most {ctx.nstr(upper, 12)} (the solve at y = {float(path.t):.3g}), below its "
            f"lower bound {ctx.nstr(low, 12)} from the ranks of the expression", point=x0, dps=dps)
    how = state.get("how")
    if how is None:
        ext = path.extrapolate()
        raise ConvergenceError(
            f"the mass at {x0} was not settled: it lies in [{ctx.nstr(low, 12)}, {ctx.nstr(upper, 12)}] (lower bound "
            f"from the ranks, upper bound from the solve at y = {float(path.t):.3g}); extrapolation "
            + ("had too few points" if ext is None else f"gave {ctx.nstr(ext[0], 12)} +- {ctx.nstr(ext[1], 3)}"),
            point=x0, dps=dps)
    if how == "bound":
        again = path.recheck()
        if abs(again - upper) > tol or again - low >= tol:
            raise ConvergenceError(
                f"the bound on the mass at {x0} is not stable under a precision increase ({ctx.nstr(upper, 12)} vs "
                f"{ctx.nstr(again, 12)})", point=x0, dps=dps)
        mass = low
    else:
        value = state["value"]
        if not (low - tol <= value <= upper + tol):
            raise ConvergenceError(
                f"the extrapolated mass {ctx.nstr(value, 12)} at {x0} lies outside [{ctx.nstr(low, 12)}, "
                f"{ctx.nstr(upper, 12)}], its bounds from the ranks and from the solve at y = {float(path.t):.3g}",
                point=x0, dps=dps)
        how, mass = ("extrapolated-bound", low) if abs(value - low) < tol else ("extrapolated", ctx.mpf(value))
    if hard_edge:
        eps = ctx.mpf(10) ** (-dps) * scale

        def reaches():
            # the last value bounds the mass from above; an earlier one that
            # exceeds it by more than a law without mass near x0 allows proves it
            top = path.mass()
            for p in path.points:
                if p[3] is not None:
                    t = ctx.mpf(p[0])
                    if path.mass(p) - top > (t * t / eps if ssv else (t / eps) ** 2):
                        return True
            return False

        if not reaches():
            path.descend(t_min, stop=reaches)
            if not reaches() and path.stuck:
                raise ConvergenceError(
                    f"a hard edge at {x0} could not be verified to {dps} digits: the Dyson solution could not be "
                    f"continued below y = {float(path.t):.3g} (the absolutely continuous part of M(y) = "
                    f"Re(iy G(x0 + iy)) is {ctx.nstr(path.mass() - mass, 5)} there)", point=x0, dps=dps)
            if not reaches():
                raise ConvergenceError(
                    f"no hard edge at {x0}: down to y = {float(path.t):.3g} the absolutely continuous part of "
                    f"M(y) = Re(iy G(x0 + iy)), {ctx.nstr(path.mass() - mass, 5)}, stays within the bound of a law "
                    f"without mass in (x0 - {float(eps):.3g}, x0 + {float(eps):.3g}); the support ends at a soft edge "
                    f"near {x0}", point=x0, dps=dps)
    return mass, how


def hard_edge_at(system, kind, x0, dps, lower=0, scale=1.0):
    """Verify that absolutely continuous mass reaches ``x0``: the support ends there to ``10^-dps`` of ``scale``.

    With ``eps = 10^-dps scale`` (user variable), a law with no absolutely
    continuous mass in ``(x0 - eps, x0 + eps)`` has
    ``M(y) - mass <= y^2/eps^2`` (eigenvalues; for squared singular values at
    0, ``M - mass <= y/eps`` in ``y = t^2``). The mass is settled first
    (:func:`atom_at`, so ``mass < m + 10^-(dps+1)`` for the value ``m``
    found), then the solution is continued down the imaginary direction until
    a verified ``M(y)`` exceeds ``m + 10^-(dps+1)`` plus that bound: then
    absolutely continuous mass lies within ``eps`` of ``x0``, and a support
    interval whose bracket contains ``x0`` ends at ``x0`` to ``dps`` digits of
    the scale. At a hard edge (density ``~ |x - x0|^-gamma``) ``M - mass``
    decays like a fractional power, far slower than the bound.

    Returns
    -------
    (mpf, str)
        The mass at ``x0`` and how it was settled, as :func:`atom_at`.

    Raises
    ------
    ConvergenceError
        With the numbers, when the criterion is not met down to
        ``y = 10^-(3 dps + 20)`` of the scale (a soft edge close to ``x0``).
    """
    return atom_at(system, kind, x0, dps, lower, scale, hard_edge=True)


# --------------------------------------------------------------------------
# double-precision brackets from a density callable
# --------------------------------------------------------------------------
#
# ``density(xs)`` is a vectorized double-precision density (NaN where it could
# not be verified); ``kind`` is "eigenvalues" (support anywhere on the line) or
# "squared-singular-values" (support in [0, inf), a hard edge or atom at 0).

def probe_range(density, kind, what="the law"):
    """A range around the density seen on the doubling grid ``±2^k``, ``k = -6..16``."""
    ks = 2.0 ** np.arange(-6, 17)
    xs = ks if kind == "squared-singular-values" else np.concatenate([-ks[::-1], ks])
    d = np.nan_to_num(density(xs))
    top = float(np.max(d))
    if not top > 0:
        raise ConvergenceError(f"no positive density of {what} found on ±[2^-6, 2^16]")
    r = 2 * float(np.max(np.abs(xs[d > 1e-6 * top])))
    return (0.0, r) if kind == "squared-singular-values" else (-r, r)


def support_grid(density, kind, grid, range_, what="the law", max_widenings=12, geometric=True):
    """A density grid ``(xs, d, threshold, positive)`` on ``range_``, widened until its ends lie outside the support.

    A finite number of moments or probes can underestimate an edge, so the
    range is doubled while the density is still positive at an end. For
    squared singular values, ``geometric`` adds 24 points between ``1e-6`` of
    the range and its first cell; an eigenvalue range that contains 0 gets
    8 geometric points on each side of 0, down to ``1e-4`` of the range (closer
    to a hard edge the double-precision density is not verified).
    """
    lo, hi = range_
    for _ in range(max_widenings):
        if kind == "squared-singular-values" and not geometric:
            xs = np.linspace(hi / grid, hi, grid)
        elif kind == "squared-singular-values":
            # geometric points below the first cell: a soft edge or a gap
            # close to the atom at 0 is not merged with it
            xs = np.concatenate([np.geomspace(hi * 1e-6, hi / grid, 25)[:-1], np.linspace(hi / grid, hi, grid)])
        else:
            xs = np.linspace(lo, hi, grid)
            if lo < 0 < hi:
                # geometric points on both sides of 0, where narrow pieces sit
                # (next to an atom, or a small bulk of a rank-deficient part)
                # that a linear grid can step over
                near0 = np.geomspace(1e-4, 1.0 / grid, 8) * (hi - lo)
                xs = np.unique(np.concatenate([xs, near0[near0 < hi], -near0[-near0 > lo]]))
        d = density(xs)
        finite = np.isfinite(d)
        # threshold relative to a typical bulk value (a hard edge or an atom's
        # Lorentzian tail must not set the scale)
        bulk = d[finite & (d > 1e-9)]
        thr = 1e-4 * float(np.median(bulk)) if bulk.size else 1e-9
        pos = finite & (d > thr)
        wide_left = kind == "eigenvalues" and pos[0]
        if not pos[-1] and not wide_left:
            return xs, d, thr, pos
        width = hi - lo
        hi = hi + width if pos[-1] else hi
        lo = lo - width if wide_left else lo
    raise ConvergenceError(
        f"the density of {what} is still positive at the end of the range [{xs[0]}, {xs[-1]}] "
        f"after {max_widenings} doublings: the law may not be compactly supported"
    )


#: Coarse passes :func:`coarse_range` makes at most (each narrows the range by the coarse grid's size).
MAX_ZOOMS = 8
#: A coarse pass that sees the support on fewer grid points than this zooms in on them.
ZOOM_BELOW = 8


def coarse_range(density, kind, grid, range_, what="the law"):
    """The part of ``range_`` that holds the support, from coarse density passes of ``grid`` points.

    A scale bound can be loose by orders of magnitude (it multiplies norm
    bounds of factors), so the whole support may fall between two coarse
    points, or on only a few: the range then narrows to the cells around the
    points that see it and the pass is repeated, at most :data:`MAX_ZOOMS`
    times. For squared singular values the range keeps 0 as its left end (a
    first pass that sees nothing narrows to the first cell, which holds the
    support if any point of the range does; after a pass that saw the support
    the range is kept: narrow pieces can fall between a later pass's points).
    """
    seen = False
    for _ in range(MAX_ZOOMS):
        xs, _, _, pos = support_grid(density, kind, grid, range_, what, geometric=False)
        idx = np.nonzero(pos)[0]
        if idx.size:
            a, b = xs[max(idx[0] - 1, 0)], xs[min(idx[-1] + 1, len(xs) - 1)]
            range_ = (0.0 if kind != "eigenvalues" else a, b)
            seen = True
        elif kind != "eigenvalues":
            if seen:
                # an earlier pass saw the support inside this range and this one stepped over it (narrow
                # pieces): the range stays, and the adaptive scan refines it
                break
            range_ = (0.0, xs[0])
        if idx.size >= ZOOM_BELOW or (kind == "eigenvalues" and not idx.size):
            break
    return range_


def support_runs(xs, d, pos, kind, what="the law"):
    """Runs ``(i0, i1, hard_zero)`` of grid points with positive density that carry mass.

    A run of negligible mass is the tail of an atom seen through ``eta > 0``
    and is dropped; a run starting at the first grid point is a hard edge at
    0 of a squared-singular-value law when the density grows towards 0.
    """
    runs = []
    i = 0
    while i < len(xs):
        if not pos[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(xs) and pos[j + 1]:
            j += 1
        seg = slice(max(i - 1, 0), min(j + 2, len(xs)))
        if np.trapezoid(np.nan_to_num(d[seg]), xs[seg]) >= 1e-6:
            hard_zero = i == 0
            if hard_zero and not (kind == "squared-singular-values" and d[0] >= d[1]):
                raise ConvergenceError(f"the density of {what} is positive at the start of the grid x = {xs[0]}")
            runs.append((i, j, hard_zero))
        i = j + 1
    return runs


def shrink_bracket(density, x_out, x_in, thr, rounds, rel):
    """Shrink the bracket ``(x_out, x_in)`` of an edge by 16-point searches on ``density > thr``."""
    width = abs(x_in - x_out)
    for _ in range(rounds):
        ts = np.linspace(x_out, x_in, 18)[1:-1]
        inside = np.nonzero(np.nan_to_num(density(ts)) > thr)[0]
        if not len(inside):
            x_out = ts[-1]  # the edge lies between the last point tried and x_in
        else:
            k = inside[0]
            x_out, x_in = (ts[k - 1] if k > 0 else x_out), ts[k]
        if abs(x_in - x_out) < rel * width:
            break
    return float(x_out), float(x_in)


#: The sides of an edge ``e`` found from the bracket ``(x_out, x_in)`` are probed at
#: ``e -+ SIDE_PROBE |x_in - x_out|`` (:func:`edge_sides_ok`).
SIDE_PROBE = 1e-4
#: ... and at least this fraction of ``max(1, |e|)`` away.
SIDE_FLOOR = 1e-9


def _side_steps(x_edge, x_out, x_in):
    """``(side, steps)``: the direction from ``x_out`` to ``x_in`` and the three distances from the edge at which
    :func:`edge_sides_ok` probes."""
    side = 1.0 if x_in > x_out else -1.0
    # not below SIDE_FLOOR of |x| (a bracket around a gap far narrower than a grid cell is tiny, and the
    # double-precision solve is not verified within about 1e-10 of an edge)
    steps = max(SIDE_PROBE * abs(x_in - x_out), SIDE_FLOOR * max(1.0, abs(x_edge))) * np.array([1.0, 10.0, 100.0])
    return side, steps


def _side_probes(x_edge, x_out, x_in, cauchy):
    """The points :func:`edge_sides_ok` solves for the edge ``x_edge`` of the bracket ``(x_out, x_in)``:
    three inside on the axis, then (with ``cauchy``) three outside just above it; without ``cauchy``, three
    outside then three inside, on the axis."""
    x_edge = float(x_edge)
    side, steps = _side_steps(x_edge, x_out, x_in)
    if cauchy is None:
        return np.concatenate([x_edge - side * steps, x_edge + side * steps]).astype(complex)
    return np.concatenate([x_edge + side * steps, x_edge - side * steps + 1e-3j * steps])


def edge_sides_ok(density, x_edge, x_out, x_in, thr, cauchy=None, values=None):
    """Whether ``x_edge`` (user variable) is the edge the bracket ``(x_out, x_in)`` asks for.

    The fold system has a solution at every soft edge, and Newton's method
    from a bracket can converge to another one (the far end of a gap next to
    the bracket). The edge is accepted only when the density just inside it
    (towards ``x_in``) is verified positive and just outside it (towards
    ``x_out``) is not: at ``SIDE_PROBE`` of the bracket's width on each side
    (inside, 10 and 100 times as far when the value there is not verified),
    the inside value above ``1e-6 thr`` (the distances are at least
    :data:`SIDE_FLOOR` of ``max(1, |e|)``). A square-root edge gives about
    ``1e-2`` of the density at ``x_in`` inside, a far-side edge (the other
    end of a gap) a zero.

    Outside, next to an edge, the real-axis solve is often not verified (NaN)
    and slow (its retries): with ``cauchy`` the outside point is taken at
    height ``1e-3`` of its distance ``h`` from the edge, where outside the
    support ``-Im G/pi`` is about ``1e-3/2`` of the inside value at ``h`` (a
    square root seen from the outside), and must be below a tenth of it;
    inside the support (a fold of a non-physical branch) it would be of the
    same size (compared at the first of the three distances where the
    off-axis value is verified). Without ``cauchy``, or when no off-axis value
    is verified, the outside values on the axis must not be verified positive.
    """
    x_edge = float(x_edge)
    if values is None:
        points = _side_probes(x_edge, x_out, x_in, cauchy)
        values = cauchy(points) if cauchy is not None else density(points.real)
    side, steps = _side_steps(x_edge, x_out, x_in)
    tiny = 1e-6 * thr
    if cauchy is not None:
        vals = -np.imag(values) / np.pi
        inside, outside = vals[:3], vals[3:]
        for in_value in inside:
            if np.isfinite(in_value):
                near = inside[0] if np.isfinite(inside[0]) else in_value
                for k, out_value in enumerate(outside):
                    # the first verified outside value decides, compared with the inside value at the same
                    # distance (its square root seen from outside is about 1e-3/2 of it)
                    if np.isfinite(out_value):
                        ref = inside[k] if np.isfinite(inside[k]) else near
                        return bool(in_value > tiny and out_value < 0.1 * ref)
                # no verified value off the axis (too close to the edge for the double solve): the outside
                # density on the axis must not be verified positive, as without ``cauchy``
                axis = density(x_edge - side * steps)
                return bool(in_value > tiny and not np.any(axis > tiny))
        return False
    values = np.asarray(values, dtype=float)
    for out_value, in_value in zip(values[:3], values[3:]):
        # the first verified inside value decides; outside, the double-precision
        # density is often not verified (NaN) next to an edge: it must only not
        # be verified positive
        if np.isfinite(in_value):
            return bool(in_value > tiny and not out_value > tiny)
    return False


def bracketed_edge(system, density, kind, x_out, x_in, thr, dps, cauchy=None):
    """The soft edge between the grid points ``x_out`` (density at most ``thr``) and ``x_in``
    (above it), to ``dps`` digits, in the user variable (an mpf).

    Newton's method on the fold system (:func:`refine_edge`) from ``x_out``;
    when it fails, or converges to an edge that :func:`edge_sides_ok` refuses
    (the other end of a gap), once more from the bracket shrunk in double
    precision (:func:`shrink_bracket`), which starts Newton well inside the
    basin of the edge asked for; that edge must pass the same check.

    Raises
    ------
    ConvergenceError
        When neither start gives an edge with zero density outside and positive
        density inside.
    """
    return bracketed_edges(system, density, kind, [(x_out, x_in)], thr, dps, cauchy)[0]


def bracketed_edges(system, density, kind, brackets, thr, dps, cauchy=None):
    """:func:`bracketed_edge` for each ``(x_out, x_in)`` of ``brackets``; the first tries' side checks are
    solved in one batch (a batch of double-precision solves costs its paths' steps, hardly its points)."""
    systems = _systems(system)
    ctx = context(dps + guard_digits(dps))

    def user(e):
        e = ctx.mpf(e)
        return e if kind == "eigenvalues" else e * e

    def bracket(x_out, x_in):  # in the system's variable
        return _z_of(kind, x_out), _z_of(kind, x_in)

    def first(x_out, x_in):
        # Newton on the fold system straight from the grid point outside
        try:
            return user(refine_edge(systems, _z_of(kind, x_out), dps, bracket=bracket(x_out, x_in), fallback=False))
        except ConvergenceError:
            return None

    found = [first(x_out, x_in) for x_out, x_in in brackets]
    tried = [i for i, e in enumerate(found) if e is not None]
    ok = [False] * len(brackets)
    if tried:
        probes = [_side_probes(found[i], *brackets[i], cauchy) for i in tried]
        flat = np.concatenate(probes)
        values = cauchy(flat) if cauchy is not None else density(flat.real)
        at = np.cumsum([0] + [len(p) for p in probes])
        for k, i in enumerate(tried):
            ok[i] = edge_sides_ok(density, found[i], *brackets[i], thr, cauchy, values=values[at[k]:at[k + 1]])
    out = []
    for (x_out, x_in), e, good in zip(brackets, found, ok):
        if not good:
            # shrink the grid bracket in double precision first, so that Newton
            # starts well inside its basin
            near, _ = shrink_bracket(density, x_out, x_in, thr, rounds=4, rel=1e-7)
            e = user(refine_edge(systems, _z_of(kind, near), dps, bracket=bracket(x_out, x_in)))
            if not edge_sides_ok(density, e, x_out, x_in, thr, cauchy):
                raise ConvergenceError(
                    f"the edge search between x = {x_out} (outside) and x = {x_in} (inside) converged to "
                    f"{float(e):.15g}, where the density could not be verified to be zero outside and positive "
                    f"inside", point=x_out, dps=dps)
        out.append(e)
    return out


def _z_of(kind, x):
    """The system's variable at the user point ``x`` (``sqrt(x)`` for squared singular values)."""
    return x if kind == "eigenvalues" else float(np.sqrt(x))


def support_by_density(density, kind, grid=2001, rel=1e-6, what="the law"):
    """Support intervals in double precision from ``density`` alone (see ``SpectralLaw.support_fast``)."""
    xs, d, thr, pos = support_grid(density, kind, grid, probe_range(density, kind, what), what)
    out = []
    for i0, i1, hard_zero in support_runs(xs, d, pos, kind, what):
        if hard_zero or _grows_to_zero(xs, d, i0, i0 - 1, i0 + 1, kind, i1 > i0, density, thr):
            left = 0.0
        else:
            left = shrink_bracket(density, xs[i0 - 1], xs[i0], thr, rounds=12, rel=rel)[0]
        if _grows_to_zero(xs, d, i1, i1 + 1, i1 - 1, kind, i1 > i0, density, thr):
            right = 0.0
        else:
            right = shrink_bracket(density, xs[i1 + 1], xs[i1], thr, rounds=12, rel=rel)[0]
        out.append((float(left), float(right)))
    return tuple(out)


def _grows_to_zero(xs, d, end, out, inner, kind, long_enough, density=None, thr=0.0):
    """An eigenvalue law's run ending at grid point ``end`` whose bracket (towards ``out``) contains 0 and
    whose density grows towards it: a hard edge at 0 (exactly 0 in the support; verified by
    :func:`hard_edge_at` on the verified route).

    A soft edge below one grid cell from 0 with the density's peak just inside
    it looks the same on the grid (Marchenko-Pastur at ratio 0.9: edge
    0.0026, cell 0.01); with ``density``, a candidate whose density at
    ``1e-6`` of the grid's width from 0 (on its side) is verified to be at most
    ``thr`` is refused."""
    if kind != "eigenvalues" or not long_enough:
        return False
    lo, hi = sorted((xs[end], xs[out]))
    if not (lo <= 0 <= hi and d[end] > d[inner]):
        return False
    if density is None:
        return True
    side = 1.0 if xs[end] >= 0 else -1.0
    probe = density(np.array([side * 1e-6 * (xs[-1] - xs[0])]))[0]
    # refused only on a verified absence of density there (next to a true hard
    # edge the double-precision value may be unverified, NaN: the candidate stays)
    return not (np.isfinite(probe) and probe <= thr)


#: A window of five consecutive scan points is smooth when the fourth divided difference of ``G`` over it,
#: times the window's width to the fourth power, is at most this fraction of the largest ``|G|`` in it.
SMOOTH_TOL = 1e-2
#: Refinement rounds of :func:`adaptive_scan` at most (each cuts the suspect cells in four or more pieces).
MAX_REFINE = 24
#: A cell inside or outside the support (not holding an edge) whose windows are not smooth is cut down to
#: this fraction of the scanned range: ``G`` is analytic there unless a gap, a piece or a cusp hides in it,
#: and an analytic stretch becomes smooth once the cells are small next to its distance from the nearest
#: branch point. Below it the double-precision solve is not verified next to an edge (about ``1e-10``).
DEEP_WIDTH = 1e-9


def _divided4(x, f):
    """Fourth divided differences of ``f`` over each window of five consecutive points of ``x``."""
    d = f.astype(complex)
    for k in range(1, 5):
        d = (d[1:] - d[:-1]) / (x[k:] - x[:-k])
    return d


def adaptive_scan(cauchy, kind, grid, range_, what="the law"):
    """A scan ``(xs, d, thr, pos)`` of the support's range driven by the analyticity of ``G``.

    ``G`` (``cauchy``: the double-precision Cauchy transform at real points,
    NaN where unverified) is real-analytic on each gap and analytic along the
    interior of each support interval. An edge, a gap or a support piece
    between two scan points is a branch point or a cut of the function the
    points sample, and shows in the fourth divided difference of the samples.

    The coarse passes of :func:`coarse_range` (``max(64, grid // 4)``
    points, narrowing a loose range) are the first scan: their points inside
    the narrowed range, with geometric points towards 0 as in
    :func:`support_grid`. A cell is *smooth* when a window of five
    consecutive points that contains it lies on one side of the support
    (all inside or all outside) and its fourth divided difference of ``G``,
    times the window's width to the fourth power, is at most
    :data:`SMOOTH_TOL` of the largest ``|G|`` in the window. Cells that are not
    smooth are cut in eight when they hold an edge, else in four or in the
    pieces :func:`_pieces_to_smooth` asks for (geometrically next to 0,
    :func:`_cut_cell`): a cell holding
    an edge until it is no wider than a cell of a uniform ``grid``-point scan
    of the range (Newton's method on the fold system finishes the edge), any
    other until it is smooth or no wider than :data:`DEEP_WIDTH` of the range
    (at most :data:`MAX_REFINE` rounds). An analytic stretch becomes smooth
    once its cells are small next to its distance from the nearest branch
    point; a gap, however narrow, keeps its cell non-smooth until a point
    falls in it. So a feature hidden between two accepted points changes
    ``G`` by less than about ``SMOOTH_TOL`` of its size there; the cost is
    the coarse passes and a few points per edge and per near-closing gap, not
    a dense scan. An unverified (NaN) point is moved by a small fraction of
    its cell to where ``G`` is verified (:func:`_moved_off_unverified`);
    windows with a value still unverified decide nothing.

    Returns the points, the density at them, the threshold (``1e-4`` of the
    median bulk density) and where the density exceeds it, as
    :func:`support_grid`.
    """
    seen = {}

    def density(x):
        x = np.asarray(x, dtype=float)
        g = cauchy(x)
        seen.update(zip(x.tolist(), g.tolist()))
        return _density_of(g, x, kind)

    lo, hi = coarse_range(density, kind, max(64, grid // 4), range_, what)
    xs = np.array(sorted(x for x in seen if lo <= x <= hi))
    if kind == "squared-singular-values":
        # geometric points below the first cell: a soft edge or a gap close to
        # the atom at 0 is not merged with it
        extra = np.geomspace(hi * 1e-6, xs[0], 25)[:-1]
    elif lo < 0 < hi:
        # geometric points on both sides of 0, where narrow pieces sit (next to
        # an atom, or a small bulk of a rank-deficient part)
        near0 = np.geomspace(1e-4, 1.0 / grid, 8) * (hi - lo)
        extra = np.concatenate([near0[near0 < hi], -near0[-near0 > lo]])
    else:
        extra = np.zeros(0)
    g = np.array([seen[x] for x in xs.tolist()])
    if extra.size:
        xs, g = _merge(xs, g, extra, cauchy(extra))
    xs, g = _moved_off_unverified(cauchy, xs, g)
    d = _density_of(g, xs, kind)
    finite = np.isfinite(d)
    bulk = d[finite & (d > 1e-9)]
    thr = 1e-4 * float(np.median(bulk)) if bulk.size else 1e-9
    pos = finite & (d > thr)
    min_width = (hi - lo) / (grid - 1) * (1 + 1e-9)
    deep_width = (hi - lo) * DEEP_WIDTH
    for _ in range(MAX_REFINE):
        edge = pos[:-1] != pos[1:]
        width = np.diff(xs)
        # a cell holding an edge is bracketed once it is no wider than a grid cell (Newton's method on the
        # fold system finishes it); a cell on one side whose G is still not smooth is cut further, since a
        # gap narrower than a grid cell (or a piece) hides there, down to deep_width of the range
        cut = _cells_to_cut(xs, g, pos) & (width > np.where(edge, min_width, deep_width))
        if not cut.any():
            break
        pieces = np.where(edge, 8, _pieces_to_smooth(xs, g, pos))
        new = np.concatenate([_cut_cell(xs[i], xs[i + 1], pieces[i]) for i in np.nonzero(cut)[0]])
        xs, g = _merge(xs, g, new, cauchy(new))
        # a point left unverified by an earlier round was already moved where it could be; it is tried again
        # only between two points inside the support, where it would split a run in two
        d = _density_of(g, xs, kind)
        inside = np.isfinite(d) & (d > thr)
        between = np.zeros(len(xs), bool)
        between[1:-1] = inside[:-2] & inside[2:]
        xs, g = _moved_off_unverified(cauchy, xs, g, among=np.isin(xs, new) | between)
        d = _density_of(g, xs, kind)
        pos = np.isfinite(d) & (d > thr)
    return xs, d, thr, pos


#: A cell on one side of 0 whose far end is more than this many times as far from 0 as its near end is cut
#: geometrically (:func:`_cut_cell`).
GEOMETRIC_CUT = 1.2


def _cut_cell(a, b, pieces):
    """The ``pieces - 1`` points that cut the scan cell ``[a, b]``: equally spaced, or equally spaced in
    ``log |x|`` when the cell lies on one side of 0 and its far end is more than :data:`GEOMETRIC_CUT` times
    as far from 0 as its near end.

    0 is where a law's singular points gather (an atom, a hard edge ``x^-gamma``): next to it ``G`` varies
    on the scale of ``|x|``, and the window test of :func:`adaptive_scan` compares a window's width with
    that scale. Equal cuts keep the cell nearest 0 as wide, relative to its distance from 0, as before
    (the window that starts at its near end never becomes smooth, and each round adds points there until
    :data:`DEEP_WIDTH`); geometric cuts shrink the ratio of its ends to its fourth root per round."""
    if a * b > 0 and max(abs(a), abs(b)) > GEOMETRIC_CUT * min(abs(a), abs(b)):
        return np.sign(a) * np.geomspace(abs(a), abs(b), pieces + 1)[1:-1]
    return np.linspace(a, b, pieces + 1)[1:-1]


#: An unverified scan point is moved by these fractions of the distance to its nearest neighbour.
NUDGES = (1e-3, -1e-3, 1e-2, -1e-2, 1e-1, -1e-1)


def _moved_off_unverified(cauchy, xs, g, among=None):
    """The scan with each unverified point (NaN; the double-precision solve on the axis fails now and then,
    inside the support as next to an edge) moved by a small fraction of its cell (:data:`NUDGES`) to where
    ``G`` is verified, when one is. An unverified point counts as outside the support and would split a
    run in two, and the windows holding it decide nothing, so a gap next to it would go unseen. With
    ``among`` (a mask) only those points are moved.

    The two ends of the scan stand outside the support: they move only outwards (an end just outside an
    edge, unverified there, moved inwards landed inside the semicircle's support, whose scan then started
    inside it and was refused), and no point other than 0 itself crosses 0."""
    bad = np.nonzero(np.isnan(g) & (True if among is None else among))[0]
    if not bad.size or len(xs) < 2:
        return xs, g
    xs, g = xs.copy(), g.copy()
    gaps = np.diff(xs)
    near = np.minimum(np.concatenate([[np.inf], gaps])[bad], np.concatenate([gaps, [np.inf]])[bad])
    # the direction each point may move in: +1 (right), -1 (left) or 0 (both)
    way = np.where(bad == 0, -1, np.where(bad == len(xs) - 1, 1, 0))
    todo = np.ones(bad.size, dtype=bool)
    for f in NUDGES:
        allowed = todo & ((way == 0) | (np.sign(f) == way))
        if not allowed.any():
            continue
        idx = bad[allowed]
        moved = xs[idx] + f * near[allowed]
        keep = (np.sign(moved) == np.sign(xs[idx])) | (xs[idx] == 0)  # no point crosses 0
        vals = np.full(len(idx), np.nan, dtype=complex)
        if keep.any():
            vals[keep] = cauchy(moved[keep])
        ok = ~np.isnan(vals)
        xs[idx[ok]], g[idx[ok]] = moved[ok], vals[ok]
        todo[np.nonzero(allowed)[0][ok]] = False
    return xs, g


def _merge(xs, g, new, g_new):
    order = np.argsort(np.concatenate([xs, new]), kind="stable")
    return np.concatenate([xs, new])[order], np.concatenate([g, g_new])[order]


#: Most pieces a cell that is not smooth is cut into in one round of :func:`adaptive_scan`.
MAX_PIECES = 16


def _window_smoothness(xs, g, pos):
    """Per window of five consecutive points: ``q``, its fourth divided difference of ``G`` times its width
    to the fourth power over its largest ``|G|`` (inf where a value is unverified or the window straddles
    the support's boundary), and whether a value in it is unverified."""
    windows = np.lib.stride_tricks.sliding_window_view(np.arange(len(xs)), 5)
    finite = np.isfinite(g)[windows].all(axis=1)
    same = pos[windows].all(axis=1) | (~pos[windows]).all(axis=1)
    with np.errstate(all="ignore"):
        q = np.abs(_divided4(xs, g)) * (xs[4:] - xs[:-4]) ** 4 / np.max(np.abs(g[windows]), axis=1)
    return np.where(finite & same & np.isfinite(q), q, np.inf), ~finite


def _pieces_to_smooth(xs, g, pos):
    """Per cell of the scan, the pieces to cut it into when it is not smooth: 4, or more (up to
    :data:`MAX_PIECES`) when the smallest ``q`` of the windows over it says so. Where ``G`` is analytic
    ``q`` shrinks like the width to the fourth power, so ``(q / SMOOTH_TOL)^(1/4)`` pieces (with a margin
    of 1.25) make the windows smooth in one round instead of two: next to 0, where an atom makes
    ``G ~ m/x``, the geometric points of the first pass are about 1.5 apart in ratio, and cuts in four left
    windows just above the tolerance, which a second round of several hundred points then settled."""
    n = len(xs)
    pieces = np.full(n - 1, 4)
    if n < 5:
        return pieces
    q, _ = _window_smoothness(xs, g, pos)
    best = np.full(n - 1, np.inf)
    for k in range(4):  # window j covers cells j .. j + 3
        best[k:k + len(q)] = np.minimum(best[k:k + len(q)], q)
    with np.errstate(all="ignore"):
        need = np.ceil(1.25 * (best / SMOOTH_TOL) ** 0.25)
    need = np.where(np.isfinite(need), need, 4)
    return np.clip(need, 4, MAX_PIECES).astype(int)


def _cells_to_cut(xs, g, pos):
    """The cells of the scan ``xs`` that no smooth window covers, and those holding an edge
    (see :func:`adaptive_scan`)."""
    n = len(xs)
    edge = pos[:-1] != pos[1:]
    covered = np.zeros(n - 1, dtype=bool)
    if n >= 5:
        q, unverified = _window_smoothness(xs, g, pos)
        # windows with a NaN value decide nothing: their cells count as covered
        for j in np.nonzero((q <= SMOOTH_TOL) | unverified)[0]:
            covered[j:j + 4] = True
    return edge | ~covered


def _density_of(g, x, kind):
    """The density ``-Im G/pi`` from the Cauchy transform at real points (0 at ``x <= 0`` for squared
    singular values; NaN where ``G`` is)."""
    d = -np.imag(g) / np.pi
    if kind == "squared-singular-values":
        d = np.where(x > 0, d, 0.0)
    return np.where(np.isnan(d), np.nan, np.maximum(d, 0.0))


def support_by_folds(system, density, kind, range_, grid, dps, what="the law", hard_edge=None, cauchy=None,
                     local=False):
    """Support intervals with edges to ``dps`` digits.

    Brackets come from :func:`adaptive_scan` of ``cauchy`` when given (a
    first pass of ``grid/4`` points narrows the range and is refined where
    ``G`` is not smooth), else from a ``density`` grid of ``grid`` points over
    the part of ``range_`` where a first pass of ``grid/4`` points saw the
    support (the ends of the range are widened while the density is positive
    there);
    each soft edge is refined by :func:`refine_edge` on
    the fold system. An end whose bracket contains 0 and towards which the
    density grows (for squared singular values: a run that reaches the first,
    geometric, grid points) is a hard edge candidate: ``hard_edge(0)`` must
    verify it (see :func:`hard_edge_at`; it raises otherwise), and the edge is
    then exactly 0.

    Parameters
    ----------
    system : DysonSystem or NumericSystems
    density : callable
        Vectorized double-precision density.
    kind : {"eigenvalues", "squared-singular-values"}
    range_ : (float, float)
        Contains the support (widened while the density is positive at an end).
    grid : int
    dps : int
    what : str
    cauchy : callable, optional
        Vectorized double-precision Cauchy transform at real points (NaN where
        unverified).
    local : bool
        ``range_`` is a window away from 0 whose ends lie outside the support
        (the rescan of a piece the mass check found missing): it is scanned as
        it is, without the ends a law of squared singular values keeps at 0.
    hard_edge : callable, optional
        ``hard_edge(x0)`` verifies a hard edge at ``x0`` (raising
        :class:`ConvergenceError` when it cannot); without it a hard edge
        candidate is an error.

    Returns
    -------
    list of (mpf, mpf)
    """
    systems = _systems(system)
    scan = "eigenvalues" if local else kind  # how the range is scanned; edges are solved in the system's kind
    if cauchy is None:
        range_ = coarse_range(density, scan, max(64, grid // 4), range_, what)
        xs, d, thr, pos = support_grid(density, scan, grid, range_, what)
    else:
        xs, d, thr, pos = adaptive_scan(cauchy, scan, grid, range_, what)

    ctx = context(dps + guard_digits(dps))

    def hard(x0):
        if hard_edge is None:
            raise ConvergenceError(f"the density of {what} grows towards {x0}: a hard edge there is not verified")
        hard_edge(x0)
        return ctx.mpf(x0)

    # each end of each run: a hard edge at 0 (verified now), or the bracket of a soft edge (all found together)
    ends = []
    for i0, i1, hard_zero in support_runs(xs, d, pos, scan, what):
        if hard_zero or _grows_to_zero(xs, d, i0, i0 - 1, i0 + 1, scan, i1 > i0, density, thr):
            ends.append(hard(0))
        else:
            ends.append((xs[i0 - 1], xs[i0]))
        if _grows_to_zero(xs, d, i1, i1 + 1, i1 - 1, scan, i1 > i0, density, thr):
            ends.append(hard(0))
        else:
            ends.append((xs[i1 + 1], xs[i1]))
    soft = [k for k, e in enumerate(ends) if isinstance(e, tuple)]
    for k, e in zip(soft, bracketed_edges(systems, density, kind, [ends[k] for k in soft], thr, dps, cauchy)):
        ends[k] = e
    return list(zip(ends[::2], ends[1::2]))


def _mass_off_zero(system, x0, dps):
    """The mass at ``x0 != 0`` of a law solved as squared singular values (system variable ``zeta = sqrt(w)``).

    Its first output is ``G_u(zeta) = zeta G(zeta^2)``; next to ``zeta_0 = sqrt(x0)``,
    ``G(zeta^2) ~ m / ((zeta - zeta_0)(zeta + zeta_0))``, so ``G_u`` has the residue ``m / 2`` there: the mass
    is twice :func:`atom_mass` at ``zeta_0``. At ``x0 < 0`` it is exactly 0 (the law lives on ``[0, inf)``).
    """
    if x0 < 0:
        return context(dps + guard_digits(dps)).mpf(0)
    return 2 * atom_mass(system, float(np.sqrt(x0)), dps)
