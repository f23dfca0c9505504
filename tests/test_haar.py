"""Haar rotations ``O D O^T`` of deterministic matrices (freeprob.expr.haar).

A two-valued ``D`` rotated by a Haar matrix is ``b_1 I + (b_2 - b_1) Q`` with
``Q`` the projection onto a uniformly distributed subspace, written with a
Gaussian matrix and an inverse. Closed forms: ``A + O B O^T`` with ``A`` and
``B`` of spectrum ``{-1, 1}`` (weights 1/2) is the arcsine law on ``[-2, 2]``,
density ``1/(pi sqrt(4 - x^2))`` and moments ``binomial(2j, j)``; with
``B = {0: 3/4, 2: 1/4}`` it is the free convolution of two Bernoulli laws,
computed here by the scalar route (R-transforms); it has atoms of mass
``1/2 + 3/4 - 1 = 1/4`` at ``-1`` and ``1`` (Bercovici-Voiculescu: an atom
at ``a + b`` of mass ``mu({a}) + nu({b}) - 1`` wherever that is positive),
which the atom search finds in the gaps of the support once the continuous
mass comes out 1/2 short.
"""

import mpmath
import pytest
import sympy

import freeprob as fp

DPS = 20
n = fp.dims("n")
O = fp.haar("O", n)
A = fp.deterministic("A", (n, n), spectrum={1: "1/2", -1: "1/2"})


def _close(a, b, digits=DPS):
    return abs(a - b) <= mpmath.mpf(10) ** (-digits) * max(1, abs(b))


def _arcsine():
    B = fp.deterministic("B", (n, n), spectrum={1: "1/2", -1: "1/2"})
    return fp.eigenvalue_law(A + O @ B @ O.T, ratios={n: 1})


def test_arcsine_density():
    law = _arcsine()
    for x in ("0.3", "-1.1", "1.7", "-1.99"):
        with mpmath.workdps(DPS + 10):
            exact = 1 / (mpmath.pi * mpmath.sqrt(4 - mpmath.mpf(x) ** 2))
            assert _close(law.density(x, dps=DPS), exact)


@pytest.mark.slow
def test_arcsine_moments():
    """Moments by the contour around the support (about 25 s: the density is infinite at both edges)."""
    ms = _arcsine().moments(6)
    assert all(_close(m, e, 15) for m, e in zip(ms, [0, 2, 0, 6, 0, 20]))


def test_free_convolution_of_two_bernoulli_laws():
    B = fp.deterministic("B", (n, n), spectrum={2: "1/4", 0: "3/4"})
    law = fp.eigenvalue_law(A + O.T @ B @ O, ratios={n: 1})
    half = sympy.Rational(1, 2)
    ref = fp.free_additive_convolution(fp.Atomic([1, -1], [half, half]),
                                       fp.Atomic([2, 0], [sympy.Rational(1, 4), sympy.Rational(3, 4)]))
    for x in ("0.3", "-0.5", "1.7", "2.5"):
        assert _close(law.density(x, dps=DPS), ref.density(x, dps=DPS))
    assert all(_close(m, e, 15) for m, e in zip(law.moments(4), ref.moments(4)))


@pytest.mark.slow
def test_atoms_away_from_zero():
    """The atoms of the free convolution of two Bernoulli laws (about 25 s: the support scan of this Haar pencil
    and two circles of verified solves), against Bercovici-Voiculescu's rule; the distribution table's mass
    check then passes."""
    a = {1: sympy.Rational(1, 2), -1: sympy.Rational(1, 2)}
    b = {2: sympy.Rational(1, 4), 0: sympy.Rational(3, 4)}
    B = fp.deterministic("B", (n, n), spectrum={k: str(v) for k, v in b.items()})
    law = fp.eigenvalue_law(A + O.T @ B @ O, ratios={n: 1})
    expected = sorted((x + y, u + v - 1) for x, u in a.items() for y, v in b.items() if u + v > 1)
    found = law.atoms(dps=DPS)
    assert len(found) == len(expected) == 2
    for (x, m), (ex, em) in zip(found, expected):
        assert _close(x, ex) and _close(m, em)
    table = law.cdf_function()
    assert abs(table.mass_ac - 0.5) < 1e-6


