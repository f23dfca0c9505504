"""Scalar free probability: laws, transforms and free convolutions.

A *law* is a probability measure on the real line known through its Cauchy
transform ``G(z) = ∫ dμ(x)/(z - x)``. Every law here is a frozen value that
exposes

* ``cauchy_equation()``: a polynomial ``Π(g, z)`` (sympy ``Poly`` in the law's
  ``symbols``) with ``Π(G(z), z) = 0``; ``G`` is its branch with
  ``G(z) ~ 1/z`` at infinity;
* ``cauchy(z, dps)``, ``density(x, dps)``: mpmath values at ``dps`` digits
  (``Im G < 0`` for ``Im z > 0``; on the real axis the boundary value
  ``G(x + i0)``, and ``ρ(x) = -Im G(x + i0)/π``);
* ``moments(k)``, ``free_cumulants(k)``: exact ``(m_1..m_k)``, ``(κ_1..κ_k)``;
* ``r_transform()``, ``s_transform()``: sympy expressions, or the polynomial
  relation they satisfy when they are not rational.

Conventions: ``R`` is defined by ``R(G(z)) + 1/G(z) = z``, so
``R(w) = Σ_{n>=0} κ_{n+1} w^n``. With ``ψ(u) = Σ_{k>=1} m_k u^k``,
``χ = ψ^{-1}``, the S-transform is ``S(w) = χ(w) (1 + w)/w``; then
``R_{μ⊞ν} = R_μ + R_ν`` and ``S_{μ⊠ν} = S_μ S_ν``.

The free convolutions return an :class:`AlgebraicLaw` whose polynomial is
eliminated from the transform relations by resultants; the factor kept is the
one that admits the exact series of the convolution at infinity, recorded in
its ``elimination`` attribute.
"""

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property

import sympy

from ._errors import ConvergenceError, DomainError, EliminationError
from ._precision import check_dps, context, guard_digits, to_mpc, to_mpf
from ._scalar_ops import (
    NumericBivariate,
    at_infinity,
    branch_value,
    cauchy_derivative,
    choose_factor,
    free_cumulants_from_moments,
    free_multiplicative_moments,
    moments_at_infinity,
    moments_from_free_cumulants,
    real_roots_exact,
    s_transform_series,
    vanishing_order,
)

__all__ = [
    "ScalarLaw",
    "Semicircle",
    "MarchenkoPastur",
    "FreePoisson",
    "Atomic",
    "Arcsine",
    "AlgebraicLaw",
    "EliminationRecord",
    "SubordinationResult",
    "free_additive_convolution",
    "free_multiplicative_convolution",
    "subordination",
    "moments_from_free_cumulants",
    "free_cumulants_from_moments",
    "free_multiplicative_moments",
]

G_SYMBOL, Z_SYMBOL = sympy.symbols("g z")
_W = sympy.Symbol("w")
_R = sympy.Symbol("R")
_S = sympy.Symbol("S")
_NUMERIC_MOMENTS = 8


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def _param(value, name, positive=False):
    """An exact sympy parameter: floats are read as the decimal they print as."""
    if isinstance(value, float):
        value = sympy.Rational(repr(value))
    value = sympy.sympify(value)
    floats = value.atoms(sympy.Float)
    if floats:
        value = value.xreplace({f: sympy.Rational(str(f)) for f in floats})
    if value.is_extended_real is False:
        raise DomainError(f"{name} must be real, got {value}")
    if positive and value.is_positive is False:
        raise DomainError(f"{name} must be positive, got {value}")
    return value


def _point(z, dps):
    """A complex input; decimal strings are read at ``2 dps + 20`` digits, other inputs kept exact."""
    if isinstance(z, str):
        return context(2 * dps + 20).mpmathify(z.replace(" ", ""))
    return z


