"""The ``freeprob`` command line.

::

    freeprob models
    freeprob equations MODEL [--latex] [--json] [--set NAME=VALUE ...]
    freeprob density MODEL --at 0.5,1,2 [--dps 30] [--set ...] [--json]
    freeprob law MODEL [--grid A:B:N] [--dps D] [--moments K] [--json] [--csv FILE] [--plot FILE.png]
    freeprob check MODEL [--n N] [--seed S] [--reps R] [--json] [--plot FILE.png]
    freeprob equations MODEL --polynomial [--latex] [--json]
    freeprob moments MODEL -k 8 [--exact] [--json]

MODEL is a path to a model file or the name of a built-in model. Numbers in
JSON output are decimal strings carrying the requested digits. A
causal-attention model (``model = "causal-attention"``, the built-in
``attention-causal``) has no symbolic system: ``equations`` and ``moments``
refuse it, and ``law``, ``density`` and ``check`` go to
:mod:`freeprob.cli.causal`.
"""

import argparse
import json
import os
import sys
import warnings

import numpy as np
import sympy

from .. import (
    CausalModel,
    DomainError,
    FreeProbError,
    builtin_models,
    check,
    find_model,
    has_continuous_profile,
    law_of,
    profile_law_of,
)
from .._numbers import read_number
from .._precision import context
from .attention import add_attention_parsers
from .closedform import add_closedform_parsers, polynomial_report
from .plots import ascii_plot, plot_check, plot_density
from .causal import cmd_causal_check, cmd_causal_density, cmd_causal_law
from .discretized import cmd_discretized_density, cmd_discretized_law
from .common import (
    MAX_DPS,
    MAX_MOMENTS,
    check_output_paths,
    grid_spec,
    integer_in,
    model_of,
    number_text,
    point_list,
    progress_bar,
    wants_progress,
    write_csv,
)

__all__ = ["main", "build_parser"]


def cmd_models(args, out):
    rows = []
    for name in builtin_models():
        m = find_model(name)
        rows.append({"name": name, "law": m.law_kind, "expression": m.expression, "description": m.description})
    if args.json:
        out.write(json.dumps({"models": rows}, indent=2) + "\n")
    else:
        for r in rows:
            out.write(f"{r['name']:<26} {r['law']:<24} {r['expression']}\n    {r['description']}\n")


def _is_causal(model):
    return isinstance(model, CausalModel)


def cmd_equations(args, out):
    model = model_of(args)
    if _is_causal(model):
        raise DomainError(f"{model.name} is a causal-attention model: its equation is the cell equation of "
                          f"docs/causal.md, section 6 (freeprob.solve.causal_dyson), solved numerically on cells; "
                          f"there is no symbolic system or polynomial to print. freeprob law|density|check "
                          f"{args.model} give its law")
    law = law_of(model)
    if getattr(args, "polynomial", False):
        out.write(polynomial_report(law, latex=args.latex, as_json=args.json) + "\n")
        return
    sysm = law.system
    if args.json:
        mats, g = sysm.matrices()
        data = {
            "model": model.name,
            "law": model.law_kind,
            "values": {str(k): str(v) for k, v in law.values().items()},
            "symmetry": law.reduction.symmetry_note,
            "reduced_as": (None if law.reduction.gram is None else
                           f"squared singular values of {law.reduction.gram}"),
            "unknowns": [
                {"name": f"g{k + 1}", "space": str(sysm.spaces[s]), "entry": [p, q]}
                for k, (s, p, q) in enumerate(sysm.unknowns)
            ],
            "outputs": [{"space": str(sysm.spaces[s]), "entry": [i, i]} for s, i in sysm.u],
            **law.reduction.equivalence.as_dict(),
            "equations": [
                {
                    "space": str(sp),
                    "matrix": sympy.latex(mats[s]) if args.latex else str(mats[s].tolist()),
                    "statement": "G = A^{-1}" ,
                }
                for s, sp in enumerate(sysm.spaces)
            ],
        }
        out.write(json.dumps(data, indent=2) + "\n")
        return
    out.write(f"# {model.name}: {model.law_kind} of {model.expression}\n")
    out.write(f"# values: {', '.join(f'{k} = {v}' for k, v in law.values().items())}\n")
    out.write(f"# system: {len(sysm.unknowns)} unknowns; {law.reduction.symmetry_note}\n")
    if law.reduction.gram is not None:
        out.write(f"# reduced as the squared singular values of {law.reduction.gram} (the same law): z below is "
                  f"sqrt(w) for the eigenvalue variable w, and G(w) = G[0,0](sqrt(w)) / sqrt(w)\n")
    if law.reduction.equivalence:
        out.write("# Entrywise functions, reduced as their Gaussian equivalents (derived):\n")
        out.write("".join(f"#   {line}\n" for line in law.reduction.equivalence.text().splitlines()))
    out.write(
        "# In each space, G is the matrix of normalized block traces of the pencil resolvent; "
        "Lambda = diag(z on u rows, i*epsilon elsewhere), epsilon -> 0.\n\n"
    )
    out.write(law.equations(latex=args.latex) + "\n")


