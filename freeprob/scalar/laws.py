"""Scalar free probability: laws with closed forms, and their transforms.

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

This module holds the base class :class:`ScalarLaw` and the laws known in
closed form (:class:`Semicircle`, :class:`FreePoisson`,
:class:`MarchenkoPastur`, :class:`Atomic`, :class:`Arcsine`). Laws given only
by their polynomial, the free convolutions and subordination live in
:mod:`freeprob.scalar.algebraic`.
"""

import dataclasses
from dataclasses import dataclass
from functools import cached_property

import sympy

from .._errors import DomainError
from .._numbers import read_number, read_scalar
from .._precision import check_dps, context, to_mpc, to_mpf
from .curves import (
    NumericBivariate,
    branch_value,
    choose_factor,
    free_cumulants_from_moments,
    free_multiplicative_moments,
    moments_from_free_cumulants,
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
    """An exact sympy parameter (a number, or a formula in symbols): floats are read as the decimal they print as."""
    value = read_scalar(value, what=name)
    if value.is_extended_real is False:
        raise DomainError(f"{name} must be real, got {value}")
    if positive and value.is_positive is False:
        raise DomainError(f"{name} must be positive, got {value}")
    return value


def _point(z, dps):
    """A complex input as an mpc, read exactly (strings by the whitelisted grammar)."""
    kind = type(z).__name__
    if kind in ("mpf", "mpc"):
        return z
    return to_mpc(context(2 * dps + 20), read_number(z, what="the point", real=False))


def _real_point(x, dps):
    """A real input as an mpf, read exactly."""
    x = _point(x, dps)
    if type(x).__name__ == "mpc":
        if x.imag != 0:
            raise DomainError(f"density needs a real point, got {x}")
        return x.real
    return x


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
