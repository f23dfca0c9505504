"""Haar rotations of deterministic matrices, written with a Gaussian matrix and an inverse.

A Haar orthogonal ``O`` (``n x n``) enters a model as a rotation ``O D O^T``
of a deterministic ``D``: the rotated matrix is free from everything ``O``
is independent of. When ``D`` has two distinct eigenvalues ``b_1`` (weight
``1 - w``) and ``b_2`` (weight ``w``),

    O D O^T = b_1 I + (b_2 - b_1) Q,

with ``Q`` the orthogonal projection onto a uniformly distributed subspace of
dimension ``w n``. That projection is, exactly and at every size,

    Q = X (X^T X / n)^-1 X^T / n,   X Gaussian n x (w n),

since the column space of a Gaussian matrix is uniformly distributed. The
rewrite therefore turns ``O D O^T`` into a rational expression in a fresh
Gaussian matrix, which the pencil linearizes like any other inverse; the
invertibility of ``X^T X / n`` is certified by the Marchenko-Pastur edge
(:mod:`freeprob.reduce.inverse`), and the atom of weight ``w`` is the one
taken as ``Q`` when ``w <= 1/2`` (so that ``X`` is tall), else the other.
``O^T D O`` is rotated the same way (``O^T`` is Haar too).

With ``m >= 3`` distinct eigenvalues (weights sorted, the heaviest ``b_m``
last) the rotation is ``b_m I + sum_{j < m} (b_j - b_{j+1}) Q_j`` over the
nested projections ``Q_j`` onto the spans of the first ``(w_1 + ... + w_j) n``
columns of one Gaussian ``X`` (a uniformly distributed flag), the columns
selected by nested deterministic projections ``E_j``; the invertibility of
``E_j X^T X E_j / n + I - E_j`` is proved here and attached to the inverse
(``Inverse.floor``). See :func:`_nested_projections` and docs/engine.md.

Refused, with a :class:`~freeprob.DomainError`: a Haar matrix anywhere else
than in such a rotation, and one Haar matrix rotating two different matrices
(their joint rotation is not two independent ones).
"""

import dataclasses

import sympy

from .._errors import DomainError
from .tree import Inverse, Matrix, Product, Scaled, Sum, Transpose, deterministic, dims, gaussian, identity, inv

__all__ = ["has_haar", "rotate"]


def _nodes(expr):
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children())


def has_haar(expr):
    """Whether ``expr`` contains a Haar matrix."""
    return any(isinstance(node, Matrix) and node.kind == "haar" for node in _nodes(expr))


def _haar_of(node):
    """``(O, transposed)`` when ``node`` is a Haar leaf or its transpose, else None."""
    if isinstance(node, Matrix) and node.kind == "haar":
        return node, False
    if isinstance(node, Transpose) and isinstance(node.arg, Matrix) and node.arg.kind == "haar":
        return node.arg, True
    return None


def _middle(node):
    """``(c, D)`` when ``node`` is ``c D`` with ``D`` a deterministic leaf, else None."""
    c = sympy.Integer(1)
    if isinstance(node, Scaled):
        c, node = node.coeff, node.arg
    if isinstance(node, Matrix) and node.kind == "deterministic":
        return c, node
    return None


