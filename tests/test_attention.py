"""Multi-head attention: builder, model files, regime, real-softmax checks, comparison study, CLI.

Statistical tolerances are never tuned: Monte-Carlo verdicts use Student-t
critical values at family-wise level 1e-3 (Bonferroni) on standard errors
estimated from seeded replicates, after removing the finite-size trend by
the fit stated in ``freeprob.attention.check`` (``a + b N^-1/2 + c N^-1``
for the multi-size check, Richardson ``2 s(N) - s(N/2)`` for the pattern
confirmation). Engine verdicts use the engine's own error bounds (35 verified
digits, ``1e-7`` relative for the double-precision density).
"""

import argparse
import io
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import sympy

import freeprob as fp
from freeprob import attention as att
from freeprob.attention import check as chk
from freeprob.cli.attention import add_attention_parsers
from freeprob.montecarlo.stats import fit_trend
from freeprob._errors import DomainError, RegimeError, ShapeError
from freeprob._precision import context

ROOT = Path(__file__).resolve().parent.parent


def parser():
    p = argparse.ArgumentParser(prog="freeprob")
    add_attention_parsers(p.add_subparsers(dest="command", required=True))
    return p


def run_cli(argv):
    args = parser().parse_args(argv)
    buf = io.StringIO()
    code = args.func(args, buf)
    return code, buf.getvalue()


# --------------------------------------------------------------------------
# Coefficients: derived, not typed in
# --------------------------------------------------------------------------


def test_coefficients_come_from_the_symbolic_derivation():
    beta, mu1, c = att.softmax_coefficients()
    ge = fp.gaussian_equivalent("exp(beta*x - beta**2/2)", method="exact")
    assert ge.method == ("exact", "exact", "exact")
    (b0,) = ge.params
    assert sympy.simplify(mu1 - ge.mu1.xreplace({b0: beta})) == 0
    assert sympy.simplify(c ** 2 - ge.mu_star_sq.xreplace({b0: beta})) == 0
    assert sympy.simplify(c ** 2 - (sympy.exp(beta ** 2) - 1 - beta ** 2)) == 0
    assert beta.is_real and mu1 == beta


def test_builder_uses_whatever_the_derivation_returns(monkeypatch, tmp_path):
    """Provenance: replace the derivation of the softmax node by a fake one and the model follows it
    (the builder's expression, the equations, the emitted file's law)."""
    import dataclasses

    import freeprob.attention.equivalence as eq
    import freeprob.expr.softmax as node

    real = node.derive_coefficients

    def fake(*args, **kwargs):
        e = real(*args, **kwargs)
        return dataclasses.replace(e, nu_sq=7 * e.mu0 ** 2)

    eq.softmax_coefficients.cache_clear()
    node.softmax_coefficients.cache_clear()
    monkeypatch.setattr(node, "derive_coefficients", fake)
    try:
        cfg = att.attention_config(1, "mha", 1)
        (mix,) = fp.equivalence_report(att.attention_expression(cfg)).nodes
        assert mix.coefficients.nu_sq == 7 and att.softmax_coefficients()[2] == sympy.sqrt(7)
        assert "sqrt(7)*Z_softmax" in mix.equivalent_str()
        fake_law = att.attention_law(1, "mha", 1)
        assert "nu^2" in fp.equivalence_report(fake_law.expr).text()
        assert abs(fake_law.density_fast(np.array([0.5]))[0] - 0.1535986481558389) > 1e-2
        path = tmp_path / "m.toml"
        path.write_text(att.model_text(cfg))
        assert fp.law_of(fp.load_model(path)).equations() == fake_law.equations()
    finally:
        monkeypatch.undo()
        eq.softmax_coefficients.cache_clear()
        node.softmax_coefficients.cache_clear()
    (mix,) = fp.equivalence_report(att.attention_expression(att.attention_config(1, "mha", 1))).nodes
    assert sympy.simplify(mix.coefficients.nu_sq - (sympy.exp(sympy.Symbol("beta", real=True) ** 2) - 1
                                                    - sympy.Symbol("beta", real=True) ** 2)) == 0
    assert "softmax(beta * Q[h] @ K[h].T / sqrt(d_h))" in att.model_text(att.attention_config(1, "mha", 1))


