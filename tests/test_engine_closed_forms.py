"""Marchenko-Pastur and the semicircle against their closed forms at 15, 30 and 50 digits.

The engine returns values correct to 10^-dps relative to max(1, |G|); every
value here is of order one, so agreement is asserted to ``dps - 1`` significant
digits (one digit of slack for the final rounding of the reference itself).
"""

import mpmath
import pytest
import sympy

import freeprob as fp
from freeprob._precision import context, to_mpc


def mp_density(ctx, lam, x):
    a = (1 - ctx.sqrt(lam)) ** 2
    b = (1 + ctx.sqrt(lam)) ** 2
    return ctx.sqrt((b - x) * (x - a)) / (2 * ctx.pi * lam * x)


def mp_cauchy(ctx, lam, z):
    # G(z) = (z + lam - 1 - sqrt((z - a)(z - b))) / (2 lam z), branch with G ~ 1/z
    a = (1 - ctx.sqrt(lam)) ** 2
    b = (1 + ctx.sqrt(lam)) ** 2
    root = ctx.sqrt(z - a) * ctx.sqrt(z - b)
    return (z + lam - 1 - root) / (2 * lam * z)


def sc_cauchy(ctx, z):
    return (z - ctx.sqrt(z - 2) * ctx.sqrt(z + 2)) / 2


@pytest.fixture(scope="module")
def mp_law():
    p, n = fp.dims("p n")
    X = fp.gaussian("X", (p, n))
    return fp.eigenvalue_law(X @ X.T / n, ratios={p: sympy.Rational(1, 2), n: 1})


@pytest.fixture(scope="module")
def sc_law():
    n = fp.dims("n")
    W = fp.wigner("W", n)
    return fp.eigenvalue_law(W / sympy.sqrt(n), ratios={n: 1})


def digits(a, b, ctx):
    err = abs(a - b)
    if err == 0:
        return ctx.dps
    return float(-ctx.log10(err / max(1, abs(b))))


@pytest.mark.parametrize("dps", [15, 30, 50])
def test_marchenko_pastur_density(mp_law, dps):
    ctx = context(dps + 20)
    lam = ctx.mpf(1) / 2
    for x in ["0.2", "0.5", "1", "1.7", "2.6"]:
        got = mp_law.density(x, dps=dps)
        ref = mp_density(ctx, lam, ctx.mpf(x))
        assert digits(ctx.mpf(got), ref, ctx) >= dps - 1, (x, got, ref)


@pytest.mark.parametrize("dps", [15, 30, 50])
def test_semicircle_density(sc_law, dps):
    ctx = context(dps + 20)
    for x in ["-1.9", "-0.7", "0", "0.5", "1.3"]:
        got = sc_law.density(x, dps=dps)
        ref = ctx.sqrt(4 - ctx.mpf(x) ** 2) / (2 * ctx.pi)
        assert digits(ctx.mpf(got), ref, ctx) >= dps - 1, (x, got, ref)


@pytest.mark.parametrize("dps", [15, 30, 50])
def test_cauchy_complex_points(mp_law, sc_law, dps):
    ctx = context(dps + 20)
    lam = ctx.mpf(1) / 2
    for z in ["1+0.5j", "-0.3+0.2j", "3+2j", "0.7-0.4j"]:
        zs = z.replace("j", "*I")
        zq = to_mpc(ctx, zs)
        got = mp_law.cauchy(zs, dps=dps)
        ref = mp_cauchy(ctx, lam, zq) if zq.imag > 0 else ctx.conj(mp_cauchy(ctx, lam, ctx.conj(zq)))
        assert digits(ctx.mpc(got), ref, ctx) >= dps - 1, (z, got, ref)
        got = sc_law.cauchy(zs, dps=dps)
        ref = sc_cauchy(ctx, zq) if zq.imag > 0 else ctx.conj(sc_cauchy(ctx, ctx.conj(zq)))
        assert digits(ctx.mpc(got), ref, ctx) >= dps - 1, (z, got, ref)


def test_cli_density_45_digits_at_dps_50():
    """The acceptance criterion as a user runs it: `freeprob density ... --dps 50 --json`."""
    import io
    import json

    from freeprob.cli.engine import main

    out = io.StringIO()
    assert main(["density", "marchenko-pastur", "--at", "0.2,0.5,1,1.7,2.6", "--dps", "50", "--json"], out=out) == 0
    data = json.loads(out.getvalue())
    ctx = context(70)
    lam = ctx.mpf(1) / 2
    assert data["dps"] == 50
    for pt in data["points"]:
        ref = mp_density(ctx, lam, ctx.mpf(pt["x"]))
        assert digits(ctx.mpf(pt["density"]), ref, ctx) >= 45
        assert digits(ctx.mpf(pt["cauchy"]["im"]), -ctx.pi * ref, ctx) >= 45


def test_results_carry_requested_digits(mp_law):
    d = mp_law.density("1", dps=40)
    assert d.context.dps >= 40


def test_global_precision_untouched(mp_law):
    mp_law.density("1", dps=60)
    assert mpmath.mp.dps == 15
