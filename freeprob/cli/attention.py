"""The ``freeprob attention`` and ``freeprob equivalence`` subcommands.

::

    freeprob attention [--heads H] [--pattern P] [--beta B] [--l L] [--dh DH] [--dv DV] [--dout DO]
                       [--causal [--skip 1/10] [--plot FILE.png]] [--input-spectrum 1/4:1/2,7/4:1/2]
                       [--input-position generic|diagonal]
                       [--seq-len N] [--name NAME] [--emit FILE.toml]
    freeprob attention check [same options] [--sizes 375,750,1500,3000] [--reps R1,R2,...] [--seed S]
                             [--trim T] [--linear] [--json] [--plot FILE.png]
    freeprob attention compare [--heads 1,2,4,8] [--patterns mha,mqa,gqa:2,shared-v,tied-kv] [--beta B]
                               [--l L] [--dh DH] [--dv DV] [--dout DO] [--grid 200] [--points 3] [--dps 35]
                               [--mc-size 400] [--mc-reps 6] [--no-mc] [--no-allocation] [--seed S]
                               [--input-spectrum 1/4:1/2,7/4:1/2] [--input-position generic|diagonal]
                               [--json] [--plot FILE.png]
    freeprob attention sweep [--heads 1,2,4,8 | --heads 1:128] [--width 1/2[,1,...]] [--pattern P] [--beta B]
                             [--l L] [--dh DH | --dv DV] [--dout DO] [--at X,...] [--moments 4] [--grid 400]
                             [--dps D] [--workers N | --scheduler ADDRESS]
                             [--input-spectrum 1/4:1/2,7/4:1/2] [--input-position generic|diagonal]
                             [--json] [--plot FILE.png]
    freeprob equivalence "exp(beta*x - beta**2/2)" [--set beta=1] [--dps 30]

A pattern may carry a value coupling, ``--pattern mha+kv-gaussian:1:0`` (values
``V_h = A K_h M_h/sqrt(l) + B V'_h``, :class:`freeprob.attention.ValueCoupling`),
and ``compare --patterns`` takes such patterns among the others.
``--causal`` (the causal mask, independent heads) prints the law without the
first ``--skip`` tokens (default 1/10; the law of all rows has no finite
moment) and ``--plot`` draws its density; ``--causal --emit FILE.toml`` writes
it as a model file (``model = "causal-attention"``, for ``freeprob law``,
``density`` and ``check``); ``check --causal`` compares it with real causal
softmax at several lengths (docs/causal.md).
``--input-spectrum`` gives real inputs (token covariance of that spectrum,
docs/attention.md "Real inputs"), to every configuration of ``check``,
``compare`` and ``sweep`` too; ``--input-position diagonal`` is refused
with its Monte-Carlo evidence.
Options of ``check``, ``compare`` and ``sweep`` follow the subcommand name.
Sizes are ratios (``--dh 1/2``); ``--dv`` defaults to ``--dh``. Without
``--emit``, ``freeprob attention`` prints the model file. ``check``,
``compare`` and ``sweep`` show a progress bar (tqdm) on standard error only
when it is a terminal and ``--json`` is not given: output for a file, a pipe
or a program carries no progress.
"""

import argparse
import json
import sys

from tqdm import tqdm

from .. import DomainError, FreeProbError
from .._numbers import read_number
from ..attention import (
    CAUSAL_SIZES,
    DEFAULT_HEADS,
    MAX_HEADS,
    MAX_SWEEP_MOMENTS,
    attention_config,
    attention_sweep,
    causal_attention_law,
    check_attention,
    check_regime,
    command_line_report,
    compare_patterns,
    emit_causal_model,
    emit_model,
    head_counts,
    model_text,
    plot_causal,
    plot_check,
)
from .causal import causal_summary, run_causal_check
from .common import MAX_DPS, MAX_GRID, integer_in, json_default, point_list, progress_bar, wants_progress

