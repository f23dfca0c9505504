"""The law of causal attention without its first tokens (freeprob.CausalLaw), checked against independent answers.

* the cell equation (freeprob/solve/causal_dyson.py) against the engine's own linearization of the same
  discretized random-matrix model, written as a polynomial in independent Gaussian matrices (one per cell);
* the extrapolated mean against the exact one, and the atom against the rank;
* the extrapolation against a finer one (40..320 cells), inside its error estimate;
* real causal softmax at several lengths against the law (slow), with a negative control.
"""

import io
import math

import numpy as np
import pytest
import sympy

import freeprob as fp
from freeprob import ConvergenceError, DomainError, RegimeError
from freeprob import attention as att
from freeprob.attention import causal_check
from freeprob.cli import main
from freeprob.solve.causal_dyson import _verified, causal_cells, refine_start, solve_causal, upper_edge_bracket
from freeprob.solve.richardson import richardson


def _engine_cell_law(m, skip_cells, beta, d_h, d_v, d_out):
    """The discretized model of docs/causal.md section 6 on ``m`` token cells, as an expression of the engine:
    ``sum_I Y_I^T Y_I`` over the row cells ``I >= skip_cells``, one Gaussian per cell and cell pair."""
    l, dh, dv, do = fp.dims("l dh dv do")
    cells = [fp.dims(f"t{j}") for j in range(m)]
    c = sympy.sqrt(sympy.exp(beta ** 2) - 1 - beta ** 2)
    half = sympy.sqrt(sympy.Rational(1, 2))
    K = [fp.gaussian(f"K{j}", (cells[j], dh)) for j in range(m)]
    V = [fp.gaussian(f"V{j}", (cells[j], dv), variance=1 / l) for j in range(m)]
    W = fp.gaussian("W", (dv, do), variance=1 / dv)
    gram = None
    for i in range(skip_cells, m):
        Q = fp.gaussian(f"Q{i}", (cells[i], dh))
        a = 1 / sympy.Rational(2 * i + 1, 2 * m)
        keys = sum((K[j].T @ V[j] for j in range(i)), half * K[i].T @ V[i])
        noise = sum((fp.gaussian(f"Z{i}_{j}", (cells[i], cells[j])) @ V[j] for j in range(i)),
                    half * fp.gaussian(f"Z{i}_{i}", (cells[i], cells[i])) @ V[i])
        Y = a * (beta * Q @ keys / sympy.sqrt(dh) + c * noise) @ W / sympy.sqrt(l)
        gram = Y.T @ Y if gram is None else gram + Y.T @ Y
    ratios = {l: 1, dh: d_h, dv: d_v, do: d_out, **{t: sympy.Rational(1, m) for t in cells}}
    return fp.eigenvalue_law(gram, ratios=ratios)


def _rows_cauchy(law, z, d_out, rows):
    """``G`` over the rows of ``Y`` from ``G`` of ``Y^T Y`` over its ``d_out`` columns (the same nonzero values)."""
    g = complex(law.cauchy(z, dps=20))
    return (d_out / rows) * g + (1 - d_out / rows) / z


def test_cell_equation_is_the_engines_linearization_of_the_discretized_model():
    # one row cell (m = 2, skip = 1/2): the engine reduces the polynomial in 7 Gaussians in a fraction of a second
    half = sympy.Rational(1, 2)
    law = _engine_cell_law(2, 1, 1, half, half, half)
    S = causal_cells(2, 0.5, 1.0, 0.5, 0.5, 0.5)
    zs = [1 + 0.5j, 3 + 1j, 0.2 + 0.1j]
    mine = solve_causal(S, zs).G
    for z, g in zip(zs, mine):
        assert abs(_rows_cauchy(law, z, 0.5, 0.5) - g) < 1e-13 * max(1, abs(g))


