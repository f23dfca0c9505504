"""Haar rotations ``O D O^T`` of deterministic matrices (freeprob.expr.haar).

A two-valued ``D`` rotated by a Haar matrix is ``b_1 I + (b_2 - b_1) Q`` with
``Q`` the projection onto a uniformly distributed subspace, written with a
Gaussian matrix and an inverse. Closed forms: ``A + O B O^T`` with ``A`` and
``B`` of spectrum ``{-1, 1}`` (weights 1/2) is the arcsine law on ``[-2, 2]``,
density ``1/(pi sqrt(4 - x^2))`` and moments ``binomial(2j, j)``; with
``B = {0: 3/4, 2: 1/4}`` it is the free convolution of two Bernoulli laws,
computed here by the scalar route (R-transforms); it has atoms of mass
``1/2 + 3/4 - 1 = 1/4`` at ``-1`` and ``1``, which the atom search (at 0 by
default) does not look for yet, so the distribution table of this law is
refused (its mass check finds 1/2).
"""

import mpmath
import pytest
import sympy

import freeprob as fp

DPS = 20
n = fp.dims("n")
O = fp.haar("O", n)
A = fp.deterministic("A", (n, n), spectrum={1: "1/2", -1: "1/2"})


def _close(a, b, digits=DPS):
    return abs(a - b) <= mpmath.mpf(10) ** (-digits) * max(1, abs(b))


def test_arcsine():
    B = fp.deterministic("B", (n, n), spectrum={1: "1/2", -1: "1/2"})
    law = fp.eigenvalue_law(A + O @ B @ O.T, ratios={n: 1})
    for x in ("0.3", "-1.1", "1.7", "-1.99"):
        with mpmath.workdps(DPS + 10):
            exact = 1 / (mpmath.pi * mpmath.sqrt(4 - mpmath.mpf(x) ** 2))
            assert _close(law.density(x, dps=DPS), exact)
    ms = law.moments(6)
    assert all(_close(m, e, 15) for m, e in zip(ms, [0, 2, 0, 6, 0, 20]))


def test_free_convolution_of_two_bernoulli_laws():
    B = fp.deterministic("B", (n, n), spectrum={2: "1/4", 0: "3/4"})
    law = fp.eigenvalue_law(A + O.T @ B @ O, ratios={n: 1})
    half = sympy.Rational(1, 2)
    ref = fp.free_additive_convolution(fp.Atomic([1, -1], [half, half]),
                                       fp.Atomic([2, 0], [sympy.Rational(1, 4), sympy.Rational(3, 4)]))
    for x in ("0.3", "-0.5", "1.7", "2.5"):
        assert _close(law.density(x, dps=DPS), ref.density(x, dps=DPS))
    assert all(_close(m, e, 15) for m, e in zip(law.moments(4), ref.moments(4)))


def test_refusals():
    B = fp.deterministic("B", (n, n), spectrum={1: "1/2", -1: "1/2"})
    C = fp.deterministic("C", (n, n), spectrum={1: "1/3", 2: "1/3", 3: "1/3"})
    W = fp.wigner("W", n)
    with pytest.raises(fp.DomainError, match="only as a rotation"):
        fp.eigenvalue_law(O @ W @ O.T + O, ratios={n: 1})
    with pytest.raises(fp.DomainError, match="rotates both"):
        fp.eigenvalue_law(O @ A @ O.T + O @ B @ O.T, ratios={n: 1})
    with pytest.raises(fp.DomainError, match="3 distinct eigenvalues"):
        fp.eigenvalue_law(A + O @ C @ O.T, ratios={n: 1})
