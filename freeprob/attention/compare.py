"""Sharing patterns and head allocations compared, by the engine and by real softmax.

For each head count and sharing pattern, the law is compared with the law of
independent heads (``mha``) at the same sizes:

* "preserves" when the engine shows it: identical reduced equations
  (``law.system.equations()``), or densities equal to ``digits`` (30) digits
  at ``points`` bulk points, each evaluated at ``dps`` (35) verified digits;
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

The head-allocation study reports, for ``mha`` with ``H d_h = H d_v`` fixed
and for several widths at fixed ``H``, the upper edge of the support, the
median of its absolutely continuous part and the largest density difference.

All laws come from the cache of :func:`freeprob._attention.attention_law`.
"""

import math
import time
from dataclasses import dataclass, field

import numpy as np
import sympy

from .check import _cap, _save, _spawn, _visible, rank_atom
from .._errors import DomainError

__all__ = ["ComparisonReport", "compare_patterns"]


#: Relative error bound of the double-precision density (``density_fast``: about 1e-8 away from edges).
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
        hdr = (f"{'H':>3} {'pattern':<9} {'verdict':<10} {'how':<34} {'digits':>7} {'max|drho|':>10} "
               f"{'MC d/se':>8} {'MC (d-dT)/se':>13} {'MC':<12}")
        out.append(hdr)
        for r in self.rows:
            mc = r.get("mc") or {}
            md = f"{mc['separation']:.1f}" if mc else "-"
            mz = f"{mc['z']:.2f}" if mc else "-"
            mv = mc.get("verdict", "-") if mc else "-"
            dig = "-" if r["digits"] is None else f"{r['digits']:.1f}"
            out.append(f"{r['heads']:>3} {r['pattern']:<9} {r['verdict']:<10} {r['how']:<34} {dig:>7} "
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
        """Write a three-panel figure: patterns (largest H), H at fixed total width, widths at fixed H."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
        ax = axes[0]
        pat = self.curves.get("patterns", {})
        for (label, xs, d), ls in zip(pat.get("lines", []), ["-", "--", "-.", ":", (0, (1, 3)), (0, (5, 1))]):
            ax.plot(xs, _visible(d), ls=ls, lw=1.6, label=label)
        if pat.get("lines"):
            _cap(ax, pat["lines"][0][1], [_visible(d) for _, _, d in pat["lines"]])
        for label, spec in pat.get("samples", []):
            pos = spec[spec > 0]
            ax.hist(pos, bins=80, range=(0, pat["xmax"]), weights=np.full(pos.shape, 1 / (len(spec) * pat["xmax"] / 80)),
                    histtype="step", lw=0.8, label=f"real softmax {label}")
        ax.set_title(f"sharing patterns, H = {pat.get('heads', '?')}", fontsize=9)
        for ax, key, title in ((axes[1], "allocation", "H at fixed total width"),
                               (axes[2], "widths", "widths at fixed H")):
            lines = self.curves.get(key, [])
            for label, xs, d in lines:
                ax.plot(xs, _visible(d), lw=1.4, label=label)
            if lines:
                _cap(ax, lines[0][1], [_visible(d) for _, _, d in lines])
            ax.set_title(title, fontsize=9)
        for ax in axes:
            ax.set_xlabel("squared singular value x")
            ax.set_ylabel("density (absolutely continuous part)")
            ax.legend(fontsize=7)
        return _save(fig, self.setting, path)


def compare_patterns(heads=(1, 2, 4, 8), patterns=("mha", "mqa", "gqa:2", "shared-v", "tied-kv"), beta=1, *, l=1,
                     d_h=sympy.Rational(1, 2), d_v=None, d_out=sympy.Rational(1, 2), grid=200, points=3, dps=35,
                     digits=30, mc_size=400, mc_reps=6, seed=0, level=1e-3, total_width=1,
                     widths=(sympy.Rational(1, 4), sympy.Rational(1, 2), 1), width_heads=2, allocation=True,
                     progress=None):
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
        :func:`freeprob._attention.check_regime` (RegimeWarning or
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

    Returns
    -------
    ComparisonReport

    Notes
    -----
    Laws are cached (:func:`freeprob._attention.attention_law`), so the
    ``mha`` reference of each ``H`` is built once. Cost grows with ``H``: the
    30-digit points dominate at ``H = 8``.
    """
    from .model import attention_config, attention_law

    say = progress or (lambda text: None)
    t_start = time.perf_counter()
    timings = {"engine grids": 0.0, "high precision": 0.0, "equations": 0.0, "monte carlo": 0.0, "allocation": 0.0}
    heads = [int(h) for h in heads]
    if not heads or min(heads) < 1:
        raise DomainError(f"heads must be positive integers, got {heads}")
    patterns = list(patterns)
    if "mha" not in [p.strip().lower() for p in patterns]:
        patterns = ["mha"] + patterns
    configs = {}
    for h in heads:
        for p in patterns:
            try:
                cfg = attention_config(h, p, beta, l=l, d_h=d_h, d_v=d_v, d_out=d_out)
            except DomainError as exc:
                if "groups" in str(exc):
                    say(f"H = {h}, {p}: skipped ({exc})")
                    continue
                raise
            if h == 1 and cfg.pattern != "mha" and cfg.pattern != "tied-kv":
                continue  # one head: mqa, gqa:1 and shared-v are mha itself
            configs[(h, cfg.pattern)] = cfg
    setting = (f"beta = {sympy.nsimplify(beta)}, l = {l}, d_h = {d_h}, d_v = {d_v if d_v is not None else d_h}, "
               f"d_out = {d_out} (ratios)")

    def law_of(cfg):
        return attention_law(cfg.heads, cfg.pattern, cfg.beta, l=cfg.l, d_h=cfg.d_h, d_v=cfg.d_v, d_out=cfg.d_out)

    rows = []
    curves = {}
    ref_points = {}
    mc_plan = []
    for h in heads:
        ref_law = law_of(configs[(h, "mha")])
        group = [c for (hh, _), c in configs.items() if hh == h]
        t = time.perf_counter()
        edge = max(law_of(c).support_fast(grid=201, rel=1e-2)[-1][1] for c in group)  # sets the plot grid only
        xs = _grid(edge, grid)
        dens = {c.pattern: law_of(c).density_fast(xs) for c in group}
        timings["engine grids"] += time.perf_counter() - t
        pts = _bulk_points(xs, dens["mha"], count=points) if points else []
        mc_pts = pts or _bulk_points(xs, dens["mha"], count=3)
        ref_points[h] = mc_pts
        t = time.perf_counter()
        ref_eq = ref_law.system.equations()
        timings["equations"] += time.perf_counter() - t
        ref_hp = {}
        for c in group:
            law = law_of(c)
            max_diff = float(np.nanmax(np.abs(dens[c.pattern] - dens["mha"])))
            bound = FAST_ERROR * max(1.0, float(np.nanmax(dens["mha"])))
            row = {"heads": h, "pattern": c.pattern, "max_diff": max_diff, "error_bound": bound, "digits": None,
                   "points": pts, "n_unknowns": law.system.n_unknowns}
            if c.pattern == "mha":
                row.update(verdict="reference", how=f"{law.system.n_unknowns} unknowns")
                rows.append(row)
                mc_plan.append(c)
                continue
            t = time.perf_counter()
            same_eq = law.system.equations() == ref_eq
            timings["equations"] += time.perf_counter() - t
            if same_eq:
                row.update(verdict="preserves", how="identical reduced equations", digits=float("inf"))
            elif max_diff > FAR_ABOVE * bound:
                row.update(verdict="changes", how=f"grid difference {max_diff / bound:.1e} x error",
                           digits=max(0.0, -math.log10(max_diff / float(np.nanmax(dens["mha"])))))
            elif not pts:
                row.update(verdict="undecided", how="equal in double precision; points=0")
            else:
                t = time.perf_counter()
                agree = []
                for x in pts:
                    if x not in ref_hp:
                        ref_hp[x] = ref_law.density(x, dps=dps)
                    agree.append(_digits(law.density(x, dps=dps), ref_hp[x], dps))
                timings["high precision"] += time.perf_counter() - t
                row["digits"] = min(agree)
                row["point_digits"] = agree
                if min(agree) >= digits:
                    row.update(verdict="preserves", how=f"densities equal at {len(pts)} points, dps={dps}")
                else:
                    row.update(verdict="undecided", how=f"differ at {min(agree):.1f} digits only")
            rows.append(row)
            mc_plan.append(c)
            say(f"H = {h}, {c.pattern}: {row['verdict']} ({row['how']}) [{time.perf_counter() - t_start:.1f} s]")
        if h == max(heads):
            curves["patterns"] = {"heads": h, "xmax": float(edge),
                                  "lines": [(p, xs, dens[p]) for p in dens]}

    mc_info = {}
    if mc_size:
        t = time.perf_counter()
        mc_info = _confirm(configs, mc_plan, rows, ref_points, law_of, mc_size, mc_reps, seed, level, curves, say)
        timings["monte carlo"] = time.perf_counter() - t

    alloc_rows, width_rows = [], []
    if allocation:
        t = time.perf_counter()
        total = sympy.nsimplify(total_width)
        alloc_cfgs = [attention_config(h, "mha", beta, l=l, d_h=total / h, d_v=total / h, d_out=d_out)
                      for h in heads]
        alloc_rows, curves["allocation"] = _allocation_rows(alloc_cfgs, law_of, grid,
                                                            lambda c: f"H={c.heads}, d_h=d_v={c.d_h}")
        for r in alloc_rows:
            r["total"] = str(total)
        wd_cfgs = [attention_config(width_heads, "mha", beta, l=l, d_h=d_h, d_v=d_v, d_out=d_out)]
        for w in widths:
            wd_cfgs.append(attention_config(width_heads, "mha", beta, l=l, d_h=w, d_v=d_v if d_v is not None else d_h,
                                            d_out=d_out))
            wd_cfgs.append(attention_config(width_heads, "mha", beta, l=l, d_h=d_h, d_v=w, d_out=d_out))
        wd_cfgs = list(dict.fromkeys(wd_cfgs))
        width_rows, curves["widths"] = _allocation_rows(wd_cfgs, law_of, grid,
                                                        lambda c: f"d_h={c.d_h}, d_v={c.d_v}")
        for r in width_rows:
            r["heads"] = width_heads
        timings["allocation"] = time.perf_counter() - t
        say(f"allocation study done [{time.perf_counter() - t_start:.1f} s]")
    timings["total"] = time.perf_counter() - t_start
    return ComparisonReport(setting, tuple(rows), tuple(alloc_rows), tuple(width_rows), mc_info, timings, curves)


def _allocation_rows(cfgs, law_of, grid, label):
    laws = [law_of(c) for c in cfgs]
    edges = [law.support_fast(grid=201)[-1][1] for law in laws]
    xs = _grid(max(edges), grid)
    dens = [law.density_fast(xs) for law in laws]
    rows, lines = [], []
    for c, law, e, d in zip(cfgs, laws, edges, dens):
        median = law.cdf_function(nodes=400, atoms=rank_atom(c), grid=201).ac_quantile(0.5)
        rows.append({"heads": c.heads, "d_h": str(c.d_h), "d_v": str(c.d_v), "edge": e, "median": median, "max_diff": float(np.nanmax(np.abs(d - dens[0])))})
        lines.append((label(c), xs, d))
    return rows, lines


def _confirm(configs, plan, rows, ref_points, law_of, size, reps, seed, level, curves, say):
    """Real-softmax confirmation of each row (see the module docstring); fills ``row['mc']``."""
    from ..montecarlo.check import student_t_quantile

    size = int(size)
    reps = int(reps)
    if size < 40 or reps < 3:
        raise DomainError(f"the Monte-Carlo confirmation needs mc_size >= 40 and mc_reps >= 3, got {size}, {reps}")
    half = size // 2
    from .model import check_regime

    for c in plan:
        small = c.sizes(half)
        check_regime(c.beta, small["l"], head_dim=small["d_h"])
    _, rngs = _spawn(seed, len(plan) * 3 * reps)
    it = iter(rngs)
    est = {}
    for c in plan:
        pts = np.array([float(x) for x in ref_points[c.heads]])
        zs = pts * (1 + 0.5j)
        stats = {}
        for n, r in ((size, reps), (half, 2 * reps)):
            vals = []
            for _ in range(r):
                spec = c.sample(n, next(it))
                vals.append(-(1 / (zs[:, None] - spec[None, :])).mean(1).imag)
                if n == size and c.heads == curves.get("patterns", {}).get("heads") and len(vals) == 1:
                    curves["patterns"].setdefault("samples", []).append((c.pattern, spec))
            vals = np.array(vals)
            stats[n] = (vals.mean(0), vals.var(0, ddof=1), r)
        (mb, vb, rb), (mh, vh, rh) = stats[size], stats[half]
        rich = 2 * mb - mh
        var = 4 * vb / rb + vh / rh
        theory = -law_of(c).cauchy_fast(zs).imag
        est[(c.heads, c.pattern)] = (rich, var, theory)
        say(f"MC H = {c.heads}, {c.pattern}: done")
    tests = sum(1 for r in rows if r["verdict"] != "reference") * len(next(iter(ref_points.values())))
    df = 2 * (3 * reps - 2)
    crit = student_t_quantile(1 - level / (2 * max(tests, 1)), df)
    for row in rows:
        key = (row["heads"], row["pattern"])
        rich, var, theory = est[key]
        if row["verdict"] == "reference":
            z = np.abs(rich - theory) / np.sqrt(var)
            row["mc"] = {"separation": float("nan"), "z": float(np.max(z)), "verdict": "(vs theory)"}
            continue
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
        row["mc"] = {"separation": sep, "z": z, "verdict": verdict, "difference": d.tolist(),
                     "theory_difference": d_t.tolist(), "se": se.tolist()}
    return {"size": size, "reps": reps, "points": {h: list(ref_points[h]) for h in sorted(ref_points)},
            "critical": float(crit), "level": level, "tests": tests, "df": df}
