"""Deterministic matrices with an atomic spectrum (dimensions split into weighted parts).

Closed forms, each derived here independently of the engine:

* ``D + W`` with ``D = +-1`` equally weighted and ``W`` a semicircular Wigner
  matrix: subordination ``G(z) = G_D(z - G(z))`` with ``G_D(w) = w/(w^2 - 1)``
  gives ``G (z - G)^2 = z`` (``G (w^2 - 1) = w`` with ``w = z - G``), a cubic.
  Its double roots (``f'(G) = (z - G)(z - 3G) = 0``, so ``G = z/3``, then
  ``4 z^3/27 = z``) put the edges at ``+-3 sqrt(3)/2``; with ``G = h/z`` and
  ``t = 1/z^2`` the series ``h = (1 - t h)^-2`` gives the even moments,
  ``m_2j = binomial(3j + 1, j)/(j + 1)``. At 0 the density has a cusp
  (``G^3 ~ -z``).
* The sample covariance ``S X X^T S / n`` with ``Sigma = S^2`` of spectrum
  ``{1: 1/2, 4: 1/2}``: Silverstein's equation
  ``m = int dH(tau) / (tau (1 - c - c z m) - z)`` (``G = -m``, ``c = p/n``),
  solved here by Newton's method in mpmath; its first moments are
  ``tr Sigma``, ``tr Sigma^2 + c (tr Sigma)^2`` and
  ``tr Sigma^3 + 3 c tr Sigma tr Sigma^2 + c^2 (tr Sigma)^3``.
"""

import types

import mpmath
import numpy as np
import pytest
import sympy

import freeprob as fp
from freeprob.expr.modelfile import parse_model
from freeprob.expr.tree import Matrix
from freeprob.montecarlo.sample import sample_matrix
from freeprob.reduce.blocks import discretize, extrapolate

DPS = 30


def _mpc(z):
    return mpmath.mpc(str(complex(z).real), str(complex(z).imag))


def _close(a, b, dps=DPS):
    """|a - b| <= 10^-(dps - 2) max(1, |b|): the digits asked for, with two digits for the last rounding."""
    with mpmath.workdps(dps + 10):
        return abs(mpmath.mpc(a) - mpmath.mpc(b)) <= mpmath.mpf(10) ** (2 - dps) * max(1, abs(mpmath.mpc(b)))


@pytest.fixture(scope="module")
def dims():
    return fp.dims("p n")


@pytest.fixture(scope="module")
def bernoulli_plus_semicircle(dims):
    p, _ = dims
    D = fp.deterministic("D", (p, p), spectrum={1: "1/2", -1: "1/2"})
    W = fp.wigner("W", p)
    return fp.eigenvalue_law(D + W / sympy.sqrt(p), ratios={p: 1})


def _cubic_root(z, dps):
    """The root of ``G (z - G)^2 = z`` with ``Im G < 0`` (``Im z > 0``), by subordination iteration then Newton."""
    with mpmath.workdps(dps + 20):
        z = _mpc(z) if not isinstance(z, mpmath.mpc) else z
        g = 1 / z
        for _ in range(200):
            w = z - g
            g = w / (w * w - 1)
        g = mpmath.findroot(lambda x: x * (z - x) ** 2 - z, g)
        assert g.imag < 0
        return g


@pytest.mark.parametrize("z", ["0.3+0.5j", "-2+0.1j", "2.7+0.05j", "0.5+3j"])
def test_bernoulli_plus_semicircle_cauchy(bernoulli_plus_semicircle, z):
    g = bernoulli_plus_semicircle.cauchy(z, dps=DPS)
    assert _close(g, _cubic_root(complex(z), DPS))


def test_bernoulli_plus_semicircle_density_and_edges(bernoulli_plus_semicircle):
    law = bernoulli_plus_semicircle
    xs = np.linspace(-2.5, 2.5, 10)  # not 0: the law has a cusp there (density ~ |x|^(1/3), G^3 ~ -z)
    d = law.density_fast(xs)
    for x, dx in zip(xs, d):
        roots = mpmath.polyroots([1, -2 * x, x * x, -x], maxsteps=200, extraprec=60)  # G^3 - 2x G^2 + x^2 G - x
        im = min(r.imag for r in roots)
        assert abs(dx - float(-im / mpmath.pi)) <= 1e-10 * max(1, abs(complex(min(roots, key=lambda r: r.imag))))
    (lo, hi), = law.support(dps=20)
    with mpmath.workdps(30):
        edge = 3 * mpmath.sqrt(3) / 2
    assert abs(hi - edge) < mpmath.mpf(10) ** -18 and abs(lo + edge) < mpmath.mpf(10) ** -18
    assert law.atoms() == []


