"""From an expression to its reduced Dyson system: the symbolic pipeline.

:class:`Reduction` runs, once per expression and law kind, the steps of
docs/math.md §3 with the ratios and parameters kept as symbols: normalization
(scaling check), symmetry check, linear pencil, self-adjoint pencil,
covariance map and the reduced Dyson system. Numbers enter later, in
:mod:`freeprob.law`.
"""

import sympy

from .dyson import dyson_system
from .._errors import NotSelfAdjointError
from ..expr.tree import LAWS, Expr, expand, transpose_word, word_str
from .pencil import hermitization, linearize, symmetric_pencil
from .scaling import normalize

__all__ = ["LAWS", "Reduction", "check_symmetric"]



def check_symmetric(expr):
    """Raise :class:`NotSelfAdjointError` unless ``expr`` equals its transpose as a polynomial."""
    a, b = expr.shape
    if a != b:
        raise NotSelfAdjointError(
            f"eigenvalues were asked for {expr}, of shape ({a}, {b}), which is not square; "
            f"ask for the squared-singular-value law instead"
        )
    monos = expand(expr)
    diff = dict(monos)
    for w, c in monos.items():
        tw = transpose_word(w)
        diff[tw] = diff.get(tw, 0) - c
    bad = [(w, sympy.simplify(c)) for w, c in diff.items() if sympy.simplify(c) != 0]
    if bad:
        w, c = bad[0]
        raise NotSelfAdjointError(
            f"eigenvalues were asked for {expr}, which is not symmetric: H - H^T contains "
            f"{word_str(w, c)}; symmetrize it (for example P + P.T) or ask for the "
            f"squared-singular-value law"
        )


class Reduction:
    """The symbolic reduction of ``expr`` for the law ``kind``.

    Attributes
    ----------
    normalization, pencil, self_adjoint, system
    """

    def __init__(self, expr, kind, dimensions):
        if not isinstance(expr, Expr):
            raise TypeError(f"expected a matrix expression, got {expr!r}")
        if kind not in LAWS:
            raise ValueError(f"law must be one of {LAWS}, got {kind!r}")
        self.expr = expr
        self.kind = kind
        self.dimensions = tuple(dimensions)
        if kind == "eigenvalues":
            check_symmetric(expr)
        self.normalization = normalize(expr, self.dimensions)
        self.pencil = linearize(expr, self.normalization)
        if kind == "eigenvalues":
            self.self_adjoint = symmetric_pencil(self.pencil, expr.shape)
        else:
            self.self_adjoint = hermitization(self.pencil, expr.shape)
        m = self.pencil.size
        nu = self.self_adjoint.n_u

        def pair_of(i):
            if i < nu:
                return None
            return i + m if i < nu + m else i - m

        self.system = dyson_system(self.self_adjoint, lambda s: s, pair_of)
