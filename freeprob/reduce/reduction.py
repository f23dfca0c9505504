"""From an expression to its reduced Dyson system: the symbolic pipeline.

:class:`Reduction` runs, once per expression and law kind, the steps of
docs/math.md §3 with the ratios and parameters kept as symbols: normalization
(scaling check), symmetry check, linear pencil, self-adjoint pencil,
covariance map and the reduced Dyson system. Numbers enter later, in
:mod:`freeprob.law`.
"""

import sympy

from .blocks import check_blocks, has_blocks, refine
from .dyson import dyson_system
from .exchange import canonical_groups, head_structure, witness_expression
from .._errors import DomainError, NotSelfAdjointError
from ..expr.haar import has_haar, rotate
from ..expr.entrywise import equivalence_report
from ..expr.tree import LAWS, Expr, Product, Scaled, Transpose, expand, transpose_word, word_str
from .inverse import has_inverse, inverse_conditions
from .pencil import hermitization, linearize, symmetric_pencil
from .quotient import QuotientError, quotient
from .scaling import normalize

__all__ = ["LAWS", "Reduction", "check_symmetric", "gram_factor", "strip_scalar"]



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


def strip_scalar(node):
    """``(c, M)`` with ``node = c M`` and ``M`` not a scaled expression."""
    coeff = sympy.Integer(1)
    while isinstance(node, Scaled):
        coeff, node = coeff * node.coeff, node.arg
    return coeff, node


def gram_factor(expr):
    """``(c, F)`` with ``expr = c F F^T`` and ``F`` a product of the first half of ``expr``'s factors, or
    ``(None, None)``.

    ``expr`` is a product of ``2k`` factors (each possibly scaled) whose second half is the transpose of
    the first, read backwards: ``X X^T / n``, ``T^T T``, ``S X X^T S`` with a symmetric ``S``.

    >>> import freeprob as fp
    >>> n, p = fp.dims("n p")
    >>> X = fp.gaussian("X", (n, p))
    >>> gram_factor(X @ X.T / n)
    (1/n, Matrix('X', (n, p), kind='gaussian', variance=1))
    >>> gram_factor(X @ X.T + X @ X.T)
    (None, None)
    """
    coeff, node = strip_scalar(expr)
    if not isinstance(node, Product) or len(node.factors) % 2:
        return None, None
    factors = []
    for f in node.factors:
        c, f = strip_scalar(f)
        coeff, factors = coeff * c, factors + [f]
    k = len(factors) // 2
    if any(Transpose.of(factors[k - 1 - i]) != factors[k + i] for i in range(k)):
        return None, None
    return coeff, (factors[0] if k == 1 else Product(tuple(factors[:k])))


