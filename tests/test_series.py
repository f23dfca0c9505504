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
