"""The causal-attention model file (``model = "causal-attention"``): reading, writing, errors and the commands.

The law itself is tested in tests/test_causal_law.py; here the file must give that law, exactly the law
of the same parameters built in Python, and every command must either use it or refuse with a message.
"""

import io
import json

import pytest
import sympy

import freeprob as fp
from freeprob import DomainError, ModelFileError
from freeprob import attention as att
from freeprob.cli import main
from freeprob.expr.causal_model import causal_model_text
from freeprob.expr.modelfile import parse_model

BASE = {"name": "c", "model": "causal-attention", "law": "squared-singular-values",
        "dimensions": {"l": 1, "d_h": "1/2", "d_v": "1/2", "d_out": "1/2"}, "parameters": {"beta": 1}}


def run(*argv):
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def _variant(**changes):
    data = json.loads(json.dumps(BASE))
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def test_builtin_file_is_the_law_of_the_same_parameters():
    model = fp.find_model("attention-causal")
    assert isinstance(model, fp.CausalModel) and model.kind == "causal-attention" and model.expr is None
    law = fp.causal_law_of(model)
    built = att.causal_attention_law(1, "1/10")
    assert repr(law) == repr(built)
    assert law.mean() == built.mean() and law.atom_mass() == built.atom_mass() == sympy.Rational(4, 9)
    g, h = law.cauchy(1 + 0.5j), built.cauchy(1 + 0.5j)
    assert g.value == h.value and g.error == h.error


def test_builtin_file_is_what_the_writer_emits():
    path = fp.builtin_models()["attention-causal"]
    law = fp.causal_law_of(fp.find_model("attention-causal"))
    r = law.ratios
    assert path.read_text() == causal_model_text(law.beta, law.skip, r["d_h"], r["d_v"], r["d_out"], law.heads)


@pytest.mark.parametrize("beta, skip, widths, heads", [("3/2", "1/4", ("1", "1/3", "2/3"), 2),
                                                       ("1/2", "1/8", ("1/4", "1/4", "1/2"), 8)])
def test_emit_and_read_back(tmp_path, beta, skip, widths, heads):
    law = att.causal_attention_law(beta, skip, d_h=widths[0], d_v=widths[1], d_out=widths[2], heads=heads)
    model = att.emit_causal_model(tmp_path / "c.toml", law, name="mine")
    assert model.name == "mine" and model.heads == heads
    assert repr(fp.causal_law_of(model)) == repr(law)


def test_widths_are_ratios_to_l():
    """l = 2 with d_h = 1 is the width ratio 1/2, as in the attention model files."""
    model = parse_model(_variant(dimensions={"l": 2, "d_h": 1, "d_v": 1, "d_out": 1}), "c.toml")
    assert repr(fp.causal_law_of(model)) == repr(att.causal_attention_law(1, "1/10"))


def test_defaults_skip_one_tenth_one_head_l_one():
    model = parse_model(_variant(dimensions={"d_h": "1/2", "d_v": "1/2", "d_out": "1/2"}), "c.toml")
    law = fp.causal_law_of(model)
    assert law.skip == sympy.Rational(1, 10) and law.heads == 1 and law.ratios["d_h"] == sympy.Rational(1, 2)


def test_with_values_replaces_parameters_widths_and_heads():
    model = fp.find_model("attention-causal").with_values({"beta": "1/2", "H": "4", "d_out": "1/4", "skip": "0.2"})
    law = fp.causal_law_of(model)
    assert (law.beta, law.skip, law.heads, law.ratios["d_out"]) == (sympy.Rational(1, 2), sympy.Rational(1, 5), 4,
                                                                     sympy.Rational(1, 4))
    with pytest.raises(DomainError, match="no width, parameter or index foo"):
        model.with_values({"foo": 1})
    with pytest.raises(DomainError, match="an integer between 1 and 1024"):
        model.with_values({"H": "2.5"})
    with pytest.raises(AttributeError, match="immutable"):
        model.name = "x"


