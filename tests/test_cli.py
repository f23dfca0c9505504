"""The command line: the public forms and their JSON shapes."""

import io
import json
import sys

import pytest

from freeprob.cli.engine import main


def run(*argv):
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def test_models_lists_builtins():
    code, text = run("models", "--json")
    names = [m["name"] for m in json.loads(text)["models"]]
    assert code == 0 and "marchenko-pastur" in names and "attention-single-head" in names


def test_equations_text_latex_json():
    code, text = run("equations", "marchenko-pastur")
    assert code == 0 and "space p" in text and "space n" in text
    code, text = run("equations", "marchenko-pastur", "--latex")
    assert code == 0 and "\\left[" in text
    code, text = run("equations", "wigner-semicircle", "--json")
    data = json.loads(text)
    assert data["law"] == "eigenvalues" and data["unknowns"] and data["equations"]


def test_density_json_shape():
    code, text = run("density", "wigner-semicircle", "--at", "0,1", "--dps", "20", "--json")
    data = json.loads(text)
    assert code == 0 and data["dps"] == 20 and data["model"] == "wigner-semicircle"
    p = data["points"][0]
    assert set(p) == {"x", "density", "cauchy"} and set(p["cauchy"]) == {"re", "im"}
    # 20 significant digits: 1/pi = 0.31830988618379067154
    assert p["density"] == "0.31830988618379067154"


def test_set_overrides_ratio():
    code, text = run("density", "marchenko-pastur", "--at", "1", "--set", "p=1", "--json")
    data = json.loads(text)
    # ratio 1: density sqrt(x(4-x))/(2 pi x) at x = 1 is sqrt(3)/(2 pi)
    assert data["points"][0]["density"].startswith("0.27566444771089")


def test_law_json_shape(tmp_path):
    csv = tmp_path / "grid.csv"
    png = tmp_path / "law.png"
    code, text = run("law", "marchenko-pastur", "--grid", "0:3:7", "--json", "--csv", str(csv), "--plot", str(png))
    data = json.loads(text)
    assert code == 0
    assert set(data) >= {"support", "atoms", "moments", "grid"}
    assert data["support"][0][0].startswith("0.0857864376269")
    assert data["moments"][:2] == ["1.00000000000000", "1.50000000000000"]
    assert len(data["grid"]) == 7 and csv.read_text().startswith("x,density")
    assert png.stat().st_size > 1000


def test_law_reports_atom():
    code, text = run("law", "marchenko-pastur", "--set", "p=2", "--json", "--grid", "0:6:4")
    data = json.loads(text)
    assert data["atoms"] == [{"x": "0", "mass": "0.500000000000000"}]


def test_check_text_and_exit_code(tmp_path):
    png = tmp_path / "check.png"
    code, text = run("check", "wigner-semicircle", "--n", "300", "--reps", "4", "--seed", "3", "--plot", str(png))
    assert code == 0 and "verdict: PASS" in text and png.stat().st_size > 1000


def test_errors_are_reported_not_raised(capsys):
    code, _ = run("density", "no-such-model", "--at", "1")
    assert code == 2
    assert "no-such-model" in capsys.readouterr().err
    code, _ = run("density", "marchenko-pastur", "--at", "1", "--set", "q=2")
    assert code == 2


def test_console_script_is_installed():
    import shutil
    import subprocess

    exe = shutil.which("freeprob")
    if exe is None:
        pytest.skip("the package is not installed with its console script")
    res = subprocess.run([exe, "density", "wigner-semicircle", "--at", "0", "--dps", "10"], capture_output=True, text=True)
    assert res.returncode == 0 and "0.3183098862" in res.stdout


def test_moments_exact_and_polynomial():
    code, text = run("moments", "marchenko-pastur", "-k", "4", "--exact", "--json")
    assert code == 0 and json.loads(text) == {"moments": ["1", "3/2", "11/4", "45/8"]}
    code, text = run("equations", "wigner-semicircle", "--polynomial")
    assert code == 0 and "g**2 - g*z + 1" in text.replace(" ", "").replace("g**2-g*z+1", "g**2 - g*z + 1")


# -- progress: on a terminal only, never with --json ---------------------------------------------------


def test_check_shows_progress_on_a_terminal(monkeypatch, capsys):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, _ = run("check", "marchenko-pastur", "--n", "60", "--reps", "3")
    err = capsys.readouterr().err
    assert code == 0 and "Monte-Carlo samples" in err and "/9 " in err  # 3 samples at N and 6 at N/2


@pytest.mark.parametrize("extra", [(), ("--json",)])
def test_check_progress_is_silent_off_a_terminal_and_with_json(monkeypatch, capsys, extra):
    if extra:
        monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, _ = run("check", "marchenko-pastur", "--n", "60", "--reps", "3", *extra)
    assert code == 0 and capsys.readouterr().err == ""


def test_long_grid_shows_progress_on_a_terminal(monkeypatch, capsys):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, _ = run("law", "wigner-semicircle", "--grid", "-2:2:12000", "--moments", "1")
    assert code == 0 and "grid" in capsys.readouterr().err
