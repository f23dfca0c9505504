"""The vector Dyson equation of a Gram matrix with a variance profile on cells (double precision).

A Gaussian ``X`` (``a x b``) whose entry ``(i, j)`` has variance
``t_ij = alpha s(r_i, c_j) / N`` gives the Gram matrix ``H = X X^T``; with the
profile constant on ``m_r x m_c`` cells (``S_kl``, row cells of weights
``w_k``, column cells of weights ``v_l``), the diagonal of the resolvent
``(z - H)^-1`` is constant on each row cell (``g_k``) and solves

    g_k = 1 / (z - sum_l A_kl h_l),      h_l = 1 / (1 - sum_k B_kl g_k),
    A_kl = alpha rho_b v_l S_kl,         B_kl = alpha rho_a w_k S_kl,

and the Cauchy transform of the eigenvalue law of ``H`` is ``G = sum_k w_k g_k``.
This is the block form of the operator-valued equation of
:mod:`freeprob.reduce.blocks` for one profiled Gaussian (the same numbers, for
any ``m``, without the symbolic reduction whose cost grows too fast for
``m >= 32``).

:func:`solve_gram` eliminates ``h`` and runs Newton's method on ``g`` alone
(``m_r`` unknowns), vectorized over points: from ``Im z`` large along a path
that halves ``Im z`` to the target, then on the real axis itself for real
targets; or from a given start (the solution at half as many cells, each
value repeated), falling back to the path for points where that start fails.
A point is returned only if the residual is below ``1e-11`` (relative) and
every ``g_k`` and ``h_l`` lies in the closed lower half-plane; other points
are NaN.

>>> import numpy as np
>>> S = np.ones((1, 1))                       # one cell: Marchenko-Pastur of ratio 1, z g^2 - z g + 1 = 0
>>> z = 2 + 1j
>>> g = solve_gram(S, S, np.ones(1), np.array([z]), radius=4.0).G[0]
>>> bool(abs(z * g * g - z * g + 1) < 1e-12), bool(g.imag < 0)
(True, True)
"""

from dataclasses import dataclass

import numpy as np

from .._errors import DomainError

__all__ = ["GramSolution", "gram_moments", "solve_gram"]

#: Largest relative residual of a returned point.
RESIDUAL = 1e-11
#: Largest positive imaginary part (relative) of a ``g_k`` or ``h_l`` of a returned point.
HALF_PLANE = 1e-12


@dataclass(frozen=True)
class GramSolution:
    """Solutions at points: ``G`` (NaN where unverified), the cell values ``g`` and the mask ``converged``."""

    z: np.ndarray
    G: np.ndarray
    g: np.ndarray
    converged: np.ndarray


def _parts(A, B, g, z):
    h = 1.0 / (1.0 - g @ B)
    d = z[:, None] - h @ A.T
    return h, d, g * d - 1.0


def _newton(A, B, g, z, maxiter, tol):
    """Newton on every point; returns ``(g, converged)``.

    A point stops when its step is below ``tol`` (converged), or when its
    step, already below ``1e-9`` relative, stops shrinking: it has reached
    the round-off of an ill-conditioned point (near an edge), and is left for
    the residual check to accept or not.
    """
    g = g.copy()
    conv = np.zeros(len(z), bool)
    live = np.arange(len(z))
    last = np.full(len(z), np.inf)
    eye = np.eye(A.shape[0])
    for _ in range(maxiter):
        if live.size == 0:
            break
        gl, zl = g[live], z[live]
        with np.errstate(all="ignore"):
            h, d, F = _parts(A, B, gl, zl)
            # dF/dg = diag(d) - diag(g) A diag(h^2) B^T
            J = eye[None] * d[:, :, None] - gl[:, :, None] * ((A[None] * (h * h)[:, None, :]) @ B.T)
            try:
                step = np.linalg.solve(J, -F[:, :, None])[:, :, 0]
            except np.linalg.LinAlgError:
                step = np.stack([_safe_solve(J[i], -F[i]) for i in range(len(live))])
        ok = np.all(np.isfinite(step), axis=1)
        g[live[ok]] = gl[ok] + step[ok]
        size = np.max(np.abs(step), axis=1) / (1 + np.max(np.abs(gl), axis=1))
        small = ok & (size <= tol)
        stalled = ok & (size <= 1e-9) & (size > 0.5 * last[live])
        last[live] = size
        conv[live[small]] = True
        live = live[ok & ~small & ~stalled]
    return g, conv


def _safe_solve(J, F):
    try:
        return np.linalg.solve(J, F)
    except np.linalg.LinAlgError:
        return np.full(F.shape, np.nan, complex)