def test_single_head_reduces_to_the_builtin_model_without_values_and_outputs():
    """With V and W removed the head is the built-in single-head model: same c, same law at a point."""
    ref = fp.law_of(fp.find_model("attention-single-head"))
    beta, mu1, c = att.softmax_coefficients()
    l, dqk = fp.dims("l dqk")
    Q, K, Z = fp.gaussian("Q", (l, dqk)), fp.gaussian("K", (l, dqk)), fp.gaussian("Z", (l, l))
    expr = (mu1 * Q @ K.T / sympy.sqrt(dqk) + c * Z) / sympy.sqrt(l)
    law = fp.singular_value_law(expr, ratios={l: 1, dqk: sympy.Rational(1, 2)}, params={beta: 1})
    ctx = context(30)
    assert abs(law.density("0.7", dps=25) - ref.density("0.7", dps=25)) < ctx.mpf(10) ** -25


# --------------------------------------------------------------------------
# Every pattern builds and solves; model files round-trip
# --------------------------------------------------------------------------

CASES = [(1, "mha"), (1, "tied-kv"), (2, "mha"), (2, "mqa"), (2, "gqa:1"), (2, "gqa:2"), (2, "shared-v"),
         (2, "tied-kv")]


@pytest.mark.parametrize("heads, pattern", CASES)
def test_each_pattern_builds_and_solves(heads, pattern):
    law = att.attention_law(heads, pattern, 1)
    assert law.law == "squared-singular-values"
    g = law.cauchy("1+1*I", dps=20)
    assert g.imag < 0
    d = law.density("0.5", dps=20)
    assert d > 0
    # the fast path agrees with the verified value to its stated accuracy
    assert abs(law.density_fast(np.array([0.5]))[0] - float(d)) < 1e-7


def test_sharing_is_realized_by_reusing_leaves():
    def names(h, p):
        return sorted(m.name for m in att.attention_expression(att.attention_config(h, p)).leaves())

    z = ["Z2_softmax", "Z_softmax"]  # the Gaussian parts of the softmax nodes, named as the model file names them
    assert names(2, "mha") == ["K_1", "K_2", "Q_1", "Q_2", "V_1", "V_2", "W_1", "W_2"] + z
    assert names(2, "mqa") == ["K", "Q_1", "Q_2", "V_1", "V_2", "W_1", "W_2"] + z
    assert names(4, "gqa:2") == sorted(["K_1", "K_2", "V_1", "V_2"] + [f"{x}_{i}" for x in "QW" for i in range(1, 5)]
                                       + ["Z_softmax", "Z2_softmax", "Z3_softmax", "Z4_softmax"])
    assert names(2, "shared-v") == ["K_1", "K_2", "Q_1", "Q_2", "V", "W_1", "W_2"] + z
    assert names(2, "tied-kv") == ["K_1", "K_2", "Q_1", "Q_2", "W_1", "W_2"] + z
    leaves = {m.name: m for m in att.attention_expression(att.attention_config(2, "mha")).leaves()}
    l, d_v = sympy.Symbol("l", positive=True), sympy.Symbol("d_v", positive=True)
    assert leaves["V_1"].variance == 1 / l
    assert leaves["W_1"].variance == 1 / (2 * d_v)
    assert leaves["Z_softmax"].variance == 1 and leaves["Q_1"].variance == 1


