"""Scalar free probability: algebraic laws, free convolutions and subordination.

An :class:`AlgebraicLaw` is a law known only through the polynomial
``Π(g, z)`` its Cauchy transform solves, ``G`` being the branch with
``G(z) ~ 1/z`` at infinity; it shares the interface of
:class:`freeprob.scalar.laws.ScalarLaw` (``cauchy``, ``density``, ``moments``,
``free_cumulants``, ``r_transform``, ``s_transform``), with values obtained by
branch tracking instead of a closed form.

The free convolutions :func:`free_additive_convolution` (``⊞``, ``R``-transforms
add) and :func:`free_multiplicative_convolution` (``⊠``, ``S``-transforms
multiply) return an :class:`AlgebraicLaw` whose polynomial is eliminated from
the transform relations by resultants; the factor kept is the one that admits
the exact series of the convolution at infinity, recorded in its
``elimination`` attribute (an :class:`EliminationRecord`).

:func:`subordination` evaluates ``mu ⊞ nu`` independently of the eliminated
polynomial, through the subordination functions ``ω_1, ω_2``
(a :class:`SubordinationResult`).

Conventions (the symbols ``g, z``, the branch at infinity, the R- and
S-transforms) are those of :mod:`freeprob.scalar.laws`.
"""

import dataclasses
from dataclasses import dataclass, field

import sympy

from .._errors import ConvergenceError, DomainError, EliminationError
from .._precision import check_dps, context, guard_digits, to_mpc, to_mpf
from .laws import (
    _NUMERIC_MOMENTS,
    G_SYMBOL,
    Z_SYMBOL,
    ScalarLaw,
    _check_k,
    _exact_sign,
    _normalized,
    _point,
)
from .curves import (
    at_infinity,
    cauchy_derivative,
    choose_factor,
    free_multiplicative_moments,
    moments_at_infinity,
    moments_from_free_cumulants,
    real_roots_exact,
    vanishing_order,
)

__all__ = [
    "AlgebraicLaw",
    "EliminationRecord",
    "SubordinationResult",
    "free_additive_convolution",
    "free_multiplicative_convolution",
    "subordination",
]

# --------------------------------------------------------------------------
# algebraic laws
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class EliminationRecord:
    """How the polynomial of a free convolution was obtained.

    Attributes
    ----------
    operation : str
        ``"free additive convolution"`` or ``"free multiplicative convolution"``.
    factors : tuple of sympy expressions
        Irreducible factors (in ``g, z``) of the eliminated polynomial that
        involve ``g``.
    kept : int
        Index of the factor kept.
    order : int
        Number of coefficients of ``g = Σ m_k z^(-k-1)`` at infinity checked.
    mismatch : tuple
        For every factor, the first order of that series at which its
        expansion differs from the exact moments (None for the kept factor).
    reason : str
        The explanation, in words.
    """

    operation: str
    factors: tuple
    kept: int
    order: int
    mismatch: tuple
    reason: str