__all__ = [
    "add_attention_parsers",
    "cmd_attention",
    "cmd_attention_check",
    "cmd_attention_compare",
    "cmd_attention_sweep",
    "cmd_equivalence",
]


def _config_args(p, suppress):
    """The configuration options; ``suppress``: no defaults (inherit the parent's)."""
    d = (lambda v: argparse.SUPPRESS) if suppress else (lambda v: v)
    p.add_argument("--heads", type=int, default=d(1), help="number of heads H (default 1)")
    p.add_argument("--pattern", default=d("mha"),
                   help="mha, mqa, gqa:G, shared-v, tied-kv (tied-qk is refused), optionally +kv-identity:A:B or "
                        "+kv-gaussian:A:B: values V_h = A K_h M_h/sqrt(l) + B V'_h (M_h = I or Gaussian)")
    p.add_argument("--beta", default=d("1"), help="inverse temperature (default 1)")
    p.add_argument("--l", default=d("1"), help="ratio of the sequence length (default 1)")
    p.add_argument("--dh", default=d("1/2"), help="ratio of the query/key width per head (default 1/2)")
    p.add_argument("--dv", default=d(None), help="ratio of the value width per head (default: --dh)")
    p.add_argument("--dout", default=d("1/2"), help="ratio of the output width (default 1/2)")
    p.add_argument("--causal", action="store_true", default=d(False),
                   help="causal mask (query i attends to keys j <= i), independent heads: the law without the "
                        "first --skip tokens, see docs/causal.md")
    p.add_argument("--skip", default=d(None),
                   help="with --causal: the fraction of first tokens left out (default 1/10; the law of all rows "
                        "has no finite moment)")
    _input_args(p, suppress)


def _input_args(p, suppress):
    """``--input-spectrum`` and ``--input-position`` (real inputs); ``suppress``: inherit the parent's defaults."""
    d = (lambda v: argparse.SUPPRESS) if suppress else (lambda v: v)
    p.add_argument("--input-spectrum", default=d(None), metavar="VALUE:WEIGHT,...",
                   help="real inputs: the spectrum of the token covariance X X^T, e.g. 1/4:1/2,7/4:1/2 "
                        "(weights sum to 1, values positive; default: orthonormal inputs)")
    p.add_argument("--input-position", choices=("generic", "diagonal"), default=d("generic"),
                   help="eigenvectors of the token covariance: generic (Haar, default) or diagonal (aligned with "
                        "the tokens: refused with the Monte-Carlo evidence, see docs/attention.md)")


def _ints(text, what):
    try:
        vals = [int(t) for t in str(text).split(",") if t.strip()]
    except ValueError:
        raise DomainError(f"{what} expects comma-separated integers, got {text!r}") from None
    if not vals:
        raise DomainError(f"{what} expects at least one integer, got {text!r}")
    return vals


def _list_type(flag):
    """An argparse type: a comma-separated list without empty items (the values are read later, exactly)."""

    def read(text):
        items = [t.strip() for t in text.split(",")]
        if not all(items):
            raise argparse.ArgumentTypeError(f"{flag} expects comma-separated values, got {text!r}")
        return text

    read.__name__ = flag
    return read


def _ratios(args):
    return {"l": args.l, "d_h": args.dh, "d_v": args.dv, "d_out": args.dout}


def _inputs(args):
    """The real-input keywords of a configuration (``--input-spectrum``, ``--input-position``)."""
    return {"input_spectrum": args.input_spectrum, "input_position": args.input_position}


