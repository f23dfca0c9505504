"""Sums over indices in model files: ``[indices]``, indexed families (``index = "H"``) and ``sum(i, a, b, term)``.

The files here are written by hand (not by the attention emitter), so they
test the syntax itself: the expansion is the flat sum the file written term
by term would give, the symmetry quotient finds the heads, and the laws agree
with :func:`freeprob.attention_law` to 30 digits. Every mistake is a
:class:`~freeprob.ModelFileError` that names the piece.
"""

import io
import json

import mpmath
import pytest
import sympy

import freeprob as fp
from freeprob.attention import attention_config, attention_expression
from freeprob.cli import main
from freeprob.expr.modelfile import MAX_TERMS, parse_model

DPS = 30
TOL = mpmath.mpf(10) ** -DPS
C = "sqrt(exp(beta**2) - 1 - beta**2)"

MHA = f"""
name = "mha-by-hand"
law = "squared-singular-values"
expression = "sum(h, 1, H, (beta * Q[h] @ K[h].T / sqrt(d_h) + {C} * Z[h]) / sqrt(l) @ V[h] @ W[h])"

[indices]
H = {{heads}}

[dimensions]
l = 1
d_h = "1/(2*H)"
d_v = "1/(2*H)"
d_out = "1/2"

[parameters]
beta = 1

[matrices.Q]
shape = ["l", "d_h"]
index = "H"

[matrices.K]
shape = ["l", "d_h"]
index = "H"

[matrices.Z]
shape = ["l", "l"]
index = "H"

[matrices.V]
shape = ["l", "d_v"]
variance = "1/l"
index = "H"

[matrices.W]
shape = ["d_v", "d_out"]
variance = "1/(H*d_v)"
index = "H"
"""

# gqa written with two-index families Q[g, j] (the emitter uses Q[n*(g-1) + j] instead)
GQA = f"""
name = "gqa-by-hand"
law = "squared-singular-values"
expression = "sum(g, 1, G, sum(j, 1, H/G, (beta * Q[g, j] @ K[g].T / sqrt(d_h) + {C} * Z[g, j]) / sqrt(l) @ V[g] @ W[g, j]))"

[indices]
H = 64
G = 8

[dimensions]
l = 1
d_h = "1/2"
d_v = "1/2"
d_out = "1/2"

[parameters]
beta = 1

[matrices.Q]
shape = ["l", "d_h"]
index = ["G", "H/G"]

[matrices.K]
shape = ["l", "d_h"]
index = "G"

[matrices.Z]
shape = ["l", "l"]
index = ["G", "H/G"]

[matrices.V]
shape = ["l", "d_v"]
variance = "1/l"
index = "G"

[matrices.W]
shape = ["d_v", "d_out"]
variance = "1/(H*d_v)"
index = ["G", "H/G"]
"""


