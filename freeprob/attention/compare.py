"""Sharing patterns and head allocations compared, by the engine and by real softmax.

For each head count and sharing pattern, the law is compared with the law of
independent heads (``mha``) at the same sizes:

* "preserves" when the engine shows it: the same reduced Dyson system
  (:func:`same_system`: the frozen :class:`DysonSystem` objects and the
  exact values equal field by field, a certificate), or densities equal to
  ``digits`` (30) digits at ``points`` bulk points, each evaluated at ``dps``
  (35) verified digits;
* "changes" when the double-precision densities differ on the grid by more
  than 1000 times their error bound (``1e-7 max(1, largest density)``);
* "undecided" otherwise (never silently one of the two).

Real-softmax Monte-Carlo confirms each verdict: ``-Im`` of the empirical
Cauchy transform ``(1/l) sum 1/(z - x_i)`` at ``z = x (1 + i/2)``, ``x`` the
bulk points, for the pattern and for ``mha``, at sizes ``N`` and ``N/2``; the
pattern-minus-mha difference, with its ``1/N`` bias removed by Richardson
extrapolation ``2 s(N) - s(N/2)``, is compared with the theory's difference
(``law.cauchy_fast``) in units of its replicate standard error (Student t,
family-wise level over the whole table). A smooth statistic is used because
a pattern's finite-size bias differs from mha's at order ``1/N`` (measured: up
to 3 standard errors at ``N = 800`` without the extrapolation).

The head-allocation study (:func:`allocation_study`) reports, for ``mha``
with ``H d_h = H d_v`` fixed, and the width study (:func:`width_study`), for
several widths at fixed ``H``, the upper edge of the support, the median of
its absolutely continuous part and the largest density difference.

:func:`compare_patterns` runs the steps in order: plan the configurations
(:func:`plan_configs`), decide a verdict per configuration
(:func:`pattern_verdict`), confirm by Monte-Carlo (:func:`confirm_by_softmax`),
run the studies, and return a :class:`ComparisonReport`. Each law is built
once per call.
"""

import math
import time
from dataclasses import dataclass, field

import numpy as np
import sympy

from .._errors import DomainError
from .._numbers import read_number
from ..montecarlo.sample import spawn_generators
from ..montecarlo.stats import student_t_quantile
from .check import rank_atom
from .config import DEFAULT_WIDTH, attention_config, groups_divide
from .model import attention_law
from .plots import plot_comparison
from .regime import check_regime
from .softmax import config_sizes, sample_config

__all__ = [
    "ComparisonReport",
    "allocation_study",
    "compare_patterns",
    "confirm_by_softmax",
    "pattern_verdict",
    "plan_configs",
    "same_system",
    "width_study",
]


#: Relative error bound of the double-precision density used for verdicts (``density_fast`` is
#: tested to 1e-12 at 1e-3 of the width from an edge; the margin covers grid points nearer an edge).
FAST_ERROR = 1e-7
#: "Changes" needs a grid difference this many times above ``FAST_ERROR``.
FAR_ABOVE = 1e3


def _grid(edge, n):
    return np.linspace(edge / n, edge, n)


def _bulk_points(xs, dens, levels=(0.25, 0.5, 0.75), count=3):
    """Short decimal points at ``levels`` of the absolutely continuous mass on a grid (exact inputs)."""
    d = np.nan_to_num(dens)
    cum = np.concatenate([[0.0], np.cumsum((d[1:] + d[:-1]) / 2 * np.diff(xs))])
    targets = np.linspace(levels[0], levels[-1], count) if count > 1 else [0.5]
    out = []
    for p in targets:
        x = float(np.interp(p * cum[-1], cum, xs))
        out.append(f"{float(f'{x:.2g}'):g}")
    return list(dict.fromkeys(out))


def _digits(a, b, dps):
    diff = abs(a - b)
    if diff == 0:
        return float(dps)
    scale = max(abs(b), 1e-300)
    return float(min(dps, -math.log10(float(diff / scale))))


