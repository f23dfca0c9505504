"""The cell equation of causal attention's Gaussian equivalent (double precision).

The object (docs/causal.md, section 6) is one head (or ``H`` independent ones) of the causal surrogate
without its first ``skip * l`` rows: ``Y = G V W`` with rows ``r = i/l`` in
``(skip, 1]``, columns ``c = j/l`` in ``(0, 1]`` and

    G_rc = (1/r) 1[c <= r] (beta Q_r . K_c / sqrt(d_h) + c_Z Z_rc) / sqrt(l),

``Q, K`` (``l x d_h``), ``Z`` (``l x l``) iid ``N(0, 1)``, ``V`` (``l x d_v``)
iid ``N(0, 1/l)``, ``W`` (``d_v x d_out``) iid ``N(0, 1/d_v)``,
``c_Z^2 = exp(beta^2) - 1 - beta^2``. The masked score product is linearized
through copies of the head space, one per row cell (``G_S = Qhat Khat`` with
``Qhat`` block diagonal and ``Khat`` the keys masked for each copy); the
copies share ``K``, so the head-space unknown is a full matrix over copies.
On ``m`` equal token cells (row cells: those with midpoint above ``skip``;
``1/r^2`` at the midpoints; the mask ``1`` below the diagonal cell, ``1/2``
in variance on it) the operator-valued equation reduces to

    x_I = 1/(z - Gamma_R(I)),    t_c = g'/(1 - Gamma_T(c) g'),    g' = gamma_v v,

    Gamma_R(I) = a_I^2 (c_Z^2 sum_c P_Ic t_c / m + beta^2 gamma_h h_I),
    Gamma_T(c) = c_Z^2 sum_I a_I^2 P_Ic x_I / m + u_c^T Mhat u_c,
    h = diag((1 - F D)^-1 F),   Mhat = (1 - D F)^-1 D,
    D = diag(beta^2 a_I^2 x_I / m),   F = sum_c (t_c / (m gamma_h)) u_c u_c^T,

with ``u_c`` the mask column of token cell ``c`` over the row cells
(``1`` below, ``sqrt(1/2)`` on the diagonal cell), and the value-output chain
``v = k/(1 - s k)``, ``s = mean_c Gamma_T(c)/(1 - Gamma_T(c) g')``,
``k = (gamma_o/gamma_v) o``, ``o = 1/(1 - s/(1 - s k))``. ``H`` independent
heads (``Y = sum_h G_h V_h W_h``, ``W_h`` of variance ``1/(H d_v)``) have
the same unknowns by symmetry: ``Gamma_R`` is multiplied by ``H`` and ``k``
divided by it. The Cauchy
transform of the law of the squared singular values over the rows is the
mean of ``x``. Unknowns ``x`` (row cells), ``t`` (token cells), ``o``, ``v``;
Newton's method with the exact Jacobian (the derivative of each inverse is
written with the same inverses), one point at a time.

A point is returned only when the residual is below ``1e-11`` relative to
each unknown and every unknown lies in the closed lower half-plane (each is a
diagonal entry of the linearization's resolvent); other points are NaN.

>>> cells = causal_cells(20, 0.1, 1.0, 0.5, 0.5, 0.5)
>>> sol = solve_causal(cells, [1 + 0.5j])
>>> bool(sol.converged[0]), bool(sol.G[0].imag < 0)
(True, True)
"""

import math
from dataclasses import dataclass

import numpy as np

from .._errors import DomainError

__all__ = ["CausalCells", "CausalSolution", "causal_cells", "refine_start", "solve_causal", "upper_edge_bracket"]

#: Largest relative residual of a returned point.
RESIDUAL = 1e-11
#: Largest positive imaginary part (relative) of an ``x_I`` of a returned point.
HALF_PLANE = 1e-12


@dataclass(frozen=True)
class CausalCells:
    """The coefficients of the cell equation on ``m`` token cells (module docstring)."""

    m: int
    skip: float
    beta2: float
    c2: float
    gamma_h: float
    gamma_v: float
    gamma_o: float
    rows: np.ndarray      # token-cell index of each row cell
    a2: np.ndarray        # 1/r^2 at the row cells' midpoints
    P: np.ndarray         # variance mask of Z: rows x tokens (1 below, 1/2 on the diagonal cell)
    U: np.ndarray         # mask columns u_c: rows x tokens (1 below, sqrt(1/2) on the diagonal cell)
    heads: int = 1        # independent heads summed (W of variance 1/(heads d_v))

    @property
    def size(self):
        return len(self.rows) + self.m + 2


