"""Machinery under the scalar free-probability calculus.

Exact combinatorics (moment-cumulant formula, series reversion, the power
series of an algebraic Cauchy transform at infinity, the test that picks the
factor of a resultant satisfied by the true branch) and the numerics that
evaluate an algebraic Cauchy transform to any precision (branch tracking from
infinity in double precision, Newton polishing in a local mpmath context).

The law objects that use these live in :mod:`freeprob.scalar.laws` and :mod:`freeprob.scalar.algebraic`.

Conventions
-----------
Sequences of moments and free cumulants start at order one:
``(m_1, ..., m_n)`` and ``(kappa_1, ..., kappa_n)``; ``m_0 = 1`` is implied.
"""

import math

import numpy as np
import sympy
from sympy.polys.constructor import construct_domain

from .._errors import ConvergenceError, DomainError, EliminationError
from .._precision import check_dps, context, guard_digits, to_mpc

__all__ = [
    "moments_from_free_cumulants",
    "free_cumulants_from_moments",
    "free_multiplicative_moments",
    "series_reversion",
]


# --------------------------------------------------------------------------
# exact arithmetic in a common sympy domain
# --------------------------------------------------------------------------

def _domain(values):
    """A sympy field holding every value, and the values converted into it."""
    values = [sympy.sympify(v) for v in values]
    if not values:
        return sympy.QQ, []
    try:
        dom, elems = construct_domain(values, field=True, extension=True)
    except (sympy.polys.polyerrors.PolynomialError, NotImplementedError):  # pragma: no cover
        dom, elems = construct_domain(values, field=True)
    return dom, list(elems)


def _to_sympy(dom, elems):
    return tuple(sympy.expand(dom.to_sympy(e)) for e in elems)


def _exact_sequence(seq, name):
    seq = tuple(sympy.sympify(v) for v in seq)
    if len(seq) == 0:
        raise DomainError(f"{name} must be a non-empty sequence starting at order one")
    return seq


def moments_from_free_cumulants(kappas):
    """Moments of a law from its free cumulants (moment-cumulant formula).

    Uses the recursion over non-crossing partitions by the block containing 1,
    ``m_n = sum_{s=1}^n kappa_s sum_{i_1+...+i_s = n-s} m_{i_1} ... m_{i_s}``,
    with ``m_0 = 1``, in exact arithmetic.

    Parameters
    ----------
    kappas : sequence
        ``(kappa_1, ..., kappa_n)``: numbers or sympy expressions.

    Returns
    -------
    tuple of sympy expressions
        ``(m_1, ..., m_n)``.

    Examples
    --------
    The standard semicircle (``kappa_2 = 1``) has the Catalan numbers as even
    moments:

    >>> moments_from_free_cumulants([0, 1, 0, 0, 0, 0])
    (0, 1, 0, 2, 0, 5)
    """
    kappas = _exact_sequence(kappas, "kappas")
    dom, ks = _domain(kappas)
    n = len(ks)
    zero, one = dom.zero, dom.one
    m = [one]
    powers = [[one]]  # powers[s][j] = [x^j] M(x)^s,  M(x) = sum_i m_i x^i
    for order in range(1, n + 1):
        powers[0].append(zero)
        powers.append([])
        for s in range(1, order + 1):
            j = order - s
            prev = powers[s - 1]
            acc = zero
            for i in range(j + 1):
                acc += m[i] * prev[j - i]
            powers[s].append(acc)
        m.append(sum((ks[s - 1] * powers[s][order - s] for s in range(1, order + 1)), zero))
    return _to_sympy(dom, m[1:])


def free_cumulants_from_moments(moments):
    """Free cumulants of a law from its moments (inverse of :func:`moments_from_free_cumulants`).

    Parameters
    ----------
    moments : sequence
        ``(m_1, ..., m_n)``: numbers or sympy expressions.

    Returns
    -------
    tuple of sympy expressions
        ``(kappa_1, ..., kappa_n)``.

    Examples
    --------
    Moments of the free Poisson law of rate 1 (the Catalan numbers) have all
    free cumulants equal to one:

    >>> free_cumulants_from_moments([1, 2, 5, 14, 42])
    (1, 1, 1, 1, 1)
    """
    moments = _exact_sequence(moments, "moments")
    dom, ms = _domain(moments)
    n = len(ms)
    zero, one = dom.zero, dom.one
    m = [one] + ms
    kap = []
    powers = [[one]]
    for order in range(1, n + 1):
        powers[0].append(zero)
        powers.append([])
        for s in range(1, order + 1):
            j = order - s
            prev = powers[s - 1]
            acc = zero
            for i in range(j + 1):
                acc += m[i] * prev[j - i]
            powers[s].append(acc)
        rest = sum((kap[s - 1] * powers[s][order - s] for s in range(1, order)), zero)
        kap.append(m[order] - rest)
    return _to_sympy(dom, kap)


