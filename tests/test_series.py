"""The exact series at infinity: coefficients placed in their number field."""

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


def test_a_resolvents_numeric_series_against_quadrature(monkeypatch):
    """The ridge resolvent ``(X X^T/n + 1/2)^-1`` (p/n = 1/2) has no exact series (its order-0 fixed point is
    only approached), so its moments come from numeric series, where chord steps finish the fixed point.
    They equal ``int (x + 1/2)^-k dMP(x)`` over Marchenko-Pastur at ratio 1/2 (quadrature at 60 digits) to
    the 40 digits asked for, and the fixed point takes far fewer steps than plain iteration."""
    import mpmath

    from freeprob.solve import series

    law = fp.law_of(fp.find_model("ridge-resolvent"))
    ctx = mpmath.mp.clone()
    ctx.dps = 60
    c = ctx.mpf(1) / 2
    a, b = (1 - ctx.sqrt(c)) ** 2, (1 + ctx.sqrt(c)) ** 2

    def moment(k):
        return ctx.quad(lambda x: ctx.sqrt((b - x) * (x - a)) / (2 * ctx.pi * c * x) / (x + c) ** k, [a, b])

    inverses = [0]
    plain = series._inverse

    def counted(*args):
        inverses[0] += 1
        return plain(*args)

    monkeypatch.setattr(series, "_inverse", counted)
    got = series.series_moments(law.numeric_system, 4, 1, 40)
    chord, inverses[0] = inverses[0], 0
    monkeypatch.setattr(series, "CHORD_SWITCH", 0.0)  # plain iteration only
    series.series_moments(law.numeric_system, 4, 1, 40)
    for k, m in enumerate(got, start=1):
        assert abs(m - moment(k)) <= ctx.mpf(10) ** -40 * max(1, abs(moment(k)))
    assert chord < inverses[0] / 2
