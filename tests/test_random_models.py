"""Property tests on random polynomial models (hypothesis).

For random sums of products of Gaussian and Wigner matrices, correctly
scaled: the law of the squared singular values, and of the symmetrized
expression, has ``Im G < 0`` above the axis, and its Cauchy transform at
``z = 10^3 i`` (Newton on the Dyson equation) matches the moment series at
infinity (a separate computation, exact arithmetic), to 30 digits; the first
two moments agree with a Monte-Carlo estimate within 6 standard errors plus
the O(1/N) bias allowance measured between N/2 and N.
"""

import numpy as np
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

import freeprob as fp
from freeprob._precision import context

a, b = fp.dims("a b")
X = fp.gaussian("X", (a, b))
Y = fp.gaussian("Y", (b, a))
W = fp.wigner("W", a)
V = fp.wigner("V", b)
SCALE = {"X": 1 / sympy.sqrt(b), "Y": 1 / sympy.sqrt(a), "W": 1 / sympy.sqrt(a), "V": 1 / sympy.sqrt(b)}
NEXT = {a: [("X", b), ("W", a)], b: [("Y", a), ("V", b)]}
LEAF = {"X": X, "Y": Y, "W": W, "V": V}


@st.composite
def words(draw, max_len=3):
    """A product of leaves starting in space a (shape a x ?), each scaled to O(1)."""
    length = draw(st.integers(1, max_len))
    space = a
    expr = None
    for _ in range(length):
        name, nxt = draw(st.sampled_from(NEXT[space]))
        term = SCALE[name] * LEAF[name]
        expr = term if expr is None else expr @ term
        space = nxt
    return expr


@st.composite
def polynomials(draw):
    terms = draw(st.lists(words(), min_size=1, max_size=3))
    by_shape = {}
    for t in terms:
        by_shape.setdefault(t.shape, []).append(t)
    shape, group = max(by_shape.items(), key=lambda kv: len(kv[1]))
    coeffs = draw(st.lists(st.integers(1, 3), min_size=len(group), max_size=len(group)))
    expr = None
    for c, t in zip(coeffs, group):
        expr = c * t if expr is None else expr + c * t
    return expr


def series_check(law):
    ms = [sympy.Integer(1)] + [sympy.sympify(m) for m in law.moments(7)]
    ctx = context(50)
    z = ctx.mpc(0, 1000)
    series = sum(ctx.mpf(sympy.N(m, 50)) / z ** (k + 1) for k, m in enumerate(ms[:5]))
    g = ctx.mpc(law.cauchy("1000*I", dps=30))
    # remainder of the series after m4: m5/z^6 + m6/z^7 + m7/z^8 + ... (|z| = 1000)
    tail = sum(abs(ctx.mpf(sympy.N(ms[k], 30))) / abs(z) ** (k + 1) for k in (5, 6, 7))
    bound = 2 * tail + ctx.mpf(10) ** -30
    assert abs(g - series) <= bound, (law.expr, g, series)
    for pt in ["0.5+0.3*I", "-1+1*I", "2+0.1*I"]:
        assert law.cauchy(pt, dps=15).imag < 0


def monte_carlo_check(law, ratios):
    """First two moments vs Monte-Carlo: 6 replicates at N and N/2; the
    difference of the means is the O(1/N) bias allowance (bias at N is about
    that difference), standard errors from the replicates."""
    ms = [float(sympy.N(m)) for m in law.moments(2)]
    rng = np.random.default_rng(0)
    n = 160

    def stats(size):
        vals = np.array([[np.mean(s), np.mean(s**2)] for s in (fp.sample_spectrum(law, size, rng) for _ in range(6))])
        return vals.mean(0), vals.std(0, ddof=1) / np.sqrt(6)

    mean_n, se_n = stats(n)
    mean_h, se_h = stats(n // 2)
    for k in range(2):
        allowance = 6 * np.hypot(se_n[k], se_h[k]) + abs(mean_h[k] - mean_n[k])
        assert abs(mean_n[k] - ms[k]) <= allowance, (law.expr, k, mean_n[k], ms[k], allowance)


@settings(max_examples=6, deadline=None)
@given(polynomials(), st.sampled_from([(1, 1), (1, 2), (2, 1)]))
def test_random_singular_value_laws(expr, ratio):
    ratios = {a: ratio[0], b: ratio[1]}
    law = fp.singular_value_law(expr, ratios=ratios)
    series_check(law)
    monte_carlo_check(law, ratios)


@settings(max_examples=4, deadline=None)
@given(polynomials())
def test_random_symmetrized_laws(expr):
    sym = expr + expr.T if expr.shape[0] == expr.shape[1] else expr @ expr.T
    law = fp.eigenvalue_law(sym, ratios={a: 1, b: 2})
    series_check(law)
    monte_carlo_check(law, {a: 1, b: 2})
