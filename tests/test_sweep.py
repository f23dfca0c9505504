"""Head-allocation sweeps (freeprob.attention.sweep): planning, the grid and its distance, the rows against the
laws they come from, local processes and a Dask cluster giving the same numbers, and the command line.

Every computed sweep here is small (H = 1, 2 or one H with two widths, few moments, a short grid).
"""

import dataclasses
import io
import json
import math
import sys

import numpy as np
import pytest
import sympy

import freeprob as fp
from freeprob import ClusterError, ConvergenceError, DomainError, MissingDependencyError, RegimeWarning, ShapeError
from freeprob.attention import attention_config, attention_law, attention_sweep, head_counts, plan_sweep
from freeprob.attention import sweep as sweep_module
from freeprob.attention.sweep import common_grid, l1_distance
from freeprob.cli import main

HALF = sympy.Rational(1, 2)
SMALL = dict(heads=(1, 2), at="0.5,2", moments=2, grid=120)


def run(*argv):
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def rows_numbers(result):
    """What a sweep computed, row by row (configurations, strings and curves), for comparing two runs."""
    return [(r.config, r.support, r.moments, r.density, r.curve, r.to_previous, r.to_first) for r in result.rows]


@pytest.fixture(scope="module")
def serial():
    return attention_sweep(**SMALL, workers=1)


# -- planning: no law is made -----------------------------------------------------------------------


def test_head_counts_forms_and_refusals():
    assert head_counts("1:128") == tuple(2 ** k for k in range(8))
    assert head_counts("4:4") == (4,)
    assert head_counts(" 2, 1 ") == (2, 1)
    assert head_counts([8, 1]) == (8, 1)
    for bad, piece in [("3", "not a power of two"), ("256", "out of range"), ("0", "out of range"),
                       ("1,1", "twice"), ("1,,2", "comma-separated"), ("a", "integers"), ("8:2", "empty"),
                       ([2.0], "integers"), ([True], "integers"), ([], "at least one")]:
        with pytest.raises(DomainError, match=piece):
            head_counts(bad)


def test_plan_allocates_the_total_width():
    plan = plan_sweep("1:8", "mha", width="1/2")
    assert plan.over == "heads" and plan.allocation == "d_h = d_v = W/H"
    for cfg, w in zip(plan.configs, plan.widths):
        assert w == HALF and cfg.d_h == cfg.d_v == HALF / cfg.heads and cfg.d_out == HALF
    fixed_v = plan_sweep((2, 4), "mha", d_v="1/4")
    assert [(c.d_h, c.d_v) for c in fixed_v.configs] == [(HALF / 2, HALF / 2), (HALF / 4, HALF / 2)]
    fixed_h = plan_sweep(2, "mha", width=("1/4", 1), d_h="1/3")
    assert fixed_h.over == "width"
    assert [(c.d_h, c.d_v) for c in fixed_h.configs] == [(sympy.Rational(1, 3), sympy.Rational(1, 8)),
                                                         (sympy.Rational(1, 3), HALF)]


def test_plan_skips_group_counts_that_do_not_divide():
    plan = plan_sweep("1:8", "GQA:4")
    assert [c.heads for c in plan.configs] == [4, 8] and {c.pattern for c in plan.configs} == {"gqa:4"}
    assert len(plan.skipped) == 2 and all("cannot be split into 4 equal groups" in s for s in plan.skipped)
    with pytest.raises(DomainError, match="no head count"):
        plan_sweep((1, 2), "gqa:4")
    with pytest.raises(DomainError, match="no head count"):
        plan_sweep(2, "gqa:4", width="1/4,1/2")


@pytest.mark.parametrize("kwargs, error, piece", [
    (dict(heads=(1, 2), width=("1/4", "1/2")), DomainError, "one thing at a time"),
    (dict(d_h="1/4", d_v="1/4"), DomainError, "at most one of d_h and d_v"),
    (dict(pattern="tied-kv", d_v="1/4"), ShapeError, "d_v = d_h"),
    (dict(width="0"), DomainError, "positive"),
    (dict(width="1/2,1/2"), DomainError, "twice"),
    (dict(width="1/2,"), DomainError, "comma-separated"),
    (dict(pattern="nope"), DomainError, "unknown sharing pattern"),
    (dict(pattern="tied-qk"), fp.RegimeError, "outside the regime"),
    (dict(beta=0), DomainError, "nonzero"),
])
def test_plan_refuses_bad_input(kwargs, error, piece):
    with pytest.raises(error, match=piece):
        plan_sweep(**kwargs)


