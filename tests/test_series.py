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


def test_a_moment_below_the_digits_asked_for_is_zero():
    """kernel-tanh's law is odd-symmetric in its first moment: ``m_1 = 0``, which the numeric series gives as
    rounding noise of about 1e-30; verified to 10^-15 absolute, it is returned as 0."""
    from freeprob.solve import series

    law = fp.law_of(fp.find_model("kernel-tanh"))
    m1, m2 = series.series_moments(law.numeric_system, 2, 1, 15)
    _, m2_30 = series.series_moments(law.numeric_system, 2, 1, 30)
    assert m1 == 0 and m2 > 0.1 and abs(m2 - m2_30) < 1e-15
