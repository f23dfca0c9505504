"""The Monte-Carlo evidence of docs/attention.md, "Real inputs": generic against diagonal token covariance.

One head (``mha``, ``beta = 1``, ratios ``l = 1``, ``d_h = d_v = d_out = 1/2``)
on real inputs whose token covariance ``Sigma = X X^T`` has the spectrum
{1/4: 1/2, 7/4: 1/2} (``m1 = 1``, ``m2 = 25/16``). Real softmax attention is
sampled (:func:`freeprob.attention.sample_attention`) at ``N = 200, 400, 800,
1600`` with the inputs

* ``generic``:  ``X = O diag(sqrt(values)) O^T``, ``O`` Haar (the position the
  law describes);
* ``diagonal``: ``X`` diagonal in the token basis (the position it refuses),

and both are compared with the one law, ``attention_law(..., input_spectrum=...)``,
by the multi-size extrapolation of ``freeprob attention check``
(:func:`freeprob.attention.multi_size_check`: ``D(N) = a + b N^-1/2 + c N^-1``
per statistic, standard errors from the replicates, verdict ``|a| <= t se(a)``
at family-wise level 1e-3). The generic position must pass and the diagonal one
fails; the numbers it prints are those quoted in the docs and in the refusal of
``input_position="diagonal"``.

Run (a few minutes on one core):

    python benchmarks/real_inputs_evidence.py [--sizes 200,400,800,1600] [--seed 1]
"""

import argparse
import math
import time

from freeprob import attention as att

SPECTRUM = "1/4:1/2,7/4:1/2"


def evidence(position, sizes, seed, progress=None):
    """The :class:`~freeprob.attention.AttentionCheckReport` of real softmax on inputs in ``position``."""
    cfg = att.attention_config(1, "mha", 1, input_spectrum=SPECTRUM)   # the generic configuration: the law
    law = att.attention_law(1, "mha", 1, input_spectrum=SPECTRUM)
    lengths = [att.config_sizes(cfg, n)["l"] for n in sizes]

    def sample(n, rng):
        s = att.config_sizes(cfg, n)
        return att.sample_attention(s["l"], 1, s["d_h"], s["d_v"], s["d_out"], 1.0, rng=rng,
                                    input_spectrum=SPECTRUM, input_position=position)

    epsilon = float(att.regime_parameter(cfg.score_beta, min(lengths)))
    return att.multi_size_check(sample, law, att.rank_atom(cfg), sizes, lengths=lengths, seed=seed, progress=progress,
                            label=f"{cfg.label()} sampled {position}", epsilon=epsilon)


def entrywise_mean(spectrum=((0.25, 0.5), (1.75, 0.5)), beta=1.0, d_out=0.5):
    """The mean of the spectrum in the limit, taken entry by entry, when the covariance is diagonal (no equivalence).

    With ``X`` diagonal, the keys of different tokens are independent and
    ``E tr(Y Y^T)/l = d_out avg_i avg_j lambda_j E[(e^{S_ij}/Z_i - 1)^2]``,
    ``S_ij ~ N(0, s_ij)``, ``s_ij = beta^2 lambda_i lambda_j``, ``Z_i = avg_k
    e^{s_ik/2}`` the row normalization of token ``i`` (its own fluctuation,
    of relative order ``e^{2 s}/l``, neglected); ``E[(e^S/Z - 1)^2] = e^{2s}/Z^2
    - 2 e^{s/2}/Z + 1``. The isotropic law gives ``d_out m1 (beta^2 m2 + c^2)``
    instead (the value ``law.moments(1)``). An independent route (no matrix,
    no law) to how far the diagonal position is from the law.
    """
    total = 0.0
    for li, wi in spectrum:
        z = sum(wk * math.exp(beta ** 2 * li * lk / 2) for lk, wk in spectrum)
        for lj, wj in spectrum:
            s = beta ** 2 * li * lj
            total += wi * wj * lj * (math.exp(2 * s) / z ** 2 - 2 * math.exp(s / 2) / z + 1)
    return d_out * total


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="200,400,800,1600")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    sizes = tuple(int(n) for n in args.sizes.split(","))
    for position in ("generic", "diagonal"):
        t0 = time.perf_counter()
        rep = evidence(position, sizes, args.seed)
        print(rep.text())
        rows = {r["name"]: r for r in rep.rows}
        m1 = rows["m1"]
        worst = max(rep.rows, key=lambda r: abs(r["t"]))
        print(f"\n{position}: {'PASS' if rep.passed else 'FAIL'}; m1: a = {m1['a']:.3g} +- {m1['se_a']:.2g} "
              f"({abs(m1['t']):.3g} se); largest |a|/se {abs(worst['t']):.3g} ({worst['name']}) vs tol "
              f"{rep.critical:.3g}; m1 gap D(N) = " + ", ".join(f"{d:.3g}" for d in m1["differences"])
              + f" at N = {', '.join(map(str, sizes))} ({time.perf_counter() - t0:.0f} s)\n")
    print(f"diagonal position, mean of the spectrum taken entry by entry (entrywise_mean): {entrywise_mean():.4g}, "
          f"against the law's {float(att.attention_law(1, 'mha', 1, input_spectrum=SPECTRUM).moments(1)[0]):.4g}")


if __name__ == "__main__":
    main()