def _real_point(x, dps):
    """A real input as an mpf (exact for numbers; strings read at ``2 dps + 20`` digits)."""
    x = _point(x, dps)
    kind = type(x).__name__
    if kind == "mpf":
        return x
    if isinstance(x, complex) or kind == "mpc":
        if x.imag != 0:
            raise DomainError(f"density needs a real point, got {x}")
        return x.real
    ctx = context(2 * dps + 20)
    if isinstance(x, (int, float)):
        return ctx.mpf(x)
    value = sympy.sympify(x)
    if value.is_extended_real is False:
        raise DomainError(f"density needs a real point, got {x}")
    return to_mpf(ctx, value)


def _num(ctx, value, name):
    value = sympy.sympify(value)
    if value.free_symbols:
        raise DomainError(
            f"{name} = {value} is symbolic; substitute numbers (law.subs({{...}})) first"
        )
    return to_mpf(ctx, value)


def _check_k(k):
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise DomainError(f"the number of moments must be a non-negative integer, got {k!r}")
    return k


def _narayana_sum(n, x):
    """``Σ_{k=1}^n N(n, k) x^k`` with Narayana numbers ``N(n, k) = C(n,k) C(n,k-1)/n``."""
    return sum(
        sympy.binomial(n, k) * sympy.binomial(n, k - 1) / n * x**k for k in range(1, n + 1)
    )


def _normalized(poly):
    """Primitive polynomial with a positive leading coefficient when its sign is known."""
    poly = poly.primitive()[1] if poly.domain.is_ZZ or poly.domain.is_QQ else poly
    if poly.LC().is_negative:
        poly = -poly
    return poly


def _exact_sign(value):
    value = sympy.simplify(value)
    if value.is_zero:
        return 0
    if value.is_positive:
        return 1
    if value.is_negative:
        return -1
    return None


# --------------------------------------------------------------------------
# the base class
# --------------------------------------------------------------------------