# --------------------------------------------------------------------------
# truncated power series (lists of domain elements, index = power)
# --------------------------------------------------------------------------

def _mul(a, b, n, dom):
    out = [dom.zero] * n
    for i in range(min(len(a), n)):
        ai = a[i]
        if not ai:
            continue
        for j in range(min(len(b), n - i)):
            out[i + j] += ai * b[j]
    return out


def _inv(a, n, dom):
    if not a or not a[0]:
        raise EliminationError("cannot invert a power series with zero constant term")
    b = [dom.zero] * n
    b[0] = dom.one / a[0]
    for k in range(1, n):
        acc = dom.zero
        for i in range(1, min(k, len(a) - 1) + 1):
            acc += a[i] * b[k - i]
        b[k] = -acc * b[0]
    return b


def _reversion(a, n, dom):
    """Compositional inverse: ``a[0] = 0``, ``a[1] != 0``; returns ``b`` with ``a(b(t)) = t + O(t^{n+1})``."""
    a = list(a) + [dom.zero] * (n + 1 - len(a))
    if a[0] or not a[1]:
        raise DomainError("series reversion needs a(0) = 0 and a'(0) != 0 (a law with nonzero mean)")
    inv1 = dom.one / a[1]
    b = [dom.zero] * (n + 1)
    if n >= 1:
        b[1] = inv1
    pw = [[dom.zero] * (n + 1) for _ in range(n + 1)]  # pw[j][k] = [t^k] b(t)^j
    if n >= 1:
        pw[1][1] = b[1]
    for k in range(2, n + 1):
        for j in range(2, k + 1):
            acc = dom.zero
            for i in range(1, k - j + 2):
                acc += b[i] * pw[j - 1][k - i]
            pw[j][k] = acc
        s = dom.zero
        for j in range(2, k + 1):
            if a[j]:
                s += a[j] * pw[j][k]
        b[k] = -s * inv1
        pw[1][k] = b[k]
    return b


def series_reversion(coefficients):
    """Compositional inverse of ``f(t) = a_1 t + a_2 t^2 + ...`` (exact).

    Parameters
    ----------
    coefficients : sequence
        ``(a_1, ..., a_n)`` with ``a_1 != 0``.

    Returns
    -------
    tuple of sympy expressions
        ``(b_1, ..., b_n)`` with ``f(b(t)) = t + O(t^{n+1})``.

    Examples
    --------
    >>> series_reversion([1, 1, 0, 0])      # t + t^2 inverts to the Catalan series
    (1, -1, 2, -5)
    """
    coefficients = _exact_sequence(coefficients, "coefficients")
    dom, a = _domain(coefficients)
    b = _reversion([dom.zero] + a, len(a), dom)
    return _to_sympy(dom, b[1:])


def _s_chi(ms, n, dom):
    """``chi = psi^{-1}`` for ``psi(u) = sum m_k u^k``, as a coefficient list up to t^n."""
    return _reversion([dom.zero] + list(ms[:n]), n, dom)