@pytest.mark.parametrize("heads, pattern", [(2, "mqa"), (1, "tied-kv")])
def test_emitted_file_is_an_ordinary_model(tmp_path, heads, pattern):
    path = tmp_path / "m.toml"
    model = att.emit_model(path, heads, pattern, "3/2", d_h="1/4", d_out="1/3")
    again = fp.load_model(path)
    assert again.expr == att.attention_expression(att.attention_config(heads, pattern, d_h="1/4"))
    assert again.law_kind == "squared-singular-values"
    assert {str(k): v for k, v in again.params.items()} == {"beta": sympy.Rational(3, 2)}
    assert {str(k): v for k, v in again.ratios.items()}["d_out"] == sympy.Rational(1, 3)
    built = att.attention_law(heads, pattern, "3/2", d_h="1/4", d_out="1/3")
    assert fp.law_of(model).equations() == built.equations()


def test_shipped_attention_models_are_what_the_builder_emits():
    shipped = sorted(p for p in (ROOT / "models").glob("attention-*.toml") if p.name != "attention-single-head.toml")
    assert len(shipped) >= 2
    for path in shipped:
        model = fp.load_model(path)
        if model.kind == "causal-attention":  # a named model: tests/test_causal_model.py
            continue
        pattern, h = model.name[len("attention-"):].rsplit("-h", 1)
        pattern = pattern.replace("gqa", "gqa:")
        values = {str(k): v for k, v in {**model.ratios, **model.params}.items()}
        if pattern.endswith("-real-input"):  # real inputs: X = Sigma^(1/2), the token covariance of spectrum a^2
            pattern = pattern[:-len("-real-input")]
            (x,) = [m for m in model.expr.leaves() if m.name == "X"]
            values["input_spectrum"] = {a ** 2: w for a, w in x.spectrum}
        cfg = att.attention_config(int(h), pattern, values.pop("beta"), **values)
        assert path.read_text() == att.model_text(cfg), path


ROUND_TRIP = [(h, p) for h in (1, 2, 4) for p in ("mha", "mqa", "gqa:1", "gqa:2", "shared-v", "tied-kv")
              if att.groups_divide(h, p)]


@pytest.mark.parametrize("heads, pattern", ROUND_TRIP)
def test_model_text_parses_back_to_the_built_expression(tmp_path, heads, pattern):
    """The model file is only a serialization: loading it gives the expression the builder made.

    Expressions are frozen dataclasses, so ``==`` is structural equality of
    the whole tree (leaf names, shapes, kinds, variances, scalar coefficients
    as sympy objects); the leaf variances are also compared one by one to
    name the culprit if it ever fails."""
    cfg = att.attention_config(heads, pattern, "3/2", d_h="1/4", d_out="1/3")
    path = tmp_path / "m.toml"
    path.write_text(att.model_text(cfg))
    loaded = fp.load_model(path).expr
    built = att.attention_expression(cfg)
    assert {m.name: (m.shape, m.kind, m.variance) for m in loaded.leaves()} == \
        {m.name: (m.shape, m.kind, m.variance) for m in built.leaves()}
    assert loaded == built


def test_same_system_is_structural():
    """gqa:G with G = H is the mha graph: the same DysonSystem object-for-object; mqa is not (other
    unknowns) and tied-kv is not; a different beta gives the same system but other values."""
    mha = att.attention_law(2, "mha", 1)
    assert att.same_system(att.attention_law(2, "gqa:2", 1), mha)
    assert att.attention_law(2, "gqa:2", 1).system == mha.system
    assert not att.same_system(att.attention_law(2, "mqa", 1), mha)
    assert not att.same_system(att.attention_law(2, "tied-kv", 1), mha)
    hotter = att.attention_law(2, "mha", "3/2")
    assert hotter.system == mha.system and not att.same_system(hotter, mha)


def test_groups_divide_is_checked_before_building():
    assert att.groups_divide(4, "gqa:2") and not att.groups_divide(3, "gqa:2")
    assert att.groups_divide(3, "mha") and att.groups_divide(3, "bogus")  # other errors are head_plan's
    configs = att.compare.plan_configs((1, 3, 4), ("mha", "gqa:2"), 1)
    assert sorted(configs) == [(1, "mha"), (3, "mha"), (4, "gqa:2"), (4, "mha")]


