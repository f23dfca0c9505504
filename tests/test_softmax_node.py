"""The centred row-wise softmax as a node of the expression language (``fp.softmax``, ``softmax(...)`` in files).

Its Gaussian equivalent comes from the derivation every entrywise node uses
(the Gaussian moments of ``exp`` at the entry variance of the argument,
divided by the row normalization); the attention builder and the files it
emits are written with it; Monte-Carlo samples the real softmax.
"""

import io
import warnings

import numpy as np
import pytest
import sympy

import freeprob as fp
from freeprob import attention as att
from freeprob.cli import main
from freeprob.montecarlo.sample import centred_softmax, sample_matrix
from freeprob.montecarlo.stats import fit_trend, student_t_quantile

from _replicates import replicate_statistics, theory_statistics

BETA = sympy.Symbol("beta", real=True)
L, D = fp.dims("l d")
Q, K = fp.gaussian("Q", (L, D)), fp.gaussian("K", (L, D))
SCORES = BETA * Q @ K.T / sympy.sqrt(D)

FILE = """
name = "one-head"
law = "squared-singular-values"
expression = "softmax(beta * Q @ K.T / sqrt(d))"

[dimensions]
l = 1
d = "1/2"

[parameters]
beta = {beta}

[matrices.Q]
shape = ["l", "d"]

[matrices.K]
shape = ["l", "d"]
"""


