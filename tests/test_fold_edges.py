"""Support edges of many-head quotient systems on the fast fold route (docs/engine.md: edges)."""

import numpy as np
import pytest

import freeprob as fp
from freeprob._precision import context
from freeprob.solve import edges

DPS = 15


@pytest.fixture(scope="module")
def gqa64(tmp_path_factory):
    """The 64-head grouped-query model (8 groups) at the realistic allocation d_h = d_v = 1/128, d_out = 1/2."""
    path = tmp_path_factory.mktemp("models") / "gqa8-h64.toml"
    fp.attention.emit_model(str(path), 64, "gqa:8", "1", d_h="1/128", d_v="1/128", d_out="1/2")
    law = fp.law_of(fp.find_model(str(path)))
    return law, law.support(dps=DPS)


def _fallback_only(*args, **kwargs):
    raise AssertionError("the finite-difference fallback ran")


def test_fast_fold_route_converges_on_the_quotient_system(gqa64, monkeypatch):
    """Newton in double precision and the chord steps converge on the 30-unknown quotient system
    of gqa:8 at 64 heads (they stalled there, and the slow fallback ran); the edge agrees with the
    verified support to the digits asked for."""
    law, support = gqa64
    (_, right), = support
    z_edge = float(np.sqrt(float(right)))  # squared singular values: the system variable is sqrt(x)
    monkeypatch.setattr(edges, "_refine_mp", _fallback_only)
    for rel in (1e-2, 1e-4):
        z_out = z_edge * (1 + rel)
        e = edges.refine_edge(law._numerics, z_out, DPS, bracket=(z_out, z_edge * (1 - rel)), fallback=False)
        ctx = context(DPS + 10)
        assert abs(ctx.mpf(e) ** 2 - right) <= ctx.mpf(10) ** (-DPS) * max(1, abs(right))


def test_fast_fold_route_agrees_with_the_fallback(gqa64, monkeypatch):
    """The same edge from the finite-difference Newton at twice the working precision (forced)."""
    law, support = gqa64
    (_, right), = support
    z_out = float(np.sqrt(float(right))) * 1.01
    fast = edges.refine_edge(law._numerics, z_out, DPS, fallback=False)
    monkeypatch.setattr(edges, "_fold_newton_fast", lambda *a, **k: (None, None))
    slow = edges.refine_edge(law._numerics, z_out, DPS, fallback=True)
    ctx = context(DPS + 10)
    assert abs(ctx.mpf(fast) - ctx.mpf(slow)) <= ctx.mpf(10) ** (-DPS) * max(1, abs(ctx.mpf(slow)))


def test_an_edge_from_a_bracket_in_a_gap_is_the_one_the_bracket_asks_for():
    """random-features-tanh has a gap of width 0.016 near 0.05. Newton's method on the fold system from
    a point inside the gap, with the bracket (0.051, 0.066) of the gap's right end, converges to the gap's
    LEFT end (0.0497), one bracket width away (a latent bug: it was accepted). The side check refuses it
    (density zero on the inside) and the bracketed search returns the right end, which agrees with the
    support found from the density alone (to the 1e-6 relative width that search shrinks its brackets to)."""
    m = fp.find_model("random-features-tanh")  # Y Y^T / m in its symmetric system (the fold system in x itself)
    law = fp.SpectralLaw(m.expr, m.law_kind, m.ratios, m.params, gram=False)
    assert law._units is None and law.reduction.kind == "eigenvalues"
    (a1, b1), (a2, b2) = law.support_fast()
    x_out, x_in = 0.051, 0.066
    assert b1 < x_out < a2 < x_in
    thr = 1e-4 * float(np.median(law.density_fast(np.linspace(a2, b2, 50)[1:-1])))
    assert not edges.edge_sides_ok(law.density_fast, b1, x_out, x_in, thr)
    far = edges.refine_edge(law._numerics, x_out, DPS, bracket=(x_out, x_in), fallback=False)
    assert x_out < float(far) < x_in or not edges.edge_sides_ok(law.density_fast, far, x_out, x_in, thr)
    e = edges.bracketed_edge(law._numerics, law.density_fast, "eigenvalues", x_out, x_in, thr, DPS)
    assert edges.edge_sides_ok(law.density_fast, e, x_out, x_in, thr)
    assert abs(float(e) - a2) < 1e-6 * (x_in - x_out)
    # the same with the outside probed just above the axis (the route of the verified support)
    assert not edges.edge_sides_ok(law.density_fast, b1, x_out, x_in, thr, law.cauchy_fast)
    assert edges.edge_sides_ok(law.density_fast, e, x_out, x_in, thr, law.cauchy_fast)
    e2 = edges.bracketed_edge(law._numerics, law.density_fast, "eigenvalues", x_out, x_in, thr, DPS,
                              law.cauchy_fast)
    assert e2 == e
    # a point inside the support (0.5) is no edge: the density is positive on both sides
    assert not edges.edge_sides_ok(law.density_fast, 0.5, 0.45, 0.55, thr, law.cauchy_fast)


