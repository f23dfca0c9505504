"""Values that depend on the keys: ``V_h = a K_h M_h / sqrt(l) + b V'_h`` (freeprob.attention.ValueCoupling).

The builder's law is checked against a Gaussian-equivalent expression written
out by hand here (its own coefficient ``c^2 = e^{beta^2} - 1 - beta^2``, its
own leaves and its own order of operations), ``tied-kv`` against the identity
coupling ``a = 1, b = 0``, the linear surrogate of the sampler against its
exact first moment, and real softmax against the engine through the
comparison study. Statistical tolerances are 5 between-seed standard errors
(as tests/test_softmax_sampler.py) or the comparison's Student-t level.
"""

import math

import numpy as np
import pytest
import sympy

import freeprob as fp
from freeprob import attention as att
from freeprob._errors import DomainError, ShapeError

L, D_H, D_V, D_OUT = (sympy.Symbol(n, positive=True) for n in ("l", "d_h", "d_v", "d_out"))
BETA = sympy.Symbol("beta", real=True)
HALF = sympy.Rational(1, 2)


def hand_built(heads, a, b, kind, shared_key):
    """``sum_h (beta Q_h K_h^T/sqrt(d_h) + c Z_h)/sqrt(l) (a K_h M_h/sqrt(l) + b V_h) W_h``, written out."""
    c = sympy.sqrt(sympy.exp(BETA ** 2) - 1 - BETA ** 2)
    vdim = D_H if kind == "identity" else D_V
    total = None
    for h in range(1, heads + 1):
        key = fp.gaussian("K" if shared_key else f"K_{h}", (L, D_H))
        query = fp.gaussian(f"Q_{h}", (L, D_H))
        noise = fp.gaussian(f"Z_{h}", (L, L))
        coupled = key if kind == "identity" else key @ fp.gaussian(f"M_{h}", (D_H, D_V), 1 / D_H)
        value = (a / sympy.sqrt(L)) * coupled + b * fp.gaussian(f"V_{h}", (L, vdim), 1 / L)
        out = fp.gaussian(f"W_{h}", (vdim, D_OUT), 1 / (heads * vdim))
        term = (BETA / sympy.sqrt(D_H * L)) * (query @ key.T) @ value @ out + (c / sympy.sqrt(L)) * noise @ value @ out
        total = term if total is None else total + term
    return total


@pytest.mark.parametrize("heads, pattern, kind, a, b, shared_key", [
    (1, "kv-gaussian:1:1/2", "gaussian", 1, HALF, False),
    (2, "mqa+kv-gaussian:3/5:4/5", "gaussian", sympy.Rational(3, 5), sympy.Rational(4, 5), True),
    (2, "mha+kv-identity:-1:1", "identity", -1, 1, False),
])
def test_coupled_law_is_the_hand_built_equivalent(heads, pattern, kind, a, b, shared_key):
    """30 digits at two bulk points (35 verified digits each) and the exact first moment."""
    law = att.attention_law(heads, pattern, 1, d_v="1/4" if kind == "gaussian" else None)
    ratios = {"l": 1, "d_h": HALF, "d_out": HALF}
    if kind == "gaussian":
        ratios["d_v"] = sympy.Rational(1, 4)
    ref = fp.singular_value_law(hand_built(heads, a, b, kind, shared_key), ratios, {"beta": 1})
    assert law.expr != ref.expr  # two constructions of one model, not one object
    for x in ("0.4", "1.1"):
        got, want = law.density(x, dps=35), ref.density(x, dps=35)
        assert want > 0 and abs(got - want) <= abs(want) * sympy.Float("1e-30"), (x, got, want)
    # first moment: a^2 (d_out/l)(beta^2 (l + d_h)/d_h + c^2) + b^2 (d_out/l)(beta^2 + c^2), c^2 = e - 2 at beta = 1
    e = sympy.E
    exact = a ** 2 * HALF * (3 + e - 2) + b ** 2 * HALF * (1 + e - 2)
    m1 = law.moments(1, dps=30)[0]
    assert abs(sympy.N(m1 - exact, 40)) < sympy.Float("1e-28"), (m1, exact)


def test_tied_kv_is_the_identity_coupling_one_zero():
    """``tied-kv`` is ``kv-identity:1:0``: the same expression, the same reduced system, the same model body."""
    for heads in (1, 2):
        tied = att.attention_config(heads, "tied-kv", 1)
        coupled = att.attention_config(heads, "mha+kv-identity:1:0", 1)
        assert att.attention_expression(tied) == att.attention_expression(coupled)
        assert att.same_system(att.attention_law(heads, "kv-identity:1:0", 1), att.attention_law(heads, "tied-kv", 1))
        body = [line for line in att.model_text(coupled).splitlines() if line.startswith(("expression", "["))]
        assert body == [line for line in att.model_text(tied).splitlines() if line.startswith(("expression", "["))]
    # b = 0 and a of either sign: the same law (K -> -K with Q -> -Q leaves the scores)
    minus = att.attention_law(1, "kv-identity:-1:0", 1)
    assert abs(minus.density("0.7", dps=35) - att.attention_law(1, "tied-kv", 1).density("0.7", dps=35)) < 1e-33
    # a = 0, b = 1: the pattern's own values, the same graph as mha
    assert att.same_system(att.attention_law(2, "kv-gaussian:0:1", 1), att.attention_law(2, "mha", 1))