def test_bernoulli_plus_semicircle_exact_moments(bernoulli_plus_semicircle):
    t = sympy.Symbol("t")
    h = sympy.Integer(1)
    for _ in range(6):
        h = sympy.series((1 - t * h) ** -2, t, 0, 6).removeO()
    even = [h.coeff(t, j) for j in range(1, 6)]
    assert even == [sympy.binomial(3 * j + 1, j) / (j + 1) for j in range(1, 6)]  # 2, 7, 30, 143, 728
    moments = bernoulli_plus_semicircle.moments(10)
    assert moments[1::2] == even and all(m == 0 for m in moments[0::2])


def _silverstein(z, c, spectrum, dps):
    """``G = -m`` with ``m = sum_k w_k / (tau_k (1 - c - c z m) - z)`` by Newton's method (Im m > 0)."""
    with mpmath.workdps(dps + 20):
        z = _mpc(z)
        c = mpmath.mpf(sympy.Rational(c).p) / sympy.Rational(c).q
        spec = [(mpmath.mpf(int(a)), mpmath.mpf(sympy.Rational(w).p) / sympy.Rational(w).q) for a, w in spectrum]

        def f(m):
            return m - sum(w / (a * (1 - c - c * z * m) - z) for a, w in spec)

        m = -1 / z
        for _ in range(500):  # the fixed-point map is a contraction of the upper half-plane for Im z > 0
            m = sum(w / (a * (1 - c - c * z * m) - z) for a, w in spec)
        m = mpmath.findroot(f, m)
        assert m.imag > 0
        return -m


@pytest.fixture(scope="module")
def covariance(dims):
    p, n = dims
    S = fp.deterministic("S", (p, p), spectrum={1: "1/2", 2: "1/2"})
    X = fp.gaussian("X", (p, n))
    return fp.eigenvalue_law(S @ X @ X.T @ S / n, ratios={p: "1/2", n: 1})


@pytest.mark.parametrize("z", ["1.5+0.4j", "4+0.05j", "0.2+0.02j", "-1+1j"])
def test_sample_covariance_against_silverstein(covariance, dims, z):
    p, n = dims
    g = covariance.cauchy(z, dps=DPS)
    assert _close(g, _silverstein(complex(z), "1/2", [(1, "1/2"), (4, "1/2")], DPS))
    # the same eigenvalues, n x n with D = Sigma in the middle: G_n = c G_p + (1 - c)/z
    D = fp.deterministic("D", (p, p), spectrum={1: "1/2", 4: "1/2"})
    X = fp.gaussian("X", (p, n))
    companion = fp.eigenvalue_law(X.T @ D @ X / n, ratios={p: "1/2", n: 1})
    with mpmath.workdps(DPS + 10):
        zz = _mpc(complex(z))
        assert _close(companion.cauchy(z, dps=DPS), g / 2 + (1 - mpmath.mpf(1) / 2) / zz)


def test_sample_covariance_exact_moments(covariance):
    c = sympy.Rational(1, 2)
    tr = [sympy.Rational(1 + 4 ** k, 2) for k in range(4)]  # tr Sigma^k
    expected = [tr[1], tr[2] + c * tr[1] ** 2, tr[3] + 3 * c * tr[1] * tr[2] + c ** 2 * tr[1] ** 3]
    assert covariance.moments(3) == expected
    assert covariance.atoms() == []


def test_commuting_deterministic_matrices_are_diagonal_in_one_basis(dims):
    """D1 D2 with cells in the order written equals one matrix with the products on the common cells."""
    p, _ = dims
    D1 = fp.deterministic("D1", (p, p), spectrum={1: "1/2", 2: "1/2"})
    D2 = fp.deterministic("D2", (p, p), spectrum={10: "1/4", 20: "3/4"})
    D3 = fp.deterministic("D3", (p, p), spectrum={10: "1/4", 20: "1/4", 40: "1/2"})
    W = fp.wigner("W", p) / sympy.sqrt(p)
    a = fp.eigenvalue_law(D1 @ D2 + W, ratios={p: 1})
    b = fp.eigenvalue_law(D3 + W, ratios={p: 1})
    assert a.moments(5) == b.moments(5)
    assert _close(a.cauchy("20+1j", dps=DPS), b.cauchy("20+1j", dps=DPS))
    # and D1 + D2 has the spectrum {11: 1/4, 21: 1/4, 22: 1/2} on the cells
    alone = types.SimpleNamespace(expr=D1 + D2, law="eigenvalues", ratios={p: 1}, params={})  # no law: no randomness
    sample = np.linalg.eigvalsh(sample_matrix(alone, 8))
    assert sorted(sample) == [11.0, 11.0, 21.0, 21.0, 22.0, 22.0, 22.0, 22.0]