@dataclass(frozen=True)
class ComparisonReport:
    """Result of :func:`compare_patterns`: rows, allocation study, timings; ``text()`` and ``plot()``."""

    setting: str
    rows: tuple  # dicts per (heads, pattern)
    allocation: tuple  # dicts
    widths: tuple  # dicts
    mc: dict
    timings: dict
    curves: dict = field(default_factory=dict, repr=False)

    def as_dict(self):
        """JSON-ready dictionary (curves left out)."""
        def clean(v):
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            if isinstance(v, (list, tuple, np.ndarray)):
                return [clean(x) for x in v]
            if isinstance(v, (float, np.floating)):
                return float(v) if math.isfinite(v) else str(float(v))
            return v

        return clean({"setting": self.setting, "rows": list(self.rows), "allocation": list(self.allocation),
                      "widths": list(self.widths), "monte_carlo": self.mc, "timings": self.timings})

    def verdicts(self):
        """``{(heads, pattern): verdict}``."""
        return {(r["heads"], r["pattern"]): r["verdict"] for r in self.rows}

    def text(self):
        """The table printed by ``freeprob attention compare``."""
        out = [f"Sharing patterns against independent heads (mha) at the same sizes; {self.setting}", ""]
        w = max([9] + [len(r["pattern"]) for r in self.rows])
        hdr = (f"{'H':>3} {'pattern':<{w}} {'verdict':<10} {'how':<34} {'digits':>7} {'max|drho|':>10} "
               f"{'MC d/se':>8} {'MC (d-dT)/se':>13} {'MC':<12}")
        out.append(hdr)
        for r in self.rows:
            mc = r.get("mc") or {}
            md = f"{mc['separation']:.1f}" if mc else "-"
            mz = f"{mc['z']:.2f}" if mc else "-"
            mv = mc.get("verdict", "-") if mc else "-"
            dig = "-" if r["digits"] is None else f"{r['digits']:.1f}"
            out.append(f"{r['heads']:>3} {r['pattern']:<{w}} {r['verdict']:<10} {r['how']:<34} {dig:>7} "
                       f"{r['max_diff']:>10.2e} {md:>8} {mz:>13} {mv:<12}")
        if self.mc:
            out.append("")
            out.append(
                f"MC: real softmax at N = {self.mc['size']} ({self.mc['reps']} samples) and N/2 "
                f"({2 * self.mc['reps']}); statistic -Im (1/l) sum 1/(z - x_i) at z = x(1 + i/2), x the bulk "
                f"points of each H's mha law ("
                + "; ".join(f"H={h}: {', '.join(p)}" for h, p in self.mc["points"].items())
                + "); 1/N bias removed by Richardson "
                f"(2 s(N) - s(N/2)); d = pattern - mha, dT its theory; |.|/se is the largest over the points; "
                f"'confirms' needs |d - dT|/se <= {self.mc['critical']:.2f} (Student t, family-wise "
                f"{self.mc['level']:g}, Bonferroni over {self.mc['tests']} tests) and, for 'changes', "
                f"|d|/se above it")
        if self.allocation:
            out += ["", f"Head allocation at fixed total width (H d_h = H d_v = {self.allocation[0]['total']}), mha:",
                    f"{'H':>3} {'d_h':>7} {'d_v':>7} {'upper edge':>11} {'ac median':>10} {'max|drho| vs first':>19}"]
            for r in self.allocation:
                out.append(f"{r['heads']:>3} {r['d_h']:>7} {r['d_v']:>7} {r['edge']:>11.5f} {r['median']:>10.3f} "
                           f"{r['max_diff']:>19.3e}")
        if self.widths:
            out += ["", f"Widths at fixed H = {self.widths[0]['heads']}, mha:",
                    f"{'d_h':>7} {'d_v':>7} {'upper edge':>11} {'ac median':>10} {'max|drho| vs default':>21}"]
            for r in self.widths:
                out.append(f"{r['d_h']:>7} {r['d_v']:>7} {r['edge']:>11.5f} {r['median']:>10.3f} {r['max_diff']:>21.3e}")
        if self.allocation or self.widths:
            out.append("(upper edge: double-precision bisection, about 6 digits; ac median: 400-node quadrature, "
                       "about 3 digits; max|drho| on the common 200-point grid)")
        out += ["", "timings (s): " + ", ".join(f"{k} {v:.1f}" for k, v in self.timings.items())]
        return "\n".join(out)

    def plot(self, path):
        """Write the three-panel figure (:func:`freeprob.attention.plots.plot_comparison`)."""
        return plot_comparison(self, path)