def free_multiplicative_moments(moments_mu, moments_nu):
    """Moments of ``mu ⊠ nu`` from the moments of ``mu`` and ``nu`` (S-transform route).

    With ``psi(u) = sum_{k>=1} m_k u^k``, ``chi = psi^{-1}`` and
    ``S(t) = chi(t) (1 + t)/t``, the S-transform is multiplicative,
    ``S_{mu⊠nu} = S_mu S_nu``. Both means must be nonzero.

    Parameters
    ----------
    moments_mu, moments_nu : sequence
        ``(m_1, ..., m_n)`` of each law; the shorter length is used.

    Returns
    -------
    tuple of sympy expressions
        ``(m_1, ..., m_n)`` of ``mu ⊠ nu``.

    Examples
    --------
    Two free Poisson laws of rate one give the Fuss-Catalan numbers
    ``binom(3k, k)/(2k + 1)``:

    >>> free_multiplicative_moments([1, 2, 5, 14], [1, 2, 5, 14])
    (1, 3, 12, 55)
    """
    a = _exact_sequence(moments_mu, "moments_mu")
    b = _exact_sequence(moments_nu, "moments_nu")
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    if a[0] == 0 or b[0] == 0:
        raise DomainError("the S-transform needs laws with nonzero mean (m_1 = 0 here)")
    dom, elems = _domain(a + b)
    chi_a = _s_chi(elems[:n], n, dom)
    chi_b = _s_chi(elems[n:], n, dom)
    prod = _mul(chi_a, chi_b, n + 2, dom)  # starts at t^2
    q = prod[1:] + [dom.zero]  # prod / t
    chi = [dom.zero] + [q[k] + q[k - 1] for k in range(1, n + 1)]  # (1 + t) prod / t
    psi = _reversion(chi, n, dom)
    return _to_sympy(dom, psi[1:])


def s_transform_series(moments):
    """Coefficients ``(s_0, ..., s_{n-1})`` of ``S(t)`` from ``(m_1, ..., m_n)`` (exact)."""
    ms = _exact_sequence(moments, "moments")
    if ms[0] == 0:
        raise DomainError("the S-transform needs a law with nonzero mean (m_1 = 0 here)")
    dom, elems = _domain(ms)
    n = len(elems)
    chi = _s_chi(elems, n, dom)  # chi[1..n]
    c = chi[1:] + [dom.zero]  # chi / t
    s = [c[0]] + [c[k] + c[k - 1] for k in range(1, n)]
    return _to_sympy(dom, s)


# --------------------------------------------------------------------------
# bivariate polynomials: the branch g = 1/z + ... at infinity
# --------------------------------------------------------------------------

def at_infinity(poly, g, z, h, u):
    """``Q(h, u) = u^e Π(u h, 1/u)`` with the common power of ``u`` removed, as a Poly in ``(h, u)``.

    The branch ``g = sum_k m_k z^{-k-1}`` of ``Π(g, z) = 0`` is the branch
    ``h = sum_k m_k u^k`` of ``Q = 0`` with ``h(0) = 1``.
    """
    P = sympy.Poly(poly, g, z)
    e = P.degree(z)
    terms = [((a, a + e - b), c) for (a, b), c in P.terms()]
    low = min(k[1] for k, _ in terms)
    data = {(a, k - low): c for (a, k), c in terms}
    return sympy.Poly.from_dict(data, h, u, domain=P.domain)


def _series_rows(Q, y, t):
    """``Q = sum_a q_a(t) y^a`` as ``{a: {k: coeff}}`` with sympy coefficients."""
    rows = {}
    for (a, k), c in Q.terms():
        rows.setdefault(a, {})[k] = c
    return rows


def vanishing_order(Q, y, t, series, order):
    """First power of ``t`` where ``Q(series(t), t)`` has a nonzero coefficient, or None.

    ``series`` is ``(c_0, c_1, ...)``; only coefficients of ``t^0 .. t^{order-1}``
    are examined, which are exact when ``len(series) >= order``.
    """
    rows = _series_rows(Q, y, t)
    flat = [c for r in rows.values() for c in r.values()]
    dom, elems = _domain(flat + list(series))
    it = iter(elems[: len(flat)])
    conv = {a: {k: next(it) for k in r} for a, r in rows.items()}
    s = list(elems[len(flat):])[:order]
    deg = max(conv)
    acc = [dom.zero] * order
    for a in range(deg, -1, -1):
        acc = _mul(acc, s, order, dom)
        for k, c in conv.get(a, {}).items():
            if k < order:
                acc[k] += c
    for k, c in enumerate(acc):
        if c:
            return k
    return None


