"""``freeprob law`` against one Monte-Carlo sample: figures measured in one run (machines are noisy).

For each model: the whole ``freeprob law MODEL`` command (a fresh law: the
reduction, support, atoms, moments and the printed grid, by default and with
a 1000-point ``--grid`` over the same span) against one Monte-Carlo sample of
the same model at ``N = 2000`` (``freeprob``'s own sampler: the matrix and its
eigenvalues or singular values; the shortest of two). Models: the one-head
attention model of the issue (``beta = 7/10``, widths 1/2), Marchenko-Pastur
and every model shipped in ``models/``. A ratio at most 1 meets the target.

Each ``law`` is timed after a warm-up command on another model (so one-off
imports are not counted) and with sympy's cache cleared.

Run: ``python benchmarks/bench_law.py [--models a,b]``.
"""

import argparse
import io
import json
import os
import tempfile
import time

import numpy as np
from sympy.core.cache import clear_cache

import freeprob as fp
from freeprob.cli import main as cli

from _timing import best_of, engine_models, load_text

ISSUE_MODEL = "attention h1 beta=7/10"


def _law_command(spec, grid=None):
    """Seconds of ``freeprob law`` on ``spec`` (a model file path or name), and its JSON."""
    out = io.StringIO()
    args = ["law", spec, "--json"] + (["--grid", grid] if grid else [])
    clear_cache()
    t = time.perf_counter()
    code = cli(args, out=out)
    dt = time.perf_counter() - t
    if code:
        raise RuntimeError(f"freeprob law {spec} failed with exit code {code}")
    return dt, json.loads(out.getvalue())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=None, help="comma-separated built-in names (default: all, and the issue's model)")
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="bench-law-")
    issue = os.path.join(tmp, "attention-h1-beta0.7.toml")
    fp.attention.emit_model(issue, 1, "mha", "7/10", d_h="1/2", d_v="1/2", d_out="1/2")
    specs = [(ISSUE_MODEL, issue)] + [(n, n) for n in (args.models.split(",") if args.models else engine_models())]
    _law_command("wigner-semicircle")  # warm-up: one-off imports
    rng = np.random.default_rng(0)
    start = load_text()
    rows = []
    for label, spec in specs:
        law = fp.law_of(fp.find_model(spec))
        try:
            t_mc = best_of(lambda: fp.sample_spectrum(law, 2000, rng), repeat=2)
        except fp.DomainError as exc:  # a sample at N = 2000 that would not fit in memory is refused
            print(f"{label}: no Monte-Carlo sample at N = 2000 ({exc}); skipped")
            continue
        t_law, data = _law_command(spec)
        xs = [float(g["x"]) for g in data["grid"]]
        t_law1000, _ = _law_command(spec, f"{xs[0]}:{xs[-1]}:1000")
        rows.append((label, t_law, t_law1000, t_mc, data["support"], data["atoms"]))
    print(f"{start} at the start, {load_text()} at the end")
    print(f"{'model':<26}{'law s':>8}{'law 1000 s':>12}{'MC N=2000 s':>13}{'ratio':>8}{'ratio 1000':>12}  support; atoms")
    for label, a, a1000, b, sup, atoms in rows:
        at = ", ".join(f"{x['mass']} at {x['x']}" for x in atoms) or "none"
        print(f"{label:<26}{a:>8.3f}{a1000:>12.3f}{b:>13.3f}{a / b:>8.2f}{a1000 / b:>12.2f}  "
              f"{'; '.join('[' + ', '.join(iv) + ']' for iv in sup)}; {at}")
    return rows


if __name__ == "__main__":
    main()