def _config_law(cfg):
    """A new law of a configuration (:func:`~freeprob.attention.attention_law`)."""
    return attention_law(cfg.heads, cfg.spec, cfg.beta, l=cfg.l, d_h=cfg.d_h, d_v=cfg.d_v, d_out=cfg.d_out,
                         input_spectrum=cfg.input_spectrum, input_position=cfg.input_position)


def same_system(law, ref):
    """Whether two laws solve the same reduced Dyson system with the same exact values.

    A structural certificate, not a numerical one: the law kinds are equal,
    the exact ratio and parameter values are equal, and the frozen
    :class:`DysonSystem` objects (spaces, blocks, ``u`` rows, constant parts
    ``B_s``, unknowns, ``eta`` coefficients, symbols) compare equal field by
    field as sympy objects. Equal systems at equal values are the same
    equations, hence the same law; unequal systems may still have the same
    law (then the densities decide).
    """
    return law.law == ref.law and law.values() == ref.values() and law.system == ref.system


def plan_configs(heads, patterns, beta, *, l=1, d_h=DEFAULT_WIDTH, d_v=None, d_out=DEFAULT_WIDTH, say=None,
                 input_spectrum=None, input_position="generic"):
    """The configurations of a comparison: ``{(H, pattern): AttentionConfig}``, ``mha`` first for each ``H``.

    ``gqa:G`` with ``G`` not dividing ``H`` is skipped (told through ``say``);
    with one head only ``mha`` and ``tied-kv`` are kept (``mqa``, ``gqa:1``
    and ``shared-v`` are ``mha`` itself). ``input_spectrum`` and
    ``input_position`` (real inputs) are the same in every configuration.

    Raises
    ------
    DomainError
        Non-positive head counts, and every configuration error of
        :func:`~freeprob.attention.attention_config`.
    """
    say = say or (lambda text: None)
    heads = [int(h) for h in heads]
    if not heads or min(heads) < 1:
        raise DomainError(f"heads must be positive integers, got {heads}")
    patterns = list(patterns)
    if "mha" not in [p.strip().lower() for p in patterns]:
        patterns = ["mha"] + patterns
    configs = {}
    for h in heads:
        for p in patterns:
            if not groups_divide(h, p):
                say(f"H = {h}, {p}: skipped ({h} heads cannot be split into equal groups)")
                continue
            cfg = attention_config(h, p, beta, l=l, d_h=d_h, d_v=d_v, d_out=d_out, input_spectrum=input_spectrum,
                                   input_position=input_position)
            if h == 1 and cfg.pattern not in ("mha", "tied-kv"):
                continue
            configs[(h, cfg.spec)] = cfg
    return configs


