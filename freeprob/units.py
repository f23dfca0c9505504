"""Laws solved in units of their own scale.

The solvers work in double precision first (coarse scans, starting points,
plots), and a law whose support lies near ``1e45`` or ``1e-45`` has a density
of about ``1e-45`` or ``1e45`` there: below or above what a double-precision
scan resolves, although every value is a representable number. The
Gaussian-equivalent law of softmax attention at ``beta = 10`` is such a law
(its noise variance is ``exp(beta^2) - 1 - beta^2``, about ``2.7e43``).

Such a law is solved as the law of the same expression divided by a power of
two ``c`` chosen from its scale, and read back exactly. With ``k = c`` for
eigenvalues and ``k = c^2`` for squared singular values, the law ``mu`` of the
model and the law ``mu_1`` of the divided one satisfy

    G(z) = G_1(z / k) / k,   density(x) = density_1(x / k) / k,
    support = k * support_1,  atoms (k x, m),  F(x) = F_1(x / k),

and multiplying or dividing by a power of two is exact in binary floating
point, so no digit is lost in the conversion. The precision contract
(``10^-dps`` relative to ``max(1, |value|)``) is kept by asking the divided law
for more digits where the conversion would otherwise loosen it: values of
``G`` and the density when ``k < 1``, support edges smaller than one in
units when ``k > 1``.

:class:`InUnits` holds the divided law and converts; :class:`~freeprob.law.SpectralLaw`
hands its numeric questions to it when :func:`unit_for` says the scale calls for it.
"""

import dataclasses
import math

import mpmath
import numpy as np
import sympy

from ._numbers import read_number
from ._precision import check_dps, context, guard_digits, to_mpc, to_mpf
from .expr.tree import Inverse, Matrix, Product, Scaled, Sum, Transpose

__all__ = ["LOG2_SCALE_LIMIT", "InUnits", "divided_expression", "unit_for"]

#: A law whose scale bound lies outside ``[2^-L, 2^L]`` is solved in units of
#: its scale. Inside, the double-precision scans resolve the density directly
#: (measured: attention at beta = 3, scale 6e4, takes 1.7 s; at beta = 4,
#: scale 6.5e7, 78 s; at beta = 5 the support scan failed).
LOG2_SCALE_LIMIT = 10


def unit_for(log2_size, law):
    """The exponent ``e`` of the unit ``c = 2^e`` for a law whose values are of size ``2^log2_size``, or 0.

    ``law`` is ``"eigenvalues"`` (``k = c``) or ``"squared-singular-values"`` (``k = c^2``).
    The size is the law's typical size (``sqrt(m_2)`` or ``m_1``), not a bound of its
    support: a loose bound (25238 for a 64-head attention law supported in
    ``[0, 5.2]``) would move a law that needs no unit.
    """
    if log2_size is None or not math.isfinite(log2_size) or abs(log2_size) <= LOG2_SCALE_LIMIT:
        return 0
    if abs(log2_size) > 996:  # beyond double precision (1e300) even in units: the law refuses its scale
        return 0
    return round(log2_size) if law == "eigenvalues" else round(log2_size / 2)


#: Node types the divided expression may rebalance (an entrywise or kernel node reads the entry
#: variance of its argument, and is left as it is).
_POLYNOMIAL = (Matrix, Sum, Product, Scaled, Transpose, Inverse)


def divided_expression(expr, values, exponent):
    """``expr / 2^exponent``, with each random leaf's variance brought near one.

    A Gaussian or Wigner leaf of variance ``v`` (at the exact ``values``) becomes
    ``2^f X'`` with ``X'`` of variance ``v / 4^f`` and ``4^f`` the power of four
    nearest ``v``: the same matrix, with its size carried by a scalar, which the
    reduction collects with the others (a variance of ``1e40`` inside the Dyson
    system makes its unknowns differ by ``1e20``; a scalar ``2^66`` in front
    does not). Expressions with entrywise or kernel nodes are only divided.
    """
    if _polynomial(expr):
        expr = _balanced(expr, values)
    return Scaled.of(sympy.Integer(2) ** (-exponent), expr)


def _polynomial(node):
    return type(node) in _POLYNOMIAL and all(_polynomial(c) for c in node.children())


def _balanced(node, values):
    kind = type(node)
    if kind is Matrix:
        if node.kind not in ("gaussian", "wigner"):
            return node
        v = sympy.sympify(node.variance).subs(values)
        if not (v.is_number and v.is_positive):
            return node
        f = int(mpmath.nint(mpmath.log(mpmath.mpf(sympy.N(v, 20)), 4)))
        if f == 0:
            return node
        return Scaled.of(sympy.Integer(2) ** f, dataclasses.replace(node, variance=node.variance / sympy.Integer(4) ** f))
    if kind is Sum:
        return Sum(tuple(_balanced(t, values) for t in node.terms))
    if kind is Product:  # the factors' scalars in front of the product, where the reduction meets them once
        coeff, factors = sympy.Integer(1), []
        for f in node.factors:
            f = _balanced(f, values)
            if type(f) is Scaled:
                coeff, f = coeff * f.coeff, f.arg
            factors.append(f)
        return Scaled.of(coeff, Product(tuple(factors))) if coeff != 1 else Product(tuple(factors))
    arg = _balanced(node.arg, values)
    if kind is Transpose and type(arg) is Scaled:
        return Scaled.of(arg.coeff, Transpose.of(arg.arg))
    return dataclasses.replace(node, arg=arg)  # Scaled, Transpose, Inverse