def _nested_projections(o, d, atoms, expr, taken, ratios):
    """``O D O^T`` for ``D`` with the ``atoms`` ``(b_j, w_j)`` sorted by weight, the heaviest last.

    With ``X`` Gaussian ``n x s n`` (``s = w_1 + ... + w_{m-1}``) and ``Q_j`` the projection onto
    the span of its first ``s_j n = (w_1 + ... + w_j) n`` columns,
    ``O D O^T = b_m I + sum_{j < m} (b_j - b_{j+1}) Q_j``. The columns are selected by the
    deterministic diagonal projection ``E_j`` (its ones first, so the ``E_j`` are nested):
    ``Q_j = X E_j (E_j X^T X E_j / n + I - E_j)^-1 E_j X^T / n``. Adds the rank ``s n`` of
    ``X`` to ``ratios``.
    """
    n = o.shape[0]
    names = {str(sym) for sym in expr.dimensions()}
    name = f"{o.name}_{d.name}"
    selectors = [f"{name}_E{j}" for j in range(1, len(atoms) - 1)]
    for clash in [name, *selectors]:
        if clash in taken or f"rank_{name}" in names:
            raise DomainError(f"the rotation {o.name} {d.name} {o.name}^T is written with the matrices "
                              f"{', '.join([name, *selectors])} and a dimension rank_{name}; rename the matrix "
                              f"that has one of these names")
    k = dims(f"rank_{name}")
    x = gaussian(name, (n, k))
    total = sum((w for _, w in atoms[:-1]), sympy.Integer(0))
    ratios[k] = total * n
    out = None if atoms[-1][0] == 0 else atoms[-1][0] * identity(n)
    cumulative = sympy.Integer(0)
    for j, (b, w) in enumerate(atoms[:-1], start=1):
        cumulative += w
        if j == len(atoms) - 1:  # all columns: the plain projection onto the span of X
            q = x @ inv(x.T @ x / n) @ x.T / n
        else:
            part = cumulative / total
            e = deterministic(selectors[j - 1], (k, k), {1: str(part), 0: str(1 - part)})
            gram = inv(e @ x.T @ x @ e / n + (identity(k) - e))
            # on the range of E_j the argument is the Gram matrix of n x s_j n iid Gaussian columns, above
            # the Marchenko-Pastur edge (1 - sqrt(s_j))^2 > 0; on its complement it is 1
            gram = dataclasses.replace(gram, floor=(1 - sympy.sqrt(part * k / n)) ** 2)
            q = x @ e @ gram @ e @ x.T / n
        term = (b - atoms[j][0]) * q
        out = term if out is None else out + term
    return out


def rotate(expr):
    """``(rotated, ratios)``: ``expr`` with every ``O D O^T`` written with random projections.

    ``ratios`` maps each new dimension (the rank of a projection) to its ratio
    as an expression in the dimension of ``O``, ``w n``.
    """
    taken = {node.name for node in _nodes(expr) if isinstance(node, Matrix)}
    rotations = {}  # O -> (D, replacement)
    ratios = {}

    def rotation(o, d):
        done = rotations.get(o)
        if done is not None:
            if done[0] != d:
                raise DomainError(f"the Haar matrix {o.name} rotates both {done[0].name} and {d.name}: a joint "
                                  f"rotation of two matrices is not two independent ones; write one deterministic "
                                  f"matrix per Haar matrix")
            return done[1]
        n = o.shape[0]
        if d.shape != (n, n):
            raise DomainError(f"{o.name} @ {d.name} @ {o.name}.T: {d.name} must be of shape ({n}, {n})")
        values = {}
        for a, w in d.spectrum:
            values[a] = values.get(a, 0) + w
        atoms = sorted(values.items(), key=lambda aw: (aw[1], str(aw[0])))
        if len(atoms) == 1:
            if atoms[0][0] == 0:
                raise DomainError(f"{o.name} @ {d.name} @ {o.name}.T is zero ({d.name} has the single eigenvalue 0): "
                                  f"leave it out of the expression")
            out = atoms[0][0] * identity(n)
        else:
            out = _nested_projections(o, d, atoms, expr, taken, ratios)
        rotations[o] = (d, out)
        return out

    def walk(node):
        if isinstance(node, Product):
            factors = list(node.factors)
            out = []
            i = 0
            while i < len(factors):
                h = _haar_of(factors[i])
                if h is not None and i + 2 < len(factors):
                    mid, end = _middle(factors[i + 1]), _haar_of(factors[i + 2])
                    if mid is not None and end is not None and end[0] == h[0] and end[1] != h[1]:
                        c, d = mid
                        r = rotation(h[0], d)
                        out.append(r if c == 1 else c * r)
                        i += 3
                        continue
                out.append(walk(factors[i]))
                i += 1
            return Product(tuple(out)) if len(out) > 1 else out[0]
        if isinstance(node, Matrix):
            if node.kind == "haar":
                raise DomainError(f"the Haar matrix {node.name} may appear only as a rotation {node.name} @ D @ "
                                  f"{node.name}.T (or {node.name}.T @ D @ {node.name}) of a deterministic matrix D")
            return node
        if type(node) is Sum:
            return Sum(tuple(walk(t) for t in node.terms))
        if isinstance(node, (Scaled, Transpose, Inverse)):
            return dataclasses.replace(node, arg=walk(node.arg))
        raise DomainError(f"a Haar rotation inside {type(node).__name__} nodes is not supported: {node}")

    return walk(expr), ratios