def _law(model):
    """The law of a model: a :class:`~freeprob.ProfileLaw` for a continuous variance profile."""
    return profile_law_of(model) if has_continuous_profile(model.expr) else law_of(model)


def cmd_density(args, out):
    model = model_of(args)
    if _is_causal(model):
        return cmd_causal_density(args, out, model)
    if has_continuous_profile(model.expr):
        return cmd_discretized_density(args, out, model)
    law = law_of(model)
    dps = args.dps = args.dps or 15
    # every point is read (exactly, by the one reader) before the first solve
    tokens = [tok.strip() for tok in args.at.split(",") if tok.strip()]
    values = [read_number(tok, what=f"--at {tok}") for tok in tokens]
    points = []
    for tok, x in zip(tokens, values):
        d, g = law.density_and_cauchy(x, dps=dps)
        points.append({"x": tok, "density": number_text(d, dps), "cauchy": {"re": number_text(g.real, dps), "im": number_text(g.imag, dps)}})
    if args.json:
        out.write(json.dumps({"model": model.name, "law": model.law_kind, "dps": dps, "points": points}, indent=2) + "\n")
    else:
        out.write(f"# {model.name} ({model.law_kind}), {dps} digits\n")
        for p in points:
            out.write(f"x = {p['x']}\n  density      {p['density']}\n  G(x + i0)    {p['cauchy']['re']} {'' if p['cauchy']['im'].startswith('-') else '+'}{p['cauchy']['im']} i\n")


def _grid(spec, law, support, atoms, points=201):
    """The grid of ``law``: ``--grid A:B:N``, or ``points`` points spanning the support and the atoms.

    The default reaches 5% of the span beyond the outermost edges and atoms
    (not below 0 for squared singular values). Grid values are rounded to
    ten digits of the span, so that 0 is 0 and not a round-off neighbour.
    """
    if spec:
        a, b, n = spec.split(":")  # checked by the argument type
        lo, hi, n = float(a), float(b), int(n)
    else:
        ends = [float(x) for ab in support for x in ab] + [float(x) for x, _ in atoms]
        if not ends:
            lo, hi = law.support_range()
        else:
            lo, hi = min(ends), max(ends)
            pad = 0.05 * max(hi - lo, 1e-3 * max(1.0, abs(hi)))
            lo, hi = lo - pad, hi + pad
            if law.law == "squared-singular-values":
                lo = max(lo, 0.0)
        n = points
    digits = 10 - int(np.floor(np.log10(hi - lo)))
    return np.round(np.linspace(lo, hi, n), digits)


def _outside(x, support):
    """True when ``x`` lies outside every support interval (there the density is exactly 0)."""
    return all(not (float(a) <= x <= float(b)) for a, b in support)


