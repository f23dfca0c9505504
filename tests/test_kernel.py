"""Inner-product kernel matrices zero_diagonal(f(X X^T / sqrt(p))) / sqrt(n) (freeprob.expr.kernel).

* ``f(x) = x^2 - 1``: the law is the semicircle of variance 2, with no trace
  of the aspect ratio (exact moments, and densities against the scalar
  semicircle to 30 digits);
* ``f = tanh``: the law equals, to 30 digits, that of the surrogate built by
  hand, ``mu1 (X X^T / sqrt(p) - sqrt(p) I) / sqrt(n) + W / sqrt(n)`` with
  ``W`` Wigner of variance ``nu^2`` and coefficients from direct quadrature;
* (slow) Monte-Carlo of the real kernel matrix agrees once the finite-size
  trend ``a + b N^-1/2 + c N^-1`` is fitted: kernel matrices converge at the
  rate ``N^-1/2`` (a ``1/N``-only fit misses the third moment of the
  quadratic kernel by many standard errors).
"""

import mpmath
import numpy as np
import pytest
import sympy

import freeprob as fp
from _replicates import replicate_statistics, theory_statistics
from freeprob.expr.modelfile import parse_model
from freeprob.montecarlo.stats import fit_trend, student_t_quantile

n, p = fp.dims("n p")
X = fp.gaussian("X", (n, p))
GRAM = X @ X.T / sympy.sqrt(p)
ASPECTS = [sympy.Rational(1, 2), sympy.Integer(1), sympy.Integer(3)]  # p/n


def kernel_law(f, aspect):
    K = fp.kernel_matrix(f, GRAM)
    return fp.eigenvalue_law(K / sympy.sqrt(n), ratios={n: 1, p: aspect}, name=f"kernel {f} at p/n = {aspect}")


@pytest.mark.parametrize("aspect", ASPECTS)
def test_quadratic_kernel_is_a_semicircle_of_variance_two(aspect):
    law = kernel_law("x**2 - 1", aspect)
    assert law.moments(8) == list(fp.Semicircle(2).moments(8))
    ref = fp.Semicircle(2)
    ctx = mpmath.mp.clone()
    ctx.dps = 40
    for x in ("0", "1/3", "-2.5"):
        a, b = law.density(x, dps=30), ref.density(sympy.Rational(x), dps=30)
        assert abs(ctx.mpf(a) - ctx.mpf(b)) <= ctx.mpf(10) ** -30, (x, a, b)


def hand_tanh(dps=40):
    with mpmath.workdps(dps + 20):
        w = lambda t: mpmath.exp(-t * t / 2) / mpmath.sqrt(2 * mpmath.pi)  # noqa: E731
        e = lambda g: mpmath.quad(lambda t: g(t) * w(t), [-mpmath.inf, 0, mpmath.inf])  # noqa: E731
        mu1 = e(lambda t: t * mpmath.tanh(t))
        nu2 = e(lambda t: mpmath.tanh(t) ** 2) - mu1 ** 2
        return sympy.Rational(mpmath.nstr(mu1, dps + 5)), sympy.Rational(mpmath.nstr(nu2, dps + 5))


@pytest.mark.parametrize("aspect", [sympy.Rational(1, 2), sympy.Integer(3)])
def test_tanh_kernel_equals_hand_built_surrogate(aspect):
    law = kernel_law("tanh(x)", aspect)
    mu1, nu2 = hand_tanh()
    Wh = fp.wigner("Whand", n, variance=nu2)
    S = (mu1 * (GRAM - sympy.sqrt(p) * fp.identity(n)) + Wh) / sympy.sqrt(n)
    ref = fp.eigenvalue_law(S, ratios={n: 1, p: aspect})
    (lo, hi), *_ = ref.support(dps=15)
    ctx = mpmath.mp.clone()
    ctx.dps = 40
    for frac in ("1/5", "1/2", "4/5"):
        x = sympy.nsimplify(lo + (hi - lo) * sympy.Rational(frac), rational=True)
        a, b = law.density(x, dps=30), ref.density(x, dps=30)
        assert b > 0 and abs(ctx.mpf(a) - ctx.mpf(b)) <= ctx.mpf(10) ** -30 * max(1, abs(ctx.mpf(b)))
    # tanh's coefficients are not algebraic (numbers computed by quadrature to the digits asked), so its moments
    # are numeric: at 30 digits they agree with the hand-built surrogate's to 10^-30
    tol = ctx.mpf(10) ** -30
    for a, b in zip(law.moments(4, dps=30), ref.moments(4, dps=30)):
        assert abs(ctx.mpf(a) - ctx.mpf(b)) <= tol * max(1, abs(ctx.mpf(b)))


def test_shift_and_coefficients_follow_the_variance():
    X2 = fp.gaussian("X2", (n, p), variance=3)
    K = fp.kernel_matrix("Max(x, 0)", X2.T @ X2 / sympy.sqrt(n), time_budget=60)   # p x p, contracted over n
    assert K.shape == (p, p)
    assert K.coefficients.variance == 9 and sympy.simplify(K.shift - 3 * sympy.sqrt(n)) == 0
    assert K.coefficients.mu1 == sympy.Rational(1, 2)
    assert "Wigner" in fp.equivalence_report(K).text()
    assert fp.equivalence_report(K).outliers  # Max(x, 0) is not centred: mu0 (1 1^T - I) is an outlier