def test_edge_next_to_a_tiny_piece_is_accepted_when_the_off_axis_probe_is_unverified():
    """W + Q1 + O D O^T with a rank-1/2 projection at 10 and an atom 5 of weight 1e-4: four intervals, the last
    narrow (width 0.09). Close to its edges the outside probe just above the axis is not verified by the double
    solve; the side check then falls back to the axis (the outside density must not be verified positive)
    instead of refusing a correct edge. Reference: the nested free convolutions, whose support comes from the
    real roots of the discriminant of their algebraic equation."""
    import sympy

    n, p = fp.dims("n p")
    W, X = fp.wigner("W", n), fp.gaussian("X", (n, p))
    Q1 = X @ fp.inv(X.T @ X / n) @ X.T / n
    w2 = sympy.Rational(1, 10000)
    D, O = fp.deterministic("D", (n, n), {0: 1 - w2, 5: w2}), fp.haar("O", n)
    law = fp.eigenvalue_law(W / sympy.sqrt(n) + 10 * Q1 + O @ D @ O.T, ratios={n: 1, p: sympy.Rational(1, 2)})
    ref = fp.free_additive_convolution(fp.free_additive_convolution(fp.Semicircle(1), fp.Atomic([0, 10], [
        sympy.Rational(1, 2), sympy.Rational(1, 2)])), fp.Atomic([0, 5], [1 - w2, w2]))
    got, want = law.support(dps=DPS), ref.support()
    assert len(got) == len(want) == 4
    for (a, b), (ra, rb) in zip(got, want):
        assert abs(a - ra) <= 1e-13 * max(1, abs(ra)) and abs(b - rb) <= 1e-13 * max(1, abs(rb))


def test_edges_found_together_are_those_found_one_by_one():
    """bracketed_edges checks the sides of every first try in one batch of solves: the same edges as
    bracketed_edge bracket by bracket, including the bracket whose first try lands on the gap's far end."""
    m = fp.find_model("random-features-tanh")
    law = fp.SpectralLaw(m.expr, m.law_kind, m.ratios, m.params, gram=False)
    (a1, b1), (a2, b2) = law.support_fast()
    thr = 1e-4 * float(np.median(law.density_fast(np.linspace(a2, b2, 50)[1:-1])))
    brackets = [(b1 + 0.25 * (a2 - b1), b1 - 0.1 * (b1 - a1)), (0.051, 0.066), (b2 * 1.01, b2 * 0.99)]
    far = edges.refine_edge(law._numerics, 0.051, DPS, bracket=(0.051, 0.066), fallback=False)
    # the second bracket's first try: the far end (to the accuracy of support_fast's edges), which the sides refuse
    assert abs(float(far) - b1) < 1e-6 * (0.066 - 0.051)
    alone = [edges.bracketed_edge(law._numerics, law.density_fast, "eigenvalues", x_out, x_in, thr, DPS,
                                  law.cauchy_fast) for x_out, x_in in brackets]
    calls = []

    def cauchy(z):
        calls.append(len(np.atleast_1d(z)))
        return law.cauchy_fast(z)

    together = edges.bracketed_edges(law._numerics, law.density_fast, "eigenvalues", brackets, thr, DPS, cauchy)
    assert together == alone
    assert calls[0] == 6 * len(brackets)  # the side checks of the three first tries, in one call
    for e, ref, (x_out, x_in) in zip(together, (b1, a2, b2), brackets):
        assert abs(float(e) - ref) < 1e-6 * abs(x_in - x_out)