def test_monte_carlo_samples_the_diagonal_with_multiplicities(covariance):
    m = sample_matrix(covariance, 20, 0)  # p = 10: S = diag(1 x 5, 2 x 5)
    S = [leaf for leaf in covariance.expr.leaves() if leaf.name == "S"][0]
    from freeprob.montecarlo.sample import deterministic_diagonal
    assert list(deterministic_diagonal(S, 10)) == [1.0] * 5 + [2.0] * 5
    assert m.shape == (10, 10)


def test_monte_carlo_check_of_d_plus_wigner(dims):
    """D = +-2 (a gap between two bulks; the cusp of D = +-1 at 0 is beyond the distribution table)."""
    p, _ = dims
    D = fp.deterministic("D", (p, p), spectrum={-2: "1/2", 2: "1/2"})
    law = fp.eigenvalue_law(D + fp.wigner("W", p) / sympy.sqrt(p), ratios={p: 1})
    assert len(law.support()) == 2
    rep = fp.check(law, n=600, reps=4, seed=3)
    assert rep.passed, rep.text()


MODEL = {
    "name": "t", "law": "eigenvalues", "expression": "D + W / sqrt(p)",
    "dimensions": {"p": 1},
    "matrices": {"D": {"kind": "deterministic", "shape": ["p", "p"], "spectrum": {"1": "1/2", "-1": "1/2"}},
                 "W": {"kind": "wigner", "shape": ["p", "p"]}},
}


def test_model_file_matches_the_api(bernoulli_plus_semicircle):
    law = fp.law_of(parse_model(MODEL))
    assert law.moments(6) == bernoulli_plus_semicircle.moments(6)
    assert fp.law_of(fp.find_model("population-covariance")).moments(3) == [
        sympy.Rational(5, 2), sympy.Rational(93, 8), sympy.Rational(2185, 32)]


def _with(matrix, **changes):
    import copy
    data = copy.deepcopy(MODEL)
    data["matrices"]["D"].update(changes)
    for k, v in list(data["matrices"]["D"].items()):
        if v is None:
            del data["matrices"]["D"][k]
    return data


@pytest.mark.parametrize("changes, words", [
    ({"spectrum": {"1": "1/2", "-1": "1/3"}}, "sum to 5/6"),
    ({"spectrum": {"1": "1/2", "1.0": "1/2"}}, "same number"),
    ({"spectrum": {"__import__('os')": "1"}}, "not allowed"),
    ({"spectrum": {"1": "-1/2", "2": "3/2"}}, "positive"),
    ({"spectrum": None}, "spectrum"),
    ({"spectrum": "1"}, "table"),
    ({"variance": "2"}, "not a variance"),
    ({"profile": "Heaviside(r - 1/2)"}, "Gaussian matrices only"),
])
def test_model_file_errors(changes, words):
    with pytest.raises(fp.FreeProbError) as info:
        fp.law_of(parse_model(_with(MODEL, **changes)))
    assert words in str(info.value)


def test_api_errors(dims):
    p, n = dims
    with pytest.raises(fp.ShapeError):
        fp.deterministic("D", (p, n), spectrum={1: 1})
    with pytest.raises(fp.DomainError, match="sum to"):
        fp.deterministic("D", (p, p), spectrum={1: 0.5})
    with pytest.raises(fp.DomainError, match="map each value"):
        fp.deterministic("D", (p, p), spectrum=[1, 2])
    with pytest.raises(fp.DomainError, match="only for them"):
        Matrix("X", (p, n), "gaussian", 1, ((1, 1),))


# -- variance profiles, piecewise constant on a grid ----------------------------------------------------------

CHECKER = "1/2 + Heaviside(r - 1/2) + Heaviside(c - 1/2) - 2*Heaviside(r - 1/2)*Heaviside(c - 1/2)"


