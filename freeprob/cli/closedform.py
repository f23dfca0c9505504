"""Command-line reports of the closed forms (:mod:`freeprob.scalar.closedform`).

::

    freeprob equations MODEL --polynomial [--latex] [--json]
    freeprob moments MODEL -k 8 [--exact] [--json] [--dps D] [--set NAME=VALUE ...]

:func:`polynomial_report` and :func:`moments_report` return the text (or
JSON) that the commands print; :func:`add_closedform_parsers` adds the
``moments`` sub-command to the ``freeprob`` parser.
"""

import json

import sympy

from .._errors import DomainError, EliminationError, FreeProbError
from .._precision import check_dps, context, mp_to_str, to_mpf
from .common import MAX_DPS, MAX_MOMENTS, integer_in, model_of
from .. import CausalModel, has_continuous_profile, law_of, profile_moments

__all__ = ["polynomial_report", "moments_report", "add_closedform_parsers", "cmd_moments"]


def _fmt(expr, latex):
    return sympy.latex(expr) if latex else str(expr)


def polynomial_report(law, latex=False, as_json=False):
    """``Π``, the factor kept and why, and the reduced system it came from.

    Both forms are shown: with the ratios and parameters as symbols (when
    that elimination finishes) and with their values substituted.

    Parameters
    ----------
    law : SpectralLaw
    latex : bool
        Formulas as LaTeX.
    as_json : bool
        A JSON document instead of text.

    Returns
    -------
    str

    Examples
    --------
    >>> import freeprob as fp
    >>> text = polynomial_report(fp.law_of(fp.find_model("wigner-semicircle")))
    >>> text.splitlines()[1]
    'Pi(g, z) = g**2 - g*z + 1 = 0'
    """
    num = law.polynomial(symbolic=False)
    try:
        sym = law.polynomial(symbolic=True)
        sym_error = None
    except EliminationError as exc:
        sym, sym_error = None, str(exc)
    var = "w" if law.law != "eigenvalues" else "z"
    meaning = (
        "g = G(z), the Cauchy transform of the eigenvalue law"
        if law.law == "eigenvalues"
        else "g = G(w), the Cauchy transform of the law of P P^T (w = zeta^2 of the hermitization)"
    )
    zname = sympy.Symbol(var)

    def show(cp):
        return _fmt(cp.expr().xreplace({cp.z: zname}), latex)

    if as_json:
        data = {
            "model": law.name,
            "law": law.law,
            "variables": {"g": meaning, "z": var},
            "values": {str(k): str(v) for k, v in law.values().items()},
            "polynomial": show(num),
            "degrees": {"g": num.degrees[0], var: num.degrees[1]},
            "symbolic": None if sym is None else show(sym),
            "symbolic_error": sym_error,
            "substitutions": {str(k): _fmt(v, latex) for k, v in ((sym or num).substitutions.items())},
            "factors": [_fmt(f.xreplace({num.z: zname}), latex) for f in num.factors],
            "kept": num.kept,
            "reason": num.reason,
            "checks": list(num.checks),
            "reduced_system": {
                "unknowns": [str(g) for g in num.reduced.unknowns],
                "relations": [[str(g), _fmt(e, latex)] for g, e in num.reduced.relations],
                "equations": [_fmt(e, latex) for e in num.reduced.equations],
                "square_roots": [[str(t), _fmt(r, latex)] for t, r in num.reduced.roots],
            },
            "steps": list(num.steps),
            "timing_seconds": {k: round(v, 4) for k, v in num.timing.items()},
        }
        return json.dumps(data, indent=2)
    lines = [f"# {law.name}: {law.law}; {meaning}"]
    lines.append(f"Pi(g, {var}) = {show(num)} = 0")
    lines.append(f"  at {', '.join(f'{k} = {v}' for k, v in law.values().items())}; degree {num.degrees[0]} in g, "
                 f"{num.degrees[1]} in {var}")
    if sym is not None:
        lines.append(f"symbolic: {show(sym)} = 0")
        for s, e in sym.substitutions.items():
            lines.append(f"  where {s} = {_fmt(e, latex)}")
    else:
        lines.append(f"symbolic: not available ({sym_error})")
    for s, e in num.substitutions.items():
        lines.append(f"  numeric polynomial: {s} = {_fmt(e, latex)}")
    lines.append("")
    lines.append("factors of the eliminated polynomial:")
    for i, (f, c) in enumerate(zip(num.factors, num.checks)):
        mark = "*" if i == num.kept else " "
        lines.append(f" {mark} [{i}] {_fmt(f.xreplace({num.z: zname}), latex)}: {c}")
    lines.append(f"why: {num.reason}")
    lines.append("")
    lines.append("reduced system (after the linear relations, square roots as symbols):")
    red = num.reduced
    for g, e in red.relations:
        lines.append(f"  {g} = {_fmt(e, latex)}")
    for e in red.equations:
        lines.append(f"  {_fmt(e, latex)} = 0")
    for t, r in red.roots:
        lines.append(f"  {t}**2 = {_fmt(r, latex)}")
    lines.append("elimination steps:")
    lines.extend(f"  {s}" for s in num.steps)
    lines.append("time: " + ", ".join(f"{k} {v:.3f} s" for k, v in num.timing.items()))
    return "\n".join(lines)


