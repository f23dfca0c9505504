"""Laws of continuous variance profiles (``fp.ProfileLaw``): cost and accuracy, measured in one run.

For the upper-triangular Gaussian (``models/triangular-gaussian.toml``, the
Dykema-Haagerup law, ``G(z) = 1 - exp(W(-1/z))``) and the smooth profile
``1 + r c`` (``p/n = 1/2``): seconds of the law's construction, one Cauchy
value, a 201-point density grid, the support, ten moments and the whole
``freeprob law`` command; and for the triangular model the largest true error
on the grid (against the closed form) next to the largest error estimate
claimed there. Also the cost of one discretization through the generic
symbolic reduction (``discretize`` + ``SpectralLaw``), the route the fast
vector Dyson solver replaces.

Run: ``python benchmarks/bench_profile.py``. BLAS threads matter on a busy
machine: ``OPENBLAS_NUM_THREADS=1`` made the batched solves 10-100x faster
under a load of 9 on 2 cores.
"""

import io
import time

import mpmath
import numpy as np

import freeprob as fp
from freeprob.cli import main as cli
from freeprob.reduce.blocks import discretize

from _timing import load_text


def _seconds(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def _closed(x):
    return complex(1 - mpmath.exp(mpmath.lambertw(-1 / mpmath.mpc(x))))


def main():
    print(load_text())
    n, p = fp.dims("n p")
    T = fp.gaussian("T", (n, n), profile="Heaviside(c - r)")
    X = fp.gaussian("X", (p, n), profile="1 + r*c")
    cases = [("triangular", T @ T.T / n, {n: 1}), ("1 + r c", X @ X.T / n, {p: "1/2", n: 1})]
    for label, expr, ratios in cases:
        t_build, law = _seconds(lambda: fp.ProfileLaw(expr, "eigenvalues", ratios))
        t_one, _ = _seconds(lambda: law.cauchy(1 + 0.5j))
        xs = np.linspace(0.05, 2.6, 201)
        t_grid, est = _seconds(lambda: law.cauchy_estimate(xs.astype(complex)))
        t_sup, sup = _seconds(law.support)
        t_mom, _ = _seconds(lambda: law.moments_estimate(10))
        print(f"{label:<12} build {t_build:.2f} s, one G {t_one:.3f} s, grid of 201 {t_grid:.2f} s, "
              f"support {t_sup:.2f} s, 10 moments {t_mom:.3f} s; support "
              f"{[(float(a.value), float(b.value)) for a, b in sup]}")
        if label == "triangular":
            true = np.abs(est.value - np.array([_closed(x) for x in xs]))
            print(f"{'':<12} grid: largest true error {true.max():.2e}, largest estimate {np.nanmax(est.error):.2e}, "
                  f"points where the estimate is below the true error: {int(np.sum(true > est.error))}")
    t_cli, _ = _seconds(lambda: cli(["law", "triangular-gaussian", "--json"], out=io.StringIO()))
    print(f"freeprob law triangular-gaussian: {t_cli:.2f} s")
    for m in (8, 16):
        t_gen, _ = _seconds(lambda: fp.eigenvalue_law(discretize(T @ T.T / n, m), {n: 1}).cauchy_fast([1 + 0.5j]))
        print(f"generic reduction, {m} cells, one double-precision G: {t_gen:.2f} s")


if __name__ == "__main__":
    main()
