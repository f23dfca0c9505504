"""The double-precision path against 30-digit values.

Contract: inside the support (at least 1e-3 of its width from an edge) the
double-precision Cauchy transform on the real axis, and above it, is within
1e-12 of the verified 30-digit value, relative to ``max(1, |G|)``. The
references are ``law.cauchy(x, dps=30)`` (Newton in mpmath, checked by a
second solve with 10 more digits); nothing here is a hard-coded number.
"""

import numpy as np
import pytest

import freeprob as fp
from freeprob.solve.newton import _to_axis, solve_fast
from freeprob.solve.numeric import MPSystem
from freeprob._precision import context

BOUND = 1e-12


def _laws():
    return {
        "marchenko-pastur": lambda: fp.law_of(fp.find_model("marchenko-pastur")),
        "wigner-semicircle": lambda: fp.law_of(fp.find_model("wigner-semicircle")),
        "wigner-plus-wishart": lambda: fp.law_of(fp.find_model("wigner-plus-wishart")),
        "gaussian-product": lambda: fp.law_of(fp.find_model("gaussian-product")),
        "symmetrized-product": lambda: fp.law_of(fp.find_model("symmetrized-product")),
        "attention-mha-h1": lambda: fp.attention_law(1, "mha", 1),
    }


def _system_point(law, w):
    """The system's variable at user points ``w`` (``sqrt(w)`` for a system solved as squared singular
    values: that law, and the eigenvalues of a Gram matrix such as Marchenko-Pastur's ``X X^T / n``)."""
    w = np.asarray(w, dtype=complex)
    return w if law.reduction.kind == "eigenvalues" else np.sqrt(w)


def _cauchy(law, w, outs):
    """``G(w)`` from the outputs of a solve at ``_system_point(law, w)``."""
    return outs[:, 0] if law.reduction.kind == "eigenvalues" else outs[:, 0] / _system_point(law, w)


def _interior(law, n=50):
    """``n`` points in each support interval, 1e-3 of its width away from its edges."""
    xs = []
    for a, b in law.support_fast():
        w = b - a
        xs.append(np.linspace(a + 1e-3 * w, b - 1e-3 * w, n))
    return np.concatenate(xs)


@pytest.fixture(scope="module", params=sorted(_laws()))
def case(request):
    law = _laws()[request.param]()
    xs = _interior(law)
    ref = np.array([complex(law.cauchy(float(x), dps=30)) for x in xs])
    return law, xs, ref


def _max_error(got, ref):
    return float(np.max(np.abs(got - ref) / np.maximum(1, np.abs(ref))))


def test_boundary_values_inside_the_support(case):
    """Real points: solved just above the axis, then by Newton on the axis itself."""
    law, xs, ref = case
    _, outs, conv, res = solve_fast(law.fast, _system_point(law, xs).real.astype(complex))
    assert conv.all() and np.all(res < 1e-10)
    assert _max_error(_cauchy(law, xs, outs), ref) <= BOUND


def test_the_law_gives_the_boundary_values(case):
    """The same bound through the law's own double-precision entry points."""
    law, xs, ref = case
    assert _max_error(law.cauchy_fast(xs.astype(complex)), ref) <= BOUND
    assert np.max(np.abs(law.density_fast(xs) + ref.imag / np.pi) / np.maximum(1, np.abs(ref))) <= BOUND


def test_boundary_values_on_a_grid(case):
    """A grid of 200 points or more goes through the anchors (interpolated starts)."""
    law, xs, ref = case
    n = len(xs)
    # the 50 points per interval and 7 more between each neighbouring pair
    fine = np.concatenate([np.linspace(xs[i], xs[i + 1], 8, endpoint=False) for i in range(n - 1)] + [xs[-1:]])
    assert len(fine) >= 200 and np.array_equal(fine[::8], xs)
    _, outs, conv, _ = solve_fast(law.fast, _system_point(law, fine).real.astype(complex))
    assert conv.all()
    assert _max_error(_cauchy(law, fine, outs)[::8], ref) <= BOUND


def test_points_above_the_axis(case):
    """Off the axis the polished solution is as accurate, from Im z = 1e-6 to 1."""
    law, xs, _ = case
    zs = xs[::5] + 1j * np.geomspace(1e-6, 1, len(xs[::5]))
    ref = np.array([complex(law.cauchy(complex(z), dps=30)) for z in zs])
    _, outs, conv, _ = solve_fast(law.fast, _system_point(law, zs))
    assert conv.all()
    assert _max_error(_cauchy(law, zs, outs), ref) <= BOUND