def causal_cells(m, skip, beta, gamma_h, gamma_v, gamma_o, heads=1):
    """The cell equation on ``m`` equal token cells of ``[0, 1]`` (floats; ratios to ``l``), for ``heads``
    independent heads."""
    if isinstance(m, bool) or not isinstance(m, int) or m < 2:
        raise DomainError(f"causal_cells: the number of cells must be an integer >= 2, got {m!r}")
    if isinstance(heads, bool) or not isinstance(heads, int) or heads < 1:
        raise DomainError(f"causal_cells: heads must be a positive integer, got {heads!r}")
    mid = (np.arange(m) + 0.5) / m
    rows = np.nonzero(mid > skip)[0]
    if rows.size == 0:
        raise DomainError(f"causal_cells: no row cell above skip = {skip} on {m} cells")
    P = np.zeros((rows.size, m))
    U = np.zeros((rows.size, m))
    for k, cell in enumerate(rows):
        P[k, :cell], P[k, cell] = 1.0, 0.5
        U[k, :cell], U[k, cell] = 1.0, math.sqrt(0.5)
    beta2 = float(beta) ** 2
    return CausalCells(m, float(skip), beta2, math.expm1(beta2) - beta2, float(gamma_h), float(gamma_v),
                       float(gamma_o), rows, 1.0 / mid[rows] ** 2, P, U, heads)


@dataclass(frozen=True)
class CausalSolution:
    """Solutions at points: ``G`` (NaN where unverified), the unknowns ``u`` and the mask ``converged``."""

    z: np.ndarray
    G: np.ndarray
    u: np.ndarray
    converged: np.ndarray


def _equation(S, z, u):
    """The residual ``new(u) - u`` and a function that computes its Jacobian (from the same inverses)."""
    mr, m, w = len(S.rows), S.m, 1.0 / S.m
    a2, P, U = S.a2, S.P, S.U
    x, t, o, v = u[:mr], u[mr:mr + m], u[mr + m], u[mr + m + 1]
    D = S.beta2 * a2 * x * w
    F = (U * (t * w / S.gamma_h)) @ U.T
    eye = np.eye(mr)
    A = np.linalg.inv(eye - F * D[None, :])           # (1 - F D)^-1
    X = A @ F                                        # its product with F, symmetric
    Mhat = A.T * D[None, :]                          # (1 - D F)^-1 D = A^T D (D, F symmetric)
    AU = A @ U
    MU = Mhat @ U
    q = np.einsum("sc,sc->c", U, MU)
    GR = S.heads * a2 * (S.c2 * w * (P @ t) + S.beta2 * S.gamma_h * np.diag(X))
    GT = S.c2 * ((a2 * x * w) @ P) + q
    gp = S.gamma_v * v
    den = 1.0 - GT * gp
    s = np.mean(GT / den)
    k = S.gamma_o / (S.heads * S.gamma_v) * o
    denv = 1.0 - s * k
    o_new = 1.0 / (1.0 - s / denv)
    x_new = 1.0 / (z - GR)
    res = np.concatenate([x_new - x, gp / den - t, [o_new - o, k / denv - v]])

    def jacobian():
        return _jacobian(S, X, AU, MU, P, U, a2, w, x_new, gp, den, GT, s, k, o_new, denv)
    return res, jacobian


