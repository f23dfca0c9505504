"""Atoms away from the points asked about (freeprob.solve.poles), on Cauchy transforms known in closed form.

``G = w G_sc + (1 - w)/(z - a)``: a semicircle on ``[-2, 2]`` of mass ``w`` and an atom at ``a``. The circle
around the atom gives its location and mass to the digits asked for; a circle around a narrow piece of support
is refused when the mass inside is not at one point; the double-precision grid in the gaps finds the atom.
"""

import mpmath
import numpy as np
import pytest

import freeprob as fp
from freeprob.solve.poles import atom_on_circle, complete_atoms, pole_cells

W = mpmath.mpf(3) / 4
ATOM = mpmath.mpf(7) / 2


def _cauchy(z, dps):
    with mpmath.workdps(dps + 10):
        z = mpmath.mpc(z)
        sc = (z - mpmath.sqrt(z - 2) * mpmath.sqrt(z + 2)) / 2  # the branch with G ~ 1/z
        return W * sc + (1 - W) / (z - ATOM)


def _cauchy_fast(zs):
    zs = np.asarray(zs, dtype=complex)
    return np.array([complex(_cauchy(z, 15)) for z in zs])


def _density_fast(xs):
    xs = np.asarray(xs, dtype=float)
    return float(W) * np.sqrt(np.maximum(4 - xs * xs, 0)) / (2 * np.pi)


@pytest.mark.parametrize("dps", [15, 40])
def test_atom_on_circle(dps):
    x, m = atom_on_circle(_cauchy, 3.5000001, 0.4, dps)
    tol = mpmath.mpf(10) ** (-dps)
    assert abs(x - ATOM) < tol * ATOM and abs(m - (1 - W)) < tol


def test_a_piece_of_support_is_not_an_atom():
    """The atom's mass spread over a semicircle of radius 1/100 around it: the circle of radius 0.4 encloses the
    whole piece, whose variance (1/4 of 10^-4) is far above what the rules resolve."""
    def narrow(z, dps):
        with mpmath.workdps(dps + 10):
            u = (mpmath.mpc(z) - ATOM) * 100
            piece = 100 * (u - mpmath.sqrt(u - 2) * mpmath.sqrt(u + 2)) / 2
            return _cauchy(z, dps) + (1 - W) * (piece - 1 / (mpmath.mpc(z) - ATOM))

    with pytest.raises(fp.ConvergenceError, match="not at one point"):
        atom_on_circle(narrow, 3.5, 0.4, 15)


def test_a_negative_mass_is_refused():
    """A transform with a pole of negative residue is no law's: the circle refuses it instead of returning it."""
    def flipped(z, dps):
        with mpmath.workdps(dps + 10):
            return _cauchy(z, dps) - 2 * (1 - W) / (mpmath.mpc(z) - ATOM)

    with pytest.raises(fp.ConvergenceError, match="negative"):
        atom_on_circle(flipped, 3.5, 0.4, 15)


def test_no_mass_inside():
    assert atom_on_circle(_cauchy, 5.0, 0.5, 15) is None


def test_the_grid_finds_the_atom_and_the_mass_adds_up():
    cells = pole_cells(_cauchy_fast, [(2.0, 10.0)], [-10.0, -2.0, 2.0, 10.0])
    assert len(cells) == 1 and cells[0][0] < 3.5 < cells[0][1]
    found = complete_atoms([], [(-2.0, 2.0)], (-10.0, 10.0), 15, _density_fast, _cauchy_fast, _cauchy)
    assert len(found) == 1 and abs(found[0][0] - ATOM) < 1e-15 * ATOM and abs(found[0][1] - (1 - W)) < 1e-15


def test_missing_mass_is_refused():
    """Without the gap that holds the atom (the range stops short of it), the mass check refuses."""
    with pytest.raises(fp.ConvergenceError, match="not 1"):
        complete_atoms([], [(-2.0, 2.0)], (-3.0, 3.0), 15, _density_fast, _cauchy_fast, _cauchy)
