"""The fast verified route of ``freeprob law``: structural atoms, fold edges, hard edges.

Every value is checked against an independent computation: the polynomial
(elimination) route at 30 digits, closed forms, or the other route's exact
numbers; nothing here is a number typed in by hand except closed forms.
"""

import io
import json

import numpy as np
import pytest
import sympy

import freeprob as fp
from freeprob._precision import context, mp_to_str
from freeprob.cli import main
from freeprob.law import norm_bound, rank_bound
from freeprob.solve.edges import atom_at, hard_edge_at

R = sympy.Rational


def law_of(name, **values):
    model = fp.find_model(name)
    if values:
        model = model.with_values({k: str(v) for k, v in values.items()})
    return fp.law_of(model)


def close(a, b, dps):
    ctx = context(dps + 10)
    a, b = ctx.mpf(a), ctx.mpf(b)
    return abs(a - b) <= ctx.mpf(10) ** (-dps) * max(1, abs(b))


# -- structure -----------------------------------------------------------------

@pytest.mark.parametrize("name, values, rank", [
    ("marchenko-pastur", {"p": 2, "n": 1}, 1),
    ("gaussian-product-3", {}, R(3, 4)),
    ("attention-mha-h1", {}, R(1, 2)),
    ("symmetrized-product", {"p": R(9, 4), "n": 1}, 2),
])
def test_rank_bound(name, values, rank):
    law = law_of(name, **values)
    assert rank_bound(law.expr, law.values()) == rank


def test_norm_bound_contains_the_support():
    for name in ("marchenko-pastur", "wigner-plus-wishart", "gaussian-product-3", "attention-single-head"):
        law = law_of(name)
        edges = [abs(float(x)) for iv in law.support(15, method="polynomial") for x in iv]
        assert max(edges) <= law.scale
        b = norm_bound(law.expr, law.values())
        assert law.scale == pytest.approx(b if law.law == "eigenvalues" else b * b)


# -- atoms: the rank bound, attained and verified by the solve ------------------

@pytest.mark.parametrize("name, values", [
    ("marchenko-pastur", {"p": 2, "n": 1}),
    ("gaussian-product-3", {}),
    ("gaussian-product-3", {"p": 1, "m": R(1, 4)}),
    ("symmetrized-product", {"p": R(9, 4), "n": 1}),
])
@pytest.mark.parametrize("dps", [15, 30])
def test_structural_atom_equals_the_exact_atom(name, values, dps):
    """The atom at 0 is 1 - rank/rows; the solve confirms it, and the polynomial route's
    exact pole agrees."""
    law = law_of(name, **values)
    lower = law.atom_lower_bound()
    mass, how = atom_at(law._numerics, law.reduction.kind, 0, dps, lower, law.scale)
    assert how in ("bound", "extrapolated-bound")
    exact = [a for a in law.atoms(dps, method="polynomial") if a[0] == 0]
    assert len(exact) == 1 and close(exact[0][1], mass, dps)
    assert close(sympy.N(lower, dps + 10), mass, dps)
    (x, m), = law.atoms(dps)
    assert x == 0 and close(m, mass, dps)


def test_structural_atom_of_the_attention_model():
    """One head, beta = 7/10, value and output widths 1/2: rank 1/2 of l = 1, so the atom is 1/2,
    confirmed by the solve (the elimination route cannot place atoms for exp(beta^2) coefficients)."""
    law = fp.attention.attention_law(1, "mha", R(7, 10))
    assert law.atom_lower_bound() == R(1, 2)
    (x, mass), = law.atoms(15)
    assert x == 0 and close(mass, R(1, 2), 15)


def test_an_unattained_lower_bound_is_refused_with_numbers():
    law = law_of("marchenko-pastur", p=2, n=1)
    with pytest.raises(fp.ConvergenceError, match="below its lower bound"):
        atom_at(law._numerics, law.reduction.kind, 0, 15, R(9, 10), law.scale)


@pytest.mark.parametrize("name, x0", [
    ("marchenko-pastur", 0),      # p/n = 1/2: 0 lies in the gap below the support
    ("wigner-semicircle", 0),     # inside the support, density 1/pi
    ("wigner-semicircle", 1),
    ("wigner-plus-wishart", 0),
])
def test_no_mass_at_a_regular_point_from_one_solve(name, x0, monkeypatch):
    """Where the solution is regular the mass (0: these laws have no atom there, by their closed forms
    or the polynomial route) comes from one verified solve next to x0; the descent along the imaginary
    axis is not started."""
    import freeprob.solve.edges as edges

    law = law_of(name)
    if name == "marchenko-pastur":  # X X^T / n in its symmetric system, where 0 is a regular point
        m = fp.find_model(name)
        law = fp.SpectralLaw(m.expr, m.law_kind, m.ratios, gram=False)
    monkeypatch.setattr(edges._AxisPath, "start", lambda self: pytest.fail("the imaginary-axis descent ran"))
    for dps in (15, 40):
        mass, how = atom_at(law._numerics, law.reduction.kind, x0, dps, 0, law.scale)
        assert mass == 0 and how == "bound"
    assert not [a for a in law.atoms(15, candidates=(x0,), method="polynomial") if a[0] == x0]