def test_unpolished_solution_is_what_the_polish_improves():
    """Without the polish the same solve stops at its tolerance (the polish is what buys the digits)."""
    law = fp.law_of(fp.find_model("marchenko-pastur"))
    xs = _interior(law, 20)
    zs = xs + 1e-3j
    ref = np.array([complex(law.cauchy(complex(z), dps=30)) for z in zs])
    _, rough, _, _ = solve_fast(law.fast, _system_point(law, zs), polish=False)
    _, fine, _, _ = solve_fast(law.fast, _system_point(law, zs))
    assert _max_error(_cauchy(law, zs, fine), ref) <= BOUND < _max_error(_cauchy(law, zs, rough), ref)


def test_near_an_edge_the_axis_step_is_never_worse_than_the_offset():
    """Closer to an edge than the contract covers, the axis value is kept only where it is
    at least as good as the value at x + i h (it falls back to that value otherwise)."""
    law = fp.law_of(fp.find_model("marchenko-pastur"))
    edges = law.support(dps=30)[0]
    ctx = context(40)
    points = []
    for edge, inward in ((edges[0], 1), (edges[1], -1)):
        for k in range(4, 15):
            for side in (inward, -inward):
                points.append(float(edge + side * ctx.mpf(10) ** (-k)))
    xs = np.array(points)
    ref = np.array([complex(law.cauchy(repr(float(x)), dps=30)) for x in xs])
    zs = _system_point(law, xs).real  # positive: the support lies in (0, inf)
    _, on_axis, c1, _ = solve_fast(law.fast, zs.astype(complex), raise_on_failure=False)
    h = 1e-12 * (1 + np.abs(zs))
    _, above, c2, _ = solve_fast(law.fast, zs + 1j * h, raise_on_failure=False)
    # the axis step starts from the solve at x + i h, and never loses a point it had
    assert np.array_equal(c1, c2) and c1.mean() > 0.9
    ok = c1
    e_axis = np.abs(_cauchy(law, xs, on_axis)[ok] - ref[ok]) / np.maximum(1, np.abs(ref[ok]))
    e_above = np.abs(_cauchy(law, xs, above)[ok] - ref[ok]) / np.maximum(1, np.abs(ref[ok]))
    assert np.all(e_axis <= np.maximum(e_above * (1 + 1e-6), BOUND))


def test_the_conjugate_solution_is_refused_on_the_axis():
    """At a real point inside the support the complex conjugate of the solution solves
    the same (real) equations; started from there, the axis step must refuse it."""
    law = fp.law_of(fp.find_model("marchenko-pastur"))
    z = np.array([1.0 + 0j])
    g, outs, conv, res = solve_fast(law.fast, z)
    assert conv[0] and outs[0, 0].imag < -0.1
    g_bar, o_bar, r_bar = np.conj(g), np.conj(outs), res.copy()
    kept = _to_axis(law.fast, g_bar, o_bar, r_bar, np.array([0]), z, np.zeros(1), 1e-10)
    assert not kept[0]
    assert np.array_equal(g_bar, np.conj(g))  # left as it was


@pytest.mark.parametrize("name, shared", [("marchenko-pastur", False), ("marchenko-pastur-symmetric", True),
                                          ("wigner-plus-wishart", True), ("attention-mha-h1", False),
                                          ("attention-gqa:2-h4", True)])
def test_fast_jacobian_equals_the_ball_arithmetic_jacobian(name, shared):
    """The vectorized Jacobian against MPSystem's, built independently in flint ball
    arithmetic; ``shared``: some space has several terms on one unknown (summed)."""
    if name == "attention-gqa:2-h4":  # the full system (the symmetry quotient has another term structure)
        cfg = fp.attention.attention_config(4, "gqa:2", 1)
        law = fp.singular_value_law(fp.attention.attention_expression(cfg), cfg.ratios, {"beta": 1}, symmetry=False)
    elif name == "marchenko-pastur-symmetric":  # X X^T / n in the symmetric pencil, not as X's singular values
        m = fp.find_model("marchenko-pastur")
        law = fp.SpectralLaw(m.expr, m.law_kind, m.ratios, gram=False)
    else:
        law = _laws()[name]()
    fast = law.fast
    assert any(len(np.unique(sp.tk)) < len(sp.tk) for sp in fast.spaces) == shared
    rng = np.random.default_rng(7)
    zs = rng.uniform(0.2, 2.0, 4) + 1j * rng.uniform(0.05, 1.0, 4)
    g, _, conv, _ = solve_fast(fast, zs)
    assert conv.all()
    _, _, jac = fast.phi(g, zs, np.zeros(len(zs)), jacobian=True)
    ctx = context(30)
    mpsys = MPSystem(law.numeric_system, ctx)
    for p in range(len(zs)):
        _, _, ref = mpsys.phi([ctx.mpc(x) for x in g[p]], ctx.mpc(zs[p]), 0, jacobian=True)
        ref = np.array([[complex(x) for x in row] for row in ref])
        assert np.max(np.abs(jac[p] - ref)) <= 1e-13 * max(1.0, np.max(np.abs(ref)))