def _verified(A, B, g, z):
    with np.errstate(all="ignore"):
        h, _, F = _parts(A, B, g, z)
        size = 1 + np.max(np.abs(g), axis=1)
        res = np.max(np.abs(F), axis=1) / size
        upper = np.maximum(np.max(g.imag, axis=1), np.max(h.imag, axis=1)) / size
    return np.isfinite(res) & (res <= RESIDUAL) & (upper <= HALF_PLANE)


def _path(A, B, z, radius):
    """Solve from ``Im z = 2 radius + 1`` down to each target, halving ``Im z``; the real axis last."""
    P = len(z)
    top = 2.0 * radius + 1.0
    g = np.tile((1.0 / (z.real + 1j * top))[:, None], (1, A.shape[0]))
    floor = 1e-13 * top
    steps = int(np.ceil(np.log2(top / floor))) + 1
    conv = np.ones(P, bool)
    for j in range(1, steps + 1):
        y = np.maximum(z.imag, top * 0.5 ** j)
        g_new, c = _newton(A, B, g, z.real + 1j * y, 40, 1e-6)
        g = np.where(c[:, None], g_new, g)
        conv &= c
    g, _ = _newton(A, B, g, z, 60, 1e-15)  # accepted or not by the residual check
    return g, conv


def solve_gram(A, B, w, z, radius, start=None):
    """Solve the vector Dyson equation of a Gram matrix (see the module docstring) at the points ``z``.

    Parameters
    ----------
    A, B : ndarray (m_r, m_c)
        Non-negative coefficients ``alpha rho_b v_l S_kl`` and ``alpha rho_a w_k S_kl``.
    w : ndarray (m_r,)
        Row-cell weights (summing to one).
    z : ndarray of complex
        Points with ``Im z >= 0``.
    radius : float
        A bound of the support (the path starts at ``Im z = 2 radius + 1``).
    start : ndarray (P, m_r), optional
        A starting point for each point; points where Newton's method from it
        fails verification are solved along the path.

    Returns
    -------
    GramSolution
    """
    A, B = np.asarray(A, float), np.asarray(B, float)
    z = np.atleast_1d(np.asarray(z, complex))
    if A.shape != B.shape or A.ndim != 2 or np.any(A < 0) or np.any(B < 0):
        raise DomainError(f"solve_gram: A and B must be non-negative arrays of one shape, got {A.shape}, {B.shape}")
    if np.any(z.imag < 0):
        raise DomainError("solve_gram: points must have Im z >= 0 (use the conjugate symmetry)")
    g = np.full((len(z), A.shape[0]), np.nan + 0j)
    ok = np.zeros(len(z), bool)
    if start is not None and len(z):
        g1, _ = _newton(A, B, np.asarray(start, complex), z, 60, 1e-15)
        ok = _verified(A, B, g1, z)
        g[ok] = g1[ok]
    todo = np.nonzero(~ok)[0]
    if todo.size:
        g2, c2 = _path(A, B, z[todo], radius)
        good = c2 & _verified(A, B, g2, z[todo])
        g[todo[good]] = g2[good]
        ok[todo[good]] = True
    g = np.where(ok[:, None], g, np.nan + 0j)
    G = g @ np.asarray(w, float)
    return GramSolution(z, np.where(ok, G, complex(np.nan, np.nan)), g, ok)


def gram_moments(A, B, w, k, exact=False):
    """The moments ``m_1, ..., m_k`` of the law of the vector Dyson equation, from its series at infinity.

    Floats, or with ``exact=True`` the arithmetic of the entries themselves
    (sympy rationals give exact rationals).

    With ``g = sum_j G_j z^-j`` and ``h = sum_j H_j z^-j`` (``G_1 = H_0 = 1``)
    the equations read ``g = 1/z + (A h) g / z`` and ``h = 1 + h (B^T g)``,
    so ``G_j = sum_(i + l = j - 1) G_i (A H_l)`` and
    ``H_j = sum_(i + l = j, i >= 1) H_l (B^T G_i)``: each coefficient from
    earlier ones. ``m_j = sum_k w_k G_(j+1), k``.

    >>> import numpy as np
    >>> [round(m, 12) for m in gram_moments(np.ones((1, 1)), np.ones((1, 1)), np.ones(1), 4)]   # Catalan
    [1.0, 2.0, 5.0, 14.0]
    """
    kind = object if exact else float
    A, B, w = np.asarray(A, kind), np.asarray(B, kind), np.asarray(w, kind)
    G = [None, np.ones(A.shape[0], kind)]
    H = [np.ones(A.shape[1], kind)]
    AH = [A @ H[0]]
    BG = [None, B.T @ G[1]]
    for j in range(1, k + 1):
        H.append(sum(H[l] * BG[j - l] for l in range(j)))
        AH.append(A @ H[j])
        nxt = sum(G[i] * AH[j - i] for i in range(1, j + 1))
        G.append(nxt)
        BG.append(B.T @ nxt)
    return [G[j + 1] @ w if exact else float(G[j + 1] @ w) for j in range(1, k + 1)]
