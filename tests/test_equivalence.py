"""Tests of the Gaussian-equivalent coefficients (freeprob.expr.equivalence, re-exported by freeprob.attention.equivalence).

Exact coefficients are checked with ``sympy.simplify(result - expected) == 0``;
numeric ones at 15 and 30 digits against values computed independently here
(closed forms, or mpmath quadrature of a *different* integrand related by an
identity); a seeded Monte-Carlo checks the raw moments within 5 standard errors.
"""

import dataclasses

import mpmath
import numpy as np
import pytest
import sympy

from freeprob.attention.equivalence import (
    Coefficients,
    GaussianEquivalent,
    command_line_report,
    gaussian_equivalent,
)
from freeprob._errors import DomainError
from freeprob._numbers import parse_nonlinearity

x = sympy.Symbol("x")
beta = sympy.Symbol("beta")


def matched_digits(a, b):
    """Number of matching significant digits of two mpf numbers (at most 100)."""
    with mpmath.workdps(120):
        a, b = mpmath.mpf(a), mpmath.mpf(b)
        if a == b:
            return 100
        scale = max(abs(a), abs(b), mpmath.mpf(10) ** -100)
        return int(mpmath.floor(-mpmath.log10(abs(a - b) / scale)))


@pytest.fixture(scope="module")
def tanh_ge():
    # sympy needs about 6 s per integral to give up on x*tanh(x) and tanh(x)**2; a 3 s
    # budget exercises the time-budget fallback (erf below exercises the
    # "unevaluated Integral" fallback) and keeps the file fast.
    return gaussian_equivalent("tanh(x)", dps=30, time_budget=3)


@pytest.fixture(scope="module")
def erf_ge():
    # sympy returns an unevaluated Integral for E erf(xi)^2 (after ~3 s).
    return gaussian_equivalent("erf(x)", dps=30)


# --------------------------------------------------------------------------
# Exact coefficients
# --------------------------------------------------------------------------


def test_normalized_exponential_from_integration():
    ge = gaussian_equivalent("exp(beta*x - beta**2/2)")
    assert isinstance(ge, GaussianEquivalent)
    assert ge.params == (beta,) and ge.x == x
    assert sympy.simplify(ge.mu0 - 1) == 0
    assert sympy.simplify(ge.mu1 - beta) == 0
    assert sympy.simplify(ge.mu_star_sq - (sympy.exp(beta**2) - 1 - beta**2)) == 0
    assert sympy.simplify(ge.second_moment - sympy.exp(beta**2)) == 0
    assert sympy.simplify(ge.c_squared - ge.mu_star_sq) == 0
    assert sympy.simplify(ge.c**2 - ge.mu_star_sq) == 0
    assert ge.method == Coefficients("exact", "exact", "exact")


def test_exponential_as_sympy_expression_keeps_user_symbols():
    b = sympy.Symbol("b", positive=True)
    t = sympy.Symbol("t", real=True)
    ge = gaussian_equivalent(sympy.exp(b * t - b**2 / 2), x=t)
    assert ge.params == (b,)
    assert sympy.simplify(ge.mu1 - b) == 0
    assert sympy.simplify(ge.mu_star_sq - (sympy.exp(b**2) - 1 - b**2)) == 0


def test_unnormalized_exponential():
    # E e^{2 beta xi} = e^{2 beta^2}, E xi e^{2 beta xi} = 2 beta e^{2 beta^2}, E e^{4 beta xi} = e^{8 beta^2}
    ge = gaussian_equivalent("exp(2*beta*x)", positive=("beta",))
    assert sympy.simplify(ge.mu0 - sympy.exp(2 * beta**2)) == 0
    assert sympy.simplify(ge.mu1 - 2 * beta * sympy.exp(2 * beta**2)) == 0
    expected = sympy.exp(8 * beta**2) - sympy.exp(4 * beta**2) - 4 * beta**2 * sympy.exp(4 * beta**2)
    assert sympy.simplify(ge.mu_star_sq - expected) == 0


@pytest.mark.parametrize(
    "f, mu0, mu1, star",
    [
        ("x**3", 0, 3, 15 - 9),  # E xi^4 = 3, E xi^6 = 15
        ("x**2", 1, 0, 3 - 1),  # E xi^4 = 3
        ("x^4 - 6*x^2 + 3", 0, 0, 24),  # He_4, ||He_4||^2 = 4!
        ("0.5*x", 0, sympy.Rational(1, 2), 0),  # decimals are read exactly
    ],
)
def test_polynomials(f, mu0, mu1, star):
    ge = gaussian_equivalent(f)
    assert ge.method == Coefficients("exact", "exact", "exact")
    assert sympy.simplify(ge.mu0 - mu0) == 0
    assert sympy.simplify(ge.mu1 - mu1) == 0
    assert sympy.simplify(ge.mu_star_sq - star) == 0


