"""Support edges and atoms from the Dyson system.

* Edges: outside the support the Dyson system has a real solution; at a soft
  edge two real solutions merge, so the Jacobian ``I - dPhi`` becomes
  singular. The edge solves the augmented (fold) system
  ``g = Phi(g, x)``, ``(I - dPhi) v = 0``, ``c . v = 1`` in ``(g, x, v)``, which
  is regular at a fold; Newton's method (finite-difference Jacobian at twice
  the working precision) converges to it from a grid bracket.
* Atoms: the mass at ``x0`` is ``lim_{y -> 0} iy G(x0 + iy)``; the Dyson
  solution is continued in mpmath down the imaginary direction and the limit
  accepted only when it is stable.

Both work in the system's variable ``z`` (``z = x`` for eigenvalues,
``z = sqrt(x)`` for squared singular values) and know nothing of expressions.
"""

import numpy as np

from .._errors import ConvergenceError
from .numeric import FastSystem, MPSystem
from .._precision import context, guard_digits
from .newton import newton_mp, solve_fast

__all__ = [
    "refine_edge",
    "atom_mass",
    "atoms_at",
    "probe_range",
    "support_grid",
    "support_runs",
    "shrink_bracket",
    "support_by_density",
    "support_by_folds",
]


def _fold_residual(mpsys, unk, r, c):
    ctx = mpsys.ctx
    g = [ctx.mpc(x) for x in unk[:r]]
    x = unk[r]
    v = unk[r + 1:]
    phi, _, jac = mpsys.phi(g, ctx.mpc(x), 0, jacobian=True)
    out = [(g[k] - phi[k]).real for k in range(r)]
    for a in range(r):
        s = v[a] - sum(jac[a][b].real * v[b] for b in range(r))
        out.append(s)
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
        x = ctx.lu_solve(a, ctx.matrix(b))
        step = [x[i] for i in range(a.cols)]
        if max(abs(v) for v in step) <= 1e6 * (1 + max(abs(v) for v in unk)):
            return step
    except (ZeroDivisionError, TypeError):
        pass
    return _pinv_solve(ctx, a, b)


def refine_edge(system, z_out, dps, bracket=None):
    """A soft edge of the support, in the system variable, to ``dps`` digits.

    Parameters
    ----------
    system : DysonSystem (fully substituted)
    z_out : float
        A point just outside the support near the edge.
    bracket : (float, float), optional
        The edge must lie in this interval (with a margin of one bracket
        width) or the result is refused.

    Raises
    ------
    ConvergenceError
    """
    fast = FastSystem(system)
    g, outs, conv, res = solve_fast(fast, np.array([complex(z_out, 1e-12 * (1 + abs(z_out)))]), raise_on_failure=False)
    g = g[0].real
    r = len(g)
    _, _, jac = fast.phi(g[None, :].astype(complex), np.array([complex(z_out)]), np.array([0.0]), jacobian=True)
    jr = np.eye(r) - jac[0].real
    _, _, vh = np.linalg.svd(jr)
    v = vh[-1]
    c = v / np.dot(v, v)
    work = dps + 10 + dps // 4
    ctx = context(2 * work)
    mpsys = MPSystem(system, ctx)
    unk = [ctx.mpf(x) for x in g] + [ctx.mpf(z_out)] + [ctx.mpf(x) for x in v]
    cq = [ctx.mpf(x) for x in c]
    n = len(unk)
    h = ctx.mpf(10) ** (-work)
    tol = ctx.mpf(10) ** (-(work - 2))
    # Newton with a finite-difference Jacobian, reused (chord steps) while each
    # step shrinks by at least a factor 10; recomputed otherwise
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
            break
    else:
        raise ConvergenceError(f"no support edge found near z = {z_out}", point=z_out, dps=dps)
    edge = unk[r]
    if bracket is not None:
        lo, hi = sorted(bracket)
        width = hi - lo
        if not (lo - width <= float(edge) <= hi + width):
            raise ConvergenceError(
                f"the edge search from z = {z_out} converged to {ctx.nstr(edge, 10)}, outside its bracket "
                f"[{lo}, {hi}]",
                point=z_out,
                dps=dps,
            )
    fres = max(abs(x) for x in _fold_residual(mpsys, unk, r, cq))
    if fres > ctx.mpf(10) ** (-(work - 2)):
        raise ConvergenceError(f"edge residual {ctx.nstr(fres, 5)} too large near z = {z_out}", point=z_out, residual=fres, dps=dps)
    return edge


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


