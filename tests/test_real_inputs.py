"""Attention on real inputs: deterministic matrices in entrywise arguments (generic position), the real-input
attention law and its refusals (docs/attention.md, "Real inputs")."""

import io
import json
import re
import warnings

import mpmath
import numpy as np
import pytest
import sympy

import freeprob as fp
from freeprob import EquivalenceError
from freeprob import attention as att
from freeprob.attention import real_inputs
from freeprob.cli.engine import main
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


def test_terms_differing_only_in_deterministic_matrices_are_refused():
    # (D1 G + D2 G)_ij = ((D1 + D2) G)_ij: with D1 = I, D2 = 2 I the variance is 9, not 1 + 4 (the two terms are
    # correlated); the same matrix written as one leaf D3 = 3 I gives 9, terms with different Gaussians add
    D1, D2, D3 = (fp.deterministic(f"D{k}", (l, l), {k: 1}) for k in (1, 2, 3))
    G, H = fp.gaussian("G", (l, d)), fp.gaussian("H", (l, d))
    assert entry_variance(D3 @ G) == 9 and entry_variance(D1 @ G + D2 @ H) == 5
    with pytest.raises(EquivalenceError) as err:
        entry_variance(D1 @ G + D2 @ G)
    assert err.value.condition == "independent-product" and "correlated" in str(err.value)


def test_generic_position_and_a_profile_on_one_space_are_refused():
    # a deterministic matrix inside an entrywise argument is generic; a variance profile on its space is aligned
    # with the coordinates: the law and the sampler would describe different models
    D = fp.deterministic("D", (l, l), {1: "1/2", 2: "1/2"})
    Y = fp.entrywise("tanh(x)", D @ fp.gaussian("G", (l, d)))
    T = fp.gaussian("T", (l, l), profile="Heaviside(1/2 - r)")
    with pytest.raises(EquivalenceError) as err:
        fp.eigenvalue_law(Y @ Y.T / d + (T + T.T) / sympy.sqrt(l), ratios={l: 1, d: 2})
    assert err.value.condition == "generic-position" and "T" in str(err.value)
    fp.eigenvalue_law(Y @ Y.T / d, ratios={l: 1, d: 2})  # without the profile: accepted


# -- the attention law on real inputs ---------------------------------------------------------------------------


@pytest.mark.parametrize("heads, pattern", [(1, "mha"), (2, "mqa"), (2, "tied-kv"), (2, "mha+kv-gaussian:1:1/2")])
def test_identity_token_covariance_is_todays_law(heads, pattern):
    # Sigma = I is orthonormal inputs: the law through the deterministic X must be today's, to 30 digits
    today = att.attention_law(heads, pattern, 1)
    real = att.attention_law(heads, pattern, 1, input_spectrum={1: 1})
    assert real.name.endswith(f"real-input-h{heads}")
    for x in ("0.3", "1.1"):
        assert fp.fmt(real.density(x, dps=35), 30) == fp.fmt(today.density(x, dps=35), 30)


@pytest.mark.parametrize("heads, spectrum, beta, d_out", [
    (1, {"1/2": "1/2", "3/2": "1/2"}, 1, "1/2"),
    (1, {1: "1/2", 2: "1/2"}, "1/2", "1/3"),
    (2, {"1/4": "1/2", "7/4": "1/2"}, 1, "1/2"),
])
def test_mean_of_the_law_is_the_hand_derived_closed_form(heads, spectrum, beta, d_out):
    # docs/attention.md, "Real inputs": E tr(Y Y^T)/l with Y = sum_h (beta S_h + c Z_h)/sqrt(l) X V_h W_h, taken by
    # Wick's rule by hand, is (d_out/l) m1(Sigma) (beta^2 m2(Sigma) + c^2), c^2 = e^s - 1 - s, s = beta^2 m1^2
    # (independent of H for mha: H heads, output variance 1/(H d_v)); widths d_h = d_v = 1/2, l = 1
    law = att.attention_law(heads, "mha", beta, d_out=d_out, input_spectrum=spectrum)
    pairs = [(sympy.Rational(a), sympy.Rational(w)) for a, w in spectrum.items()]
    m1 = sum(w * a for a, w in pairs)
    m2 = sum(w * a ** 2 for a, w in pairs)
    b = sympy.Rational(beta)
    s = b ** 2 * m1 ** 2
    closed = sympy.Rational(d_out) * m1 * (b ** 2 * m2 + sympy.exp(s) - 1 - s)
    (got,) = law.moments(1)
    assert abs(got - sympy.N(closed, 40)) < 1e-25