def moments_at_infinity(poly, g, z, n):
    """Exact moments ``(m_1, ..., m_n)`` of the branch ``g = 1/z + ...`` of ``Π(g, z) = 0``.

    Power series Newton iteration on ``Q(h, u) = 0``, ``h(0) = 1`` (see
    :func:`at_infinity`), in the smallest sympy field holding the coefficients.

    Raises
    ------
    DomainError
        If ``Π`` has no branch ``g ~ 1/z`` at infinity.
    EliminationError
        If that branch is not simple (``∂Q/∂h (1, 0) = 0``).
    """
    h, u = sympy.Dummy("h"), sympy.Dummy("u")
    Q = at_infinity(poly, g, z, h, u)
    rows = _series_rows(Q, h, u)
    flat = [c for r in rows.values() for c in r.values()]
    dom, elems = _domain(flat)
    it = iter(elems)
    conv = {a: {k: next(it) for k in r} for a, r in rows.items()}
    deg = max(conv)
    q = {a: [r.get(k, dom.zero) for k in range(max(r) + 1)] for a, r in conv.items()}
    q0 = sum((q[a][0] for a in q if q[a]), dom.zero)
    dq0 = sum((a * q[a][0] for a in q if a > 0 and q[a]), dom.zero)
    if q0:
        raise DomainError(
            f"the polynomial {sympy.Poly(poly, g, z).as_expr()} has no branch g ~ 1/z at z = oo; "
            "it is not the Cauchy-transform equation of a probability law"
        )
    if not dq0:
        raise EliminationError(
            f"the branch g ~ 1/z of {sympy.Poly(poly, g, z).as_expr()} is not simple at z = oo; "
            "factor the polynomial and pass the irreducible factor of the law"
        )
    N = n + 1

    def evaluate(hs, prec):
        val = [dom.zero] * prec
        der = [dom.zero] * prec
        for a in range(deg, -1, -1):
            der = [d + v for d, v in zip(_mul(der, hs, prec, dom), val)]
            val = _mul(val, hs, prec, dom)
            for k, c in enumerate(q.get(a, [])[:prec]):
                val[k] += c
        return val, der

    hs = [dom.one]
    p = 1
    while p < N:
        p2 = min(2 * p, N)
        hs = hs + [dom.zero] * (p2 - len(hs))
        val, der = evaluate(hs, p2)
        corr = _mul(val, _inv(der, p2, dom), p2, dom)
        hs = [x - c for x, c in zip(hs, corr)]
        p = p2
    return _to_sympy(dom, hs[1:N])


def choose_factor(factors, check, orders=(6, 12, 24)):
    """Index of the single factor for which ``check(factor, order)`` returns None (vanishes).

    ``check`` returns the first order at which the factor fails, or None.
    Returns ``(index, order, failures)`` where ``failures[i]`` is the failing
    order of factor ``i`` (None for the kept one).
    """
    failures = None
    for order in orders:
        failures = [check(f, order) for f in factors]
        passing = [i for i, fail in enumerate(failures) if fail is None]
        if len(passing) == 1:
            return passing[0], order, tuple(failures)
        if not passing:
            raise EliminationError(
                "no factor of the eliminated polynomial admits the branch of the law "
                f"(first mismatching orders {failures})"
            )
    raise EliminationError(
        f"{len(passing)} factors admit the branch through order {orders[-1]}; cannot choose"
    )


# --------------------------------------------------------------------------
# numerics: evaluate the branch of an exact bivariate polynomial
# --------------------------------------------------------------------------

def _exact_to_ctx(ctx, c):
    if isinstance(c, sympy.Integer):
        return ctx.mpf(int(c))
    if isinstance(c, sympy.Rational):
        return ctx.mpf(int(c.p)) / int(c.q)
    val = to_mpc(ctx, c)
    return val.real if val.imag == 0 else val


