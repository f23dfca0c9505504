"""The proportional limit: powers of ``N`` and normalized coefficients.

Every Gaussian ``X`` of variance ``v`` is written ``X = sqrt(v N) X~`` with
``X~`` of entry variance ``1/N``, and every dimension ``s`` as ``s = rho_s N``.
A monomial of degree ``k`` then carries ``N^(k/2)`` from its leaves times the
power of ``N`` of its scalar coefficient; it must be ``N^0`` (docs/math.md §2).
After this step a dimension symbol appearing in a coefficient stands for its
ratio ``rho_s``.
"""

from functools import lru_cache

import sympy

from .._errors import ScalingError
from ..expr.tree import Inverse, Matrix, Product, Scaled, Sum, Transpose, expand, word_str

__all__ = ["leading_term", "Normalization", "normalize"]

_N = sympy.Symbol("N", positive=True)
_t = sympy.Symbol("t", positive=True)


def leading_term(c, dimensions):
    """Leading behaviour ``c ~ a N^q`` of a scalar as all dimensions grow.

    Returns ``(a, q)`` where ``a`` is an expression in the ratios (written
    with the dimension symbols) and parameters, and ``q`` a sympy Rational.

    >>> import sympy
    >>> n, beta = sympy.symbols("n beta", positive=True)
    >>> leading_term(beta / sympy.sqrt(n), [n])
    (beta/sqrt(n), -1/2)
    >>> leading_term(1 + 1/n, [n])
    (1, 0)
    """
    c = sympy.sympify(c)
    if c == 0:
        return sympy.Integer(0), sympy.oo * -1
    free = c.free_symbols & set(dimensions)
    if not free:
        return c, sympy.Integer(0)
    return _leading_term(c, frozenset(free))


@lru_cache(maxsize=1024)
def _leading_term(c, free):
    """:func:`leading_term` of ``c`` in the dimensions ``free`` it holds (cached: every head of an attention
    model has the same scale factors, and each costs a sympy simplification of about 20 ms)."""
    expr = c.subs({s: s / _t for s in free}, simultaneous=True)
    lt = sympy.simplify(expr.as_leading_term(_t))
    a, k = lt.as_coeff_exponent(_t)
    if a.has(_t) or not k.is_Rational:
        raise ScalingError(
            f"the scalar {c} has no power-law behaviour as the dimensions {sorted(map(str, free))} grow",
            monomial=str(c),
        )
    return sympy.simplify(a), -k


class Normalization:
    """Powers of ``N`` and normalized coefficients of every node of an expression.

    Attributes
    ----------
    coeff : dict
        ``Scaled`` node -> its coefficient in the limit (ratios as symbols).
    leaf_scale : dict
        leaf -> ``sqrt`` of its normalized variance.
    power : dict
        node -> power of ``N``.
    """

    def __init__(self, expr, dimensions):
        self.expr = expr
        self.dimensions = list(dimensions)
        self.coeff = {}
        self.leaf_scale = {}
        self.power = {}
        self._leaf_power = {}
        self._visit(expr)
        root = self.power[expr]
        if root != 0:
            self._raise_monomials(f"the expression {expr}")

    def _visit(self, node):
        if node in self.power:
            return self.power[node]
        if isinstance(node, Matrix):
            if node.kind in ("identity", "deterministic"):  # entries of order one, norm of order one
                self.leaf_scale[node] = sympy.Integer(1)
                q = sympy.Integer(0)
            else:
                a, qv = leading_term(node.variance, self.dimensions)
                self.leaf_scale[node] = sympy.sqrt(a)
                q = sympy.Rational(1, 2) + qv / 2
            self._leaf_power[node] = q
        elif isinstance(node, Scaled):
            a, qc = leading_term(node.coeff, self.dimensions)
            self.coeff[node] = a
            q = qc + self._visit(node.arg)
        elif isinstance(node, Transpose):
            q = self._visit(node.arg)
        elif isinstance(node, Inverse):
            try:
                qa = self._visit(node.arg)
            except ScalingError:
                Normalization(node.arg, self.dimensions)  # names the argument's monomials that do not scale
                raise
            if qa != 0:
                raise ScalingError(
                    f"the argument of {node} scales as N^({qa}) as N grows; an inverse has a limit only when its "
                    f"argument stays of order one (add the missing scale factors, as in X @ X.T / n)",
                    monomial=str(node.arg), power=qa)
            q = sympy.Integer(0)
        elif isinstance(node, Product):
            q = sum((self._visit(f) for f in node.factors), sympy.Integer(0))
        elif isinstance(node, Sum):
            powers = [self._visit(t) for t in node.terms]
            if len(set(powers)) > 1:
                self._raise_monomials(f"the sum {node}")
            q = powers[0]
        else:
            raise TypeError(f"not a matrix expression: {node!r}")
        self.power[node] = q
        return q

    def monomial_power(self, word, coeff):
        _, q = leading_term(coeff, self.dimensions)
        for leaf, _t in word:
            q += self._leaf_q(leaf)
        return q

    def _leaf_q(self, leaf):
        if isinstance(leaf, Inverse) or leaf.kind == "deterministic":
            return sympy.Integer(0)
        _, qv = leading_term(leaf.variance, self.dimensions)
        return sympy.Rational(1, 2) + qv / 2

    def _raise_monomials(self, where):
        try:
            monos = expand(self.expr)
        except ValueError:
            monos = None
        bad = []
        if monos is not None:
            for word, c in monos.items():
                q = self.monomial_power(word, c)
                if q != 0:
                    bad.append((word_str(word, c), q))
        if bad:
            text = "; ".join(f"{m} scales as N^({q})" for m, q in bad[:5])
            more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
            name, q = bad[0]
            raise ScalingError(
                f"not every monomial stays of order one as N grows: {text}{more}. With every Gaussian of "
                f"variance v written as sqrt(v N) times a matrix of entry variance 1/N and every dimension "
                f"as ratio times N, each monomial must scale as N^0; add the missing scale factors "
                f"(for example 1/sqrt(n) per Gaussian factor) or remove the vanishing terms",
                monomial=name,
                power=q,
            )
        q = self.power.get(self.expr)
        raise ScalingError(
            f"{where} does not stay of order one as N grows (power of N: {q}); "
            f"add the missing scale factors, for example 1/sqrt(n) per Gaussian factor",
            monomial=str(self.expr),
            power=q,
        )


def normalize(expr, dimensions):
    """The :class:`Normalization` of ``expr``; raises :class:`ScalingError` if it has no limit."""
    return Normalization(expr, dimensions)
