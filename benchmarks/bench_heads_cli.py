"""Heads at scale, as a user runs them: the two commands of the issue at 64 heads against one head.

For the realistic allocation ``d_h = d_v = 1/(2H)``, ``d_out = 1/2`` the
model files are written by ``freeprob attention --emit`` (the indexed-sum
form, so the command reads H terms and the engine quotients them); then, in
one run and alternating, each command is timed as a fresh process:

* **first answer**: ``freeprob density FILE --at 0.5``;
* **whole law**: ``freeprob law FILE`` (support, atoms, moments, grid).

Figures are the best of ``--repeat`` runs, and ratios to the one-head model
(mha) measured in the same run. The issue's target: at most 3 at ``H = 64``
for mha, gqa:8 and mqa. Each process pays the same interpreter start and
imports; ``--in-process`` times the same two calls inside one interpreter
instead (no start-up, sympy's cache cleared before each call), which shows
the engine's own ratio.

Run: ``python benchmarks/bench_heads_cli.py [--heads 64] [--patterns mha,gqa:8,mqa] [--repeat 3] [--in-process]``.
"""

import argparse
import io
import os
import subprocess
import sys
import tempfile
import time

from sympy.core.cache import clear_cache

from freeprob.cli import main as cli

from _timing import load_text

COMMANDS = {"first answer": ["density", "{file}", "--at", "0.5"], "whole law": ["law", "{file}"]}


def emit(tmp, heads, pattern):
    path = os.path.join(tmp, f"h{heads}-{pattern.replace(':', '')}.toml")
    w = f"1/{2 * heads}"
    args = ["attention", "--heads", str(heads), "--pattern", pattern, "--dh", w, "--dv", w, "--dout", "1/2",
            "--emit", path]
    if cli(args, out=io.StringIO()):
        raise RuntimeError(f"freeprob {' '.join(args)} failed")
    return path


def timed(args, in_process):
    if in_process:
        clear_cache()
        t = time.perf_counter()
        code = cli(args, out=io.StringIO())
    else:
        t = time.perf_counter()
        code = subprocess.run([sys.executable, "-c", "import sys; from freeprob.cli import main; "
                               "sys.exit(main(sys.argv[1:]))", *args], capture_output=True).returncode
    dt = time.perf_counter() - t
    if code:
        raise RuntimeError(f"freeprob {' '.join(args)} failed with exit code {code}")
    return dt


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heads", default="64")
    ap.add_argument("--patterns", default="mha,gqa:8,mqa")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--in-process", action="store_true")
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="bench-heads-")
    configs = [(1, "mha")] + [(int(h), p) for h in args.heads.split(",") for p in args.patterns.split(",")]
    files = {c: emit(tmp, *c) for c in configs}
    if args.in_process:
        timed(["law", "wigner-semicircle"], True)  # one-off imports
    start = load_text()
    best = {(c, name): float("inf") for c in configs for name in COMMANDS}
    for _ in range(args.repeat):  # alternating, so that load drifts hit every configuration alike
        for c in configs:
            for name, cmd in COMMANDS.items():
                dt = timed([a.format(file=files[c]) for a in cmd], args.in_process)
                best[c, name] = min(best[c, name], dt)
    where = "in one process" if args.in_process else "fresh processes"
    print(f"best of {args.repeat}, {where}; ratio to H = 1 mha; {start} at the start, {load_text()} at the end")
    print(f"{'pattern':<8}{'H':>5}" + "".join(f"{name + ' s':>16}{'ratio':>7}" for name in COMMANDS))
    rows = []
    for c in configs:
        ratios = [best[c, name] / best[(1, "mha"), name] for name in COMMANDS]
        rows.append((c, [best[c, name] for name in COMMANDS], ratios))
        print(f"{c[1]:<8}{c[0]:>5}" + "".join(f"{best[c, name]:>16.3f}{r:>7.2f}" for name, r in zip(COMMANDS, ratios)))
    return rows


if __name__ == "__main__":
    main()
