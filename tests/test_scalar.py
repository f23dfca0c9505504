"""Tests of the scalar free-probability calculus (freeprob.scalar.laws, freeprob.scalar.algebraic).

Tolerances. ``dps`` counts significant digits, so values that are nonzero and
of order one (Cauchy transforms, densities inside the bulk) are compared with
a *relative* error below ``10^(-dps+2)`` (two digits of slack for the rounding
of the reference and of the value, each to about ``dps`` digits). Where the
exact value is 0 (the density outside the support) the comparison is exact.
References are computed independently in this file at ``dps + 20`` digits.
"""

import itertools
import math

import mpmath
import pytest
import sympy

from freeprob._errors import DomainError, EliminationError
from freeprob._precision import context
from freeprob.scalar.laws import (
    Arcsine,
    Atomic,
    FreePoisson,
    MarchenkoPastur,
    Semicircle,
    free_cumulants_from_moments,
    moments_from_free_cumulants,
)
from freeprob.scalar.algebraic import (
    AlgebraicLaw,
    free_additive_convolution,
    free_multiplicative_convolution,
    subordination,
)
from freeprob.scalar.curves import moments_at_infinity

R = sympy.Rational
g, z, w = sympy.symbols("g z w")


@pytest.fixture(autouse=True)
def _global_precision_untouched():
    before = (mpmath.mp.dps, mpmath.mp.prec)
    yield
    assert (mpmath.mp.dps, mpmath.mp.prec) == before, "a test changed the global mpmath precision"


def rel_close(value, ref, dps):
    """Relative error below 10^(-dps+2), measured at high precision."""
    ctx = context(dps + 30)
    value, ref = ctx.mpc(value), ctx.mpc(ref)
    return abs(value - ref) <= ctx.mpf(10) ** (-dps + 2) * abs(ref)


def same_curve(p, q, gens):
    """True if the polynomials p and q are equal up to a nonzero constant factor."""
    p, q = sympy.Poly(p, *gens), sympy.Poly(q, *gens)
    return sympy.expand(p.as_expr() * q.LC() - q.as_expr() * p.LC()) == 0


# --------------------------------------------------------------------------
# moments and free cumulants
# --------------------------------------------------------------------------

def test_moment_cumulant_round_trip_rational_and_symbolic():
    kappas = [R(3, 7), R(-2), R(5, 3), R(0), R(1, 11), R(-4, 5), R(2), R(9, 13)]
    assert free_cumulants_from_moments(moments_from_free_cumulants(kappas)) == tuple(kappas)
    moms = [R(1, 2), R(7, 3), R(-1, 5), R(4), R(6, 7), R(1, 9), R(-3)]
    assert moments_from_free_cumulants(free_cumulants_from_moments(moms)) == tuple(moms)
    a, b, c = sympy.symbols("a b c")
    ks = [a, b, c, a * b]
    back = free_cumulants_from_moments(moments_from_free_cumulants(ks))
    assert all(sympy.expand(x - y) == 0 for x, y in zip(back, ks))


def _set_partitions(n):
    if n == 0:
        yield []
        return
    for part in _set_partitions(n - 1):
        for i in range(len(part)):
            yield part[:i] + [part[i] + [n - 1]] + part[i + 1:]
        yield part + [[n - 1]]


def _noncrossing(part):
    for b1, b2 in itertools.permutations(part, 2):
        for a, c in itertools.combinations(sorted(b1), 2):
            for b, d in itertools.combinations(sorted(b2), 2):
                if a < b < c < d:
                    return False
    return True


def test_moments_by_brute_force_noncrossing_partitions():
    """m_n = sum over NC(n) of prod kappa_|block|, enumerated directly (independent of the recursion)."""
    ks = sympy.symbols("k1:7")
    got = moments_from_free_cumulants(ks)
    for n in range(1, 7):
        ref = sum(sympy.prod([ks[len(b) - 1] for b in p])
                  for p in _set_partitions(n) if _noncrossing(p))
        assert sympy.expand(got[n - 1] - ref) == 0


