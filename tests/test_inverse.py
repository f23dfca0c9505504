"""Inverses of symmetric expressions: ``fp.inv`` and ``inv(...)`` in model files.

Closed forms: the ridge resolvent ``inv(X X^T/n + lam I)`` is Marchenko-Pastur
pushed forward by ``x -> 1/(x + lam)``, and ``inv(W/sqrt(n) + 3 I)`` is the
semicircle pushed forward by ``x -> 1/(x + 3)``; densities (with the
Jacobian) and moments are compared to 30 digits with values computed here
from the scalar laws by mpmath, independently of the engine. Monte-Carlo of
the same models inverts the sampled matrices with numpy.
"""

import mpmath
import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

import freeprob as fp
from freeprob.expr.tree import Scaled, _walk
from freeprob.reduce.pencil import evaluate_pencil, linearize

DPS = 30
p, n = fp.dims("p n")
X = fp.gaussian("X", (p, n))
W = fp.wigner("W", n)
I_p, I_n = fp.identity(p), fp.identity(n)


def _ctx():
    return mpmath.MPContext()


def _close(a, b, digits=DPS):
    return abs(a - b) <= mpmath.mpf(10) ** (-digits) * max(1, abs(b))


# -- the pencil represents the rational expression --------------------------------------------------------------

class _Plain:
    """Normalization with unit scales: the pencil then represents the raw expression."""

    def __init__(self, expr):
        self.leaf_scale = {leaf: 1 for leaf in expr.leaves()}
        self.coeff = {node: node.coeff for node in _walk(expr) if isinstance(node, Scaled)}


a, b = fp.dims("a b")
A = fp.gaussian("A", (a, b))
V = fp.wigner("V", a)
I_a = fp.identity(a)
SIZES = {a: 4, b: 3}


def _numeric(expr, mats):
    from freeprob.expr.tree import Inverse, Matrix, Product, Sum, Transpose

    if isinstance(expr, Matrix):
        return np.eye(SIZES[expr.shape[0]]) if expr.kind == "identity" else mats[expr.name]
    if isinstance(expr, Scaled):
        return float(expr.coeff) * _numeric(expr.arg, mats)
    if isinstance(expr, Transpose):
        return _numeric(expr.arg, mats).T
    if isinstance(expr, Inverse):
        return np.linalg.inv(_numeric(expr.arg, mats))
    if isinstance(expr, Sum):
        return sum(_numeric(t, mats) for t in expr.terms)
    if isinstance(expr, Product):
        out = _numeric(expr.factors[0], mats)
        for f in expr.factors[1:]:
            out = out @ _numeric(f, mats)
        return out
    raise TypeError(expr)


def _rational(depth):
    """Symmetric expressions on space a with inverses inside sums and products, nested."""
    base = st.sampled_from([V, A @ A.T, I_a, V @ V])
    if depth == 0:
        return base
    inner = _rational(depth - 1)
    return st.one_of(
        base,
        st.tuples(inner, st.integers(2, 5)).map(lambda t: fp.inv(t[0] @ t[0] + t[1] * I_a)),
        st.tuples(inner, inner).map(lambda t: t[0] + t[1]),
        st.tuples(inner, inner).map(lambda t: t[0] @ t[1] @ t[0]),
        inner.map(lambda e: A.T @ fp.inv(e @ e + I_a) @ A).map(lambda e: A @ e @ A.T),
    )


@settings(max_examples=40, deadline=None)
@given(_rational(3), st.integers(0, 2**32 - 1))
def test_pencil_reproduces_rational_expressions(expr, seed):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((4, 4))
    # norms about 1, so that powers stay well conditioned and the comparison measures the pencil, not rounding
    mats = {"A": rng.standard_normal((4, 3)) / 3, "V": (v + v.T) / 4}
    got = evaluate_pencil(linearize(expr, _Plain(expr)), mats, SIZES)
    want = _numeric(expr, mats)
    assert np.allclose(got, want, rtol=1e-8, atol=1e-8 * (1 + np.abs(want).max()))


# -- closed forms ---------------------------------------------------------------------------------------------------

def _mp_density(ctx, c, x):
    """Marchenko-Pastur density of X X^T/n (p x n, c = p/n <= 1), zero outside its support."""
    lo, hi = (1 - ctx.sqrt(c)) ** 2, (1 + ctx.sqrt(c)) ** 2
    if not lo < x < hi:
        return ctx.mpf(0)
    return ctx.sqrt((hi - x) * (x - lo)) / (2 * ctx.pi * c * x)


def _pushforward_moments(ctx, density, lo, hi, shift, k):
    """``int (1/(x + shift))^j density(x) dx`` for j = 1..k (tanh-sinh quadrature; square-root edges)."""
    mid = (lo + hi) / 2
    return [ctx.quad(lambda x: density(x) / (x + shift) ** j, [lo, mid, hi]) for j in range(1, k + 1)]