def test_relu():
    ge = gaussian_equivalent("Max(0, x)")
    assert ge.method == Coefficients("exact", "exact", "exact")
    assert sympy.simplify(ge.mu0 - 1 / sympy.sqrt(2 * sympy.pi)) == 0
    assert sympy.simplify(ge.mu1 - sympy.Rational(1, 2)) == 0
    assert sympy.simplify(ge.second_moment - sympy.Rational(1, 2)) == 0
    assert sympy.simplify(ge.mu_star_sq - (sympy.Rational(1, 4) - 1 / (2 * sympy.pi))) == 0


def test_abs_and_heaviside():
    ge = gaussian_equivalent("Abs(x)")
    assert sympy.simplify(ge.mu0 - sympy.sqrt(2 / sympy.pi)) == 0
    assert ge.mu1 == 0
    assert sympy.simplify(ge.mu_star_sq - (1 - 2 / sympy.pi)) == 0
    ge = gaussian_equivalent("Heaviside(x)")
    assert sympy.simplify(ge.mu0 - sympy.Rational(1, 2)) == 0
    assert sympy.simplify(ge.mu1 - 1 / sympy.sqrt(2 * sympy.pi)) == 0


# --------------------------------------------------------------------------
# Numeric coefficients, checked at 15 and 30 digits against independent values
# --------------------------------------------------------------------------


def _expect(g, dps):
    """E g(xi) by mpmath quadrature in the test, at dps + 10 working digits."""
    with mpmath.workdps(dps + 10):
        val = mpmath.quad(lambda t: g(t) * mpmath.exp(-t * t / 2), [-mpmath.inf, 0, mpmath.inf])
        return val / mpmath.sqrt(2 * mpmath.pi)


@pytest.mark.parametrize("dps", [15, 30])
def test_tanh_numeric(tanh_ge, dps):
    ge = tanh_ge
    assert ge.mu0 == 0  # odd: exactly zero, by parity
    assert ge.method == Coefficients("exact", "numeric", "numeric")
    values = ge.evaluate(dps=dps)
    # Independent: Stein's lemma E xi tanh(xi) = E sech^2(xi), a different integrand;
    # and tanh^2 = 1 - sech^2 gives E tanh^2 = 1 - E sech^2, so mu_star^2 = 1 - s - s^2.
    s = _expect(lambda t: mpmath.sech(t) ** 2, dps)
    with mpmath.workdps(dps + 10):
        star = 1 - s - s**2
    assert matched_digits(values.mu1, s) >= dps - 1
    assert matched_digits(values.mu_star_sq, star) >= dps - 1
    assert values.mu0 == 0
    # the stored Float carries the 30 digits of the construction
    assert matched_digits(str(ge.mu1), s) >= min(dps, 29) - 1


@pytest.mark.parametrize("dps", [15, 30])
def test_erf_numeric(erf_ge, dps):
    ge = erf_ge
    assert ge.method == Coefficients("exact", "exact", "numeric")
    assert ge.mu0 == 0
    assert sympy.simplify(ge.mu1 - 2 / sympy.sqrt(3 * sympy.pi)) == 0
    # closed form E erf(a xi) erf(b xi) = (2/pi) asin(2ab / sqrt((1+2a^2)(1+2b^2))), a = b = 1
    with mpmath.workdps(dps + 10):
        star = 2 / mpmath.pi * mpmath.asin(mpmath.mpf(2) / 3) - 4 / (3 * mpmath.pi)
    values = erf_ge.evaluate(dps=dps)
    assert matched_digits(values.mu_star_sq, star) >= dps - 1


@pytest.mark.parametrize("dps", [15, 30])
def test_numeric_method_agrees_with_exact(dps):
    for f, vals in (("exp(beta*x - beta**2/2)", {"beta": "3/2"}), ("Max(0, x)", {}), ("x**3", {})):
        exact = gaussian_equivalent(f, params=vals).evaluate(dps=dps)
        numeric = gaussian_equivalent(f, params=vals, method="numeric", dps=dps)
        assert numeric.method == Coefficients("numeric", "numeric", "numeric")
        got = numeric.evaluate()
        for a, b in zip(exact, got):
            if a == 0:
                assert abs(b) < mpmath.mpf(10) ** -(dps - 1)
            else:
                assert matched_digits(a, b) >= dps - 1, (f, a, b)


def test_numeric_with_parameter():
    ge = gaussian_equivalent("tanh(a*x)", params={"a": 0.5}, dps=20, time_budget=2)
    assert ge.values == ((sympy.Symbol("a"), sympy.Rational(1, 2)),)
    assert ge.method.mu0 == "exact"
    s = _expect(lambda t: mpmath.sech(t / 2) ** 2 / 2, 20)  # Stein: E xi f = E f'
    assert matched_digits(ge.evaluate().mu1, s) >= 19


