"""Coefficients without a closed form carry the digits each computation asks for, and are derived without a
symbolic search that cannot succeed.

A coefficient computed by quadrature is the number ``E[g(x)]`` of its
integrand (:class:`~freeprob.expr.equivalence.GaussianMean`): converted to
mpmath at ``dps`` digits it runs the quadrature at that precision, so a law
asked for more digits than the derivation used (50 by default) gets them.
"""

import pickle

import mpmath
import pytest
import sympy

import freeprob as fp
from freeprob._precision import context, to_mpf
from freeprob.expr import equivalence as eq

N1, N0, M = fp.dims("n1 n0 m")
W, X = fp.gaussian("W", (N1, N0)), fp.gaussian("X", (N0, M))
x = sympy.Symbol("x")


def tanh_by_hand(dps):
    """``E xi tanh(xi)`` and ``E tanh(xi)^2`` by mpmath quadrature at ``dps + 20`` digits, split at 0."""
    with mpmath.workdps(dps + 20):
        w = 1 / mpmath.sqrt(2 * mpmath.pi)
        m1 = mpmath.quad(lambda t: t * mpmath.tanh(t) * mpmath.exp(-t * t / 2), [-mpmath.inf, 0, mpmath.inf]) * w
        m2 = mpmath.quad(lambda t: mpmath.tanh(t) ** 2 * mpmath.exp(-t * t / 2), [-mpmath.inf, 0, mpmath.inf]) * w
        return m1, m2 - m1 ** 2


def test_numeric_coefficients_have_the_digits_asked_beyond_the_derivation():
    """Derived at 30 digits, the coefficients of tanh come out correct to 70 digits when 70 are asked."""
    node = fp.entrywise("tanh(x)", W @ X / sympy.sqrt(N0), dps=30)
    c = node.coefficients
    assert c.method == ("exact", "numeric", "numeric") and c.dps == 30
    assert isinstance(c.mu1, sympy.Expr) and c.mu1.has(eq.GaussianMean) and c.mu1.is_number
    mu1, nu2 = tanh_by_hand(70)
    ctx = context(80)
    tol = mpmath.mpf(10) ** -70
    assert abs(to_mpf(ctx, c.mu1) - mu1) < tol
    assert abs(to_mpf(ctx, c.nu_sq) - nu2) < tol
    # the leaf of the equivalent carries the same number
    assert node.noise.variance == c.nu_sq


def test_a_law_gets_the_coefficients_at_its_precision():
    """The density of tanh random features at 60 digits equals that of the surrogate built by hand with
    coefficients of 80 digits (exact rationals), to 60 digits: no 50-digit coefficient limits it."""
    Y = fp.entrywise("tanh(x)", W @ X / sympy.sqrt(N0))
    ratios = {N1: 1, N0: 1, M: 2}
    law = fp.singular_value_law(Y / sympy.sqrt(M), ratios=ratios)
    mu1, nu2 = tanh_by_hand(80)
    Z = fp.gaussian("Z", (N1, M), variance=sympy.Rational(mpmath.nstr(nu2, 85)))
    hand = fp.singular_value_law((sympy.Rational(mpmath.nstr(mu1, 85)) * W @ X / sympy.sqrt(N0) + Z) / sympy.sqrt(M),
                                 ratios=ratios)
    a, b = law.density("1/2", dps=60), hand.density("1/2", dps=60)
    assert abs(a - b) < mpmath.mpf(10) ** -60 * max(1, abs(b))


def test_gaussian_mean_is_an_opaque_real_number():
    m = eq.gaussian_mean(sympy.tanh(x) ** 2, x)
    assert str(m) == "E[tanh(x)**2]" and m.is_real and m.is_number and not m.free_symbols
    assert sympy.simplify(m) == m  # no rewriting reaches the integrand
    assert pickle.loads(pickle.dumps(m)) == m
    assert abs(float(m) - 0.3942944903978411) < 1e-15
    with pytest.raises(fp.DomainError):
        eq.gaussian_mean(sympy.tanh(sympy.Symbol("a") * x), x)


def test_report_says_how_numeric_coefficients_are_computed():
    node = fp.entrywise("tanh(x)", W @ X / sympy.sqrt(N0))
    text = fp.equivalence_report(node).text()
    assert "0.60570550960215882558   [numeric: quadrature at the precision asked]" in text
    data = fp.equivalence_report(node).as_dict()["entrywise"][0]
    assert data["mu1"].startswith("0.605705509602158825583540") and data["method"]["mu1"] == "numeric"


@pytest.mark.parametrize("g, skipped", [
    (x * sympy.tanh(x), True),
    (sympy.tanh(x / 3) ** 2, True),
    (sympy.atan(x) ** 2, True),
    (x ** 2 * sympy.Max(x, 0), False),
    (x * sympy.erf(x), False),
    (sympy.tanh(1) * x ** 2, False),  # tanh of a constant is a number
])
def test_functions_without_gaussian_closed_forms_skip_sympy(g, skipped):
    assert eq._without_closed_form(g, x) is skipped


def test_tanh_is_derived_without_a_symbolic_search(monkeypatch):
    """sympy is not asked for E tanh(u)^2 or E u tanh(u) (it would search until its budget runs out)."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"sympy.integrate called on {args[0]}")

    monkeypatch.setattr(sympy, "integrate", refuse)
    real_x = sympy.Symbol("x", real=True)
    ge = eq.gaussian_equivalent(sympy.tanh(real_x * sympy.Rational(5, 7)), x=real_x, dps=20)
    assert ge.method == ("exact", "numeric", "numeric")  # mu0 = 0 by parity


def test_numbers_without_closed_form_print_in_every_form():
    m = eq.gaussian_mean(x * sympy.tanh(x), x)
    e = sympy.sqrt(2) * m / 3 - m ** 2
    assert str(e) == "-E[x*tanh(x)]**2 + sqrt(2)*E[x*tanh(x)]/3"
    assert "E[x*tanh(x)]" in sympy.pretty(e) and "GaussianMean" not in sympy.pretty(e)
    assert r"\mathbb{E}\left[x \tanh{\left(x \right)}\right]^{2}" in sympy.latex(e)


@pytest.mark.parametrize("g, exact", [
    (sympy.exp(x), sympy.exp(sympy.Rational(1, 2))),            # E e^xi = e^(1/2)
    pytest.param(sympy.exp(x ** 2 / 3), sympy.sqrt(3),          # E e^(xi^2/3) = (1 - 2/3)^(-1/2): a fast-growing
                 marks=pytest.mark.slow),                       # integrand, about 30 s at 200 digits
    (x ** 4 * sympy.tanh(x) ** 0, sympy.Integer(3)),            # E xi^4 = 3
])
def test_quadrature_above_600_bits_matches_closed_forms(g, exact):
    """At 200 digits (working precision above 600 bits, where far nodes take the cheap bound of their
    terms) the quadrature still agrees with the closed form to 200 digits."""
    value = eq._quad_expectation(g, x, 200)
    ctx = context(230)
    assert abs(ctx.mpf(value) - to_mpf(ctx, exact)) < ctx.mpf(10) ** -200 * max(1, abs(to_mpf(ctx, exact)))