@dataclass(frozen=True)
class AlgebraicLaw(ScalarLaw):
    """A law whose Cauchy transform solves ``Π(G(z), z) = 0`` on the branch ``G ~ 1/z``.

    Parameters
    ----------
    poly : sympy expression or Poly
        ``Π(g, z)``; coefficients may involve symbolic parameters (numeric
        evaluation then needs :meth:`subs`).
    g, z : sympy.Symbol
        The unknown and the variable.
    origin : tuple, optional
        ``("additive" | "multiplicative", mu, nu)`` for a free convolution.
    elimination : EliminationRecord, optional
        Which factor of the eliminated polynomial was kept, and why.

    Notes
    -----
    Numerical values come from branch tracking: the roots of ``Π(·, z)`` are
    followed by continuity from ``z = x + iY`` (``Y`` large, where the series
    ``1/z + m_1/z² + ...`` selects the root) down to the target in the upper
    half plane (``x + i0`` for densities), then polished by Newton's method at
    ``dps`` plus guard digits and verified (see ``branch_value``). That ``Π``
    describes a positive measure is not checked.

    Examples
    --------
    >>> import mpmath
    >>> g, z = sympy.symbols('g z')
    >>> law = AlgebraicLaw(g**2 - z*g + 1, g, z)     # the standard semicircle
    >>> law.moments(4)
    (0, 1, 0, 2)
    >>> mpmath.nstr(law.density(1, dps=30), 25)          # sqrt(3)/(2 pi)
    '0.2756644477108960247556632'
    """

    poly: object
    g: sympy.Symbol = G_SYMBOL
    z: sympy.Symbol = Z_SYMBOL
    origin: tuple = field(default=None, compare=False, repr=False)
    elimination: EliminationRecord = field(default=None, compare=False, repr=False)

    _has_closed_form = False

    def __post_init__(self):
        if not isinstance(self.g, sympy.Symbol) or not isinstance(self.z, sympy.Symbol):
            raise DomainError("AlgebraicLaw needs sympy Symbols for g and z")
        expr = self.poly.as_expr() if isinstance(self.poly, sympy.Poly) else sympy.sympify(self.poly)
        floats = expr.atoms(sympy.Float)
        if floats:
            expr = expr.xreplace({f: sympy.Rational(str(f)) for f in floats})
        P = sympy.Poly(expr, self.g, self.z)
        if P.degree(self.g) < 1:
            raise DomainError(f"Π = {expr} does not involve {self.g}")
        object.__setattr__(self, "poly", _normalized(P))
        moments_at_infinity(self.poly, self.g, self.z, 1)  # validates the branch g ~ 1/z

    @property
    def symbols(self):
        return (self.g, self.z)

    def cauchy_equation(self):
        return self.poly

    def moments(self, k, method=None):
        """Exact moments ``(m_1, ..., m_k)``.

        ``method="series"`` (default) expands the branch of ``Π`` at infinity;
        ``method="origin"`` computes them from the operands of the free
        convolution this law came from (free cumulants add for ⊞; S-transforms
        multiply for ⊠).
        """
        k = _check_k(k)
        if method in (None, "series"):
            cache = self.__dict__.setdefault("_series_cache", ())
            if len(cache) < k:
                cache = moments_at_infinity(self.poly, self.g, self.z, max(k, 2 * len(cache)))
                self.__dict__["_series_cache"] = cache
            return cache[:k]
        if method == "origin":
            if self.origin is None:
                raise DomainError("this law was not built by a free convolution")
            kind, mu, nu = self.origin
            if kind == "additive":
                kap = [a + b for a, b in zip(mu.free_cumulants(k), nu.free_cumulants(k))]
                return moments_from_free_cumulants(kap) if k else ()
            return free_multiplicative_moments(mu.moments(k), nu.moments(k)) if k else ()
        raise DomainError(f"method must be 'series' or 'origin', got {method!r}")

    def subs(self, *args, **kwargs):
        origin = self.origin
        if origin is not None:
            origin = (origin[0], origin[1].subs(*args, **kwargs), origin[2].subs(*args, **kwargs))
        return AlgebraicLaw(self.poly.as_expr().subs(*args, **kwargs), self.g, self.z,
                            origin=origin, elimination=self.elimination)

    def nonnegative(self):
        if self.origin is not None and self.origin[1].nonnegative() and self.origin[2].nonnegative():
            return True
        return None

    def _extra_methods(self):
        return ("subordination",) if self.origin is not None and self.origin[0] == "additive" else ()

    def _other_cauchy(self, z, dps, method):
        _, mu, nu = self.origin
        return subordination(mu, nu, z, dps).cauchy

    def subordination(self, z, dps=15):
        """Subordination functions of the free additive convolution this law came from."""
        if self.origin is None or self.origin[0] != "additive":
            raise DomainError("subordination needs a law built by free_additive_convolution")
        return subordination(self.origin[1], self.origin[2], z, dps)

    def support(self, dps=15):
        """Intervals carrying the density, from the real roots of the discriminant of ``Π``.

        The candidate edges are the real roots of ``disc_g(Π)(z)`` and of the
        leading coefficient of ``Π`` in ``g``; each interval between
        consecutive candidates is kept if the density is positive at its
        midpoint, and adjacent kept intervals are merged. Atoms are not
        reported.
        """
        dps = check_dps(dps)
        self._numeric  # raises for symbolic parameters
        g, z = self.symbols
        expr = self.poly.as_expr()
        disc = sympy.discriminant(expr, g)
        lead = sympy.Poly(expr, g).LC()
        ctx = context(dps + 10)
        pts = [to_mpf(ctx, r) for r in real_roots_exact(sympy.expand(disc * lead), z)]
        out = []
        for a, b in zip(pts, pts[1:]):
            if self.density((a + b) / 2) > 0:
                if out and out[-1][1] == a:
                    out[-1][1] = b
                else:
                    out.append([a, b])
        for probe in ([pts[0] - 1, pts[-1] + 1] if pts else []):
            if self.density(probe) > 0:
                raise ConvergenceError(f"{self!r}: positive density beyond the last candidate edge")
        res = context(dps)
        return tuple((res.mpf(a), res.mpf(b)) for a, b in out)


