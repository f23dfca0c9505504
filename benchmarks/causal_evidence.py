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
grows like ``log l``. The difference of the means does not vanish: it is
``(d_out/l) sum_i delta_i``, ``delta_i`` the excess of the inverse
participation ratio of row ``i`` over its equivalent, computed by an
independent route (:func:`row_offsets`: rows of ``i`` iid scores, no matrix),
``delta_i ~ (3 e^(2 beta^2) - 2 e^(3 beta^2) - 1)/i^2``: the first tokens.

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


def row_offsets(beta, imax, rng, reps=4000, d_h=None):
    """``[delta_1..delta_imax]`` and their standard errors: the mean of row ``i`` of ``l (A - M)^2``, real minus equivalent.

    ``delta_i = E sum_j A_ij^2 - 1/i - (exp(beta^2) - 1)(i - 1)/i^2`` (the real
    row minus the surrogate's row, both exact expectations but the first by
    Monte-Carlo over rows): given its query, row ``i`` has ``i`` iid
    ``N(0, sigma^2)`` scores, ``sigma^2 = |q_i|^2/d_h`` (``chi^2_{d_h}/d_h``;
    1 when ``d_h`` is None). Ten times more replicates for ``i <= 20``.
    """
    out, ses = np.zeros(imax), np.zeros(imax)
    e = math.expm1(beta ** 2)
    for i in range(1, imax + 1):
        r = reps * 10 if i <= 20 else reps
        sig = 1.0 if d_h is None else np.sqrt(rng.chisquare(d_h, r) / d_h)[:, None]
        x = beta * sig * rng.standard_normal((r, i))
        x -= x.max(axis=1, keepdims=True)
        f = np.exp(x)
        v = (f ** 2).sum(axis=1) / f.sum(axis=1) ** 2 - 1 / i - e * (i - 1) / i ** 2
        out[i - 1], ses[i - 1] = v.mean(), v.std(ddof=1) / math.sqrt(r)
    return out, ses


def offset_prediction(beta, l, d_out, deltas, ses):
    """``(d_out/l) sum_{i <= l} delta_i`` and its standard error; beyond the computed rows the tail
    ``C/i^2``, ``C = 3 e^(2 beta^2) - 2 e^(3 beta^2) - 1`` (the second order of the row expansion)."""
    imax = len(deltas)
    k = min(l, imax)
    total, var = deltas[:k].sum(), np.sum(ses[:k] ** 2)
    if l > imax:
        c = 3 * math.exp(2 * beta ** 2) - 2 * math.exp(3 * beta ** 2) - 1
        i = np.arange(imax + 1, l + 1, dtype=float)
        total += c * np.sum(1 / i ** 2)
    return d_out / l * total, d_out / l * math.sqrt(var)


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


def report(beta, sizes, reps, data, means, offsets=None):
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
                if not part and offsets is not None:
                    diff = [data[n]["centred"][:, 0] - data[n]["linear"][:, 0] for n in sizes]
                    lines.append(f"  {'  real - equivalent, se':<34}"
                                 + " ".join(f"{np.std(v, ddof=1) / math.sqrt(len(v)):9.4f}" for v in diff))
                    lines.append(f"  {'  predicted by the rows (se)':<34}"
                                 + " ".join(f"{offsets[n][0]:9.4f}" for n in sizes)
                                 + "   (" + ", ".join(f"{offsets[n][1]:.4f}" for n in sizes) + ")")
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
    p.add_argument("--rows", type=int, default=400,
                   help="rows of the independent mean-offset route, for beta <= 1.5 (default 400; 0: skip)")
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    reps = [int(s) for s in args.reps.split(",")]
    if len(sizes) != len(reps) or len(sizes) < 4 or min(reps) < 2:
        p.error("--sizes and --reps need the same length, at least 4 sizes and 2 replicates each")
    for beta in (float(b) for b in args.betas.split(",")):
        t = time.perf_counter()
        data, means = run(beta, sizes, reps, args.seed)
        offsets = None
        if args.rows and beta <= 1.5:
            deltas, ses = row_offsets(beta, args.rows, np.random.default_rng([args.seed, 7]))
            offsets = {n: offset_prediction(beta, n, n // 2, deltas, ses) for n in sizes}
            cum = np.cumsum(deltas)
            print(f"beta = {beta}: sum of delta_i over the first 1, 5, 10, 50, {args.rows} rows: "
                  + ", ".join(f"{cum[k - 1]:.4f}" for k in sorted({1, 5, 10, 50, args.rows}) if k <= args.rows)
                  + f" (se {math.sqrt(np.sum(ses ** 2)):.4f}); C = 3e^(2b^2) - 2e^(3b^2) - 1 = "
                  + f"{3 * math.exp(2 * beta ** 2) - 2 * math.exp(3 * beta ** 2) - 1:.3f}, "
                  + f"i^2 delta_i at i = {args.rows}: {deltas[-1] * args.rows ** 2:.2f}")
        print(report(beta, sizes, reps, data, means, offsets))
        print(f"  ({time.perf_counter() - t:.0f} s)\n")


if __name__ == "__main__":
    main()
