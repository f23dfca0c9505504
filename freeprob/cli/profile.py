"""The ``density`` and ``law`` commands for a model with a continuous variance profile (:class:`freeprob.ProfileLaw`).

Each value is printed with its error estimate; ``--dps D`` asks for an
estimate below ``10^-D`` (relative to ``max(1, |value|)``; default ``1e-8``),
and a value whose estimate is above that is a typed error, never a number.
On a grid a point whose estimate is above the grid tolerance (``1e-6``, or
``10^-D`` if smaller) is printed as ``unverified`` with its estimate.
"""

import json

import numpy as np

from .. import profile_law_of
from .._numbers import read_number
from .common import number_text
from .plots import ascii_plot, plot_density

__all__ = ["cmd_profile_density", "cmd_profile_law", "GRID_TOL"]

#: Tolerance of a grid density (relative to ``max(1, |G|)``).
GRID_TOL = 1e-6
#: Digits printed for a value with the default tolerance.
DEFAULT_DIGITS = 8


def _tol(dps):
    return 10.0 ** (-dps) if dps else None


def _digits(error, value, dps):
    """Digits worth printing: those the error estimate leaves (at least 3, at most 15)."""
    if dps:
        return dps
    scale = max(1.0, abs(value))
    return int(min(15, max(3, np.floor(-np.log10(max(error / scale, 1e-16))))))


def cmd_profile_density(args, out, model):
    law = profile_law_of(model)
    tol = _tol(args.dps)
    tokens = [tok.strip() for tok in args.at.split(",") if tok.strip()]
    values = [read_number(tok, what=f"--at {tok}") for tok in tokens]
    points = []
    for tok, x in zip(tokens, values):
        g = law.cauchy(x, tol) if tol else law.cauchy(x)
        d = max(0.0, -g.value.imag / np.pi)
        k = _digits(g.error, g.value, args.dps)
        points.append({"x": tok, "density": number_text(d, k), "cauchy": {"re": number_text(g.value.real, k),
                       "im": number_text(g.value.imag, k)}, "error": f"{g.error:.2e}"})
    if args.json:
        out.write(json.dumps({"model": model.name, "law": model.law_kind, "method": _method(law),
                              "points": points}, indent=2) + "\n")
        return
    out.write(f"# {model.name} ({model.law_kind}): {_method(law)}\n")
    for p in points:
        im = p["cauchy"]["im"]
        out.write(f"x = {p['x']}\n  density      {p['density']}\n  G(x + i0)    {p['cauchy']['re']} "
                  f"{'' if im.startswith('-') else '+'}{im} i\n  error        {p['error']} (estimate)\n")


def _method(law):
    return (f"continuous profile: vector Dyson equation on m x m cells, m = {', '.join(map(str, law.cells))}, "
            f"extrapolated in powers {law.exponents} of 1/m")


def _grid(spec, law, support):
    if spec:
        a, b, n = spec.split(":")
        return np.linspace(float(a), float(b), int(n))
    hi = max(float(b.value) for _, b in support)
    lo = min(float(a.value) for a, _ in support)
    pad = 0.05 * (hi - lo)
    return np.round(np.linspace(max(lo - pad, 0.0) if lo > 0 else 0.0, hi + pad, 201), 10)


def cmd_profile_law(args, out, model):
    law = profile_law_of(model)
    tol = _tol(args.dps)
    grid_tol = min(GRID_TOL, tol) if tol else GRID_TOL
    support = law.support(tol) if tol else law.support()
    atoms = law.atoms()
    moments = law.moments(args.moments)
    xs = _grid(args.grid, law, support)
    inside = np.array([any(float(a.value) <= x <= float(b.value) for a, b in support) for x in xs]) & (xs > 0)
    dens = np.zeros(len(xs))
    errs = np.zeros(len(xs))
    if inside.any():
        est = law.cauchy_estimate(xs[inside].astype(complex))
        dens[inside] = np.maximum(0.0, -est.value.imag / np.pi)
        errs[inside] = est.error / np.pi
        bad = ~(est.error <= grid_tol * np.maximum(1.0, np.abs(est.value)))
        dens[np.nonzero(inside)[0][bad]] = np.nan
    hard = any(float(a.value) == 0 for a, _ in support)
    grid = []
    for x, d, e in zip(xs, dens, errs):
        if x == 0 and hard:
            text = "inf"
        elif np.isnan(d):
            text = "unverified"
        else:
            text = f"{d:.{_digits(e, d, None)}g}"
        grid.append({"x": repr(float(x)), "density": text, "error": f"{e:.1e}"})
    data = {
        "model": model.name,
        "law": model.law_kind,
        "method": _method(law),
        "support": [[{"value": repr(float(a.value)), "error": f"{a.error:.1e}"},
                     {"value": repr(float(b.value)), "error": f"{b.error:.1e}"}] for a, b in support],
        "atoms": [{"x": repr(float(x)), "mass": repr(float(m))} for x, m in atoms],
        "moments": [str(m) for m in moments],
        "grid": grid,
    }
    if args.csv:
        with open(args.csv, "w") as fh:
            fh.write("x,density,error\n")
            for r in grid:
                fh.write(f"{r['x']},{r['density']},{r['error']}\n")
    finite = dens[np.isfinite(dens)]
    shown = np.where(np.isfinite(dens), dens, 0.0)
    if hard and finite.size:
        shown[xs == 0] = finite.max()
    if args.plot:
        plot_density(args.plot, model.law_kind, xs, shown, atoms, title=f"{model.name}: {model.expression}")
    if args.json:
        out.write(json.dumps(data, indent=2) + "\n")
        return
    out.write(f"# {model.name} ({model.law_kind} of {model.expression})\n# {_method(law)}\n")
    edges = ", ".join(f"[{a['value']} +- {a['error']}, {b['value']} +- {b['error']}]" for a, b in data["support"])
    out.write(f"support: {edges}\n")
    atoms_text = ", ".join(f"{a['mass']} at {a['x']}" for a in data["atoms"]) or "none"
    out.write(f"atoms:   {atoms_text}\n")
    out.write(f"moments: {', '.join(data['moments'])}\n")
    unverified = int(np.sum(np.isnan(dens)))
    if unverified:
        out.write(f"# {unverified} grid point(s) unverified (error estimate above {grid_tol:g}), drawn as 0\n")
    out.write(ascii_plot(xs, shown) + "\n")
