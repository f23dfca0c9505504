"""Entrywise functions as expression nodes (freeprob.expr.entrywise): random-feature Gram matrices.

``Y = f(W X / sqrt(n0))`` with ``W`` (n1 x n0) and ``X`` (n0 x m) Gaussian of
unit variance, and the eigenvalue law of ``Y Y^T / m``, for three activations
(tanh, centred ReLU, a polynomial) at three aspect ratios (one with an atom
at 0 and one with a hard edge at 0):

* the engine's law equals, to the 30 digits asked, the law of the linear
  surrogate built here by hand, ``mu1 W X / sqrt(n0) + Z`` with ``Z`` of
  variance ``nu^2``, whose coefficients are computed in this file by direct
  mpmath quadrature (not by the engine's derivation);
* for the polynomial activation, whose coefficients are rational, the exact
  moments equal the second moment computed by hand below;
* the conditions of the equivalence are refused with typed errors;
* (slow) Monte-Carlo of the real nonlinear model (f applied to the sampled
  ``W X / sqrt(n0)``) agrees with the theory once the finite-size trend
  ``a + b/N`` is fitted over several sizes.
"""

import mpmath
import numpy as np
import pytest
import sympy

import freeprob as fp
from _replicates import replicate_statistics, theory_statistics
from freeprob._errors import ConvergenceError
from freeprob.expr.modelfile import parse_model
from freeprob.montecarlo.stats import fit_trend, student_t_quantile

n1, n0, m = fp.dims("n1 n0 m")
W = fp.gaussian("W", (n1, n0))
X = fp.gaussian("X", (n0, m))
M = W @ X / sympy.sqrt(n0)

ACTIVATIONS = {
    "tanh": "tanh(x)",
    "centred-relu": "Max(x, 0) - 1/sqrt(2*pi)",
    "polynomial": "x + (x**2 - 1)/2",
}
#: (n1, n0, m): wide (n1 < m), square (n1 = m: hard edge at 0), tall (n1 = 2 m: an atom of mass 1/2 at 0)
RATIOS = {
    "wide": (sympy.Integer(1), sympy.Rational(1, 2), sympy.Integer(2)),
    "square": (sympy.Integer(1), sympy.Integer(1), sympy.Integer(1)),
    "tall": (sympy.Integer(2), sympy.Integer(1), sympy.Integer(1)),
}


def ratios_of(key):
    a, b, c = RATIOS[key]
    return {n1: a, n0: b, m: c}


def hand_coefficients(text, dps=40):
    """``(mu1, nu^2)`` of f at unit variance by direct quadrature: E x f(x), E f(x)^2 - mu0^2 - mu1^2 (mu0 = E f)."""
    funcs = {
        "tanh": mpmath.tanh,
        "centred-relu": lambda t: max(t, 0) - 1 / mpmath.sqrt(2 * mpmath.pi),
        "polynomial": lambda t: t + (t ** 2 - 1) / 2,
    }
    f = funcs[text]
    with mpmath.workdps(dps + 20):
        w = lambda t: mpmath.exp(-t * t / 2) / mpmath.sqrt(2 * mpmath.pi)  # noqa: E731
        e = lambda g: mpmath.quad(lambda t: g(t) * w(t), [-mpmath.inf, 0, mpmath.inf])  # noqa: E731
        mu0 = e(f)
        mu1 = e(lambda t: t * f(t))
        nu2 = e(lambda t: f(t) ** 2) - mu0 ** 2 - mu1 ** 2
        assert abs(mu0) < mpmath.mpf(10) ** (-dps)  # the three activations are centred at unit variance
        return sympy.Rational(mpmath.nstr(mu1, dps + 5)), sympy.Rational(mpmath.nstr(nu2, dps + 5))


def gram_law(activation, key):
    Y = fp.entrywise(ACTIVATIONS[activation], M)
    return fp.eigenvalue_law(Y @ Y.T / m, ratios=ratios_of(key), name=f"{activation}-{key}")


def surrogate_law(activation, key):
    mu1, nu2 = hand_coefficients(activation)
    Z = fp.gaussian("Zhand", (n1, m), variance=nu2)
    S = mu1 * M + Z
    return fp.eigenvalue_law(S @ S.T / m, ratios=ratios_of(key), name=f"surrogate-{activation}-{key}")