def test_two_heads_equal_the_engine():
    # independent heads share the rows and the output: Gamma_R counts each head, W_h has variance 1/(H d_v)
    l, t0, t1, dh, dv, do = fp.dims("l t0 t1 dh dv do")
    c = sympy.sqrt(sympy.E - 2)
    a, half = sympy.Rational(4, 3), sympy.Rational(1, 2)
    th = sympy.sqrt(half)
    Y = None
    for h in range(2):
        def g(name, shape, variance=1):
            return fp.gaussian(f"{name}_{h}", shape, variance=variance)
        K0, K1 = g("K0", (t0, dh)), g("K1", (t1, dh))
        V0, V1 = g("V0", (t0, dv), 1 / l), g("V1", (t1, dv), 1 / l)
        keys = K0.T @ V0 + th * K1.T @ V1
        noise = g("Z10", (t1, t0)) @ V0 + th * g("Z11", (t1, t1)) @ V1
        term = a * (g("Q1", (t1, dh)) @ keys / sympy.sqrt(dh) + c * noise) @ g("W", (dv, do), 1 / (2 * dv)) / sympy.sqrt(l)
        Y = term if Y is None else Y + term
    law = fp.singular_value_law(Y, ratios={l: 1, t0: half, t1: half, dh: half, dv: half / 2, do: half})
    S = causal_cells(2, 0.5, 1.0, 0.5, 0.25, 0.5, heads=2)
    zs = [1 + 0.5j, 3 + 1j, 0.2 + 0.1j]
    for z, mine in zip(zs, solve_causal(S, zs).G):
        assert abs(complex(law.cauchy(z, dps=20)) - mine) < 1e-13 * max(1, abs(mine))


@pytest.mark.slow
def test_cell_equation_with_three_row_cells_equals_the_engine():
    # three row cells share the keys of the earlier cells: the head-space block is a full matrix over copies,
    # and the engine (628 unknowns) agrees to rounding; beta = 3/2 and d_out = 1/3 vary the coefficients
    third, half = sympy.Rational(1, 3), sympy.Rational(1, 2)
    law = _engine_cell_law(4, 1, sympy.Rational(3, 2), half, half, third)
    S = causal_cells(4, 0.25, 1.5, 0.5, 0.5, 1 / 3)
    zs = [1 + 0.5j, 5 + 2j, 0.3 + 0.1j]
    mine = solve_causal(S, zs).G
    for z, g in zip(zs, mine):
        assert abs(_rows_cauchy(law, z, 1 / 3, 0.75) - g) < 1e-13 * max(1, abs(g))


@pytest.fixture(scope="module")
def law():
    return att.causal_attention_law(1, "1/10")


def test_exact_mean_and_atom(law):
    assert sympy.simplify(law.mean() - 5 * (sympy.E - 1) * sympy.log(10) / 9) == 0
    assert law.atom_mass() == sympy.Rational(4, 9)
    assert law.atoms() == [(0.0, pytest.approx(4 / 9, abs=1e-15))]
    # each cell law's mean is the midpoint rule of int_skip^1 dr/r: an expansion in 1/m^2, extrapolated exactly
    est = richardson(law.level_means(), law.cells, (2, 4, 6))
    assert abs(est.value - float(law.mean())) <= max(est.error, 1e-12)


def test_mean_of_the_law_is_the_first_term_at_infinity(law):
    # z^2 (G(z) - 1/z) -> m_1 as z -> infinity, with the next term m_2/z: at z = 1e4 i the extrapolated value is
    # within m_2/|z| of the exact mean; m_2 is bounded by m_1 times the top edge (46)
    z = 1e4j
    g = law.cauchy(z)
    first = (z * z * (g.value - 1 / z)).real
    assert abs(first - float(law.mean())) < float(law.mean()) * 46 / abs(z) + abs(z) ** 2 * g.error


def test_atom_is_the_residue_at_zero(law):
    # iy G(iy) = atom + int rho(x) y^2/(y^2 + x^2) dx; the continuous part is about c x^-1/2 near 0 (c = 0.30:
    # rho(1e-5) = 95.7), whose share is (pi/sqrt 2) c sqrt(y) = 0.67 sqrt(y) (measured 0.66, 0.67); the bound doubles it
    for y in (1e-3, 1e-4):
        g = law.cauchy(1j * y)
        assert abs((1j * y * g.value).real - 4 / 9) < 1.35 * math.sqrt(y) + y * g.error


def test_extrapolation_is_inside_its_estimate_against_a_finer_one(law):
    zs = np.array([0.05, 0.5, 1 + 0.5j, 3, 10, 30], complex)
    fine = (40, 80, 160, 320)
    levels, prev = [], None
    for m in fine:
        S = causal_cells(m, 0.1, 1.0, 0.5, 0.5, 0.5)
        sol = solve_causal(S, zs, start=None if prev is None else refine_start(prev[0], S, prev[1].u))
        assert sol.converged.all()
        levels.append(sol.G)
        prev = (S, sol)
    reference = richardson(levels, fine, (1, 2, 3))
    ours = law.cauchy_estimate(zs)
    assert np.all(np.abs(ours.value - reference.value) <= ours.error + reference.error)
    assert np.all(ours.error < 3e-4)


