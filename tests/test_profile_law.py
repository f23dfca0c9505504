"""Laws of continuous variance profiles (freeprob.ProfileLaw), checked against independent answers.

The Dykema-Haagerup closed form, derived here from the continuum vector Dyson
equation of ``T T^T / n`` with the profile ``s(r, c) = Heaviside(c - r)`` (an
upper-triangular Gaussian): ``g(r) = 1/(z - A(r))`` on the rows and
``h(c) = 1/(1 - B(c))`` on the columns, with ``A(r) = int_r^1 h`` and
``B(c) = int_0^c g``, and ``G = B(1)``. Then ``A' = -1/(1 - B)`` and
``B' = 1/(z - A)``, so ``((z - A)(1 - B))' = 1 - 1 = 0``: ``(z - A)(1 - B) = K``.
At ``r = 1`` (``A = 0``) ``K = z (1 - G)``; ``B' = (1 - B)/K`` gives
``1 - B(c) = exp(-c/K)``, so ``1 - G = exp(-1/K)`` and ``K = z exp(-1/K)``:
``w = -1/K`` solves ``w e^w = -1/z``, ``w = W(-1/z)`` (Lambert W, principal
branch above the axis) and ``G(z) = 1 - exp(W(-1/z))``. Its series at infinity
gives ``k^k/(k+1)!`` (checked below) and its right edge, where
``z = -1/(v log v)`` (``v = 1 - G``) is stationary (``log v = -1``), is ``e``.
The engine never sees this formula.
"""

import io
import json
import math

import mpmath
import numpy as np
import pytest
import sympy

import freeprob as fp
from freeprob.cli.engine import main
from freeprob.montecarlo.stats import student_t_quantile
from freeprob.reduce.blocks import discretize
from freeprob.solve.richardson import richardson
from freeprob.solve.vector_dyson import gram_moments, solve_gram


def dykema_haagerup(z):
    """``G(z) = 1 - exp(W(-1/z))`` (module docstring), above the axis or at ``x + i0``."""
    return complex(1 - mpmath.exp(mpmath.lambertw(-1 / mpmath.mpc(z))))


@pytest.fixture(scope="module")
def triangular():
    n = fp.dims("n")
    T = fp.gaussian("T", (n, n), profile="Heaviside(c - r)")
    return fp.ProfileLaw(T @ T.T / n, "eigenvalues", {n: 1})


@pytest.fixture(scope="module")
def smooth():
    p, n = fp.dims("p n")
    X = fp.gaussian("X", (p, n), profile="1 + r*c")
    return fp.ProfileLaw(X @ X.T / n, "eigenvalues", {p: "1/2", n: 1})


def test_closed_form_is_the_dykema_haagerup_law():
    """The closed form itself: moments k^k/(k+1)! from its series (mpmath Taylor in 1/z), edge at e."""
    coeffs = mpmath.taylor(lambda t: 1 - mpmath.exp(mpmath.lambertw(-t)) if t != 0 else mpmath.mpf(0), 0, 6)
    for k in range(1, 6):
        assert abs(coeffs[k + 1] - mpmath.mpf(k) ** k / mpmath.factorial(k + 1)) < 1e-12


@pytest.mark.parametrize("z", [1 + 0.5j, 0.2 + 0.05j, 3 + 1j, 0.3, 1.0, 2.5])
def test_triangular_cauchy_against_the_closed_form(triangular, z):
    est = triangular.cauchy(z)
    exact = dykema_haagerup(z)
    assert abs(est.value - exact) <= est.error  # the estimate bounds the true error
    assert est.error < 1e-8


def test_triangular_density_against_the_closed_form(triangular):
    d = triangular.density("1")
    assert abs(d.value - (-dykema_haagerup(1.0).imag / math.pi)) <= d.error < 1e-10
    assert triangular.density(-1).value == 0.0


def test_triangular_support_is_zero_to_e(triangular):
    [(lo, hi)] = triangular.support()
    assert lo.value == 0.0 and lo.error == 0.0
    assert abs(hi.value - math.e) <= hi.error < 1e-10
    assert triangular.atoms() == []


