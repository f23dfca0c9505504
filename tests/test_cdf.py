"""The mass of a density on its support intervals (freeprob/solve/cdf.py: ``continuous_mass``, the
adaptive Gauss-Kronrod rule it uses), against closed forms."""

import math

import numpy as np
import pytest

from freeprob import ConvergenceError
from freeprob.solve import cdf


@pytest.mark.parametrize("degree", [0, 5, 13, 22])
def test_the_kronrod_rule_is_exact_for_polynomials_of_degree_22(degree):
    """K15 integrates ``t^degree`` over one panel exactly (to rounding); G7 up to degree 13."""
    exact = 2.0 / (degree + 1) if degree % 2 == 0 else 0.0
    nodes = cdf.GK15_NODES
    assert abs(float(np.sum(cdf.GK15_KRONROD * nodes ** degree)) - exact) <= 1e-15
    if degree <= 13:
        assert abs(float(np.sum(cdf.GK15_GAUSS * nodes ** degree)) - exact) <= 1e-15


def test_a_sharp_dip_is_resolved_by_refining_only_around_it():
    """``1 - 0.99 exp(-((t - 1) / w)^2)`` on ``[0, pi]``, ``w = 0.03`` (about the node spacing of the
    first panels, 0.05, so that they see it): the integral ``pi - 0.99 w sqrt(pi)`` (erf tails below 1e-300)
    within the error estimate, which is below the tolerance, with fewer points than a uniform rule of the
    same accuracy. (A dip far narrower than the first nodes' spacing can be missed; the mass check that
    uses this rule then refuses the law, it does not pass a wrong one.)"""
    width = 0.03
    exact = math.pi - 0.99 * width * math.sqrt(math.pi)
    value, err, points = cdf._adaptive_mass(lambda t: 1 - 0.99 * np.exp(-((t - 1) / width) ** 2), 1e-9, 10 ** 5)
    assert abs(value - exact) <= err <= 1e-9
    assert points < 1000


def semicircle(x):
    return np.sqrt(np.maximum(4 - x * x, 0)) / (2 * np.pi)


def marchenko_pastur_square(x):
    """Marchenko-Pastur at ratio 1: the density ``sqrt((4 - x) / x) / (2 pi)`` on ``[0, 4]``, a hard edge at 0."""
    return np.sqrt(np.maximum(4 - x, 0) / x) / (2 * np.pi)


def test_continuous_mass_of_closed_forms():
    """Mass 1 within the error estimate; the estimate is at most the quadrature's tolerance plus the error of
    the power-law fit of the sliver next to a hard edge (``x^-1/2`` at 0), which more points do not change."""
    for density, intervals, hard in [(semicircle, [(-2.0, 2.0)], ()), (marchenko_pastur_square, [(0.0, 4.0)], (0.0,))]:
        mass, err = cdf.continuous_mass(density, intervals, hard)
        (a, b), = intervals
        fit_err = cdf._hard_ends(density, a, b, a in hard, b in hard)[3]
        assert abs(mass - 1) <= err + 1e-12
        assert err <= cdf.MASS_QUAD_TOL + fit_err


def test_two_intervals_add_up():
    """Half a semicircle on each of two intervals: the masses add."""
    mass, err = cdf.continuous_mass(semicircle, [(-2.0, 0.0), (0.0, 2.0)])
    assert abs(mass - 1) <= err + 1e-12


def test_the_mass_check_solves_its_few_unverified_points_in_more_digits():
    # the semicircle's density, unverified (NaN) at the nodes nearest its edges, as the double-precision
    # solve is next to the edges of a narrow piece far from 0
    from freeprob.solve.cdf import continuous_mass

    def semicircle(x):
        return np.sqrt(np.maximum(4 - x * x, 0)) / (2 * np.pi)

    def patchy(x):
        x = np.asarray(x, dtype=float)
        return np.where(np.abs(x) > 1.9999, np.nan, semicircle(x))

    asked = []

    def exact(x):
        asked.append(x)
        return semicircle(np.array([x]))[0]

    mass, err = continuous_mass(patchy, [(-2.0, 2.0)], exact=exact)
    assert len(asked) == 2 and all(abs(x) > 1.9999 for x in asked)
    assert abs(mass - 1) <= 1e-9 + err
    with pytest.raises(ConvergenceError, match="could not be verified"):
        continuous_mass(patchy, [(-2.0, 2.0)])


def test_moments_of_the_continuous_part():
    # the semicircle on [-2, 2] has m1 = 0, m2 = 1; the shifted one on [1, 5] has m1 = 3, m2 = 10 (1 + 9)
    def semicircle(x):
        return np.sqrt(np.maximum(4 - x * x, 0)) / (2 * np.pi)

    for shift, moments in ((0.0, (1.0, 0.0, 1.0)), (3.0, (1.0, 3.0, 10.0))):
        for k, want in enumerate(moments):
            got, err = cdf.continuous_mass(lambda x: semicircle(np.asarray(x) - shift), [(shift - 2, shift + 2)],
                                           power=k)
            assert abs(got - want) <= 1e-9 * max(1, abs(want)) + err, (shift, k, got)
