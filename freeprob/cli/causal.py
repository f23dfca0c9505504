"""Causal attention on the command line.

``freeprob law|density|check MODEL`` for a model file with
``model = "causal-attention"`` (the built-in ``attention-causal``), and the
summary and check of ``freeprob attention --causal``. The law is
:class:`freeprob.CausalLaw`: its values carry the error estimate of the
extrapolation in the number of cells, printed as for a variance-profile
model (:mod:`freeprob.cli.discretized`); its exact values are the mean and the
atom at 0, so ``--moments`` is refused. ``check`` compares the law with real
causal softmax at several lengths (:func:`freeprob.attention.check_causal`):
``--n N`` is the largest length (lengths ``N/8, N/4, N/2, N``; default 250,
500, 1000, 2000) and ``--reps R`` the replicates at the largest length
(``R l_max / l`` at length ``l``; default 4).
"""

import json
import math

from .. import ConvergenceError, DomainError, RegimeError, causal_law_of
from ..attention import CAUSAL_SIZES, REGIME_REFUSE, check_causal, plot_causal
from .common import json_default, progress_bar, wants_progress
from .discretized import cmd_discretized_density, cmd_discretized_law

__all__ = ["causal_summary", "cmd_causal_check", "cmd_causal_density", "cmd_causal_law", "regime_line",
           "run_causal_check"]

#: The smallest ``--n`` of a causal check (its smallest length ``N/8`` is at least 40).
MIN_CHECK_LENGTH = 320
#: The largest ``--n`` (the largest length of a sample).
MAX_CHECK_LENGTH = 8000


def regime_line(law):
    """When real causal softmax approaches ``law``: the length of the shortest row kept against ``exp(2 beta^2)``."""
    tokens = math.exp(2 * float(law.beta) ** 2)
    return (f"regime: real causal softmax approaches this law as l grows when skip * l >> exp(2 beta^2) = "
            f"{tokens:.4g} tokens, the length of the shortest row kept (l >> {tokens / float(law.skip):.4g}); "
            f"freeprob attention check --causal compares them")


def causal_summary(law):
    """The text of ``freeprob attention --causal``: exact mean and atom, support, densities, ``G``, regime."""
    support = law.support()
    mean = law.mean()
    mu = float(mean)

    def edge(e):
        return _with_error(float(e.value), float(e.error)) if e.error > 0 else _fmt_float(e.value)

    pieces = ", ".join(f"[{edge(a)}, {edge(b)}]" for a, b in support)
    worst = max((max(float(a.error), float(b.error)) for a, b in support), default=0.0)
    lines = [f"{law!r}",
             "the law of the squared singular values of causal attention's Gaussian equivalent, "
             "sum_h sqrt(l)(A_h - M) V_h W_h over its last (1 - skip) l rows (M the Cesaro mean; docs/causal.md, "
             "section 6)",
             f"mean (exact)            {mean} = {_fmt_float(mu)}",
             f"atom at 0 (exact)       {law.atom_mass()}",
             f"support                 {pieces}  (edges +- {worst:.2g} at most, "
             f"extrapolated from {', '.join(map(str, law.cells))} cells)"]
    for c in (0.25, 0.5, 1.0, 2.0):
        x = c * mu
        try:
            d = law.density(x)
        except ConvergenceError as exc:
            lines.append(f"density at {x:<12.6g} not verified ({exc})")
            continue
        lines.append(f"density at {x:<12.6g} {_with_error(d.value, d.error)}  (+- {d.error:.1e})")
    z = complex(mu, mu / 2)
    g = law.cauchy(z)
    re, im = _with_error(g.value.real, g.error), _with_error(abs(g.value.imag), g.error)
    lines.append(f"G({z.real:.6g}{z.imag:+.6g}i)    {re} {'-' if g.value.imag < 0 else '+'} {im}i  "
                 f"(+- {g.error:.1e})")
    lines.append(regime_line(law))
    return "\n".join(lines) + "\n"


