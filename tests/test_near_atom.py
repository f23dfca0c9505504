"""Next to a large atom at 0: the double-precision path stays on the law's branch.

With all attention sizes scaled by 1/8 (gqa:2, 8 heads), the law of the
squared singular values has an atom of mass 1/2 at 0 and a density growing
like x^(-1/2) towards it. There the unknowns are about 1e3 to 1e4 while the
imaginary parts that carry the density are about 1, so a path that jumped from
1e-3 of the scale straight to the axis landed on the conjugate branch (a NaN),
or on a real solution inside the support (a density of 0 reported as
verified). Each point must now agree with the verified 20-digit value.
"""

import numpy as np
import pytest
import sympy

import freeprob as fp
from freeprob.attention.model import attention_config, attention_expression, head_groups


@pytest.fixture(scope="module")
def law():
    s = sympy.Rational(1, 8)
    cfg = attention_config(8, "gqa:2", 1, l=s, d_h=s / 16, d_v=s / 16, d_out=s / 2)
    return fp.singular_value_law(attention_expression(cfg), cfg.ratios, {"beta": cfg.beta},
                                 symmetry=head_groups(cfg))


def test_the_atom_is_found(law):
    (x, m), = law.atoms(dps=15)
    assert x == 0 and abs(m - sympy.Rational(1, 2)) < 1e-15


@pytest.mark.parametrize("x", [4.55e-5, 1.55e-4, 2.34e-4, 3.52e-4, 1e-3])
def test_density_next_to_the_atom(law, x):
    fast = law.density_fast(np.array([x]))[0]
    ref = law.density(repr(x), dps=20)
    g = complex(law.cauchy(repr(x), dps=20))
    assert np.isfinite(fast) and ref > 1
    assert abs(fast - float(ref)) <= 1e-12 * max(1, abs(g))


def test_density_in_one_batch_matches_one_by_one(law):
    """Grid points are solved together (anchors, interpolated starts) and must agree with single solves."""
    xs = np.geomspace(3e-5, 3e-2, 220)
    batch = law.density_fast(xs)
    single = np.array([law.density_fast(np.array([x]))[0] for x in xs[::20]])
    ok = np.isfinite(batch[::20]) & np.isfinite(single)
    assert ok.all()
    assert np.allclose(batch[::20], single, rtol=1e-10, atol=0)


def test_support_reaches_the_hard_edge(law):
    """The scale bound is about 1e3 times the upper edge: the coarse passes zoom in before the grid is laid."""
    (a, b), = law.support(dps=15)
    assert a == 0 and 11 < b < 13
    # just inside the upper edge the density is small and positive, just outside it is 0
    # within the double-precision contract (1e-12)
    d_in, d_out = law.density_fast(np.array([float(b) * (1 - 1e-6), float(b) * (1 + 1e-6)]))
    assert 0 < d_in < 1e-2 and 0 <= d_out <= 1e-12


# -- next to an atom on the axis: a verified value or NaN, never another branch ------------------

P_, N_ = fp.dims("p n")
X_, Y_ = fp.gaussian("X", (P_, N_)), fp.gaussian("Y", (P_, N_))


def test_squared_singular_values_next_to_0():
    """X/sqrt(n) with p = 2n: an atom 1/2 at 0 and the bulk on [0.17, 5.83]; the gap near 0 has density 0."""
    sv = fp.singular_value_law(X_ / sympy.sqrt(N_), {P_: 2, N_: 1})
    d = sv.density_fast(np.array([1e-300, 1e-30, 1.0]))
    assert all(np.isnan(v) or v == 0 for v in d[:2]) and abs(d[2] - 1 / (2 * np.pi)) < 1e-12
    g = sv.cauchy_fast(np.array([-1e-30, 0.0]))
    # at w < 0 the atom dominates: G(w) = 0.5/w + O(1)
    assert np.isnan(g[0]) or abs(g[0] - 0.5 / -1e-30) <= 1e-12 * abs(g[0])
    assert np.isnan(g[1])  # G(0) is infinite


def test_eigenvalues_next_to_an_atom():
    """A symmetrized product with an atom 1/9 at 0 and a gap (-0.033, 0.033) around it."""
    law = fp.eigenvalue_law((X_ @ Y_.T + Y_ @ X_.T) / N_, {P_: 9, N_: 4})
    xs = np.array([1e-10, 1e-20, 1e-300])
    g = law.cauchy_fast(xs)
    for x, v in zip(xs, g):
        # G(x) = (1/9)/x + r(x), |r| <= 1/dist(x, bulk) < 1/0.033 (the absolutely continuous
        # part, at most mass one at distance 0.033): a real value near -4/3 or +4/3 is another branch
        assert np.isnan(v) or abs(v - 1 / (9 * x)) <= 1 / 0.033
    above = law.cauchy_fast(np.array([1e-300 + 1e-11j, 1e-6j]))
    assert all(np.isnan(v) or v.imag < 0 for v in above)
    d = law.density_fast(np.array([1e-7, 3e-8, 1e-8]))
    assert all(np.isnan(v) or v == 0 for v in d)


def test_a_soft_edge_within_one_cell_of_0_is_not_a_hard_edge():
    """Marchenko-Pastur at ratio 9/10: the lower edge 0.0026 is below one grid cell from 0."""
    law = fp.eigenvalue_law(X_ @ X_.T / N_, {P_: sympy.Rational(9, 10), N_: 1})
    (a, b), = law.support_fast()
    (a30, b30), = law.support(dps=30)
    assert abs(a - float(a30)) <= 1e-6 * float(b30) and abs(b - float(b30)) <= 1e-6 * float(b30)
    # the distribution table works (it failed on an invented hard edge at 0)
    assert 0.6 < law.quantile(0.5) < 0.8


def test_a_small_bulk_next_to_0_is_found():
    """The Gaussian equivalent of random features (coefficients near tanh's: 3/5 and noise variance
    1/40; n1 = 1, n0 = 1/2, m = 2) has a bulk on [0.0033, 0.0454] holding half the mass, which fell
    between two points of the coarse pass (-0.06 and 0.06): the verified support missed it."""
    n1, n0, m = fp.dims("n1 n0 m")
    W, X = fp.gaussian("W", (n1, n0)), fp.gaussian("X", (n0, m))
    Z = fp.gaussian("Z", (n1, m), variance=sympy.Rational(1, 40))
    y = sympy.Rational(3, 5) * W @ X / sympy.sqrt(n0) + Z
    law = fp.eigenvalue_law(y @ y.T / m, ratios={n1: 1, n0: sympy.Rational(1, 2), m: 2})
    verified = law.support(dps=15)
    fast = law.support_fast()
    assert len(verified) == len(fast) == 2
    for (a, b), (fa, fb) in zip(verified, fast):
        assert abs(float(a) - fa) <= 1e-6 * float(verified[-1][1]) and abs(float(b) - fb) <= 1e-6 * float(verified[-1][1])