def test_profile_with_constant_row_and_column_means_is_marchenko_pastur(dims):
    """Variances 1/2 on the diagonal blocks and 3/2 off them: every row and column has mean variance 1,
    so the vector Dyson equation has a constant solution and T T^T/n is the square Marchenko-Pastur law
    (Catalan moments, support [0, 4])."""
    _, n = dims
    T = fp.gaussian("T", (n, n), profile=CHECKER)
    law = fp.eigenvalue_law(T @ T.T / n, ratios={n: 1})
    assert law.moments(6) == [sympy.catalan(k) for k in range(1, 7)]
    with mpmath.workdps(40):
        z = mpmath.mpc("1.3", "0.2")
        mp = (z - mpmath.sqrt(z) * mpmath.sqrt(z - 4)) / (2 * z)  # G of the square Marchenko-Pastur law
        assert _close(law.cauchy("1.3+0.2j", dps=DPS), mp)
    sv = fp.singular_value_law(T / sympy.sqrt(n), ratios={n: 1})
    assert sv.moments(4) == [sympy.catalan(k) for k in range(1, 5)]


def test_profile_with_empty_columns_is_a_smaller_gaussian(dims):
    """Variance 2 on half of the columns, 0 on the others: T T^T/n = X' X'^T/(n/2), Marchenko-Pastur of ratio 2p/n."""
    p, n = dims
    T = fp.gaussian("T", (p, n), profile="2*Heaviside(c - 1/2)")
    law = fp.eigenvalue_law(T @ T.T / n, ratios={p: "1/2", n: 1})
    lam = 1  # 2 p / n
    assert law.moments(5) == [sum(sympy.binomial(k, j) * sympy.binomial(k, j - 1) / k * lam ** (j - 1)
                                  for j in range(1, k + 1)) for k in range(1, 6)]


def test_row_profile_equals_population_covariance(dims, covariance):
    """Row variances 1 and 4 on the two halves of p: the same matrix in law as S X with S^2 = diag(1, 4)."""
    p, n = dims
    T = fp.gaussian("T", (p, n), profile="1 + 3*Heaviside(r - 1/2)")
    law = fp.eigenvalue_law(T @ T.T / n, ratios={p: "1/2", n: 1})
    assert law.moments(5) == covariance.moments(5)
    assert _close(law.cauchy("2+0.3j", dps=DPS), covariance.cauchy("2+0.3j", dps=DPS))


def test_block_profile_against_monte_carlo(dims):
    """A profile with cuts at 1/3 (columns) and 1/2 (rows) on one square dimension (the cuts are merged)."""
    _, n = dims
    T = fp.gaussian("T", (n, n), profile="1 + 3*Heaviside(r - 1/2)*Heaviside(c - 1/3)")
    law = fp.eigenvalue_law(T @ T.T / n, ratios={n: 1})
    assert law.reduction.parts.edges[n] == (0, sympy.Rational(1, 3), sympy.Rational(1, 2), 1)
    rep = fp.check(law, n=600, reps=4, seed=5)
    assert rep.passed, rep.text()


def test_profile_model_file():
    data = {"name": "t", "law": "eigenvalues", "expression": "T @ T.T / n", "dimensions": {"n": 1},
            "matrices": {"T": {"kind": "gaussian", "shape": ["n", "n"], "profile": CHECKER}}}
    assert fp.law_of(parse_model(data)).moments(3) == [1, 2, 5]


@pytest.mark.parametrize("profile", ["Heaviside(c - r)", "1 + r", "Heaviside(c**2 - 1/4)"])
def test_continuous_profiles_are_refused_by_the_law(dims, profile):
    p, n = dims
    T = fp.gaussian("T", (p, n), profile=profile)
    with pytest.raises(fp.DomainError, match="not piecewise constant on a grid"):
        fp.eigenvalue_law(T @ T.T / n, ratios={p: 1, n: 1})


@pytest.mark.parametrize("profile, words", [
    ("Heaviside(c - 1/2) - 1", "non-negative"),
    ("0*r", "vanishes everywhere"),
    ("exec('1')", "not allowed"),
    ("1 + q", "q"),
])
def test_profile_errors(dims, profile, words):
    p, n = dims
    with pytest.raises(fp.DomainError) as info:
        fp.gaussian("T", (p, n), profile=profile)
    assert words in str(info.value)