# --------------------------------------------------------------------------
# free convolutions
# --------------------------------------------------------------------------

def _check_laws(*laws):
    for law in laws:
        if not isinstance(law, ScalarLaw):
            raise DomainError(f"expected a scalar law, got {law!r}")
        clash = {G_SYMBOL, Z_SYMBOL} & law.parameters
        if clash:
            raise DomainError(f"{law!r} uses the reserved symbol(s) {clash} as parameters; rename them")


def _numer(expr):
    return sympy.expand(sympy.fraction(sympy.together(expr))[0])


def _finish(resultant, gd, zd, moments_for, operation, origin):
    if resultant == 0:
        raise EliminationError(f"{operation}: the resultant vanishes identically")
    factors = [f for f, _ in sympy.factor_list(resultant)[1] if f.has(gd)]
    if not factors:
        raise EliminationError(f"{operation}: no factor of the resultant involves g")
    h, u = sympy.Dummy("h"), sympy.Dummy("u")

    def check(f, order):
        series = (1,) + tuple(moments_for(order))[: order - 1]
        return vanishing_order(at_infinity(f, gd, zd, h, u), h, u, series, order)

    idx, order, failures = choose_factor(factors, check)
    if check(factors[idx], 2 * order) is not None:
        raise EliminationError(
            f"{operation}: the factor kept matches the exact moments through order {order} "
            f"but not through order {2 * order}"
        )
    order *= 2
    swap = {gd: G_SYMBOL, zd: Z_SYMBOL}
    named = tuple(f.xreplace(swap) for f in factors)
    reason = (
        f"kept factor {idx} of {len(factors)} (degree {sympy.degree(named[idx], G_SYMBOL)} in g): "
        f"the only one admitting g = 1/z + m_1/z^2 + ... with the exact moments of the "
        f"{operation} (checked through order {order}); the other factors first differ at orders "
        f"{[f for f in failures if f is not None]}"
    )
    record = EliminationRecord(operation, named, idx, order, failures, reason)
    return AlgebraicLaw(named[idx], G_SYMBOL, Z_SYMBOL, origin=origin, elimination=record)


def _moment_cache(fn):
    cache = {}

    def get(order):
        if order not in cache:
            cache[order] = fn(order)
        return cache[order]

    return get