# -- (a) the law is the law of the linear surrogate -----------------------------------------------------------


@pytest.mark.parametrize("key", sorted(RATIOS))
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_law_equals_hand_built_surrogate(activation, key):
    """30-digit densities at three bulk points, and the 15-digit support edges, equal those of the hand-built surrogate.

    The hand coefficients carry 40 digits and the engine's 50, so the two
    surrogates differ by less than 1e-39 in their coefficients; the density
    moves by a bounded multiple of that, far below the 1e-30 asked.
    """
    law, ref = gram_law(activation, key), surrogate_law(activation, key)
    (lo, hi), *_ = ref.support(dps=15)
    ctx = mpmath.mp.clone()
    ctx.dps = 40
    for frac in ("1/4", "1/2", "3/4"):
        x = sympy.nsimplify(lo + (hi - lo) * sympy.Rational(frac), rational=True)
        a, b = law.density(x, dps=30), ref.density(x, dps=30)
        assert b > 0
        assert abs(ctx.mpf(a) - ctx.mpf(b)) <= ctx.mpf(10) ** -30 * max(1, abs(ctx.mpf(b))), (x, a, b)
    # edges at 15 digits: the hard edge at 0 of the square case is not verified to 20 digits by the Dyson
    # route (a ConvergenceError, for the surrogate alike)
    edges = law.support(dps=15)
    ref_edges = ref.support(dps=15)
    assert len(edges) == len(ref_edges)
    for (a0, a1), (b0, b1) in zip(edges, ref_edges):
        assert abs(ctx.mpf(a0) - ctx.mpf(b0)) <= ctx.mpf(10) ** -15 * max(1, abs(ctx.mpf(b0)))
        assert abs(ctx.mpf(a1) - ctx.mpf(b1)) <= ctx.mpf(10) ** -15 * max(1, abs(ctx.mpf(b1)))


def test_atom_of_the_tall_gram_matrix():
    """With n1 = 2 m, Y Y^T / m has rank m: an atom of mass exactly 1/2 at 0 (rank of Y, as for the surrogate)."""
    law = gram_law("tanh", "tall")
    atoms = law.atoms(dps=20)
    assert len(atoms) == 1 and atoms[0][0] == 0
    assert abs(atoms[0][1] - mpmath.mpf(1) / 2) < mpmath.mpf(10) ** -20


# -- (b) exact moments where the coefficients are algebraic ------------------------------------------------------


def second_moment_by_hand(mu1, nu2, a, b, c):
    """``lim (1/n1) E Tr (Y Y^T / m)^2`` for ``Y = mu1 W X / sqrt(n0) + Z``, ``Var Z = nu2``, ratios ``a, b, c = n1, n0, m``.

    Expanding ``(Y Y^T)^2`` and keeping the leading Wick pairings:
    ``Tr (A A^T)^2`` gives ``mu1^4 (1 + n1/n0 + n1/m)`` (a product of two
    Wishart matrices), the two ``Tr(Z Z^T A A^T)`` terms ``2 mu1^2 nu2``, the
    two ``Tr(A^T A Z^T Z)`` terms ``2 mu1^2 nu2 n1/m``, ``Tr (Z Z^T)^2``
    ``nu2^2 (1 + n1/m)``, and the crossed terms are of lower order.
    """
    return mu1 ** 4 * (1 + a / b + a / c) + 2 * mu1 ** 2 * nu2 * (1 + a / c) + nu2 ** 2 * (1 + a / c)


@pytest.mark.parametrize("key", sorted(RATIOS))
def test_exact_moments_of_the_polynomial_activation(key):
    law = gram_law("polynomial", key)
    moments = law.moments(6)
    assert all(isinstance(v, sympy.Rational) for v in moments)
    # E f(u)^2 for f = u + (u^2 - 1)/2: E u^2 + E (u^2 - 1)^2 / 4 = 1 + 1/2
    assert moments[0] == sympy.Rational(3, 2)
    assert moments[1] == second_moment_by_hand(1, sympy.Rational(1, 2), *RATIOS[key])
    assert moments == surrogate_law("polynomial", key).moments(6)


