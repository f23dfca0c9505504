"""The ``density`` and ``law`` commands for a law extrapolated from discretizations (:class:`freeprob.DiscretizedLaw`).

A model with a continuous variance profile (:class:`freeprob.ProfileLaw`)
and a causal-attention model (:class:`freeprob.CausalLaw`,
:mod:`freeprob.cli.causal`). Each value is printed with its error estimate
and the significant digits that estimate leaves. ``--dps D`` asks for an
estimate below ``10^-D`` (relative to ``max(value_unit, |G|)``, ``value_unit``
being 1 for a profile law and below 1 for causal attention, whose values are
small at large ``beta``), for the support edges too; a value whose estimate
is above that is a typed error, never a number. Without ``--dps`` values are
verified to the law's tolerance (``1e-8`` for a profile, ``1e-4`` for causal
attention) and the edges to its support tolerance (the same for a profile;
``1e-2`` for causal attention, whose top edge converges slowly). On a grid
a point whose estimate is above the grid tolerance (the law's ``fast_tol``,
``1e-6`` for a profile and ``1e-4`` for causal attention, or ``10^-D`` if
smaller), or that lies outside the support but within an edge's estimate
of it, is printed as ``unverified``.
"""

import json

import numpy as np

from .. import ConvergenceError, ProfileLaw, profile_law_of
from .._numbers import read_number
from .common import number_text, write_csv
from .plots import ascii_plot, plot_density

__all__ = ["cmd_discretized_density", "cmd_discretized_law"]


def _tol(dps):
    return 10.0 ** (-dps) if dps else None


def _digits(error, value, dps=None):
    """Significant digits of ``value`` that its error estimate leaves (2 to 15; at most ``dps`` when given)."""
    value, error = abs(float(value)), float(error)
    if value == 0:
        return 1
    supported = 15 if error <= 0 else int(np.floor(np.log10(value / error))) + 1
    digits = min(15, max(2, supported))
    return min(digits, dps) if dps else digits


def _text(value, error, dps=None):
    """``value`` with the digits its estimate leaves; ``0`` when the value is below its estimate."""
    if not abs(value) > error:
        return "0"
    return number_text(value, _digits(error, value, dps))


def _near_edge(law, x):
    """The support edge ``x`` lies within the error estimate of (an ``Extrapolated``), or None."""
    for pair in law.support():
        for e in pair:
            if e.error > 0 and abs(x - float(e.value)) <= float(e.error):
                return e
    return None


def cmd_discretized_density(args, out, model, law=None):
    """``freeprob density`` for ``law`` (default: the :class:`~freeprob.ProfileLaw` of ``model``)."""
    law = profile_law_of(model) if law is None else law
    tol = _tol(args.dps)
    tokens = [tok.strip() for tok in args.at.split(",") if tok.strip()]
    values = [read_number(tok, what=f"--at {tok}") for tok in tokens]
    points = []
    for tok, x in zip(tokens, values):
        try:
            g = law.cauchy(x, tol) if tol else law.cauchy(x)
        except ConvergenceError as exc:
            if not tol:
                raise
            raise ConvergenceError(f"{exc}; --dps {args.dps} asks for an estimate below 10^-{args.dps}: give a "
                                   f"smaller --dps, or leave it out (the law's tolerance {law.tol:g})",
                                   point=exc.point, residual=exc.residual) from None
        d = max(0.0, -g.value.imag / np.pi)
        if x.is_real and x > 0 and not d > g.error / np.pi:
            edge = _near_edge(law, float(x))  # outside every discretization's support, next to an uncertain edge
            if edge is not None:
                raise ConvergenceError(f"{model.name}: x = {tok} lies within the error estimate of the support edge "
                                       f"{float(edge.value):.6g} +- {float(edge.error):.2g}; the density there is "
                                       f"not known to be 0 (ask farther from the edge)", point=tok)
        re, im = g.value.real, g.value.imag
        points.append({"x": tok, "density": _text(d, g.error / np.pi, args.dps),
                       "cauchy": {"re": _text(re, g.error, args.dps), "im": _text(im, g.error, args.dps)},
                       "error": f"{g.error:.2e}"})
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
    equation = ("continuous profile: vector Dyson equation on m x m cells" if isinstance(law, ProfileLaw) else
                "causal attention: cell equation (docs/causal.md, section 6) on m token cells")
    return f"{equation}, m = {', '.join(map(str, law.cells))}, extrapolated in powers {law.exponents} of 1/m"


def _grid(spec, law, support, from_zero):
    """``--grid A:B:N``, or 201 points over the support padded by 5% (from 0 when ``from_zero`` and the support
    reaches 0; else from the first positive point of that grid)."""
    if spec:
        a, b, n = spec.split(":")
        return np.linspace(float(a), float(b), int(n))
    hi = max(float(b.value) for _, b in support)
    lo = min(float(a.value) for a, _ in support)
    pad = 0.05 * (hi - lo)
    xs = np.round(np.linspace(max(lo - pad, 0.0) if lo > 0 else 0.0, hi + pad, 201), 10)
    return xs if from_zero or xs[0] > 0 else xs[1:]


