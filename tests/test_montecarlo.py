"""Monte-Carlo of the same expression: sampling discipline and a fast check."""

import numpy as np
import pytest

import freeprob as fp
from freeprob.montecarlo.sample import sample_matrix, sizes_for
from freeprob.montecarlo.stats import student_t_quantile


def test_sizes_and_seeded_reproducibility():
    law = fp.law_of(fp.find_model("gaussian-product"))
    assert sizes_for(law, 100) == {s: int(round(float(r) * 100)) for s, r in law.ratios.items()}
    a = fp.sample_spectrum(law, 60, rng=1)
    b = fp.sample_spectrum(law, 60, rng=1)
    assert np.array_equal(a, b)
    assert len(a) == 60  # over the rows of P (p = 1 * N)


def test_repeated_leaf_is_one_draw():
    p, n = fp.dims("p n")
    X = fp.gaussian("X", (p, n))
    law = fp.eigenvalue_law(X @ X.T / n - X @ X.T / n, ratios={p: 1, n: 1})
    assert np.allclose(sample_matrix(law, 30, rng=0), 0)


def test_user_scale_factors_are_used():
    p, n = fp.dims("p n")
    X = fp.gaussian("X", (p, n), variance=4)
    law = fp.eigenvalue_law(X @ X.T / n, ratios={p: 1, n: 1})
    m = sample_matrix(law, 400, rng=0)
    # E (1/p) tr X X^T / n = variance = 4; fluctuation of the mean of p*n squares is ~ 4 sqrt(2/(p n))
    assert abs(np.trace(m) / 400 - 4) < 5 * 4 * np.sqrt(2 / 400**2)


def test_student_t_quantile():
    # known values: t_{0.975, 5} = 2.5706, t_{0.995, 3} = 5.8409
    assert abs(student_t_quantile(0.975, 5) - 2.570582) < 1e-5
    assert abs(student_t_quantile(0.995, 3) - 5.840909) < 1e-5


@pytest.mark.parametrize("name", ["marchenko-pastur", "wigner-plus-wishart"])
def test_fast_check_passes(name):
    law = fp.law_of(fp.find_model(name))
    rep = fp.check(law, n=400, reps=5, seed=11)
    assert rep.passed, rep.text()


def test_check_detects_a_wrong_theory():
    """The verdict has power: the theory of a different ratio must fail.

    p/n = 0.5 sampled, p/n = 0.6 theory: m2 = 1 + p/n differs by 0.1, m3 by 0.41,
    and the counting function at the 0.25-quantile of the wrong law by about 0.04.
    At N = 400 (5 + 10 replicates) the pooled standard errors of the
    extrapolated statistics are about 0.018 (m2), 0.057 (m3) and 0.004 (counts),
    so several |t| are near 7-10, above the critical value 5.45 (t with 13
    degrees of freedom, family-wise level 1e-3); with 5 times more N the margin
    grows 5 times."""
    model = fp.find_model("marchenko-pastur")
    wrong = fp.law_of(model.with_values({"p": "0.6"}))
    right = fp.law_of(model)
    rep = fp.check(right, n=400, reps=5, seed=11)
    assert rep.passed
    # sample the p = 0.5 model but compare with the p = 0.6 theory
    from freeprob.montecarlo import check as _montecarlo

    class Swapped:
        def __getattr__(self, item):
            return getattr(wrong, item)

    swapped = Swapped()
    swapped.ratios = right.ratios
    swapped.expr = right.expr
    swapped.law = right.law
    swapped.params = right.params
    rep = _montecarlo.check(swapped, n=400, reps=5, seed=11)
    assert not rep.passed


def _freeprob_imports(path):
    """``(module, names, inside_function)`` of every freeprob import of a file, resolved to absolute names."""
    import ast

    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    tree = ast.parse(path.read_text())
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node

    def in_function(node):
        while node in parents:
            node = parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return True
        return False

    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] == "freeprob":
                out.append((module, [a.name for a in node.names], in_function(node)))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "freeprob":
                    out.append((a.name, [], in_function(node)))
    return out


ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent
LOW = ("freeprob._errors", "freeprob._numbers", "freeprob._precision", "freeprob._deadline")


@pytest.mark.parametrize("package, allowed", [
    ("montecarlo", LOW + ("freeprob.expr", "freeprob.solve.cdf", "freeprob.montecarlo")),
    # the law layer (docs/architecture.md): law.py and its siblings, such as the causal law
    ("attention", LOW + ("freeprob.expr", "freeprob.law", "freeprob.causal_law", "freeprob.montecarlo",
                         "freeprob.attention")),
])
def test_layer_imports(package, allowed):
    """The import rule of the layout for montecarlo/ (rank 3) and attention/ (rank 5): only the allowed
    packages, at module top, and no private name of another module."""
    for path in sorted((ROOT / "freeprob" / package).glob("*.py")):
        for module, names, inside in _freeprob_imports(path):
            assert not inside, (path.name, module)
            assert module.startswith(allowed), (path.name, module)
            if module != f"freeprob.{package}" and not module.startswith(LOW):
                assert not [n for n in names if n.startswith("_")], (path.name, module, names)


def test_report_columns_stay_apart_for_huge_values():
    """A failing check of a badly scaled model has |t| in the millions and moments near 1e100; the table's
    columns must still be separated by blanks, so the row splits into its eight fields."""
    from freeprob.montecarlo.check import CheckReport

    stat = {"name": "m4", "theory": -1.23456789e100, "at_n": 9.87654321e99, "at_half": 1.5e-300,
            "extrapolated": -7.5e100, "se": 1.25e-100, "t": -1.2345e9, "passed": False}
    small = dict(stat, name="m1", theory=1.0, at_n=1.0, at_half=1.0, extrapolated=1.0, se=0.01, t=0.5, passed=True)
    report = CheckReport(model="m", n=10, reps=2, seed=0, ks=0.1, ks_half=0.2, statistics=(stat, small),
                         critical=5.0, passed=False)
    rows = [line for line in report.text().splitlines() if line.startswith(("m4", "m1"))]
    assert rows[0].split()[:7] == ["m4", "-1.23457e+100", "9.87654e+99", "1.5e-300", "-7.5e+100", "1.25e-100",
                                   "1.23e+09"]
    assert rows[0].endswith("<-- FAIL")
    assert rows[1].split() == ["m1", "1", "1", "1", "1", "1.00e-02", "0.50"]