def test_values_density_and_errors(law):
    g = law.cauchy(1 + 0.5j)
    assert g.error < 1e-4 and g.value.imag < 0 and g.cells == (10, 20, 40, 80)
    d = law.density(2)
    assert 0 < d.value and d.error < 1e-5
    assert law.density(-1).value == 0.0
    assert law.cauchy(1 - 0.5j).value == pytest.approx(np.conj(g.value), abs=1e-15)
    with pytest.raises(ConvergenceError, match="error estimate"):
        law.cauchy(1 + 0.5j, tol=1e-9)


def test_top_edge_is_bracketed_by_the_real_branch_and_reported_with_its_estimate(law):
    assert law.support_tol == law.edge_tol == 1e-2       # the default tolerance of the edges
    (lo, hi), = law.support()
    assert lo.value == 0.0
    assert 45 < hi.value < law.scale and hi.error < 0.5
    for S in (causal_cells(m, 0.1, 1.0, 0.5, 0.5, 0.5) for m in law.cells):
        below, above = upper_edge_bracket(S, 100.0)
        assert below < above < law.scale
    with pytest.raises(ConvergenceError, match="support edge"):
        law.support(tol=law.tol)   # the tolerance of values, 1e-4: the top edge's estimate is 0.19


def test_every_unknown_of_the_law_is_in_the_lower_half_plane():
    # each unknown is a diagonal entry of the symmetric linearization's resolvent, so Im <= 0 for all of them
    # (not only the rows' x_I): the verification asks it, which rejects other roots of the cell equation
    S = causal_cells(10, 0.1, 1.0, 0.5, 0.5, 0.5)
    sol = solve_causal(S, [1 + 0.5j, 0.05 + 0.01j, 3.0, 40 + 1j])
    assert sol.converged.all()
    assert np.all(sol.u.imag <= 1e-12 * (1 + np.abs(sol.u)))
    bad = sol.u[0].copy()
    bad[len(S.rows)] += 0.1j                                   # a token unknown in the upper half-plane
    assert not _verified(S, 1 + 0.5j, bad)


def test_support_is_found_at_every_scale():
    # the scan's thresholds are relative to the law's scale (about beta^2 for small beta, exp(beta^2) for large):
    # beta = 1/100 has its top edge near 3e-3, and skip = 1/2 (no atom) has the hard edge 0
    small = att.causal_attention_law("1/100", "1/10")
    (lo, hi), = small.support(tol=small.edge_tol)
    assert lo.value == 0 and 1e-3 < hi.value < 1e-2 and small.density(float(small.mean())).value > 0
    assert small.name.startswith("causal attention (beta = 1/100")
    half = att.causal_attention_law(1, "1/2")
    assert half.atom_mass() == 0
    (lo, hi), = half.support(tol=half.edge_tol)
    assert lo.value == 0 and 11 < hi.value < 12


@pytest.mark.slow
def test_support_of_a_large_beta_law_covers_its_density():
    # beta = 4: scale 2e8; an absolute threshold once snapped the edge to the scan grid at 6.7e7 while the density
    # was positive at 1.45e8
    law = att.causal_attention_law(4, "1/10")
    (lo, hi), = law.support(tol=law.edge_tol)
    assert hi.value > 1.45e8 and law.density(1.45e8).value > 0


def test_cli_prints_every_support_interval():
    out = io.StringIO()
    assert main(["attention", "--causal", "--dh", "1/100", "--dv", "1/2"], out=out) == 0, out.getvalue()
    line = next(x for x in out.getvalue().splitlines() if x.startswith("support"))
    assert line.count("[") == 2, line


@pytest.mark.parametrize("kwargs, match", [
    (dict(skip=0), "skip must be a rational number strictly between 0 and 1"),
    (dict(skip=1), "skip must be a rational number strictly between 0 and 1"),
    (dict(skip="sqrt(2)/2"), "skip must be a rational number"),
    (dict(skip="1/1000"), "denominator 1000"),
    (dict(skip="1/32"), "256 cells"),
    (dict(beta=5), "at most 4"),
    (dict(beta="1/1000"), "at least 1/100"),
    (dict(d_h="1e-300"), "between 1/1000 and 1000"),
    (dict(beta=0), "beta must be nonzero"),
    (dict(d_out=0), "ratio d_out: must be positive"),
    (dict(d_h="__import__('os')"), "not allowed"),
    (dict(heads=True), "heads must be an integer"),
])
def test_bad_parameters_are_refused(kwargs, match):
    args = dict(beta=1, skip="1/10")
    args.update(kwargs)
    beta, skip = args.pop("beta"), args.pop("skip")
    with pytest.raises(DomainError, match=match):
        att.causal_attention_law(beta, skip, **args)


