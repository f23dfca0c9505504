"""Gaussian means ``E g(xi)`` by quadrature over a finite body with a proved tail bound
(freeprob/expr/equivalence.py: ``_growth``, ``_body_half_width``, ``_quad_expectation``)."""

import mpmath
import pytest
import sympy

from freeprob._precision import context
from freeprob.expr import equivalence as eq

X = eq._REAL_X


@pytest.mark.parametrize("g", [X * sympy.tanh(X), sympy.tanh(3 * X) ** 2, X ** 3 * sympy.Abs(X) + 5,
                               sympy.sqrt(sympy.Abs(X)) * sympy.atan(X), sympy.Max(0, X) ** 2,
                               sympy.Rational(-7, 2) * sympy.sin(X) * X ** 2])
def test_the_growth_bound_holds(g):
    """``|g(t)| <= C (1 + |t|)^d`` at points from 0 to 10^6 (the bound is read off the expression tree)."""
    c, d = eq._growth(g, X)
    f = sympy.lambdify(X, g, "mpmath")
    for t in [0, 0.5, -1, 2.5, -7, 30, -1e3, 1e6]:
        assert abs(f(mpmath.mpf(t))) <= c * (1 + abs(mpmath.mpf(t))) ** mpmath.mpf(float(d))


@pytest.mark.parametrize("g", [sympy.exp(X), 1 / (1 + sympy.exp(-X)), sympy.log(1 + X ** 2), 1 / X])
def test_no_growth_bound_without_one(g):
    """Exponentials, negative powers and unbounded functions give no bound: the real line is integrated."""
    assert eq._growth(g, X) is None


@pytest.mark.parametrize("d", [0, 1, 4, 9])
def test_the_tail_bound_bounds_the_tail(d):
    """For ``g = (1 + |t|)^d`` (``C = 1``) the bound of the two tails beyond ``L`` is at least their value
    (computed by quadrature at 50 digits) and below ``10^-(work + 5)``."""
    work = 40
    half, bound = eq._body_half_width((mpmath.mpf(1), sympy.Integer(d)), work)
    ctx = context(50)
    half = ctx.mpf(half)
    tail = 2 * ctx.quad(lambda t: (1 + t) ** d * ctx.exp(-t * t / 2), [half, ctx.inf]) / ctx.sqrt(2 * ctx.pi)
    assert tail <= bound <= ctx.mpf(10) ** (-(work + 5))


# closed forms derived independently: E xi^2 = 1; E max(0, xi)^2 = 1/2 (half of E xi^2, by symmetry);
# E sin(3 xi)^2 = (1 - E cos(6 xi))/2 = (1 - e^-18)/2; E xi erf(xi/2) = E erf'(xi/2)/2 (Stein's lemma)
# = E e^(-xi^2/4)/sqrt(pi) = sqrt(2/3)/sqrt(pi)
CLOSED = [
    (X ** 2, lambda c: c.mpf(1)),
    (sympy.Max(0, X) ** 2, lambda c: c.mpf(1) / 2),
    (sympy.sin(3 * X) ** 2, lambda c: (1 - c.exp(-18)) / 2),
    (X * sympy.erf(X / 2), lambda c: c.sqrt(c.mpf(2) / 3) / c.sqrt(c.pi)),
]


@pytest.mark.parametrize("g, exact", CLOSED)
@pytest.mark.parametrize("dps", [50, 100])
def test_the_finite_body_quadrature_agrees_with_closed_forms(g, exact, dps):
    assert eq._growth(g, X) is not None  # the finite body is the route taken
    eq._quad_expectation.cache_clear()
    value = eq._quad_expectation(g, X, dps)
    ctx = context(dps + 20)
    assert abs(ctx.mpf(value) - exact(ctx)) <= ctx.mpf(10) ** (-dps)


def test_the_finite_body_agrees_with_the_real_line(monkeypatch):
    """tanh's coefficients at 100 digits: the finite body and the real line (without a growth bound) agree
    to the digits asked for."""
    ctx = context(120)
    for g in (X * sympy.tanh(X), sympy.tanh(X) ** 2):
        eq._quad_expectation.cache_clear()
        body = eq._quad_expectation(g, X, 100)
        with monkeypatch.context() as m:
            m.setattr(eq, "_growth", lambda g, x: None)
            eq._quad_expectation.cache_clear()
            line = eq._quad_expectation(g, X, 100)
        assert abs(ctx.mpf(body) - ctx.mpf(line)) <= ctx.mpf(10) ** -100
    eq._quad_expectation.cache_clear()


def test_the_trapezoidal_rule_declines_a_pole_near_the_axis():
    """tanh(40 xi)^2 has poles at distance pi/80 from the real axis: the trapezoidal rule would need far
    more than TRAPEZOID_NODES nodes and declines early (None); tanh-sinh quadrature on the body takes over,
    and its value is stable at two precisions (checked inside)."""
    g = sympy.tanh(40 * X) ** 2
    assert eq._trapezoid_expectation(g, X, 50, eq._growth(g, X)) is None
    eq._quad_expectation.cache_clear()
    value = eq._quad_expectation(g, X, 50)
    assert 0.9 < value < 1
    eq._quad_expectation.cache_clear()