def test_known_free_cumulants():
    s, a, lam, al = sympy.symbols("s a lam alpha", positive=True)
    # semicircle: kappa_1 = mean, kappa_2 = variance, the rest 0 (cumulants from its moments)
    kap = free_cumulants_from_moments(Semicircle(s, a).moments(8))
    assert [sympy.expand(x) for x in kap] == [a, s, 0, 0, 0, 0, 0, 0]
    # free Poisson: kappa_n = lam alpha^n, from its Narayana moments
    kap = free_cumulants_from_moments(FreePoisson(lam, al).moments(7))
    assert all(sympy.expand(x - lam * al**n) == 0 for n, x in enumerate(kap, 1))
    # Marchenko-Pastur(c, v) = free Poisson(rate 1/c, jump c v)
    c, v = sympy.symbols("c v", positive=True)
    mp = MarchenkoPastur(c, v)
    assert all(sympy.simplify(x - y) == 0
               for x, y in zip(mp.moments(6), mp.free_poisson.moments(6)))
    assert all(sympy.expand(x - c ** (n - 1) * v**n) == 0
               for n, x in enumerate(free_cumulants_from_moments(mp.moments(6)), 1))


def test_marchenko_pastur_moments_are_narayana_polynomials():
    """m_n = sum_{pi in NC(n)} c^(n - #blocks): count NC partitions by blocks by brute force."""
    c = sympy.Symbol("c", positive=True)
    got = MarchenkoPastur(c).moments(6)
    for n in range(1, 7):
        ref = sum(c ** (n - len(p)) for p in _set_partitions(n) if _noncrossing(p))
        assert sympy.expand(got[n - 1] - ref) == 0
    # square case: Catalan numbers
    assert MarchenkoPastur(1).moments(6) == (1, 2, 5, 14, 42, 132)


@pytest.mark.parametrize("law", [
    Semicircle(3, R(1, 2)), MarchenkoPastur(R(1, 3), 2), MarchenkoPastur(3), FreePoisson(R(5, 2), R(2, 3)),
    Atomic((0, 1, 3), (R(1, 4), R(1, 4), R(1, 2))), Arcsine(-1, 3),
])
def test_exact_moments_equal_series_of_cauchy_equation(law):
    assert moments_at_infinity(law.cauchy_equation(), g, z, 10) == law.moments(10)


# --------------------------------------------------------------------------
# closed forms at 15, 30 and 50 digits
# --------------------------------------------------------------------------

def semicircle_reference(dps, s, zv):
    """G: the root of s g^2 - z g + 1 with Im g < 0 (Im z > 0); density sqrt(4s - x^2)/(2 pi s)."""
    ctx = context(dps + 20)
    s, zv = ctx.mpf(s), ctx.mpc(zv)
    roots = [(zv + sgn * ctx.sqrt(zv**2 - 4 * s)) / (2 * s) for sgn in (1, -1)]
    return min(roots, key=lambda r: ctx.im(r))


def semicircle_density_reference(dps, s, x):
    ctx = context(dps + 20)
    s, x = ctx.mpf(s), ctx.mpf(x)
    return ctx.sqrt(4 * s - x**2) / (2 * ctx.pi * s) if x**2 < 4 * s else ctx.zero


def mp_reference(dps, c, v, zv):
    """Textbook G = (z + v(c-1) - sqrt(z - a-) sqrt(z - a+)) / (2 c v z) and density."""
    ctx = context(dps + 20)
    c, v, zv = ctx.mpf(c), ctx.mpf(v), ctx.mpc(zv)
    lo, hi = v * (1 - ctx.sqrt(c)) ** 2, v * (1 + ctx.sqrt(c)) ** 2
    return (zv + v * (c - 1) - ctx.sqrt(zv - lo) * ctx.sqrt(zv - hi)) / (2 * c * v * zv)