def test_exact_coefficients_and_methods():
    relu = fp.entrywise("Max(x, 0) - 1/sqrt(2*pi)", M, time_budget=60).coefficients  # exact, however loaded the machine
    assert relu.method == ("exact", "exact", "exact")
    assert relu.mu0 == 0 and relu.mu1 == sympy.Rational(1, 2)
    assert sympy.simplify(relu.nu_sq - (sympy.pi - 2) / (4 * sympy.pi)) == 0
    tanh = fp.entrywise("tanh(x)", M).coefficients
    assert tanh.method == ("exact", "numeric", "numeric") and tanh.mu0 == 0
    mu1, nu2 = hand_coefficients("tanh")
    assert abs(tanh.mu1 - mu1) < sympy.Rational(1, 10 ** 39)
    assert abs(tanh.nu_sq - nu2) < sympy.Rational(1, 10 ** 39)


def test_coefficients_follow_the_entry_variance():
    """W of variance 2 and the scale 1/sqrt(n1): entries of variance 2 n0/n1, and exact ReLU coefficients in it."""
    W2 = fp.gaussian("W2", (n1, n0), variance=2)
    node = fp.entrywise("Max(x, 0)", W2 @ X / sympy.sqrt(n1), time_budget=60)
    c = node.coefficients
    s = 2 * n0 / n1
    assert sympy.simplify(c.variance - s) == 0
    assert c.mu1 == sympy.Rational(1, 2)
    assert sympy.simplify(c.mu0 - sympy.sqrt(s) / sympy.sqrt(2 * sympy.pi)) == 0
    assert sympy.simplify(c.nu_sq - s * (sympy.pi - 2) / (4 * sympy.pi)) == 0


# -- the outlier is reported, and the node is one matrix ------------------------------------------------------------


def test_the_mean_part_is_reported_as_an_outlier():
    Y = fp.entrywise("Max(x, 0)", M, noise="Z", time_budget=60)
    law = fp.eigenvalue_law(Y @ Y.T / m, ratios=ratios_of("wide"))
    report = law.reduction.equivalence
    assert [str(n) for n, _ in report.outliers] == [str(Y)]
    assert sympy.simplify(report.outliers[0][1] - 1 / sympy.sqrt(2 * sympy.pi)) == 0
    assert "outlier" in report.text() and "mu0" in report.text()
    assert report.as_dict()["outliers"][0]["mu0"] == str(Y.coefficients.mu0)
    Yc = fp.entrywise(ACTIVATIONS["centred-relu"], M, noise="Z", time_budget=60)
    centred = fp.eigenvalue_law(Yc @ Yc.T / m, ratios=ratios_of("wide"))
    assert centred.reduction.equivalence.outliers == ()
    # the bulk does not see the mean: the uncentred ReLU has the centred one's law
    assert law.moments(4) == centred.moments(4)


def test_equal_nodes_are_one_matrix():
    a, b = fp.entrywise("tanh(x)", M), fp.entrywise("tanh(x)", M)
    assert a == b and a.noise.name == b.noise.name
    c = fp.entrywise("tanh(x)", W @ X / sympy.sqrt(n0) * 1)
    assert c == a
    other = fp.entrywise("Max(x, 0) - 1/sqrt(2*pi)", M)
    assert other.noise.name != a.noise.name


# -- model files: [functions] and [define] ---------------------------------------------------------------------------


BASE = {
    "name": "rf", "law": "eigenvalues", "expression": "Y @ Y.T / m",
    "functions": {"f": "x + (x**2 - 1)/2"}, "define": {"Y": "f(M)", "M": "W @ X / sqrt(n0)"},
    "dimensions": {"n1": 1, "n0": 0.5, "m": 2},
    "matrices": {"W": {"shape": ["n1", "n0"]}, "X": {"shape": ["n0", "m"]}, "G": {"shape": ["n1", "n1"], "kind": "wigner"}},
}


def model(**changes):
    data = {**BASE, **changes}
    return parse_model(data, "m.toml")


