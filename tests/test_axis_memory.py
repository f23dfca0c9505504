"""Real points started from remembered neighbours (freeprob.solve.newton._AxisMemory).

Contract: a point between two remembered real points, at most MEMORY_SPAN R
apart, starts from their interpolation and costs a Newton solve, not a path;
its value is the one a fresh law (with nothing remembered) gives, to the
double-precision contract (1e-12 relative to max(1, |G|)); a start on the
wrong branch is refused and the point follows its path.
"""

import numpy as np
import pytest

import freeprob as fp
import freeprob.solve.newton as newton

BOUND = 1e-12


def _fresh(name):
    return fp.law_of(fp.find_model(name))


def _paths(monkeypatch):
    """Count the points that follow a path from Im z large."""
    count = [0]
    real = newton._solve_paths

    def counted(fast, z, *args):
        count[0] += len(z)
        return real(fast, z, *args)

    monkeypatch.setattr(newton, "_solve_paths", counted)
    return count


@pytest.mark.parametrize("name", ["wigner-semicircle", "marchenko-pastur", "random-features-tanh"])
def test_points_between_remembered_ones_cost_no_path_and_agree(name, monkeypatch):
    law = _fresh(name)
    (a, b), *_ = law.support_fast()
    coarse = np.linspace(a, b, 41)[1:-1]
    law.cauchy_fast(coarse)  # remembered
    count = _paths(monkeypatch)
    fine = (coarse[:-1] + coarse[1:]) / 2
    got = law.cauchy_fast(fine)
    paths = count[0]
    # only the points in the two end cells may be refused (next to a square-root edge G is not smooth)
    assert paths <= 2
    want = _fresh(name).cauchy_fast(fine)  # a new law remembers nothing: every point by its path
    assert count[0] == paths + len(fine)
    assert np.all(np.isfinite(got))
    # each within BOUND of the truth
    assert np.max(np.abs(got - want) / np.maximum(1, np.abs(want))) <= 2 * BOUND


def test_a_start_across_the_support_is_refused(monkeypatch):
    """Two remembered points outside the semicircle's support on either side (allowed here by a span of 10 R):
    G is real at both, and their interpolation starts a point inside the support next to a real solution.
    The start is refused (the Herglotz bound, and the two values differ by more than a tenth of their size)
    and the point follows its path: the density is the semicircle's."""
    law = _fresh("wigner-semicircle")
    monkeypatch.setattr(newton, "MEMORY_SPAN", 10.0)
    law.cauchy_fast(np.array([-2.2, 2.2]))
    count = _paths(monkeypatch)
    x = np.array([0.0, 0.5, 1.9])
    d = law.density_fast(x)
    assert count[0] == len(x)
    assert np.max(np.abs(d - np.sqrt(4 - x * x) / (2 * np.pi))) <= BOUND


def test_the_memory_forgets_its_oldest_half(monkeypatch):
    monkeypatch.setattr(newton, "MEMORY_POINTS", 100)
    mem = newton._AxisMemory(1)
    mem.add(np.arange(80.0), np.zeros((80, 1), complex))
    mem.add(np.arange(80.0, 160.0), np.ones((80, 1), complex))
    assert len(mem.x) == 50 and np.all(np.diff(mem.x) > 0) and np.all(mem.g == 1)  # the newest 50, in order
    mem.add(np.array([150.0]), np.full((1, 1), 2j))  # a new value at a remembered point replaces it
    assert mem.g[mem.x == 150.0][0, 0] == 2j


def test_a_remembered_start_that_fails_a_later_check_gets_its_path():
    """1e-6 inside an edge of W + O D O^T (D = {0: 99/100, 40: 1/100}; the edge at 40.2246883) the Newton
    correction of the final solution is about the tolerance: from the remembered neighbours' start it ends
    at 2.5e-10, from the path at 8e-11. The point is then solved again by its path, not left unverified."""
    import sympy

    n = fp.dims("n")
    D = fp.deterministic("D", (n, n), spectrum={0: sympy.Rational(99, 100), 40: sympy.Rational(1, 100)})
    expr = fp.wigner("W", n) / sympy.sqrt(n) + fp.haar("O", n) @ D @ fp.haar("O", n).T
    law = fp.eigenvalue_law(expr, ratios={n: 1})
    law.cauchy_fast(np.array([40.22468617, 40.22468749]))
    x = np.array([40.22468714])
    got = law.cauchy_fast(x)
    want = fp.eigenvalue_law(expr, ratios={n: 1}).cauchy_fast(x)
    assert np.isfinite(got).all() and np.abs(got - want)[0] / max(1, abs(want[0])) <= 2 * BOUND


def test_an_edge_refinement_starts_from_the_remembered_outside_point(monkeypatch):
    from freeprob.solve.edges import refine_edge

    law = _fresh("marchenko-pastur")  # ratio 1/2: the edges are (1 -+ sqrt(1/2))^2
    exact = [(1 - np.sqrt(0.5)) ** 2, (1 + np.sqrt(0.5)) ** 2]
    outside = [exact[0] - 0.01, exact[1] + 0.01]
    law.density_fast(np.array(outside))  # the scan's points outside, remembered in the system's variable
    paths = _paths(monkeypatch)
    for x_out, edge in zip(outside, exact):
        z = refine_edge(law._numerics, float(np.sqrt(x_out)), 15)
        assert abs(float(z) ** 2 - edge) <= 1e-14 * edge
    assert paths[0] == 0
