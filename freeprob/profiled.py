"""Exact moments of laws with continuous variance profiles.

A Gaussian whose variance profile is continuous (``Heaviside(c - r)``, the
upper-triangular matrix) has no finite splitting of its dimensions
(:mod:`freeprob.reduce.blocks`); its law is the limit of the laws of the
discretized profiles on ``m x m`` cells (values at the cells' midpoints). The
``k``-th moment of a discretized law is a normalized count of non-crossing
pairings weighted by cell values: for a profile that is piecewise polynomial
on polyhedral pieces (Heaviside of linear forms and polynomials) it is a
polynomial in ``1/m`` of degree at most ``k + 1`` (an Ehrhart-type count). The
moments for ``m = 1, ..., k + 3`` are computed exactly and extrapolated to
``1/m = 0`` through all of them; the extrapolation through one point fewer
must give the same number, else :class:`~freeprob.ConvergenceError`.

The upper-triangular Gaussian ``T`` (``T T^T / n``) gets the Dykema-Haagerup
moments ``k^k / (k+1)!`` exactly this way.
"""

import sympy

from ._errors import ConvergenceError, DomainError
from .law import SpectralLaw
from .reduce.blocks import discretize, extrapolate, has_continuous_profile

__all__ = ["MAX_PROFILE_MOMENTS", "has_continuous_profile", "profile_moments"]

#: Most moments :func:`profile_moments` computes (the discretizations reach ``k + 3`` cells per side).
MAX_PROFILE_MOMENTS = 6


def profile_moments(expr, law, ratios, k, params=None):
    """The exact moments ``m_1, ..., m_k`` of a law whose Gaussians have continuous variance profiles.

    Parameters are those of :class:`~freeprob.SpectralLaw`; ``k`` is at most
    :data:`MAX_PROFILE_MOMENTS`.

    Examples
    --------
    >>> import freeprob as fp
    >>> n = fp.dims("n")
    >>> T = fp.gaussian("T", (n, n), profile="Heaviside(c - r)")
    >>> fp.profile_moments(T @ T.T / n, "eigenvalues", {n: 1}, 4)    # k^k/(k+1)!
    [1/2, 2/3, 9/8, 32/15]
    """
    if isinstance(k, bool) or not hasattr(k, "__index__") or not 1 <= int(k) <= MAX_PROFILE_MOMENTS:
        raise DomainError(f"the number of moments must be an integer between 1 and {MAX_PROFILE_MOMENTS}, got {k!r}")
    k = int(k)
    if not has_continuous_profile(expr):
        raise DomainError(f"{expr} has no continuous variance profile: its moments come from its law (moments())")
    cells = range(1, k + 4)
    values = {m: SpectralLaw(discretize(expr, m), law, ratios, params).moments(k) for m in cells}
    out = []
    for j in range(k):
        column = {m: sympy.nsimplify(v[j]) for m, v in values.items()}
        if not all(c.is_Rational for c in column.values()):
            raise DomainError(f"the discretized moments of {expr} are not rational (a parameter or an irrational "
                              f"ratio): the exact extrapolation needs rational values")
        limit, spread = extrapolate(column)
        if spread != 0:
            raise ConvergenceError(f"moment {j + 1} of {expr}: the discretized moments for m = 1..{k + 3} cells are "
                                   f"not a polynomial in 1/m of degree {k + 1} (the two extrapolations differ by "
                                   f"{spread}); the profile is not piecewise polynomial on polyhedral pieces")
        out.append(limit)
    return out
