"""Attention on real inputs: the law against one real-softmax sample of the same layer.

For one head (``mha``, ``beta = 1``, ratios ``l = 1``, widths 1/2) on real
inputs whose token covariance has the spectrum {1/4: 1/2, 7/4: 1/2}:

* **law**: a new ``attention_law(..., input_spectrum=...)`` and its first
  moment and density at ``x = 0.5`` to 15 digits (a new law each time; the
  softmax coefficients, cached per entry variance, are derived once);
* **sample**: one real-softmax sample at ``N = 1600`` (``l = 1600``, inputs in
  generic position, ``X = O diag O^T`` with a Haar ``O``), the largest size of
  benchmarks/real_inputs_evidence.py;

each in seconds, and their ratio (law / sample), measured in the same run.

Run: ``python benchmarks/bench_real_inputs.py [--size 1600]``.
"""

import argparse

import numpy as np

from freeprob import attention as att

from _timing import best_of, load_text

SPECTRUM = "1/4:1/2,7/4:1/2"


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=1600)
    args = p.parse_args(argv)
    cfg = att.attention_config(1, "mha", 1, input_spectrum=SPECTRUM)
    rng = np.random.default_rng(0)

    def law():
        new = att.attention_law(1, "mha", 1, input_spectrum=SPECTRUM)
        new.moments(1)
        new.density("0.5", dps=15)

    t_law = best_of(law, repeat=3)
    t_sample = best_of(lambda: att.sample_config(cfg, args.size, rng), repeat=2)
    print(f"real inputs {SPECTRUM}, one head, beta = 1 ({load_text()})")
    print(f"law (new, m1 and density at 0.5 to 15 digits): {t_law:.3g} s")
    print(f"one real-softmax sample at N = {args.size}:        {t_sample:.3g} s")
    print(f"ratio law / sample: {t_law / t_sample:.2f}")


if __name__ == "__main__":
    main()