@pytest.mark.parametrize("changes, error, words", [
    ({"expression": "X @ X.T"}, ModelFileError, "[expression] a model = \"causal-attention\" file"),
    ({"matrices": {"X": {"shape": ["l", "l"]}}}, ModelFileError, "[matrices]"),
    ({"model": "causal"}, ModelFileError, "[model] must be one of causal-attention"),
    ({"law": "eigenvalues"}, ModelFileError, "law = \"squared-singular-values\""),
    ({"law": None}, ModelFileError, "[law] missing"),
    ({"name": None}, ModelFileError, "[name] missing"),
    ({"parameters": {"skip": "1/10"}}, ModelFileError, "[parameters.beta] missing"),
    ({"parameters": {"beta": 1, "gamma": 2}}, ModelFileError, "[parameters.gamma]"),
    ({"dimensions": {"l": 1, "d_h": 1, "d_v": 1}}, ModelFileError, "[dimensions.d_out] missing"),
    ({"dimensions": {"d_h": 1, "d_v": 1, "d_out": -1}}, DomainError, "[dimensions.d_out] must be positive"),
    ({"dimensions": {"d_h": True, "d_v": 1, "d_out": 1}}, ModelFileError, "[dimensions.d_h] must be a number"),
    ({"dimensions": {"d_h": "__import__('os')", "d_v": 1, "d_out": 1}}, ModelFileError, "dimensions.d_h"),
    ({"indices": {"H": 0}}, ModelFileError, "[indices.H]"),
    ({"indices": {"H": "two"}}, ModelFileError, "[indices.H]"),
    ({"indices": {"H": "\u00b2"}}, ModelFileError, "[indices.H]"),
    ({"indices": {"H": "\u0663"}}, ModelFileError, "[indices.H]"),
    ({"indices": {"H": "9" * 5000}}, ModelFileError, "[indices.H]"),
    ({"indices": {"H": 2.5}}, ModelFileError, "[indices.H]"),
    ({"indices": {"H": 2000}}, ModelFileError, "between 1 and 1024"),
    ({"model": "gaussian", "expression": "X @ X.T"}, ModelFileError, "[model] must be one of causal-attention"),
    ({"indices": {"G": 2}}, ModelFileError, "[indices.G]"),
    ({"description": 3}, ModelFileError, "[description]"),
    ({"parameters": {"beta": 1, "skip": 0}}, DomainError, "[parameters.skip] must be positive"),
])
def test_bad_files_are_refused_with_the_key(changes, error, words):
    with pytest.raises(error) as info:
        parse_model(_variant(**changes), "c.toml")
    assert "c.toml" in str(info.value) and words in str(info.value), str(info.value)


@pytest.mark.parametrize("parameters, words", [({"beta": 9}, "|beta| must be at most 4"),
                                               ({"beta": 1, "skip": "1/3"}, None),
                                               ({"beta": 1, "skip": "1/1000"}, "denominator"),
                                               ({"beta": 1, "skip": 1}, "strictly between 0 and 1")])
def test_values_out_of_range_are_refused_when_the_law_is_built(parameters, words):
    model = parse_model(_variant(parameters=parameters), "c.toml")
    if words is None:
        assert fp.causal_law_of(model).skip == sympy.Rational(1, 3)
        return
    with pytest.raises(DomainError) as info:
        fp.causal_law_of(model)
    assert str(info.value).startswith("c.toml: ") and words in str(info.value)


def test_writer_refuses_names_it_cannot_write_and_reads_values_as_numbers(tmp_path):
    law = att.causal_attention_law(1, "1/10")
    path = tmp_path / "c.toml"
    for name in ("a\nb", "a\"b", "a\x01b"):
        with pytest.raises(DomainError, match="TOML string"):
            att.emit_causal_model(path, law, name=name)
        assert not path.exists()
    with pytest.raises(DomainError, match="beta"):   # a formula is read as a number, never run as Python
        causal_model_text("__import__('os').getcwd()", "1/10", 1, 1, 1)
    assert 'beta = "1/10"' in causal_model_text(0.1, "1/10", 1, 1, 1)