def _jacobian(S, X, AU, MU, P, U, a2, w, x_new, gp, den, GT, s, k, o_new, denv):
    """The Jacobian of :func:`_equation`'s residual (the derivative of each inverse written with the same inverse)."""
    mr, m = len(S.rows), S.m
    eye = np.eye(mr)
    n = mr + m + 2
    J = np.zeros((n, n), complex)
    H = S.heads
    dGR_dx = (H * S.beta2 * S.gamma_h * a2)[:, None] * (X ** 2) * (S.beta2 * a2 * w)[None, :]
    dGR_dt = (H * S.c2 * a2 * w)[:, None] * P + (H * S.beta2 * S.gamma_h * a2)[:, None] * (AU ** 2) * (w / S.gamma_h)
    dGT_dx = (AU ** 2).T * (S.beta2 * a2 * w)[None, :] + S.c2 * P.T * (a2 * w)[None, :]
    dGT_dt = (U.T @ MU) ** 2 * (w / S.gamma_h)
    xx = x_new ** 2
    J[:mr, :mr] = xx[:, None] * dGR_dx - eye
    J[:mr, mr:mr + m] = xx[:, None] * dGR_dt
    dt_dG = (gp / den) ** 2
    J[mr:mr + m, :mr] = dt_dG[:, None] * dGT_dx
    J[mr:mr + m, mr:mr + m] = dt_dG[:, None] * dGT_dt - np.eye(m)
    J[mr:mr + m, mr + m + 1] = S.gamma_v / den ** 2
    ds_dxt = (1.0 / den ** 2) @ np.hstack([dGT_dx, dGT_dt]) / m
    ds_dv = np.mean((GT / den) ** 2) * S.gamma_v
    do_ds = o_new ** 2 / denv ** 2
    do_dk = o_new ** 2 * s * s / denv ** 2
    dv_ds = (k / denv) ** 2
    dv_dk = 1.0 / denv ** 2
    kk = S.gamma_o / (H * S.gamma_v)
    J[mr + m, :mr + m] = do_ds * ds_dxt
    J[mr + m, mr + m] = do_dk * kk - 1.0
    J[mr + m, mr + m + 1] = do_ds * ds_dv
    J[mr + m + 1, :mr + m] = dv_ds * ds_dxt
    J[mr + m + 1, mr + m] = dv_dk * kk
    J[mr + m + 1, mr + m + 1] = dv_ds * ds_dv - 1.0
    return J


def _scale(u):
    """Per-unknown scales: the unknowns differ by orders of magnitude (``x_I ~ 1/z`` is 5e3 next to an atom's
    pole where ``t_c`` is 1e-5), so steps and residuals are measured against each unknown's own size."""
    return np.abs(u) + 1e-14 * (1.0 + np.max(np.abs(u)))


def _newton(S, z, u, maxiter, tol):
    """Newton's method from ``u``; ``(u, converged)``, converged when a step is below ``tol`` (relative, per
    unknown), or when the residual already is below ``tol/100`` and ``RESIDUAL/100`` (no step is then needed:
    the next one would be of the order of the residual, and the Jacobian is not formed)."""
    for _ in range(maxiter):
        with np.errstate(all="ignore"):
            res, jacobian = _equation(S, z, u)
            size = np.max(np.abs(res) / _scale(u))
            if np.isfinite(size) and size <= max(1e-2 * tol, 1e-2 * RESIDUAL):
                return u, True
            try:
                step = np.linalg.solve(jacobian(), -res)
            except np.linalg.LinAlgError:
                return u, False
        if not np.all(np.isfinite(step)):
            return u, False
        u = u + step
        if np.max(np.abs(step) / _scale(u)) <= tol:
            return u, True
    return u, False


def _verified(S, z, u):
    with np.errstate(all="ignore"):
        res, _ = _equation(S, z, u)
        return bool(np.all(np.isfinite(res)) and np.max(np.abs(res) / _scale(u)) <= RESIDUAL and _lower(S, u))


def _first_guess(S, z):
    return np.concatenate([np.full(len(S.rows), 1.0 / z), np.zeros(S.m, complex), [1.0 + 0j, 0j]])


def _inside(S, u):
    """Whether every ``x_I`` of ``u`` lies clearly in the open lower half-plane (``Im x_I < -1e-8 |x_I|``)."""
    x = u[:len(S.rows)]
    return bool(np.all(np.isfinite(x)) and np.all(x.imag < -1e-8 * np.abs(x)))