def test_model_file_matches_the_python_api():
    mod = model()
    Y = fp.entrywise(ACTIVATIONS["polynomial"], M)
    assert fp.law_of(mod).moments(5) == fp.eigenvalue_law(Y @ Y.T / m, ratios=ratios_of("wide")).moments(5)
    written_twice = model(define={}, expression="f(W @ X / sqrt(n0)) @ f(W @ X / sqrt(n0)).T / m")
    assert written_twice.expr == mod.expr
    assert "Z_f" in [leaf.name for leaf in mod.expr.leaves()]


@pytest.mark.parametrize("changes, error, words", [
    ({"define": {"Y": "f(A)", "A": "B", "B": "A"}}, fp.ModelFileError, ["[define.A]", "cycle", "A -> B -> A"]),
    ({"define": {"Y": "Y"}}, fp.ModelFileError, ["[define.Y]", "cycle", "Y -> Y"]),
    ({"define": {"Y": "f(Q)"}}, fp.ModelFileError, ["[define.Y]", "unknown name 'Q'"]),
    ({"define": {"Y": "tanh(W @ X / sqrt(n0))"}}, fp.ModelFileError, ["tanh applies to scalars", "[functions]"]),
    ({"define": {"Y": "f"}}, fp.ModelFileError, ["f is an entrywise function"]),
    ({"functions": {"tanh": "x"}}, fp.ModelFileError, ["[functions.tanh]", "built-in"]),
    ({"functions": {"f": "tanh(W)"}}, fp.ModelFileError, ["[functions.f]", "unknown name 'W'"]),
    ({"functions": {"f": "__import__('os')"}}, fp.ModelFileError, ["[functions.f]", "'__import__' is not allowed"]),
    ({"define": {"Y": "f(W @ W.T / sqrt(n0))"}, "expression": "Y"}, fp.EquivalenceError, ["W occurs twice", "Gram"]),
    ({"define": {"Y": "f(G / sqrt(n1))"}, "expression": "Y"}, fp.EquivalenceError, ["G is a wigner matrix"]),
    ({"define": {"Y": "f(f(W @ X / sqrt(n0)))"}}, fp.EquivalenceError, ["one layer of a network"]),
    ({"functions": {"f": "exp(x**2)"}}, fp.EquivalenceError, ["polynomial growth"]),
    ({"functions": {"f": "log(x)"}}, fp.EquivalenceError, ["not real"]),
    ({"define": {"Y": "f(W @ X)"}}, fp.ScalingError, ["variance n0", "N^1"]),
])
def test_model_file_errors_are_typed_and_named(changes, error, words):
    with pytest.raises(error) as info:
        model(**changes)
    assert str(info.value).startswith("m.toml: [")
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize("f, argument, condition", [
    ("exp(x)", M, "growth"),
    ("1/x", M, "integrable"),
    ("1", M, "constant"),
    ("tanh(x)", W @ W.T / sympy.sqrt(n0), "independent-product"),
    ("tanh(x)", fp.wigner("G", n1) / sympy.sqrt(n1), "independent-product"),
    ("tanh(x)", M + fp.identity(n1) @ M, "independent-product"),
])
def test_conditions_refused_with_the_failing_condition(f, argument, condition):
    with pytest.raises(fp.EquivalenceError) as info:
        fp.entrywise(f, argument)
    assert info.value.condition == condition
    assert isinstance(info.value, fp.RegimeError)


def test_numeric_coefficients_need_numbers():
    """tanh has no closed-form coefficients: at an entry variance n0/n1 (a ratio) quadrature is refused, not guessed."""
    with pytest.raises(fp.DomainError, match="depends on"):
        fp.entrywise("tanh(x)", W @ X / sympy.sqrt(n1), time_budget=1)
    with pytest.raises(fp.DomainError, match="write the value of a"):
        fp.entrywise("tanh(a*x)", M, time_budget=1)


def test_one_derivation_for_attention_and_entrywise_functions():
    import freeprob.attention.equivalence as attention_equivalence
    import freeprob.expr.equivalence as expr_equivalence

    assert attention_equivalence.gaussian_equivalent is expr_equivalence.gaussian_equivalent