def test_every_kind_of_value_of_heads_is_read_by_the_number_reader():
    model = fp.find_model("attention-causal")
    assert model.with_values({"H": "2.0"}).heads == 2
    for bad in ("\u00b2", "9" * 5000, "0", "-1", "1/2", "1025", "x"):
        with pytest.raises(DomainError) as info:
            model.with_values({"H": bad})
        assert "--set H" in str(info.value)


def test_value_tolerance_is_relative_to_the_law_scale():
    """G is about 1/x on the law's scale: tolerances are relative to max(min(1, 10/mean), |G|), so a value of a
    law at large beta (G about 1e-7) is not verified by an absolute bound larger than itself."""
    assert att.causal_attention_law(1, "1/10").value_unit == 1.0          # mean 2.2
    law = att.causal_attention_law(2, "1/10")                              # mean 68
    assert law.value_unit == pytest.approx(10 / float(law.mean()))
    big = att.causal_attention_law(4, "1/10")
    assert big.value_unit < 1e-6
    z = float(big.mean()) * (1 + 0.5j)
    g = big.cauchy(z)
    assert abs(g.value) < 1e-6 and g.error <= big.tol * big.value_unit


def test_functions_of_expressions_refuse_a_model_without_one():
    model = fp.find_model("attention-causal")
    with pytest.raises(DomainError, match="model.expr is None"):
        fp.has_continuous_profile(model.expr)
    with pytest.raises(DomainError, match="check_causal"):
        fp.check(fp.causal_law_of(model))


def test_check_refuses_a_sample_larger_than_its_memory_bound():
    with pytest.raises(DomainError, match="GiB"):
        att.check_causal(1, "1/10", d_h=1000)


def test_the_engine_laws_refuse_a_causal_model_and_the_causal_law_an_expression_model():
    model = fp.find_model("attention-causal")
    with pytest.raises(DomainError, match="causal_law_of"):
        fp.law_of(model)
    with pytest.raises(DomainError, match="causal_law_of"):
        fp.profile_law_of(model)
    with pytest.raises(DomainError, match="law_of"):
        fp.causal_law_of(fp.find_model("marchenko-pastur"))


def test_cli_law_prints_the_exact_values_and_the_extrapolated_support(tmp_path):
    code, text = run("law", "attention-causal", "--json", "--csv", str(tmp_path / "c.csv"))
    assert code == 0
    data = json.loads(text)
    law = att.causal_attention_law(1, "1/10")
    assert data["mean"]["exact"] == str(law.mean()) and data["atom_at_0"] == "4/9"
    assert data["atoms"] == [{"x": "0.0", "mass": repr(float(sympy.Rational(4, 9)))}]
    (lo, hi), = data["support"]
    top = law.support()[0][1]
    assert lo["value"] == "0.0" and float(hi["value"]) == float(top.value) and float(hi["error"]) > 0
    assert "cell equation" in data["method"]
    # every grid density is a number within its estimate, or marked unverified; none at x = 0 (the atom)
    assert all(float(r["x"]) > 0 for r in data["grid"])
    values = [r for r in data["grid"] if r["density"] != "unverified"]
    assert len(values) > 150
    x = float(values[50]["x"])
    d = law.density(x)
    assert abs(float(values[50]["density"]) - d.value) <= 2 * (d.error + float(values[50]["error"])) + 1e-12
    assert (tmp_path / "c.csv").read_text().startswith("x,density,error\n")


def test_cli_density_gives_the_value_with_its_estimate():
    code, text = run("density", "attention-causal", "--at", "1", "--json")
    assert code == 0
    point, = json.loads(text)["points"]
    g = att.causal_attention_law(1, "1/10").cauchy(1)
    assert abs(float(point["cauchy"]["re"]) - g.value.real) <= 1e-4 and float(point["error"]) <= 1e-4