def mp_density_reference(dps, c, v, x):
    ctx = context(dps + 20)
    c, v, x = ctx.mpf(c), ctx.mpf(v), ctx.mpf(x)
    lo, hi = v * (1 - ctx.sqrt(c)) ** 2, v * (1 + ctx.sqrt(c)) ** 2
    return ctx.sqrt((hi - x) * (x - lo)) / (2 * ctx.pi * c * v * x) if lo < x < hi else ctx.zero


POINTS = ["0.3+0.7j", "-1.5+0.01j", "2.5+2j", "4+0.5j", "-0.2+1e-8j"]


@pytest.mark.parametrize("dps", [15, 30, 50])
def test_semicircle_matches_closed_form(dps):
    s = R(3, 2)
    law = Semicircle(s)
    for method in ("closed", "polynomial"):
        for p in POINTS:
            val = law.cauchy(p, dps, method=method)
            assert rel_close(val, semicircle_reference(dps, s, context(dps + 20).mpmathify(p)), dps)
            assert val.imag < 0
        for x in ["0", "0.7", "-2.2", "2.4"]:  # edges at +-2.449...
            d = law.density(x, dps, method=method)
            assert rel_close(d, semicircle_density_reference(dps, s, context(dps + 20).mpf(x)), dps)
        for x in ["2.5", "-7"]:
            assert law.density(x, dps, method=method) == 0


@pytest.mark.parametrize("dps", [15, 30, 50])
@pytest.mark.parametrize("ratio", [R(1, 2), R(2)])
def test_marchenko_pastur_matches_closed_form(dps, ratio):
    v = R(3, 2)
    law = MarchenkoPastur(ratio, v)
    lo, hi = [float(e) for e in law._support_exact()[0]]
    for method in ("closed", "polynomial"):
        for p in POINTS:
            val = law.cauchy(p, dps, method=method)
            assert rel_close(val, mp_reference(dps, ratio, v, context(dps + 20).mpmathify(p)), dps)
            assert val.imag < 0
        for t in (0.05, 0.3, 0.6, 0.95):
            x = mpmath.mpf(lo + t * (hi - lo))
            d = law.density(x, dps, method=method)
            assert rel_close(d, mp_density_reference(dps, ratio, v, x), dps)
        assert law.density(hi + 0.5, dps, method=method) == 0
    if ratio > 1:  # atom at 0 of mass 1 - 1/ratio: (iy) G(iy) -> 1/2
        ctx = context(40)
        y = ctx.mpf(10) ** -30
        for method in ("closed", "polynomial"):
            mass = ctx.mpc(0, y) * ctx.mpc(law.cauchy(ctx.mpc(0, y), 30, method=method))
            assert abs(mass - R(1, 2)) < 1e-25
        with pytest.raises(DomainError):
            law.density(0)
        assert law.atoms() == ((0, R(1, 2)),)


def test_closed_forms_agree_with_stieltjes_integral_of_density():
    """G(z) = int rho(x)/(z - x) dx (+ atom/z), by quadrature: an independent route to 15 digits."""
    ctx = context(25)
    zv = ctx.mpc("0.7", "0.4")
    for law, atom in [(MarchenkoPastur(R(1, 2)), 0), (MarchenkoPastur(2), ctx.mpf(1) / 2),
                      (Semicircle(2, 1), 0), (Arcsine(0, 3), 0)]:
        (a, b), = law.support(25)
        integral = ctx.quad(lambda x: ctx.mpf(law.density(x, 20)) / (zv - x), [ctx.mpf(a), ctx.mpf(b)])
        assert rel_close(law.cauchy(zv, 15), integral + atom / zv, 15)