class NumericBivariate:
    """Numeric views of an exact polynomial ``Π(g, z) = sum_j a_j(z) g^j``.

    Built once per law; coefficients must be numbers (no free parameters).
    ``rows[j]`` holds the exact coefficients of ``a_j`` in ascending powers of z.
    """

    def __init__(self, poly, g, z, moments):
        P = sympy.Poly(poly, g, z)
        extra = P.free_symbols - {g, z}
        if extra:
            names = ", ".join(sorted(str(s) for s in extra))
            raise DomainError(
                f"the law has symbolic parameters ({names}); substitute numbers "
                "(law.subs({...})) before evaluating it numerically"
            )
        self.dg = P.degree(g)
        self.dz = P.degree(z)
        rows = [[sympy.Integer(0)] * (self.dz + 1) for _ in range(self.dg + 1)]
        for (a, b), c in P.terms():
            rows[a][b] = sympy.sympify(c)
        self.rows = rows
        self.real = all(c.is_real for r in rows for c in r)
        dtype = float if self.real else complex
        self.frows = np.array([[dtype(sympy.N(c, 17)) for c in r] for r in rows])
        self.moments = [complex(sympy.N(m, 17)) for m in moments]
        mags = [abs(m) ** (1.0 / (k + 1)) for k, m in enumerate(self.moments) if m != 0]
        self.radius = max(mags) if mags else 1.0
        self._mp = {}

    # ---- double precision -------------------------------------------------
    def g_coeffs(self, zv):
        """Coefficients of ``Π(·, zv)`` in descending powers of g (numpy.roots order)."""
        if self.real and isinstance(zv, float):
            powers = zv ** np.arange(self.dz + 1, dtype=float)
        else:
            powers = complex(zv) ** np.arange(self.dz + 1)
        return (self.frows @ powers)[::-1]

    def roots(self, zv, ctx=None):
        """All roots of ``Π(·, zv)`` as a list: Python complex, or numbers of ``ctx``.

        Real coefficients give exactly real roots (zero imaginary part) and
        exact conjugate pairs. Returns None if the multiprecision root finder
        does not converge.
        """
        if ctx is None:
            c = self.g_coeffs(zv)
            nz = np.flatnonzero(c)
            if nz.size == 0 or nz[0] == len(c) - 1:
                return []
            return [complex(r) for r in np.roots(c[nz[0]:])]
        c = self.mp_g_coeffs(ctx, zv)
        while c and c[-1] == 0:
            c.pop()
        if len(c) <= 1:
            return []
        try:
            found = ctx.polyroots(c[::-1], maxsteps=400, extraprec=ctx.prec)
        except ctx.NoConvergence:
            return None
        return [ctx.mpc(r) for r in found]

    def series_guess(self, zv):
        return sum(m / zv ** (k + 1) for k, m in enumerate([1.0] + self.moments))

    # ---- arbitrary precision ----------------------------------------------
    def mp_rows(self, ctx):
        key = ctx.prec
        if key not in self._mp:
            self._mp[key] = [[_exact_to_ctx(ctx, c) for c in r] for r in self.rows]
        return self._mp[key]

    def mp_g_coeffs(self, ctx, zv, derivative=False):
        """``[a_0(zv), ..., a_d(zv)]`` (ascending in g), or their z-derivatives."""
        out = []
        for r in self.mp_rows(ctx):
            p, dp = ctx.zero, ctx.zero
            for c in reversed(r):
                dp = dp * zv + p
                p = p * zv + c
            out.append(dp if derivative else p)
        return out


def _horner(ctx, coeffs_asc, x):
    p, dp = ctx.zero, ctx.zero
    for c in reversed(coeffs_asc):
        dp = dp * x + p
        p = p * x + c
    return p, dp


def _select(roots, target, tol):
    """Index of the root nearest ``target`` and its distance to the other roots.

    The index is None when the nearest root is not clearly the nearest
    (distance above ``tol`` times its separation from the other roots).
    """
    if not roots:
        return None, math.inf
    d = [abs(r - target) for r in roots]
    i = min(range(len(d)), key=d.__getitem__)
    sep = min((abs(r - roots[i]) for k, r in enumerate(roots) if k != i), default=math.inf)
    # roots that escaped to infinity count as far away, not infinitely far:
    # the prediction must also be close relative to the size of the root
    near = min(sep, abs(roots[i]) + abs(target))
    return (i if d[i] <= tol * near else None), sep