def test_refusals():
    B = fp.deterministic("B", (n, n), spectrum={1: "1/2", -1: "1/2"})
    C = fp.deterministic("C", (n, n), spectrum={1: "1/3", 2: "1/3", 3: "1/3"})
    W = fp.wigner("W", n)
    with pytest.raises(fp.DomainError, match="only as a rotation"):
        fp.eigenvalue_law(O @ W @ O.T + O, ratios={n: 1})
    with pytest.raises(fp.DomainError, match="rotates both"):
        fp.eigenvalue_law(O @ A @ O.T + O @ B @ O.T, ratios={n: 1})
    taken = fp.gaussian("O_C", (n, n))  # the name the rotation of C by O is written with
    with pytest.raises(fp.DomainError, match="rename the matrix"):
        fp.eigenvalue_law(A + O @ C @ O.T + taken @ taken.T / n, ratios={n: 1})


@pytest.mark.parametrize("w, a", [(sympy.Rational(1, 100), 40), (sympy.Rational(1, 1000), 20)])
def test_moments_of_a_small_far_rotated_piece(w, a):
    """W + O D O^T with D = {0: 1 - w, a: w}: m1 = a w, m2 = 1 + a^2 w (free sum: the variances add, the means
    multiply to 0). At w = 1/100 the series at infinity settled on a non-physical branch of the projection's
    inverse (m1 = -0.00025 was returned); at w = 1/1000 the series does not start and the contour around the
    support found by the scan (which misses the piece at 20) lost its mass. Both are now checked against the
    verified G far from the support."""
    D = fp.deterministic("D", (n, n), spectrum={0: 1 - w, a: w})
    law = fp.eigenvalue_law(fp.wigner("W", n) / sympy.sqrt(n) + O @ D @ O.T, ratios={n: 1})
    m1, m2 = law.moments(2)
    assert _close(m1, a * w, 15) and _close(m2, 1 + a * a * w, 15)


def test_a_far_piece_the_scan_misses_is_found_by_the_mass_check():
    """At w = 1/1000 the piece around 20 (mass 1/1000) breaks no moment bound and the scan misses it: the
    mass check finds the support 1/1000 short, and the circle around the pole-like rise of G there encloses
    mass that is not at one point (it was refused there). The window of that circle is scanned alone and the
    piece joins the support, equal to the reference's (the free convolution's discriminant) to 15 digits."""
    w = sympy.Rational(1, 1000)
    D = fp.deterministic("D", (n, n), spectrum={0: 1 - w, 20: w})
    law = fp.eigenvalue_law(fp.wigner("W", n) / sympy.sqrt(n) + O @ D @ O.T, ratios={n: 1})
    ref = fp.free_additive_convolution(fp.Semicircle(1), fp.Atomic([0, 20], [1 - w, w]))
    got, want = law.support(dps=15), ref.support(dps=15)
    assert len(got) == len(want) == 2
    for (x, y), (rx, ry) in zip(got, want):
        assert abs(x - rx) <= 1e-15 * max(1, abs(rx)) and abs(y - ry) <= 1e-15 * max(1, abs(ry))
    assert law.atoms() == []


def test_far_piece_found_when_the_moments_exceed_the_support():
    """At w = 1/100 the coarse pass steps over the piece around 40 (width 0.40, mass 1/100); m2 = 17 > R^2 = 4
    of the support found, so the scan is repeated on a finer grid, which finds it. Reference: the free
    convolution of the semicircle and the two-atom law (edges from its discriminant)."""
    w = sympy.Rational(1, 100)
    D = fp.deterministic("D", (n, n), spectrum={0: 1 - w, 40: w})
    law = fp.eigenvalue_law(fp.wigner("W", n) / sympy.sqrt(n) + O @ D @ O.T, ratios={n: 1})
    ref = fp.free_additive_convolution(fp.Semicircle(1), fp.Atomic([0, 40], [1 - w, w]))
    got, want = law.support(dps=15), ref.support()
    assert len(got) == len(want) == 2
    for (x, y), (rx, ry) in zip(got, want):
        assert abs(x - rx) <= 1e-13 * max(1, abs(rx)) and abs(y - ry) <= 1e-13 * max(1, abs(ry))