def _lower(S, u):
    """Whether every unknown of ``u`` lies in the closed lower half-plane (to :data:`HALF_PLANE` of its size).

    Each is a diagonal entry of ``(Lambda - L)^-1`` for the symmetric linearization ``L``, whose imaginary part
    ``-M^* Im(Lambda) M`` is negative semi-definite (``Im Lambda`` is ``Im z`` on the rows, 0 elsewhere): not
    only the rows' ``x_I`` but also the tokens' ``t_c`` and the chain's ``o`` and ``v``. Other roots of the cell
    equation can keep every ``x_I`` in the lower half-plane (at 10 cells, ``z = 1 + 0.5i``: ``G = 0.70040 -
    0.14627i`` against the law's ``0.51692 - 0.46281i``, with ``Im t_c`` up to 0.27); they fail this check."""
    return bool(np.all(u.imag <= HALF_PLANE * _scale(u)))


def _path(S, z, top, first=0.5):
    """From ``Im z = top`` down to the target, multiplying ``Im z`` by ``first`` (more where a step fails); a real target
    last, from ``Im z = 1e-10 min(top, |Re z|)``.

    A step is kept only if Newton's method converged on a point in the lower half-plane (:func:`_lower`);
    otherwise it is retried with a smaller ratio (near an atom's pole the solution turns fast, and a halving
    step can land on another root of the equations: it did, at ``x = 9e-5`` on 10 cells).
    """
    u = _first_guess(S, complex(z.real, top))
    y = top
    floor = max(z.imag, 1e-10 * max(min(top, abs(z.real)), 1e-6 * top))
    ratio = first
    while y > floor:
        target = max(y * ratio, floor)
        v, ok = _newton(S, complex(z.real, target), u, 40, 1e-7)
        if ok and _lower(S, v):
            u, y = v, target
            ratio = max(first, ratio ** 2)
            continue
        ratio = math.sqrt(ratio)
        if ratio > 0.99:
            return u, False
    if z.imag < floor:
        u, _ = _newton(S, z, u, 60, 1e-15)
    return u, True


def _walk(S, u, points, z):
    """Newton's method from ``u`` through ``points`` (each step kept only in the lower half-plane), then at ``z``."""
    for p in points:
        u, conv = _newton(S, p, u, 40, 1e-7)
        if not (conv and _lower(S, u)):
            return u, False
    return _newton(S, z, u, 60, 1e-15)


def _ray(S, z, top):
    """From ``a = z.real + 1e-3 top (1 + i)`` (solved by the path) to ``z``, halving the distance each step."""
    a = complex(z.real + 1e-3 * top, 1e-3 * top + z.imag)
    u, conv = _path(S, a, top)
    if not conv:
        return u, False
    floor = 1e-10 * max(min(top, abs(z.real)), 1e-6 * top)
    steps = max(1, math.ceil(math.log2(abs(a - z) / floor)))
    return _walk(S, u, [z + (a - z) * 0.5 ** k for k in range(1, steps + 1)], z)


def solve_causal(S, z, start=None, top=None):
    """Solve the cell equation ``S`` at the points ``z`` (``Im z >= 0``).

    Parameters
    ----------
    S : CausalCells
    z : sequence of complex
    start : ndarray (P, S.size), optional
        A start for each point (:func:`refine_start` of a coarser solution);
        points where Newton's method from it fails verification are solved
        along the path.
    top : float, optional
        Where the path starts (default ``2 + 8 x`` the law's mean).

    Returns
    -------
    CausalSolution
    """
    z = np.atleast_1d(np.asarray(z, complex))
    if np.any(z.imag < 0) or not np.all(np.isfinite(z)):
        raise DomainError("solve_causal: points must be finite with Im z >= 0 (use the conjugate symmetry)")
    if top is None:
        mean = S.gamma_o * math.expm1(S.beta2) * math.log(1.0 / max(S.skip, 1.0 / S.m)) / (1.0 - S.skip)
        top = 2.0 + 8.0 * mean
    u = np.full((len(z), S.size), np.nan + 0j)
    ok = np.zeros(len(z), bool)
    previous = None
    for i in (np.arange(len(z)) if start is not None else np.argsort(z.real, kind="stable")):
        zi = z[i]
        guess = start[i] if start is not None else None
        if guess is None and previous is not None and abs(z[previous] - zi) <= 0.05 * top \
                and _inside(S, u[previous]):
            # along a sorted grid, the previous point's solution when it is clearly inside the support (off the
            # real axis there); a real start near the axis could end on a real root that is not the law's
            guess = u[previous]
        if guess is not None and np.all(np.isfinite(guess)):
            ui, _ = _newton(S, zi, np.asarray(guess, complex), 60, 1e-15)
            if _verified(S, zi, ui):
                u[i], ok[i] = ui, True
                previous = i
                continue
        for ratio in (0.5, 0.3):
            ui, conv = _path(S, zi, top, ratio)
            if conv:
                ui, _ = _newton(S, zi, ui, 60, 1e-15)
            if conv and _verified(S, zi, ui):
                u[i], ok[i] = ui, True
                previous = i
                break
    for i in np.nonzero(~ok)[0]:
        # both paths failed (a root of the equations off the law's sheet passes close to them): walk from the
        # nearest solved point of this call, in eight steps; else along a ray from 1e-3 top (1 + i), halving the
        # distance (next to a hard edge at 0 the vertical path failed at 1e-12 of the scale, skip = 1/2)
        done = np.nonzero(ok)[0]
        if done.size:
            j = done[np.argmin(np.abs(z[done] - z[i]))]
            ui, conv = _walk(S, u[j], [z[j] + w * (z[i] - z[j]) for w in np.linspace(0.0, 1.0, 9)[1:-1]], z[i])
            if conv and _verified(S, z[i], ui):
                u[i], ok[i] = ui, True
                continue
        ui, conv = _ray(S, z[i], top)
        if conv and _verified(S, z[i], ui):
            u[i], ok[i] = ui, True
    mr = len(S.rows)
    G = np.where(ok, np.mean(u[:, :mr], axis=1), complex(np.nan, np.nan))
    return CausalSolution(z, G, u, ok)


