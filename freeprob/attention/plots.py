"""Figures of the attention checks and comparisons (matplotlib, an optional dependency).

matplotlib is imported inside the plotting functions, so that ``import
freeprob`` does not need it; the backend is left to matplotlib (it falls back
to a non-interactive one without a display).
"""

import numpy as np

__all__ = ["cap", "plot_causal", "plot_check", "plot_comparison", "plot_sweep", "save", "visible"]


def visible(d):
    """Density values for plotting: the solver's ~1e-12 floor outside the support is not drawn."""
    d = np.array(d, float)
    d[~(d > 1e-9)] = np.nan
    return d


def cap(ax, xs, curves):
    """A linear y-limit that shows the bulk (the hard edge at 0 is unbounded)."""
    top = 0.0
    for d in curves:
        sel = (xs > xs[-1] / 15) & np.isfinite(d)
        if sel.any():
            top = max(top, float(np.max(d[sel])))
    if top > 0:
        ax.set_ylim(0, 1.6 * top)


def save(fig, title, path):
    """Title, lay out, write and close a figure; returns ``path``."""
    import matplotlib.pyplot as plt

    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_check(report, path):
    """Two panels: one spectrum per size against the density; ``D(N)`` against ``N^-1/2`` with the fits.

    Parameters
    ----------
    report : AttentionCheckReport
    path : str or Path
        PNG file to write.

    Returns
    -------
    path
    """
    import matplotlib.pyplot as plt

    law = report.law
    cdf = law.cdf_function(atoms=report.atoms)
    hi = max(b for _, b in cdf.intervals)
    xs = np.linspace(hi / 400, hi, 400)
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(12, 4.2))
    dens = visible(law.density_fast(xs))
    ax0.plot(xs, dens, color="black", lw=1.6, label="Gaussian-equivalent law")
    for n, spec in zip(report.sizes, report.spectra):
        pos = spec[spec > 0]
        bins = 60
        ax0.hist(pos, bins=bins, range=(0, hi), weights=np.full(pos.shape, bins / (len(spec) * hi)),
                 histtype="step", lw=0.9, label=f"{'linear' if report.linear else 'real softmax'}, N = {n}")
    cap(ax0, xs, [dens])
    ax0.set_xlabel("squared singular value x")
    ax0.set_ylabel("density (absolutely continuous part)")
    ax0.legend(fontsize=7)
    xn = np.array(report.sizes, float) ** -0.5
    xf = np.linspace(0, xn.max() * 1.05, 100)
    for row in report.rows:
        if not row["name"].startswith("F("):
            continue
        line = ax1.plot(xn, row["differences"], "o", ms=4)[0]
        coef = [row["a"]] + list(row["trend"])
        fit = coef[0] + sum(c * xf ** (2 * p) for c, p in zip(coef[1:], report.rates))
        ax1.plot(xf, fit, color=line.get_color(), lw=1, label=f"{row['name']}: a = {row['a']:.1e} +- {row['se_a']:.0e}")
        ax1.errorbar([0], [row["a"]], yerr=[row["tolerance"]], color=line.get_color(), capsize=3)
    ax1.axhline(0, color="gray", lw=0.8)
    ax1.set_xlabel("N^(-1/2)")
    ax1.set_ylabel("sample - theory (counting statistics)")
    ax1.legend(fontsize=7)
    return save(fig, report.config, path)