def test_im_g_negative_above_the_axis_and_one_over_z_at_infinity():
    laws = [Semicircle(2, 1), MarchenkoPastur(R(1, 2)), MarchenkoPastur(3, R(1, 3)),
            FreePoisson(3, R(1, 2)), Arcsine(-1, 3), Atomic((0, 1, 3), (R(1, 4), R(1, 4), R(1, 2)))]
    for law in laws:
        for x, y in itertools.product([-4, -1, 0.5, 2, 6], [1e-6, 0.3, 5]):
            for method in ("closed", "polynomial"):
                gv = law.cauchy(complex(x, y), 15, method=method)
                assert gv.imag < 0
                assert law.cauchy(complex(x, -y), 15, method=method).imag > 0
        big = mpmath.mpc(1e6, 1e6)
        assert abs(law.cauchy(big, 20) * big - 1) < 1e-5
    conv = [free_additive_convolution(Semicircle(1), MarchenkoPastur(R(1, 2))),
            free_multiplicative_convolution(MarchenkoPastur(2), MarchenkoPastur(R(1, 3)))]
    for law in conv:
        for x, y in itertools.product([-2, 0.5, 3], [1e-6, 1]):
            assert law.cauchy(complex(x, y), 15).imag < 0


def test_atom_of_a_free_convolution():
    """Bernoulli(1/4) ⊞ Bernoulli(1/4) has an atom of mass 2 (3/4) - 1 = 1/2 at 0."""
    b = Atomic.bernoulli(R(1, 4))
    law = free_additive_convolution(b, b)
    with pytest.raises(DomainError):
        law.density(0)
    ctx = context(40)
    y = ctx.mpf(10) ** -25
    assert abs(ctx.mpc(0, y) * ctx.mpc(law.cauchy(ctx.mpc(0, y), 30)) - R(1, 2)) < 1e-20
    (a, b_), = law.support(20)  # edges 1 -+ sqrt(3)/2
    r = ctx.sqrt(3) / 2
    assert abs(a - (1 - r)) < 1e-18 and abs(b_ - (1 + r)) < 1e-18


def test_nested_convolution_uses_algebraic_operands():
    b = Atomic.bernoulli(R(1, 2))
    law = free_additive_convolution(free_additive_convolution(b, b), Semicircle(R(1, 4)))
    assert law.moments(8) == law.moments(8, method="origin")
    assert rel_close(law.density("1", 20), law.density("1", 20, method="subordination"), 20)


# --------------------------------------------------------------------------
# free additive convolution
# --------------------------------------------------------------------------

def test_semicircles_add_variances_symbolically_and_numerically():
    s1, s2 = sympy.symbols("s1 s2", positive=True)
    law = free_additive_convolution(Semicircle(s1), Semicircle(s2))
    assert same_curve(law.cauchy_equation(), (s1 + s2) * g**2 - z * g + 1, (g, z))
    rec = law.elimination
    assert rec.mismatch[rec.kept] is None and "free additive convolution" in rec.reason
    num = law.subs({s1: R(1, 2), s2: R(3, 4)})
    ref = Semicircle(R(5, 4))
    for x in ["0", "1.1", "-2.1"]:
        assert rel_close(num.density(x, 30), ref.density(x, 30), 30)
    assert rel_close(num.cauchy("0.5+0.5j", 30), ref.cauchy("0.5+0.5j", 30), 30)
    assert num.density(3, 30) == 0


@pytest.fixture(scope="module")
def semicircle_plus_mp():
    return free_additive_convolution(Semicircle(1), MarchenkoPastur(R(1, 2)))


def test_semicircle_plus_marchenko_pastur_is_a_cubic(semicircle_plus_mp):
    law = semicircle_plus_mp
    P = law.cauchy_equation()
    assert P.degree(g) == 3
    # R_{mu ⊞ nu} = R_mu + R_nu: w + 1/(1 - w/2)
    assert sympy.simplify(law.r_transform() - (w + 1 / (1 - w / 2))) == 0
    assert law.moments(12) == law.moments(12, method="origin")
    rec = law.elimination
    assert rec.factors[rec.kept] == P.as_expr() or same_curve(rec.factors[rec.kept], P, (g, z))
    assert all(m is not None for i, m in enumerate(rec.mismatch) if i != rec.kept)