@pytest.mark.parametrize("argv, words", [
    (("equations", "attention-causal"), "cell equation"),
    (("equations", "attention-causal", "--polynomial"), "no symbolic system"),
    (("moments", "attention-causal", "-k", "3"), "mean and its atom"),
    (("law", "attention-causal", "--moments", "3"), "drop --moments"),
    (("law", "attention-causal", "--dps", "4"), "leave out --dps"),
    (("attention", "--causal", "--emit", "x.toml", "--name", "a\nb"), "TOML string"),
    (("check", "attention-causal", "--n", "100"), "at least 320"),
    (("density", "attention-causal", "--at", "1", "--set", "beta=9"), "with beta = 9 set: |beta| must be at most 4"),
    (("density", "attention-causal", "--at", "1", "--set", "beta=sin(exp(exp(20)))"), "modulo 2 pi"),
    (("density", "attention-causal", "--at", "45.8"), "not known to be 0"),
    (("density", "attention-causal", "--at", "1", "--dps", "6"), "give a smaller --dps"),
    (("check", "attention-causal", "--n", "320", "--set", "beta=3/2"), "give --n 7244 or more"),
    (("check", "attention-causal", "--n", "320", "--set", "beta=2"), "give a smaller beta or a larger skip"),
    (("attention", "--causal", "--emit", "x.toml", "--name", "a\udcffb"), "not valid UTF-8"),
    (("density", "attention-causal", "--at", "1", "--set", "H=0"), "an integer between 1 and 1024"),
    (("density", "attention-causal", "--at", "0"), "0 is the hard edge or the atom"),
])
def test_cli_refuses_what_the_causal_model_does_not_have(argv, words, capsys):
    code, _ = run(*argv)
    err = capsys.readouterr().err
    assert code == 2 and words in err and "Traceback" not in err, err


def test_cli_emits_a_causal_model_file_that_the_commands_read(tmp_path):
    path = tmp_path / "mine.toml"
    code, text = run("attention", "--causal", "--skip", "1/4", "--heads", "2", "--beta", "1/2", "--emit", str(path))
    assert code == 0 and "wrote" in text
    model = fp.load_model(path)
    assert repr(fp.causal_law_of(model)) == repr(att.causal_attention_law("1/2", "1/4", heads=2))
    code, _ = run("density", str(path), "--at", "0.3")
    assert code == 0


def test_models_lists_the_causal_model():
    code, text = run("models", "--json")
    rows = {r["name"]: r for r in json.loads(text)["models"]}
    assert code == 0 and rows["attention-causal"]["law"] == "squared-singular-values"


@pytest.mark.slow
def test_cli_check_of_the_builtin_model_passes(tmp_path):
    """freeprob check attention-causal: real causal softmax at l = 250..2000 extrapolates to the file's law."""
    code, text = run("check", "attention-causal", "--json", "--plot", str(tmp_path / "c.png"))
    assert code == 0, text
    report = json.loads(text)
    assert report["verdict"] == "pass" and (tmp_path / "c.png").stat().st_size > 0


@pytest.mark.parametrize("value", ["4+1/10**30", "1/100-1/10**30"])
def test_range_of_beta_is_checked_exactly(value):
    with pytest.raises(DomainError, match="beta"):
        att.causal_attention_law(value, "1/10")
    assert att.causal_attention_law("4", "1/10").beta == 4


def test_a_value_below_its_error_estimate_is_printed_as_zero():
    """Triangular Gaussian at x = -1 (outside its support): Im G is about 1e-45, far below its estimate."""
    code, text = run("density", "triangular-gaussian", "--at", "-1", "--json")
    point, = json.loads(text)["points"]
    assert code == 0 and point["density"] == "0" and point["cauchy"]["im"] == "0"