# -- continuous profiles: discretization and exact extrapolation ----------------------------------------------

def test_triangular_gaussian_dykema_haagerup_moments():
    """T T^T/n for the upper-triangular Gaussian (profile Heaviside(c - r)) has the moments k^k/(k+1)!.

    Each discretization (midpoints of m x m cells, 1/2 on the diagonal cells) has exact rational moments;
    they are polynomials in 1/m, so the extrapolation through m = 1..6 is exact, and the extrapolation
    through one point fewer agrees exactly (the check of that hypothesis)."""
    data = {"name": "t", "law": "eigenvalues", "expression": "T @ T.T / n", "dimensions": {"n": 1},
            "matrices": {"T": {"kind": "gaussian", "shape": ["n", "n"], "profile": "Heaviside(c - r)"}}}
    model = parse_model(data)
    values = {m: fp.eigenvalue_law(discretize(model.expr, m), ratios=model.ratios).moments(4) for m in range(1, 7)}
    assert values[2] != values[6]  # the discretization does matter
    for k in range(1, 5):
        limit, spread = extrapolate({m: v[k - 1] for m, v in values.items()})
        assert spread == 0
        assert limit == sympy.Integer(k) ** k / sympy.factorial(k + 1)


def test_triangular_gaussian_against_monte_carlo(dims):
    """The continuous profile sampled entry by entry against the extrapolated moments: the O(1/N) bias is
    removed by Richardson extrapolation from N/2 and N (2 m(N) - m(N/2)), and the result must lie within
    5 of its standard errors of k^k/(k+1)!."""
    _, n = dims
    T = fp.gaussian("T", (n, n), profile="Heaviside(c - r)")
    law = types.SimpleNamespace(expr=T @ T.T / n, law="eigenvalues", ratios={n: 1}, params={})
    rng = np.random.default_rng(7)
    big = [np.linalg.eigvalsh(sample_matrix(law, 800, rng)) for _ in range(4)]
    half = [np.linalg.eigvalsh(sample_matrix(law, 400, rng)) for _ in range(8)]
    for k in (1, 2, 3):
        a = np.array([np.mean(s ** k) for s in big])
        b = np.array([np.mean(s ** k) for s in half])
        corrected = 2 * a.mean() - b.mean()
        se = np.sqrt(4 * a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
        exact = float(sympy.Integer(k) ** k / sympy.factorial(k + 1))
        assert abs(corrected - exact) <= 5 * se, (k, corrected, exact, se)


def test_deterministic_matrix_inside_an_inverse_against_monte_carlo(dims):
    """inv(X X^T/n + D): the certificate reads the spectrum of D (its interval [1, 2] keeps 0 away)."""
    p, n = dims
    D = fp.deterministic("D", (p, p), spectrum={1: "1/2", 2: "1/2"})
    X = fp.gaussian("X", (p, n))
    law = fp.eigenvalue_law(fp.inv(X @ X.T / n + D), ratios={p: "1/2", n: 1})
    rep = fp.check(law, n=400, reps=4, seed=11)
    assert rep.passed, rep.text()
    E = fp.deterministic("E", (p, p), spectrum={-1: "1/2", 2: "1/2"})
    with pytest.raises(fp.DomainError):
        fp.eigenvalue_law(fp.inv(X @ X.T / n + E), ratios={p: "1/2", n: 1}).system.subs({p: sympy.Rational(1, 2),
                                                                                           n: 1})



@pytest.mark.parametrize("weights", [(1, 2, 1, 2), (1, 3, 1, 6, 1, 2), (1, 10, 9, 10), (2, 7, 3, 7, 1, 7, 1, 7)])
def test_the_rotation_of_the_first_output_is_an_exact_householder_reflection(weights):
    # the rotation that makes the first output sum_k sqrt(w_k) u_k: symmetric, orthogonal, first row sqrt(w),
    # in exact numbers with no radical left in a denominator
    from freeprob.reduce.blocks import _householder

    w = [sympy.Rational(a, b) for a, b in zip(weights[::2], weights[1::2])]
    h = sympy.Matrix(_householder(w))
    m = len(w)
    assert sympy.expand(h * h.T - sympy.eye(m)) == sympy.zeros(m)
    assert h == h.T
    assert all(sympy.expand(h[0, k] - sympy.sqrt(w[k])) == 0 for k in range(m))
    assert all(sympy.denom(sympy.together(x)).is_Rational for x in h)