def test_score_variance_sets_the_regime():
    cfg = att.attention_config(1, "mha", 1, input_spectrum={1: "1/2", 3: "1/2"})   # m1 = 2: scores of sd 2
    assert cfg.score_beta == 2
    with pytest.raises(fp.RegimeError):
        att.attention_law(1, "mha", 1, input_spectrum={1: "1/2", 3: "1/2"}, seq_len=1000)   # exp(8) > 1000


@pytest.mark.parametrize("spectrum, piece", [
    ("1/4:1/2,7/4", "'7/4'"),
    ("1/4:1/2,,7/4:1/2", "''"),
    ("1/4:1/2,7/4:1/3", "sum to"),
    ("0:1/2,1:1/2", "not positive"),
    ("-1:1", "not positive"),
    ("1/4:1/2,foo(3):1/2", "foo"),
    ("__import__('os'):1", "__import__"),
    ({"1": "-1/2", "2": "3/2"}, "weight"),
])
def test_bad_input_spectra(spectrum, piece):
    with pytest.raises(fp.DomainError) as err:
        att.attention_config(1, "mha", 1, input_spectrum=spectrum)
    assert "input spectrum" in str(err.value) and piece in str(err.value)


def test_bad_input_position():
    with pytest.raises(fp.DomainError, match="input_position must be one of generic, diagonal"):
        att.attention_config(1, "mha", 1, input_spectrum={1: 1}, input_position="random")
    with pytest.raises(fp.DomainError, match="input_position"):
        att.sample_attention(40, 1, 20, 20, 20, 1.0, input_spectrum={1: 1}, input_position="diag")


def test_generic_sampler_uses_the_token_covariance():
    # the sampled X X^T has the asked spectrum (generic position: not diagonal)
    x = real_inputs(att.read_input_spectrum("1/4:1/2,7/4:1/2"), 200, "generic", np.random.default_rng(0))
    ev = np.linalg.eigvalsh(x @ x.T)
    assert np.allclose(ev[:100], 0.25) and np.allclose(ev[100:], 1.75)
    assert np.abs(np.diag(x @ x.T) - 1).max() < 0.5     # diagonal entries near m1 = 1, not 1/4 or 7/4


# -- command line ---------------------------------------------------------------------------------------------------


def _cli(*argv):
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


_PATTERNS = [(1, "mha"), (2, "mqa"), (4, "gqa:2"), (2, "shared-v"), (2, "tied-kv"), (2, "mha+kv-gaussian:1:1/2"),
             (2, "mqa+kv-identity:2:1"), (2, "kv-identity:1:1")]


@pytest.mark.parametrize("inputs", [None, "1/4:1/2,7/4:1/2"])
@pytest.mark.parametrize("heads, pattern", _PATTERNS)
def test_cli_emit_round_trips_every_pattern(tmp_path, heads, pattern, inputs):
    # --emit once dropped the value coupling (it wrote cfg.pattern, not cfg.spec): the file must be the configuration
    path = tmp_path / "m.toml"
    argv = ["attention", "--heads", str(heads), "--pattern", pattern, "--emit", str(path)]
    if inputs:
        argv += ["--input-spectrum", inputs]
    code, text = _cli(*argv)
    assert code == 0, text
    cfg = att.attention_config(heads, pattern, 1, input_spectrum=inputs)
    assert fp.load_model(path).expr == att.attention_expression(cfg)
    assert path.read_text() == att.model_text(cfg)


@pytest.mark.parametrize("argv, words", [
    (["--input-spectrum", "1/4:1/2,7/4"], "the piece '7/4' is not VALUE:WEIGHT"),
    (["--input-spectrum", "1/4:1/2,7/4:1/4"], "sum to 3/4"),
    (["--input-spectrum", "1:1/2,-1:1/2"], "not positive"),
    (["--input-spectrum", "1/4:1/2,7/4:1/2", "--input-position", "diagonal"], "input_position='diagonal'"),
])
def test_cli_refuses_bad_inputs_with_the_reason(argv, words, capsys):
    code, _ = _cli("attention", *argv)
    assert code != 0 and words in capsys.readouterr().err


# -- the diagonal position: refused with the evidence ---------------------------------------------------------------


@pytest.mark.parametrize("call", [
    lambda: att.attention_config(1, "mha", 1, input_spectrum="1/4:1/2,7/4:1/2", input_position="diagonal"),
    lambda: att.attention_law(2, "mqa", 1, input_spectrum={1: "1/2", 2: "1/2"}, input_position="diagonal"),
    lambda: att.check_attention(1, "mha", 1, input_spectrum="1/4:1/2,7/4:1/2", input_position="diagonal",
                                sizes=(100, 200, 400)),
])
def test_diagonal_position_is_refused_with_the_measured_numbers(call):
    with pytest.raises(EquivalenceError) as err:
        call()
    text = str(err.value)
    assert err.value.condition == "input-position"
    # the numbers of benchmarks/real_inputs_evidence.py (generic passes, diagonal fails)
    assert "0.19 se" in text and "11.0 +- 0.26" in text and "42.9 se" in text and "2.57, 3.94, 5.28, 6.72" in text