def free_additive_convolution(mu, nu):
    """Free additive convolution ``mu ⊞ nu`` as an :class:`AlgebraicLaw`.

    With subordination ``G(z) = G_mu(ω)`` and ``ω = R_mu(G) + 1/G``, the
    relation ``z = R_mu(G) + R_nu(G) + 1/G`` becomes
    ``Π_mu(G, ω) = 0`` and ``Π_nu(G, z + 1/G - ω) = 0``; ``ω`` is eliminated by
    a resultant, the result factored, and the factor admitting the exact
    series at infinity (moments from the added free cumulants) kept.

    Examples
    --------
    >>> from freeprob import Semicircle
    >>> s1, s2 = sympy.symbols('s1 s2', positive=True)
    >>> law = free_additive_convolution(Semicircle(s1), Semicircle(s2))
    >>> sympy.factor(law.cauchy_equation().as_expr())
    g**2*s1 + g**2*s2 - g*z + 1
    """
    _check_laws(mu, nu)
    gd, wd, zd = sympy.Dummy("g"), sympy.Dummy("w"), sympy.Dummy("z")
    (gm, zm), (gn, zn) = mu.symbols, nu.symbols
    pm = mu.cauchy_equation().as_expr().xreplace({gm: gd, zm: wd})
    pn = nu.cauchy_equation()
    e = pn.degree(zn)
    b = sympy.expand(pn.as_expr().xreplace({gn: gd, zn: zd + 1 / gd - wd}) * gd**e)
    res = sympy.resultant(pm, b, wd)

    def moments_for(order):
        kap = [x + y for x, y in zip(mu.free_cumulants(order), nu.free_cumulants(order))]
        return moments_from_free_cumulants(kap)

    return _finish(res, gd, zd, _moment_cache(moments_for), "free additive convolution",
                   ("additive", mu, nu))


def free_multiplicative_convolution(mu, nu):
    """Free multiplicative convolution ``mu ⊠ nu`` of laws on ``[0, ∞)`` with nonzero means.

    With ``ψ_mu(ω_1) = ψ_nu(ω_2) = t``, ``ψ(u) = t`` and
    ``u = ω_1 ω_2 (1 + t)/t`` (from ``S = S_mu S_nu``), where
    ``ψ(u) = G(1/u)/u - 1``: ``ω_2`` is substituted, ``ω_1`` eliminated by a
    resultant, ``t = g z - 1`` and ``u = 1/z`` substituted back, and the factor
    admitting the exact series (moments by the S-transform) kept.

    Examples
    --------
    >>> from freeprob import MarchenkoPastur
    >>> law = free_multiplicative_convolution(MarchenkoPastur(1), MarchenkoPastur(1))
    >>> law.cauchy_equation().as_expr()
    g**3*z**2 - g*z + 1
    >>> law.moments(4)                      # Fuss-Catalan numbers
    (1, 3, 12, 55)
    """
    _check_laws(mu, nu)
    for law in (mu, nu):
        if law.nonnegative() is False:
            raise DomainError(f"{law!r} is not supported on [0, oo): ⊠ is defined here for such laws")
        if _exact_sign(law.moments(1)[0]) == 0:
            raise DomainError(f"{law!r} has mean zero: its S-transform is not defined")
    td, wd, ud, vd = (sympy.Dummy(s) for s in "twuv")
    gd, zd = sympy.Dummy("g"), sympy.Dummy("z")

    def psi_relation(law, v):
        g, z = law.symbols
        P = law.cauchy_equation()
        return sympy.expand(P.as_expr().xreplace({g: v * (1 + td), z: 1 / v}) * v ** P.degree(z))

    a = psi_relation(mu, wd)
    b = _numer(psi_relation(nu, vd).xreplace({vd: ud * td / ((1 + td) * wd)}))
    res = sympy.resultant(a, b, wd)
    res = _numer(res.xreplace({td: gd * zd - 1, ud: 1 / zd}))
    moments_for = _moment_cache(lambda order: free_multiplicative_moments(mu.moments(order),
                                                                           nu.moments(order)))
    return _finish(res, gd, zd, moments_for, "free multiplicative convolution",
                   ("multiplicative", mu, nu))