def test_triangular_moments_against_exact_profile_moments(triangular):
    """The extrapolated moments of the discretized laws (their series) against the exact route
    (fp.profile_moments: exact rational moments of the block reduction, exact extrapolation) and k^k/(k+1)!;
    the law's exact moments (the vector equation's series in rationals) against k^k/(k+1)!."""
    est = triangular.moments_estimate(8)
    exact = fp.profile_moments(triangular.expr, "eigenvalues", triangular.ratios, 4)
    for k in range(1, 9):
        closed = k ** k / math.factorial(k + 1)
        assert abs(est.value[k - 1] - closed) <= est.error[k - 1]
        if k <= 4:
            assert abs(est.value[k - 1] - float(exact[k - 1])) <= est.error[k - 1]
    assert triangular.moments(4) == [sympy.Rational(k ** k, math.factorial(k + 1)) for k in range(1, 5)]


def test_points_beyond_the_reach_of_the_extrapolation_are_refused(triangular):
    """Near the hard edge 0 the density ~ 1/(x log^2 x) and the discretized laws converge slowly there."""
    with pytest.raises(fp.ConvergenceError, match="error estimate"):
        triangular.cauchy("1e-4")
    with pytest.raises(fp.DomainError, match="hard edge"):
        triangular.density(0)
    with pytest.raises(fp.ConvergenceError, match="above the tolerance"):
        triangular.cauchy(2.7, tol=1e-12)


@pytest.mark.parametrize("profile", ["Heaviside(c - r)", "1 + r*c"])
def test_vector_dyson_equals_the_block_reduction(profile):
    """On 8 x 8 cells the fast vector Dyson equation is the discretized law of the generic reduction."""
    p, n = fp.dims("p n")
    X = fp.gaussian("X", (p, n), profile=profile)
    ratios = {p: "1/2", n: 1}
    law = fp.ProfileLaw(X @ X.T / n, "eigenvalues", ratios)
    generic = fp.eigenvalue_law(discretize(X @ X.T / n, 8), ratios)
    zs = np.array([1 + 0.3j, 0.7, 2.0 + 0.01j])
    A, B, w, _ = law._tables(8)
    ours = solve_gram(A, B, w, zs, law.scale).G
    assert np.max(np.abs(ours - generic.cauchy_fast(zs))) < 1e-11
    exact = generic.moments(5)
    assert np.allclose(gram_moments(A, B, w, 5), [float(m) for m in exact], rtol=1e-12, atol=0)


def test_smooth_profile_moments_and_mass(smooth):
    """1 + r c: even powers of 1/m; the first exact moments against the extrapolated ones; total mass one."""
    assert smooth.exponents == (2, 4, 6, 8)
    exact = fp.profile_moments(smooth.expr, "eigenvalues", smooth.ratios, 3)
    assert exact == [sympy.Rational(5, 4), sympy.Rational(19, 8), sympy.Rational(2131, 384)]
    assert smooth.moments(3) == exact  # the law's own exact route: the series of the vector equation
    est = smooth.moments_estimate(3)
    assert np.all(np.abs(est.value - [float(m) for m in exact]) <= est.error)
    [(lo, hi)] = smooth.support()
    assert 0 < lo.value < hi.value


@pytest.mark.slow
def test_smooth_profile_against_monte_carlo(smooth):
    """Moments and quantiles against Monte-Carlo (tolerances from standard errors, fp.check)."""
    report = fp.check(smooth, n=400, reps=4, seed=3)
    assert report.passed, report.text()


def test_piecewise_constant_profiles_keep_the_exact_route():
    """A piecewise-constant profile written as a formula is solved exactly by the splitting (SpectralLaw),
    and ProfileLaw sends it there."""
    n = fp.dims("n")
    T = fp.gaussian("T", (n, n), profile="1 + 3*Heaviside(r - 1/2)*Heaviside(c - 1/3)")
    assert not fp.has_continuous_profile(T @ T.T / n)
    law = fp.eigenvalue_law(T @ T.T / n, {n: 1})
    assert law.moments(2)[0] == sympy.Rational(1, 1) + 3 * sympy.Rational(1, 2) * sympy.Rational(2, 3)
    with pytest.raises(fp.DomainError, match="SpectralLaw"):
        fp.ProfileLaw(T @ T.T / n, "eigenvalues", {n: 1})