def cmd_discretized_law(args, out, model, law=None, summary=None):
    """``freeprob law`` for ``law`` (default: the :class:`~freeprob.ProfileLaw` of ``model``).

    ``summary`` is ``(data, lines)``: the JSON entries and text lines printed instead of the moments (a law
    without exact moments beyond its mean). The density at a hard edge 0 is ``inf`` for a profile law (its
    Gram matrices' hard edge, Dykema-Haagerup's ``1/(x log^2 x)``) and ``unverified`` otherwise.
    """
    profile = law is None or isinstance(law, ProfileLaw)
    law = profile_law_of(model) if law is None else law
    tol = _tol(args.dps)
    grid_tol = min(law.fast_tol, tol) if tol else law.fast_tol
    try:
        support = law.support(tol) if tol else law.support()
    except ConvergenceError as exc:
        if not tol:
            raise
        raise ConvergenceError(f"{exc}; --dps {args.dps} asks the support edges below 10^-{args.dps} too (the law "
                               f"takes them to {law.support_tol:g} by default): leave out --dps, or give a smaller "
                               f"one", point=exc.point, residual=exc.residual) from None
    atoms = law.atoms()
    if summary is None:
        moments = law.moments(4 if args.moments is None else args.moments)
        summary = ({"moments": [str(m) for m in moments]}, [f"moments: {', '.join(str(m) for m in moments)}"])
    xs = _grid(args.grid, law, support, from_zero=profile)
    inside = np.array([any(float(a.value) <= x <= float(b.value) for a, b in support) for x in xs]) & (xs > 0)
    dens = np.zeros(len(xs))
    errs = np.zeros(len(xs))
    if inside.any():
        est = law.cauchy_estimate(xs[inside].astype(complex))
        dens[inside] = np.maximum(0.0, -est.value.imag / np.pi)
        errs[inside] = est.error / np.pi
        bad = ~(est.error <= grid_tol * np.maximum(law.value_unit, np.abs(est.value)))
        dens[np.nonzero(inside)[0][bad]] = np.nan
    # within an edge's estimate of it, the density is not known (outside: to be 0; inside: to be positive)
    near = (xs > 0) & np.array([any(abs(x - float(e.value)) <= float(e.error) for ab in support
                                    for e in ab) for x in xs])
    dens[near] = np.nan
    errs[near] = np.nan
    hard = any(float(a.value) == 0 for a, _ in support)
    if hard and not profile:  # the density's limit at the hard edge is not known: not a value
        dens[xs == 0] = np.nan
        errs[xs == 0] = np.nan
    hard = hard and profile
    grid = []
    for x, d, e in zip(xs, dens, errs):
        if x == 0 and hard:
            text = "inf"
        elif np.isnan(d):
            text = "unverified"
        else:
            text = "0" if not d > e else f"{d:.{_digits(e, d)}g}"
        grid.append({"x": repr(float(x)), "density": text, "error": "nan" if np.isnan(e) else f"{e:.1e}"})
    data = {
        "model": model.name,
        "law": model.law_kind,
        "method": _method(law),
        "support": [[{"value": repr(float(a.value)), "error": f"{a.error:.1e}"},
                     {"value": repr(float(b.value)), "error": f"{b.error:.1e}"}] for a, b in support],
        "atoms": [{"x": repr(float(x)), "mass": repr(float(m))} for x, m in atoms],
        **summary[0],
        "grid": grid,
    }
    if args.csv:
        write_csv(args.csv, grid, ("x", "density", "error"))
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

    def edge(e):  # the digits its estimate leaves (the JSON output carries every digit)
        return f"{float(e.value):.{_digits(e.error, e.value)}g} +- {float(e.error):.1e}"

    edges = ", ".join(f"[{edge(a)}, {edge(b)}]" for a, b in support)
    out.write(f"support: {edges}\n")
    atoms_text = ", ".join(f"{a['mass']} at {a['x']}" for a in data["atoms"]) or "none"
    out.write(f"atoms:   {atoms_text}\n")
    out.write("".join(f"{line}\n" for line in summary[1]))
    unverified = int(np.sum(np.isnan(dens)))
    if unverified:
        unit = "" if law.value_unit == 1 else f" x max({law.value_unit:.3g}, |G|)"
        out.write(f"# {unverified} grid point(s) unverified (error estimate of G above {grid_tol:g}{unit}, or within "
                  f"a support edge's estimate of it), drawn as 0\n")
    out.write(ascii_plot(xs, shown) + "\n")