def test_input_errors():
    with pytest.raises(ShapeError, match="d_v = d_h"):
        att.attention_config(2, "tied-kv", 1, d_h="1/2", d_v="1/4")
    with pytest.raises(DomainError, match="equal groups"):
        att.attention_config(3, "gqa:2", 1)
    with pytest.raises(DomainError, match="nonzero"):
        att.attention_config(1, "mha", 0)
    with pytest.raises(DomainError, match="positive"):
        att.attention_config(1, "mha", 1, d_h=-1)
    with pytest.raises(DomainError, match="unknown sharing pattern"):
        att.attention_config(1, "bogus", 1)
    with pytest.raises(DomainError):
        att.attention_config(0, "mha", 1)
    with pytest.raises(DomainError, match=r"\.toml"):
        att.emit_model("/tmp/not-a-model.txt", 1, "mha", 1)


# --------------------------------------------------------------------------
# Regime
# --------------------------------------------------------------------------


def test_tied_qk_is_refused_with_the_reason():
    for call in (lambda: att.attention_law(2, "tied-qk", 1), lambda: att.attention_config(1, "tied-qk", 1),
                 lambda: att.emit_model("/tmp/x.toml", 1, "tied-qk", 1)):
        with pytest.raises(RegimeError) as info:
            call()
        msg = str(info.value)
        assert "sqrt(d_h)" in msg and "saturates" in msg and "diagonal" in msg


def test_cli_prints_warnings_as_messages(capsys):
    """A regime warning reaches a command-line user as one line naming the
    warning, not as a Python source location."""
    from freeprob.cli.engine import main

    with warnings.catch_warnings():
        warnings.simplefilter("always", att.RegimeWarning)
        assert main(["attention", "--heads", "1", "--pattern", "mha", "--beta", "3"], out=io.StringIO()) == 0
    err = capsys.readouterr().err
    assert err.startswith("freeprob: warning (RegimeWarning): beta = 3 is large compared with 1")
    assert ".py:" not in err


