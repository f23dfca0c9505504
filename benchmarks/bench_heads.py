"""Heads at scale: cost against the number of heads, through the symmetry quotient.

For the realistic allocation ``d_h = d_v = 1/(2H)``, ``d_out = 1/2`` (total
query/key width fixed) and patterns mha, mqa and gqa:8, at ``H = 1, 2, 4, ...,
128``, in one run:

* **first answer**: a new law and its density at ``x = 0.5`` to 15 digits
  (what ``freeprob density MODEL --at 0.5`` computes after reading the file);
* **grid**: the double-precision density on 1000 points over the support range;
* **50 digits**: one density value at ``x = 0.5`` to 50 digits;

each as seconds and as the ratio to the same figure of the one-head model
(``H = 1``, mha), measured in the same run. The issue's target: at most 3 at
``H = 64``.

Run: ``python benchmarks/bench_heads.py [--heads 1,2,...,128] [--patterns mha,mqa,gqa:8]``.
"""

import argparse

import numpy as np
import sympy

import freeprob as fp
from freeprob.attention import groups_divide

from _timing import best_of


def _ratios(heads):
    w = sympy.Rational(1, 2 * heads)
    return dict(d_h=w, d_v=w, d_out=sympy.Rational(1, 2))


def measure(heads, pattern, repeat=3):
    """``(first answer s, grid s, 50-digit s, unknowns)`` of one configuration."""
    ratios = _ratios(heads)

    def first():
        fp.attention_law(heads, pattern, 1, **ratios).density("0.5", dps=15)

    law = fp.attention_law(heads, pattern, 1, **ratios)
    lo, hi = law.support_range()
    xs = np.linspace(lo, hi, 1000)
    law.density_fast(xs[:2])  # build the double-precision system once
    law.density("0.5", dps=50)  # and the 50-digit one
    t_first = best_of(first, repeat)
    t_grid = best_of(lambda: law.density_fast(xs), repeat)
    t_50 = best_of(lambda: law.density("0.51", dps=50), repeat)
    return t_first, t_grid, t_50, law.system.n_unknowns


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--heads", default="1,2,4,8,16,32,64,128")
    p.add_argument("--patterns", default="mha,mqa,gqa:8")
    args = p.parse_args(argv)
    heads = [int(h) for h in args.heads.split(",")]
    patterns = args.patterns.split(",")
    base = measure(1, "mha")
    print(f"reference H=1 mha: first answer {base[0]:.3f} s, 1000-point grid {base[1]:.3f} s, "
          f"50-digit point {base[2]:.3f} s, {base[3]} unknowns")
    print(f"{'pattern':<8}{'H':>5}{'unknowns':>10}{'first s':>10}{'ratio':>7}{'grid s':>10}{'ratio':>7}"
          f"{'50 dig s':>10}{'ratio':>7}")
    rows = []
    for pattern in patterns:
        for h in heads:
            if pattern.startswith("gqa") and (not groups_divide(h, pattern) or h < int(pattern.split(":")[1])):
                continue
            t = measure(h, pattern)
            rows.append((pattern, h, t))
            print(f"{pattern:<8}{h:>5}{t[3]:>10}{t[0]:>10.3f}{t[0] / base[0]:>7.2f}{t[1]:>10.3f}"
                  f"{t[1] / base[1]:>7.2f}{t[2]:>10.3f}{t[2] / base[2]:>7.2f}", flush=True)
    return base, rows


if __name__ == "__main__":
    main()