def refine_start(coarse, fine, u):
    """Starts on ``fine`` cells from solutions ``u`` on ``coarse`` cells (each value repeated)."""
    if fine.m % coarse.m:
        raise DomainError(f"refine_start: {fine.m} cells do not refine {coarse.m}")
    r = fine.m // coarse.m
    mr_c = len(coarse.rows)
    out = np.empty((u.shape[0], fine.size), complex)
    rows_map = np.searchsorted(coarse.rows, fine.rows // r)
    rows_map = np.clip(rows_map, 0, mr_c - 1)
    out[:, :len(fine.rows)] = u[:, rows_map]
    out[:, len(fine.rows):len(fine.rows) + fine.m] = np.repeat(u[:, mr_c:mr_c + coarse.m], r, axis=1)
    out[:, -2:] = u[:, -2:]
    return out


def upper_edge_bracket(S, start, factor=0.98, jump=0.05):
    """``(below, above)``: ``above`` a point beyond the support of the law of ``S`` and below ``start``, found by
    following ``G`` on the real axis from ``start``; the largest edge lies below ``above``.

    Beyond its support the law's ``G`` is real and analytic, ``1/x`` at
    infinity. It is solved at ``start + 0i`` (which must be beyond the
    support: the solution there must be real, else ``DomainError``) and
    followed downward along the real axis, ``x -> factor x``, Newton's method
    starting from the previous point. The branch ends at the first edge: the
    step fails, leaves the real axis, or changes the unknowns by more than
    ``jump`` (relative; the fold's square root makes the last steps large).
    ``above`` is the last point where the real branch was verified, ``below``
    the first where it was not; the jump test can stop the walk before the
    edge (at 40 cells ``(47.35, 48.32)`` for the edge 45.55), so ``below`` is
    not a bound of the edge, only ``above`` is.
    """
    x = float(start)
    sol = solve_causal(S, [complex(x, 0.0)])
    u = sol.u[0]
    if not sol.converged[0] or np.max(np.abs(u.imag) / _scale(u)) > 1e-9:
        raise DomainError(f"upper_edge_bracket: {x:.6g} is not beyond the support (G is not real there)")
    u = u.real.astype(complex)
    floor = 1e-9 * x
    while x > floor:
        y = x * factor
        v, ok = _newton(S, complex(y, 0.0), u, 30, 1e-14)
        if not ok or np.max(np.abs(v - u) / _scale(u)) > jump or np.max(np.abs(v.imag) / _scale(v)) > 1e-9 \
                or not _verified(S, complex(y, 0.0), v):
            return y, x
        x, u = y, v
    raise DomainError(f"upper_edge_bracket: the real branch reaches {x:.3g} without an edge")