def track_branch(num, x0, y0, where="the Cauchy transform", ctx=None):
    """Follow the branch ``g ~ 1/z`` from ``x0 + iY`` down to ``x0 + i y0``.

    Works in double precision (``ctx=None``, numpy roots) or in the mpmath
    context ``ctx`` (polyroots), which reaches points closer to branch points.
    Steps halve the distance to the real axis; each step predicts the branch
    by linear extrapolation and accepts the nearest root only if it is well
    separated from the others and has ``Im g < 0``. For ``y0 == 0`` the path
    jumps to the real axis once the extrapolated value clearly selects a root
    of ``Π(·, x0)``.

    Returns ``(g, separation)`` at the target, the branch value and its
    distance to the nearest other root of ``Π(·, target)``.
    """
    if ctx is None:
        tiny = 1e-12

        def point(y):
            return complex(x0, y) if y > 0 else float(x0)
    else:
        tiny = ctx.mpf(10) ** (-(ctx.dps - 4))
        x0, y0 = ctx.mpf(x0), ctx.mpf(y0)

        def point(y):
            return ctx.mpc(x0, y) if y > 0 else x0
    scale = 1.0 + abs(float(x0)) + num.radius
    # start far above: the asymptotic series selects the branch there
    Y = max(y0, 4.0 * scale)
    for _ in range(40):
        zs = point(Y)
        roots = num.roots(zs, ctx) or []
        i, sep = _select(roots, num.series_guess(zs), 1e-2)
        if i is not None and roots[i].imag < 0:
            break
        Y *= 2
    else:
        raise ConvergenceError(
            f"could not isolate the branch g ~ 1/z of {where} at large |z| above x = {x0}",
            point=complex(float(x0), float(Y)),
        )
    hist = [(Y, roots[i])]
    y = Y
    steps = 0
    while True:
        if y == y0:
            return roots[i], sep
        yn = max(y0, y / 2)
        # on the way to the real axis jump to it once the extrapolation is reliable
        if y0 == 0 and y < 1e-2 * scale and len(hist) >= 2:
            (y1, g1), (y2, g2) = hist[-2], hist[-1]
            pred = g2 - (g2 - g1) / (y2 - y1) * y2
            r0 = num.roots(point(y0), ctx) or []
            j, s0 = _select(r0, pred, 0.05)
            if j is not None and abs(pred - g2) < 0.05 * min(s0, abs(r0[j]) + abs(pred)):
                return r0[j], s0
            if y < tiny * scale:
                if abs(g2) * y2 > 0.9 * abs(g1) * y1 and abs(g2) * y2 > 1e-8:
                    raise DomainError(
                        f"{where} has a pole at x = {x0}: the law has an atom there and no density"
                    )
                raise ConvergenceError(
                    f"could not continue {where} to the real axis at x = {x0}: the point is too "
                    "close to a branch point (a support edge); move away from the edge",
                    point=float(x0),
                )
        accepted = False
        for _ in range(30):
            steps += 1
            if steps > 5000:
                break
            (y1, g1), (y2, g2) = hist[-2] if len(hist) > 1 else hist[-1], hist[-1]
            pred = g2 + (g2 - g1) / (y2 - y1) * (yn - y2) if y1 != y2 else g2
            rn = num.roots(point(yn), ctx) or []
            j, sn = _select(rn, pred, 0.2)
            if j is not None and (yn == 0 or rn[j].imag < 0):
                hist.append((yn, rn[j]))
                y, roots, i, sep = yn, rn, j, sn
                accepted = True
                break
            yn = y - (y - yn) / 4
        if not accepted:
            raise ConvergenceError(
                f"branch tracking of {where} lost the branch near z = {x0} + {y}i",
                point=complex(float(x0), float(y)),
            )


def _newton(ctx, coeffs, x, tol, maxit=80):
    """Newton's method on a univariate polynomial (ascending coefficients).

    Stops when the step is below ``tol`` relative, or when the steps stop
    shrinking (the rounding floor of an ill-conditioned root); the caller
    bounds the error a posteriori. Returns ``(x, last_step)``, or
    ``(x, None)`` without convergence.
    """
    last = None
    floor = ctx.mpf(10) ** (-ctx.dps)
    for it in range(maxit):
        p, dp = _horner(ctx, coeffs, x)
        if dp == 0:
            return x, None
        step = p / dp
        size = abs(step)
        if last is not None and it > 3 and size > last / 2 and size < ctx.sqrt(tol) * abs(x):
            return x, last
        x = x - step
        if size <= tol * max(abs(x), floor):
            return x, size
        last = size
    return x, None