def plot_comparison(report, path):
    """Write a three-panel figure of a :class:`~freeprob.attention.compare.ComparisonReport`.

    Panels: patterns (largest H), H at fixed total width, widths at fixed H.

    Parameters
    ----------
    report : ComparisonReport
    path : str or Path
        PNG file to write.

    Returns
    -------
    path
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ax = axes[0]
    pat = report.curves.get("patterns", {})
    for (label, xs, d), ls in zip(pat.get("lines", []), ["-", "--", "-.", ":", (0, (1, 3)), (0, (5, 1))]):
        ax.plot(xs, visible(d), ls=ls, lw=1.6, label=label)
    if pat.get("lines"):
        cap(ax, pat["lines"][0][1], [visible(d) for _, _, d in pat["lines"]])
    for label, spec in pat.get("samples", []):
        pos = spec[spec > 0]
        ax.hist(pos, bins=80, range=(0, pat["xmax"]), weights=np.full(pos.shape, 1 / (len(spec) * pat["xmax"] / 80)),
                histtype="step", lw=0.8, label=f"real softmax {label}")
    ax.set_title(f"sharing patterns, H = {pat.get('heads', '?')}", fontsize=9)
    for ax, key, title in ((axes[1], "allocation", "H at fixed total width"),
                           (axes[2], "widths", "widths at fixed H")):
        lines = report.curves.get(key, [])
        for label, xs, d in lines:
            ax.plot(xs, visible(d), lw=1.4, label=label)
        if lines:
            cap(ax, lines[0][1], [visible(d) for _, _, d in lines])
        ax.set_title(title, fontsize=9)
    for ax in axes:
        ax.set_xlabel("squared singular value x")
        ax.set_ylabel("density (absolutely continuous part)")
        ax.legend(fontsize=7)
    return save(fig, report.setting, path)


def plot_sweep(result, path):
    """The densities of a :class:`~freeprob.attention.sweep.SweepResult` overlaid, colored by ``H`` or ``W``.

    One curve per row on the common grid; the color runs along a colormap
    with the swept value (on a log scale: head counts are powers of two), a
    colorbar gives the scale and, up to ten rows, a legend names each curve.

    Parameters
    ----------
    result : SweepResult
    path : str or Path
        Picture file to write (its suffix picks the format).

    Returns
    -------
    path
    """
    import matplotlib.pyplot as plt
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import LogNorm, Normalize

    xs, curves = result.curves()
    values = [float(row.heads if result.over == "heads" else row.width) for row, _ in curves]
    lo, hi = min(values), max(values)
    norm = LogNorm(lo, hi) if hi > lo else Normalize(lo - 1, hi + 1)
    cmap = plt.get_cmap("viridis")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    shown = []
    for (row, d), v in zip(curves, values):
        shown.append(visible(d))
        ax.plot(xs, shown[-1], color=cmap(norm(v)), lw=1.5, label=f"{row.label(result.over)}, d_h = {row.config.d_h}, "
                                                                     f"d_v = {row.config.d_v}")
    cap(ax, xs, shown)
    ax.set_xlim(0, float(xs[-1]))
    bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax)
    bar.set_label("heads H" if result.over == "heads" else "total width W")
    if hi > lo:
        bar.minorticks_off()
        bar.set_ticks(values)
        bar.set_ticklabels([str(row.heads) if result.over == "heads" else str(row.width) for row, _ in curves])
    ax.set_xlabel("squared singular value x")
    ax.set_ylabel("density (absolutely continuous part)")
    if len(curves) <= 10:
        ax.legend(fontsize=7)
    return save(fig, result.setting(), path)


def plot_causal(law, path, report=None):
    """The density of a :class:`~freeprob.CausalLaw`; with a :class:`~freeprob.attention.CausalCheckReport`, its
    spectra as histograms and a second panel of ``D(l)`` against ``l^-1/2`` with the fits.

    Parameters
    ----------
    law : CausalLaw
    path : str or Path
        PNG file to write.
    report : CausalCheckReport, optional

    Returns
    -------
    path
    """
    import matplotlib.pyplot as plt

    hi = 6.0 * float(law.mean())
    xs = np.linspace(hi / 400, hi, 400)
    panels = 2 if report is not None else 1
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 4.2), squeeze=False)
    ax0 = axes[0][0]
    dens = visible(law.density_fast(xs))
    ax0.plot(xs, dens, color="black", lw=1.6, label="law (extrapolated in the number of cells)")
    if report is not None:
        for n, spec in zip(report.sizes, report.spectra):
            pos = spec[(spec > 1e-9 * hi) & (spec <= hi)]
            bins = 60
            ax0.hist(pos, bins=bins, range=(0, hi), weights=np.full(pos.shape, bins / (len(spec) * hi)),
                     histtype="step", lw=0.9, label=f"{report.sampler.split(' (')[0]}, l = {n}")
    cap(ax0, xs, [dens])
    ax0.set_xlabel("squared singular value x")
    ax0.set_ylabel(f"density (absolutely continuous part; atom {float(law.atom_mass()):.4g} at 0)")
    ax0.legend(fontsize=7)
    if report is not None:
        ax1 = axes[0][1]
        xn = np.array(report.sizes, float) ** -0.5
        xf = np.linspace(0, xn.max() * 1.05, 100)
        for row in report.rows:
            if not row["name"].startswith(("Re G", "Im G")):
                continue
            line = ax1.plot(xn, row["differences"], "o", ms=4)[0]
            fit = row["a"] + sum(c * xf ** (2 * p) for c, p in zip(row["trend"], report.rates))
            ax1.plot(xf, fit, color=line.get_color(), lw=1, label=f"{row['name']}: a = {row['a']:.1e} +- "
                                                                  f"{row['se_a']:.0e}")
            ax1.errorbar([0], [row["a"]], yerr=[row["tolerance"]], color=line.get_color(), capsize=3)
        ax1.axhline(0, color="gray", lw=0.8)
        ax1.set_xlabel("l^(-1/2)")
        ax1.set_ylabel("sample - theory (Stieltjes statistics)")
        ax1.legend(fontsize=6)
    return save(fig, f"{law!r}", path)