@pytest.mark.parametrize("argument, condition", [
    (X @ fp.gaussian("Y", (p, n)) / sympy.sqrt(p), "gram"),
    (GRAM + fp.gaussian("V", (n, p)) @ fp.gaussian("V", (n, p)).T / sympy.sqrt(p), "gram"),
    (fp.wigner("G", n) / sympy.sqrt(n), "gram"),
])
def test_kernel_needs_a_gram_argument(argument, condition):
    with pytest.raises(fp.EquivalenceError) as info:
        fp.kernel_matrix("tanh(x)", argument)
    assert info.value.condition == condition


def test_kernel_scale_is_checked():
    with pytest.raises(fp.ScalingError, match="off-diagonal entries have variance p"):
        fp.kernel_matrix("tanh(x)", X @ X.T)


MODEL = {
    "name": "kernel", "law": "eigenvalues", "expression": "zero_diagonal(f(X @ X.T / sqrt(p))) / sqrt(n)",
    "functions": {"f": "x**2 - 1"}, "dimensions": {"n": 1, "p": 3}, "matrices": {"X": {"shape": ["n", "p"]}},
}


def test_model_file_kernel():
    mod = parse_model(dict(MODEL), "k.toml")
    assert fp.law_of(mod).moments(6) == [0, 2, 0, 8, 0, 40]
    assert "zero_diagonal(f(X @ X.T/(sqrt(p))))" in str(mod.expr)


@pytest.mark.parametrize("expression, error, words", [
    ("zero_diagonal(X) / sqrt(n)", fp.ModelFileError, ["zero_diagonal applies to an entrywise function"]),
    ("zero_diagonal(f(X @ X.T / sqrt(p)), 2) / sqrt(n)", fp.ModelFileError, ["zero_diagonal takes one argument"]),
    ("f(X @ X.T / sqrt(p)) / sqrt(n)", fp.EquivalenceError, ["X occurs twice", "zero_diagonal(f(X @ X.T / sqrt(p)))"]),
])
def test_model_file_kernel_errors(expression, error, words):
    with pytest.raises(error) as info:
        parse_model({**MODEL, "expression": expression}, "k.toml")
    for word in words:
        assert word in str(info.value)


def test_zero_diagonal_is_reserved():
    with pytest.raises(fp.ModelFileError, match="'zero_diagonal' is reserved"):
        parse_model({**MODEL, "matrices": {"zero_diagonal": {"shape": ["n", "p"]}}}, "k.toml")


def test_sample_is_the_real_kernel():
    from freeprob.montecarlo.sample import sample_matrix

    law = kernel_law("tanh(x)", sympy.Integer(3))
    a = sample_matrix(law, 40, rng=5)
    x = np.random.default_rng(5).standard_normal((40, 120))
    k = np.tanh(x @ x.T / np.sqrt(120))
    np.fill_diagonal(k, 0)
    assert np.allclose(a, k / np.sqrt(40))


@pytest.mark.slow
@pytest.mark.parametrize("f", ["x**2 - 1", "tanh(x)"])
def test_monte_carlo_of_the_real_kernel(f):
    """Real kernel at N = 250, 500, 1000, 2000 (p/n = 1/2): the limit of a + b N^-1/2 + c N^-1 agrees with the theory.

    The counting function at the quartiles and the moments 2..4 are fitted
    by weighted least squares with errors from the replicates; each
    intercept must lie within the Student-t critical value (family-wise
    level 1e-3) of the theory in standard errors.
    """
    law = kernel_law(f, sympy.Rational(1, 2))
    theory, qpoints = theory_statistics(law, powers=(2, 3, 4))
    sizes, reps = [250, 500, 1000, 2000], [16, 8, 6, 4]
    means, variances = replicate_statistics(law, sizes, reps, 77, qpoints, powers=(2, 3, 4))
    crit = student_t_quantile(1 - 1e-3 / (2 * len(theory)), sum(reps) - len(sizes))
    names = ["m2", "m3", "m4", "F(q1/4)", "F(q1/2)", "F(q3/4)"]
    print(f"\nkernel {f}: sample mean - theory at N = {sizes}; fitted limit a - theory and its s.e.")
    failures = []
    for j, t in enumerate(theory):
        fit = fit_trend(sizes, reps, means[:, j], variances[:, j], rates=(0.5, 1.0))
        a = fit["coef"][0]
        se = max(fit["se"][0], 1e-7 * max(1, abs(t)))
        print(f"  {names[j]:<8} {np.array2string(means[:, j] - t, precision=5)}  a - theory = {a - t:+.2e}  s.e. {se:.1e}")
        if abs(a - t) > crit * se:
            failures.append((names[j], t, a, se))
    assert not failures, (failures, crit)


def test_check_removes_the_kernel_rate():
    """freeprob check extrapolates a kernel matrix's N^-1/2 bias, and a random-feature model's 1/N bias."""
    from freeprob.montecarlo.check import finite_size_rate

    assert finite_size_rate(kernel_law("tanh(x)", sympy.Integer(3)).expr) == 0.5
    Y = fp.entrywise("tanh(x)", fp.gaussian("W", (p, n)) @ X / sympy.sqrt(n))
    assert finite_size_rate(Y @ Y.T / n) == 1.0
    report = fp.check(kernel_law("x**2 - 1", sympy.Integer(3)), n=80, reps=3, seed=1)
    assert report.rate == 0.5 and "N^-0.5 bias" in report.text() and report.as_dict()["rate"] == 0.5