def test_missing_parameter_value_named():
    with pytest.raises(DomainError, match="'a'"):
        gaussian_equivalent("tanh(a*x)", time_budget=1)
    with pytest.raises(DomainError, match="'beta'"):
        gaussian_equivalent("exp(beta*x)", method="numeric")
    ge = gaussian_equivalent("exp(beta*x - beta**2/2)")
    with pytest.raises(DomainError, match="beta"):
        ge.evaluate()


def test_method_exact_refuses_numeric():
    with pytest.raises(DomainError, match="closed form"):
        gaussian_equivalent("erf(x)", method="exact", time_budget=1)


# --------------------------------------------------------------------------
# Monte-Carlo sanity check
# --------------------------------------------------------------------------


@pytest.mark.parametrize("f, values", [
    ("exp(beta*x - beta**2/2)", {"beta": "1/2"}),
    ("Max(0, x)", {}),
    ("tanh(x)", {}),
])
def test_monte_carlo_moments(f, values, tanh_ge):
    ge = tanh_ge if f == "tanh(x)" else gaussian_equivalent(f, params=values)
    coef = ge.evaluate(dps=15)
    second = coef.mu_star_sq + coef.mu0**2 + coef.mu1**2
    fn = sympy.lambdify(ge.x, ge.f.xreplace(dict(ge.values)), "numpy")
    rng = np.random.default_rng(20260101)
    xi = rng.standard_normal(10**6)
    fx = np.asarray(fn(xi), dtype=float) * np.ones_like(xi)
    # Each raw moment is a mean of 10^6 iid terms: its standard error is std/sqrt(n);
    # 5 standard errors bound a two-sided Gaussian deviation with probability 6e-7.
    for sample, exact in ((fx, coef.mu0), (xi * fx, coef.mu1), (fx**2, second)):
        se = sample.std(ddof=1) / np.sqrt(sample.size)
        assert abs(sample.mean() - float(exact)) < 5 * se


# --------------------------------------------------------------------------
# Parsing, printing, objects
# --------------------------------------------------------------------------


@pytest.mark.parametrize("text, token", [
    ("__import__('os')", "__import__"),
    ("os.system('ls')", "."),
    ("eval('1')", "eval"),
    ("x; import os", ";"),
    ("lambda: x", "lambda"),
    ("x[0]", "["),
    ("'abc'", "'abc'"),
    ("foo(x)", "foo"),
    ("exp", "exp"),
    ("1j*x", "1j"),
    ("9**9**9", "9**9**9"),
    ("x = 1", "="),
    ("x!", "!"),
    ("Symbol('y')", "Symbol"),
    ("Integer*x", "Integer"),
])
def test_parse_rejects(text, token):
    with pytest.raises(DomainError) as info:
        parse_nonlinearity(text)
    assert token in str(info.value)


def test_parse_accepts():
    expr, xs, params = parse_nonlinearity("E**(-x^2) + pi*beta*sqrt(x**2) + 0.25*erf(gamma*x)")
    g = sympy.Symbol("gamma")
    assert params == (beta, g) and xs == x
    assert sympy.simplify(expr - (sympy.exp(-x**2) + sympy.pi * beta * sympy.sqrt(x**2)
                                  + sympy.Rational(1, 4) * sympy.erf(g * x))) == 0


def test_sympy_input_checked():
    y = sympy.Function("y")
    with pytest.raises(DomainError, match="y"):
        gaussian_equivalent(y(x))
    with pytest.raises(DomainError):
        gaussian_equivalent(42)
    with pytest.raises(DomainError, match="gamma"):
        gaussian_equivalent("x**2", params={"gamma": 1})


def test_str_and_report():
    ge = gaussian_equivalent("exp(beta*x - beta**2/2)")
    text = str(ge)
    assert "mu0" in text and "mu1" in text and "mu_star^2" in text
    assert "exp(beta**2)" in text and "[exact]" in text
    report = command_line_report("exp(beta*x - beta**2/2)", {"beta": 1}, dps=20)
    assert "0.71828182845904523536" in report  # e - 2
    assert "-beta**2 + exp(beta**2) - 1" in report
    symbolic_only = command_line_report("exp(beta*x - beta**2/2)", {}, dps=20)
    assert "digits" not in symbolic_only


def test_frozen_and_global_precision_untouched(erf_ge):
    with pytest.raises(dataclasses.FrozenInstanceError):
        erf_ge.mu0 = 1
    erf_ge.evaluate(dps=40)
    assert mpmath.mp.dps == 15 and mpmath.mp.prec == 53
    hash(erf_ge)
