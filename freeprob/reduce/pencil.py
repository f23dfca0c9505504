"""Automatic linearization (docs/math.md §3.2).

Every polynomial ``P`` in the matrices has a linear pencil ``Q`` with constant
selection vectors ``e``, ``f`` such that ``P = -e^T Q^{-1} f``; it is built
recursively, two pencil rows per leaf. An inverse ``M^{-1}`` borders the
pencil of ``M`` with one row (a Schur complement, :func:`_inverse`), so
rational expressions (inverses inside sums and products, nested) have linear
pencils too. The self-adjoint pencil ``L`` of the
law asked for (eigenvalues of a symmetric ``H``, or squared singular values of
``P`` through its hermitization) is built from ``Q``.

Every pencil index carries the dimension symbol (space) it lives in. Random
entries are ``(i, j, leaf, transposed, coeff)`` meaning ``coeff * X~`` (or its
transpose) at position ``(i, j)``, where ``X~`` is the leaf normalized to
entry variance ``1/N`` and ``coeff`` includes ``sqrt`` of its normalized
variance.
"""

from dataclasses import dataclass

import sympy

from ..expr.tree import Inverse, Matrix, Product, Scaled, Sum, Transpose

__all__ = ["Pencil", "SelfAdjointPencil", "linearize", "hermitization", "symmetric_pencil", "evaluate_pencil"]


@dataclass(frozen=True)
class Pencil:
    """A linear pencil ``Q`` with ``P = -e^T Q^{-1} f``."""

    spaces: tuple
    const: tuple  # ((i, j, coeff), ...)
    rand: tuple  # ((i, j, leaf, transposed, coeff), ...)
    e: tuple  # ((i, coeff), ...)
    f: tuple

    @property
    def size(self):
        return len(self.spaces)

    def matrix(self):
        """Q as a sympy Matrix with noncommutative symbols for the normalized leaves."""
        syms = {}
        m = sympy.zeros(self.size, self.size)
        for i, j, c in self.const:
            m[i, j] += c
        for i, j, leaf, t, c in self.rand:
            key = (leaf.name, t)
            if key not in syms:
                syms[key] = sympy.Symbol(leaf.name + ("^T" if t else ""), commutative=False)
            m[i, j] += c * syms[key]
        return m


def _shift(entries, k, kind):
    if kind == "const":
        return tuple((i + k, j + k, c) for i, j, c in entries)
    if kind == "rand":
        return tuple((i + k, j + k, leaf, t, c) for i, j, leaf, t, c in entries)
    return tuple((i + k, c) for i, c in entries)


def linearize(expr, norm):
    """The pencil of ``expr`` with the normalized coefficients of ``norm``.

    ``norm`` is a :class:`freeprob.reduce.scaling.Normalization` of ``expr``; the
    pencil represents ``N^0`` times the expression with every leaf replaced by
    its normalized version (so it is the limit object).
    """
    cache = {}

    def build(node):
        if node in cache:
            return cache[node]
        if isinstance(node, Matrix):
            a, b = node.shape
            if node.kind == "identity":
                out = Pencil((a,), ((0, 0, sympy.Integer(-1)),), (), ((0, sympy.Integer(1)),), ((0, sympy.Integer(1)),))
            else:
                s = norm.leaf_scale[node]
                out = Pencil(
                    (a, b),
                    ((0, 0, sympy.Integer(-1)), (1, 1, sympy.Integer(-1))),
                    ((0, 1, node, False, s),),
                    ((0, sympy.Integer(1)),),
                    ((1, sympy.Integer(1)),),
                )
        elif isinstance(node, Scaled):
            p = build(node.arg)
            c = norm.coeff[node]
            out = Pencil(p.spaces, p.const, p.rand, tuple((i, c * x) for i, x in p.e), p.f)
        elif isinstance(node, Transpose):
            p = build(node.arg)
            rand = tuple(
                (j, i, leaf, (not t) if leaf.kind == "gaussian" else False, c) for i, j, leaf, t, c in p.rand
            )
            out = Pencil(p.spaces, tuple((j, i, c) for i, j, c in p.const), rand, p.f, p.e)
        elif isinstance(node, Sum):
            out = build(node.terms[0])
            for term in node.terms[1:]:
                q = build(term)
                k = out.size
                out = Pencil(
                    out.spaces + q.spaces,
                    out.const + _shift(q.const, k, "const"),
                    out.rand + _shift(q.rand, k, "rand"),
                    out.e + _shift(q.e, k, "vec"),
                    out.f + _shift(q.f, k, "vec"),
                )
        elif isinstance(node, Product):
            out = build(node.factors[0])
            for factor in node.factors[1:]:
                out = _product(out, build(factor))
        elif isinstance(node, Inverse):
            out = _inverse(build(node.arg), node.shape[0])
        else:
            raise TypeError(f"not a matrix expression: {node!r}")
        cache[node] = out
        return out

    return build(expr)


