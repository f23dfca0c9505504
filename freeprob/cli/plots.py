"""Pictures the command line writes: a text sketch of a density, and matplotlib figures.

Figures are drawn on a bare :class:`matplotlib.figure.Figure` (no pyplot, no
backend switch), so writing a picture changes nothing in a caller's session.
Atoms are drawn as atoms: a stem at the atom's location whose height is its
mass, on a right-hand axis of its own.
"""

import textwrap

import numpy as np

__all__ = ["ascii_plot", "axis_label", "plot_check", "plot_density"]


def axis_label(kind):
    """The x-axis label of a law of this kind (the contract's normalization)."""
    if kind == "eigenvalues":
        return "eigenvalue x"
    return "squared singular value x (eigenvalues of P P^T, over the rows of P)"


def ascii_plot(xs, dens, width=60, height=12):
    """A text sketch of a density on a grid (the ends of the grid under it)."""
    d = np.nan_to_num(dens)
    if not len(d) or np.max(d) <= 0:
        return ""
    idx = np.linspace(0, len(xs) - 1, min(width, len(xs))).astype(int)
    col = d[idx] / np.max(d)
    rows = []
    for level in range(height, 0, -1):
        rows.append("".join("#" if c * height >= level - 0.5 else " " for c in col))
    rows.append(f"{xs[0]:<{len(idx) // 2}.4g}{xs[-1]:>{len(idx) - len(idx) // 2}.4g}")
    return "\n".join(rows)


def _figure():
    from matplotlib.figure import Figure  # plotting is loaded only when a picture is asked for

    fig = Figure(figsize=(7, 4))
    return fig, fig.subplots()


def _atoms(ax, atoms):
    """Stems of height ``mass`` on a right-hand axis (probability), labelled."""
    if not atoms:
        return
    right = ax.twinx()
    for x, m in atoms:
        x, m = float(x), float(m)
        right.vlines(x, 0, m, color="tab:red", lw=2)
        right.plot([x], [m], "o", color="tab:red", label=f"atom: mass {m:.4g} at {x:.4g}")
    right.set_ylim(0, 1.05)
    right.set_ylabel("atom mass")
    right.legend(fontsize=8, loc="center right")


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=120)


#: Characters per title line, and title lines, of a picture (a long expression is wrapped, then cut).
TITLE_WIDTH, TITLE_LINES = 90, 3


def _title(text):
    """``text`` wrapped to :data:`TITLE_WIDTH` characters, at most :data:`TITLE_LINES` lines (cut with an ellipsis)."""
    lines = textwrap.wrap(text, TITLE_WIDTH, break_long_words=True) or [""]
    if len(lines) > TITLE_LINES:
        lines = lines[:TITLE_LINES]
        lines[-1] = lines[-1][:TITLE_WIDTH - 3] + "..."
    return "\n".join(lines)


def plot_density(path, kind, xs, dens, atoms, title):
    """The density of the absolutely continuous part on ``xs`` and the atoms."""
    fig, ax = _figure()
    ax.plot(xs, np.nan_to_num(dens), color="tab:blue", lw=1.6, label="density (theory)")
    ax.set_xlim(float(xs[0]), float(xs[-1]))
    ax.set_ylim(bottom=0)
    ax.set_xlabel(axis_label(kind))
    ax.set_ylabel("density of the continuous part")
    ax.set_title(_title(title), fontsize=9)
    ax.legend(fontsize=8, loc="upper right")
    _atoms(ax, atoms)
    _save(fig, path)


def plot_check(path, kind, xs, dens, samples, atoms, title):
    """Monte-Carlo histogram of the continuous part against the theory's density, atoms as stems."""
    s = np.concatenate(samples)
    cont = s[~np.isin(s, [x for x, _ in atoms])] if atoms else s
    fig, ax = _figure()
    width = (xs[-1] - xs[0]) / 120
    bins = np.arange(xs[0], xs[-1] + width, width)
    weights = np.full(cont.shape, 1.0 / (len(s) * width))  # mass per unit length, as the density
    ax.hist(cont, bins=bins, weights=weights, alpha=0.45, color="tab:gray", label="Monte-Carlo (continuous part)")
    ax.plot(xs, np.nan_to_num(dens), color="tab:blue", lw=1.6, label="theory")
    ax.set_xlim(float(xs[0]), float(xs[-1]))
    ax.set_ylim(bottom=0)
    ax.set_title(_title(title), fontsize=9)
    ax.set_xlabel(axis_label(kind))
    ax.set_ylabel("density of the continuous part")
    ax.legend(fontsize=8, loc="upper right")
    _atoms(ax, atoms)
    _save(fig, path)
