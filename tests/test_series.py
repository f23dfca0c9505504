"""The exact series at infinity: coefficients placed in their number field."""

import pytest
import sympy

import freeprob as fp
from freeprob.solve.series import _to_field, system_domain


def _coefficients(system):
    out = set()
    for _, _, b, terms, _ in system.block_data(sympy.sympify):
        for row in b:
            out.update(row)
        out.update(t[3] for t in terms)
    return out


def test_coefficients_built_from_radicals_equal_their_direct_placement():
    """Sums, products and powers of a few placed radicals give the element sympy places directly."""
    system = fp.law_of(fp.find_model("block-variance-profile")).numeric_system
    dom = system_domain(system)
    s2, s3 = sympy.sqrt(2), sympy.sqrt(3)
    extra = {1 / (s2 + s3), (s2 - 3 * s3) ** 3 / 7, s2 * s3 / 5}
    coeffs = _coefficients(system) | extra
    assert any(not c.is_Rational for c in coeffs)
    cache = {}
    for c in coeffs:
        assert _to_field(dom, c, cache) == dom.from_sympy(c), c


@pytest.mark.parametrize("chord", [True, False])
def test_a_resolvents_numeric_series_against_quadrature(monkeypatch, chord):
    """The ridge resolvent ``(X X^T/n + 1/2)^-1`` (p/n = 1/2) has no exact series (its order-0 fixed point is
    only approached), so its moments come from the numeric series in ball arithmetic, where chord steps
    finish the fixed point (and, with ``CHORD_SWITCH = 0``, plain iteration alone). Both equal
    ``int (x + 1/2)^-k dMP(x)`` over Marchenko-Pastur at ratio 1/2 (quadrature at 60 digits) to the 40
    digits asked for."""
    import mpmath

    from freeprob.solve import series

    if not chord:
        monkeypatch.setattr(series, "CHORD_SWITCH", 0.0)
    law = fp.law_of(fp.find_model("ridge-resolvent"))
    ctx = mpmath.mp.clone()
    ctx.dps = 60
    c = ctx.mpf(1) / 2
    a, b = (1 - ctx.sqrt(c)) ** 2, (1 + ctx.sqrt(c)) ** 2

    def moment(k):
        return ctx.quad(lambda x: ctx.sqrt((b - x) * (x - a)) / (2 * ctx.pi * c * x) / (x + c) ** k, [a, b])

    got = series.series_moments(law.numeric_system, 4, 1, 40)
    for k, m in enumerate(got, start=1):
        assert abs(m - moment(k)) <= ctx.mpf(10) ** -40 * max(1, abs(moment(k)))


def test_rounding_noise_is_zero_and_a_small_law_keeps_its_small_moments():
    """kernel-tanh's ``m_1`` is 0, which the numeric series gives as rounding noise of about 1e-30: returned as
    0. A law of scale 1e-4 (``s W / sqrt(n)``, ``s = 10^-4``, by the numeric series at 15 digits) keeps
    ``m_2 = 1e-8``, ``m_4 = 2e-16`` and ``m_6 = 5e-24`` (semicircle moments times ``s^k``), which an absolute
    cut at 10^-15 would have made 0."""
    from freeprob.solve import series

    law = fp.law_of(fp.find_model("kernel-tanh"))
    m1, m2 = series.series_moments(law.numeric_system, 2, 1, 15)
    _, m2_30 = series.series_moments(law.numeric_system, 2, 1, 30)
    assert m1 == 0 and m2 > 0.1 and abs(m2 - m2_30) < 1e-15

    n = fp.dims("n")
    small = fp.eigenvalue_law(sympy.Rational(1, 10 ** 4) * fp.wigner("W", n) / sympy.sqrt(n), ratios={n: 1})
    ms = series.series_moments(small.numeric_system, 6, 1, 15)
    for got, exact in zip(ms, [0, 1e-8, 0, 2e-16, 0, 5e-24]):
        # the 15 digits asked for, relative (the absolute check of the contract would pass a 0 for 2e-16)
        assert abs(got - exact) <= 1e-15 * exact if exact else got == 0
    # the same law with a scale in range: the noise of its odd moments is 0 as well
    assert series.series_moments(fp.law_of(fp.find_model("wigner-semicircle")).numeric_system, 3, 1, 15)[2] == 0


def test_the_numeric_series_settles_beyond_the_range_of_a_double():
    """At 320 digits the tolerances (10^-317) are below the smallest double: they are mpmath numbers, and the
    ridge resolvent's moments settle and agree with those at 40 digits."""
    from freeprob.solve import series

    law = fp.law_of(fp.find_model("ridge-resolvent"))
    high = series.series_moments(law.numeric_system, 3, 1, 320)
    low = series.series_moments(law.numeric_system, 3, 1, 40)
    assert all(abs(h - lo) <= 1e-40 for h, lo in zip(high, low))