def _causal_law(args):
    """The causal law of ``--causal`` (independent heads, orthonormal inputs), or DomainError naming what does not
    apply."""
    extra = []
    if getattr(args, "seq_len", None) is not None:
        extra.append("--seq-len (the causal summary prints its regime)")
    if getattr(args, "trim", None) is not None:
        extra.append("--trim (the causal check uses Stieltjes statistics, no moments)")
    if str(args.pattern).strip().lower() != "mha":
        extra.append(f"--pattern {args.pattern}")
    if args.input_spectrum is not None:
        extra.append("--input-spectrum")
    if args.input_position != "generic":
        extra.append(f"--input-position {args.input_position}")
    if extra:
        raise DomainError(f"--causal is solved for independent heads (--pattern mha) with orthonormal inputs "
                          f"(docs/causal.md); drop {', '.join(extra)}")
    l = read_number(args.l, what="--l", positive=True)
    d_h = read_number(args.dh, what="--dh", positive=True)
    d_v = d_h if args.dv is None else read_number(args.dv, what="--dv", positive=True)
    d_out = read_number(args.dout, what="--dout", positive=True)
    skip = "1/10" if args.skip is None else args.skip
    return causal_attention_law(args.beta, skip, d_h=d_h / l, d_v=d_v / l, d_out=d_out / l, heads=args.heads)


def _skip_needs_causal(args):
    if not args.causal and args.skip is not None:
        raise DomainError("--skip applies to the causal law: give --causal as well")


def cmd_attention(args, out):
    """``freeprob attention``: print or write (``--emit``) the Gaussian-equivalent model file; with ``--causal`` the
    summary of the causal law (``--plot`` its density)."""
    _skip_needs_causal(args)
    if args.causal:
        law = _causal_law(args)
        if args.emit:
            model = emit_causal_model(args.emit, law, name=args.name)
            out.write(f"wrote {args.emit}: model {model.name} (causal attention, a named model: its law is "
                      f"solved by the cell equation of docs/causal.md, section 6); "
                      f"use it with: freeprob density|law|check {args.emit}\n")
        else:
            out.write(causal_summary(law))
        if args.plot:
            plot_causal(law, args.plot)
            out.write(f"wrote {args.plot}\n")
        return 0
    if args.plot:
        raise DomainError("--plot draws the causal law's density: give --causal, or use freeprob attention check "
                          "--plot for the check's figure")
    cfg = attention_config(args.heads, args.pattern, args.beta, **_ratios(args), causal=args.causal,
                           **_inputs(args))
    if args.seq_len is not None:
        check_regime(cfg.score_beta, args.seq_len, head_dim=max(1, round(args.seq_len * cfg.d_h / cfg.l)),
                     name=cfg.score_beta_name)
    else:
        check_regime(cfg.score_beta, name=cfg.score_beta_name)
    if args.emit:
        # the full pattern (cfg.spec, with its value coupling) and the inputs: the file is the configuration
        model = emit_model(args.emit, cfg.heads, cfg.spec, cfg.beta, name=args.name, l=cfg.l, d_h=cfg.d_h,
                           d_v=cfg.d_v, d_out=cfg.d_out, input_spectrum=cfg.input_spectrum,
                           input_position=cfg.input_position)
        gaussians = sum(m.kind == "gaussian" for m in model.expr.leaves())
        out.write(f"wrote {args.emit}: model {model.name} ({gaussians} Gaussian matrices in its Gaussian "
                  f"equivalent, the softmax noise included); "
                  f"use it with: freeprob equations|density|law|check {args.emit}\n")
    else:
        out.write(model_text(cfg, args.name))
    return 0


def cmd_attention_check(args, out):
    """``freeprob attention check``: the multi-size real-softmax report (``--causal``: of the causal law)."""
    reps = _ints(args.reps, "--reps") if args.reps else None
    _skip_needs_causal(args)
    if args.causal:
        law = _causal_law(args)
        sizes = CAUSAL_SIZES if args.sizes_given is None else _ints(args.sizes_given, "--sizes")
        return run_causal_check(args, out, law, sizes, reps)
    sizes = _ints("375,750,1500,3000" if args.sizes_given is None else args.sizes_given, "--sizes")
    tick, close = progress_bar(wants_progress(args), "softmax samples", unit="size")
    try:
        rep = check_attention(args.heads, args.pattern, args.beta, **_ratios(args), sizes=sizes, reps=reps,
                              seed=args.seed, trim=3 if args.trim is None else args.trim, linear=args.linear,
                              progress=tick,
                              causal=args.causal, **_inputs(args))
    finally:
        close()
    if args.plot:
        plot_check(rep, args.plot)
    if args.json:
        out.write(json.dumps(rep.as_dict(), indent=2, default=json_default) + "\n")
    else:
        out.write(rep.text() + "\n")
    return 0 if rep.passed else 1


