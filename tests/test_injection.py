"""No user string is ever run as Python.

Each payload below would create a marker file if any entry point handed it
to ``eval``, ``exec``, ``sympify`` or ``mpmathify``. Every entry point that
reads a user number or formula (command-line flags, model files and the
sums over indices in them, strings given to the Python API, nonlinearities,
attention sizes) is fed every payload; the marker must never appear, and the
input must be refused with a freeprob error (never a Python traceback of
another kind).
"""

import io
import json

import pytest
import sympy

import freeprob as fp
from freeprob import attention
from freeprob.cli import main
from freeprob.expr.modelfile import parse_model

PAYLOADS = [
    "__import__('os').system('touch {m}')",
    "__import__('pathlib').Path('{m}').touch()",
    "open('{m}', 'w')",
    "(lambda: open('{m}', 'w'))()",
    "exec(\"open('{m}', 'w')\")",
    "eval(\"open('{m}', 'w')\")",
    "().__class__.__base__.__subclasses__()",
    "[c for c in ().__class__.__base__.__subclasses__()]",
    "1 if open('{m}', 'w') else 2",
    "Symbol('x').__class__",
    "getattr(1, '__class__')",
    "1/2; open('{m}', 'w')",
]


@pytest.fixture
def payloads(tmp_path):
    marker = tmp_path / "PWNED"
    texts = [p.format(m=marker) for p in PAYLOADS]
    yield texts
    assert not marker.exists(), "a payload ran"


def run(*argv):
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def refused(fn, *args, **kwargs):
    """``fn`` must refuse its input with a freeprob error."""
    with pytest.raises(fp.FreeProbError):
        fn(*args, **kwargs)


@pytest.fixture(scope="module")
def mp_law():
    p, n = fp.dims("p n")
    X = fp.gaussian("X", (p, n))
    return fp.eigenvalue_law(X @ X.T / n, ratios={p: 1, n: 2})


def test_cli_flags(payloads, capsys):
    for text in payloads:
        assert run("density", "marchenko-pastur", "--at", text.replace(",", " "))[0] == 2
        assert run("density", "marchenko-pastur", "--at", "1", "--set", f"p={text}")[0] == 2
        assert run("equations", "marchenko-pastur", "--set", f"p={text}")[0] == 2
        assert run("attention", "--beta", text)[0] == 2
        assert run("attention", "--dh", text)[0] == 2
        for flag in ("--width", "--at", "--beta", "--dv", "--dout", "--l"):
            assert run("attention", "sweep", flag, text)[0] == 2, flag
    err = capsys.readouterr().err
    assert "Traceback" not in err and "freeprob: error:" in err


def test_python_points_and_values(payloads, mp_law):
    p, n = fp.dims("p n")
    X = fp.gaussian("X", (p, n))
    for text in payloads:
        refused(mp_law.density, text, dps=20)
        refused(mp_law.cauchy, text, dps=20)
        refused(fp.eigenvalue_law, X @ X.T / n, ratios={p: text, n: 1})
        refused(fp.find_model("marchenko-pastur").with_values, {"p": text})
        refused(fp.Semicircle, variance=text)
        refused(fp.Semicircle().density, text)
        refused(attention.attention_config, heads=1, pattern="mha", beta=text)
        refused(attention.attention_sweep, heads=1, width=text)
        refused(attention.attention_sweep, heads=1, at=text)


def test_expression_scalars(payloads):
    p, n = fp.dims("p n")
    for text in payloads:
        X = fp.gaussian("X", (p, n))
        with pytest.raises((fp.FreeProbError, TypeError)):
            X * text
        with pytest.raises((fp.FreeProbError, TypeError)):
            fp.gaussian("Y", (p, n), variance=text)


def test_nonlinearities(payloads):
    for text in payloads:
        refused(fp.gaussian_equivalent, text)
        refused(fp.gaussian_equivalent, "exp(beta*x)", params={"beta": text})
        code, _ = run("equivalence", text)
        assert code == 2


BASE = {
    "name": "m",
    "law": "eigenvalues",
    "expression": "X @ X.T / n",
    "dimensions": {"p": 0.5, "n": 1},
    "parameters": {"b": 1},
    "matrices": {"X": {"kind": "gaussian", "shape": ["p", "n"], "variance": "1"}},
}


def test_model_files(payloads, tmp_path):
    for text in payloads:
        for path, value in [
            (("expression",), text),
            (("dimensions", "p"), text),
            (("parameters", "b"), text),
            (("matrices", "X", "variance"), text),
        ]:
            data = json.loads(json.dumps(BASE))
            node = data
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = value
            refused(parse_model, data, "f.toml")


SUMS = {
    "name": "s",
    "law": "eigenvalues",
    "expression": "sum(h, 1, H, X[h] @ X[h].T) / n",
    "indices": {"H": 2},
    "dimensions": {"p": 0.5, "n": 1},
    "matrices": {"X": {"kind": "gaussian", "shape": ["p", "n"], "index": "H"}},
}


def test_sums_and_indices_in_model_files(payloads):
    """Payloads in every new piece of a sum: subscripts, bounds, the index name, the term, [indices], index ranges."""
    assert parse_model(json.loads(json.dumps(SUMS)), "f.toml").expr is not None
    for text in payloads:
        for path, value in [
            (("expression",), f"sum(h, 1, H, X[{text}] @ X[h].T) / n"),
            (("expression",), f"sum(h, 1, H, X[h, {text}] @ X[h].T) / n"),
            (("expression",), f"sum(h, 1, {text}, X[h] @ X[h].T) / n"),
            (("expression",), f"sum(h, {text}, H, X[h] @ X[h].T) / n"),
            (("expression",), f"sum(h, 1, H, {text}) / n"),
            (("expression",), f"sum(h, 1, H, X[h] @ X[h].T * ({text})) / n"),
            (("expression",), f"sum({text}, 1, H, X[1] @ X[1].T) / n"),
            (("expression",), f"sum(h, 1, H, sum(j, 1, {text}, X[h] @ X[h].T)) / n"),
            (("indices", "H"), text),
            (("matrices", "X", "index"), text),
            (("matrices", "X", "index"), ["H", text]),
            (("matrices", "X", "variance"), f"1/H + {text}"),
        ]:
            data = json.loads(json.dumps(SUMS))
            node = data
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = value
            refused(parse_model, data, "f.toml")


def test_safe_values_still_read():
    """The grammar still reads what users write."""
    assert fp.find_model("marchenko-pastur").with_values({"p": "sqrt(2)/4"}).ratios[sympy.Symbol("p", positive=True)] \
        == sympy.sqrt(2) / 4
    code, text = run("density", "marchenko-pastur", "--at", "1", "--set", "p=1/2", "--dps", "20", "--json")
    assert code == 0 and json.loads(text)["points"][0]["density"] == "0.42108439934779238984"