def test_plan_warns_once_about_a_large_beta():
    with pytest.warns(RegimeWarning) as record:
        plan_sweep((1, 2, 4), beta=3)
    assert len([w for w in record if issubclass(w.category, RegimeWarning)]) == 1


@pytest.mark.parametrize("kwargs, piece", [
    (dict(moments=13), "moments"), (dict(grid=1), "grid"), (dict(dps=0), "dps"), (dict(workers=0), "workers"),
    (dict(at="1,,2"), "comma-separated"), (dict(at="x"), "at x"),
    (dict(workers=2, scheduler="tcp://127.0.0.1:1"), "cluster decides"),
])
def test_sweep_refuses_bad_options_before_any_law(kwargs, piece, monkeypatch):
    def no_law(*args, **kw):
        raise AssertionError("a law was made before the input was checked")

    monkeypatch.setattr(sweep_module, "summarize_config", no_law)
    with pytest.raises(DomainError, match=piece):
        attention_sweep(heads=1, **kwargs)


# -- the grid and the distance ----------------------------------------------------------------------


def test_common_grid_reaches_past_the_top_and_crowds_at_zero():
    xs = common_grid(10.0, 400)
    assert xs[-1] < sweep_module.GRID_MARGIN * 10 and xs[-1] > 10 and np.all(np.diff(xs) > 0)
    assert np.all(np.diff(np.diff(xs)) > 0)  # spacing grows away from 0


def test_l1_distance_integrates_a_hard_edge_and_smooth_densities():
    xs = common_grid(4 / sweep_module.GRID_MARGIN, 400)  # X = 4
    # int_0^4 |x^(-1/2) - 0| dx = 4: the hard edge at 0 is integrated without a cut-off
    assert l1_distance(xs ** -0.5, np.zeros_like(xs), xs) == pytest.approx(4, rel=1e-12)
    # two semicircles of radius 1 centred at 2 and 2.5: compared with a fine reference quadrature
    a = np.sqrt(np.maximum(0, 1 - (xs - 2) ** 2)) * 2 / np.pi
    b = np.sqrt(np.maximum(0, 1 - (xs - 2.5) ** 2)) * 2 / np.pi
    fine = np.linspace(0, 4, 2_000_001)
    fa = np.sqrt(np.maximum(0, 1 - (fine - 2) ** 2)) * 2 / np.pi
    fb = np.sqrt(np.maximum(0, 1 - (fine - 2.5) ** 2)) * 2 / np.pi
    reference = float(np.sum(np.abs(fa - fb)) * (fine[1] - fine[0]))
    assert l1_distance(a, b, xs) == pytest.approx(reference, rel=2e-3)
    assert l1_distance(a, b, xs) == l1_distance(b, a, xs) and l1_distance(a, a, xs) == 0
    assert math.isnan(l1_distance(np.where(xs > 1, a, np.nan), b, xs))


# -- a computed sweep -------------------------------------------------------------------------------


def test_rows_carry_what_each_law_gives(serial):
    assert serial.over == "heads" and [r.heads for r in serial.rows] == [1, 2] and serial.points == ("0.5", "2")
    xs = np.array(serial.xs)
    for row in serial.rows:
        assert row.config == attention_config(row.heads, "mha", 1, d_h=HALF / row.heads, d_v=HALF / row.heads)
        # the atom at 0 is 1 - r/l with the generic rank r = min(l, d_out, H d_v)
        assert row.atom == pytest.approx(float(1 - min(1, HALF, row.heads * row.config.d_v)))
    law = attention_law(2, "mha", 1, d_h="1/4", d_v="1/4")
    row = serial.rows[1]
    fast = law.support_fast()
    assert [float(v) for ab in row.support for v in ab] == pytest.approx([v for ab in fast for v in ab], rel=1e-5)
    assert [float(m) for m in row.moments] == pytest.approx([float(m) for m in law.moments(2, dps=15)], rel=1e-14)
    assert [float(d) for d in row.density] == pytest.approx(list(law.density_fast(np.array([0.5, 2.0]))), rel=1e-7)
    assert np.array(row.curve) == pytest.approx(law.density_fast(xs), rel=1e-12, abs=1e-14)


