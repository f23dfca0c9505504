"""SpectralLaw as a shared value: one verified point solve, thread safety."""

import threading

import mpmath
import pytest
import sympy

import freeprob as fp
from freeprob._precision import context
from freeprob.solve.newton import PointSolution, newton_mp, solve_point
from freeprob.solve.numeric import NumericSystems


def _law(name="marchenko-pastur"):
    return fp.law_of(fp.find_model(name))


@pytest.mark.parametrize("method", ["dyson", "polynomial"])
def test_density_from_four_threads_equals_one_thread(method):
    """Both routes: the Dyson solve (flint ball matrices) and branch tracking on the polynomial."""
    xs = [0.3, 0.5, 1.0, 1.5, 2.0, 2.5]
    expected = [_law().density(x, dps=30, method=method) for x in xs]
    law = _law()  # cold caches: the threads build them concurrently
    results, errors = {}, []

    def run(t):
        try:
            for _ in range(2):
                for x in xs:
                    results.setdefault((t, x), []).append(law.density(x, dps=30, method=method))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    for t in range(4):
        for x, e in zip(xs, expected):
            assert results[(t, x)] == [e, e]


def test_polynomial_edges_from_four_threads():
    """Edges isolate the discriminant's roots with flint balls, whose precision is process-wide."""
    expected = _law().support(dps=30, method="polynomial")
    law = _law()
    results, errors = [], []

    def run():
        try:
            results.append(law.support(dps=30, method="polynomial"))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == [] and results == [expected] * 4


def test_solve_point_result():
    law = _law("wigner-semicircle")
    sol = solve_point(NumericSystems(law.numeric_system), 1j, 30)
    assert isinstance(sol, PointSolution)
    assert sol.dps == 30 and sol.work_dps > 30 and sol.stable_digits >= 30
    # semicircle: G(i) = i (1 - sqrt(5)) / 2
    g = sol.value
    ctx = mpmath.MPContext()
    ctx.dps = 50
    exact = (1 - ctx.sqrt(5)) / 2
    assert abs(g.real) < 1e-30
    assert abs(g.imag - exact) < 1e-30
    assert sol.value == sol.outputs[0]
    assert sol.difference <= 10.0 ** -30 * (1 + abs(g))


def test_solve_point_raises_at_an_atom():
    law = fp.law_of(fp.find_model("marchenko-pastur").with_values({"p": 2}))
    with pytest.raises(fp.ConvergenceError) as info:
        solve_point(law.numeric_system, 0, 30, on_axis=True)
    assert info.value.dps == 30


def test_newton_step_solves_its_linear_system():
    """The Newton step solved in flint (at the working precision) against the
    Jacobian of MPSystem.phi multiplied out in mpmath."""
    law = fp.attention_law(2, "mha", 1)
    systems = NumericSystems(law.numeric_system)
    ctx = context(60)
    mpsys = systems.mp(ctx)
    z = ctx.mpc("0.8", "0.01")
    g = [ctx.mpc(x) * (1 + ctx.mpf("1e-3")) for x in solve_point(systems, z, 30).g]  # a start off the solution
    phi, outs, res, delta = mpsys.newton_step(g, z, 0)
    phi2, outs2, jac = mpsys.phi(g, z, 0, jacobian=True)
    assert phi == phi2 and outs == outs2 and res == mpsys.residual(g, phi) > ctx.mpf(10) ** -6
    r = mpsys.r
    lhs = [delta[i] - ctx.fsum(jac[i][j] * delta[j] for j in range(r)) for i in range(r)]
    scale = max(abs(x) for x in delta)
    assert max(abs(lhs[i] - (g[i] - phi[i])) for i in range(r)) <= ctx.mpf(10) ** -55 * scale
    # the step converges quadratically (residual below 10 res^2), and at the solution no step is taken
    g1 = [a - b for a, b in zip(g, delta)]
    assert mpsys.newton_step(g1, z, 0)[2] < res ** 2 * 10
    sol, _, res_sol, it = newton_mp(mpsys, g, z, 0, ctx.mpf(10) ** -55)
    assert res_sol < ctx.mpf(10) ** -55 and mpsys.newton_step(sol, z, 0, ctx.mpf(10) ** -55)[3] is None


