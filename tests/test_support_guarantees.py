"""Supports that are right or refused (freeprob/solve/edges.py: the adaptive scan, the edge side check).

The models are ``sqrt(s2) W + O D O^T``: a semicircle of variance ``s2`` freely
plus a two-point law ``{0: 1 - w, a: w}`` (a Haar rotation of a deterministic
matrix). Their reference supports come from the scalar route,
``free_additive_convolution(Semicircle(s2), Atomic([0, a], [1 - w, w]))``,
whose edges are the real roots of the discriminant of the eliminated
polynomial (isolated exactly, rounded to the digits asked for): an independent
computation.
"""

import mpmath
import pytest
import sympy

import freeprob as fp

DPS = 15
n = fp.dims("n")
O = fp.haar("O", n)
W = fp.wigner("W", n)


def _models(s2, a, w):
    s2, a, w = sympy.Rational(s2), sympy.Rational(a), sympy.Rational(w)
    D = fp.deterministic("D", (n, n), spectrum={0: 1 - w, a: w})
    law = fp.eigenvalue_law(sympy.sqrt(s2) * W / sympy.sqrt(n) + O @ D @ O.T, ratios={n: 1})
    ref = fp.free_additive_convolution(fp.Semicircle(s2), fp.Atomic([0, a], [1 - w, w]))
    return law, ref


def _assert_same_support(support, ref_support):
    assert len(support) == len(ref_support), (support, ref_support)
    tol = mpmath.mpf(10) ** (-DPS)
    for (a, b), (ra, rb) in zip(support, ref_support):
        assert abs(a - ra) <= tol * max(1, abs(ra)) and abs(b - rb) <= tol * max(1, abs(rb)), ((a, b), (ra, rb))


#: (w, a, the reference gap's width): the examples of the known limit (gaps narrower than a cell of the
#: 401-point scan, which merged the two intervals), and the narrowest gaps found by bisecting ``a``
#: towards where the gap closes (a = 1.96145917672137..., 2.0000000000092..., 1.5710873149617... on the
#: reference supports).
NARROW_GAPS = [
    ("1/3", "63/32", 4.8e-4),
    ("1/3", "25107/12800", 9.8e-8),
    ("1/2", "201/100", 7.7e-4),
    ("1/2", "204801/102400", 2.3e-8),
    ("1/20", "159/100", 2.0e-3),
    ("1/20", "643531/409600", 1.5e-7),
]


@pytest.mark.parametrize("w, a, width", NARROW_GAPS)
def test_a_gap_narrower_than_a_scan_cell_is_found(w, a, width):
    law, ref = _models(1, a, w)
    ref_support = ref.support(dps=DPS)
    assert len(ref_support) == 2
    gap = float(ref_support[1][0] - ref_support[0][1])
    assert 0.5 * width < gap < 1.5 * width
    # narrower than a cell of a uniform 401-point scan of the support itself (the scanned range is wider)
    assert gap < float(ref_support[1][1] - ref_support[0][0]) / 400
    _assert_same_support(law.support(dps=DPS), ref_support)


def test_a_piece_the_scan_steps_over_is_found_in_the_window_the_mass_check_names(monkeypatch):
    """W + D with D = {0: 1 - 1e-4, 100: 1e-4}: a piece of mass 1e-4 and width about 0.04 near 100, which
    the scan's coarse passes step over. The mass check (run by support(), not only by atoms()) finds the
    mass 1e-4 missing, locates it near 100 and sees that it is not one point; the window it names is scanned
    alone, and support() returns both pieces, equal to the reference's to 15 digits (it returned [-2, 2]
    once, then raised). When the window's scan finds nothing, support() raises, never omits the piece. A
    complete support's mass check is the one atoms() then uses, not run twice."""
    import freeprob.law as law_module

    w = sympy.Rational(1, 10000)
    D = fp.deterministic("D", (n, n), spectrum={0: 1 - w, 100: w})
    law = fp.eigenvalue_law(W / sympy.sqrt(n) + D, ratios={n: 1})
    ref = fp.free_additive_convolution(fp.Semicircle(1), fp.Atomic([0, 100], [1 - w, w]))
    _assert_same_support(law.support(DPS, method="dyson"), ref.support(dps=DPS))
    assert law.atoms(DPS) == []
    blind = fp.eigenvalue_law(W / sympy.sqrt(n) + D, ratios={n: 1})
    real_scan = law_module.support_by_folds
    monkeypatch.setattr(law_module, "support_by_folds",
                        lambda *a, **k: [] if k.get("local") else real_scan(*a, **k))
    with pytest.raises(fp.ConvergenceError, match="a piece of support the scan missed"):
        blind.support(DPS, method="dyson")
    monkeypatch.setattr(law_module, "support_by_folds", real_scan)
    # a support found on another grid misses the piece again: its own mass check finds it again
    for grid in (64, 1001):
        _assert_same_support(law.support(DPS, grid=grid, method="dyson"), ref.support(dps=DPS))
    calls = []
    real = law_module.complete_atoms
    monkeypatch.setattr(law_module, "complete_atoms", lambda *a, **k: calls.append(1) or real(*a, **k))
    ok = fp.law_of(fp.find_model("wigner-plus-wishart"))
    ok.support(DPS)
    assert ok.atoms(DPS) == [] and len(calls) == 1