def _inverse(p, space):
    """Pencil of ``M^{-1}`` from the pencil ``p`` of a square ``M = -e^T Q^{-1} f`` on ``space``.

    The bordered pencil ``Q' = [[0, e^T], [f, Q]]`` has the Schur complement
    ``0 - e^T Q^{-1} f = M`` onto its new first row, so the first diagonal
    block of ``Q'^{-1}`` is ``M^{-1}``: ``e' = (-1, 0)``, ``f' = (1, 0)``.
    The new row has no ``-1`` pivot (it is never merged by :func:`_product`
    and stays an active row of the Dyson system); it lives on ``space``, as
    do the rows ``e`` and ``f`` select.
    """
    border = tuple((0, i + 1, c) for i, c in p.e) + tuple((j + 1, 0, c) for j, c in p.f)
    return Pencil(
        (space,) + p.spaces,
        border + _shift(p.const, 1, "const"),
        _shift(p.rand, 1, "rand"),
        ((0, sympy.Integer(-1)),),
        ((0, sympy.Integer(1)),),
    )


def _terminal(p, vec, side):
    """The index of ``vec`` if it is a single index whose row (side "row") or
    column (side "col") holds only the pivot ``-1``; else None."""
    if len(vec) != 1:
        return None
    t = vec[0][0]
    pos = 0 if side == "row" else 1
    if any(entry[pos] == t for entry in p.rand):
        return None
    for i, j, c in p.const:
        if (i, j)[pos] == t and not (i == j == t and c == -1):
            return None
    if not any(i == j == t and c == -1 for i, j, c in p.const):
        return None
    return t


def _product(a, b):
    """Pencil of ``P1 @ P2``; merges the terminal rows when both are bare pivots.

    In general ``Q = [[Q1, f1 e2^T], [0, Q2]]``. When ``f1`` is one index whose
    row holds only the pivot ``-1`` and ``e2`` one index whose column holds
    only the pivot, the two indices are identified (one row saved per product,
    so a product of ``k`` leaves has ``k + 1`` rows) and the scalars move to ``e``.
    """
    t1 = _terminal(a, a.f, "row")
    s2 = _terminal(b, b.e, "col")
    k = a.size
    if t1 is None or s2 is None:
        coupling = tuple((i, j + k, fi * ej) for i, fi in a.f for j, ej in b.e)
        return Pencil(
            a.spaces + b.spaces,
            a.const + coupling + _shift(b.const, k, "const"),
            a.rand + _shift(b.rand, k, "rand"),
            a.e,
            _shift(b.f, k, "vec"),
        )
    scale = a.f[0][1] * b.e[0][1]

    def mp(j):
        return t1 if j == s2 else k + j - (1 if j > s2 else 0)

    const = tuple(x for x in a.const if x[0] != t1) + tuple((mp(i), mp(j), c) for i, j, c in b.const)
    rand = a.rand + tuple((mp(i), mp(j), leaf, t, c) for i, j, leaf, t, c in b.rand)
    spaces = a.spaces + tuple(s for j, s in enumerate(b.spaces) if j != s2)
    return Pencil(spaces, const, rand, tuple((i, c * scale) for i, c in a.e), tuple((mp(j), c) for j, c in b.f))


