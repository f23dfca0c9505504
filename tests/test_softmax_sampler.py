"""Tests of the Monte-Carlo sampler of multi-head softmax attention (freeprob.attention.softmax).

Statistical tolerances are 5 between-seed standard errors (seeded, so each test is
deterministic; with 8 seeds the Student-t probability of a 5 SE deviation is 0.16%),
plus, for real softmax only, a finite-size allowance stated where it is used.
"""

import math

import numpy as np
import pytest

from freeprob._errors import DomainError, RegimeError, ShapeError
from freeprob.attention import (
    PATTERNS,
    attention_sizes,
    sample_attention,
    softmax_gaussian_equivalent,
)


def seed_means(n_seeds, *args, **kwargs):
    """Mean squared singular value of one sample per seed; returns (mean, standard error)."""
    means = np.array([sample_attention(*args, rng=1000 + s, **kwargs).mean() for s in range(n_seeds)])
    return means.mean(), means.std(ddof=1) / math.sqrt(n_seeds)


# --------------------------------------------------------------------------
# Shapes, patterns, errors
# --------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", ["mha", "mqa", "gqa:2", "gqa:4", "shared-v", "tied-kv"])
@pytest.mark.parametrize("linear", [False, True])
@pytest.mark.parametrize("d_out", [10, 60])
def test_shapes_and_patterns(pattern, linear, d_out):
    l = 40
    ev = sample_attention(l, 4, 20, 20, d_out, 1.0, pattern=pattern, rng=1, linear=linear)
    assert ev.shape == (l,)
    assert np.all(np.isfinite(ev)) and np.all(ev >= 0)
    assert np.all(np.diff(ev) >= 0)
    if d_out < l:
        assert np.all(ev[: l - d_out] == 0)  # the padded structural zeros
        assert ev[l - d_out] > 0
    else:
        assert ev[0] > 0


def test_patterns_listed():
    assert set(PATTERNS) == {"mha", "mqa", "gqa:G", "shared-v", "tied-kv", "tied-qk"}


def test_tied_qk_outside_regime():
    with pytest.raises(RegimeError) as info:
        sample_attention(50, 2, 20, 20, 20, 1.0, pattern="tied-qk", rng=0)
    message = str(info.value)
    assert "sqrt(d_h)" in message and "saturates" in message
    assert "allow_outside_regime" in message
    # With the flag, the real thing is sampled, and it shows the failure: with Q = K the
    # diagonal scores |k_i|^2/sqrt(d_h) ~ sqrt(d_h) = 10 dominate the row (e^10 against
    # l e^{1/2} ~ 330), A is close to the identity, and the mean squared singular value is
    # ~ d_out (1 - 1/l), of order l, while the linear model with Q = K has the O(1) mean
    # (d_out/l)(beta^2 (l + d_h + 1)/l + c^2) (E ||K K^T||_F^2 = l d_h (l + d_h + 1)).
    l, d_h, d_out, beta = 200, 100, 100, 1.0
    ev = sample_attention(l, 1, d_h, d_h, d_out, beta, pattern="tied-qk", rng=0, allow_outside_regime=True)
    _, c = softmax_gaussian_equivalent(beta)
    linear_mean = d_out / l * (beta**2 * (l + d_h + 1) / l + c**2)
    assert ev.mean() > 10 * linear_mean


def test_pattern_errors():
    with pytest.raises(DomainError, match="divisible"):
        sample_attention(20, 4, 10, 10, 10, 1.0, pattern="gqa:3")
    for bad in ("gqa:0", "gqa:x", "gqa:", "bogus", 3):
        with pytest.raises(DomainError):
            sample_attention(20, 4, 10, 10, 10, 1.0, pattern=bad)
    with pytest.raises(ShapeError, match="d_v == d_h"):
        sample_attention(20, 2, 10, 12, 10, 1.0, pattern="tied-kv")
    with pytest.raises(ShapeError, match="d_model"):
        sample_attention(20, 2, 10, 10, 10, 1.0, inputs="orthonormal", d_model=10)
    for args in ((0, 1, 1, 1, 1, 1.0), (5, 1, 1.5, 1, 1, 1.0), (5, 1, 1, 1, 1, float("nan")),
                 (5, True, 1, 1, 1, 1.0)):
        with pytest.raises(DomainError):
            sample_attention(*args)
    with pytest.raises(DomainError):
        sample_attention(5, 1, 1, 1, 1, 1.0, inputs="sphere")


