"""The automatic pencil represents the expression exactly: ``-e^T Q^{-1} f = P``
with actual matrices substituted, for random expression trees (hypothesis)."""

import numpy as np
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

import freeprob as fp
from freeprob.expr.tree import Scaled, _walk
from freeprob.reduce.pencil import evaluate_pencil, linearize

a, b = fp.dims("a b")
LEAVES = {
    "X": fp.gaussian("X", (a, b)),
    "Y": fp.gaussian("Y", (b, a)),
    "W": fp.wigner("W", a),
    "V": fp.wigner("V", b),
}
SIZES = {a: 4, b: 3}


class _Plain:
    """Normalization with unit scales: the pencil then represents the raw expression."""

    def __init__(self, expr):
        self.leaf_scale = {leaf: 1 for leaf in expr.leaves()}
        self.coeff = {n: n.coeff for n in _walk(expr) if isinstance(n, Scaled)}


def square_exprs(space):
    """Strategy for expressions of shape (space, space)."""
    base = st.sampled_from([LEAVES["W"] if space == a else LEAVES["V"], fp.identity(space)])

    def extend(children):
        rect = LEAVES["X"] if space == a else LEAVES["Y"]
        return st.one_of(
            st.tuples(children, children).map(lambda t: t[0] @ t[1]),
            st.tuples(children, children).map(lambda t: t[0] + t[1]),
            st.tuples(children, st.integers(-3, 3).filter(bool)).map(lambda t: t[1] * t[0]),
            children.map(lambda e: e.T),
            children.map(lambda e: rect @ (LEAVES["V"] if space == a else LEAVES["W"]) @ rect.T @ e),
        )

    return st.recursive(base, extend, max_leaves=6)


def numeric(expr, mats):
    from freeprob.expr.tree import Matrix, Product, Sum, Transpose

    if isinstance(expr, Matrix):
        return np.eye(SIZES[expr.shape[0]]) if expr.kind == "identity" else mats[expr.name]
    if isinstance(expr, Scaled):
        return float(expr.coeff) * numeric(expr.arg, mats)
    if isinstance(expr, Transpose):
        return numeric(expr.arg, mats).T
    if isinstance(expr, Sum):
        return sum(numeric(t, mats) for t in expr.terms)
    if isinstance(expr, Product):
        out = numeric(expr.factors[0], mats)
        for f in expr.factors[1:]:
            out = out @ numeric(f, mats)
        return out
    raise TypeError(expr)


@settings(max_examples=60, deadline=None)
@given(square_exprs(a), st.integers(0, 2**32 - 1))
def test_pencil_reproduces_expression(expr, seed):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((4, 4))
    v = rng.standard_normal((3, 3))
    mats = {"X": rng.standard_normal((4, 3)), "Y": rng.standard_normal((3, 4)), "W": w + w.T, "V": v + v.T}
    pencil = linearize(expr, _Plain(expr))
    got = evaluate_pencil(pencil, mats, SIZES)
    want = numeric(expr, mats)
    assert np.allclose(got, want, rtol=1e-9, atol=1e-9 * (1 + np.abs(want).max()))


def test_product_of_k_leaves_has_k_plus_one_rows():
    p, n, m, q = fp.dims("p n m q")
    X, Y, Z = fp.gaussian("X", (p, n)), fp.gaussian("Y", (n, m)), fp.gaussian("Z", (m, q))
    expr = X @ Y @ Z
    assert linearize(expr, _Plain(expr)).size == 4


def test_expression_graph_shares_repeated_leaves():
    p, n = fp.dims("p n")
    X, Y = fp.gaussian("X", (p, n)), fp.gaussian("Y", (p, n))
    expr = (X @ Y.T + Y @ X.T) / n
    g = expr.graph()
    assert sum(1 for _, d in g.nodes(data=True) if d["op"] == "matrix") == 2
    assert g.nodes[X]["kind"] == "gaussian"
    assert sympy.simplify(g.nodes[expr]["coeff"] - 1 / n) == 0
