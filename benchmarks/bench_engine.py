"""Engine benchmark: figures as ratios measured in one run (machines are noisy).

* the double-precision density of the single-head attention model on a
  1000-point grid, against one Monte-Carlo sample of the same model at N = 2000
  (target: the grid costs at most a tenth of the sample);
* one 50-digit density value against one double-precision value (a grid of
  one point), for the same model and for Marchenko-Pastur.

Run: ``python benchmarks/bench_engine.py``.
"""


import numpy as np

import freeprob as fp

from _timing import best_of


def main():
    rows = []
    law = fp.law_of(fp.find_model("attention-single-head"))
    lo, hi = law.support_range()
    grid = np.linspace(hi * 1e-4, hi, 1000)
    law.density_fast(grid[:5])  # build the numeric system once
    t_grid = best_of(lambda: law.density_fast(grid))
    rng = np.random.default_rng(0)
    t_mc = best_of(lambda: fp.sample_spectrum(law, 2000, rng), repeat=2)
    rows.append(("attention-single-head: 1000-point double grid / one MC sample at N=2000", t_grid, t_mc))
    for name, x in [("attention-single-head", "1.0"), ("marchenko-pastur", "1.0")]:
        m = fp.law_of(fp.find_model(name))
        m.density_fast(np.array([1.0]))
        t_fast = best_of(lambda: m.density_fast(np.array([float(x)])))
        t_mp = best_of(lambda: m.density(x, dps=50))
        rows.append((f"{name}: one 50-digit density / one double-precision density", t_mp, t_fast))
    print(f"{'figure':<84}{'numerator s':>13}{'denominator s':>15}{'ratio':>10}")
    for label, a, b in rows:
        print(f"{label:<84}{a:>13.4f}{b:>15.4f}{a / b:>10.3f}")
    return rows


if __name__ == "__main__":
    main()