def cmd_attention_compare(args, out):
    """``freeprob attention compare``: the sharing-pattern and head-allocation study."""
    heads = _ints(args.heads, "--heads")
    patterns = [p.strip() for p in args.patterns.split(",") if p.strip()]
    if not patterns:
        raise DomainError(f"--patterns expects a comma-separated list, got {args.patterns!r}")
    tick, close = progress_bar(wants_progress(args), "compare", unit="step")

    def say(line):
        if "skipped" in line and not args.json:  # a configuration left out is part of the answer, not progress
            tqdm.write(line, file=sys.stderr)
        tick(line)

    try:
        rep = compare_patterns(heads, patterns, args.beta, l=args.l, d_h=args.dh, d_v=args.dv, d_out=args.dout,
                               grid=args.grid, points=args.points, dps=args.dps,
                               mc_size=0 if args.no_mc else args.mc_size, mc_reps=args.mc_reps, seed=args.seed,
                               allocation=not args.no_allocation, progress=say, **_inputs(args))
    finally:
        close()
    if args.plot:
        rep.plot(args.plot)
    if args.json:
        out.write(json.dumps(rep.as_dict(), indent=2, default=json_default) + "\n")
    else:
        out.write(rep.text() + "\n")
    bad = [r for r in rep.rows if r["verdict"] == "undecided" or (r.get("mc") or {}).get("verdict") == "CONTRADICTS"]
    return 1 if bad else 0


def _progress_bars(enabled):
    """``(tick, close)``: one tqdm bar per stage of a sweep on standard error, ticking per configuration."""
    bars = {}
    names = {"laws": "laws", "grid": "common grid"}

    def tick(stage, done, total, label):
        if not enabled:
            return
        bar = bars.get(stage)
        if bar is None:
            bar = bars[stage] = tqdm(total=total, desc=names.get(stage, stage), unit="config", file=sys.stderr,
                                     leave=False, dynamic_ncols=True, mininterval=0)
        bar.set_postfix_str(label, refresh=False)
        bar.update(1)

    def close():
        for bar in bars.values():
            bar.close()

    return tick, close


def cmd_attention_sweep(args, out):
    """``freeprob attention sweep``: the law over head counts at a fixed total width, or over widths."""
    tick, close = _progress_bars(wants_progress(args))
    try:
        result = attention_sweep(args.heads, args.pattern, args.beta, width=args.width, l=args.l, d_h=args.dh,
                                 d_v=args.dv, d_out=args.dout, at=args.at or (), moments=args.moments, grid=args.grid,
                                 dps=args.dps, workers=args.workers, scheduler=args.scheduler, progress=tick,
                                 **_inputs(args))
    finally:
        close()
    if args.plot:
        result.plot(args.plot)
    if args.json:
        out.write(json.dumps(result.as_dict(), indent=2) + "\n")
    else:
        out.write(result.table() + "\n")
    return 0


def _heads_type(text):
    """``--heads`` of a sweep: powers of two up to 128, as a list or ``A:B`` (argparse refuses the rest)."""
    try:
        return head_counts(text)
    except FreeProbError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("heads: ")) from None