#: Grid points solved per step of the progress bar of a long grid.
GRID_CHUNK = 5000


def _grid_density(law, xs, support, tick=None):
    """Double-precision density on the grid ``xs``, solved only where it is not known.

    Outside the verified support it is exactly 0 (this also keeps the solver
    away from atoms, where ``G`` has a pole); for squared singular values it is
    0 at ``x <= 0`` (the law of ``x > 0``; the atom and a hard edge sit at 0).
    A grid point exactly at a hard edge of an eigenvalue law (an end at 0 of
    a support interval, where the density grows without bound) is ``inf``.
    Points the vectorized solver cannot verify are solved one by one to 15
    digits (a failure there is a typed error, never a NaN in the output).
    """
    dens = np.zeros(len(xs))
    inside = np.array([not _outside(x, support) for x in xs])
    if law.law == "squared-singular-values":
        inside &= xs > 0
    else:
        at_edge = inside & (xs == 0) & np.array([any(float(a) == 0 or float(b) == 0 for a, b in support)] * len(xs))
        dens[at_edge] = np.inf
        inside &= ~at_edge
    # a point within 1e-15 (relative) of a soft edge is given as 0: the density there,
    # below about 1e-7 (a square-root edge), is beyond the double-precision solve, which
    # cannot verify it (the --dps path solves such points in mpmath)
    soft = [float(e) for ab in support for e in ab if float(e) != 0]
    on_edge = inside & np.array([any(abs(x - e) <= 1e-15 * max(1.0, abs(e)) for e in soft) for x in xs])
    inside &= ~on_edge
    where = np.nonzero(inside)[0]
    for start in range(0, len(where), GRID_CHUNK):
        piece = where[start:start + GRID_CHUNK]
        dens[piece] = law.density_fast(xs[piece])
        if tick is not None:
            tick()
    for i in np.nonzero(np.isnan(dens))[0]:
        dens[i] = float(law.density(f"{xs[i]:.17g}", dps=15))
    return dens


#: Significant digits of the double-precision grid density (``density_fast`` is accurate to
#: 1e-12 relative to ``max(1, |G|)`` inside the support).
GRID_DIGITS = 12


def _x_text(x):
    """A grid point as the shortest decimal that reads back as the same double (the point solved)."""
    return repr(float(x))


def _density_text(d, digits=GRID_DIGITS):
    return "inf" if np.isinf(d) else f"{d:.{digits}g}"


