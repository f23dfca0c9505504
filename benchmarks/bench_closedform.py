"""Closed-form benchmark: figures measured in one run (machines are noisy, so ratios matter).

* elimination time of every built-in model, numeric values and symbolic
  ratios, with python-flint resultants and factorizations, and the same
  numeric elimination with sympy's (the ratio says what flint buys);
* the density on a grid of points inside the support: by branch tracking on
  ``Π`` at 15 and 30 digits against the Dyson route at the same precision
  (``law.density(x, dps)`` per point) and against the vectorized
  double-precision Dyson grid (``law.density_fast``).

Run: ``python benchmarks/bench_closedform.py [--points N] [--models a,b]``.
"""

import argparse
import time

import numpy as np

import freeprob as fp
from freeprob.scalar.closedform import cauchy_polynomial, polynomial_density, polynomial_support
from freeprob.scalar.elimination import eliminate
from freeprob.law import POLYNOMIAL_MAX_UNKNOWNS

from _timing import engine_models


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def elimination_rows(names):
    rows = []
    for name in names:
        law = fp.law_of(fp.find_model(name))  # fresh: nothing cached
        t_num, cp = timed(lambda: cauchy_polynomial(law))
        t_sym, cps = timed(lambda: cauchy_polynomial(law, symbolic=True))
        # stage 3 only (resultants, factorizations, checks at the Dyson solution)
        t_flint = eliminate(fp.law_of(fp.find_model(name)), backend="flint").times["resultants"]
        try:
            t_sympy = eliminate(fp.law_of(fp.find_model(name)), backend="sympy", budget_seconds=120).times["resultants"]
        except fp.EliminationError:
            t_sympy = float("nan")
        rows.append((name, cp.degrees, t_num, cps.degrees, t_sym, t_flint, t_sympy))
    print("\nelimination (seconds; 'numeric' and 'symbolic' are whole calls with the factor checks; "
          "'flint' and 'sympy' the resultant stage alone with each backend)")
    print(f"{'model':<24}{'deg g,z':>9}{'numeric':>10}{'symbolic':>10}{'flint':>9}{'sympy':>9}{'sympy/flint':>13}")
    for name, deg, tn, degs, ts, tf, tp in rows:
        print(f"{name:<24}{str(deg):>9}{tn:>10.3f}{ts:>10.3f}{tf:>9.3f}{tp:>9.3f}{tp / tf:>13.1f}")
    return rows


def density_rows(names, points):
    rows = []
    for name in names:
        law = fp.law_of(fp.find_model(name))
        cauchy_polynomial(law)
        (a, b), = [(float(x), float(y)) for x, y in polynomial_support(law, 15)][:1]
        xs = np.linspace(a, b, points + 2)[1:-1]
        law.density_fast(xs[:2])
        polynomial_density(law, xs[0], 15)
        t_fast, _ = timed(lambda: law.density_fast(xs))
        out = [name, t_fast]
        for dps in (15, 30):
            t_poly, dp = timed(lambda: [polynomial_density(law, float(x), dps) for x in xs])
            t_dys, dd = timed(lambda: [law.density(float(x), dps) for x in xs])
            worst = max(abs(u - v) / max(1, abs(v)) for u, v in zip(dp, dd))
            out += [t_poly, t_dys, float(worst)]  # relative difference, to compare with 10^-dps
        rows.append(out)
    print(f"\ndensity on {points} points inside the support (seconds; ratios measured in this run)")
    print(f"{'model':<24}{'fast grid':>10}{'Pi 15':>9}{'Dyson 15':>10}{'Pi/Dyson':>10}{'Pi/fast':>9}"
          f"{'Pi 30':>9}{'Dyson 30':>10}{'Pi/Dyson':>10}{'diff 15':>10}{'diff 30':>10}")
    for name, tf, p15, d15, w15, p30, d30, w30 in rows:
        print(f"{name:<24}{tf:>10.4f}{p15:>9.3f}{d15:>10.3f}{p15 / d15:>10.2f}{p15 / tf:>9.0f}"
              f"{p30:>9.3f}{d30:>10.3f}{p30 / d30:>10.2f}{w15:>10.1e}{w30:>10.1e}")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=40)
    ap.add_argument("--models", default=None,
                    help="comma-separated names (default: every built-in model small enough to eliminate)")
    args = ap.parse_args(argv)
    if args.models:
        names = args.models.split(",")
    else:
        # the models whose support/atoms use the polynomial route by default
        sizes = {name: fp.law_of(fp.find_model(name)).system.n_unknowns for name in engine_models()}
        names = [name for name, r in sizes.items() if r <= POLYNOMIAL_MAX_UNKNOWNS]
        skipped = [f"{name} ({r} unknowns)" for name, r in sizes.items() if r > POLYNOMIAL_MAX_UNKNOWNS]
        if skipped:
            print(f"not eliminated (more than {POLYNOMIAL_MAX_UNKNOWNS} unknowns, Dyson route only): {', '.join(skipped)}")
    elim = elimination_rows(names)
    dens = density_rows(names, args.points)
    return elim, dens


if __name__ == "__main__":
    main()
