"""The causal attention law (``fp.CausalLaw``): cost against one Monte-Carlo sample, measured in one run.

For ``beta = 1``, ``skip = 1/10``, widths 1/2 (the default of ``freeprob
attention --causal``): seconds of the law's construction, one Cauchy value,
a 200-point density grid, the support (its top edge with its estimate), the
whole ``freeprob attention --causal`` command and ``freeprob law
attention-causal`` (the same law from its model file, with the 200-point
grid of the ``law`` command); beside them one sample of
real causal softmax with the same rows left out at ``l = 2000`` (the largest
length of the default check), and the ratios of the commands to that sample.

Run: ``python benchmarks/bench_causal.py`` (``OPENBLAS_NUM_THREADS=1`` on a
busy machine).
"""

import io
import time

import numpy as np

import freeprob as fp
from freeprob import attention as att
from freeprob.cli import main as cli

from _timing import load_text


def _seconds(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main():
    print(load_text())
    t_build, law = _seconds(lambda: fp.CausalLaw(1, "1/10"))
    t_one, g = _seconds(lambda: law.cauchy(1 + 0.5j))
    xs = np.linspace(0.05, 13, 200)
    t_grid, dens = _seconds(lambda: law.density_fast(xs))
    t_support, support = _seconds(lambda: law.support(tol=law.edge_tol))
    (_, top), = support
    t_cli, _ = _seconds(lambda: cli(["attention", "--causal"], out=io.StringIO()))
    t_file, _ = _seconds(lambda: cli(["law", "attention-causal"], out=io.StringIO()))
    t_mc, _ = _seconds(lambda: att.sample_causal(2000, 1000, 1000, 1000, 1.0, objects=("centred",), skip=200,
                                                 rng=0, full=False))
    print(f"law built           {t_build:8.3f} s")
    print(f"G(1 + 0.5i)         {t_one:8.3f} s   value {g.value:.6f} +- {g.error:.1e}")
    print(f"density, 200 points {t_grid:8.3f} s   {np.isnan(dens).sum()} points above the grid tolerance")
    print(f"support             {t_support:8.3f} s   top edge {top.value:.4f} +- {top.error:.2f}")
    print(f"freeprob attention --causal   {t_cli:8.3f} s")
    print(f"freeprob law attention-causal {t_file:8.3f} s")
    print(f"one sample of real causal softmax, l = 2000   {t_mc:8.3f} s")
    print(f"ratio attention --causal / sample   {t_cli / t_mc:.2f}")
    print(f"ratio law attention-causal / sample {t_file / t_mc:.2f}")


if __name__ == "__main__":
    main()