class ScalarLaw:
    """Behaviour shared by every law; subclasses are frozen dataclasses.

    Subclasses provide ``cauchy_equation()`` and ``moments(k)``, and
    optionally closed forms ``_closed_cauchy``, ``_closed_density``,
    ``_closed_r`` and ``_closed_s``.
    """

    _has_closed_form = True

    @property
    def symbols(self):
        """The symbols ``(g, z)`` of :meth:`cauchy_equation`."""
        return (G_SYMBOL, Z_SYMBOL)

    @property
    def parameters(self):
        """Free symbolic parameters of the law (a frozenset, empty for a numeric law)."""
        return frozenset(self.cauchy_equation().free_symbols - set(self.symbols))

    def cauchy_equation(self):  # pragma: no cover - abstract
        """The polynomial ``Π(g, z)`` with ``Π(G(z), z) = 0``."""
        raise NotImplementedError

    def moments(self, k):  # pragma: no cover - abstract
        """Exact moments ``(m_1, ..., m_k)``."""
        raise NotImplementedError

    def free_cumulants(self, k):
        """Exact free cumulants ``(κ_1, ..., κ_k)``."""
        k = _check_k(k)
        return free_cumulants_from_moments(self.moments(k)) if k else ()

    def subs(self, *args, **kwargs):
        """The same law with parameters substituted (arguments as for ``sympy.Basic.subs``)."""
        changes = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                changes[f.name] = tuple(sympy.sympify(v).subs(*args, **kwargs) for v in value)
            elif isinstance(value, sympy.Basic):
                changes[f.name] = value.subs(*args, **kwargs)
        return dataclasses.replace(self, **changes)

    def nonnegative(self):
        """True if the law lives on ``[0, ∞)``, False if not, None if undecided."""
        return None

    # ---- numerics ---------------------------------------------------------
    @cached_property
    def _numeric(self):
        g, z = self.symbols
        return NumericBivariate(self.cauchy_equation(), g, z, self.moments(_NUMERIC_MOMENTS))

    def _method(self, method, extra=()):
        allowed = ("closed", "polynomial") + tuple(extra)
        if method is None:
            return "closed" if self._has_closed_form else "polynomial"
        if method not in allowed or (method == "closed" and not self._has_closed_form):
            raise DomainError(
                f"method must be one of {[m for m in allowed if m != 'closed' or self._has_closed_form]}"
                f" for {type(self).__name__}, got {method!r}"
            )
        return method

    def cauchy(self, z, dps=15, method=None):
        """Cauchy transform ``G(z)`` at ``dps`` digits.

        Parameters
        ----------
        z : complex, mpc, str or sympy number
            The point; real ``z`` gives the boundary value ``G(z + i0)``.
        dps : int
            Decimal digits of the result.
        method : {None, "closed", "polynomial"}
            ``"closed"`` uses the law's closed form, ``"polynomial"`` tracks
            the branch ``g ~ 1/z`` of :meth:`cauchy_equation` from infinity
            and polishes it by Newton's method. None: the closed form if the
            law has one.

        Returns
        -------
        mpc
            In a local mpmath context at ``dps`` digits.

        Raises
        ------
        ConvergenceError
            If the value cannot be certified to ``dps`` digits.
        DomainError
            At an atom (a pole of ``G``), or for symbolic parameters.
        """
        dps = check_dps(dps)
        method = self._method(method, self._extra_methods())
        zc = _point(z, dps)
        if method == "closed":
            ctx = context(dps + 10)
            return context(dps).mpc(self._closed_cauchy(ctx, to_mpc(ctx, zc)))
        if method == "polynomial":
            return branch_value(self._numeric, zc, dps, where=f"the Cauchy transform of {self!r}")
        return self._other_cauchy(zc, dps, method)

    def density(self, x, dps=15, method=None):
        """Density ``ρ(x) = -Im G(x + i0)/π`` of the absolutely continuous part.

        Parameters
        ----------
        x : real number, mpf or str
            The point.
        dps : int
            Decimal digits of the result.
        method : {None, "closed", "polynomial"}
            As for :meth:`cauchy` (``"subordination"`` too for a ⊞ result).

        Returns
        -------
        mpf
            In a local mpmath context at ``dps`` digits; exactly 0 where the
            branch is real (outside the support).

        Raises
        ------
        DomainError
            At an atom or where the density is unbounded.
        ConvergenceError
            If the value cannot be certified (for instance extremely close to
            a support edge).
        """
        dps = check_dps(dps)
        method = self._method(method, self._extra_methods())
        xv = _real_point(x, dps)
        ctx = context(dps + 10)
        if method == "closed":
            return context(dps).mpf(self._closed_density(ctx, ctx.mpf(xv)))
        gval = self.cauchy(xv, dps + 5, method=method)
        return context(dps).mpf(-ctx.im(ctx.mpc(gval)) / ctx.pi)

    def _extra_methods(self):
        return ()

    def _other_cauchy(self, z, dps, method):  # pragma: no cover - overridden
        raise DomainError(f"unknown method {method!r}")

    def support(self, dps=15):
        """Intervals ``((a_1, b_1), ...)`` carrying the density, as mpf pairs at ``dps`` digits."""
        ctx = context(check_dps(dps))
        return tuple((ctx.mpf(_num(context(dps + 10), a, "edge")),
                      ctx.mpf(_num(context(dps + 10), b, "edge")))
                     for a, b in self._support_exact())

    def _support_exact(self):
        return ()

    # ---- transforms -------------------------------------------------------
    def r_transform(self, w=None, relation=False):
        """R-transform ``R(w) = Σ κ_{n+1} w^n`` with ``R(G(z)) + 1/G(z) = z``.

        Returns a sympy expression in ``w`` when one is known (closed form or
        rational); otherwise, or with ``relation=True``, the irreducible
        polynomial relation ``P(R, w) = 0`` (a sympy ``Poly`` in the symbols
        ``R`` and ``w``) that the R-transform satisfies.
        """
        w = _W if w is None else w
        if not relation:
            closed = self._closed_r(w)
            if closed is not None:
                return closed
        g, z = self.symbols
        P = self.cauchy_equation()
        e = P.degree(z)
        expr = sympy.expand(P.as_expr().xreplace({g: w, z: _R + 1 / w}) * w**e)
        cache = {}

        def series(order):
            if order not in cache:
                cache[order] = self.free_cumulants(order)
            return cache[order]

        return self._transform_relation(expr, _R, w, series, relation)

    def s_transform(self, w=None, relation=False):
        """S-transform ``S(w) = χ(w)(1 + w)/w``, ``χ`` the inverse of ``ψ(u) = Σ m_k u^k``.

        Defined for laws with nonzero mean. Returns a sympy expression in
        ``w`` when one is known; otherwise, or with ``relation=True``, the
        irreducible relation ``P(S, w) = 0`` as a sympy ``Poly``.
        """
        w = _W if w is None else w
        m1 = self.moments(1)[0]
        if sympy.simplify(m1) == 0:
            raise DomainError(f"{self!r} has mean zero: its S-transform is not defined")
        if not relation:
            closed = self._closed_s(w)
            if closed is not None:
                return closed
        g, z = self.symbols
        P = self.cauchy_equation()
        e = P.degree(z)
        expr = sympy.expand(P.as_expr().xreplace({g: _S * w, z: (1 + w) / (_S * w)}) * (_S * w)**e)
        cache = {}

        def series(order):
            if order not in cache:
                cache[order] = s_transform_series(self.moments(order))
            return cache[order]

        return self._transform_relation(expr, _S, w, series, relation)

    def _transform_relation(self, expr, y, w, series, relation):
        factors = [f for f, _ in sympy.factor_list(expr)[1] if f.has(y)]

        def check(f, order):
            return vanishing_order(sympy.Poly(f, y, w), y, w, series(order), order)

        idx, _, _ = choose_factor(factors, check)
        F = _normalized(sympy.Poly(factors[idx], y, w))
        if relation or F.degree(y) > 1:
            return F
        a1 = F.as_expr().coeff(y, 1)
        a0 = F.as_expr().coeff(y, 0)
        return sympy.cancel(-a0 / a1)

    def _closed_r(self, w):
        return None

    def _closed_s(self, w):
        return None


