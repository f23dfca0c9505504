"""Attention on real inputs: deterministic matrices in entrywise arguments (generic position), the real-input
attention law and its refusals (docs/attention.md, "Real inputs")."""

import pytest
import sympy

import freeprob as fp
from freeprob import EquivalenceError
from freeprob.expr.entrywise import entry_variance
from freeprob.expr.generic import generic_variance, second_moment
from freeprob.expr.softmax import softmax

l, d, p = fp.dims("l d p")


def _spectrum_D():
    return fp.deterministic("D", (l, l), {sympy.Rational(1, 2): sympy.Rational(1, 2),
                                          sympy.sqrt(7) / 2: sympy.Rational(1, 2)})


def test_deterministic_counts_as_gaussian_of_its_second_moment():
    # m1(D^2) = (1/4 + 7/4)/2 = 1: by hand from the spectrum
    D = _spectrum_D()
    assert second_moment(D) == 1 and generic_variance(D) == 1 / l
    E = fp.deterministic("E", (l, l), {1: "1/2", 3: "1/2"})   # m1(E^2) = (1 + 9)/2 = 5
    Q, K = fp.gaussian("Q", (l, d)), fp.gaussian("K", (l, d))
    # Var (E Q K^T E / sqrt(d))_ij = (E^2)_ii (E^2)_jj -> m1(E^2)^2 = 25 in generic position
    assert entry_variance(E @ Q @ K.T @ E / sympy.sqrt(d)) == 25
    # a deterministic matrix in the middle: Var (Q^T E K)_ij = tr(E^2) = l m1(E^2)
    assert entry_variance(Q.T @ E @ K / sympy.sqrt(l)) == 5


def test_softmax_of_real_input_scores_has_isotropic_coefficients():
    # token covariance E^2 with m1 = 5, scores divided by 5: s = beta^2, c^2 = exp(s) - 1 - s (the derivation's)
    beta = sympy.Symbol("beta", real=True)
    E = fp.deterministic("E", (l, l), {1: "1/2", 3: "1/2"})
    Q, K = fp.gaussian("Q", (l, d)), fp.gaussian("K", (l, d))
    node = softmax(beta * E @ Q @ K.T @ E / sympy.sqrt(d) / 5, noise="Z")
    s = beta ** 2
    assert node.coefficients.mu1 == 1
    assert sympy.simplify(node.coefficients.nu_sq - (sympy.exp(s) - 1 - s)) == 0


@pytest.mark.parametrize("build, what", [
    (lambda D, Q: D @ D @ Q, "adjacent"),
    (lambda D, Q: D @ fp.deterministic("E", (l, l), {2: 1}) @ Q, "adjacent"),
    (lambda D, Q: D, "no Gaussian"),
    (lambda D, Q: D @ Q + D, "no Gaussian"),
])
def test_refused_deterministic_arguments(build, what):
    D = _spectrum_D()
    Q = fp.gaussian("Q", (l, l))
    with pytest.raises(EquivalenceError) as err:
        entry_variance(build(D, Q))
    assert err.value.condition == "independent-product"
    assert ("adjacent" in str(err.value)) == (what == "adjacent")
    assert ("no Gaussian matrix" in str(err.value)) == (what == "no Gaussian")