def test_bad_inputs_are_typed_errors():
    p, n = fp.dims("p n")
    X = fp.gaussian("X", (p, n), profile="1 + r")
    W = fp.wigner("W", p)
    with pytest.raises(fp.DomainError, match="exact moments only"):
        fp.ProfileLaw(X @ X.T / n + W / sympy.sqrt(p), "eigenvalues", {p: 1, n: 1})
    with pytest.raises(fp.DomainError, match="geometric"):
        fp.ProfileLaw(X @ X.T / n, "eigenvalues", {p: 1, n: 1}, cells=(8, 12, 16))
    with pytest.raises(fp.ScalingError):
        fp.ProfileLaw(X @ X.T, "eigenvalues", {p: 1, n: 1})
    law = fp.ProfileLaw(X @ X.T / n, "eigenvalues", {p: 1, n: 1})
    with pytest.raises(fp.DomainError, match="tol"):
        law.cauchy(1j, tol="x")


def test_singular_profile_is_refused_by_its_error_estimate():
    """Heaviside(r - c)/r^2 (causal attention's profile) is singular at r = 0: the discretized laws do not
    converge in powers of 1/m and the estimate (about 1e-4) refuses the default tolerance."""
    n = fp.dims("n")
    T = fp.gaussian("T", (n, n), profile="Heaviside(r - c)/r**2")
    law = fp.ProfileLaw(T @ T.T / n, "eigenvalues", {n: 1})
    with pytest.raises(fp.ConvergenceError, match="error estimate"):
        law.cauchy(1 + 1j)


def test_transposed_and_singular_value_forms_agree():
    """kappa X^T X is the Gram of X^T; the squared singular values of X/sqrt(n) are those of X X^T/n."""
    p, n = fp.dims("p n")
    X = fp.gaussian("X", (p, n), profile="1 + r*c*c")
    ratios = {p: "1/2", n: 1}
    a = fp.ProfileLaw(X @ X.T / n, "eigenvalues", ratios).cauchy(1 + 1j).value
    b = fp.ProfileLaw(X / sympy.sqrt(n), "squared-singular-values", ratios).cauchy(1 + 1j).value
    assert abs(a - b) < 1e-12
    # X^T X over n rows: G_n = (p/n) G_p + (1 - p/n)/z (the same nonzero eigenvalues)
    c = fp.ProfileLaw(X.T @ X / n, "eigenvalues", ratios).cauchy(1 + 1j).value
    assert abs(c - (0.5 * a + 0.5 / (1 + 1j))) < 1e-10
    assert fp.ProfileLaw(X.T @ X / n, "eigenvalues", ratios).atoms() == [(0.0, 0.5)]


def test_richardson_error_estimate_is_honest_on_a_known_sequence():
    ms = (8, 16, 32, 64, 128)
    values = [math.pi + 1 / m ** 2 - 5 / m ** 4 + 7 / m ** 7 for m in ms]
    est = richardson(values, ms, (2, 4, 6, 8))
    assert abs(est.value - math.pi) <= est.error < 1e-9
    with pytest.raises(fp.DomainError, match="geometric"):
        richardson(values[:3], (8, 12, 16), (2, 4))


def run(*argv):
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


def test_cli_density_and_law_of_the_triangular_model():
    code, text = run("density", "triangular-gaussian", "--at", "1", "--json")
    assert code == 0
    point = json.loads(text)["points"][0]
    assert abs(float(point["density"]) - (-dykema_haagerup(1.0).imag / math.pi)) < 1e-7
    assert float(point["error"]) < 1e-10
    code, text = run("law", "triangular-gaussian", "--grid", "0.5:2.5:5", "--json")
    assert code == 0
    data = json.loads(text)
    assert data["moments"] == ["1/2", "2/3", "9/8", "32/15"]
    assert abs(float(data["support"][0][1]["value"]) - math.e) < 1e-10
    for row in data["grid"]:
        assert abs(float(row["density"]) - (-dykema_haagerup(float(row["x"])).imag / math.pi)) < 1e-7