def pattern_verdict(law, ref, dens, ref_dens, points, *, dps=35, digits=30, ref_values=None, timings=None):
    """The engine's verdict on one pattern against the ``mha`` reference (module docstring).

    Parameters
    ----------
    law, ref : SpectralLaw
    dens, ref_dens : numpy.ndarray
        Their double-precision densities on a common grid.
    points : list of str
        Bulk points of the high-precision comparison (may be empty).
    dps, digits : int
    ref_values : dict, optional
        Cache of the reference's high-precision densities by point, shared
        between the patterns of one ``H``.
    timings : dict, optional
        Accumulates ``"equations"`` and ``"high precision"`` seconds.

    Returns
    -------
    dict
        ``verdict``, ``how``, ``digits`` (and ``point_digits`` when the
        densities were compared).
    """
    timings = {} if timings is None else timings
    ref_values = {} if ref_values is None else ref_values
    t = time.perf_counter()
    same = same_system(law, ref)
    timings["equations"] = timings.get("equations", 0.0) + time.perf_counter() - t
    if same:
        return {"verdict": "preserves", "how": "identical reduced equations", "digits": float("inf")}
    max_diff = float(np.nanmax(np.abs(dens - ref_dens)))
    bound = FAST_ERROR * max(1.0, float(np.nanmax(ref_dens)))
    if max_diff > FAR_ABOVE * bound:
        return {"verdict": "changes", "how": f"grid difference {max_diff / bound:.1e} x error",
                "digits": max(0.0, -math.log10(max_diff / float(np.nanmax(ref_dens))))}
    if not points:
        return {"verdict": "undecided", "how": "equal in double precision; points=0", "digits": None}
    t = time.perf_counter()
    agree = []
    for x in points:
        if x not in ref_values:
            ref_values[x] = ref.density(x, dps=dps)
        agree.append(_digits(law.density(x, dps=dps), ref_values[x], dps))
    timings["high precision"] = timings.get("high precision", 0.0) + time.perf_counter() - t
    out = {"digits": min(agree), "point_digits": agree}
    if min(agree) >= digits:
        out.update(verdict="preserves", how=f"densities equal at {len(points)} points, dps={dps}")
    else:
        out.update(verdict="undecided", how=f"differ at {min(agree):.1f} digits only")
    return out


def _head_rows(h, group, laws, *, grid, points, dps, digits, timings):
    """Rows of one head count (``group``: its configurations, mha first), the bulk points and the curves."""
    t = time.perf_counter()
    edge = max(laws[c].support_fast(grid=201, rel=1e-2)[-1][1] for c in group)  # sets the plot grid only
    xs = _grid(edge, grid)
    dens = {c.spec: laws[c].density_fast(xs) for c in group}
    timings["engine grids"] += time.perf_counter() - t
    pts = _bulk_points(xs, dens["mha"], count=points) if points else []
    mc_pts = pts or _bulk_points(xs, dens["mha"], count=3)
    ref_cfg = next(c for c in group if c.spec == "mha")
    ref = laws[ref_cfg]
    ref_values = {}
    rows = []
    for c in group:
        law = laws[c]
        row = {"heads": h, "pattern": c.spec, "max_diff": float(np.nanmax(np.abs(dens[c.spec] - dens["mha"]))),
               "error_bound": FAST_ERROR * max(1.0, float(np.nanmax(dens["mha"]))), "digits": None,
               "points": pts, "n_unknowns": law.system.n_unknowns}
        if c is ref_cfg:
            row.update(verdict="reference", how=f"{law.system.n_unknowns} unknowns")
        else:
            row.update(pattern_verdict(law, ref, dens[c.spec], dens["mha"], pts, dps=dps, digits=digits,
                                       ref_values=ref_values, timings=timings))
        rows.append(row)
    panel = {"heads": h, "xmax": float(edge), "lines": [(p, xs, dens[p]) for p in dens]}
    return rows, mc_pts, panel