def test_rows_agree_with_known_facts(serial):
    # the first moment does not depend on the allocation: (d_out/l)(e^{beta^2} - 1)
    first = 0.5 * (math.e - 1)
    for row in serial.rows:
        assert float(row.moments[0]) == pytest.approx(first, rel=1e-14)
        # the continuous part integrates on the common grid to 1 - atom: the grid reaches past the support
        mass = l1_distance(row.curve, np.zeros(len(row.curve)), np.array(serial.xs))
        assert mass == pytest.approx(1 - row.atom, abs=1e-4)  # measured: 2e-5 at 120 points
    # more heads at the same width pull the upper edge in
    assert float(serial.rows[1].support[-1][1]) < float(serial.rows[0].support[-1][1])
    assert serial.grid_end == pytest.approx(sweep_module.GRID_MARGIN * float(serial.rows[0].support[-1][1]))


def test_distances_are_those_of_the_curves(serial):
    xs = np.array(serial.xs)
    one, two = serial.rows
    assert one.to_previous is None and one.to_first == 0
    expected = l1_distance(two.curve, one.curve, xs)
    assert two.to_previous == two.to_first == expected
    assert 0 < expected < 2


def test_result_is_frozen_and_printable(serial):
    with pytest.raises(dataclasses.FrozenInstanceError):
        serial.rows = ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        serial.rows[0].atom = 0.0
    with pytest.raises(TypeError):
        serial.timings["total"] = 0
    text = serial.table()
    lines = text.splitlines()
    header = next(line for line in lines if line.lstrip().startswith("H "))
    for column in ("support", "m1", "m2", "rho(0.5)", "rho(2)", "L1 prev", "L1 first"):
        assert column in header
    row_two = lines[lines.index(header) + 2]
    assert row_two.split()[:4] == ["2", "1/2", "1/4", "1/4"] and f"{serial.rows[1].to_first:.3e}" in row_two
    data = json.loads(json.dumps(serial.as_dict()))
    assert [r["heads"] for r in data["rows"]] == [1, 2]
    assert data["rows"][1]["moments"] == list(serial.rows[1].moments)
    assert data["rows"][0]["l1_to_previous"] is None
    assert float(data["rows"][1]["l1_to_first"]) == pytest.approx(serial.rows[1].to_first, rel=1e-3)


def test_local_processes_give_the_same_numbers(serial):
    pooled = attention_sweep(**SMALL, workers=8)  # at most one process per configuration
    assert pooled.timings["runner"] == "2 local processes"
    assert rows_numbers(pooled) == rows_numbers(serial)


def test_progress_ticks_once_per_configuration_and_stage():
    ticks = []
    res = attention_sweep(heads=1, width="1/4,1/2", moments=1, grid=40, workers=1,
                          progress=lambda *a: ticks.append(a))
    assert res.timings["runner"] == "this process"
    assert res.over == "width" and [str(r.width) for r in res.rows] == ["1/4", "1/2"]
    assert [(stage, done, total) for stage, done, total, _ in ticks] == [
        ("laws", 1, 2), ("laws", 2, 2), ("grid", 1, 2), ("grid", 2, 2)]
    # W = 1/4 at H = 1: d_v = 1/4 < d_out, so the atom at 0 grows to 3/4
    assert res.rows[0].atom == pytest.approx(0.75) and res.rows[1].atom == pytest.approx(0.5)


def test_verified_digits_with_dps():
    res = attention_sweep(heads=1, at="1", moments=1, grid=20, dps=20, workers=1)
    row = res.rows[0]
    law = attention_law(1, "mha", 1)
    assert res.digits == {"support": 20, "moments": 20, "density": 20}
    assert row.support == tuple((fp.fmt(a, 20), fp.fmt(b, 20)) for a, b in law.support(dps=20, method="dyson"))
    assert row.density == (fp.fmt(law.density("1", dps=20), 20),)
    # the verified upper edge and the double-precision one agree to the 6 digits the latter is given with
    assert float(row.support[-1][1]) == pytest.approx(law.support_fast()[-1][1], rel=1e-6)