def test_large_beta_stable():
    # exp only ever sees beta*S - rowmax <= 0: no overflow, no NaN; underflow to 0 is expected.
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        for pattern in ("mha", "tied-kv"):
            ev = sample_attention(200, 2, 50, 50, 100, 30.0, pattern=pattern, rng=3)
            assert np.all(np.isfinite(ev))
        ev = sample_attention(100, 1, 50, 50, 50, 30.0, pattern="tied-qk", rng=3, allow_outside_regime=True)
        assert np.all(np.isfinite(ev))


def test_seeded_reproducibility_and_no_global_rng():
    state = np.random.get_state()[1].copy()
    a = sample_attention(50, 2, 20, 20, 30, 1.5, pattern="mqa", rng=7)
    b = sample_attention(50, 2, 20, 20, 30, 1.5, pattern="mqa", rng=np.random.default_rng(7))
    c = sample_attention(50, 2, 20, 20, 30, 1.5, pattern="mqa", rng=8)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    lin = sample_attention(50, 2, 20, 20, 30, 1.5, pattern="mqa", rng=7, linear=True)
    assert np.array_equal(lin, sample_attention(50, 2, 20, 20, 30, 1.5, pattern="mqa", rng=7, linear=True))
    assert np.array_equal(state, np.random.get_state()[1])


def test_softmax_gaussian_equivalent_values():
    for beta in (1e-3, 0.5, 1.0, 2.0):
        mu1, c = softmax_gaussian_equivalent(beta)
        assert mu1 == beta
        expected = math.expm1(beta**2) - beta**2  # cancellation-free for small beta up to ~1e-10 relative
        assert math.isclose(c**2, expected, rel_tol=1e-9)
    assert math.isclose(softmax_gaussian_equivalent(1.0)[1] ** 2, math.e - 2, rel_tol=1e-15)


def test_attention_sizes():
    assert attention_sizes(600, {"l": 1, "d_h": 0.5, "d_v": 0.5, "d_out": 0.5}) == {
        "l": 600, "d_h": 300, "d_v": 300, "d_out": 300}
    assert attention_sizes(10, {"l": 1, "d_h": 0.01, "d_v": 0.26, "d_out": 2, "d_model": 1.5}) == {
        "l": 10, "d_h": 1, "d_v": 3, "d_out": 20, "d_model": 15}
    with pytest.raises(DomainError, match="missing"):
        attention_sizes(10, {"l": 1, "d_h": 1})
    with pytest.raises(DomainError, match="unknown"):
        attention_sizes(10, {"l": 1, "d_h": 1, "d_v": 1, "d_out": 1, "dk": 1})
    with pytest.raises(DomainError):
        attention_sizes(10, {"l": 1, "d_h": -1, "d_v": 1, "d_out": 1})
    with pytest.raises(DomainError):
        attention_sizes(0, {"l": 1, "d_h": 1, "d_v": 1, "d_out": 1})


# --------------------------------------------------------------------------
# Statistical checks
# --------------------------------------------------------------------------


def test_orthonormal_inputs_same_law():
    """Q = X W^Q with orthonormal rows X is exactly iid Gaussian: both input modes have one law.

    Compared on the first two moments of the squared singular values, over 16 seeds
    each, within 5 combined standard errors (no finite-size allowance: the two laws are
    identical at every size).
    """
    args = (48, 2, 24, 24, 24, 1.0)
    for moment in (1, 2):
        vals = {}
        for inputs, extra in (("gaussian", {}), ("orthonormal", {"d_model": 72})):
            m = np.array([np.mean(sample_attention(*args, rng=s, inputs=inputs, **extra) ** moment)
                          for s in range(16)])
            vals[inputs] = (m.mean(), m.std(ddof=1) / 4.0)
        (mg, sg), (mo, so) = vals["gaussian"], vals["orthonormal"]
        assert abs(mg - mo) < 5 * math.hypot(sg, so), (moment, vals)