def _digits(k):
    """Decimal digits lost when a quantity is multiplied by ``k`` (``k > 1``), else 0."""
    return max(0, math.ceil(math.log10(k))) if k > 1 else 0


class InUnits:
    """The numeric side of a law answered by the law ``inner`` of the model divided by ``2^e``.

    ``inner`` is a :class:`~freeprob.law.SpectralLaw` of the divided expression;
    every method here takes and returns values in the model's own units.
    """

    def __init__(self, inner, exponent):
        self.inner = inner
        self.exponent = exponent
        power = 2 * exponent if inner.law == "squared-singular-values" else exponent
        self.power = power  # k = 2^power
        self.k_float = math.ldexp(1.0, power)

    def __repr__(self):
        return f"InUnits(k=2^{self.power})"

    # -- conversions (exact: powers of two) ------------------------------------
    def _shift(self, ctx, value, power):
        """``value * 2^power`` in the context ``ctx`` (exact), for an mpf or an mpc."""
        if hasattr(value, "_mpc_"):  # an mpc of any context
            return ctx.mpc(ctx.ldexp(value.real, power), ctx.ldexp(value.imag, power))
        return ctx.ldexp(value, power)

    def _down(self, ctx, value):
        """``value / k``."""
        return self._shift(ctx, value, -self.power)

    def _up(self, ctx, value):
        """``value * k``."""
        return self._shift(ctx, value, self.power)

    def _value_digits(self, dps):
        """Digits to ask the divided law for, so that ``G = G_1/k`` keeps ``dps`` digits relative to ``max(1, |G|)``."""
        return dps + (_digits(1 / self.k_float) if self.power < 0 else 0)

    # -- double precision ---------------------------------------------------------
    def cauchy_fast(self, z):
        z = np.atleast_1d(np.asarray(z, dtype=complex))
        return np.ldexp(1.0, -self.power) * self.inner.cauchy_fast(z * math.ldexp(1.0, -self.power))

    def density_fast(self, x):
        x = np.atleast_1d(np.asarray(x, dtype=float))
        return np.ldexp(self.inner.density_fast(np.ldexp(x, -self.power)), -self.power)

    def support_fast(self, grid, rel):
        return [(math.ldexp(a, self.power), math.ldexp(b, self.power)) for a, b in self.inner.support_fast(grid, rel)]

    # -- arbitrary precision --------------------------------------------------------
    def cauchy(self, z, dps, method):
        if dps is None:
            g = self.inner.cauchy(complex(to_mpc(context(20), z)) * math.ldexp(1.0, -self.power), method=method)
            return complex(g) * math.ldexp(1.0, -self.power)
        dps = check_dps(dps)
        inner_dps = self._value_digits(dps)
        ctx = context(inner_dps + guard_digits(inner_dps))
        g = self.inner.cauchy(self._down(ctx, to_mpc(ctx, z)), dps=inner_dps, method=method)
        return self._down(ctx, g)

    def density(self, x, dps, method):
        if dps is None:
            x = float(to_mpf(context(20), x))
            return math.ldexp(float(self.inner.density(math.ldexp(x, -self.power), method=method)), -self.power)
        dps = check_dps(dps)
        inner_dps = self._value_digits(dps)
        ctx = context(inner_dps + guard_digits(inner_dps))
        return self._down(ctx, self.inner.density(self._down(ctx, to_mpf(ctx, x)), dps=inner_dps, method=method))

    def density_and_cauchy(self, x, dps):
        dps = check_dps(dps)
        inner_dps = self._value_digits(dps)
        ctx = context(inner_dps + guard_digits(inner_dps))
        d, g = self.inner.density_and_cauchy(self._down(ctx, to_mpf(ctx, x)), inner_dps)
        return self._down(ctx, d), (None if g is None else self._down(ctx, g))

    def support(self, dps, grid, method):
        """Edges ``k * a`` to ``dps`` digits relative to ``max(1, |k a|)``: an edge below one in units loses
        ``log10(1/|a|)`` digits in that contract when ``k > 1``, so the support is asked again with those digits."""
        dps = check_dps(dps)
        inner_dps = dps
        for _ in range(2):
            out = self.inner.support(dps=inner_dps, grid=grid, method=method)
            small = [abs(e) for iv in out for e in iv if e != 0 and abs(e) < 1]
            need = dps + (_digits(1 / float(min(small))) if small and self.power > 0 else 0)
            if need <= inner_dps:
                break
            inner_dps = check_dps(need)
        ctx = context(inner_dps + guard_digits(inner_dps))
        return [(self._up(ctx, ctx.mpf(a)), self._up(ctx, ctx.mpf(b))) for a, b in out]

    def atoms(self, dps, candidates, method):
        """Atoms at ``candidates`` (model units; None: every atom): the masses do not change with units, the locations scale exactly."""
        dps = check_dps(dps)
        ctx = context(dps + guard_digits(dps))
        down = sympy.Integer(2) ** (-self.power)
        inner = None if candidates is None else [read_number(x, what="atom candidate") * down for x in candidates]
        out = self.inner.atoms(dps=dps, candidates=inner, method=method)
        return [(self._up(ctx, ctx.mpf(x)), m) for x, m in out]

    def cdf_function(self, nodes, atoms, grid):
        table = self.inner.cdf_function(
            nodes=nodes, grid=grid,
            atoms=None if atoms is None else [(math.ldexp(float(x), -self.power), float(m)) for x, m in atoms])
        return table.scaled(self.power)