def _semicircle_plus_rotated(values, weights):
    """``W / sqrt(n) + O D O^T`` and its reference: the free convolution of the semicircle and ``D``'s law
    (scalar route, R-transforms; support from the real roots of its discriminant)."""
    D = fp.deterministic("D", (n, n), spectrum={v: str(w) for v, w in zip(values, weights)})
    law = fp.eigenvalue_law(fp.wigner("W", n) / sympy.sqrt(n) + O @ D @ O.T, ratios={n: 1})
    return law, fp.free_additive_convolution(fp.Semicircle(1), fp.Atomic(values, weights))


THIRD = sympy.Rational(1, 3)


def test_three_eigenvalues_by_nested_projections():
    """D = {-1, 0, 1} (weights 1/3): O D O^T = -I + Q_1 + Q_2 with nested random projections; density at
    30 digits and the support against the free convolution."""
    law, ref = _semicircle_plus_rotated([-1, 0, 1], [THIRD] * 3)
    for x in ("0.3", "-1.5", "2.2"):
        assert _close(law.density(x, dps=30), ref.density(x, dps=30), 30)
    [(lo, hi)], [(rlo, rhi)] = law.support(dps=15), ref.support()
    assert abs(lo - rlo) <= 1e-13 * abs(rlo) and abs(hi - rhi) <= 1e-13 * abs(rhi)


def test_nested_projection_inverses_carry_their_proved_floor():
    """The Gram matrix of the first columns of X, padded with I - E, is invertible above the Marchenko-Pastur
    edge (1 - sqrt(s_1))^2 (s_1 = 1/4 of n here): the floor the rewrite proves is the bound the reduction uses."""
    from freeprob.expr.haar import rotate
    from freeprob.reduce.inverse import inverse_gap
    from freeprob.reduce.scaling import normalize

    D = fp.deterministic("D", (n, n), spectrum={-1: "1/4", 0: "1/4", 2: "1/2"})
    rotated, ratios = rotate(O @ D @ O.T)
    (k, ratio), = ratios.items()
    assert ratio == n / 2
    inverses = {node for node in _walk(rotated) if isinstance(node, fp.Inverse)}
    assert len(inverses) == 2 and sum(node.floor is not None for node in inverses) == 1
    [padded] = [node for node in inverses if node.floor is not None]
    gap = inverse_gap(padded, normalize(padded.arg, [n, k])).subs(ratios)
    assert sympy.simplify(gap - (1 - sympy.sqrt(sympy.Rational(1, 4))) ** 2) == 0


def _walk(node):
    yield node
    for child in node.children():
        yield from _walk(child)


@pytest.mark.slow
def test_four_eigenvalues_density_support_moments():
    """D = {-1: 1/5, 0: 1/5, 1: 1/2, 3: 1/10}: two support intervals; moments by the contour (minutes)."""
    R = sympy.Rational
    law, ref = _semicircle_plus_rotated([-1, 0, 1, 3], [R(1, 5), R(1, 5), R(1, 2), R(1, 10)])
    for x in ("0.3", "-1.5", "2.2", "3.5"):
        assert _close(law.density(x, dps=30), ref.density(x, dps=30), 30)
    got, want = law.support(dps=15), ref.support()
    assert len(got) == len(want) == 2
    for (x, y), (rx, ry) in zip(got, want):
        assert abs(x - rx) <= 1e-13 * max(1, abs(rx)) and abs(y - ry) <= 1e-13 * max(1, abs(ry))
    assert all(_close(m, e, 25) for m, e in zip(law.moments(4), ref.moments(4)))


@pytest.mark.slow
def test_three_eigenvalues_moments():
    law, ref = _semicircle_plus_rotated([-1, 0, 1], [THIRD] * 3)
    assert all(_close(m, e, 25) for m, e in zip(law.moments(4), ref.moments(4)))


@pytest.mark.slow
def test_three_eigenvalues_against_monte_carlo():
    """The nested-projection law against Monte-Carlo of the model itself (O sampled Haar), fp.check."""
    law, _ = _semicircle_plus_rotated([-1, 0, 1], [THIRD] * 3)
    report = fp.check(law, n=400, reps=4, seed=1)
    assert report.passed, report.text()
