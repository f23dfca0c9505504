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


def test_cells_next_to_an_atom_at_zero_become_smooth_in_one_round():
    """``G = m/x + c`` (an atom at 0) on geometric points 1.47 apart in ratio, as the first pass puts next
    to 0: the windows are not smooth; cut into the pieces :func:`_pieces_to_smooth` asks for (geometric
    cuts, :func:`_cut_cell`), every window is smooth after one round. Cuts in four (the rule before) left
    windows above the tolerance."""
    def g(x):
        return 0.5 / x + 0.1 - 0.01j

    xs = np.geomspace(1e-5, 1e-1, 25)
    pos = np.ones(len(xs), bool)
    assert edges._cells_to_cut(xs, g(xs), pos).all()
    pieces = edges._pieces_to_smooth(xs, g(xs), pos)
    assert (pieces > 4).all() and (pieces <= edges.MAX_PIECES).all()

    def refined(counts):
        new = np.concatenate([edges._cut_cell(xs[i], xs[i + 1], counts[i]) for i in range(len(xs) - 1)])
        return np.sort(np.concatenate([xs, new]))

    once = refined(pieces)
    assert not edges._cells_to_cut(once, g(once), np.ones(len(once), bool)).any()
    four = refined(np.full(len(xs) - 1, 4))
    assert edges._cells_to_cut(four, g(four), np.ones(len(four), bool)).any()


def test_cells_are_cut_geometrically_only_on_one_side_of_zero_and_far_from_it_in_ratio():
    assert np.allclose(edges._cut_cell(1.0, 16.0, 4), [2.0, 4.0, 8.0])
    assert np.allclose(edges._cut_cell(-16.0, -1.0, 4), [-8.0, -4.0, -2.0])
    assert np.allclose(edges._cut_cell(-1.0, 3.0, 4), [0.0, 1.0, 2.0])
    assert np.allclose(edges._cut_cell(10.0, 11.0, 2), [10.5])


def test_an_unverified_end_of_the_scan_moves_outwards_only():
    """The ends of a scan stand outside the support; an end that is unverified is moved away from the
    support, never into it (the semicircle's scan began 2e-6 outside its edge, was moved 4e-5 inwards, and
    the Dyson route refused the law). Its Dyson support is [-2, 2] at 15 and 30 digits."""
    def cauchy(x):
        x = np.asarray(x, float)
        return np.where(np.abs(np.abs(x) - 2.000002) < 1e-9, np.nan, 1 / (x + 0j))

    xs = np.array([-2.000002, -1.0, 1.0, 2.000002])
    moved, g = edges._moved_off_unverified(cauchy, xs, cauchy(xs))
    assert moved[0] < -2.000002 and moved[-1] > 2.000002 and np.isfinite(g).all()
    law = fp.law_of(fp.find_model("wigner-semicircle"))
    for dps in (15, 30):
        ((a, b),) = law.support(dps, method="dyson")
        assert abs(a + 2) <= 10.0 ** -dps and abs(b - 2) <= 10.0 ** -dps