def compare_patterns(heads=(1, 2, 4, 8), patterns=("mha", "mqa", "gqa:2", "shared-v", "tied-kv"), beta=1, *, l=1,
                     d_h=DEFAULT_WIDTH, d_v=None, d_out=DEFAULT_WIDTH, grid=200, points=3, dps=35,
                     digits=30, mc_size=400, mc_reps=6, seed=0, level=1e-3, total_width=1,
                     widths=(sympy.Rational(1, 4), sympy.Rational(1, 2), 1), width_heads=2, allocation=True,
                     progress=None, input_spectrum=None, input_position="generic"):
    """Which sharing patterns preserve the law of independent heads, and how head allocation moves it.

    Parameters
    ----------
    heads : sequence of int
        Head counts ``H``.
    patterns : sequence of str
        Patterns; ``gqa:G`` rows with ``G`` not dividing ``H`` are skipped
        (``H = 1`` keeps only patterns that make sense with one head).
    beta, l, d_h, d_v, d_out
        The configuration shared by all rows (ratios).
    grid : int, optional
        Points of each double-precision density grid (default 200).
    points : int, optional
        Bulk points of the high-precision comparison (default 3); 0 gives
        the table in double precision only (rows that are not "changes" or
        identical equations are then "undecided").
    dps : int, optional
        Digits of each high-precision density (default 35).
    digits : int, optional
        Agreement needed for "preserves" (default 30).
    mc_size : int or None, optional
        Real-softmax confirmation at ``N = mc_size`` and ``mc_size // 2``;
        None or 0 skips it. The smaller size goes through
        :func:`freeprob.attention.check_regime` (RegimeWarning or
        RegimeError when it is too short for ``beta``).
    mc_reps : int, optional
        Samples at ``mc_size`` (twice as many at half the size).
    seed : int, optional
    level : float, optional
        Family-wise level of the Monte-Carlo confirmations.
    total_width : real, optional
        ``H d_h = H d_v`` of the allocation study (over ``heads``).
    widths : sequence of real, optional
        ``d_h`` and ``d_v`` values of the width study at ``H = width_heads``.
    allocation : bool, optional
        Run the allocation and width studies (default True).
    progress : callable, optional
        Called with a line of text after each step.
    input_spectrum, input_position : optional
        Real inputs, the same in every law, study and Monte-Carlo sample: the
        spectrum of the token covariance ``X X^T`` and where its
        eigenvectors lie (:func:`~freeprob.attention.attention_config`;
        docs/attention.md, "Real inputs"). The Monte-Carlo confirmation then
        samples ``X = O diag(sqrt(values)) O^T`` as
        :func:`~freeprob.attention.check_attention` does, and its regime is
        judged at ``beta m1(Sigma)``. Default: orthonormal inputs.

    Returns
    -------
    ComparisonReport

    Notes
    -----
    Each law is built once per call, so the ``mha`` reference of each ``H``
    serves all its patterns. Cost grows with ``H``: the 30-digit points
    dominate at ``H = 8``.
    """
    say = progress or (lambda text: None)
    t_start = time.perf_counter()
    timings = {"engine grids": 0.0, "high precision": 0.0, "equations": 0.0, "monte carlo": 0.0, "allocation": 0.0}
    inputs = {"input_spectrum": input_spectrum, "input_position": input_position}
    configs = plan_configs(heads, patterns, beta, l=l, d_h=d_h, d_v=d_v, d_out=d_out, say=say, **inputs)
    heads = list(dict.fromkeys(h for h, _ in configs))
    first = configs[(heads[0], "mha")]
    setting = (f"beta = {first.beta}, l = {l}, d_h = {d_h}, d_v = {d_v if d_v is not None else d_h}, "
               f"d_out = {d_out} (ratios)")
    if first.input_spectrum is not None:
        setting += f"; real inputs, token covariance {first.input_text} ({first.input_position})"
    laws = {cfg: _config_law(cfg) for cfg in configs.values()}
    rows, curves, ref_points = [], {}, {}
    for h in heads:
        group = [c for (hh, _), c in configs.items() if hh == h]
        h_rows, ref_points[h], panel = _head_rows(h, group, laws, grid=grid, points=points, dps=dps, digits=digits,
                                                  timings=timings)
        for row in h_rows:
            rows.append(row)
            if row["verdict"] != "reference":
                say(f"H = {h}, {row['pattern']}: {row['verdict']} ({row['how']}) "
                    f"[{time.perf_counter() - t_start:.1f} s]")
        if h == max(heads):
            curves["patterns"] = panel
    mc_info = {}
    if mc_size:
        t = time.perf_counter()
        mc_info = confirm_by_softmax(list(configs.values()), rows, ref_points, laws, mc_size, mc_reps, seed=seed,
                                     level=level, curves=curves, say=say)
        timings["monte carlo"] = time.perf_counter() - t
    alloc_rows, width_rows = [], []
    if allocation:
        t = time.perf_counter()
        alloc_rows, curves["allocation"] = allocation_study(heads, beta, total_width=total_width, l=l, d_out=d_out,
                                                            grid=grid, **inputs)
        width_rows, curves["widths"] = width_study(width_heads, beta, widths, l=l, d_h=d_h, d_v=d_v, d_out=d_out,
                                                   grid=grid, **inputs)
        timings["allocation"] = time.perf_counter() - t
        say(f"allocation study done [{time.perf_counter() - t_start:.1f} s]")
    timings["total"] = time.perf_counter() - t_start
    return ComparisonReport(setting, tuple(rows), tuple(alloc_rows), tuple(width_rows), mc_info, timings, curves)


