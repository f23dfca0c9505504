"""The support scan driven by the analyticity of G (freeprob/solve/edges.py: ``adaptive_scan``): a gap
between two points of a coarse scan is found from the samples of G, without a dense scan."""

import numpy as np
import pytest

import freeprob as fp
from freeprob.solve import edges

#: random-features-tanh's gap, from its verified support (0.04972505314703789, 0.06567026486057128).
GAP = (0.0497250531470379, 0.0656702648605713)


@pytest.fixture(scope="module")
def law():
    law = fp.law_of(fp.find_model("random-features-tanh"))
    assert law._units is None and law.law == "eigenvalues"
    return law


def test_the_smoothness_test_flags_a_gap_a_coarse_scan_steps_over(law):
    """A 64-point scan has no point in the gap (one run: the support looks like one interval), yet the
    fourth divided differences of G mark the cell holding the gap."""
    s = law.scale
    xs, d, thr, pos = edges.support_grid(law.density_fast, "eigenvalues", 64, (-s, s), geometric=False)
    assert not ((xs > GAP[0]) & (xs < GAP[1])).any()
    assert len(edges.support_runs(xs, d, pos, "eigenvalues")) == 1
    cut = edges._cells_to_cut(xs, law.cauchy_fast(xs), pos)
    holding = np.nonzero((xs[:-1] < GAP[0]) & (xs[1:] > GAP[1]))[0]
    assert len(holding) == 1 and cut[holding[0]]


def test_the_adaptive_scan_finds_the_gap_from_a_coarse_scan(law):
    """With ``grid = 256`` the coarse passes (64 points) step over the gap; the refined scan finds both
    intervals, with fewer points than the uniform 256-point scan, and brackets each edge within a cell
    of that scan."""
    s = law.scale
    coarse = edges.support_grid(law.density_fast, "eigenvalues", 64, (-s, s), geometric=False)
    assert len(edges.support_runs(coarse[0], coarse[1], coarse[3], "eigenvalues")) == 1
    xs, d, thr, pos = edges.adaptive_scan(law.cauchy_fast, "eigenvalues", 256, (-s, s))
    runs = edges.support_runs(xs, d, pos, "eigenvalues")
    assert len(runs) == 2
    assert len(xs) < 256
    (i0, i1, _), (j0, j1, _) = runs
    cell = (xs[-1] - xs[0]) / 255 * (1 + 1e-6)
    assert xs[i1] < GAP[0] < xs[i1 + 1] and xs[i1 + 1] - xs[i1] <= cell
    assert xs[j0 - 1] < GAP[1] < xs[j0] and xs[j0] - xs[j0 - 1] <= cell