def cmd_law(args, out):
    model = model_of(args)
    if _is_causal(model):
        return cmd_causal_law(args, out, model)
    if has_continuous_profile(model.expr):
        return cmd_discretized_law(args, out, model)
    law = law_of(model)
    dps = args.dps or 15
    support = law.support(dps=dps)
    atoms = law.atoms(dps=dps)
    moments = law.moments(4 if args.moments is None else args.moments)
    xs = _grid(args.grid, law, support, atoms)
    outside = np.array([_outside(x, support) for x in xs])
    if args.dps is None:
        tick, close = progress_bar(wants_progress(args) and len(xs) > GRID_CHUNK, "grid", unit="chunk",
                                   total=-(-len(xs) // GRID_CHUNK))
        try:
            dens = _grid_density(law, xs, support, tick)
        finally:
            close()
        grid_digits = GRID_DIGITS
        grid = [{"x": _x_text(x), "density": _density_text(d)} for x, d in zip(xs, dens)]
    else:
        grid_digits = dps
        hard = law.law == "eigenvalues" and any(float(a) == 0 or float(b) == 0 for a, b in support)
        grid = [{"x": _x_text(x), "density": "0" if out else ("inf" if hard and x == 0 else
                                                               number_text(law.density(_x_text(x), dps=dps), dps))}
                for x, out in zip(xs, outside)]
        dens = np.array([float(r["density"]) for r in grid])

    def mstr(m):
        # decimal strings with the requested digits; exact rationals: `freeprob moments --exact`
        if isinstance(m, sympy.Basic):
            return number_text(context(dps + 5).mpf(sympy.N(m, dps + 5)), dps)
        return number_text(m, dps)

    data = {
        "model": model.name,
        "law": model.law_kind,
        "dps": dps,
        "support": [[number_text(a, dps), number_text(b, dps)] for a, b in support],
        "atoms": [{"x": number_text(x, dps), "mass": number_text(m, dps)} for x, m in atoms],
        "moments": [mstr(m) for m in moments],
        "grid_digits": grid_digits,
        "grid": grid,
    }
    if args.csv:
        write_csv(args.csv, grid, ("x", "density"))
    # a hard edge's infinite value is drawn at the largest finite one
    finite = dens[np.isfinite(dens)]
    shown = np.where(np.isinf(dens), finite.max() if finite.size else 0.0, dens)
    if args.plot:
        plot_density(args.plot, model.law_kind, xs, shown, atoms, title=f"{model.name}: {model.expression}")
    if args.json:
        out.write(json.dumps(data, indent=2) + "\n")
        return
    out.write(f"# {model.name} ({model.law_kind} of {model.expression})\n")
    out.write(f"support: {', '.join(f'[{a}, {b}]' for a, b in data['support'])}\n")
    atoms_text = ", ".join(f"{a['mass']} at {a['x']}" for a in data["atoms"]) or "none"
    out.write(f"atoms:   {atoms_text}\n")
    out.write(f"moments: {', '.join(data['moments'])}\n")
    out.write(ascii_plot(xs, shown) + "\n")


def cmd_check(args, out):
    model = model_of(args)
    if _is_causal(model):
        return cmd_causal_check(args, out, model)
    law = _law(model)
    n = 1000 if args.n is None else args.n
    reps = 6 if args.reps is None else args.reps
    tick, close = progress_bar(wants_progress(args), "Monte-Carlo samples", total=3 * reps, unit="sample")
    try:
        rep = check(law, n=n, reps=reps, seed=args.seed, progress=tick)
    finally:
        close()
    if args.plot:
        cdf = law.cdf_function()
        support = cdf.intervals
        xs = _grid(None, law, support, cdf.atoms, points=400)
        dens = np.where([_outside(x, support) for x in xs], 0.0, law.density_fast(xs))
        plot_check(args.plot, model.law_kind, xs, dens, rep.samples, cdf.atoms, f"{model.name}: N = {n}")
    if args.json:
        out.write(json.dumps(rep.as_dict(), indent=2) + "\n")
    else:
        out.write(rep.text() + "\n")
    return 0 if rep.passed else 1


def build_parser():
    p = argparse.ArgumentParser(prog="freeprob", description="Exact limiting spectral laws of random-matrix models.")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("models", help="list the built-in models")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_models)

    def model_args(s):
        s.add_argument("model", help="a model file (.toml) or the name of a built-in model")
        s.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a dimension ratio or parameter")
        s.add_argument("--json", action="store_true")

    s = sub.add_parser("equations", help="print the reduced Dyson equations")
    model_args(s)
    s.add_argument("--latex", action="store_true")
    s.add_argument("--polynomial", action="store_true", help="eliminate to one polynomial equation for G")
    s.set_defaults(func=cmd_equations)

    s = sub.add_parser("density", help="density and Cauchy transform at points")
    model_args(s)
    s.add_argument("--at", required=True, type=point_list, help="comma-separated points, e.g. 0.5,1,2")
    s.add_argument("--dps", type=integer_in(1, MAX_DPS, "--dps"),
                   help="digits (default 15; a continuous profile or causal attention: an error estimate below "
                        "10^-dps, default 1e-8 or 1e-4)")
    s.set_defaults(func=cmd_density)

    s = sub.add_parser("law", help="support, atoms, moments and density on a grid")
    model_args(s)
    s.add_argument("--grid", type=grid_spec, help="A:B:N")
    s.add_argument("--dps", type=integer_in(1, MAX_DPS, "--dps"))
    s.add_argument("--moments", type=integer_in(0, MAX_MOMENTS, "--moments"),
                   help="moments printed (default 4; a causal-attention model prints its exact mean instead)")
    s.add_argument("--csv")
    s.add_argument("--plot")
    s.set_defaults(func=cmd_law)

    s = sub.add_parser("check", help="Monte-Carlo check against the theory")
    model_args(s)
    s.add_argument("--n", type=integer_in(10, 8000, "--n"),
                   help="matrix size (default 1000; a causal-attention model: the largest length l, lengths "
                        "N/8, N/4, N/2, N, default 250..2000)")
    s.add_argument("--seed", type=integer_in(0, 2**63 - 1, "--seed"), default=0)
    s.add_argument("--reps", type=integer_in(2, 1000, "--reps"),
                   help="replicates (default 6; a causal-attention model: at the largest length, R l_max/l at "
                        "length l, default 4)")
    s.add_argument("--plot")
    s.set_defaults(func=cmd_check)

    add_closedform_parsers(sub)
    add_attention_parsers(sub)
    return p


#: Exit codes (documented in the README): a result, a failed check verdict,
#: bad input (or a value freeprob refuses to return unverified), an internal error.
EXIT_OK, EXIT_VERDICT, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3

#: Options whose value may start with "-" (a negative point): argparse would take it for an option.
_VALUE_OPTIONS = ("--at", "--grid", "--set")


def _join_negative_values(argv):
    """``--at -1,0.5`` -> ``--at=-1,0.5``, so a negative first value is a value, not an unknown option."""
    out = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in _VALUE_OPTIONS and i + 1 < len(argv) and argv[i + 1].startswith("-") and argv[i + 1][1:2] not in ("", "-") \
                and not argv[i + 1][1:2].isalpha():
            out.append(f"{arg}={argv[i + 1]}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


def _report_error(args, exc, kind, out):
    where = getattr(exc, "point", None)
    hint = {
        "input": "check the value named in the message",
        "internal": "this is a bug in freeprob; please report it with the command line",
    }[kind]
    if getattr(args, "json", False):
        out.write(json.dumps({"error": str(exc), "type": type(exc).__name__,
                              "where": None if where is None else str(where), "hint": hint}, indent=2) + "\n")
    label = "error" if kind == "input" else "internal error"
    sys.stderr.write(f"freeprob: {label}: {exc}\n")


def _quiet_stdout():
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file descriptor (a StringIO in tests)
        pass


def main(argv=None, out=None):
    """Run the command line; returns the exit code (0 result, 1 failed verdict, 2 bad input, 3 internal error)."""
    out = out or sys.stdout
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(_join_negative_values(argv))

    def show(message, category, *rest, **kwargs):
        # a warning to a command-line user is a message, not a source location
        sys.stderr.write(f"freeprob: warning ({category.__name__}): {message}\n")

    with warnings.catch_warnings():
        warnings.showwarning = show
        try:
            check_output_paths(args)
            code = args.func(args, out)
            out.flush()  # a closed pipe shows here, not in the interpreter's exit flush
        except FreeProbError as exc:
            _report_error(args, exc, "input", out)
            return EXIT_INPUT
        except KeyboardInterrupt:
            sys.stderr.write("freeprob: interrupted\n")
            return 130
        except BrokenPipeError:
            # the reader stopped early (``freeprob ... | head``): nothing is wrong, and
            # nothing more can be written; stdout goes to devnull so the exit flush is quiet
            _quiet_stdout()
            return EXIT_OK
        except Exception as exc:  # no Python traceback for a user, ever: a one-line report instead
            _report_error(args, exc, "internal", out)
            return EXIT_INTERNAL
    return code or 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