def test_semicircle_plus_mp_density_matches_subordination(semicircle_plus_mp):
    law = semicircle_plus_mp
    for x in ["-1", "0", "0.5", "1.5", "3.2"]:
        via_poly = law.density(x, 30)
        sub = law.subordination(x, 30)
        assert via_poly > 0
        assert rel_close(via_poly, sub.density(), 30)
        assert sub.omega1.imag > 0 and sub.omega2.imag > 0
        # the subordination identities themselves
        ctx = context(40)
        assert rel_close(Semicircle(1).cauchy(sub.omega1, 30), sub.cauchy, 30)
        assert rel_close(MarchenkoPastur(R(1, 2)).cauchy(sub.omega2, 30), sub.cauchy, 30)
        assert abs(ctx.mpc(sub.omega1) + sub.omega2 - ctx.mpf(x) - 1 / ctx.mpc(sub.cauchy)) < 1e-27
    zc = "0.4+0.25j"
    direct = subordination(Semicircle(1), MarchenkoPastur(R(1, 2)), zc, 30)
    assert rel_close(law.cauchy(zc, 30), direct.cauchy, 30)
    assert rel_close(law.cauchy(zc, 30), law.cauchy(zc, 30, method="subordination"), 30)


def test_semicircle_plus_mp_has_mass_one(semicircle_plus_mp):
    """mpmath quad between the support edges (roots of the discriminant), 20 digits.

    x = a + (b - a)(1 - cos t)/2 turns the square-root edges into an analytic
    integrand on [0, pi], where Gauss-Legendre converges fast and never
    samples the density closer to an edge than ~1e-8.
    """
    law = semicircle_plus_mp
    edges = law.support(30)
    assert len(edges) == 1
    ctx = context(25)
    a, b = (ctx.mpf(e) for e in edges[0])
    assert law.density(a - ctx.mpf("1e-3"), 20) == 0 and law.density(b + ctx.mpf("1e-3"), 20) > -1
    assert law.density(a + ctx.mpf("1e-3"), 20) > 0

    def integrand(t):
        x = a + (b - a) * (1 - ctx.cos(t)) / 2
        return ctx.mpf(law.density(x, 22)) * (b - a) / 2 * ctx.sin(t)

    mass = ctx.quad(integrand, [0, ctx.pi], method="gauss-legendre")
    assert abs(mass - 1) < ctx.mpf(10) ** -20


def test_bernoulli_plus_bernoulli_is_arcsine():
    b = Atomic.bernoulli(R(1, 2))
    law = free_additive_convolution(b, b)
    assert same_curve(law.cauchy_equation(), z * (z - 2) * g**2 - 1, (g, z))
    assert law.moments(10) == Arcsine(0, 2).moments(10)
    for dps in (15, 30):
        ctx = context(dps + 20)
        for x in ["0.1", "0.5", "1", "1.7", "1.999"]:
            xv = ctx.mpf(x)
            assert rel_close(law.density(x, dps), 1 / (ctx.pi * ctx.sqrt(xv * (2 - xv))), dps)
        assert law.density("2.5", dps) == 0 and law.density("-0.5", dps) == 0
    assert law.density(1, 20) == Arcsine(0, 2).density(1, 20)


# --------------------------------------------------------------------------
# free multiplicative convolution
# --------------------------------------------------------------------------

def fuss_catalan(k):
    return sympy.binomial(3 * k, k) / (2 * k + 1)


