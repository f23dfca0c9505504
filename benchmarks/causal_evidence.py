"""The Monte-Carlo evidence of docs/causal.md: real causal softmax attention against its Gaussian equivalent.

For each inverse temperature, one head with ratios ``d_h = d_v = d_out = l/2``
is sampled at several sequence lengths ``l`` (:func:`freeprob.attention.sample_causal`,
every object from the same ``Q, K, V, W``):

* ``centred``   ``sqrt(l)(A - M) V W``, ``M`` the Cesaro mean;
* ``linear``    its Gaussian-equivalent surrogate (masked ``beta S + c Z``,
  row mean removed, row ``i`` weighted ``sqrt(l)/i``);
* ``uncentred`` ``sqrt(l) A V W``;
* ``*-tail``    the same with the first ``l/10`` rows (tokens) dropped.

Per sample: the counting statistics ``F(q) = #{x <= q}/rows`` and the mean of
the spectrum. Paired differences (real minus surrogate, uncentred minus
centred) are fitted over ``l`` as ``a + b l^(-1/2) + c l^(-1)``
(:func:`freeprob.montecarlo.stats.fit_trend`, standard errors from the
replicates), as the non-causal check does; ``a/se(a)`` is printed. The means
are also compared with the exact mean of the surrogate,
``(d_out/l)(exp(beta^2) - 1) sum_i (i-1)/i^2`` (over the rows kept), which
grows like ``log l``.

Run (about a minute per beta on one core):

    python benchmarks/causal_evidence.py [--betas 1,2] [--sizes 250,500,1000,2000] [--reps 24,12,6,4] [--seed 0]
"""

import argparse
import math
import time

import numpy as np

from freeprob.attention.causal import sample_causal
from freeprob.montecarlo.stats import fit_trend

QPOINTS = (0.1, 0.3, 1.0, 3.0)


def surrogate_mean(l, d_out, beta, skip=0):
    """Exact mean of the spectrum of the ``linear`` surrogate over its rows ``i > skip`` (module docstring)."""
    i = np.arange(skip + 1, l + 1, dtype=float)
    return (d_out / l) * math.expm1(beta ** 2) * l * np.sum((i - 1) / i ** 2) / (l - skip)


def statistics(spectrum):
    """``[mean, F(q) for q in QPOINTS]`` of one spectrum."""
    return np.array([spectrum.mean()] + [np.mean(spectrum <= q) for q in QPOINTS])


def run(beta, sizes, reps, seed):
    """``{l: {key: array (reps, stats)}}`` and the closed-form surrogate means."""
    data, means = {}, {}
    rng = np.random.default_rng([seed, int(round(1000 * beta))])
    for l, r in zip(sizes, reps):
        d = l // 2
        skip = l // 10
        rows = {}
        for _ in range(r):
            out = sample_causal(l, d, d, d, beta, skip=skip, rng=rng)
            for key, ev in out.items():
                rows.setdefault(key, []).append(statistics(ev))
        data[l] = {k: np.array(v) for k, v in rows.items()}
        means[l] = {"full": surrogate_mean(l, d, beta), "tail": surrogate_mean(l, d, beta, skip)}
    return data, means


def _fit_line(label, sizes, reps, values):
    """One fitted row: per-size means, then ``a (se) a/se`` of ``a + b l^-1/2 + c l^-1``."""
    m = [float(np.mean(v)) for v in values]
    var = [float(np.var(v, ddof=1)) for v in values]
    fit = fit_trend(sizes, reps, m, var, rates=(0.5, 1.0))
    a, se = fit["coef"][0], fit["se"][0]
    per = " ".join(f"{x:9.4f}" for x in m)
    return f"  {label:<34}{per}   a = {a:+.4f} (se {se:.4f}, a/se {a / se:+.1f})"


def report(beta, sizes, reps, data, means):
    """The text table of one beta."""
    lines = [f"beta = {beta}: l = {', '.join(map(str, sizes))}, replicates {', '.join(map(str, reps))}, "
             f"d_h = d_v = d_out = l/2, tail = rows i > l/10"]
    head = " ".join(f"{'l=' + str(n):>9}" for n in sizes)
    lines.append(f"  {'statistic':<34}{head}   extrapolated difference a + b/sqrt(l) + c/l")
    names = ["mean"] + [f"F({q:g})" for q in QPOINTS]
    for part in ("", "-tail"):
        for j, name in enumerate(names):
            vals = [data[n][f"centred{part}"][:, j] for n in sizes]
            lines.append(f"  {'real ' + name + part:<34}" + " ".join(f"{np.mean(v):9.4f}" for v in vals))
            diff = [data[n][f"centred{part}"][:, j] - data[n][f"linear{part}"][:, j] for n in sizes]
            lines.append(_fit_line(f"real - equivalent {name}{part}", sizes, reps, diff))
            if j == 0:
                key = "tail" if part else "full"
                lines.append(f"  {'equivalent mean (closed form)' + part:<34}"
                             + " ".join(f"{means[n][key]:9.4f}" for n in sizes))
                sur = [data[n][f"linear{part}"][:, 0] - means[n][key] for n in sizes]
                lines.append(f"  {'equivalent sampled - closed form':<34}"
                             + " ".join(f"{np.mean(v):9.4f}" for v in sur))
        for j, name in enumerate(names[1:], start=1):
            diff = [data[n][f"uncentred{part}"][:, j] - data[n][f"centred{part}"][:, j] for n in sizes]
            lines.append(_fit_line(f"uncentred - centred {name}{part}", sizes, reps, diff))
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--betas", default="1,2")
    p.add_argument("--sizes", default="250,500,1000,2000")
    p.add_argument("--reps", default="24,12,6,4")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    reps = [int(s) for s in args.reps.split(",")]
    if len(sizes) != len(reps) or len(sizes) < 4 or min(reps) < 2:
        p.error("--sizes and --reps need the same length, at least 4 sizes and 2 replicates each")
    for beta in (float(b) for b in args.betas.split(",")):
        t = time.perf_counter()
        data, means = run(beta, sizes, reps, args.seed)
        print(report(beta, sizes, reps, data, means))
        print(f"  ({time.perf_counter() - t:.0f} s)\n")


if __name__ == "__main__":
    main()