def test_equations_command_shows_the_substitution(tmp_path):
    import contextlib
    import io
    import json

    from freeprob.cli import main

    path = tmp_path / "rf.toml"
    path.write_text('name = "rf"\nlaw = "eigenvalues"\nexpression = "Y @ Y.T / m"\n[functions]\nf = "Max(x, 0)"\n'
                    '[define]\nY = "f(W @ X / sqrt(n0))"\n[dimensions]\nn1 = 1\nn0 = 1\nm = 2\n'
                    '[matrices.W]\nshape = ["n1", "n0"]\n[matrices.X]\nshape = ["n0", "m"]\n')
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["equations", str(path)])
    text = out.getvalue()
    assert code in (0, None), text
    assert "f(W @ X/(sqrt(n0))) -> 1/2*(W @ X/(sqrt(n0))) + Z_f" in text
    assert "nu^2" in text and "[exact]" in text and "outlier" in text
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["equations", str(path), "--json"])
    data = json.loads(out.getvalue())
    (node,) = data["entrywise"]
    assert node["mu1"] == "1/2" and node["method"] == {"mu0": "exact", "mu1": "exact", "nu_sq": "exact"}
    assert node["equivalent"] == "1/2*(W @ X/(sqrt(n0))) + Z_f" and node["entry_variance"] == "1"
    assert data["outliers"] == [{"node": "f(W @ X/(sqrt(n0)))", "mu0": str(1 / sympy.sqrt(2 * sympy.pi))}]


# -- (c) Monte-Carlo of the real nonlinear model -----------------------------------------------------------------------


def real_statistics(law, sizes, reps, seed, qpoints):
    """Per size: replicate means and variances of m1, m2, m3 and F(q) of the sampled *nonlinear* model."""
    return replicate_statistics(law, sizes, reps, seed, qpoints)


def test_monte_carlo_samples_the_nonlinear_model():
    """The sample applies f to the sampled argument: the entries of Y are tanh of those of W X / sqrt(n0)."""
    from freeprob.montecarlo.sample import sample_matrix

    Y = fp.entrywise("tanh(x)", M)
    law = fp.singular_value_law(Y / sympy.sqrt(m), ratios=ratios_of("wide"))
    a = sample_matrix(law, 60, rng=3) * np.sqrt(120)
    rng = np.random.default_rng(3)
    w = rng.standard_normal((60, 30))
    x = rng.standard_normal((30, 120))
    assert np.allclose(a, np.tanh(w @ x / np.sqrt(30)))


@pytest.mark.slow
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_monte_carlo_of_the_real_model_agrees_with_the_theory(activation):
    """Real f, sizes N = 200, 400, 800, 1600: the fitted limit a of a + b/N agrees with the theory.

    Every statistic (the first three moments, the counting function at the
    quartiles of the law) is fitted by weighted least squares on ``1, 1/N``
    with errors from the replicates (:func:`~freeprob.montecarlo.stats.fit_trend`);
    the intercept must lie within the Student-t critical value (family-wise
    level 1e-3, Bonferroni over the statistics) of the theory in units of
    its standard error. The finite-size trend is the fitted slope ``b``.
    """
    law = gram_law(activation, "wide")
    theory, qpoints = theory_statistics(law, powers=(1, 2, 3))
    sizes, reps = [200, 400, 800, 1600], [24, 12, 6, 4]
    means, variances = real_statistics(law, sizes, reps, 2026, qpoints)
    crit = student_t_quantile(1 - 1e-3 / (2 * len(theory)), sum(reps) - len(sizes))
    names = ["m1", "m2", "m3", "F(q1/4)", "F(q1/2)", "F(q3/4)"]
    print(f"\n{activation}: sample mean - theory at N = {sizes}; fitted limit a - theory, its s.e., slope b of b/N")
    failures = []
    for j, t in enumerate(theory):
        fit = fit_trend(sizes, reps, means[:, j], variances[:, j], rates=(1.0,))
        a, b = fit["coef"]
        se = max(fit["se"][0], 1e-7 * max(1, abs(t)))
        print(f"  {names[j]:<8} {np.array2string(means[:, j] - t, precision=5)}  a - theory = {a - t:+.2e}"
              f"  s.e. {se:.1e}  b = {b:+.3g}")
        if abs(a - t) > crit * se:
            failures.append((names[j], t, a, se))
    assert not failures, (failures, crit)