def test_diagonal_of_one_value_is_generic():
    # Sigma = a I is the same matrix in every basis: nothing to refuse
    cfg = att.attention_config(1, "mha", 1, input_spectrum={2: 1}, input_position="diagonal")
    assert cfg.score_beta == 2


def test_diagonal_sampler_shows_the_failure():
    # the sampled diagonal layer is far above the law already at l = 400 (the evidence has the extrapolation). The
    # margins are from benchmarks/real_inputs_evidence.py at N = 400: diagonal mean 1.14 + 3.94 with a replicate sd
    # of 0.41 (3 x 1.14 is 4 sd below), generic bias -0.026 with sd 0.021 (the 10% band is 4 sd beyond the bias)
    law_mean = float(att.attention_law(1, "mha", 1, input_spectrum="1/4:1/2,7/4:1/2").moments(1)[0])
    spec = att.sample_attention(400, 1, 200, 200, 200, 1.0, rng=1, input_spectrum="1/4:1/2,7/4:1/2",
                                input_position="diagonal")
    generic = att.sample_attention(400, 1, 200, 200, 200, 1.0, rng=1, input_spectrum="1/4:1/2,7/4:1/2")
    assert np.mean(spec) > 3 * law_mean and abs(np.mean(generic) - law_mean) < 0.1 * law_mean


@pytest.mark.slow
def test_real_softmax_on_generic_inputs_passes_the_multi_size_check():
    # the generic half of benchmarks/real_inputs_evidence.py (about 15 s): real softmax on inputs in generic position
    # extrapolates to the law (|a| <= t se(a) for every statistic)
    report = att.check_attention(1, "mha", 1, input_spectrum="1/4:1/2,7/4:1/2", sizes=(200, 400, 800, 1600), seed=1)
    assert report.passed, report.text()


# -- sweeps and comparisons on real inputs --------------------------------------------------------------------------

REAL = "1/4:1/2,7/4:1/2"
HALF = sympy.Rational(1, 2)


def _mean_closed_form(spectrum, beta, d_out, l=1):
    """The mean of the law, derived by hand (docs/attention.md, "Real inputs").

    m1 = (d_out/l) m1(Sigma) (beta^2 m2(Sigma) + c^2), c^2 = e^s - 1 - s, s = beta^2 m1(Sigma)^2.
    """
    m1 = sum(a * w for a, w in spectrum)
    m2 = sum(a * a * w for a, w in spectrum)
    s = beta ** 2 * m1 ** 2
    return (d_out / l) * m1 * (beta ** 2 * m2 + mpmath.exp(s) - 1 - s)


def test_sweep_on_real_inputs_keeps_the_closed_form_mean_and_names_the_inputs():
    res = att.attention_sweep(heads=(1, 2), moments=1, grid=40, workers=1, input_spectrum=REAL)
    want = _mean_closed_form([(mpmath.mpf(1) / 4, 0.5), (mpmath.mpf(7) / 4, 0.5)], 1, mpmath.mpf(1) / 2)
    for row in res.rows:
        assert row.config.input_text == REAL
        assert abs(mpmath.mpf(row.moments[0]) - want) < mpmath.mpf(10) ** -13 * want, (row.heads, row.moments)
    orthonormal = att.attention_sweep(heads=(1, 2), moments=1, grid=40, workers=1)
    assert [r.support for r in res.rows] != [r.support for r in orthonormal.rows]  # the inputs reach the laws
    assert "real inputs, token covariance 1/4:1/2,7/4:1/2 (generic)" in res.table()
    data = res.as_dict()
    assert data["input_spectrum"] == REAL and data["input_position"] == "generic"
    assert orthonormal.as_dict()["input_spectrum"] is None


def test_sweep_with_identity_covariance_is_the_orthonormal_sweep():
    a = att.attention_sweep(heads=(1, 2), moments=2, grid=40, workers=1, at="0.5", input_spectrum={1: 1})
    b = att.attention_sweep(heads=(1, 2), moments=2, grid=40, workers=1, at="0.5")
    assert [(r.moments, r.density, r.support) for r in a.rows] == [(r.moments, r.density, r.support) for r in b.rows]