class Reduction:
    """The symbolic reduction of ``expr`` for the law ``kind``.

    Parameters
    ----------
    expr : Expr
    kind : {"eigenvalues", "squared-singular-values"}
    dimensions : tuple of Symbol
    symmetry : bool or tuple of tuple of int, optional
        Use the symmetry quotient when ``expr`` is a sum of exchangeable
        terms (default True). The quotient is built from a witness of at most
        four terms and verified exactly (:mod:`freeprob.reduce.quotient`);
        when the check fails, the full system is used and the reason recorded.
        A partition of the term indices *declares* the groups (as the
        attention builder does); the structure detected on every term must
        then be that partition, else the full system is used.
    gram : bool, optional
        Reduce the eigenvalues of a Gram matrix ``c F F^T`` as the squared
        singular values of ``sqrt(c) F`` (default True; see ``kind``).

    Attributes
    ----------
    kind : {"eigenvalues", "squared-singular-values"}
        The law the system is solved as: the one asked for, or squared
        singular values when the eigenvalues of a Gram matrix ``c F F^T``
        (``c > 0``) were asked for; the system is then that of ``sqrt(c) F``
        (:func:`gram_factor`), whose squared singular values are the same law.
    gram : Expr or None
        That ``sqrt(c) F``, or None.
    system : DysonSystem
        The reduced system (the quotient when one was verified).
    structure : HeadStructure or None
        The exchangeable terms the quotient used, or None.
    symmetry_note : str
        What happened: the quotient used, or why not.
    normalization, pencil, self_adjoint
        Of the expression reduced: the witness when the quotient was used.
    equivalence : EquivalenceReport
        The entrywise functions of ``expr``, each reduced as its Gaussian
        equivalent (the node's terms), with their coefficients and the
        rank-one outliers ``mu0 1 1^T`` that are not part of the law
        (:mod:`freeprob.expr.entrywise`); empty without entrywise functions.
    """

    def __init__(self, expr, kind, dimensions, symmetry=True, gram=True):
        if not isinstance(expr, Expr):
            raise TypeError(f"expected a matrix expression, got {expr!r}")
        if kind not in LAWS:
            raise ValueError(f"law must be one of {LAWS}, got {kind!r}")
        self.expr = expr
        self.kind = kind
        self.gram = None
        self.dimensions = tuple(dimensions)
        self.equivalence = equivalence_report(expr)
        if has_blocks(expr):
            check_blocks(expr)
        if kind == "eigenvalues":
            check_symmetric(expr)
            # the eigenvalues of c F F^T (c > 0) are the squared singular values of sqrt(c) F, whose
            # hermitization is a smaller system than the symmetric pencil of the product (a Gaussian with
            # a variance profile on 2 x 2 cells: 6 unknowns instead of 18; X X^T / n: 2 instead of 6)
            coeff, factor = gram_factor(expr)
            # a coefficient in the dimensions only: their ratios are positive (a parameter's value, and so its
            # sign, is not known here)
            coeff = sympy.sympify(coeff)
            if (gram and factor is not None and coeff.is_positive and coeff.free_symbols <= set(self.dimensions)
                    and not has_haar(expr)):
                normalize(expr, self.dimensions)  # a scaling error names the expression given, not its factor
                expr, self.kind = Scaled.of(sympy.sqrt(coeff), factor), "squared-singular-values"
                self.gram = expr
        # Haar rotations O D O^T become b_1 I + (b_2 - b_1) Q, Q a random projection written with a fresh
        # Gaussian and an inverse (freeprob.expr.haar); the projections' ranks are new dimensions w n
        self.rotation_ratios = {}
        if has_haar(expr):
            expr, self.rotation_ratios = rotate(expr)
            self.dimensions += tuple(self.rotation_ratios)
        self.structure = None
        self.symmetry_note = "symmetry quotient not asked for"
        if isinstance(symmetry, str) or not (isinstance(symmetry, bool) or hasattr(symmetry, "__iter__")):
            raise DomainError(f"symmetry: expected True, False or groups of term indices such as ((0, 1), (2, 3)), "
                              f"got {str(symmetry)[:80]!r}")
        self.parts = None
        if symmetry and has_inverse(expr):
            self.symmetry_note = "no symmetry quotient: the expression contains an inverse (reduced in full)"
        elif symmetry:
            structure, why = head_structure(expr)
            if structure is not None and symmetry is not True:
                declared = canonical_groups(symmetry, structure.heads)
                if declared != structure.groups:
                    structure, why = None, (f"the declared groups {declared} differ from the groups "
                                            f"{structure.groups} found in the expression")
            if structure is None or structure.heads < 2:
                self.symmetry_note = f"no symmetry quotient: {why or 'a single term'}"
            else:
                try:
                    self._reduce_quotient(structure)
                    return
                except QuotientError as exc:
                    self.symmetry_note = f"no symmetry quotient ({structure.describe()}): {exc}"
        self.system = self._reduce(expr)
        if self.rotation_ratios:  # a projection's rank is w n: the system in the model's own dimensions
            self.system = self.system.subs(self.rotation_ratios)

    def _reduce(self, expr):
        self.normalization = normalize(expr, self.dimensions)
        self.pencil = linearize(expr, self.normalization)
        if self.kind == "eigenvalues":
            self.self_adjoint = symmetric_pencil(self.pencil, expr.shape)
        else:
            self.self_adjoint = hermitization(self.pencil, expr.shape)
        m = self.pencil.size
        nu = self.self_adjoint.n_u

        def pair_of(i):
            if i < nu:
                return None
            return i + m if i < nu + m else i - m

        if has_blocks(expr):
            self.parts = refine(self.self_adjoint, expr, pair_of)
            system = dyson_system(self.parts.pencil, self.parts.ratio_of, self.parts.pair_of, self.parts.block_of)
        else:
            system = dyson_system(self.self_adjoint, lambda s: s, pair_of)
        return system.with_conditions(inverse_conditions(expr, self.normalization))

    def _reduce_quotient(self, structure):
        """Reduce the witness of ``structure`` and quotient it (raises QuotientError)."""
        witness = witness_expression(structure)
        system = self._reduce(witness)
        spans = []  # (start, stop, slot) of each witness term in the linear pencil
        start = 0
        for slot, t in structure.witness_slots():
            size = linearize(structure.terms[t], self.normalization).size
            spans.append((start, start + size, slot))
            start += size
        m, nu = self.pencil.size, self.self_adjoint.n_u
        if start != m:
            raise QuotientError(f"the witness pencil has {m} rows, its terms {start}")

        def term_row(r):  # a row of the self-adjoint pencil -> None (shared) or (slot, key)
            if r < nu:
                return None
            half, q = divmod(r - nu, m)
            for lo, hi, slot in spans:
                if lo <= q < hi:
                    return slot, (half, q - lo)
            raise QuotientError(f"pencil row {r} belongs to no term")

        if self.parts is None:
            row_of, pencil = term_row, self.self_adjoint
        else:
            # deterministic matrices or profiles split every row into parts of its dimension: a refined row
            # is (row, part), shared when its row is, else of the row's term with the part added to its key
            def row_of(r):
                i, k = self.parts.origin_of(r)
                lab = term_row(i)
                return None if lab is None else (lab[0], lab[1] + (k,))

            pencil = self.parts.pencil
        const = {}
        for i, j, c in pencil.const:
            const[(i, j)] = const.get((i, j), 0) + c

        self.system = quotient(system, row_of, structure.heads, structure.per_group,
                               lambda a, b: const.get((a, b), 0))
        self.structure = structure
        self.symmetry_note = (f"symmetry quotient: {structure.describe()}; witness of "
                              f"{len(structure.witness_slots())} terms verified exactly")