def test_a_missed_piece_of_a_gram_law_is_found_in_the_users_variable():
    """S X X^T S / n with a spike of weight 1e-4 at 10 in S and p/n = 1/1000, solved as the squared singular
    values of S X / sqrt(n): the window is in x, its edges are refined in sqrt(x); both pieces agree with the
    polynomial route's (discriminant) edges to 15 digits."""
    p_ = fp.dims("p")
    X = fp.gaussian("X", (p_, n))
    w = sympy.Rational(1, 10000)
    S = fp.deterministic("S", (p_, p_), spectrum={1: 1 - w, 10: w})
    law = fp.eigenvalue_law(S @ X @ X.T @ S / n, ratios={p_: sympy.Rational(1, 1000), n: 1})
    assert law.reduction.kind == "squared-singular-values"
    _assert_same_support(law.support(DPS, method="dyson"), law.support(DPS, method="polynomial"))
    assert law.atoms(DPS) == []


def test_a_missed_piece_error_crosses_process_boundaries():
    """A parallel sweep's worker sends its errors back pickled: the error keeps its class and its window."""
    import pickle

    from freeprob.solve.poles import MissedSupport

    err = pickle.loads(pickle.dumps(MissedSupport("a piece of support the scan missed", 100.0, 0.5, 15)))
    assert isinstance(err, fp.ConvergenceError) and (err.center, err.radius, err.dps) == (100.0, 0.5, 15)
    assert "scan missed" in str(err)


def test_narrow_pieces_far_apart_in_a_loose_range():
    """S X X^T S / n with a spike of weight 1e-4 at 20 in S and p/n = 1/1000: the bulk [0.94, 1.06] and the
    piece around 400 are both narrower than a coarse cell of the range [0, 426]. The first coarse pass sees
    the piece on one point and zooms to [0, 404]; the next pass steps over both, and narrowing to its first
    cell then (the rule for a pass that sees nothing) lost the support altogether ("no positive density").
    The range is kept after a pass that saw the support; both pieces agree with the polynomial route's edges
    to 15 digits."""
    p_ = fp.dims("p")
    X = fp.gaussian("X", (p_, n))
    w = sympy.Rational(1, 10000)
    S = fp.deterministic("S", (p_, p_), spectrum={1: 1 - w, 20: w})
    law = fp.eigenvalue_law(S @ X @ X.T @ S / n, ratios={p_: sympy.Rational(1, 1000), n: 1})
    _assert_same_support(law.support(DPS, method="dyson"), law.support(DPS, method="polynomial"))


@pytest.mark.parametrize("w, a", [("3/1000000", 50), ("1/100000", -50)])
def test_thin_pieces_on_either_side_are_found(w, a):
    """W + D (D diagonal, no rotation) with a spike of weight 3e-6 at 50, or 1e-5 at -50: a piece far
    narrower than the scan's cells, found in the window the mass check's pole search names; both pieces
    equal to the reference's to 15 digits."""
    w, a = sympy.Rational(w), sympy.Rational(a)
    D = fp.deterministic("D", (n, n), spectrum={0: 1 - w, a: w})
    law = fp.eigenvalue_law(W / sympy.sqrt(n) + D, ratios={n: 1})
    ref = fp.free_additive_convolution(fp.Semicircle(1), fp.Atomic([0, a], [1 - w, w]))
    _assert_same_support(law.support(DPS, method="dyson"), ref.support(dps=DPS))


@pytest.mark.parametrize("w", ["1/100000", "3/100000", "5/100000"])
def test_a_thin_piece_of_a_gram_law_is_placed_by_the_moments(w):
    """S X X^T S / n with a spike of weight 1e-5 to 5e-5 at 10 in S (p/n = 1/2): the piece near 100 has
    density below the threshold of the scan (1e-4 of the bulk's median density) and G shows no rise in the
    gap, so neither the scan nor the pole search sees it (the law was refused: "an atom or a piece of
    support was not found"). The moments the support lacks, D_k = m_k - int x^k rho, place it at D_2 / D_1;
    the window there is scanned alone, and both pieces agree with the polynomial route's edges to 15
    digits."""
    p_ = fp.dims("p")
    X = fp.gaussian("X", (p_, n))
    w = sympy.Rational(w)
    S = fp.deterministic("S", (p_, p_), spectrum={1: 1 - w, 10: w})
    law = fp.eigenvalue_law(S @ X @ X.T @ S / n, ratios={p_: sympy.Rational(1, 2), n: 1})
    _assert_same_support(law.support(DPS, method="dyson"), law.support(DPS, method="polynomial"))