def test_density_and_cauchy_match_the_separate_calls():
    for name, x in [("marchenko-pastur", "1"), ("wigner-plus-wishart", "0.7"), ("gaussian-product", "0.5"), ("gaussian-product", "-1")]:
        law = _law(name)
        d, g = law.density_and_cauchy(x, dps=30)
        assert d == law.density(x, dps=30)
        assert g == law.cauchy(x, dps=30)


def test_law_is_frozen():
    law = _law()
    with pytest.raises(AttributeError):
        law.name = "other"
    with pytest.raises(AttributeError):
        law._elimination_failed = {}
    with pytest.raises(TypeError):
        law.ratios[next(iter(law.ratios))] = 3
    with pytest.raises(TypeError):
        law.params["x"] = 1
    assert law.values() == {**law.ratios, **law.params}


def test_model_is_a_frozen_description():
    model = fp.find_model("marchenko-pastur")
    assert not hasattr(model, "law")
    with pytest.raises(AttributeError):
        model.name = "other"
    with pytest.raises(TypeError):
        model.ratios[next(iter(model.ratios))] = 3
    law = fp.law_of(model)
    assert isinstance(law, fp.SpectralLaw) and law.name == model.name and law.law == model.law_kind


def test_support_range_contains_the_support():
    law = _law()
    lo, hi = law.support_range()
    (a, b), = law.support(dps=15)
    assert lo < a < b < hi


def test_closed_forms_get_data_not_the_law():
    from freeprob.scalar.closedform import LawData, cauchy_polynomial

    law = _law("wigner-semicircle")
    data = law.closed_form_data
    assert isinstance(data, LawData) and data is law.closed_form_data
    assert cauchy_polynomial(data).poly == cauchy_polynomial(law).poly


def test_layers_import_only_downward():
    """solve/ and scalar/ import nothing above rank 1 (no law, no expr/reduce, no solver in scalar),
    and no module imports a freeprob module inside a function."""
    import ast
    import pathlib

    root = pathlib.Path(fp.__file__).parent
    banned = {"solve": ("expr", "reduce", "scalar", "law"), "scalar": ("solve", "reduce", "law", "expr")}
    for pkg, forbidden in banned.items():
        for path in (root / pkg).glob("*.py"):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.level:
                    head = (node.module or "").split(".")[0] if node.level == 2 else None
                    assert head not in forbidden, f"{path.name} imports {node.module}"
    for path in [root / "law.py", *(root / "solve").glob("*.py"), *(root / "scalar").glob("*.py")]:
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, ast.ImportFrom):
                        assert not node.level and not (node.module or "").startswith("freeprob"), (
                            f"{path.name}:{node.lineno} imports {node.module} inside {fn.name}")


def test_negative_mpmath_points_keep_their_sign():
    """An mpf point was read through its unsigned mantissa: density(mpf(-0.5)) was the density at +0.5."""
    n = fp.dims("n")
    law = fp.eigenvalue_law(fp.wigner("W", n) / sympy.sqrt(n) + fp.identity(n), ratios={n: 1})  # semicircle on [-1, 3]
    for x in ("-0.5", "-0.96875"):  # exact in binary, so mpf(x) is the point x
        assert law.density(mpmath.mpf(x), dps=20) == law.density(x, dps=20)
        assert law.cauchy(mpmath.mpc(x), dps=20) == law.cauchy(x, dps=20)
    assert law.density(mpmath.mpf("-0.5"), dps=20) != law.density(mpmath.mpf("0.5"), dps=20)


@pytest.mark.parametrize("model", ["marchenko-pastur", "haar-sum"])
def test_cauchy_at_many_points_equals_one_point_at_a_time(model):
    """The contour's batched solve (one vectorized double-precision start for all points, then each point's
    verified solve) gives what :meth:`cauchy` gives point by point, on and off the real axis."""
    import mpmath

    law = fp.law_of(fp.find_model(model))
    zs = [mpmath.mpc(5, 0), mpmath.mpc(1, 1), mpmath.mpc(-0.5, 0.2), mpmath.mpc(0.3, 4)]
    many = law._cauchy_many(zs, 20)
    for z, g in zip(zs, many):
        assert abs(g - law.cauchy(z, dps=20)) <= mpmath.mpf(10) ** -20 * max(1, abs(g))