def wick_moment(k, rho_p, rho_n, rho_m):
    """lim (1/p) E Tr (X1 X2 X2^T X1^T / (n m))^k by Wick's theorem, X1: p x n, X2: n x m, N(0, 1).

    Enumerate all pairings of the X1's with the X1^T's and the X2's with the
    X2^T's in the cyclic word, identify indices (union-find) and keep the
    pairings with the maximal power of N, 2k + 1 index cycles (the planar ones).
    """
    letters = [("X1", False), ("X2", False), ("X2", True), ("X1", True)] * k
    spaces = ["p", "n", "m", "n"] * k  # space of the index before each letter
    L = len(letters)
    rho = {"p": rho_p, "n": rho_n, "m": rho_m}
    total, best = 0, 0
    plain = {name: [i for i, (nm, t) in enumerate(letters) if nm == name and not t] for name in ("X1", "X2")}
    trans = {name: [i for i, (nm, t) in enumerate(letters) if nm == name and t] for name in ("X1", "X2")}
    for perm1 in itertools.permutations(trans["X1"]):
        for perm2 in itertools.permutations(trans["X2"]):
            parent = list(range(L))

            def find(i):
                while parent[i] != i:
                    parent[i] = parent[parent[i]]
                    i = parent[i]
                return i

            for a_list, b_list in ((plain["X1"], perm1), (plain["X2"], perm2)):
                for a, b in zip(a_list, b_list):
                    # X[i_a, i_{a+1}] X^T[i_b, i_{b+1}] = X[i_a, i_{a+1}] X[i_{b+1}, i_b]
                    for u, v in ((a, (b + 1) % L), ((a + 1) % L, b)):
                        parent[find(u)] = find(v)
            comps = {find(i) for i in range(L)}
            best = max(best, len(comps))
            if len(comps) == 2 * k + 1:
                total += sympy.prod([rho[spaces[c]] for c in comps])
    assert best == 2 * k + 1
    return total / (rho_p * rho_n**k * rho_m**k)


def test_mp_times_mp_square_is_fuss_catalan():
    law = free_multiplicative_convolution(MarchenkoPastur(1), MarchenkoPastur(1))
    assert same_curve(law.cauchy_equation(), z**2 * g**3 - z * g + 1, (g, z))
    fc = tuple(fuss_catalan(k) for k in range(1, 13))
    assert law.moments(12) == fc
    assert law.moments(12, method="origin") == fc
    assert [wick_moment(k, 1, 1, 1) for k in (1, 2, 3)] == [1, 3, 12]
    assert sympy.simplify(law.s_transform() - 1 / (1 + w) ** 2) == 0
    # density against the closed form of Penson and Zyczkowski (2011), 30 digits
    ctx = context(50)
    for x in ["0.1", "1", "3", "6.5"]:
        xv = ctx.mpf(x)
        r = 27 + 3 * ctx.sqrt(81 - 12 * xv)
        two_thirds = ctx.mpf(2) / 3
        ref = (ctx.cbrt(2) * ctx.sqrt(3) / (12 * ctx.pi)
               * (ctx.cbrt(2) * r**two_thirds - 6 * ctx.cbrt(xv)) / (xv**two_thirds * ctx.cbrt(r)))
        assert rel_close(law.density(x, 30), ref, 30)


def test_mp_times_mp_rectangular_matches_wick_count():
    """W = X1 X2 X2^T X1^T / (n m) with p : n : m = 1/2 : 1 : 2/3.

    Its nonzero spectrum is that of (X1^T X1 / n)(X2 X2^T / m) on n x n,
    i.e. MP(n/p, variance p/n) ⊠ MP(n/m), and p m_k(W) = n m_k(law).
    """
    rho_p, rho_n, rho_m = R(1, 2), R(1), R(2, 3)
    law = free_multiplicative_convolution(MarchenkoPastur(rho_n / rho_p, rho_p / rho_n),
                                          MarchenkoPastur(rho_n / rho_m))
    moms = law.moments(10)
    assert moms == law.moments(10, method="origin")
    for k in range(1, 5):
        assert rho_n / rho_p * moms[k - 1] == wick_moment(k, rho_p, rho_n, rho_m)
    # S-transforms multiply
    s_expected = 1 / ((rho_p / rho_n) * (1 + 2 * w)) / (1 + R(3, 2) * w)
    assert sympy.simplify(law.s_transform() - s_expected) == 0
    assert law.density("1", 20) > 0 and law.nonnegative()


# --------------------------------------------------------------------------
# transforms, construction, errors
# --------------------------------------------------------------------------