def cmd_equivalence(args, out):
    """``freeprob equivalence``: Gaussian-equivalent coefficients of a nonlinearity."""
    params = {}
    for item in args.set or []:
        if "=" not in item:
            raise DomainError(f"--set expects NAME=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        params[k.strip()] = v.strip()
    out.write(command_line_report(args.nonlinearity, params or None, dps=args.dps) + "\n")
    return 0


def add_attention_parsers(subparsers):
    """Add ``attention`` (with ``check`` and ``compare``) and ``equivalence`` to ``freeprob``'s subparsers.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        What ``ArgumentParser.add_subparsers()`` returned; each command sets
        ``func`` to a handler ``(args, out) -> exit code``.

    Examples
    --------
    >>> import argparse, io
    >>> parser = argparse.ArgumentParser(prog="freeprob")
    >>> add_attention_parsers(parser.add_subparsers(dest="command", required=True))
    >>> args = parser.parse_args(["attention", "--heads", "2", "--pattern", "mqa"])
    >>> buf = io.StringIO()
    >>> args.func(args, buf)
    0
    >>> [line for line in buf.getvalue().splitlines() if line.startswith("name =")]
    ['name = "attention-mqa-h2"']
    """
    p = subparsers.add_parser(
        "attention", help="multi-head attention: emit the Gaussian-equivalent model, check it, compare patterns",
        description="Gaussian-equivalent law of centered multi-head softmax attention, "
                    "Y = sum_h sqrt(l)(A_h - 11^T/l) V_h W_h (see freeprob.attention.model).")
    _config_args(p, suppress=False)
    p.add_argument("--seq-len", type=integer_in(1, 10**12, "--seq-len"),
                   help="check the regime of validity at this sequence length")
    p.add_argument("--name", help="model name (default attention-<pattern>-h<H>)")
    p.add_argument("--emit", metavar="FILE.toml", help="write the model file here (default: print it)")
    p.add_argument("--plot", metavar="FILE.png", help="with --causal: draw the density of the causal law")
    p.set_defaults(func=cmd_attention)
    sub = p.add_subparsers(dest="attention_command", metavar="{check,compare,sweep}")

    c = sub.add_parser("check", help="real softmax at several sizes, extrapolated, against the law")
    _config_args(c, suppress=True)
    c.add_argument("--sizes", default=None, dest="sizes_given",
                   help="scales N (at least 3; default 375,750,1500,3000; with --causal the lengths l, default "
                        "250,500,1000,2000)")
    c.add_argument("--reps", help="replicates per size (default max(4, round(6 N_max/N)); with --causal "
                                  "max(4, round(4 l_max/l)))")
    c.add_argument("--seed", type=integer_in(0, 2**63 - 1, "--seed"), default=0)
    c.add_argument("--trim", type=int, default=None,
                   help="largest values left out of the moments (default 3; not with --causal, whose check uses "
                        "Stieltjes statistics)")
    c.add_argument("--linear", action="store_true", help="sample the Gaussian-equivalent surrogate (control)")
    c.add_argument("--json", action="store_true")
    c.add_argument("--plot", metavar="FILE.png")
    c.set_defaults(func=cmd_attention_check)

    m = sub.add_parser("compare", help="which sharing patterns preserve the law of independent heads")
    m.add_argument("--heads", default="1,2,4,8", help="head counts (default 1,2,4,8)")
    m.add_argument("--patterns", default="mha,mqa,gqa:2,shared-v,tied-kv",
                   help="comma-separated patterns, value couplings included (kv-gaussian:1:0, mqa+kv-identity:3/5:4/5)")
    m.add_argument("--beta", default="1")
    m.add_argument("--l", default="1")
    m.add_argument("--dh", default="1/2")
    m.add_argument("--dv", default=None)
    m.add_argument("--dout", default="1/2")
    m.add_argument("--grid", type=integer_in(2, MAX_GRID, "--grid"), default=200, help="double-precision grid points per law (default 200)")
    m.add_argument("--points", type=integer_in(1, 100, "--points"), default=3, help="high-precision comparison points (default 3)")
    m.add_argument("--dps", type=integer_in(1, MAX_DPS, "--dps"), default=35, help="digits of each high-precision density (default 35)")
    m.add_argument("--mc-size", type=integer_in(40, 8000, "--mc-size"), default=400, help="real-softmax confirmation size N (and N/2)")
    m.add_argument("--mc-reps", type=integer_in(3, 1000, "--mc-reps"), default=6)
    m.add_argument("--no-mc", action="store_true", help="skip the Monte-Carlo confirmation")
    m.add_argument("--no-allocation", action="store_true", help="skip the head-allocation and width studies")
    m.add_argument("--seed", type=integer_in(0, 2**63 - 1, "--seed"), default=0)
    _input_args(m, suppress=True)
    m.add_argument("--json", action="store_true")
    m.add_argument("--plot", metavar="FILE.png")
    m.set_defaults(func=cmd_attention_compare)

    w = sub.add_parser("sweep", help="the law over head counts at a fixed total width, or over widths",
                       description="Sweep the Gaussian-equivalent attention law over head counts H at a fixed total "
                                   "width W (d_h = d_v = W/H), or over W at a fixed H: support edges, moments, "
                                   "densities at points and distances between consecutive laws on a common grid.")
    w.add_argument("--heads", type=_heads_type, default=DEFAULT_HEADS,
                   help=f"head counts: powers of two up to {MAX_HEADS}, comma-separated, or A:B for every power "
                        f"of two from A to B (default {','.join(map(str, DEFAULT_HEADS))})")
    w.add_argument("--width", type=_list_type("--width"), default="1/2",
                   help="total width W = H d_h (comma-separated to sweep it at one H; default 1/2)")
    w.add_argument("--pattern", default="mha", help="mha, mqa, gqa:G (rows with H not divisible by G are skipped), "
                                                   "shared-v, tied-kv")
    w.add_argument("--beta", default="1", help="inverse temperature (default 1)")
    w.add_argument("--l", default="1", help="ratio of the sequence length (default 1)")
    fix = w.add_mutually_exclusive_group()
    fix.add_argument("--dh", default=None, help="fix d_h; then only d_v = W/H is allocated")
    fix.add_argument("--dv", default=None, help="fix d_v; then only d_h = W/H is allocated")
    w.add_argument("--dout", default="1/2", help="ratio of the output width (default 1/2)")
    w.add_argument("--at", type=point_list, help="comma-separated points for the density column(s)")
    w.add_argument("--moments", type=integer_in(0, MAX_SWEEP_MOMENTS, "--moments"), default=4,
                   help="moments m_1..m_K per row (default 4)")
    w.add_argument("--grid", type=integer_in(2, MAX_GRID, "--grid"), default=400,
                   help="points of the common density grid (default 400)")
    w.add_argument("--dps", type=integer_in(1, MAX_DPS, "--dps"),
                   help="verified digits of the edges and point densities (default: double precision)")
    run = w.add_mutually_exclusive_group()
    run.add_argument("--workers", type=integer_in(1, 256, "--workers"),
                     help="local processes (default: one per configuration, up to the number of cores)")
    run.add_argument("--scheduler", metavar="ADDRESS",
                     help="run on this Dask scheduler (tcp://host:8786); needs pip install 'freeprob[cluster]'")
    _input_args(w, suppress=True)
    w.add_argument("--json", action="store_true")
    w.add_argument("--plot", metavar="FILE.png", help="densities overlaid, colored by H or W")
    w.set_defaults(func=cmd_attention_sweep)

    e = subparsers.add_parser("equivalence", help="Gaussian-equivalent coefficients of an entrywise nonlinearity")
    e.add_argument("nonlinearity", help='e.g. "exp(beta*x - beta**2/2)"')
    e.add_argument("--set", action="append", metavar="NAME=VALUE", help="parameter value")
    e.add_argument("--dps", type=integer_in(1, MAX_DPS, "--dps"), default=30)
    e.set_defaults(func=cmd_equivalence)