@pytest.fixture(scope="module")
def ridge():
    return fp.SpectralLaw(fp.inv(X @ X.T / n + sympy.Rational(1, 2) * I_p), "eigenvalues",
                          ratios={p: sympy.Rational(1, 2), n: 1})


def test_ridge_density_is_the_pushforward_of_marchenko_pastur(ridge):
    ctx = _ctx()
    ctx.dps = DPS + 10
    c, lam = ctx.mpf(1) / 2, ctx.mpf(1) / 2
    for y in ("0.35", "0.5", "0.9", "1.5"):
        yq = ctx.mpf(y)
        x = 1 / yq - lam  # y = 1/(x + lam): density rho_MP(x) |dx/dy| = rho_MP(x) / y^2
        want = _mp_density(ctx, c, x) / yq ** 2
        got = ridge.density(y, dps=DPS)
        assert want > 0 and _close(got, want), (y, got, want)


def test_ridge_support_and_moments(ridge):
    ctx = _ctx()
    ctx.dps = DPS + 10
    c, lam = ctx.mpf(1) / 2, ctx.mpf(1) / 2
    lo, hi = (1 - ctx.sqrt(c)) ** 2, (1 + ctx.sqrt(c)) ** 2
    (a0, b0), = ridge.support(dps=DPS)
    assert _close(a0, 1 / (hi + lam)) and _close(b0, 1 / (lo + lam))
    want = _pushforward_moments(ctx, lambda x: _mp_density(ctx, c, x), lo, hi, lam, 4)
    got = ridge.moments(4, dps=DPS)
    for g, w in zip(got, want):
        assert _close(g, w), (g, w)
    # the first moment is the Stieltjes transform of Marchenko-Pastur at -lam (a quadratic)
    m1 = (-(1 - c + lam) + ctx.sqrt((1 - c + lam) ** 2 + 4 * c * lam)) / (2 * c * lam)
    assert _close(got[0], m1)


def test_wigner_shift_is_the_pushforward_of_the_semicircle():
    law = fp.SpectralLaw(fp.inv(W / sympy.sqrt(n) + 3 * I_n), "eigenvalues", ratios={n: 1})
    ctx = _ctx()
    ctx.dps = DPS + 10

    def semicircle(x):
        return ctx.sqrt(4 - x * x) / (2 * ctx.pi) if -2 < x < 2 else ctx.mpf(0)

    for y in ("0.21", "0.3", "0.5", "0.95"):
        yq = ctx.mpf(y)
        want = semicircle(1 / yq - 3) / yq ** 2
        assert want > 0 and _close(law.density(y, dps=DPS), want)
    (a0, b0), = law.support(dps=DPS)
    assert _close(a0, ctx.mpf(1) / 5) and _close(b0, ctx.mpf(1))
    want = _pushforward_moments(ctx, semicircle, -2, 2, 3, 4)
    for g, w in zip(law.moments(4, dps=DPS), want):
        assert _close(g, w), (g, w)
    assert _close(law.moments(1, dps=DPS)[0], (3 - ctx.sqrt(5)) / 2)


def test_inverse_inside_products_and_sums():
    """``X^T (X X^T/n + lam)^-1 X / n`` has the eigenvalues x/(x + lam) of the Marchenko-Pastur law of X^T X/n
    (the atom at 0 of weight 1 - p/n apart): its moments are pushforward moments of Marchenko-Pastur."""
    ctx = _ctx()
    ctx.dps = DPS + 10
    lam = sympy.Rational(1, 2)
    law = fp.SpectralLaw(X.T @ fp.inv(X @ X.T / n + lam * I_p) @ X / n + fp.inv(I_n + W / (3 * sympy.sqrt(n))),
                         "eigenvalues", ratios={p: sympy.Rational(1, 2), n: 1})
    assert law.system.conditions  # both inverses were proved invertible
    # the two summands are asymptotically free; check the first alone exactly, then the sum by Monte-Carlo below
    hat = fp.SpectralLaw(X.T @ fp.inv(X @ X.T / n + lam * I_p) @ X / n, "eigenvalues",
                         ratios={p: sympy.Rational(1, 2), n: 1})
    c = ctx.mpf(1) / 2
    lo, hi = (1 - ctx.sqrt(c)) ** 2, (1 + ctx.sqrt(c)) ** 2
    # over n rows: weight p/n on the nonzero eigenvalues x of X X^T/n
    want = [c * ctx.quad(lambda x: _mp_density(ctx, c, x) * (x / (x + ctx.mpf(lam))) ** j, [lo, 1, hi])
            for j in range(1, 4)]
    for g, w in zip(hat.moments(3, dps=DPS), want):
        assert _close(g, w), (g, w)
    assert law.density(1.0) >= 0