def _fmt_float(x):
    return f"{float(x):.10g}"


def _with_error(value, error):
    """``value`` with the digits its error estimate supports (one beyond the first uncertain one)."""
    if error <= 0:
        return f"{value:.15g}"
    if not abs(value) > error:
        return "0"
    return f"{value:.{max(1, min(15, math.floor(math.log10(abs(value) / error)) + 2))}g}"


def cmd_causal_law(args, out, model):
    """``freeprob law MODEL`` for a causal-attention model."""
    if args.moments is not None:
        raise DomainError(f"{model.name}: the exact values of the causal law are its mean and its atom at 0, "
                          f"printed by freeprob law; its higher moments are not computed exactly: drop --moments")
    law = causal_law_of(model)
    mean = law.mean()
    atom = law.atom_mass()
    data = {"mean": {"exact": str(mean), "value": repr(float(mean))}, "atom_at_0": str(atom)}
    lines = [f"mean:    {mean} = {_fmt_float(mean)} (exact)", f"atom:    {atom} at 0 (exact)",
             f"# {regime_line(law)}"]
    return cmd_discretized_law(args, out, model, law, summary=(data, lines))


def cmd_causal_density(args, out, model):
    """``freeprob density MODEL --at ...`` for a causal-attention model."""
    return cmd_discretized_density(args, out, model, causal_law_of(model))


def run_causal_check(args, out, law, sizes, reps):
    """Run :func:`~freeprob.attention.check_causal` with a progress bar, draw ``--plot``, print the report.

    Returns the exit code: 0 when the check passed, 1 when it failed.
    """
    tick, close = progress_bar(wants_progress(args), "causal softmax samples", unit="size")
    try:
        rep = check_causal(law.beta, law.skip, d_h=law.ratios["d_h"], d_v=law.ratios["d_v"],
                           d_out=law.ratios["d_out"], heads=law.heads, sizes=sizes, reps=reps, seed=args.seed,
                           linear=getattr(args, "linear", False), progress=tick)
    finally:
        close()
    if args.plot:
        plot_causal(law, args.plot, rep)
    out.write((json.dumps(rep.as_dict(), indent=2, default=json_default) if args.json else rep.text()) + "\n")
    return 0 if rep.passed else 1


def cmd_causal_check(args, out, model):
    """``freeprob check MODEL`` for a causal-attention model: real causal softmax at four lengths."""
    law = causal_law_of(model)
    if args.n is None:
        sizes = CAUSAL_SIZES
    elif args.n < MIN_CHECK_LENGTH:
        raise DomainError(f"--n {args.n}: for a causal-attention model --n is the largest length l of the check "
                          f"(lengths N/8, N/4, N/2, N, the smallest at least 40): give at least {MIN_CHECK_LENGTH}")
    else:
        sizes = tuple(round(args.n / k) for k in (8, 4, 2, 1))
    reps = None if args.reps is None else tuple(max(args.reps, round(args.reps * max(sizes) / n)) for n in sizes)
    try:
        return run_causal_check(args, out, law, sizes, reps)
    except RegimeError as exc:
        # the check refuses when exp(2 beta^2) exceeds REGIME_REFUSE times the first row kept at l_min = N/8
        target = math.exp(2 * float(law.beta) ** 2) / REGIME_REFUSE
        skip = float(law.skip)
        need = next((n for n in range(MIN_CHECK_LENGTH, MAX_CHECK_LENGTH + 1) if round(skip * round(n / 8)) >= target),
                    None)
        hint = (f"with freeprob check, --n N sets the largest length (the smallest is N/8): give --n {need} or more"
                if need is not None else
                f"that needs --n near {8 * target / skip:.3g}, beyond the largest {MAX_CHECK_LENGTH}: give a smaller "
                f"beta or a larger skip")
        raise RegimeError(f"{exc}; {hint}") from None
