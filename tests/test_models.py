"""Registry-driven checks: every built-in model in models/ gets the same battery.

Mass one (density integrated over the support plus the atoms), a non-negative
density, ``Im G < 0`` above the axis, ``G(z) = sum m_k z^(-k-1)`` at large
``z`` with the exact moments, and (slow suite) Monte-Carlo agreement at
N = 2000.
"""

import numpy as np
import pytest
import sympy

import freeprob as fp
from freeprob._precision import context
from freeprob.montecarlo.sample import sample_bytes

#: The battery needs a SpectralLaw (equations, verified digits, polynomial route); a model with a
#: continuous variance profile is a ProfileLaw (values with error estimates), tested below and in
#: tests/test_profile_law.py; the causal-attention model is a CausalLaw, tested in tests/test_causal_model.py.
def _engine_model(name):
    model = fp.find_model(name)
    return model.kind == "expression" and not fp.has_continuous_profile(model.expr)


MODELS = sorted(m for m in fp.builtin_models() if _engine_model(m))


@pytest.fixture(scope="module", params=MODELS)
def law(request):
    return fp.law_of(fp.find_model(request.param))


def test_registry_is_complete():
    for name in ["marchenko-pastur", "wigner-semicircle", "wigner-plus-wishart", "gaussian-product", "attention-single-head"]:
        assert name in MODELS


def test_density_nonnegative_and_mass_one(law):
    cdf = law.cdf_function()
    atoms = sum(m for _, m in cdf.atoms)
    # the quadrature's own error estimate (two node counts) plus the ~1e-8
    # accuracy of the double-precision density bounds the defect
    assert abs(cdf.mass_ac + atoms - 1) <= cdf.quad_error + 1e-7
    lo = min(a for a, _ in cdf.intervals)
    hi = max(b for _, b in cdf.intervals)
    xs = np.linspace(lo, hi, 101)[1:-1]
    d = law.density_fast(xs)
    assert np.all(np.nan_to_num(d, nan=0.0) >= 0)


def test_upper_half_plane(law):
    for z in ["0.3+0.1*I", "1+1*I", "-2+0.5*I", "5+3*I"]:
        g = law.cauchy(z, dps=20)
        assert g.imag < 0


def test_cauchy_at_infinity_matches_exact_moments(law):
    """G(z) - sum_{k<=4} m_k z^(-k-1) is the series tail m5/z^6 + m6/z^7 + ... at z = 10^3 i."""
    try:
        ms = [sympy.Integer(1)] + list(law.moments(8))
    except fp.ConvergenceError:  # an inverse: algebraic moments, from the numeric series at 45 digits
        ms = [sympy.Integer(1)] + [sympy.Float(str(m), 45) for m in law.moments(8, dps=45)]
    ctx = context(60)
    z = ctx.mpc(0, 1000)
    series = sum(ctx.mpf(sympy.N(m, 60)) / z ** (k + 1) for k, m in enumerate(ms[:5]))
    g = law.cauchy("1000*I", dps=40)
    tail = sum(abs(ctx.mpf(sympy.N(ms[k], 30))) / abs(z) ** (k + 1) for k in range(5, 9))
    assert abs(ctx.mpc(g) - series) <= 2 * tail + ctx.mpf(10) ** -40


def test_moments_are_exact_rationals_when_ratios_are_rational():
    law = fp.law_of(fp.find_model("marchenko-pastur"))
    lam = sympy.Rational(1, 2)
    narayana = [sum(sympy.binomial(k, j) * sympy.binomial(k, j - 1) / k * lam ** (j - 1) for j in range(1, k + 1)) for k in range(1, 7)]
    assert law.moments(6) == narayana


@pytest.mark.parametrize(
    "name, overrides, mass",
    [
        ("marchenko-pastur", {"p": "2", "n": "1"}, sympy.Rational(1, 2)),
        ("gaussian-product", {"p": "2"}, sympy.Rational(1, 4)),
        ("gaussian-product-3", {"p": "1", "m": "0.25"}, sympy.Rational(3, 4)),
    ],
)
def test_atom_at_zero_for_rank_deficient_models(name, overrides, mass):
    """Rank of a product is the smallest inner dimension: the atom at 0 is 1 - rank/rows."""
    law = fp.law_of(fp.find_model(name).with_values(overrides))
    atoms = law.atoms(dps=25)
    assert len(atoms) == 1 and atoms[0][0] == 0
    ctx = context(30)
    assert abs(atoms[0][1] - ctx.mpf(sympy.N(mass, 30))) < ctx.mpf(10) ** -25


def test_no_atom_for_full_rank():
    assert fp.law_of(fp.find_model("marchenko-pastur")).atoms(dps=20) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
def test_monte_carlo_agreement_at_2000(name):
    """freeprob check at N = 2000: the O(1/N) bias (O(N^-1/2) for kernel
    matrices) is removed by Richardson extrapolation from N/2 and N, and each statistic must lie within the
    Student-t critical value (family-wise level 1e-3) of the theory, in units of
    its replicate standard error (see freeprob.montecarlo.check).

    A model whose sample at N = 2000 would hold more than 2 GiB (the 64-head
    example: 64 independent l x l matrices, 15 GiB) is checked at the largest
    N = 2000 / 2^k within 2 GiB (500 for it)."""
    law = fp.law_of(fp.find_model(name))
    n = 2000
    while sample_bytes(law, n) > 2 * 2 ** 30:
        n //= 2
    rep = fp.check(law, n=n, reps=6, seed=12345)
    assert rep.passed, rep.text()
    # the KS distance shrinks with N (O(N^-rate) up to logarithms: rate 1, or 1/2 for kernel
    # matrices): allow one factor sqrt(2) of fluctuation on the expected factor 2^rate
    assert rep.ks <= rep.ks_half / 2 ** rep.rate * np.sqrt(2) + 2e-3, rep.text()


def test_triangular_gaussian_moments_from_the_model_file():
    """Dykema-Haagerup: the upper-triangular Gaussian's T T^T/n has the moments k^k/(k+1)!, exactly."""
    model = fp.find_model("triangular-gaussian")
    ms = fp.profile_moments(model.expr, model.law_kind, model.ratios, 5)
    assert ms == [sympy.Integer(k) ** k / sympy.factorial(k + 1) for k in range(1, 6)]


def test_triangular_gaussian_law_from_the_model_file():
    """The model file's law (fp.profile_law_of; its support [0, e] is tested in tests/test_profile_law.py):
    G(z) ~ 1/z far out, Im G < 0 above the axis, the exact moments."""
    law = fp.profile_law_of(fp.find_model("triangular-gaussian"))
    assert law.moments(3) == [sympy.Rational(1, 2), sympy.Rational(2, 3), sympy.Rational(9, 8)]
    far = law.cauchy(1e4j)
    assert abs(far.value * 1e4j - 1) < 1e-3
    assert law.cauchy(1 + 1j).value.imag < 0