def test_cli_density_refuses_digits_beyond_the_estimate():
    code, _ = run("density", "triangular-gaussian", "--at", "2.7", "--dps", "12")
    assert code == 2


@pytest.mark.parametrize("profile, ratio", [("1 + r*c", "1/2"), ("Heaviside(c - r)", "1")])
def test_stieltjes_transform_against_monte_carlo(profile, ratio):
    """(1/N) tr (z - H)^-1 of sampled matrices (profile sampled entry by entry) against the extrapolated G.

    Linear statistics have a bias c/N and fluctuations of order 1/N: the sizes N and N/2 remove the bias
    (Richardson in 1/N) and the standard error comes from the replicates (Student t at level 1e-3)."""
    p, n = fp.dims("p n")
    X = fp.gaussian("X", (p, n), profile=profile)
    law = fp.ProfileLaw(X @ X.T / n, "eigenvalues", {p: ratio, n: 1})
    zs = np.array([1 + 1j, 0.5 + 0.25j, 2.5 + 0.5j])
    theory = law.cauchy_estimate(zs)
    assert np.all(theory.error < 1e-9)
    rng = np.random.default_rng(11)

    def stat(size, reps):
        out = []
        for _ in range(reps):
            s = fp.sample_spectrum(law, size, rng)
            out.append(np.mean(1 / (zs[None, :] - s[:, None]), axis=0))
        return np.array(out)

    big, half = stat(400, 6), stat(200, 12)
    est = 2 * big.mean(0) - half.mean(0)
    crit = student_t_quantile(1 - 1e-3 / (2 * 2 * len(zs)), len(big) + len(half) - 2)
    for part in (np.real, np.imag):
        se = np.sqrt(4 * part(big).var(0, ddof=1) / len(big) + part(half).var(0, ddof=1) / len(half))
        t = np.abs(part(est) - part(theory.value)) / se
        assert np.all(t < crit), (profile, part.__name__, t, part(est), part(theory.value))


@pytest.mark.parametrize("profile", ["Heaviside(c - r)*(1 + r + c**2)", "Heaviside(c - 1/3 - r/3)"])
def test_error_estimate_bounds_the_distance_to_a_finer_sequence(profile):
    """The estimate of the default cells (8..128) bounds the distance to the extrapolation over 16..256.

    A jump along the grid's diagonal times a smooth factor reaches ~1e-13; a jump along a line through
    no grid vertex converges irregularly and its estimate (about 1e-3) is large, and honest."""
    n = fp.dims("n")
    T = fp.gaussian("T", (n, n), profile=profile)
    zs = np.array([1 + 1j, 0.5 + 0.1j, 1.5])
    coarse = fp.ProfileLaw(T @ T.T / n, "eigenvalues", {n: 1}).cauchy_estimate(zs)
    fine = fp.ProfileLaw(T @ T.T / n, "eigenvalues", {n: 1}, cells=(16, 32, 64, 128, 256)).cauchy_estimate(zs)
    assert np.all(np.abs(coarse.value - fine.value) <= coarse.error)


@pytest.mark.slow
def test_cli_check_of_the_triangular_model_is_a_typed_refusal():
    """The density ~ 1/(x log^2 x) at the hard edge 0 is not a power law: no distribution table, exit code 2."""
    code, _ = run("check", "triangular-gaussian", "--n", "50", "--reps", "3")
    assert code == 2


def test_cli_density_at_the_hard_edge_is_a_typed_refusal():
    code, _ = run("density", "triangular-gaussian", "--at", "0")
    assert code == 2


def test_square_smooth_profile_support_has_a_hard_edge_and_a_consistent_soft_edge():
    """1 + r c on a square matrix: hard edge 0, soft right edge. The edges of all five discretizations
    must fit one expansion (an edge search that lands on another root of the equation at one m, as a
    start taken from the far end of the support once did, shows up as an estimate of 1e-2)."""
    n = fp.dims("n")
    T = fp.gaussian("T", (n, n), profile="1 + r*c")
    [(lo, hi)] = fp.ProfileLaw(T @ T.T / n, "eigenvalues", {n: 1}).support()
    assert lo.value == 0.0
    assert 5 < hi.value < 5.2 and hi.error < 1e-10