def test_regime_decision():
    eps = att.regime_parameter(1, 1000)
    assert eps == pytest.approx(math.exp(2) / 1000, rel=1e-15)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert att.check_regime(1, 1000) == pytest.approx(eps)
        assert att.check_regime(2) is None  # |beta| = 2 is the limit of silence without a length
    with pytest.warns(att.RegimeWarning, match="epsilon"):
        att.check_regime("1.6", 1000)  # exp(5.12)/1000 = 0.17
    with pytest.raises(RegimeError) as info:
        att.check_regime(3, 1000)
    assert "6.57e+04" in str(info.value) and "1.86" in str(info.value)
    with pytest.warns(att.RegimeWarning, match="large compared with 1"):
        att.attention_law(1, "mha", "5/2")
    with pytest.raises(RegimeError):
        att.attention_law(1, "mha", 2, seq_len=1000)
    # finite query/key width: E exp(2 beta s) = (1 - 4 beta^2/d_h)^(-d_h/2) is infinite for d_h <= 4 beta^2
    with pytest.raises(RegimeError, match="no second moment"):
        att.check_regime("3/2", None, head_dim=9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        att.check_regime("3/2", None, head_dim=10)
    with pytest.raises(RegimeError, match="no second moment"):
        att.attention_law(1, "mha", 1, d_h="1/250", seq_len=1000)  # d_h = 4 = 4 beta^2


def test_large_beta_is_far_from_the_law_in_real_softmax():
    """The measurement behind the refusal: at beta = 2.5, l = 400 (epsilon = 6.5e3) the real mean
    squared singular value is a small fraction of the limit (d_out/l)(e^{beta^2} - 1), while at
    beta = 1 it is within its standard error plus the first-order correction 2(e^{2 beta^2} - 1)/l."""
    cfg_hot = att.attention_config(1, "mha", "5/2")
    cfg_ok = att.attention_config(1, "mha", 1)
    rng = np.random.default_rng(7)
    hot = np.array([att.sample_config(cfg_hot, 400, rng).mean() for _ in range(4)])
    ok = np.array([att.sample_config(cfg_ok, 400, rng).mean() for _ in range(8)])
    limit_hot = 0.5 * (math.exp(6.25) - 1)
    limit_ok = 0.5 * (math.e - 1)
    assert hot.mean() < 0.2 * limit_hot
    se = ok.std(ddof=1) / math.sqrt(len(ok))
    first_order = 2 * (math.exp(2) - 1) / 400 * limit_ok
    assert abs(ok.mean() - limit_ok) <= 5 * se + first_order


# --------------------------------------------------------------------------
# Real softmax against the law (small sizes)
# --------------------------------------------------------------------------


def test_fit_trend_recovers_a_known_trend_within_its_standard_error():
    rng = np.random.default_rng(3)
    sizes, reps = [100, 200, 400, 800], [16, 8, 4, 4]
    zs = []
    for _ in range(40):
        means, variances = [], []
        for n, r in zip(sizes, reps):
            x = 0.3 + 0.5 / math.sqrt(n) - 4 / n + rng.standard_normal(r) * 2 / n
            means.append(x.mean())
            variances.append(x.var(ddof=1))
        f = fit_trend(sizes, reps, means, variances)
        zs.append((f["coef"][0] - 0.3) / f["se"][0])
    zs = np.array(zs)
    # 40 standardized estimates (t with 28 df): mean within 4/sqrt(40), spread near 1
    assert abs(zs.mean()) < 4 / math.sqrt(40)
    assert 0.6 < zs.std() < 1.5


def test_real_softmax_check_small_sizes():
    rep = chk.check_attention(1, "mha", 1, sizes=(150, 300, 600), reps=(16, 8, 4), seed=11)
    assert rep.passed, rep.text()
    assert rep.trim == 3 and "3 largest" in rep.text()
    assert len(rep.rows) == 8 and rep.df == 25


def test_the_check_has_power():
    """Real tied-kv attention checked against the law of independent heads must fail."""
    cfg = att.attention_config(2, "tied-kv", 1)
    wrong = att.attention_law(2, "mha", 1)

    def sample(n, rng):
        return att.sample_config(cfg, n, rng)

    rep = chk.multi_size_check(sample, wrong, chk.rank_atom(cfg), (150, 300, 600), reps=(16, 8, 4), seed=5)
    assert not rep.passed


def test_rank_atom_and_cdf():
    cfg = att.attention_config(2, "tied-kv", 1, d_out="1/4")
    assert chk.rank_atom(cfg) == [(0.0, 0.75)]
    assert chk.rank_atom(att.attention_config(1, "mha", 1, d_out=2, d_h=1)) == []
    table = att.attention_law(1, "mha", 1).cdf_function(atoms=[(0.0, 0.5)])
    assert abs(table.mass_ac - 0.5) <= table.quad_error + 1e-7
    with pytest.raises(fp.ConvergenceError, match="mass"):
        att.attention_law(1, "mha", 1).cdf_function(atoms=[(0.0, 0.25)])


# --------------------------------------------------------------------------
# Comparison study
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def comparison():
    return fp.compare_patterns(heads=(1, 2), patterns=("mha", "mqa", "gqa:2", "shared-v", "tied-kv"), beta=1,
                                points=2, mc_size=300, mc_reps=4, seed=2, allocation=True, widths=("1/4",))


def test_comparison_verdicts(comparison):
    v = comparison.verdicts()
    assert v[(2, "mqa")] == "preserves"
    assert v[(2, "gqa:2")] == "preserves"
    assert v[(2, "shared-v")] == "preserves"
    assert v[(2, "tied-kv")] == "changes"
    assert v[(1, "tied-kv")] == "changes"
    rows = {(r["heads"], r["pattern"]): r for r in comparison.rows}
    assert rows[(2, "gqa:2")]["how"] == "identical reduced equations"  # G = H: the same graph
    for key in [(2, "mqa"), (2, "shared-v")]:
        assert rows[key]["digits"] >= 30
        # different equations, same law (the symmetry quotient gives both 20 unknowns, so compare the equations)
        assert rows[key]["how"] != "identical reduced equations"
    assert rows[(2, "tied-kv")]["max_diff"] > 1e3 * rows[(2, "tied-kv")]["error_bound"]


def test_comparison_confirmed_by_real_softmax(comparison):
    for r in comparison.rows:
        if r["verdict"] == "reference":
            continue
        assert r["mc"]["verdict"] == "confirms", comparison.text()


def test_allocation_moves_the_law(comparison):
    alloc = comparison.allocation
    assert [r["heads"] for r in alloc] == [1, 2]
    assert alloc[1]["max_diff"] > 1e-3  # H at fixed total width changes the law
    assert alloc[0]["edge"] != pytest.approx(alloc[1]["edge"], rel=1e-3)
    assert len(comparison.widths) >= 3 and all(r["heads"] == 2 for r in comparison.widths)
    assert "Head allocation" in comparison.text() and "timings" in comparison.text()


def test_comparison_plot(comparison, tmp_path):
    path = comparison.plot(tmp_path / "cmp.png")
    assert Path(path).stat().st_size > 10_000


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def test_cli_emit_and_use(tmp_path):
    target = tmp_path / "mqa.toml"
    code, text = run_cli(["attention", "--heads", "2", "--pattern", "mqa", "--beta", "1", "--l", "1", "--dh", "1/2",
                          "--dv", "1/2", "--dout", "1/2", "--emit", str(target)])
    assert code == 0 and "wrote" in text
    from freeprob.cli.engine import main

    out = io.StringIO()
    assert main(["density", str(target), "--at", "0.5", "--dps", "25"], out=out) == 0
    assert "0.2091383396098217134031242" in out.getvalue()
    code, text = run_cli(["attention", "--heads", "1", "--pattern", "tied-kv"])
    assert code == 0 and text.startswith("# Generated") and 'name = "attention-tied-kv-h1"' in text


def test_cli_refusals():
    with pytest.raises(RegimeError):
        run_cli(["attention", "--pattern", "tied-qk"])
    with pytest.raises(RegimeError):
        run_cli(["attention", "--beta", "3", "--seq-len", "1000"])
    with pytest.raises(DomainError):
        run_cli(["attention", "compare", "--heads", "1,x"])


def test_cli_equivalence():
    code, text = run_cli(["equivalence", "exp(beta*x - beta**2/2)", "--set", "beta=1", "--dps", "20"])
    assert code == 0
    assert "-beta**2 + exp(beta**2) - 1" in text and "0.84751509040196165427" in text


def test_cli_check_json_and_plot(tmp_path):
    png = tmp_path / "check.png"
    code, text = run_cli(["attention", "check", "--sizes", "150,300,600", "--reps", "6,4,3", "--json",
                          "--plot", str(png)])
    data = json.loads(text)
    assert data["sizes"] == [150, 300, 600] and data["sampler"] == "real softmax"
    assert code == (0 if data["verdict"] == "pass" else 1)
    assert png.stat().st_size > 10_000


def test_cli_compare_without_mc():
    code, text = run_cli(["attention", "compare", "--heads", "2", "--patterns", "mqa,tied-kv", "--no-mc",
                          "--no-allocation", "--points", "1"])
    assert code == 0
    assert "preserves" in text and "changes" in text


# --------------------------------------------------------------------------
# Slow suite
# --------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("heads, pattern", [(1, "mha"), (2, "mqa"), (2, "tied-kv")])
def test_multi_size_extrapolation(heads, pattern):
    rep = chk.check_attention(heads, pattern, 1, sizes=(250, 500, 1000, 2000), seed=2026)
    assert rep.passed, rep.text()


@pytest.mark.slow
def test_linear_surrogate_control():
    rep = chk.check_attention(2, "mha", 1, sizes=(250, 500, 1000, 2000), seed=9, linear=True)
    assert rep.passed, rep.text()


@pytest.mark.slow
def test_notebook_executes():
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(ROOT / "notebooks" / "attention.ipynb", as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "notebooks")}}
                   ).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