def test_closed_transforms_satisfy_the_generic_relations():
    c, v, s, a = sympy.symbols("c v s a", positive=True)
    Rs, Ss = sympy.symbols("R S")
    for law in [Semicircle(s, a), MarchenkoPastur(c, v), FreePoisson(c, v), Arcsine(0, 3)]:
        rel = law.r_transform(relation=True)
        assert sympy.simplify(rel.as_expr().subs(Rs, law.r_transform())) == 0
        ser = sympy.series(law.r_transform(), w, 0, 6).removeO()
        kap = law.free_cumulants(6)
        assert all(sympy.simplify(ser.coeff(w, n) - kap[n]) == 0 for n in range(6))
    for law in [MarchenkoPastur(c, v), FreePoisson(c, v), Atomic.bernoulli(R(1, 3))]:
        rel = law.s_transform(relation=True)
        assert sympy.simplify(rel.as_expr().subs(Ss, law.s_transform())) == 0
    # S of the arcsine law on [1, 3] is algebraic of degree 2; check its series against the moments
    rel = Arcsine(1, 3).s_transform()
    assert isinstance(rel, sympy.Poly) and rel.degree(Ss) == 2
    # S(0) = 1/m1 and S'(0) = -(m2 - m1^2)/m1^3 (mean 2, variance 1/2), by implicit differentiation
    F = rel.as_expr()
    assert F.subs({Ss: R(1, 2), w: 0}) == 0
    slope = (-sympy.diff(F, w) / sympy.diff(F, Ss)).subs({Ss: R(1, 2), w: 0})
    assert slope == R(-1, 16)
    p = sympy.Symbol("p", positive=True)
    assert sympy.simplify(Atomic.bernoulli(p).s_transform() - (1 + w) / (w + p)) == 0
    assert Semicircle(1, 3).s_transform().degree(Ss) == 2  # not rational: a relation
    with pytest.raises(DomainError):
        Semicircle().s_transform()


def test_algebraic_law_from_a_user_polynomial():
    law = AlgebraicLaw(2 * g**2 - 2 * z * g + 2, g, z)  # the standard semicircle, unnormalized
    assert law == AlgebraicLaw(g**2 - z * g + 1, g, z)
    assert rel_close(law.density("0.3", 30), Semicircle().density("0.3", 30), 30)
    assert law.free_cumulants(4) == (0, 1, 0, 0)
    with pytest.raises(DomainError):
        AlgebraicLaw(g**2 - z * g - 1 + g * z**2, g, z)  # no branch g ~ 1/z
    t = sympy.Symbol("t", positive=True)
    with pytest.raises(DomainError):
        AlgebraicLaw(t * g**2 - z * g + 1, g, z).density(0)  # symbolic parameter


def test_domain_errors():
    with pytest.raises(DomainError):
        Semicircle(-1)
    with pytest.raises(DomainError):
        MarchenkoPastur(0)
    with pytest.raises(DomainError):
        Atomic((0, 1), (R(1, 2), R(1, 3)))
    with pytest.raises(DomainError):
        Arcsine(2, 1)
    with pytest.raises(DomainError):
        Atomic.bernoulli(R(1, 3)).density(1)
    with pytest.raises(DomainError):
        free_multiplicative_convolution(Semicircle(), MarchenkoPastur(1))
    with pytest.raises(DomainError):
        Semicircle().cauchy(1j, method="subordination")
    assert Atomic.bernoulli(R(1, 3)).density("0.5") == 0


def test_elimination_error_is_raised_for_ambiguous_polynomials():
    with pytest.raises((EliminationError, DomainError)):
        AlgebraicLaw((g * z - 1) ** 2, g, z)


def test_float_parameters_are_read_as_decimals():
    assert MarchenkoPastur(0.5) == MarchenkoPastur(R(1, 2))
    ref = mp_density_reference(15, R(1, 2), 1, 1)
    assert math.isclose(float(MarchenkoPastur(0.5).density(1)), float(ref), rel_tol=1e-14)