def _write(tmp_path, text, name="m.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _close(a, b):
    return abs(a - b) <= TOL * max(1, abs(b))


def test_mha_64_heads_by_hand_is_the_attention_model(tmp_path):
    model = fp.load_model(_write(tmp_path, MHA.format(heads=64)))
    cfg = attention_config(64, "mha", 1, d_h="1/128", d_v="1/128", d_out="1/2")
    # the builder writes each head's centred softmax as the softmax node; with that node in place of the
    # surrogate typed in by hand, the file is the same tree, leaf for leaf (the builder names its leaves as the
    # expanded file does); the typed-in surrogate itself gives the same law (below, to 30 digits)
    typed = f"(beta * Q[h] @ K[h].T / sqrt(d_h) + {C} * Z[h]) / sqrt(l)"
    with_node = MHA.format(heads=64).replace(typed, "softmax(beta * Q[h] @ K[h].T / sqrt(d_h))")
    assert with_node != MHA.format(heads=64)
    assert fp.load_model(_write(tmp_path, with_node, "node.toml")).expr == attention_expression(cfg)
    assert dict(model.indices) == {"H": 64}
    law = fp.law_of(model)
    assert law.reduction.structure is not None, law.reduction.symmetry_note
    assert law.reduction.structure.heads == 64
    assert law.system.n_unknowns == 20
    reference = fp.attention_law(64, "mha", 1, d_h="1/128", d_v="1/128", d_out="1/2")
    assert _close(law.density("0.5", dps=DPS), reference.density("0.5", dps=DPS))


def test_gqa_with_two_index_families_equals_the_attention_law(tmp_path):
    model = fp.load_model(_write(tmp_path, GQA))
    names = {m.name for m in model.expr.leaves()}
    assert {"Q_1_1", "Q_8_8", "K_8", "V_1", "W_3_5"} <= names and len(names) == 3 * 64 + 2 * 8
    law = fp.law_of(model)
    structure = law.reduction.structure
    assert structure is not None, law.reduction.symmetry_note
    assert (structure.heads, structure.n_groups, structure.per_group) == (64, 8, 8)
    reference = fp.attention_law(64, "gqa:8", 1)
    assert _close(law.density("0.5", dps=DPS), reference.density("0.5", dps=DPS))


def test_shipped_64_head_example_is_indexed_and_quotiented():
    model = fp.find_model("attention-gqa8-h64")
    assert "sum(g, 1, G, sum(j, 1, n," in model.expression
    assert dict(model.indices) == {"H": 64, "G": 8, "n": 8}
    assert model.expr == attention_expression(attention_config(64, "gqa:8", 1))
    law = fp.law_of(model)
    assert law.reduction.structure is not None and law.reduction.structure.n_groups == 8


def test_a_sum_is_the_file_written_term_by_term():
    by_sum = {
        "name": "w", "law": "eigenvalues", "expression": "sum(h, 1, H, X[h] @ X[h].T) / (H * n)",
        "indices": {"H": 3}, "dimensions": {"p": "1/2", "n": 1},
        "matrices": {"X": {"shape": ["p", "n"], "index": "H"}},
    }
    by_hand = {
        "name": "w", "law": "eigenvalues", "expression": "(X_1 @ X_1.T + X_2 @ X_2.T + X_3 @ X_3.T) / (3 * n)",
        "dimensions": {"p": "1/2", "n": 1},
        "matrices": {f"X_{i}": {"shape": ["p", "n"]} for i in (1, 2, 3)},
    }
    assert parse_model(by_sum).expr == parse_model(by_hand).expr
    # p/n = 1/2 per term, three terms averaged: Marchenko-Pastur with ratio 1/6
    law = fp.law_of(parse_model(by_sum))
    assert law.reduction.structure is not None
    p, n = fp.dims("p n")
    mp = fp.eigenvalue_law(fp.gaussian("X", (p, n)) @ fp.gaussian("X", (p, n)).T / n,
                           {p: sympy.Rational(1, 6), n: 1})
    assert _close(law.density("0.7", dps=DPS), mp.density("0.7", dps=DPS))


def test_index_arithmetic_constants_in_formulas_and_scalar_indices():
    data = {
        "name": "a", "law": "eigenvalues", "expression": "sum(g, 1, G, sum(j, 1, n, X[n*(g-1) + j] @ X[n*(g-1) + j].T / j))",
        "indices": {"H": 6, "G": 2, "n": "H/G"}, "dimensions": {"p": "1/H", "m": 1},
        "matrices": {"X": {"shape": ["p", "m"], "index": "H", "variance": "1/(G*m)"}},
    }
    model = parse_model(data)
    assert [t.factors[0].name for t in (s.arg if hasattr(s, "arg") else s for s in model.expr.terms)] == \
        [f"X_{h}" for h in range(1, 7)]
    leaf = model.expr.leaves()[0]
    assert leaf.variance == 1 / (2 * sympy.Symbol("m", positive=True))
    assert dict(model.ratios)[sympy.Symbol("p", positive=True)] == sympy.Rational(1, 6)
    coeffs = [t.coeff if hasattr(t, "coeff") else 1 for t in model.expr.terms]
    assert coeffs == [1, sympy.Rational(1, 2), sympy.Rational(1, 3)] * 2


def _base(**changes):
    data = {
        "name": "m", "law": "eigenvalues", "expression": "sum(h, 1, H, X[h] @ X[h].T) / n",
        "indices": {"H": 3}, "dimensions": {"p": "1/2", "n": 1}, "parameters": {"b": 1},
        "matrices": {"X": {"shape": ["p", "n"], "index": "H"}, "Y": {"shape": ["p", "n"]}},
    }
    for key, value in changes.items():
        node = data
        *path, last = key.split(".")
        for part in path:
            node = node[part]
        node[last] = value
    return data


BAD = [
    # (what changes, the piece the message must name)
    ({"expression": "X[h] @ X[h].T"}, r"the name 'h' is not defined here.*an index exists only inside its sum"),
    ({"expression": "sum(h, 1, N, X[h] @ X[h].T)"}, r"the name 'N' is not defined here: subscripts and bounds use "
                                                    r"integers, \[indices\] constants"),
    ({"expression": "sum(h, 1, H, R[h] @ R[h].T)"}, r"unknown indexed family 'R'.*\[matrices.R\]"),
    ({"expression": "sum(h, 1, H, Y[h] @ Y[h].T)"}, r"Y is a single matrix, not an indexed family"),
    ({"expression": "sum(h, 1, H, X[h, 1] @ X[h].T)"}, r"X has 1 subscript \(X\[1..3\]\), got 2"),
    ({"expression": "sum(h, 1, H, X[h + 1] @ X[h].T)"}, r"subscript 1 of X is outside its range 1..3.*is 4"),
    ({"expression": "sum(h, 1, H, X[h/2] @ X[h].T)"}, r"subscript 1 of X must be an integer: 'h/2' is 1/2"),
    ({"expression": "sum(h, 1, H, X[1:2] @ X[h].T)"}, r"not slices"),
    ({"expression": "X @ X.T"}, r"X is an indexed family \(X\[1..3\]\): use one member"),
    ({"expression": "sum(h, 1, H, h @ X[h].T)"}, r"'@' needs two matrices"),
    ({"expression": "sum(h, 1, H, h.T)"}, r"\.T applies to a matrix"),
    ({"expression": "sum(h, 1, H, h[1] @ X[1].T)"}, r"h is a scalar, not an indexed family"),
    ({"expression": "sum(h, 1, 5/2, X[1] @ X[1].T)"}, r"the last value of h must be an integer: '5/2' is 5/2"),
    ({"expression": "sum(h, 1, n, X[1] @ X[1].T)"}, r"the last value of h must be an integer: 'n' is n"),
    ({"expression": "sum(h, b, 2, X[1] @ X[1].T)"}, r"the first value of h must be an integer: 'b' is b"),
    ({"expression": "sum(h, 1, X[1], X[1] @ X[1].T)"}, r"the last value of h must be an integer"),
    ({"expression": "sum(h, 3, 2, X[h] @ X[h].T)"}, r"the range of h is empty \(3..2\)"),
    ({"expression": f"sum(h, 1, {MAX_TERMS + 1}, X[1] @ X[1].T)"}, rf"{MAX_TERMS + 1} terms, more than {MAX_TERMS}"),
    ({"expression": "sum(h, 1, 10**100, X[1] @ X[1].T)"}, rf"more than {MAX_TERMS}"),
    ({"expression": "sum(a, 1, 100, sum(c, 1, 100, X[1] @ X[1].T))"},
     rf"more than {MAX_TERMS} terms in all.*4000 before this sum over c"),
    ({"expression": "sum(h, 1, H, sum(h, 1, H, X[h] @ X[h].T))"}, r"'h' is already the index of an enclosing sum"),
    ({"expression": "sum(p, 1, H, X[p] @ X[p].T)"}, r"the index 'p' of a sum is already a declared name"),
    ({"expression": "sum(H, 1, 2, X[H] @ X[H].T)"}, r"the index 'H' of a sum is already a declared name"),
    ({"expression": "sum(h, 1, H)"}, r"sum takes four plain arguments"),
    ({"expression": "sum(h, 1, H, X[h] @ X[h].T, 2)"}, r"sum takes four plain arguments"),
    ({"expression": "sum(h=1, a=1, b=2, t=X)"}, r"sum takes four plain arguments"),
    ({"expression": "sum(1, 1, H, X[1] @ X[1].T)"}, r"the first argument of sum must be a new index name"),
    ({"expression": "sum"}, r"sum must be called"),
    ({"expression": "sum(h, 1, H, X[h] @ X[h].T + h)"}, r"cannot add|mix|scalar"),
    ({"expression": "sum(h, 1, H, h)"}, r"is a scalar, not a matrix expression"),
    ({"expression": "sum(h, 1, H, X[h] @ X[h].T) + sum(h, 1, H, X[h].T @ X[h])"}, r"shape|cannot add"),
    ({"indices.H": 0}, r"\[indices.H\] must be a positive integer at most 4096"),
    ({"indices.H": MAX_TERMS + 1}, r"\[indices.H\] must be a positive integer at most 4096"),
    ({"indices.H": 2.5}, r"\[indices.H\] expected a positive integer"),
    ({"indices.H": True}, r"\[indices.H\] expected a positive integer"),
    ({"indices.H": "7/2"}, r"\[indices.H\] must be an integer, got '7/2' = 7/2"),
    ({"indices.H": "p"}, r"\[indices.H\] unknown name 'p': an index range is an integer or a formula in the "
                         r"\[indices\] constants declared before it"),
    ({"indices.H": "G"}, r"\[indices.H\] unknown name 'G'"),
    ({"indices": [3]}, r"\[indices\] must be a table"),
    ({"indices": {"H": 3, "sum": 2}}, r"\[indices.sum\] the name 'sum' is reserved"),
    ({"indices": {"H": 3, "p": 2}}, r"\[dimensions.p\] the name 'p' is already declared under \[indices\]"),
    ({"indices": {"H": 3, "X": 2}}, r"\[matrices.X\] the name 'X' is already declared under \[indices\]"),
    ({"matrices.X.index": "K"}, r"\[matrices.X.index\] unknown name 'K'"),
    ({"matrices.X.index": []}, r"\[matrices.X.index\] must name at least one range"),
    ({"matrices.X.index": ["H", 0]}, r"\[matrices.X.index\] must be a positive integer"),
    ({"matrices.X.index": "H/2"}, r"\[matrices.X.index\] must be an integer"),
    ({"matrices.X.index": {"a": 1}}, r"\[matrices.X.index\] expected a positive integer"),
    ({"matrices.X_2": {"shape": ["p", "n"]}}, r"\[matrices.X_2\] the name 'X_2' has the form of a leaf of"),
    ({"dimensions.X_1_1": 1}, r"\[dimensions.X_1_1\] the name 'X_1_1' has the form of a leaf"),
]


@pytest.mark.parametrize("changes, message", BAD, ids=[str(c) for c, _ in BAD])
def test_bad_input_is_a_model_file_error_naming_the_piece(changes, message):
    with pytest.raises((fp.ModelFileError, fp.ShapeError), match=message) as info:
        parse_model(_base(**changes), "bad.toml")
    assert str(info.value).startswith("bad.toml: [")


def test_index_ranges_cannot_be_overridden_with_set():
    model = parse_model(_base())
    with pytest.raises(fp.DomainError, match=r"H is an index range.*\[indices\]"):
        model.with_values({"H": 4})
    assert model.with_values({"p": "1/4"}).indices == model.indices


def _run(*argv):
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


def test_cli_density_of_a_128_head_file(tmp_path):
    path = _write(tmp_path, MHA.format(heads=128), "mha-h128.toml")
    code, text = _run("density", str(path), "--at", "0.5", "--dps", "20", "--json")
    assert code == 0, text
    reference = fp.attention_law(128, "mha", 1, d_h="1/256", d_v="1/256", d_out="1/2").density("0.5", dps=20)
    assert json.loads(text)["points"][0]["density"] == fp.fmt(reference, 20)


def test_cli_names_the_piece_of_a_bad_sum(tmp_path, capsys):
    path = _write(tmp_path, MHA.format(heads=4).replace("W[h])\"", "W[h + 1])\""), "bad.toml")
    code, _ = _run("density", str(path), "--at", "0.5")
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "bad.toml: [expression] the subscript 1 of W is outside its range 1..4" in err


def test_monte_carlo_of_many_heads_is_refused_before_it_allocates(tmp_path, capsys):
    """128 heads hold 128 independent l x l matrices per sample: at n = 8000 that is over 60 GiB, refused with
    the size that fits, before any matrix is drawn."""
    path = _write(tmp_path, MHA.format(heads=128), "mha-h128.toml")
    code, _ = _run("check", str(path), "--n", "8000")
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "would hold about" in err and "more than the limit of 10 GiB; use n <= " in err