@pytest.mark.parametrize("kwargs, error, piece", [
    (dict(input_spectrum="1/4:1/2,7/4"), fp.DomainError, "the piece '7/4' is not VALUE:WEIGHT"),
    (dict(input_spectrum="0:1/2,2:1/2"), fp.DomainError, "not positive"),
    (dict(input_spectrum=REAL, input_position="diagonal"), EquivalenceError, "input_position='diagonal'"),
    (dict(input_spectrum=REAL, input_position="sideways"), fp.DomainError, "input_position must be one of"),
])
def test_sweep_and_compare_refuse_bad_inputs_before_any_law(kwargs, error, piece, monkeypatch):
    def no_law(*args, **kw):
        raise AssertionError("a law was made before the input was checked")

    monkeypatch.setattr(att.sweep, "summarize_config", no_law)
    monkeypatch.setattr(att.compare, "attention_law", no_law)
    with pytest.raises(error, match=re.escape(piece)):
        att.attention_sweep(heads=(1, 2), workers=1, **kwargs)
    with pytest.raises(error, match=re.escape(piece)):
        att.compare_patterns(heads=(1, 2), patterns=("mha", "mqa"), **kwargs)


@pytest.mark.slow
def test_compare_on_real_inputs_samples_real_inputs(monkeypatch):
    """Every law, study and Monte-Carlo sample of the comparison has the inputs; the samples agree with the laws."""
    sampled = []
    original = att.compare.sample_config

    def recording(cfg, n, rng=None, linear=False):
        sampled.append(cfg)
        return original(cfg, n, rng, linear)

    monkeypatch.setattr(att.compare, "sample_config", recording)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", att.RegimeWarning)  # N = 150 is short for beta = 1: corrections ~ 0.1
        rep = att.compare_patterns(heads=(2,), patterns=("mha", "mqa"), beta=1, grid=40, points=1, dps=20,
                                   digits=15, mc_size=300, mc_reps=4, seed=3, total_width=1, widths=(HALF,),
                                   input_spectrum=REAL)
    assert sampled and all(c.input_text == REAL and c.input_position == "generic" for c in sampled)
    assert "real inputs, token covariance 1/4:1/2,7/4:1/2 (generic)" in rep.setting
    rows = {r["pattern"]: r for r in rep.rows}
    assert rows["mqa"]["verdict"] == "preserves", rows["mqa"]
    # the Monte-Carlo part against the real-input law (and not the orthonormal one), within the family-wise bound
    assert rows["mha"]["mc"]["z"] <= rep.mc["critical"], rows["mha"]["mc"]
    assert rows["mqa"]["mc"]["verdict"] == "confirms", rows["mqa"]["mc"]
    first = rep.allocation[0]
    assert (first["heads"], first["d_h"]) == (2, "1/2")
    law2 = att.attention_law(2, "mha", 1, d_h=HALF, d_v=HALF, input_spectrum=REAL)
    assert first["edge"] == law2.support_fast(grid=201)[-1][1]


def test_cli_sweep_and_compare_take_real_inputs():
    code, text = _cli("attention", "sweep", "--heads", "1,2", "--moments", "1", "--grid", "30", "--workers", "1",
                      "--input-spectrum", REAL, "--json")
    data = json.loads(text)
    assert code == 0 and data["input_spectrum"] == REAL
    want = _mean_closed_form([(mpmath.mpf(1) / 4, 0.5), (mpmath.mpf(7) / 4, 0.5)], 1, mpmath.mpf(1) / 2)
    assert all(abs(mpmath.mpf(r["moments"][0]) - want) < 1e-13 * want for r in data["rows"])
    code, text = _cli("attention", "compare", "--heads", "2", "--patterns", "mqa", "--no-mc", "--no-allocation",
                      "--grid", "30", "--points", "1", "--dps", "35", "--input-spectrum", REAL)
    assert code == 0 and "real inputs, token covariance 1/4:1/2,7/4:1/2 (generic)" in text
    assert "preserves" in text


@pytest.mark.parametrize("command", ["sweep", "compare"])
@pytest.mark.parametrize("argv, words", [
    (["--input-spectrum", "1/4:1/2,7/4"], "the piece '7/4' is not VALUE:WEIGHT"),
    (["--input-spectrum", "1/4:1/2,7/4:1/4"], "sum to 3/4"),
    (["--input-spectrum", "1/4:1/2,7/4:1/2", "--input-position", "diagonal"], "input_position='diagonal'"),
])
def test_cli_sweep_and_compare_refuse_bad_inputs_in_one_line(command, argv, words, capsys):
    code, _ = _cli("attention", command, "--heads", "1,2", *argv)
    err = capsys.readouterr().err
    assert code == 2 and words in err and "Traceback" not in err
    assert err.strip().count("\n") == 0, err