def test_a_failing_configuration_is_named(monkeypatch):
    real = sweep_module.summarize_config

    def fails_at_two_heads(cfg, *args):
        if cfg.heads == 2:
            raise ConvergenceError("no convergence (simulated)")
        return real(cfg, *args)

    monkeypatch.setattr(sweep_module, "summarize_config", fails_at_two_heads)
    with pytest.raises(ConvergenceError, match=r"^H = 2, W = 1/2 \(d_h = 1/4, d_v = 1/4\): no convergence"):
        attention_sweep(heads=(1, 2), moments=0, grid=20, workers=1)


# -- Dask --------------------------------------------------------------------------------------------


def test_scheduler_without_distributed_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(MissingDependencyError, match=r"pip install 'freeprob\[cluster\]'"):
        attention_sweep(heads=1, scheduler="tcp://127.0.0.1:8786")
    code, text = run("attention", "sweep", "--heads", "1", "--scheduler", "tcp://127.0.0.1:8786", "--json")
    assert code == 2 and json.loads(text)["type"] == "MissingDependencyError"


def test_unreachable_scheduler_is_a_cluster_error(monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(sweep_module, "CONNECT_TIMEOUT", 1)
    with pytest.raises(ClusterError, match="cannot reach the Dask scheduler"):
        attention_sweep(heads=1, scheduler="tcp://127.0.0.1:9")


def test_dask_cluster_gives_the_same_numbers(serial):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        on_cluster = attention_sweep(**SMALL, scheduler=cluster.scheduler_address)
    assert on_cluster.timings["runner"] == f"Dask scheduler {cluster.scheduler_address}"
    assert rows_numbers(on_cluster) == rows_numbers(serial)


# -- the command line --------------------------------------------------------------------------------


def test_cli_table_plot_and_progress_on_a_terminal(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    png = tmp_path / "sweep.png"
    code, text = run("attention", "sweep", "--heads", "1", "--width", "1/4,1/2", "--moments", "1", "--grid", "40",
                     "--at", "1", "--workers", "1", "--plot", str(png))
    assert code == 0
    assert "total width W over 1/4, 1/2 at H = 1 (d_h = d_v = W/H)" in text and "rho(1)" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    err = capsys.readouterr().err
    assert "laws" in err and "common grid" in err and "2/2" in err


def test_cli_json_is_clean_and_silent(capsys):
    code, text = run("attention", "sweep", "--heads", "1", "--moments", "1", "--grid", "30", "--workers", "1",
                     "--json")
    data = json.loads(text)
    assert code == 0 and data["over"] == "heads" and data["rows"][0]["d_h"] == "1/2"
    assert data["grid"]["points"] == 30 and data["digits"] == {"support": 6, "moments": 15, "density": 12}
    assert capsys.readouterr().err == ""


def test_cli_progress_is_silent_when_stderr_is_not_a_terminal(capsys):
    # capsys' stderr is not a terminal
    assert run("attention", "sweep", "--heads", "1", "--moments", "0", "--grid", "20", "--workers", "1")[0] == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("argv, piece", [
    (("--heads", "3"), "not a power of two"),
    (("--heads", "1:256"), "out of range"),
    (("--moments", "13"), "between 0 and 12"),
    (("--dh", "1/4", "--dv", "1/4"), "not allowed with"),
    (("--workers", "2", "--scheduler", "tcp://h:1"), "not allowed with"),
    (("--width", "1,,2"), "comma-separated"),
])
def test_cli_argument_errors(argv, piece, capsys):
    with pytest.raises(SystemExit) as exc:
        run("attention", "sweep", *argv)
    assert exc.value.code == 2 and piece in capsys.readouterr().err


@pytest.mark.parametrize("argv, kind, piece", [
    (("--heads", "1,2", "--width", "1/4,1/2"), "DomainError", "one thing at a time"),
    (("--pattern", "tied-kv", "--dv", "1/4"), "ShapeError", "d_v = d_h"),
    (("--plot", "sweep.nope"), "FreeProbError", "unknown picture format"),
])
def test_cli_input_errors_before_any_work(argv, kind, piece, monkeypatch, capsys):
    def no_law(*args, **kw):
        raise AssertionError("a law was made before the input was checked")

    monkeypatch.setattr(sweep_module, "summarize_config", no_law)
    code, text = run("attention", "sweep", *argv, "--json")
    data = json.loads(text)
    assert code == 2 and data["type"] == kind and piece in data["error"]
    assert "Traceback" not in capsys.readouterr().err