def _is_rational(m):
    return isinstance(m, sympy.Basic) and m.is_Rational


def moments_report(law, k, exact=False, as_json=False, dps=15):
    """The moments ``m_1..m_k``: exact (``"p/q"``) or decimal strings.

    The moments come from the series of ``Π`` at infinity; when the
    elimination does not finish, from the series of the Dyson equation.

    Parameters
    ----------
    law : SpectralLaw
    k : int
    exact : bool
        Exact rationals written ``"p/q"`` (other exact numbers as sympy
        expressions); otherwise decimal strings with ``dps`` digits.
    as_json : bool
        ``{"moments": ["m1", ..., "mk"]}``.
    dps : int

    Examples
    --------
    >>> import freeprob as fp
    >>> print(moments_report(fp.law_of(fp.find_model("marchenko-pastur")), 3, exact=True, as_json=True))
    {"moments": ["1", "3/2", "11/4"]}
    >>> print(moments_report(fp.law_of(fp.find_model("marchenko-pastur")), 3, dps=5, as_json=True))
    {"moments": ["1.0000", "1.5000", "2.7500"]}
    """
    dps = check_dps(dps)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise FreeProbError(f"-k must be a positive number of moments, got {k!r}")
    try:
        ms = list(law.exact_moments(k))
        source = "the series of Pi at infinity"
    except EliminationError:
        try:
            ms = list(law.moments(k))
        except (ValueError, FreeProbError):
            if exact:
                raise FreeProbError(f"no exact moments for {law.name}: elimination failed and the "
                                    "coefficients are not algebraic") from None
            ms = list(law.moments(k, dps=dps))
        source = "the series of the Dyson equation at infinity"
    if exact and not all(isinstance(m, sympy.Basic) for m in ms):
        raise FreeProbError(f"no exact moments for {law.name}: elimination failed and the moments are not "
                            f"rational (an inverse); drop --exact for {dps} digits")
    return _moments_text(law.name, ms, exact, as_json, dps, source)


def _moments_text(name, ms, exact, as_json, dps, source):
    k = len(ms)
    if exact:
        out = [str(sympy.sympify(m)) for m in ms]
    else:
        ctx = context(dps + 10)
        out = [mp_to_str(to_mpf(ctx, sympy.re(m)) if isinstance(m, sympy.Basic) else m, dps) for m in ms]
    if as_json:
        return json.dumps({"moments": out})
    lines = [f"# {name}: moments m_1..m_{k} ({'exact' if exact else f'{dps} digits'}), from {source}"]
    lines += [f"m{i + 1} = {m}" for i, m in enumerate(out)]
    return "\n".join(lines)


def cmd_moments(args, out):
    """Handler of ``freeprob moments``."""
    model = model_of(args)
    if isinstance(model, CausalModel):
        raise DomainError(f"{model.name} is a causal-attention model: its exact values are its mean and its atom at "
                          f"0 (freeprob law {args.model} prints them); its higher moments are not computed exactly")
    if has_continuous_profile(model.expr):  # no law object: exact moments of discretized laws, extrapolated
        ms = profile_moments(model.expr, model.law_kind, model.ratios, args.k, model.params)
        source = f"discretized profiles on m x m cells (m = 1..{args.k + 3}), extrapolated exactly to m = oo"
        out.write(_moments_text(model.name, ms, args.exact, args.json, check_dps(args.dps), source) + "\n")
        return
    out.write(moments_report(law_of(model), args.k, exact=args.exact, as_json=args.json, dps=args.dps) + "\n")


def add_closedform_parsers(subparsers):
    """Add ``moments MODEL -k K [--exact] [--json] [--dps D] [--set NAME=VALUE]`` to ``subparsers``.

    Examples
    --------
    >>> import argparse, io
    >>> parser = argparse.ArgumentParser(prog="freeprob")
    >>> add_closedform_parsers(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["moments", "marchenko-pastur", "-k", "3", "--exact", "--json"])
    >>> buf = io.StringIO(); args.func(args, buf); buf.getvalue()
    '{"moments": ["1", "3/2", "11/4"]}\\n'
    """
    s = subparsers.add_parser("moments", help="exact moments from the algebraic equation of G")
    s.add_argument("model", help="a model file (.toml) or the name of a built-in model")
    s.add_argument("-k", type=integer_in(1, MAX_MOMENTS, "-k"), default=8, help="number of moments (default 8)")
    s.add_argument("--exact", action="store_true", help="exact rationals p/q instead of decimals")
    s.add_argument("--json", action="store_true")
    s.add_argument("--dps", type=integer_in(1, MAX_DPS, "--dps"), default=15, help="digits of decimal output (default 15)")
    s.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a dimension ratio or parameter")
    s.set_defaults(func=cmd_moments)