# -- Monte-Carlo of the same models ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name, n_mc", [("ridge-resolvent", 400), ("ridge-resolvent", 800)])
def test_ridge_model_file_against_monte_carlo(name, n_mc):
    law = fp.law_of(fp.find_model(name))
    report = fp.check(law, n=n_mc, reps=6, seed=13)
    assert report.passed, report


@pytest.mark.slow
def test_rational_sum_against_monte_carlo():
    lam = sympy.Rational(1, 2)
    law = fp.SpectralLaw(X.T @ fp.inv(X @ X.T / n + lam * I_p) @ X / n + fp.inv(I_n + W / (3 * sympy.sqrt(n))),
                         "eigenvalues", ratios={p: sympy.Rational(1, 2), n: 1})
    for size in (300, 600):
        report = fp.check(law, n=size, reps=6, seed=7)
        assert report.passed, report


def test_sampler_inverts_the_sampled_matrix():
    law = fp.SpectralLaw(fp.inv(X @ X.T / n + I_p), "eigenvalues", ratios={p: 1, n: 2})
    from freeprob.montecarlo.sample import sample_matrix

    m = sample_matrix(law, 50, rng=1)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((50, 100))
    assert np.allclose(m, np.linalg.inv(x @ x.T / 100 + np.eye(50)))


# -- refusals ---------------------------------------------------------------------------------------------------------

def test_refusals():
    Y = fp.gaussian("Y", (n, n))
    with pytest.raises(fp.ShapeError, match="not square"):
        fp.inv(X)
    with pytest.raises(fp.NotSelfAdjointError, match="not symmetric"):
        fp.inv(Y / sympy.sqrt(n) + I_n)
    with pytest.raises(TypeError):
        fp.inv(2)
    with pytest.raises(fp.ScalingError, match="inverse has a limit only"):
        fp.SpectralLaw(fp.inv(X @ X.T + n * I_p), "eigenvalues", ratios={p: 1, n: 1})
    with pytest.raises(fp.ScalingError, match=r"X @ X.T scales as N\^\(1\)"):
        fp.SpectralLaw(fp.inv(X @ X.T + I_p), "eigenvalues", ratios={p: 1, n: 1})
    # the semicircle of radius 2 shifted by 1 reaches 0: no law
    with pytest.raises(fp.DomainError, match="not proved to stay away from 0"):
        fp.SpectralLaw(fp.inv(W / sympy.sqrt(n) + I_n), "eigenvalues", ratios={n: 1})
    # a parameter: refused when its value is known, at the first computation (X X^T of rank n < p is singular;
    # with p < n it is not, above the Marchenko-Pastur edge: tests/test_projection.py)
    lam = sympy.Symbol("lam", real=True)
    law = fp.SpectralLaw(fp.inv(X @ X.T / n + lam * I_p), "eigenvalues", ratios={p: 2, n: 1}, params={lam: 0})
    with pytest.raises(fp.DomainError, match="not proved to stay away from 0"):
        law.density(0.5)
    # below the spectrum, the inverse is defined (negative definite argument)
    neg = fp.SpectralLaw(fp.inv(X @ X.T / n + lam * I_p), "eigenvalues", ratios={p: 1, n: 2}, params={lam: -4})
    (lo, hi), = neg.support()
    assert hi < 0
    # the moments are algebraic, not rational: the numeric series (15 digits by default), no polynomial route yet
    default, precise = neg.moments(2), neg.moments(2, dps=30)
    assert not any(isinstance(m, sympy.Basic) for m in default)
    assert all(_close(a, b, 15) for a, b in zip(default, precise))
    with pytest.raises(fp.EliminationError, match="does not take inverses"):
        neg.exact_moments(2)
    with pytest.raises(fp.EliminationError):
        neg.support(method="polynomial")


def test_model_file_refusals():
    from freeprob.expr.modelfile import parse_model

    base = {"name": "m", "law": "eigenvalues", "dimensions": {"p": 0.5, "n": 1},
            "matrices": {"X": {"shape": ["p", "n"]}, "I": {"kind": "identity", "shape": ["p", "p"]}}}
    with pytest.raises(fp.ShapeError, match=r"m.toml: \[expression\] inv\(X\).*not square"):
        parse_model({**base, "expression": "inv(X)"}, "m.toml")
    with pytest.raises(fp.ModelFileError, match="inv applies to matrices"):
        parse_model({**base, "expression": "inv(2) * X @ X.T"}, "m.toml")
    with pytest.raises(fp.ModelFileError, match="inv takes one argument"):
        parse_model({**base, "expression": "inv(X @ X.T, I)"}, "m.toml")
    with pytest.raises(fp.ModelFileError, match="reserved"):
        parse_model({**base, "expression": "X @ X.T", "parameters": {"inv": 1}}, "m.toml")
    model = parse_model({**base, "expression": "inv(inv(X @ X.T / n + I) + I)"}, "m.toml")
    assert str(model.expr) == "inv(inv(X @ X.T/n + I) + I)"
