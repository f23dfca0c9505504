"""Command-line failures: typed, one line, machine-readable with --json, distinct exit codes."""

import io
import json

import pytest

import freeprob as fp

from freeprob.cli import engine
from freeprob.cli import main


def run(*argv):
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def test_negative_first_point_is_a_value():
    code, text = run("density", "wigner-semicircle", "--at", "-1,0.5", "--json")
    points = json.loads(text)["points"]
    assert code == 0 and [p["x"] for p in points] == ["-1", "0.5"]
    # the semicircle density is even: rho(-1) = sqrt(3)/(2 pi)
    assert points[0]["density"].startswith("0.27566444771089")


def test_bad_input_is_a_json_object_with_exit_code_2(capsys):
    code, text = run("density", "marchenko-pastur", "--at", "abc", "--json")
    data = json.loads(text)
    assert code == 2 and set(data) == {"error", "type", "where", "hint"}
    assert data["type"] == "DomainError" and "'abc'" in data["error"]
    assert "Traceback" not in capsys.readouterr().err


def test_internal_error_is_one_line_with_exit_code_3(monkeypatch, capsys):
    def broken(args, out):
        raise RuntimeError("simulated defect")

    monkeypatch.setattr(engine, "cmd_models", broken)
    code, _ = run("models")
    err = capsys.readouterr().err
    assert code == 3 and err.strip() == "freeprob: internal error: simulated defect"


@pytest.mark.parametrize("argv", [("density", "marchenko-pastur", "--at", "nan"),
                                  ("density", "marchenko-pastur", "--at", "1", "--set", "p=inf"),
                                  ("density", "marchenko-pastur", "--at", "1", "--set", "p=")])
def test_non_numbers_refused(argv, capsys):
    assert run(*argv)[0] == 2
    assert "freeprob: error:" in capsys.readouterr().err


@pytest.mark.parametrize("argv, piece", [
    (("density", "marchenko-pastur", "--at", ""), "at least one point"),
    (("density", "marchenko-pastur", "--at", "1,,2"), "empty point"),
    (("density", "marchenko-pastur", "--at", "1", "--dps", "100000"), "between 1 and 2000"),
    (("law", "marchenko-pastur", "--grid", "0:1:0"), "2 <= N"),
    (("law", "marchenko-pastur", "--grid", "0:1:100000000"), "2 <= N"),
    (("law", "marchenko-pastur", "--grid", "1:0:10"), "A < B"),
    (("law", "marchenko-pastur", "--grid", "a:b"), "A:B:N"),
    (("check", "marchenko-pastur", "--seed", "-1"), "--seed"),
    (("check", "marchenko-pastur", "--reps", "-3"), "--reps"),
    (("check", "marchenko-pastur", "--n", "100000"), "between 10 and 8000"),
])
def test_bad_arguments_are_argparse_messages(argv, piece, capsys):
    with pytest.raises(SystemExit) as info:
        run(*argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and piece in err and "Traceback" not in err


@pytest.mark.parametrize("plot, piece", [("{tmp}", "is a directory"), ("{tmp}/missing/x.png", "does not exist"),
                                         ("{tmp}/x.xyz", "unknown picture format")])
def test_output_paths_checked_before_the_computation(plot, piece, tmp_path, monkeypatch, capsys):
    def must_not_run(args, out):
        raise AssertionError("the computation ran before the output path was checked")

    monkeypatch.setattr(engine, "cmd_law", must_not_run)
    code, _ = run("law", "marchenko-pastur", "--plot", plot.format(tmp=tmp_path))
    assert code == 2 and piece in capsys.readouterr().err


def test_law_with_an_atom_at_high_precision():
    """p/n = 2: an atom of mass 1/2 at 0 on the default grid; outside the support the density is exactly 0."""
    code, text = run("law", "marchenko-pastur", "--set", "p=2", "--dps", "20", "--json")
    data = json.loads(text)
    assert code == 0 and data["atoms"] == [{"x": "0", "mass": "0.50000000000000000000"}]
    (a, b), = [(float(x), float(y)) for x, y in data["support"]]
    xs = [float(r["x"]) for r in data["grid"]]
    # the default grid spans the atom and the support, not a symmetric range
    assert min(xs) < 0 < a < b < max(xs) and max(xs) - b < 0.1 * (b - min(xs))
    assert all(r["density"] == "0" for r in data["grid"] if not a <= float(r["x"]) <= b)
    inside = [float(r["density"]) for r in data["grid"] if a < float(r["x"]) < b]
    assert inside and all(d > 0 for d in inside)


def test_model_file_that_is_a_folder_or_not_utf8(tmp_path, capsys):
    folder = tmp_path / "m.toml"
    folder.mkdir()
    binary = tmp_path / "b.toml"
    binary.write_bytes(b'name = "\xff"\n')
    assert run("law", str(folder))[0] == 2
    assert run("law", str(binary))[0] == 2
    err = capsys.readouterr().err
    assert "is a folder" in err and "not a UTF-8 text file" in err and "internal error" not in err


def test_overflowing_scale_is_a_typed_error():
    """beta = 27: c^2 = e^729 - 730, about 1e316, beyond double precision even in units of the scale.

    (beta = 10, with c^2 near 1e43, is solved in units of its scale: tests/test_units.py.)
    Before, a NaN reached an int() deep in the solver (an internal error)."""
    import warnings

    import freeprob as fp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the regime warning and numpy's overflow warnings
        law = fp.attention.attention_law(1, "mha", 27)
        with pytest.raises(fp.ConvergenceError, match="beyond the range of double precision"):
            law.support()


@pytest.mark.parametrize("name", ["marchenko-pastur", "attention-single-head"])
def test_law_grid_carries_its_digits(name):
    """The double-precision grid density agrees with a 30-digit solve to 1e-12 (relative to max(1, |G|))."""
    code, text = run("law", name, "--json")
    data = json.loads(text)
    assert code == 0 and data["grid_digits"] == 12
    law = fp.law_of(fp.find_model(name))
    inside = [r for r in data["grid"] if r["density"] not in ("0", "inf")][::10]
    assert len(inside) >= 10
    for r in inside:
        ref = law.cauchy(r["x"], dps=30)
        assert abs(float(r["density"]) - float(law.density(r["x"], dps=30))) <= 1e-12 * max(1, abs(complex(ref)))


def test_a_reader_that_stops_early_is_not_an_error():
    """``freeprob ... | head -1``: the closed pipe ends the command quietly with exit code 0."""
    import subprocess
    import sys

    code = ("import sys; from freeprob.cli import main; "
            "sys.exit(main(['equations', 'attention-mha-h2']))")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the first line is written
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and err == ""


def test_cauchy_reads_a_string_point():
    law = fp.law_of(fp.find_model("marchenko-pastur"))
    assert law.cauchy("1 + 0.5*I") == law.cauchy(1 + 0.5j)
    with pytest.raises(fp.DomainError, match="abc"):
        law.cauchy("abc")
