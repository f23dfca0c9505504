"""Attention benchmark: the comparison table against one real-softmax sample.

Figures are ratios measured in one run (machines are noisy):

* the comparison table of ``freeprob attention compare`` (heads 1, 2, 4, 8;
  patterns mha, mqa, gqa:2, shared-v, tied-kv; allocation and width studies)
  in double precision (200-point grids, no 30-digit points, no Monte-Carlo),
  from scratch (every call builds its own laws), against one real-softmax sample at the
  largest size the study samples (``N = 400`` with ``H = 8``, its
  Monte-Carlo confirmation) and against one sample at ``N = 2000``, ``H = 1``
  (the largest size of ``freeprob attention check``);
* with ``--full``: the whole table with its 30-digit equality checks at 3
  points and the Monte-Carlo confirmation, against the same samples.

Run: ``python benchmarks/bench_attention.py [--full] [--heads 1,2,4,8]``.
"""

import argparse
import time

import numpy as np

from freeprob import attention as att
from freeprob.attention import compare_patterns

from _timing import best_of


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--full", action="store_true", help="also time the table with 30-digit points and Monte-Carlo")
    p.add_argument("--heads", default="1,2,4,8")
    args = p.parse_args(argv)
    heads = tuple(int(h) for h in args.heads.split(","))
    rng = np.random.default_rng(0)
    big = att.attention_config(max(heads), "mha", 1)
    t_mc = best_of(lambda: att.sample_config(big, 400, rng), repeat=3)
    one = att.attention_config(1, "mha", 1)
    t_mc2000 = best_of(lambda: att.sample_config(one, 2000, rng), repeat=2)
    rows = []
    t = time.perf_counter()
    rep = compare_patterns(heads, points=0, mc_size=0)
    t_table = time.perf_counter() - t
    rows.append((f"table in double precision (heads {args.heads}) / one real-softmax sample N=400, H={max(heads)}",
                 t_table, t_mc))
    rows.append((f"table in double precision (heads {args.heads}) / one real-softmax sample N=2000, H=1",
                 t_table, t_mc2000))
    if args.full:
        t = time.perf_counter()
        full = compare_patterns(heads)
        t_full = time.perf_counter() - t
        rows.append((f"full table (30-digit points, MC) / one real-softmax sample N=400, H={max(heads)}", t_full, t_mc))
        print(full.text())
    else:
        print(rep.text())
    print()
    print(f"{'figure':<92}{'numerator s':>13}{'denominator s':>15}{'ratio':>10}")
    for label, a, b in rows:
        print(f"{label:<92}{a:>13.3f}{b:>15.4f}{a / b:>10.1f}")
    return rows


if __name__ == "__main__":
    main()