# --------------------------------------------------------------------------
# numeric subordination for ⊞
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class SubordinationResult:
    """Subordination functions of ``mu ⊞ nu`` at one point.

    ``G(z) = G_mu(ω_1) = G_nu(ω_2)`` and ``ω_1 + ω_2 = z + 1/G(z)``.

    Attributes
    ----------
    z, omega1, omega2, cauchy : mpc
        The point, the subordination functions and ``G_{mu⊞nu}(z)`` at ``dps`` digits.
    residual : mpf
        Largest residual of the two equations at the solution.
    iterations : int
        Newton iterations at full precision.
    dps : int
        Digits asked for.
    converged : bool
        Always True: a solve that does not converge raises.
    """

    z: object
    omega1: object
    omega2: object
    cauchy: object
    residual: object
    iterations: int
    dps: int
    converged: bool = True

    def density(self):
        """``-Im G/π``: the density of ``mu ⊞ nu`` when ``z`` is real."""
        ctx = context(self.dps)
        return ctx.mpf(-ctx.im(self.cauchy) / ctx.pi)


def _radius(law):
    ms = [complex(sympy.N(m, 17)) for m in law.moments(_NUMERIC_MOMENTS)]
    vals = [abs(m) ** (1.0 / (k + 1)) for k, m in enumerate(ms) if m != 0]
    return max(vals) if vals else 1.0