@pytest.mark.parametrize("g", [X * sympy.tanh(X), sympy.tanh(X) ** 2])
@pytest.mark.parametrize("dps", [50, 150])
def test_the_trapezoidal_rule_agrees_with_tanh_sinh(g, dps):
    """tanh's coefficients by the trapezoidal rule and by tanh-sinh quadrature on the same body agree to the
    digits asked for (the earlier measurement of the finite body against the old real-line values: 1e-94
    at 100 digits)."""
    value = eq._trapezoid_expectation(g, X, dps, eq._growth(g, X))
    assert value is not None
    ctx = context(dps + 20)
    half = ctx.mpf(eq._body_half_width(eq._growth(g, X), dps + 20)[0])
    f = sympy.lambdify(X, g, "mpmath")
    with mpmath.workdps(dps + 20):
        ref = mpmath.quad(lambda t: f(t) * mpmath.exp(-t * t / 2), [-half, 0, half]) / mpmath.sqrt(2 * mpmath.pi)
    assert abs(ctx.mpf(value) - ctx.mpf(ref)) <= ctx.mpf(10) ** (-dps)


S = sympy.Symbol("s", positive=True)


@pytest.mark.parametrize("g", [sympy.exp(S * X), X * sympy.exp(S * X), sympy.exp(2 * S * X), X ** 2 * sympy.exp(S * X + 1),
                               (1 + X) ** 3 * sympy.exp(X) ** 2, 3 * sympy.exp(X) - X * sympy.exp(-X / 2), X ** 4 - 3])
def test_polynomial_times_exponential_in_closed_form(g):
    """``E[xi^k e^(a xi + b)]`` by completing the square equals 60-digit quadrature on the real line (at s = 7/10)."""
    exact = eq._polynomial_times_exponential(g, X)
    assert exact is not None and X not in exact.free_symbols
    ctx = context(60)
    f = sympy.lambdify(X, g.subs(S, sympy.Rational(7, 10)), modules=[eq._namespace(ctx), "mpmath"])
    numeric = ctx.quad(lambda t: f(t) * ctx.exp(-t * t / 2), [-ctx.inf, 0, ctx.inf]) / ctx.sqrt(2 * ctx.pi)
    value = ctx.mpf(str(sympy.N(exact.subs(S, sympy.Rational(7, 10)), 70)))
    assert abs(value - numeric) <= ctx.mpf(10) ** -50 * max(1, abs(numeric))


@pytest.mark.parametrize("g", [sympy.exp(X ** 2 / 4), sympy.exp(S * X) * sympy.cos(X), sympy.tanh(X) * X, X * sympy.exp(sympy.Abs(X))])
def test_other_integrands_are_left_to_the_general_route(g):
    assert eq._polynomial_times_exponential(g, X) is None


@pytest.mark.parametrize("g", [sympy.tanh(X) ** 2, X * sympy.tanh(sympy.sqrt(2) * X / 3), sympy.atan(X) ** 2 + sympy.pi,
                               sympy.sech(X) * sympy.cos(X), X * sympy.erf(X)])
@pytest.mark.parametrize("digits", [40, 120])
def test_ball_arithmetic_node_sums_equal_mpmath(g, digits):
    """The trapezoidal rule's node sums in flint's ball arithmetic equal mpmath's lambdified sums at the
    working precision (to 10^-(digits - 5), relative above 1)."""
    sums = eq._node_sums(g, X)
    ctx = eq._quad_context(digits)
    func = sympy.lambdify(X, g, modules=[eq._namespace(ctx), "mpmath"])
    step = ctx.ldexp(ctx.one, -4)
    ks = range(-90, 91)
    expected = ctx.fsum(func(k * step) * ctx.exp(-(k * step) ** 2 / 2) for k in ks)
    got = sums(digits, 4, ks)
    assert abs(got - expected) <= ctx.mpf(10) ** -(digits - 5) * max(1, abs(expected))


def test_integrands_flint_cannot_evaluate_fall_back_to_mpmath():
    """``Abs``, ``Max`` and functions outside the table compile to nothing; the sums still come (mpmath)."""
    for g in [sympy.Abs(X) * X, sympy.Max(0, X), sympy.besselj(0, X)]:
        assert eq._arb_integrand(g, X, 30) is None
    ctx = eq._quad_context(30)
    value = eq._node_sums(sympy.besselj(0, X), X)(30, 2, range(-3, 4))
    expected = ctx.fsum(ctx.besselj(0, k / ctx.mpf(4)) * ctx.exp(-(k / ctx.mpf(4)) ** 2 / 2) for k in range(-3, 4))
    assert abs(value - expected) <= ctx.mpf(10) ** -28
