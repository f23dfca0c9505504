"""Numerics benchmark: accuracy of the double-precision path, and the cost of the solvers at real head counts.

Measured in one run (machines are noisy, so timings are reported with the
ratios that do not depend on the machine):

* accuracy: the largest error of the double-precision Cauchy transform,
  ``max |G - G_30| / max(1, |G_30|)`` against ``law.cauchy(x, dps=30)``, at 50
  points per support interval (1e-3 of its width from the edges), on
  Marchenko-Pastur, the semicircle, semicircle plus Wishart, two products and
  one-head attention; for three double solves: at ``x + ih``
  (``h = 1e-12 (1 + |x|)``) stopped at the tolerance (the solve before
  polishing), at ``x + ih`` polished (what ``law.cauchy_fast`` asks for
  today), and on the axis itself (real points given to ``solve_fast``);
* a 1000-point double-precision density grid over the support, with 8 heads
  (mha) and with 4 heads in 2 groups (gqa:2), per point against one head,
  and the cost of the polish (polished / unpolished grid);
* a 50-digit density at 0.5 with 4 and 8 heads (mha) against one head, and
  the ``r x r`` Newton system of the 8-head point solved by mpmath's
  ``lu_solve`` against flint's ``acb_mat.solve``, as the high-precision
  solve did before and does now.

Run: ``python benchmarks/bench_numerics.py [--quick]`` (``--quick``: 10 points
per interval and no 8-head grid).
"""

import argparse

import numpy as np

import freeprob as fp
from freeprob._precision import context, flint_precision
from freeprob.solve.newton import solve_fast, solve_point
from freeprob.solve.numeric import NumericSystems

from _timing import best_of

MODELS = ["marchenko-pastur", "wigner-semicircle", "wigner-plus-wishart", "gaussian-product", "symmetrized-product"]


def _system_point(law, w):
    w = np.asarray(w, dtype=complex)
    return w if law.law == "eigenvalues" else np.sqrt(w)


def _cauchy(law, zs, outs):
    return outs[:, 0] if law.law == "eigenvalues" else outs[:, 0] / zs


def accuracy(law, n):
    """Largest errors ``(x + ih unpolished, x + ih polished, axis)`` at ``n`` points per support interval."""
    xs = np.concatenate([np.linspace(a + 1e-3 * (b - a), b - 1e-3 * (b - a), n) for a, b in law.support_fast()])
    ref = np.array([complex(law.cauchy(float(x), dps=30)) for x in xs])
    zs = _system_point(law, xs)
    above = zs + 1j * 1e-12 * (1 + np.abs(zs))
    errors = []
    for z, polish in ((above, False), (above, True), (zs, True)):
        _, outs, conv, _ = solve_fast(law.fast, z, polish=polish, raise_on_failure=False)
        g = _cauchy(law, z, outs)  # divided by the point solved at, as the law does
        err = np.abs(g - ref) / np.maximum(1, np.abs(ref))
        errors.append(float(np.max(np.where(conv, err, np.inf))))
    return errors


def grid_times(law):
    """``(polished, unpolished)`` seconds of a 1000-point density grid over the law's support."""
    sup = law.support_fast(grid=201, rel=1e-3)
    lo, hi = min(a for a, _ in sup), max(b for _, b in sup)
    xs = np.linspace(lo + 1e-4 * (hi - lo), hi, 1000)
    zs = _system_point(law, xs)
    above = zs + 1j * 1e-12 * (1 + np.abs(zs))
    law.density_fast(xs[:5])
    return (best_of(lambda: law.density_fast(xs), repeat=2),
            best_of(lambda: solve_fast(law.fast, above, polish=False, raise_on_failure=False), repeat=2))


def newton_system_times(law, dps=50):
    """Seconds of one ``r x r`` Newton system at the point 0.5 (squared singular values): mpmath, flint."""
    systems = NumericSystems(law.numeric_system)
    sol = solve_point(systems, lambda ctx: ctx.sqrt(ctx.mpf("0.5")), dps, on_axis=True)
    ctx = context(sol.work_dps)
    mpsys = systems.mp(ctx)
    z = ctx.mpc(sol.z)
    g = [ctx.mpc(x) * (1 + ctx.mpf("1e-6")) for x in sol.g]  # a start one step away
    phi, _, jac = mpsys.phi(g, z, 0, jacobian=True)
    r = mpsys.r
    a = ctx.matrix([[(1 if i == j else 0) - jac[i][j] for j in range(r)] for i in range(r)])
    b = ctx.matrix([g[k] - phi[k] for k in range(r)])
    t_mpmath = best_of(lambda: ctx.lu_solve(a, b), repeat=2)

    def flint_solve():
        import flint

        with flint_precision(mpsys.prec):
            fa = flint.acb_mat([[flint.acb(a[i, j]) for j in range(r)] for i in range(r)])
            fb = flint.acb_mat([[flint.acb(b[k])] for k in range(r)])
            return fa.solve(fb, algorithm="approx")

    t_flint = best_of(flint_solve, repeat=3)
    return r, t_mpmath, t_flint


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="10 points per interval, no 8-head grid")
    args = p.parse_args(argv)
    n = 10 if args.quick else 50
    laws = [(name, fp.law_of(fp.find_model(name))) for name in MODELS]
    laws.append(("attention h=1 (mha)", fp.attention_law(1, "mha", 1)))
    print(f"max |G - G_30| / max(1, |G_30|), {n} points per support interval, 1e-3 of the width from its edges")
    print(f"{'model':<24}{'x+ih, tolerance':>18}{'x+ih, polished':>17}{'on the axis':>14}")
    for name, law in laws:
        e = accuracy(law, n)
        print(f"{name:<24}{e[0]:>18.2e}{e[1]:>17.2e}{e[2]:>14.2e}", flush=True)

    rows = []
    one = fp.attention_law(1, "mha", 1)
    t1, t1_rough = grid_times(one)
    cases = [("H=4 gqa:2", fp.attention_law(4, "gqa:2", 1))]
    if not args.quick:
        cases.insert(0, ("H=8 mha", fp.attention_law(8, "mha", 1)))
    for label, law in cases:
        t, t_rough = grid_times(law)
        rows.append((f"1000-point double density grid, {label} (r={law.fast.r}) / H=1 (r={one.fast.r})", t, t1))
        rows.append((f"1000-point grid, {label}: polished / unpolished solve", t, t_rough))
    one.density("0.5", dps=50)
    t1_mp = best_of(lambda: one.density("0.5", dps=50))
    for heads in (4, 8):
        law = fp.attention_law(heads, "mha", 1)
        law.density("0.5", dps=50)
        t = best_of(lambda: law.density("0.5", dps=50))
        rows.append((f"50-digit density at 0.5, H={heads} mha (r={law.fast.r}) / H=1", t, t1_mp))
        if heads == 8:
            r, t_mpmath, t_flint = newton_system_times(law)
            rows.append((f"{r}x{r} Newton system at 50 digits, H=8: mpmath lu_solve / flint acb_mat.solve",
                         t_mpmath, t_flint))
    print()
    print(f"{'figure':<88}{'numerator s':>13}{'denominator s':>15}{'ratio':>10}")
    for label, a, b in rows:
        print(f"{label:<88}{a:>13.4f}{b:>15.4f}{a / b:>10.2f}")
    return rows


if __name__ == "__main__":
    main()