def allocation_study(heads, beta, *, total_width=1, l=1, d_out=DEFAULT_WIDTH, grid=200, input_spectrum=None,
                     input_position="generic"):
    """``mha`` at fixed total width ``H d_h = H d_v = total_width`` over the head counts ``heads``.

    ``input_spectrum``, ``input_position``: real inputs in every law (default: orthonormal inputs).

    Returns
    -------
    rows : list of dict
        Per ``H``: ``heads, d_h, d_v, edge`` (upper edge of the support),
        ``median`` (of the absolutely continuous part), ``max_diff``
        (largest density difference to the first row), ``total``.
    lines : list of (label, xs, density)
        The curves, for :func:`~freeprob.attention.plots.plot_comparison`.
    """
    total = read_number(total_width, what="total_width", positive=True)
    cfgs = [attention_config(h, "mha", beta, l=l, d_h=total / h, d_v=total / h, d_out=d_out,
                             input_spectrum=input_spectrum, input_position=input_position) for h in heads]
    rows, lines = _study_rows(cfgs, grid, lambda c: f"H={c.heads}, d_h=d_v={c.d_h}")
    for r in rows:
        r["total"] = str(total)
    return rows, lines


def width_study(heads, beta, widths, *, l=1, d_h=DEFAULT_WIDTH, d_v=None, d_out=DEFAULT_WIDTH, grid=200,
                input_spectrum=None, input_position="generic"):
    """``mha`` with ``heads`` heads: the given ``d_h, d_v`` first, then each width as ``d_h`` and as ``d_v``.

    Returns ``(rows, lines)`` as :func:`allocation_study` (rows without ``total``); real inputs as there.
    """
    inputs = {"input_spectrum": input_spectrum, "input_position": input_position}
    cfgs = [attention_config(heads, "mha", beta, l=l, d_h=d_h, d_v=d_v, d_out=d_out, **inputs)]
    for w in widths:
        cfgs.append(attention_config(heads, "mha", beta, l=l, d_h=w, d_v=d_v if d_v is not None else d_h,
                                     d_out=d_out, **inputs))
        cfgs.append(attention_config(heads, "mha", beta, l=l, d_h=d_h, d_v=w, d_out=d_out, **inputs))
    cfgs = list(dict.fromkeys(cfgs))
    return _study_rows(cfgs, grid, lambda c: f"d_h={c.d_h}, d_v={c.d_v}")


def _study_rows(cfgs, grid, label):
    laws = [_config_law(c) for c in cfgs]
    edges = [law.support_fast(grid=201)[-1][1] for law in laws]
    xs = _grid(max(edges), grid)
    dens = [law.density_fast(xs) for law in laws]
    rows, lines = [], []
    for c, law, e, d in zip(cfgs, laws, edges, dens):
        median = law.cdf_function(nodes=400, atoms=rank_atom(c), grid=201).ac_quantile(0.5)
        rows.append({"heads": c.heads, "d_h": str(c.d_h), "d_v": str(c.d_v), "edge": e, "median": median,
                     "max_diff": float(np.nanmax(np.abs(d - dens[0])))})
        lines.append((label(c), xs, d))
    return rows, lines