def test_no_atom_for_full_rank():
    for name in ("marchenko-pastur", "wigner-semicircle", "attention-single-head"):
        assert law_of(name).atoms(20) == []


# -- edges ----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["marchenko-pastur", "wigner-plus-wishart", "gaussian-product-3",
                                  "symmetrized-product", "attention-mha-h1"])
def test_support_edges_match_the_30_digit_edges(name):
    law = law_of(name)
    ours = [x for iv in law.support(30, method="dyson") for x in iv]
    theirs = [x for iv in law.support(30, method="polynomial") for x in iv]
    assert len(ours) == len(theirs)
    assert all(close(a, b, 30) for a, b in zip(ours, theirs))


def test_two_intervals_around_an_atom():
    law = law_of("symmetrized-product", p=R(9, 4), n=1)
    ours = law.support(20, method="dyson")
    theirs = law.support(20, method="polynomial")
    assert len(ours) == 2
    assert all(close(a, b, 20) for x, y in zip(ours, theirs) for a, b in zip(x, y))


# -- hard edges -------------------------------------------------------------------

def test_hard_edge_of_a_square_marchenko_pastur_law():
    """p = n: density sqrt((4 - x)/x)/(2 pi), infinite at 0; the support is exactly [0, 4]."""
    law = law_of("marchenko-pastur", p=1, n=1)
    (a, b), = law.support(15)
    assert a == 0 and close(b, 4, 15)
    assert law.atoms(15) == []
    mass, _ = hard_edge_at(law._numerics, law.reduction.kind, 0, 15, 0, law.scale)
    assert mass == 0
    cdf = law.cdf_function()
    assert cdf.intervals[0][0] == 0.0
    assert abs(cdf.mass_ac - 1) <= cdf.quad_error + 1e-7
    # the distribution function near the singular edge: F(x) = (2/pi)(asin(sqrt(x)/2) + sqrt(x(4-x))/4)
    x = 0.01
    exact = 2 / np.pi * (np.arcsin(np.sqrt(x) / 2) + np.sqrt(x * (4 - x)) / 4)
    assert abs(cdf(x) - exact) < 1e-6


def test_hard_edge_of_squared_singular_values():
    law = law_of("attention-single-head")
    (a, b), = law.support(15)
    assert a == 0
    theirs = law.support(15, method="polynomial")
    assert close(b, theirs[0][1], 15)


def test_a_soft_edge_is_not_a_hard_edge():
    law = law_of("marchenko-pastur")
    with pytest.raises(fp.ConvergenceError, match="no hard edge"):
        hard_edge_at(law._numerics, law.reduction.kind, 0, 15, 0, law.scale)


def test_law_command_at_a_hard_edge():
    out = io.StringIO()
    assert main(["law", "marchenko-pastur", "--set", "p=1", "--json", "--grid", "-1:4:11"], out=out) == 0
    data = json.loads(out.getvalue())
    assert data["support"] == [["0", mp_to_str(context(20).mpf(4), 15)]]
    dens = {float(g["x"]): g["density"] for g in data["grid"]}
    assert dens[0.0] == "inf" and dens[-1.0] == "0"
    assert "NaN" not in dens.values()
    assert float(dens[1.0]) == pytest.approx(np.sqrt(3) / (2 * np.pi), rel=1e-12)


# -- the law command's values ---------------------------------------------------------

@pytest.mark.parametrize("name", ["marchenko-pastur", "gaussian-product-3", "wigner-plus-wishart"])
def test_law_output_unchanged_in_value(name):
    """Support, atoms and moments are the 30-digit values of the polynomial route rounded to 15;
    grid densities agree with 20-digit densities to the 8 digits printed."""
    out = io.StringIO()
    assert main(["law", name, "--json"], out=out) == 0
    data = json.loads(out.getvalue())
    law = law_of(name)
    ref_support = [[mp_to_str(x, 15) for x in iv] for iv in law.support(30, method="polynomial")]
    ref_atoms = [{"x": mp_to_str(x, 15), "mass": mp_to_str(m, 15)} for x, m in law.atoms(30, method="polynomial")]
    assert data["support"] == ref_support
    assert data["atoms"] == ref_atoms
    ctx = context(30)
    assert data["moments"] == [mp_to_str(ctx.mpf(sympy.N(m, 30)), 15) for m in law.exact_moments(4)]
    for g in data["grid"][::40]:
        if g["density"] != "0":
            ref = float(law.density(g["x"], dps=20))
            # 8 significant digits printed (a relative rounding up to 5e-8) over a ~1e-8 solve
            assert float(g["density"]) == pytest.approx(ref, rel=1e-7)


def test_rank_bound_with_a_symbolic_ratio():
    """With a symbol among the ratios the bound stays symbolic (sympy's Min and Add); with numbers it is the
    same rational by plain min and +."""
    p, n = fp.dims("p n")
    X = fp.gaussian("X", (p, n))
    a = sympy.Symbol("a", positive=True)
    assert rank_bound(X @ X.T / n, {p: a, n: sympy.Integer(1)}) == sympy.Min(a, 1)
    assert rank_bound(X @ X.T / n + X @ X.T / n, {p: R(1, 2), n: sympy.Integer(1)}) == R(1, 2)