def evaluate_pencil(p, matrices, sizes):
    """``-e^T Q^{-1} f`` with numeric matrices (numpy), for tests.

    ``matrices`` maps leaf name -> normalized numeric matrix; ``sizes`` maps
    space -> int.
    """
    import numpy as np

    offs = [0]
    for s in p.spaces:
        offs.append(offs[-1] + sizes[s])
    n = offs[-1]
    big = np.zeros((n, n))
    for i, j, c in p.const:
        big[offs[i]:offs[i + 1], offs[j]:offs[j + 1]] += float(c) * np.eye(sizes[p.spaces[i]])
    for i, j, leaf, t, c in p.rand:
        m = matrices[leaf.name]
        big[offs[i]:offs[i + 1], offs[j]:offs[j + 1]] += float(c) * (m.T if t else m)
    inv = np.linalg.inv(big)
    out = 0
    for i, ci in p.e:
        for j, cj in p.f:
            out = out - float(ci) * float(cj) * inv[offs[i]:offs[i + 1], offs[j]:offs[j + 1]]
    return out


@dataclass(frozen=True)
class SelfAdjointPencil:
    """A self-adjoint pencil ``L`` with ``u`` rows first.

    ``(z - H)^{-1}`` is the block of ``(Lambda - L)^{-1}`` on the ``u`` rows,
    ``Lambda = diag(z, ..., z, 0, ..., 0)``.
    """

    spaces: tuple
    n_u: int
    const: tuple  # ((i, j, coeff), ...) symmetric: both (i, j) and (j, i) present
    rand: tuple  # ((i, j, leaf, transposed, coeff), ...)

    @property
    def size(self):
        return len(self.spaces)


def _double(q):
    """``M = [[0, Q^T], [Q, 0]]`` as entries on ``2m`` indices (offset later)."""
    m = q.size
    const = []
    rand = []
    for i, j, c in q.const:
        const.append((m + i, j, c))  # Q block
        const.append((j, m + i, c))  # Q^T block
    for i, j, leaf, t, c in q.rand:
        rand.append((m + i, j, leaf, t, c))
        rand.append((j, m + i, leaf, (not t) if leaf.kind == "gaussian" else False, c))
    return q.spaces + q.spaces, const, rand


def _assemble(u_spaces, u_links, q):
    """L = [[0, C], [C^T, M]] with C given by ``u_links`` = ((u, index in M, coeff), ...)."""
    nu = len(u_spaces)
    spaces, const, rand = _double(q)
    const = [(i + nu, j + nu, c) for i, j, c in const]
    rand = [(i + nu, j + nu, leaf, t, c) for i, j, leaf, t, c in rand]
    for u, k, c in u_links:
        const.append((u, k + nu, c))
        const.append((k + nu, u, c))
    return SelfAdjointPencil(tuple(u_spaces) + spaces, nu, tuple(const), tuple(rand))


def hermitization(q, shape):
    """Pencil of ``H = [[0, P], [P^T, 0]]``: two ``u`` rows (spaces ``a`` and ``b``)."""
    m = q.size
    links = [(0, i, c) for i, c in q.e] + [(1, m + j, c) for j, c in q.f]
    return _assemble((shape[0], shape[1]), links, q)


def symmetric_pencil(q, shape):
    """Pencil of a symmetric ``H = -e^T Q^{-1} f``: one ``u`` row, ``c = (e, f)/sqrt(2)``."""
    m = q.size
    r = 1 / sympy.sqrt(2)
    links = [(0, i, r * c) for i, c in q.e] + [(0, m + j, r * c) for j, c in q.f]
    return _assemble((shape[0],), links, q)
