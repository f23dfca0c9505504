"""Least squares: ``inv(X^T X / n)`` for a tall Gaussian ``X``, and the projection
``Q = X inv(X^T X / n) X^T / n`` onto its column space.

``X^T X / n`` (``p x p``, ``p < n``) stays above the Marchenko-Pastur edge
``(1 - sqrt(p/n))^2``, which the invertibility certificate now reads off the
expression; the series at infinity does not start for such an inverse (no
identity part), so the moments come from the Cauchy transform on a circle.
``Q`` is the projection onto a uniformly random ``p``-dimensional subspace, a
Haar-rotated projection, free from an independent Wigner matrix: the law of
``W/sqrt(n) + 2 Q`` is the free convolution of the semicircle with the
Bernoulli law ``(1 - rho) delta_0 + rho delta_2``, computed here by the scalar
free-probability route (an algebraic equation from the R-transforms).
"""

import mpmath
import pytest
import sympy

import freeprob as fp

DPS = 20
n, p = fp.dims("n p")
X = fp.gaussian("X", (n, p))
W = fp.wigner("W", n)
RHO = sympy.Rational(1, 3)


def _close(a, b, digits=DPS):
    return abs(a - b) <= mpmath.mpf(10) ** (-digits) * max(1, abs(b))


def test_inverse_wishart_is_the_marchenko_pastur_pushforward():
    law = fp.eigenvalue_law(fp.inv(X.T @ X / n), ratios={n: 1, p: RHO})
    ctx = mpmath.MPContext()
    ctx.dps = DPS + 10
    g = ctx.mpf(1) / 3
    a, b = (1 - ctx.sqrt(g)) ** 2, (1 + ctx.sqrt(g)) ** 2  # the edges of X^T X / n (p x p, ratio p/n)

    def mp_density(x):  # Marchenko-Pastur of ratio g, variance 1
        return ctx.sqrt((b - x) * (x - a)) / (2 * ctx.pi * g * x)

    (lo, hi), = law.support(dps=DPS)
    assert _close(lo, 1 / b) and _close(hi, 1 / a)
    for t in ("0.2", "0.5", "0.8"):
        y = 1 / b + (1 / a - 1 / b) * ctx.mpf(t)
        assert _close(law.density(y, dps=DPS), mp_density(1 / y) / y ** 2)
    # E[1/x] under Marchenko-Pastur of ratio g < 1 is 1/(1 - g): the first moment of the inverse
    assert _close(law.moments(1, dps=DPS)[0], 1 / (1 - g))


def test_wide_gram_is_still_refused():
    with pytest.raises(fp.DomainError, match="not proved to stay away from 0"):
        fp.eigenvalue_law(fp.inv(X.T @ X / n), ratios={n: 1, p: 2}).density(1.0)


def test_projection_plus_wigner_is_a_free_convolution():
    Q = X @ fp.inv(X.T @ X / n) @ X.T / n
    law = fp.eigenvalue_law(W / sympy.sqrt(n) + 2 * Q, ratios={n: 1, p: RHO})
    ref = fp.free_additive_convolution(fp.Semicircle(1), fp.Atomic([0, 2], [1 - RHO, RHO]))
    # two intervals: a gap (1.33333, 1.33911) between the atoms' pieces, which a uniform 401-point scan
    # stepped over (this test expected one interval); the reference's own support agrees
    support = law.support(dps=DPS)
    ref_support = ref.support()
    assert len(support) == len(ref_support) == 2
    for (a, b), (ra, rb) in zip(support, ref_support):
        assert abs(a - ra) <= 1e-14 * max(1, abs(ra)) and abs(b - rb) <= 1e-14 * max(1, abs(rb))
    lo, hi = support[0][0], support[-1][1]
    for t in ("0.1", "0.35", "0.6", "0.9"):
        x = lo + (hi - lo) * mpmath.mpf(t)
        assert _close(law.density(x, dps=DPS), ref.density(x, dps=DPS))
    ms = law.moments(4)
    assert all(_close(m, e, 15) for m, e in zip(ms, ref.moments(4)))


@pytest.mark.slow
def test_projection_plus_wigner_monte_carlo():
    Q = X @ fp.inv(X.T @ X / n) @ X.T / n
    law = fp.eigenvalue_law(W / sympy.sqrt(n) + 2 * Q, ratios={n: 1, p: RHO})
    assert fp.check(law, n=600, reps=4, seed=3).passed