def support_grid(density, kind, grid, range_, what="the law", max_widenings=12):
    """A density grid ``(xs, d, threshold, positive)`` on ``range_``, widened until its ends lie outside the support.

    A finite number of moments or probes can underestimate an edge, so the
    range is doubled while the density is still positive at an end.
    """
    lo, hi = range_
    for _ in range(max_widenings):
        if kind == "squared-singular-values":
            # geometric points below the first cell: a soft edge or a gap
            # close to the atom at 0 is not merged with it
            xs = np.concatenate([np.geomspace(hi * 1e-6, hi / grid, 25)[:-1], np.linspace(hi / grid, hi, grid)])
        else:
            xs = np.linspace(lo, hi, grid)
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


def _z_of(kind, x):
    """The system's variable at the user point ``x`` (``sqrt(x)`` for squared singular values)."""
    return x if kind == "eigenvalues" else float(np.sqrt(x))


def support_by_density(density, kind, grid=2001, rel=1e-6, what="the law"):
    """Support intervals in double precision from ``density`` alone (see ``SpectralLaw.support_fast``)."""
    xs, d, thr, pos = support_grid(density, kind, grid, probe_range(density, kind, what), what)
    out = []
    for i0, i1, hard_zero in support_runs(xs, d, pos, kind, what):
        left = 0.0 if hard_zero else shrink_bracket(density, xs[i0 - 1], xs[i0], thr, rounds=12, rel=rel)[0]
        right = shrink_bracket(density, xs[i1 + 1], xs[i1], thr, rounds=12, rel=rel)[0]
        out.append((float(left), float(right)))
    return tuple(out)


def support_by_folds(system, density, kind, range_, grid, dps, what="the law"):
    """Support intervals with edges to ``dps`` digits: brackets on a ``density`` grid over ``range_``,
    each refined by :func:`refine_edge` on the fold system; a hard edge at 0 is exactly 0."""
    xs, d, thr, pos = support_grid(density, kind, grid, range_, what)
    ctx = context(dps + guard_digits(dps))

    def edge(x_out, x_in):
        # shrink the grid bracket in double precision first, so that Newton
        # on the fold system starts well inside its basin
        near, _ = shrink_bracket(density, x_out, x_in, thr, rounds=4, rel=1e-7)
        e = ctx.mpf(refine_edge(system, _z_of(kind, near), dps, bracket=(_z_of(kind, x_out), _z_of(kind, x_in))))
        return e if kind == "eigenvalues" else e * e

    out = []
    for i0, i1, hard_zero in support_runs(xs, d, pos, kind, what):
        left = ctx.mpf(0) if hard_zero else edge(xs[i0 - 1], xs[i0])
        out.append((left, edge(xs[i1 + 1], xs[i1])))
    return out


def atoms_at(system, kind, candidates, dps):
    """Atoms ``[(x, mass), ...]`` among ``candidates``: :func:`atom_mass` above ``10^-dps``."""
    ctx = context(dps + guard_digits(dps))
    out = []
    for x0 in candidates:
        m = atom_mass(system, _z_of(kind, float(x0)), dps)
        if abs(m) > ctx.mpf(10) ** (-dps):
            if m < 0:
                raise ConvergenceError(f"negative mass {m} at {x0}", point=x0, dps=dps)
            out.append((ctx.mpf(x0), ctx.mpf(m)))
    return out