def test_first_moment_softmax_and_linear_surrogate():
    r"""Mean squared singular value of real softmax and of its linear surrogate (mha).

    Exact first moment of the linear surrogate. With ``M_h = (beta S_h + c Z_h)/sqrt(l)``,
    ``Y = sum_h M_h V_h W_h`` and ``m = E (1/l) tr Y Y^T`` (the mean of the l squared
    singular values, zeros included):

    * the ``W_h`` are independent of everything else, centered, with
      ``E W_h W_g^T = delta_hg (d_out/(H d_v)) I_{d_v}``, so cross-head terms vanish and
      ``m = sum_h (d_out/(H d_v)) (1/l) E tr(M_h V_h V_h^T M_h^T)``;
    * ``V_h`` is independent of ``M_h`` with ``E V_h V_h^T = (d_v/l) I_l``, so
      ``m = sum_h (d_out/(H l)) (1/l) E ||M_h||_F^2``;
    * ``Z_h`` is centered and independent of ``S_h``, and
      ``E ||S_h||_F^2 = (1/d_h) sum_{ij} E (q_i . k_j)^2 = (1/d_h) l^2 d_h = l^2``, so
      ``E ||M_h||_F^2 = (beta^2 l^2 + c^2 l^2)/l = l (beta^2 + c^2)``.

    Hence ``m = (d_out/l)(beta^2 + c^2) = (d_out/l)(e^{beta^2} - 1)``, exactly at every
    finite size (0.859141 for d_out/l = 1/2, beta = 1). The same steps for real softmax
    give ``m = (d_out/(H l)) sum_h E ||A_h - 1 1^T/l||_F^2``, whose limit is the same value
    (a row of A has ``sum_j a_ij^2 -> e^{beta^2}/l``).
    """
    l, heads, beta = 600, 2, 1.0
    sizes = attention_sizes(l, {"l": 1, "d_h": 0.5, "d_v": 0.5, "d_out": 0.5})
    assert sizes["l"] == l
    args = (sizes["l"], heads, sizes["d_h"], sizes["d_v"], sizes["d_out"], beta)
    exact = sizes["d_out"] / l * math.expm1(beta**2)

    n_seeds = 8
    m_lin, se_lin = seed_means(n_seeds, *args, linear=True)
    m_soft, se_soft = seed_means(n_seeds, *args)

    # Finite-size allowance for real softmax: docs/math.md section 5 gives row-normalization
    # corrections of order l^{-1/2} ("a few per cent at l = 1500", i.e. a constant ~1), so
    # we allow l^{-1/2} relative (4.1% at l = 600). For this first moment the leading
    # corrections are in fact smaller: conditionally on q_i a row of scores is iid
    # N(0, r_i), r_i = |q_i|^2/d_h, and the delta method for sum w_j^2/(sum w_j)^2 with
    # w = e^{beta s} gives l E sum_j a_ij^2 = e^{beta^2}(1 + beta^4/d_h - kappa/l + ...),
    # kappa = 2(e^{2 beta^2} - 1) - 3(e^{beta^2} - 1) = 7.62 at beta = 1; the relative bias
    # of m is e^{beta^2}/(e^{beta^2} - 1) (beta^4/d_h - kappa/l) = -1.5% here, inside the
    # allowance, which also leaves room for the next orders.
    allowance = exact / math.sqrt(l)

    # The linear surrogate is exact at finite size: statistical tolerance only.
    assert abs(m_lin - exact) < 5 * se_lin, (m_lin, se_lin, exact)
    assert abs(m_soft - exact) < 5 * se_soft + allowance, (m_soft, se_soft, exact)
    assert abs(m_soft - m_lin) < 5 * math.hypot(se_soft, se_lin) + allowance, (m_soft, m_lin)


@pytest.mark.parametrize("pattern", ["mqa", "gqa:2", "shared-v", "tied-kv"])
def test_linear_first_moment_other_patterns(pattern):
    """Exact first moment of the linear surrogate for the other patterns.

    The output weights are never shared, so cross-head terms vanish as for mha. Sharing
    K or V between heads leaves each head's term unchanged (V_h stays independent of
    M_h): ``m = (d_out/l)(beta^2 + c^2)``. For tied-kv, ``V_h = K_h/sqrt(l)`` is not
    independent of ``S_h``: with ``E_Q Q^T Q = l I`` and
    ``E tr((K^T K)^2) = l d_h (l + d_h + 1)`` one gets
    ``E tr(M K K^T M^T) = l (beta^2 (l + d_h + 1) + c^2 d_h)``, so
    ``m = (d_out/l)(beta^2 (l + d_h + 1)/d_h + c^2)``: the law changes.
    """
    l, heads, d_h, d_out, beta = 120, 4, 60, 60, 0.8
    _, c = softmax_gaussian_equivalent(beta)
    if pattern == "tied-kv":
        exact = d_out / l * (beta**2 * (l + d_h + 1) / d_h + c**2)
    else:
        exact = d_out / l * (beta**2 + c**2)
    m, se = seed_means(12, l, heads, d_h, d_h, d_out, beta, pattern=pattern, linear=True)
    assert abs(m - exact) < 5 * se, (m, se, exact)
