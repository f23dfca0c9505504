"""Solvers of the Dyson equation (MATH.md §4).

They take a numeric system (:mod:`freeprob._numeric`) and points, and know
nothing of expressions.

* :func:`solve_fast`: double precision, vectorized over all points. From
  ``Im z`` large (where the damped fixed-point iteration converges at once)
  it follows a path down to each target, Newton at every step, halving steps
  that fail; then it sends the regularization ``eps`` of the non-``u`` rows to
  exactly 0.
* :func:`solve_mp`: Newton's method in an mpmath context from a starting
  point (usually the double-precision solution), returned only if the
  residual is below the tolerance, the answer lies in the right half-plane and
  one more Newton step at higher precision does not move it.
"""

from dataclasses import dataclass

import numpy as np

from ._errors import ConvergenceError

__all__ = ["DysonSolution", "solve_fast", "solve_mp", "newton_mp"]


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


def _newton_fast(fast, g, z, eps, maxiter=12, tol=1e-10):
    """Newton on all points; returns g, converged mask, residual."""
    P = g.shape[0]
    conv = np.zeros(P, bool)
    res = np.full(P, np.inf)
    eye = np.eye(fast.r)
    for _ in range(maxiter):
        phi, outs, jac = fast.phi(g, z, eps, jacobian=True)
        r = g - phi
        res = np.max(np.abs(r), axis=1) / (1 + np.max(np.abs(g), axis=1))
        conv = np.isfinite(res) & (res < tol)
        if conv.all():
            break
        with np.errstate(all="ignore"):
            try:
                delta = np.linalg.solve(eye[None] - jac, r[:, :, None])[:, :, 0]
            except np.linalg.LinAlgError:
                delta = np.stack([_lstsq(eye - jac[i], r[i]) for i in range(P)])
        delta[conv] = 0
        bad = ~np.isfinite(delta).all(axis=1)
        delta[bad] = 0
        g = g - delta
    phi, outs, _ = fast.phi(g, z, eps)
    res = np.max(np.abs(g - phi), axis=1) / (1 + np.max(np.abs(g), axis=1))
    conv = np.isfinite(res) & (res < tol)
    return g, conv, res, outs


def _lstsq(a, b):
    try:
        return np.linalg.lstsq(a, b, rcond=None)[0]
    except np.linalg.LinAlgError:
        return np.full_like(b, np.nan)


def _halfplane_ok(outs, z, tol):
    # Im G < 0 on the u rows when Im z > 0 (<= tol on the axis)
    return np.all(outs.imag <= tol * (1 + np.abs(outs)), axis=1) | (z.imag <= 0)


def _advance(fast, g, z0, e0, z1, e1, depth, tol):
    """Move solutions from (z0, e0) to (z1, e1), splitting failed steps."""
    g1, conv, res, outs = _newton_fast(fast, g.copy(), z1, e1, tol=tol)
    conv &= _halfplane_ok(outs, z1, 1e-8)
    if conv.all() or depth == 0:
        return g1, conv, res
    bad = ~conv
    zm = (z0[bad] + z1[bad]) / 2
    em = (e0[bad] + e1[bad]) / 2
    gm, cm, _ = _advance(fast, g[bad], z0[bad], e0[bad], zm, em, depth - 1, tol)
    g2, c2, r2 = _advance(fast, gm, zm, em, z1[bad], e1[bad], depth - 1, tol)
    g1[bad] = g2
    conv[bad] = c2 & cm
    res[bad] = r2
    return g1, conv, res