def test_sharing_keys_still_preserves_the_coupled_law():
    """mqa with coupled values has the law of mha with the same coupling (30 digits; other equations)."""
    law = att.attention_law(2, "mqa+kv-gaussian:1:0", 1)
    ref = att.attention_law(2, "mha+kv-gaussian:1:0", 1)
    assert not att.same_system(law, ref)
    xs = np.linspace(0.05, 2.0, 40)
    verdict = att.compare.pattern_verdict(law, ref, law.density_fast(xs), ref.density_fast(xs), ["0.5", "1.2"])
    assert verdict["verdict"] == "preserves" and verdict["digits"] >= 30, verdict


def test_spelling_and_refusals():
    cfg = att.attention_config(2, " GQA:2+KV-Gaussian:0.5:1 ", 1, d_v="1/4")
    assert (cfg.pattern, cfg.coupling.kind, cfg.coupling.a, cfg.coupling.b) == ("gqa:2", "gaussian", HALF, 1)
    assert cfg.spec == "gqa:2+kv-gaussian:1/2:1" and att.attention_config(2, cfg.spec, 1, d_v="1/4") == cfg
    assert cfg.name == "attention-gqa2-kv-gaussian-h2" and "d_v" in cfg.ratios
    assert "d_v" not in att.attention_config(1, "kv-identity:1:1", 1).ratios
    for bad, match in [("mha+kv-unitary:1:1", "kind"), ("mha+kv-gaussian:1", "KIND:A:B"),
                       ("mha+kv-gaussian:0:0", "zero"), ("tied-kv+kv-identity:1:1", "already"),
                       ("mha+kv-gaussian:x:1", "coupling weight A"), ("mha+kv-gaussian:1:I", "weight B")]:
        with pytest.raises(DomainError, match=match):
            att.attention_config(1, bad, 1)
    with pytest.raises(ShapeError, match="identity coupling"):
        att.attention_config(1, "kv-identity:1:1", 1, d_v="1/4")
    with pytest.raises(ShapeError, match="identity coupling"):
        att.sample_attention(40, 1, 20, 10, 20, 1.0, pattern="kv-identity:1:1")
    assert att.groups_divide(4, "gqa:2+kv-gaussian:1:1") and not att.groups_divide(3, "gqa:2+kv-gaussian:1:1")


def test_emitted_coupled_model_round_trips(tmp_path):
    for pattern in ("gqa:2+kv-gaussian:1/2:sqrt(3)/2", "shared-v+kv-identity:-1:2"):
        cfg = att.attention_config(4, pattern, "3/2", d_h="1/4", d_out="1/3")
        model = att.emit_model(tmp_path / "m.toml", 4, pattern, "3/2", d_h="1/4", d_out="1/3")
        assert model.expr == att.attention_expression(cfg)
        assert (tmp_path / "m.toml").read_text() == att.model_text(cfg)


@pytest.mark.parametrize("kind, d_v", [("identity", 60), ("gaussian", 30)])
def test_sampler_linear_first_moment(kind, d_v):
    """Exact first moment of the coupled linear surrogate (the sampler draws the coupled values).

    With the notation of tests/test_softmax_sampler.py, the independent part
    contributes ``b^2 (d_out/l)(beta^2 + c^2)`` and the coupled part, since
    ``E_M M M^T = (d_v/d_h) I`` for the Gaussian coupling, the tied-kv value
    ``a^2 (d_out/l)(beta^2 (l + d_h + 1)/d_h + c^2)`` for both kinds.
    """
    l, heads, d_h, d_out, beta, a, b = 120, 2, 60, 60, 0.8, 0.6, 0.8
    _, c = att.softmax_gaussian_equivalent(beta)
    exact = d_out / l * (a ** 2 * (beta ** 2 * (l + d_h + 1) / d_h + c ** 2) + b ** 2 * (beta ** 2 + c ** 2))
    pattern = f"kv-{kind}:3/5:4/5"
    means = np.array([att.sample_attention(l, heads, d_h, d_v, d_out, beta, pattern=pattern, rng=500 + s,
                                           linear=True).mean() for s in range(12)])
    m, se = means.mean(), means.std(ddof=1) / math.sqrt(len(means))
    assert abs(m - exact) < 5 * se, (m, se, exact)


def test_real_softmax_confirms_which_couplings_change_the_law():
    """The comparison study with couplings, at small sizes (N = 300 and 150, real softmax)."""
    rep = fp.compare_patterns(heads=(1,), patterns=("kv-gaussian:1:0", "kv-identity:3/5:4/5", "kv-identity:0:1"),
                              beta=1, points=1, mc_size=300, mc_reps=4, seed=5, allocation=False)
    v = rep.verdicts()
    assert v[(1, "mha+kv-gaussian:1:0")] == "changes" and v[(1, "mha+kv-identity:3/5:4/5")] == "changes"
    assert v[(1, "mha+kv-identity:0:1")] == "preserves"
    rows = {r["pattern"]: r for r in rep.rows}
    for r in rep.rows:
        assert r["mc"]["verdict"] != "CONTRADICTS", rep.text()
    assert rows["mha+kv-gaussian:1:0"]["mc"]["verdict"] == "confirms", rep.text()
    assert "mha+kv-gaussian:1:0" in rep.text()


@pytest.mark.slow
@pytest.mark.parametrize("heads, pattern", [(1, "kv-gaussian:1:0"), (2, "mqa+kv-identity:3/5:4/5")])
def test_coupled_multi_size_extrapolation(heads, pattern):
    rep = att.check_attention(heads, pattern, 1, sizes=(250, 500, 1000, 2000), seed=2027)
    assert rep.passed, rep.text()