def _sub_newton(ctx, mu, nu, zv, w1, w2, maxit=60):
    """Newton on ``G_mu(ω1) = G_nu(ω2)``, ``ω1 + ω2 = z + 1/G_mu(ω1)``; returns the state or None."""
    tol = ctx.mpf(10) ** (-(ctx.dps - 4))
    slack = ctx.mpf(10) ** (-(ctx.dps // 2))
    for it in range(1, maxit + 1):
        g1 = ctx.mpc(mu.cauchy(w1, ctx.dps))
        g2 = ctx.mpc(nu.cauchy(w2, ctx.dps))
        d1 = cauchy_derivative(mu._numeric, ctx, g1, w1)
        d2 = cauchy_derivative(nu._numeric, ctx, g2, w2)
        f1 = g1 - g2
        f2 = w1 + w2 - zv - 1 / g1
        c = 1 + d1 / g1**2
        det = d1 + d2 * c
        if det == 0:
            return None
        dw1 = (f1 + d2 * f2) / det
        dw2 = (d1 * f2 - c * f1) / det
        w1, w2 = w1 - dw1, w2 - dw2
        if w1.imag < ctx.im(zv) - slack or w2.imag < ctx.im(zv) - slack:
            return None
        if max(abs(dw1), abs(dw2)) <= tol * max(abs(w1), abs(w2)):
            g1 = ctx.mpc(mu.cauchy(w1, ctx.dps))
            g2 = ctx.mpc(nu.cauchy(w2, ctx.dps))
            res = max(abs(g1 - g2), abs(w1 + w2 - zv - 1 / g1))
            return w1, w2, g1, res, it
    return None


def subordination(mu, nu, z, dps=15):
    """Subordination functions ``ω_1, ω_2`` of ``mu ⊞ nu`` at ``z``, at ``dps`` digits.

    Solves ``G_mu(ω_1) = G_nu(ω_2)``, ``ω_1 + ω_2 = z + 1/G_mu(ω_1)`` with
    ``Im ω_i >= Im z``: the Belinschi-Bercovici fixed point
    ``ω_1 = z + h_nu(z + h_mu(ω_1))`` (``h = 1/G - id``) far above the axis,
    Newton continuation down to ``z`` (real ``z`` allowed: the boundary values
    inside the bulk), and a final Newton solve at ``dps`` plus guard digits,
    repeated at higher precision as a check. ``G(z) = G_mu(ω_1(z))`` is an
    evaluation of ``mu ⊞ nu`` independent of the eliminated polynomial.

    Returns
    -------
    SubordinationResult

    References
    ----------
    S. T. Belinschi, H. Bercovici, "A new approach to subordination results in
    free probability", J. Anal. Math. 101 (2007).

    Raises
    ------
    ConvergenceError
        If any stage does not converge or the check at higher precision disagrees.

    Examples
    --------
    >>> import mpmath
    >>> from freeprob import Semicircle
    >>> r = subordination(Semicircle(1), Semicircle(1), 1, dps=20)
    >>> mpmath.nstr(r.density(), 15), mpmath.nstr(Semicircle(2).density(1, dps=20), 15)
    ('0.210542199673896', '0.210542199673896')
    """
    _check_laws(mu, nu)
    dps = check_dps(dps)
    work = dps + guard_digits(dps)
    ctx = context(work)
    zc = to_mpc(ctx, _point(z, work))
    if zc.imag < 0:
        r = subordination(mu, nu, ctx.conj(zc), dps)
        c = context(dps)
        return dataclasses.replace(r, z=c.conj(r.z), omega1=c.conj(r.omega1),
                                   omega2=c.conj(r.omega2), cauchy=c.conj(r.cauchy))
    x, y = float(zc.real), float(zc.imag)
    scale = 1.0 + abs(complex(zc)) + _radius(mu) + _radius(nu)

    def h(law, w):
        return 1 / complex(law.cauchy(w, 15)) - w

    # 1. fixed point far above the axis (a strict contraction there)
    y1 = max(y, 2.0 * scale)
    z1 = complex(x, y1)
    w1 = z1
    for _ in range(2000):
        w1n = z1 + h(nu, z1 + h(mu, w1))
        if abs(w1n - w1) <= 1e-14 * abs(z1):
            w1 = w1n
            break
        w1 = w1n
    else:
        raise ConvergenceError(f"subordination fixed point did not converge at z = {z1}", point=z1)
    lo = context(25)
    state = (lo.mpc(w1), lo.mpc(z1 + h(mu, w1)))
    # 2. continuation down to Im z
    yk, prev = y1, None
    for _ in range(400):
        if yk == y:
            break
        jump = y if (y == 0 and yk < 1e-3 * scale) else None
        step = jump if jump is not None else max(y, 0.5 * yk)
        done = False
        for _ in range(30):
            zt = lo.mpc(x, step) if step > 0 else lo.mpc(lo.mpf(zc.real), 0)
            guess = state
            if prev is not None:
                (ya, sa), (yb, sb) = prev, (yk, state)
                t = (step - yb) / (ya - yb) if ya != yb else 0
                guess = (sb[0] + (sa[0] - sb[0]) * t, sb[1] + (sa[1] - sb[1]) * t)
            out = _sub_newton(lo, mu, nu, zt, *guess)
            if out is not None:
                prev, state, yk, done = (yk, state), (out[0], out[1]), step, True
                break
            if jump is not None and step == jump and y == 0:
                jump, step = None, 0.5 * yk
                continue
            step = yk - 0.25 * (yk - step)
        if not done:
            raise ConvergenceError(
                f"subordination continuation stalled near z = {complex(x, yk)}", point=complex(x, yk)
            )
    else:
        raise ConvergenceError(f"subordination continuation did not reach z = {complex(zc)}")
    # 3. full precision, then a check one precision step higher
    results = []
    for extra in (0, guard_digits(dps)):
        c = context(work + extra)
        out = _sub_newton(c, mu, nu, c.mpc(zc), c.mpc(state[0]), c.mpc(state[1]))
        if out is None:
            raise ConvergenceError(f"subordination Newton failed at z = {complex(zc)} ({dps} digits)",
                                   point=complex(zc), dps=dps)
        results.append(out)
    (w1, w2, g1, res, its), (_, _, g1b, _, _) = results
    tol = context(work).mpf(10) ** (-dps - 1)
    if abs(g1 - g1b) > tol * abs(g1) or res > tol * max(1, abs(g1)):
        raise ConvergenceError(
            f"subordination at z = {complex(zc)} is not stable to {dps} digits", point=complex(zc),
            residual=float(res), dps=dps,
        )
    if zc.imag > 0 and not g1.imag < 0:
        raise ConvergenceError(f"subordination: Im G >= 0 at z = {complex(zc)}", point=complex(zc))
    out = context(dps)
    return SubordinationResult(out.mpc(zc), out.mpc(w1), out.mpc(w2), out.mpc(g1), out.mpf(res),
                               its, dps)