def solve_fast(fast, z, eps=0.0, steps_per_decade=1.5, depth=10, tol=1e-10, raise_on_failure=True):
    """Solve at every point of ``z`` (Im z >= 0) in double precision.

    Parameters
    ----------
    fast : FastSystem
    z : array of complex
        Targets with ``Im z > 0`` (use a small positive imaginary part for
        the real axis).
    eps : float
        Final regularization of the non-``u`` rows (0 by default).

    Returns
    -------
    g : (P, r) complex array
    outputs : (P, n_u) complex array
    converged : (P,) bool array
    residual : (P,) float array
    """
    z = np.atleast_1d(np.asarray(z, dtype=complex))
    P = len(z)
    y_target = np.maximum(z.imag, 1e-300)
    scale = max(4.0, 2.0 * float(np.max(np.abs(z)))) if P else 4.0
    t0 = np.full(P, scale)
    # initial solution far up: damped fixed-point iteration, then Newton
    zt = z.real + 1j * t0
    g = np.zeros((P, fast.r), complex)
    for _ in range(100):
        # far from the axis the map is a strong contraction: plain iteration is enough
        phi, _, _ = fast.phi(g, zt, t0)
        done = np.max(np.abs(phi - g)) < 1e-9
        g = phi
        if done:
            break
    # phase 1: down to y = max(target, 1e-3 scale) in steps, then one jump to the target
    y_mid = np.maximum(y_target, 1e-3 * t0)
    n = int(np.ceil(steps_per_decade * np.log10(scale / float(np.min(y_mid))))) + 1
    ys = [t0 * (y_mid / t0) ** (k / n) for k in range(n + 1)] + [y_target]
    loose = max(tol, 1e-7)
    for k in range(1, len(ys)):
        y0, y1 = ys[k - 1], ys[k]
        # intermediate failures only slow the path down; the final step is what is verified
        g, c, res = _advance(fast, g, z.real + 1j * y0, y0, z.real + 1j * y1, y1, depth, loose)
    # phase 2: the regularization eps of the non-u rows goes to its final value at the target
    g, conv, res = _advance(fast, g, z, y_target, z, np.full(P, float(eps)), depth, tol)
    phi, outs, _ = fast.phi(g, z, np.full(P, float(eps)))
    if raise_on_failure and not conv.all():
        i = int(np.argmin(conv))
        raise ConvergenceError(
            f"the double-precision Dyson solve did not converge at z = {z[i]!r} (residual {res[i]:.3g}); "
            f"the point may sit on a support edge: move it slightly or use the high-precision path",
            point=z[i],
            residual=float(res[i]),
        )
    return g, outs, conv, res


def newton_mp(mpsys, g, z, eps, tol, maxiter=60):
    """Newton's method in the context of ``mpsys``; returns (g, outputs, residual, iterations)."""
    ctx = mpsys.ctx
    r = mpsys.r
    it = 0
    res = ctx.inf
    for it in range(1, maxiter + 1):
        phi, outs, jac = mpsys.phi(g, z, eps, jacobian=True)
        resid = [g[k] - phi[k] for k in range(r)]
        gnorm = max([abs(x) for x in g] + [ctx.mpf(1)])
        res = max([abs(x) for x in resid] + [ctx.mpf(0)]) / gnorm
        if res < tol:
            return g, outs, res, it
        a = ctx.matrix(r, r)
        for i in range(r):
            for j in range(r):
                a[i, j] = (1 if i == j else 0) - jac[i][j]
        try:
            delta = ctx.lu_solve(a, ctx.matrix(resid))
        except ZeroDivisionError:
            break
        g = [g[k] - delta[k] for k in range(r)]
    phi, outs, _ = mpsys.phi(g, z, eps)
    gnorm = max([abs(x) for x in g] + [ctx.mpf(1)])
    res = max([abs(g[k] - phi[k]) for k in range(r)] + [ctx.mpf(0)]) / gnorm
    return g, outs, res, it


def solve_mp(mpsys, z, g0, dps, eps=0, check=None):
    """High-precision solution at ``z`` from the start ``g0``.

    The context of ``mpsys`` must already carry guard digits beyond ``dps``.
    The value is accepted only if the residual is below ``10^-(ctx.dps - 5)``,
    ``Im G < 0`` on the ``u`` rows when ``Im z > 0`` (up to the tolerance), and
    ``check(mpsys_hi)`` (a re-solve at higher precision supplied by the
    caller), if given, agrees to ``10^-dps``.

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