def _write(tmp_path, text, name="m.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_coefficients_are_those_of_the_normalized_exponential():
    """mu1 and nu^2 of the node agree with an independent derivation: gaussian_equivalent of
    exp(beta x - beta^2/2) (the normalized exponential), whose mu1 is the coefficient of S = M / beta."""
    node = fp.softmax(SCORES)
    ge = fp.gaussian_equivalent("exp(beta*x - beta**2/2)", method="exact")
    (b,) = ge.params
    c = node.coefficients
    assert c.method == ("exact", "exact", "exact") and c.mu0 == 0
    assert c.variance == BETA ** 2
    assert sympy.simplify(BETA * c.mu1 - ge.mu1.xreplace({b: BETA})) == 0
    assert sympy.simplify(c.nu_sq - ge.mu_star_sq.xreplace({b: BETA})) == 0
    assert sympy.simplify(node.exponential.mu0 - sympy.exp(BETA ** 2 / 2)) == 0  # the row normalization E exp(u)
    # the engine sees the equivalent (beta S + nu Z)/sqrt(l), Z of unit entry variance
    assert node.noise.variance == 1 and node.noise.shape == (L, L)
    assert node.terms[1] == fp.gaussian(node.noise.name, (L, L)) * sympy.sqrt(c.nu_sq) / sympy.sqrt(L)
    assert str(node) == f"softmax({SCORES})"


def test_numeric_entry_variance_gives_the_same_coefficients():
    node = fp.softmax(sympy.Rational(3, 2) * Q @ K.T / sympy.sqrt(D))
    s = sympy.Rational(9, 4)
    assert node.coefficients.variance == s
    assert sympy.simplify(node.coefficients.mu1 - 1) == 0
    assert abs(sympy.N(node.coefficients.nu_sq - (sympy.exp(s) - 1 - s), 40)) < 1e-35


def test_exp_is_refused_entrywise_but_not_in_softmax():
    with pytest.raises(fp.EquivalenceError) as err:
        fp.entrywise("exp(x)", SCORES)
    assert err.value.condition == "growth"
    assert fp.softmax(SCORES).coefficients.mu1 == 1


@pytest.mark.parametrize("argument, condition", [
    (Q @ Q.T / sympy.sqrt(D), "independent-product"),  # tied queries and keys: a Gram-type argument
    (fp.wigner("H", L), "independent-product"),
])
def test_outside_the_regime_is_refused(argument, condition):
    with pytest.raises(fp.EquivalenceError) as err:
        fp.softmax(argument)
    assert err.value.condition == condition


def test_badly_scaled_scores_and_bad_input():
    with pytest.raises(fp.ScalingError):
        fp.softmax(Q @ K.T)  # entries of variance d
    with pytest.raises(fp.DomainError):
        fp.softmax("Q @ K.T")


def test_softmax_is_not_a_layer_of_a_network():
    W = fp.gaussian("W", (L, L))
    with pytest.raises(fp.EquivalenceError) as err:
        fp.entrywise("tanh(x)", W @ fp.softmax(SCORES))
    assert "softmax" in str(err.value)


def test_large_numeric_variance_warns_symbolic_does_not():
    with pytest.warns(fp.RegimeWarning, match="entry variance 9"):
        fp.softmax(3 * Q @ K.T / sympy.sqrt(D))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fp.softmax(SCORES)
        fp.softmax(2 * Q @ K.T / sympy.sqrt(D))  # s = 4: the threshold itself is accepted


def test_model_file_reads_the_node_and_its_regime(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = fp.load_model(_write(tmp_path, FILE.format(beta=1)))
    assert model.expr == fp.softmax(SCORES, noise="Z_softmax")
    with pytest.warns(fp.RegimeWarning, match="softmax"):
        fp.load_model(_write(tmp_path, FILE.format(beta=3), "hot.toml"))


def test_the_file_law_is_the_single_head_surrogate(tmp_path):
    """The node reduces to the surrogate typed in by hand (the built-in single-head model) to 30 digits."""
    law = fp.law_of(fp.load_model(_write(tmp_path, FILE.format(beta=1))))
    ref = fp.law_of(fp.find_model("attention-single-head"))
    tol = sympy.Rational(1, 10 ** 30)
    for x in ("0.3", "1.7"):
        assert abs(law.density(x, dps=30) - ref.density(x, dps=30)) < tol


@pytest.mark.parametrize("text, words", [
    ('expression = "softmax(beta)"', "not to the scalar"),
    ('expression = "softmax(Q @ K.T / sqrt(d), Q)"', "one argument"),
    ('expression = "softmax(beta * Q @ Q.T / sqrt(d))"', "Q occurs twice"),
])
def test_model_file_errors_are_typed_and_located(tmp_path, text, words):
    bad = FILE.format(beta=1).replace('expression = "softmax(beta * Q @ K.T / sqrt(d))"', text)
    with pytest.raises(fp.FreeProbError) as err:
        fp.load_model(_write(tmp_path, bad))
    assert words in str(err.value) and "[expression]" in str(err.value)


def test_softmax_is_a_reserved_name(tmp_path):
    bad = FILE.format(beta=1) + '\n[matrices.softmax]\nshape = ["l", "l"]\n'
    with pytest.raises(fp.ModelFileError, match="reserved"):
        fp.load_model(_write(tmp_path, bad))


def test_emitted_files_go_through_the_node_and_keep_the_quotient(tmp_path):
    """``freeprob equations`` on an emitted 64-head file: the substitution by the engine and the symmetry note."""
    path = tmp_path / "gqa.toml"
    att.emit_model(path, 64, "gqa:8", 1)
    assert "softmax(beta * Q[n*(g-1) + j] @ K[g].T / sqrt(d_h))" in path.read_text()
    assert "[matrices.Z]" not in path.read_text()
    out = io.StringIO()
    assert main(["equations", str(path)], out=out) == 0
    text = out.getvalue()
    assert "symmetry quotient: 64 exchangeable terms in 8 groups of 8" in text
    assert "sqrt(-beta**2 + exp(beta**2) - 1)*Z64_softmax)/sqrt(l)" in text
    assert "-beta**2 + exp(beta**2) - 1   [exact]" in text


def test_monte_carlo_samples_the_real_softmax():
    """The sample of the node is the centred softmax of the sampled scores (the same draws), not the equivalent."""
    values = {L: 1, D: sympy.Rational(1, 2)}
    node_law = fp.singular_value_law(fp.softmax(SCORES), ratios=values, params={BETA: 1})
    scores_law = fp.singular_value_law(SCORES / sympy.sqrt(L), ratios=values, params={BETA: 1})
    a = sample_matrix(node_law, 80, rng=5)
    s = sample_matrix(scores_law, 80, rng=5) * np.sqrt(80)
    assert np.allclose(a, centred_softmax(s), rtol=0, atol=1e-14)
    # rows of the real centred softmax sum to 0 and A = a/sqrt(l) + 1/l is positive
    assert np.allclose(a.sum(axis=1), 0, atol=1e-12) and np.all(a / np.sqrt(80) + 1 / 80 > 0)


@pytest.mark.slow
def test_monte_carlo_of_the_real_softmax_agrees_with_the_law():
    """Real softmax at l = 200, 400, 800, 1600: the fitted limit a of a + b N^-1/2 + c N^-1 (the trend of the
    attention check) of m1, m2 and F at the quartiles agrees with the law within the Student-t critical value
    (family-wise 1e-3, Bonferroni) in units of its standard error."""
    law = fp.singular_value_law(fp.softmax(SCORES), ratios={L: 1, D: sympy.Rational(1, 2)}, params={BETA: 1})
    theory, qpoints = theory_statistics(law, powers=(1, 2))
    sizes, reps = [200, 400, 800, 1600], [24, 12, 6, 4]
    means, variances = replicate_statistics(law, sizes, reps, 2027, qpoints, powers=(1, 2))
    crit = student_t_quantile(1 - 1e-3 / (2 * len(theory)), sum(reps) - len(sizes))
    failures = []
    for j, t in enumerate(theory):
        fit = fit_trend(sizes, reps, means[:, j], variances[:, j], rates=(0.5, 1.0))
        a, se = fit["coef"][0], max(fit["se"][0], 1e-7 * max(1, abs(t)))
        print(f"  statistic {j}: sample - theory {means[:, j] - t}, a - theory {a - t:+.2e}, s.e. {se:.1e}")
        if abs(a - t) > crit * se:
            failures.append((j, t, a, se))
    assert not failures, (failures, crit)