# --------------------------------------------------------------------------
# closed-form laws
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Semicircle(ScalarLaw):
    """Wigner's semicircle law with the given variance and mean.

    Density ``sqrt(4σ² - (x - a)²)/(2π σ²)`` on ``[a - 2σ, a + 2σ]``;
    free cumulants ``κ_1 = a``, ``κ_2 = σ²``, all others zero.

    Parameters
    ----------
    variance : positive number or sympy expression
        ``σ²``.
    mean : real number or sympy expression
        ``a``.

    Examples
    --------
    >>> import mpmath
    >>> law = Semicircle()
    >>> mpmath.nstr(law.density(0, dps=20), 15)
    '0.318309886183791'
    >>> law.moments(6)
    (0, 1, 0, 2, 0, 5)
    >>> law.cauchy_equation().as_expr()
    g**2 - g*z + 1
    """

    variance: object = 1
    mean: object = 0

    def __post_init__(self):
        object.__setattr__(self, "variance", _param(self.variance, "variance", positive=True))
        object.__setattr__(self, "mean", _param(self.mean, "mean"))

    def cauchy_equation(self):
        g, z = self.symbols
        return sympy.Poly(self.variance * g**2 - (z - self.mean) * g + 1, g, z)

    def free_cumulants(self, k):
        k = _check_k(k)
        return ((self.mean, self.variance) + (sympy.Integer(0),) * max(0, k - 2))[:k]

    def moments(self, k):
        k = _check_k(k)
        return moments_from_free_cumulants(self.free_cumulants(k)) if k else ()

    def nonnegative(self):
        return sympy.ask(sympy.Q.nonnegative(self.mean - 2 * sympy.sqrt(self.variance)))

    def _support_exact(self):
        r = 2 * sympy.sqrt(self.variance)
        return ((self.mean - r, self.mean + r),)

    def _closed_r(self, w):
        return self.mean + self.variance * w

    def _closed_cauchy(self, ctx, z):
        a = _num(ctx, self.mean, "mean")
        s = _num(ctx, self.variance, "variance")
        r = 2 * ctx.sqrt(s)
        root = ctx.sqrt(z - a - r) * ctx.sqrt(z - a + r)
        return 2 / (z - a + root)

    def _closed_density(self, ctx, x):
        a = _num(ctx, self.mean, "mean")
        s = _num(ctx, self.variance, "variance")
        d = 4 * s - (x - a) ** 2
        return ctx.sqrt(d) / (2 * ctx.pi * s) if d > 0 else ctx.zero