def branch_value(num, z, dps, where="the Cauchy transform"):
    """``G(z)`` on the branch ``g ~ 1/z`` of ``Π(G, z) = 0`` at ``dps`` digits, verified.

    For ``Im z > 0`` the value has ``Im G < 0``; for real ``z`` it is the
    boundary value ``G(z + i0)``; for ``Im z < 0`` it is ``conj(G(conj z))``.
    The branch is tracked from infinity in double precision, then polished by
    Newton's method at ``dps + guard`` digits. The value is returned only if
    the Newton correction bound is below ``10^-dps`` relative, the root is
    isolated from the other roots, the sign of ``Im G`` is right, and a repeat
    at higher precision agrees.
    """
    dps = check_dps(dps)
    work = dps + guard_digits(dps)
    zc = to_mpc(context(2 * work), z)  # kept exact through the precision increases below
    if zc.imag < 0:
        return branch_value(num, zc.conjugate(), dps, where).conjugate()
    x0, y0 = float(zc.real), float(zc.imag)
    real_target = zc.imag == 0
    try:
        g0, sep = track_branch(num, x0, y0, where)
    except ConvergenceError as exc:
        g0 = None
        for tdps in (30, 60):
            try:
                g0, sep = track_branch(num, zc.real, zc.imag, where, ctx=context(tdps))
                break
            except ConvergenceError:
                continue
        if g0 is None:
            raise exc
    is_real = real_target and num.real and g0.imag == 0
    previous = None
    err = None
    for _ in range(4):
        ctx = context(work)
        value, err = _polish(ctx, num, zc, real_target, is_real, g0, sep)
        certified = value is not None and err <= ctx.mpf(10) ** (-dps - 1) * max(
            abs(value), ctx.mpf(10) ** (-dps)
        )
        if not certified:
            previous = None
            work *= 2
            continue
        if zc.imag > 0 and not value.imag < 0:
            raise ConvergenceError(
                f"{where}: the tracked root at z = {complex(zc)} has Im G >= 0 (wrong branch)",
                point=complex(zc), dps=dps,
            )
        if real_target and value.imag > 0:
            if value.imag > err + ctx.mpf(10) ** (-(ctx.dps - 5)) * max(1, abs(value)):
                raise ConvergenceError(
                    f"{where}: the root chosen at x = {x0} has Im G > 0 (wrong branch)",
                    point=x0, dps=dps,
                )
            value = ctx.mpc(value.real, 0)
        # accept a value only when it is stable under a precision increase
        if previous is not None and abs(previous - value) <= ctx.mpf(10) ** (-dps - 1) * abs(value):
            return context(dps).mpc(value)
        previous = value
        work += guard_digits(dps)
    raise ConvergenceError(
        f"{where} at z = {complex(zc)} could not be certified to {dps} digits "
        "(Newton polishing did not converge to an isolated root; the point may be too close "
        "to a support edge or an atom)",
        point=complex(zc), residual=None if err is None else float(err), dps=dps,
    )


def _polish(ctx, num, zc, real_target, is_real, g0, sep):
    """One Newton polish of the double-precision root ``g0`` at ``ctx`` precision.

    Returns ``(value, error_bound)`` or ``(None, None)`` if Newton left the
    root's neighbourhood.
    """
    zt = ctx.mpf(zc.real) if real_target else ctx.mpc(zc)
    coeffs = num.mp_g_coeffs(ctx, zt)
    tol = ctx.mpf(10) ** (-(ctx.dps - 3))
    value = None
    if is_real:
        r, bound = _newton(ctx, [ctx.mpf(ctx.re(c)) for c in coeffs], ctx.mpf(g0.real), tol)
        if bound is not None and abs(r - g0) < 0.25 * sep:
            value = ctx.mpc(r, 0)
    if value is None:
        r, bound = _newton(ctx, coeffs, ctx.mpc(g0.real, g0.imag), tol)
        if bound is not None and abs(r - g0) < 0.25 * sep:
            value = ctx.mpc(r)
    if value is None:
        return None, None
    # a posteriori bound: Newton correction plus the rounding of the evaluation
    p, dp = _horner(ctx, coeffs, value)
    if dp == 0:
        return None, None
    scale = sum(abs(c) * abs(value) ** k for k, c in enumerate(coeffs))
    return value, (abs(p) + 10 * ctx.eps * scale) / abs(dp)


def cauchy_derivative(num, ctx, gval, zval):
    """``G'(z) = -Π_z/Π_g`` at a point ``(G(z), z)`` of the curve."""
    a = num.mp_g_coeffs(ctx, zval)
    da = num.mp_g_coeffs(ctx, zval, derivative=True)
    _, pg = _horner(ctx, a, gval)
    pz, _ = _horner(ctx, da, gval)
    if pg == 0:
        raise ConvergenceError("G' is infinite at a branch point", point=complex(zval))
    return -pz / pg


def real_roots_exact(expr, z):
    """Sorted distinct real roots of a univariate polynomial with numeric coefficients (exact)."""
    P = sympy.Poly(expr, z)
    if P.degree() <= 0:
        return []
    roots = []
    for factor, _ in P.sqf_list()[1]:
        roots.extend(factor.real_roots())
    uniq = []
    for r in sorted(set(roots), key=lambda r: float(r)):
        uniq.append(r)
    return uniq