def test_heads_keep_the_mean_and_move_the_atom():
    two = att.causal_attention_law(1, "1/10", heads=2, d_h="1/4", d_v="1/4")
    assert sympy.simplify(two.mean() - att.causal_attention_law(1, "1/10").mean()) == 0
    assert two.atom_mass() == sympy.Rational(4, 9)          # rank min(9/10, 2 * 1/4, 1/2) = 1/2
    assert att.causal_attention_law(1, "1/10", heads=4).atom_mass() == sympy.Rational(4, 9)
    assert att.causal_attention_law(1, "1/10", heads=2, d_v="1/8", d_out=1).atom_mass() == sympy.Rational(13, 18)
    with pytest.raises(DomainError, match="heads must be an integer"):
        att.causal_attention_law(1, "1/10", heads=0)


def test_law_is_immutable_and_cells_follow_the_skip(law):
    with pytest.raises(AttributeError, match="immutable"):
        law.skip = 0
    assert att.causal_attention_law(1, "1/3").cells == (9, 18, 36, 72)
    assert att.causal_attention_law(1, 0.25).cells == (8, 16, 32, 64)


def test_cli_prints_the_law(tmp_path):
    out = io.StringIO()
    png = tmp_path / "causal.png"
    code = main(["attention", "--causal", "--beta", "1/2", "--skip", "1/4", "--dout", "1/4", "--plot", str(png)],
                out=out)
    text = out.getvalue()
    assert code == 0, text
    assert "mean (exact)            (-1 + exp(1/4))*log(4)/3" in text
    assert "atom at 0 (exact)       2/3" in text and "edges +-" in text and "regime:" in text
    assert png.stat().st_size > 10_000


def test_check_validates_before_sampling(monkeypatch):
    """Bad arguments are refused before anything is sampled."""
    def must_not_sample(*args, **kwargs):
        raise AssertionError("sampled although the check is refused")

    monkeypatch.setattr(causal_check, "sample_causal", must_not_sample)
    with pytest.raises(RegimeError, match="exp\\(2 beta\\^2\\)"):
        att.check_causal(2, "1/10")
    with pytest.raises(DomainError, match="sizes"):
        att.check_causal(1, "1/10", sizes=(100, 100, 200))
    with pytest.raises(DomainError, match="reps"):
        att.check_causal(1, "1/10", sizes=(100, 200, 400), reps=(1, 1, 1))
    for kwargs, match in [(dict(level=0), "level"), (dict(level=2), "level"), (dict(rates=(0.5, 0.5)), "rates"),
                          (dict(sizes=(40.7, 80, 160)), "sizes"), (dict(sizes=(100, 200, 400), reps=(2.9, 3, 3)),
                                                                   "reps"),
                          (dict(sizes=(100, 200, 30000)), "between 40 and 8000")]:
        with pytest.raises(DomainError, match=match):
            att.check_causal(1, "1/10", **kwargs)


def test_quick_check_of_the_linear_surrogate():
    # the surrogate is the law's own model (no equivalence): it passes at small lengths
    rep = att.check_causal(1, "1/4", sizes=(80, 160, 320), reps=(12, 6, 4), seed=7, linear=True)
    assert rep.passed, rep.text()
    assert [r["name"] for r in rep.rows][0] == "mean" and len(rep.rows) == 9
    assert not rep.rows[0]["judged"] and all(r["judged"] for r in rep.rows[1:])


@pytest.mark.slow
def test_real_causal_softmax_converges_to_the_law():
    rep = att.check_causal(1, "1/10", seed=0)
    assert rep.passed, rep.text()
    # the differences at finite length are real and shrink: the first Stieltjes statistic halves per doubling
    first = rep.rows[1]["differences"]
    assert first[0] > 4 * abs(first[-1]) and first[0] > 0.01


@pytest.mark.slow
def test_two_heads_of_real_causal_softmax_converge_to_the_law():
    rep = att.check_causal(1, "1/10", heads=2, d_h="1/4", d_v="1/4", seed=11)
    assert rep.passed, rep.text()


@pytest.mark.slow
def test_the_check_sees_a_wrong_law(monkeypatch):
    # a negative control: real causal softmax at beta = 1.1 against the law at beta = 1 fails the check
    sample = causal_check.sample_causal

    def hotter(l, d_h, d_v, d_out, beta, **kwargs):
        return sample(l, d_h, d_v, d_out, 1.1 * beta, **kwargs)

    monkeypatch.setattr(causal_check, "sample_causal", hotter)
    rep = att.check_causal(1, "1/10", seed=5)
    assert not rep.passed
    assert sum(not r["passed"] for r in rep.rows) >= 5