@dataclass(frozen=True)
class FreePoisson(ScalarLaw):
    """Free Poisson law of rate ``λ`` and jump size ``α > 0``.

    Free cumulants ``κ_n = λ α^n``; support ``[α(1 - √λ)², α(1 + √λ)²]``
    with density ``sqrt((a_+ - x)(x - a_-))/(2π α x)``, plus an atom at 0 of
    mass ``1 - λ`` when ``λ < 1``. Moments are Narayana polynomials,
    ``m_n = α^n Σ_k N(n, k) λ^k``.

    Examples
    --------
    >>> FreePoisson(2).moments(3)
    (2, 6, 22)
    >>> FreePoisson(sympy.Symbol('lam')).free_cumulants(2)
    (lam, lam)
    """

    rate: object
    jump: object = 1

    def __post_init__(self):
        object.__setattr__(self, "rate", _param(self.rate, "rate", positive=True))
        object.__setattr__(self, "jump", _param(self.jump, "jump", positive=True))

    def cauchy_equation(self):
        g, z = self.symbols
        lam, al = self.rate, self.jump
        return sympy.Poly(al * z * g**2 - (z + al * (1 - lam)) * g + 1, g, z)

    def free_cumulants(self, k):
        k = _check_k(k)
        return tuple(sympy.expand(self.rate * self.jump**n) for n in range(1, k + 1))

    def moments(self, k):
        k = _check_k(k)
        return tuple(sympy.expand(self.jump**n * _narayana_sum(n, self.rate)) for n in range(1, k + 1))

    def nonnegative(self):
        return True

    def atoms(self):
        """``((0, 1 - λ),)`` when ``λ < 1`` (exact), else ``()``."""
        below = sympy.ask(sympy.Q.positive(1 - self.rate))
        if below is None:
            return ((sympy.Integer(0), sympy.Max(0, 1 - self.rate)),)
        return ((sympy.Integer(0), 1 - self.rate),) if below else ()

    def _support_exact(self):
        r = sympy.sqrt(self.rate)
        return ((self.jump * (1 - r) ** 2, self.jump * (1 + r) ** 2),)

    def _closed_r(self, w):
        return self.rate * self.jump / (1 - self.jump * w)

    def _closed_s(self, w):
        return 1 / (self.jump * (w + self.rate))

    def _closed_cauchy(self, ctx, z):
        lam = _num(ctx, self.rate, "rate")
        al = _num(ctx, self.jump, "jump")
        lo, hi = al * (1 - ctx.sqrt(lam)) ** 2, al * (1 + ctx.sqrt(lam)) ** 2
        den = z + al * (1 - lam) + ctx.sqrt(z - lo) * ctx.sqrt(z - hi)
        if den == 0:
            raise DomainError(f"{self!r}: G has a pole at z = {z} (atom or hard edge at 0)")
        return 2 / den

    def _closed_density(self, ctx, x):
        lam = _num(ctx, self.rate, "rate")
        al = _num(ctx, self.jump, "jump")
        lo, hi = al * (1 - ctx.sqrt(lam)) ** 2, al * (1 + ctx.sqrt(lam)) ** 2
        if x == 0 and lam <= 1:
            raise DomainError(
                f"{self!r} has {'an atom' if lam < 1 else 'an unbounded density'} at x = 0"
            )
        if lo < x < hi:
            return ctx.sqrt((hi - x) * (x - lo)) / (2 * ctx.pi * al * x)
        return ctx.zero