def _softmax_estimates(cfg, points, size, reps, rngs, curves):
    """Richardson estimate of ``-Im`` of the empirical Cauchy transform at ``points (1 + i/2)`` and its variance."""
    zs = points * (1 + 0.5j)
    half = size // 2
    stats = {}
    for n, r in ((size, reps), (half, 2 * reps)):
        vals = []
        for _ in range(r):
            spec = sample_config(cfg, n, next(rngs))
            vals.append(-(1 / (zs[:, None] - spec[None, :])).mean(1).imag)
            if n == size and cfg.heads == curves.get("patterns", {}).get("heads") and len(vals) == 1:
                curves["patterns"].setdefault("samples", []).append((cfg.spec, spec))
        vals = np.array(vals)
        stats[n] = (vals.mean(0), vals.var(0, ddof=1), r)
    (mb, vb, rb), (mh, vh, rh) = stats[size], stats[half]
    return 2 * mb - mh, 4 * vb / rb + vh / rh


def confirm_by_softmax(plan, rows, ref_points, laws, size, reps, *, seed=0, level=1e-3, curves=None, say=None):
    """Real-softmax confirmation of each row (see the module docstring); fills ``row['mc']``.

    Parameters
    ----------
    plan : list of AttentionConfig
        In the order of ``rows``.
    rows : list of dict
        The engine rows (``heads``, ``pattern``, ``verdict``); updated in place.
    ref_points : dict
        ``{H: bulk points (str)}``.
    laws : dict
        ``{AttentionConfig: law}``.
    size, reps : int
        Samples at ``size`` (``reps``) and ``size // 2`` (``2 reps``).
    seed, level
    curves : dict, optional
        The first sample of each pattern at the largest ``H`` is added to
        ``curves["patterns"]["samples"]`` for the figure.
    say : callable, optional

    Returns
    -------
    dict
        The Monte-Carlo settings of the report.
    """
    say = say or (lambda text: None)
    curves = {} if curves is None else curves
    size = int(size)
    reps = int(reps)
    if size < 40 or reps < 3:
        raise DomainError(f"the Monte-Carlo confirmation needs mc_size >= 40 and mc_reps >= 3, got {size}, {reps}")
    for c in plan:
        small = config_sizes(c, size // 2)
        check_regime(c.score_beta, small["l"], head_dim=small["d_h"], name=c.score_beta_name)
    _, rngs = spawn_generators(seed, len(plan) * 3 * reps)
    it = iter(rngs)
    est = {}
    for c in plan:
        pts = np.array([float(x) for x in ref_points[c.heads]])
        rich, var = _softmax_estimates(c, pts, size, reps, it, curves)
        est[(c.heads, c.spec)] = (rich, var, -laws[c].cauchy_fast(pts * (1 + 0.5j)).imag)
        say(f"MC H = {c.heads}, {c.spec}: done")
    tests = sum(1 for r in rows if r["verdict"] != "reference") * len(next(iter(ref_points.values())))
    df = 2 * (3 * reps - 2)
    crit = student_t_quantile(1 - level / (2 * max(tests, 1)), df)
    for row in rows:
        row["mc"] = _mc_verdict(row, est, crit)
    return {"size": size, "reps": reps, "points": {h: list(ref_points[h]) for h in sorted(ref_points)},
            "critical": float(crit), "level": level, "tests": tests, "df": df}


def _mc_verdict(row, est, crit):
    rich, var, theory = est[(row["heads"], row["pattern"])]
    if row["verdict"] == "reference":
        z = np.abs(rich - theory) / np.sqrt(var)
        return {"separation": float("nan"), "z": float(np.max(z)), "verdict": "(vs theory)"}
    r0, v0, t0 = est[(row["heads"], "mha")]
    d = rich - r0
    se = np.sqrt(var + v0)
    d_t = theory - t0
    z = float(np.max(np.abs(d - d_t) / se))
    sep = float(np.max(np.abs(d) / se))
    if z > crit:
        verdict = "CONTRADICTS"
    elif row["verdict"] == "changes":
        verdict = "confirms" if sep > crit else "unresolved"
    else:
        verdict = "confirms"
    return {"separation": sep, "z": z, "verdict": verdict, "difference": d.tolist(),
            "theory_difference": d_t.tolist(), "se": se.tolist()}