@dataclass(frozen=True)
class MarchenkoPastur(ScalarLaw):
    """Marchenko-Pastur law: eigenvalues of ``X X^T / n``, ``X`` of shape ``p x n``.

    ``X`` has iid ``N(0, variance)`` entries and ``ratio = p/n`` (``p, n -> ∞``).
    This is the free Poisson law of rate ``1/ratio`` and jump
    ``ratio * variance``: free cumulants ``κ_k = ratio^(k-1) variance^k``,
    support ``[v(1 - √c)², v(1 + √c)²]`` (``c = ratio``, ``v = variance``),
    density ``sqrt((a_+ - x)(x - a_-))/(2π c v x)``, and an atom at 0 of mass
    ``1 - 1/ratio`` when ``ratio > 1`` (then ``X X^T`` has rank ``n < p``).
    Moments are Narayana polynomials ``m_k = v^k Σ_j N(k, j) c^(j-1)``.

    Examples
    --------
    >>> c = sympy.Symbol('c')
    >>> MarchenkoPastur(c).moments(3)
    (1, c + 1, c**2 + 3*c + 1)
    >>> MarchenkoPastur(c).s_transform()
    1/(c*w + 1)
    """

    ratio: object
    variance: object = 1

    def __post_init__(self):
        object.__setattr__(self, "ratio", _param(self.ratio, "ratio", positive=True))
        object.__setattr__(self, "variance", _param(self.variance, "variance", positive=True))

    @property
    def free_poisson(self):
        """The same law as a :class:`FreePoisson` (rate ``1/ratio``, jump ``ratio*variance``)."""
        return FreePoisson(1 / self.ratio, self.ratio * self.variance)

    def cauchy_equation(self):
        g, z = self.symbols
        c, v = self.ratio, self.variance
        return sympy.Poly(c * v * z * g**2 - (z + v * (c - 1)) * g + 1, g, z)

    def free_cumulants(self, k):
        k = _check_k(k)
        return tuple(sympy.expand(self.ratio ** (n - 1) * self.variance**n) for n in range(1, k + 1))

    def moments(self, k):
        k = _check_k(k)
        c, v = self.ratio, self.variance
        return tuple(sympy.expand(v**n * _narayana_sum(n, c) / c) for n in range(1, k + 1))

    def nonnegative(self):
        return True

    def atoms(self):
        """``((0, 1 - 1/ratio),)`` when ``ratio > 1`` (exact), else ``()``."""
        return self.free_poisson.atoms()

    def _support_exact(self):
        return self.free_poisson._support_exact()

    def _closed_r(self, w):
        return self.variance / (1 - self.ratio * self.variance * w)

    def _closed_s(self, w):
        return 1 / (self.variance * (1 + self.ratio * w))

    def _closed_cauchy(self, ctx, z):
        return self.free_poisson._closed_cauchy(ctx, z)

    def _closed_density(self, ctx, x):
        return self.free_poisson._closed_density(ctx, x)


@dataclass(frozen=True)
class Atomic(ScalarLaw):
    """A finite atomic law ``Σ_i w_i δ_{x_i}``.

    Its Cauchy transform ``Σ w_i/(z - x_i)`` is rational, so
    ``Π(g, z) = D(z) g - N(z)`` with ``D = Π_i (z - x_i)``. It has no density:
    :meth:`density` is 0 off the atoms and raises at an atom.

    Examples
    --------
    >>> b = Atomic.bernoulli(sympy.Rational(1, 2))
    >>> b.moments(3)
    (1/2, 1/2, 1/2)
    >>> b.cauchy_equation().as_expr()
    g*z**2 - g*z - z + 1/2
    """

    points: tuple
    weights: tuple

    def __post_init__(self):
        pts = tuple(_param(p, "point") for p in self.points)
        wts = tuple(_param(w, "weight", positive=True) for w in self.weights)
        if len(pts) == 0 or len(pts) != len(wts):
            raise DomainError("Atomic needs as many weights as points (at least one)")
        merged = {}
        for p, w in zip(pts, wts):
            merged[p] = merged.get(p, 0) + w
        if len(merged) != len(pts):
            pts, wts = tuple(merged), tuple(merged.values())
        total = _exact_sign(sum(wts) - 1)
        if total is not None and total != 0:
            raise DomainError(f"the weights of Atomic must sum to 1, they sum to {sum(wts)}")
        object.__setattr__(self, "points", pts)
        object.__setattr__(self, "weights", wts)

    @classmethod
    def bernoulli(cls, p, low=0, high=1):
        """Bernoulli law: mass ``1 - p`` at ``low`` and ``p`` at ``high``."""
        p = _param(p, "p")
        return cls((low, high), (1 - p, p))

    def cauchy_equation(self):
        g, z = self.symbols
        den = sympy.prod([z - p for p in self.points])
        pts = self.points
        num = sum(w * sympy.prod([z - q for j, q in enumerate(pts) if j != i])
                  for i, w in enumerate(self.weights))
        return sympy.Poly(den * g - num, g, z)

    def moments(self, k):
        k = _check_k(k)
        return tuple(sympy.expand(sum(w * p**n for p, w in zip(self.points, self.weights)))
                     for n in range(1, k + 1))

    def nonnegative(self):
        return sympy.ask(sympy.Q.nonnegative(sympy.Min(*self.points)))

    def atoms(self):
        """``((x_i, w_i), ...)`` exactly."""
        return tuple(zip(self.points, self.weights))

    def _closed_cauchy(self, ctx, z):
        total = ctx.zero
        for p, w in zip(self.points, self.weights):
            d = z - _num(ctx, p, "point")
            if d == 0:
                raise DomainError(f"{self!r}: z = {z} is an atom (pole of G)")
            total += _num(ctx, w, "weight") / d
        return total

    def _closed_density(self, ctx, x):
        for p in self.points:
            if x == _num(ctx, p, "point"):
                raise DomainError(f"{self!r} has an atom at x = {x}: no density there")
        return ctx.zero


@dataclass(frozen=True)
class Arcsine(ScalarLaw):
    """Arcsine law on ``[a, b]``: density ``1/(π sqrt((x - a)(b - x)))``.

    ``G(z) = 1/sqrt((z - a)(z - b))``, ``Π = (z - a)(z - b) g² - 1``;
    ``R(w) = c + (sqrt(1 + h² w²) - 1)/w`` with ``c = (a + b)/2``,
    ``h = (b - a)/2``.

    Examples
    --------
    >>> Arcsine(0, 2).moments(4)
    (1, 3/2, 5/2, 35/8)
    """

    a: object
    b: object

    def __post_init__(self):
        a, b = _param(self.a, "a"), _param(self.b, "b")
        if (b - a).is_positive is False:
            raise DomainError(f"Arcsine needs a < b, got a = {a}, b = {b}")
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)

    def cauchy_equation(self):
        g, z = self.symbols
        return sympy.Poly((z - self.a) * (z - self.b) * g**2 - 1, g, z)

    def moments(self, k):
        k = _check_k(k)
        c, h = (self.a + self.b) / 2, (self.b - self.a) / 2
        return tuple(
            sympy.expand(sum(sympy.binomial(n, 2 * j) * c ** (n - 2 * j) * h ** (2 * j)
                             * sympy.binomial(2 * j, j) / 4**j for j in range(n // 2 + 1)))
            for n in range(1, k + 1)
        )

    def nonnegative(self):
        return sympy.ask(sympy.Q.nonnegative(self.a))

    def _support_exact(self):
        return ((self.a, self.b),)

    def _closed_r(self, w):
        c, h = (self.a + self.b) / 2, (self.b - self.a) / 2
        return c + (sympy.sqrt(1 + h**2 * w**2) - 1) / w

    def _closed_cauchy(self, ctx, z):
        a, b = _num(ctx, self.a, "a"), _num(ctx, self.b, "b")
        den = ctx.sqrt(z - a) * ctx.sqrt(z - b)
        if den == 0:
            raise DomainError(f"{self!r}: G is unbounded at the edge z = {z}")
        return 1 / den

    def _closed_density(self, ctx, x):
        a, b = _num(ctx, self.a, "a"), _num(ctx, self.b, "b")
        if x == a or x == b:
            raise DomainError(f"{self!r}: the density is unbounded at the edge x = {x}")
        if a < x < b:
            return 1 / (ctx.pi * ctx.sqrt((x - a) * (b - x)))
        return ctx.zero


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
