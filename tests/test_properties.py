"""Property tests: random well-scaled models, two routes to their moments, and Monte-Carlo.

A strategy builds random polynomials in Gaussian (rectangular and square)
and Wigner matrices over three spaces with random rational ratios: sums with
signed rational coefficients, products, transposes of sub-expressions, shifts
by the identity, and repeated occurrences of the same matrix. Every leaf
occurrence carries an explicit scale that makes it of order one, so every
monomial scales as ``N^0``. For each expression (its squared singular values,
or the eigenvalues of a symmetrization of it):

* **two routes to the moments.** The exact moments from the Dyson equation's
  series at infinity (``law.moments(k)``, exact algebraic numbers) must equal
  the moments read off the Cauchy transform solved by Newton's method
  (``law.cauchy(z, dps=D)``) on a circle ``|z| = R`` around the support,
  ``m_k = (1/2 pi i) \\oint z^k G(z) dz`` by the trapezoidal rule. With ``M``
  nodes at angles ``2 pi (j + 1/2)/M`` the rule returns
  ``sum_l (-1)^l m_(k + l M) R^(-l M)``, so with ``r`` a bound of the support
  the aliasing error is below ``r^k q/(1 - q)``, ``q = (r/R)^M``, and each
  ``G`` (error below ``10^-D max(1, |G|)``) adds at most
  ``R^(k+1) 10^-D max(1, |G|)``. The tolerance is the sum of the two; ``M`` is
  chosen so that the first is below the second.
* **Monte-Carlo.** The Stieltjes transform of samples at ``N`` and ``N/2``
  (sizes exactly proportional, so the ``1/N`` bias is removed by Richardson
  extrapolation ``2 s(N) - s(N/2)``), against ``G`` at a point off the axis;
  variances pooled on the ``sigma/N`` scale as in :func:`freeprob.check`, and
  the Student-t critical value at family-wise level ``10^-3`` over every
  comparison the profile makes.

Profiles: ``freeprob-fast`` (a few examples, default suite) and
``freeprob-full`` (the slow suite, ``-m slow``; :data:`FULL_EXAMPLES`
expressions per test). Both are derandomized, so a run is reproducible.
"""

import math

import numpy as np
import pytest
import sympy
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

import freeprob as fp
from freeprob._precision import context
from freeprob.expr.tree import expand
from freeprob.montecarlo.stats import student_t_quantile

FAST_EXAMPLES = 6
FULL_EXAMPLES = 250

# no shrinking: a failure is reported as drawn (shrinking a slow example can take many minutes)
_COMMON = dict(deadline=None, derandomize=True, database=None, print_blob=True,
               phases=[Phase.explicit, Phase.reuse, Phase.generate],
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.register_profile("freeprob-fast", max_examples=FAST_EXAMPLES, **_COMMON)
settings.register_profile("freeprob-full", max_examples=FULL_EXAMPLES, **_COMMON)
FAST = settings.get_profile("freeprob-fast")
FULL = settings.get_profile("freeprob-full")

#: Monte-Carlo: largest matrix side at size N, replicates at N and at N/2.
MC_SIDE = 320
MC_REPS = (20, 40)
#: Comparisons a full run makes (real and imaginary part per expression, two tests): the Bonferroni count.
COMPARISONS = 2 * 2 * FULL_EXAMPLES
LEVEL = 1e-3
#: Moments compared per expression.
MOMENTS = 6

A, B, C = fp.dims("a b c")
SPACES = (A, B, C)
#: Leaves by name: kind and shape. X, Y, Z are rectangular Gaussians around the triangle a-b-c,
#: S a square (non-symmetric) Gaussian on a, W and V Wigner matrices on a and b.
LEAVES = {
    "X": ("gaussian", (A, B)),
    "Y": ("gaussian", (B, C)),
    "Z": ("gaussian", (C, A)),
    "S": ("gaussian", (A, A)),
    "W": ("wigner", (A, A)),
    "V": ("wigner", (B, B)),
}
RATIONAL = st.builds(sympy.Rational, st.integers(1, 3), st.integers(1, 3))
COEFF = st.sampled_from([sympy.Integer(1), sympy.Integer(2), sympy.Rational(1, 2), sympy.Rational(3, 2),
                         sympy.Integer(-1), sympy.Rational(-2, 3)])


class Model:
    """What one example draws: its leaves (a variance each), the scale of each occurrence, the ratios."""

    def __init__(self, draw):
        self.draw = draw
        self.leaves = {}
        for name, (kind, (r, c)) in LEAVES.items():
            # the variance is a number, or carries the scale itself (v / dim): both are O(1) leaves
            v = draw(RATIONAL)
            if draw(st.booleans()):
                self.leaves[name] = (fp.gaussian(name, (r, c), variance=v) if kind == "gaussian"
                                     else fp.wigner(name, r, variance=v), sympy.Integer(1) / sympy.sqrt(r))
            else:
                dim = draw(st.sampled_from((r, c)))
                self.leaves[name] = (fp.gaussian(name, (r, c), variance=v / dim) if kind == "gaussian"
                                     else fp.wigner(name, r, variance=v / dim), sympy.Integer(1))
        self.count = 0

    def edges(self, s):
        """``(expression, end space)`` for every scaled leaf or transposed leaf leaving space ``s``."""
        out = []
        for name in sorted(self.leaves):
            m, scale = self.leaves[name]
            rows, cols = m.shape
            if rows == s:
                out.append((name, False, cols))
            if cols == s and m.kind == "gaussian":
                out.append((name, True, rows))
        return out

    def leaf(self, name, transposed):
        m, scale = self.leaves[name]
        if scale == 1:
            # explicit scale factors too, on a leaf whose variance already carries 1/dim: an O(1) constant
            rows, cols = m.shape
            k = self.draw(st.sampled_from([sympy.Integer(1), sympy.sqrt(2), sympy.sqrt(rows / cols)]))
        else:
            k = scale
        self.count += 1
        e = m.T if transposed else m
        return e if k == 1 else k * e

    def walk(self, s, t):
        """A product of scaled leaves from ``s`` to ``t`` (1 to 3 factors)."""
        extra = self.draw(st.integers(0, 1))
        expr, here = None, s
        for _ in range(extra):
            name, tr, nxt = self.draw(st.sampled_from(self.edges(here)))
            f = self.leaf(name, tr)
            expr, here = (f if expr is None else expr @ f), nxt
        # then to t: one step, or two where no leaf joins the spaces (c to c)
        direct = [e for e in self.edges(here) if e[2] == t]
        if not direct:
            name, tr, here = self.draw(st.sampled_from([e for e in self.edges(here) if e[2] != here]))
            f = self.leaf(name, tr)
            expr = f if expr is None else expr @ f
            direct = [e for e in self.edges(here) if e[2] == t]
        name, tr, _ = self.draw(st.sampled_from(direct))
        f = self.leaf(name, tr)
        return f if expr is None else expr @ f

    def path(self, s, t, depth):
        """A random expression of shape ``(s, t)``."""
        kinds = ["word"] if depth == 0 or self.count >= 6 else ["word", "sum", "product", "transpose"]
        if s == t:
            kinds.append("shift")
        kind = self.draw(st.sampled_from(kinds))
        if kind == "word":
            return self.walk(s, t)
        if kind == "sum":
            return self.draw(COEFF) * self.path(s, t, depth - 1) + self.draw(COEFF) * self.path(s, t, depth - 1)
        if kind == "product":
            u = self.draw(st.sampled_from(SPACES))
            return self.path(s, u, depth - 1) @ self.path(u, t, depth - 1)
        if kind == "transpose":
            return self.path(t, s, depth - 1).T
        return self.path(s, s, max(depth - 1, 0)) + self.draw(COEFF) * fp.identity(s)


@st.composite
def cases(draw, law):
    """``(expression, ratios)`` for ``law`` ("eigenvalues" or "squared-singular-values")."""
    m = Model(draw)
    s, t = draw(st.sampled_from(SPACES)), draw(st.sampled_from(SPACES))
    p = m.path(s, t, draw(st.integers(0, 2)))
    if law == "eigenvalues":
        form = draw(st.sampled_from(["p p^T", "p^T p"] + (["p + p^T"] if s == t else [])))
        p = {"p p^T": lambda: p @ p.T, "p^T p": lambda: p.T @ p, "p + p^T": lambda: p + p.T}[form]()
    # signed coefficients may cancel everything: a zero expression has no law to test
    assume(expand(p))
    ratios = {d: draw(RATIONAL) for d in p.dimensions()}
    return p, ratios


def moments_by_contour(law, dps, kmax):
    """Moments ``m_1..m_kmax`` from ``law.cauchy`` on a circle, with their error bounds (mpf)."""
    ctx = context(dps + 10)
    r = ctx.mpf(law.scale)
    big_r = 2 * r
    # nodes: the aliasing bound r^k q/(1-q) below R^(k+1) 10^-dps for every k <= kmax (q = 2^-M)
    need = max(math.log2(r ** k / big_r ** (k + 1)) for k in range(kmax + 1)) + dps * math.log2(10) + 2
    nodes = 2 * max(kmax + 1, math.ceil(max(need, 1) / 2))
    gs, zs = [], []
    for j in range(nodes // 2):  # the upper half; G(conj z) = conj G(z)
        z = big_r * ctx.expjpi(ctx.mpf(2 * j + 1) / nodes)
        zs.append(z)
        gs.append(ctx.mpc(law.cauchy(z, dps=dps)))
    gmax = max(1, max(abs(g) for g in gs))
    q = (r / big_r) ** nodes
    out = []
    for k in range(1, kmax + 1):
        mk = 2 * sum((z ** (k + 1) * g).real for z, g in zip(zs, gs)) / nodes
        bound = big_r ** (k + 1) * ctx.mpf(10) ** -dps * gmax + r ** k * q / (1 - q)
        out.append((mk, bound))
    return out, r


def check_moments(law, dps):
    exact = law.moments(MOMENTS)
    assert all(isinstance(m, sympy.Basic) and m.is_number and m.is_algebraic for m in exact), exact
    contour, r = moments_by_contour(law, dps, MOMENTS)
    for k, (m, (mk, bound)) in enumerate(zip(exact, contour), start=1):
        value = sympy.N(m, dps + 10)
        assert abs(mk - sympy.re(value).evalf(dps + 10)) <= bound, (law.expr, k, m, mk, bound)
        # the moments of a law supported in [-r, r] are at most r^k
        assert abs(value) <= r ** k * (1 + 1e-12), (law.expr, k, m, r)
    return exact


def mc_size(ratios):
    """``N`` with every ``rho N`` and ``rho N/2`` an integer and the largest side near :data:`MC_SIDE`."""
    step = 2 * math.lcm(*[int(sympy.fraction(r)[1]) for r in ratios.values()])
    biggest = max(ratios.values())
    return max(step, step * int(MC_SIDE / (biggest * step)))


def check_monte_carlo(law, ratios, exact, seed):
    m1, m2 = (float(sympy.re(sympy.N(m))) for m in exact[:2])
    sd = math.sqrt(max(m2 - m1 * m1, 0.0))
    assume(sd > 0)  # a deterministic spectrum (every random part cancelled in law)
    z = complex(m1 + 0.3 * sd, 0.7 * sd)
    g = complex(law.cauchy(z, dps=15))
    n = mc_size(ratios)
    rng = np.random.default_rng(seed)
    runs = []
    for size, reps in ((n, MC_REPS[0]), (n // 2, MC_REPS[1])):
        vals = np.array([np.mean(1 / (z - fp.sample_spectrum(law, size, rng))) for _ in range(reps)])
        runs.append((size, vals))
    (nb, sb), (nh, sh) = runs
    rb, rh = len(sb), len(sh)
    df = rb + rh - 2
    est = 2 * sb.mean() - sh.mean()
    crit = student_t_quantile(1 - LEVEL / (2 * COMPARISONS), df)
    for part in (np.real, np.imag):
        # linear statistics fluctuate like sigma/N: pool the two sizes' variances on that scale
        sigma2 = ((rb - 1) * nb**2 * part(sb).var(ddof=1) + (rh - 1) * nh**2 * part(sh).var(ddof=1)) / df
        se = math.sqrt(4 * sigma2 / rb / nb**2 + sigma2 / rh / nh**2)
        assert abs(part(est) - part(g)) <= crit * se, (law.expr, ratios, z, g, est, se, crit)


def run_case(case, law_kind, dps, seed):
    expr, ratios = case
    build = fp.eigenvalue_law if law_kind == "eigenvalues" else fp.singular_value_law
    law = build(expr, ratios=ratios)
    exact = check_moments(law, dps)
    check_monte_carlo(law, ratios, exact, seed)


DPS = st.sampled_from([15, 20, 30])
SEED = st.integers(0, 2**32 - 1)


@FAST
@given(cases("eigenvalues"), DPS, SEED)
def test_random_eigenvalue_laws(case, dps, seed):
    run_case(case, "eigenvalues", dps, seed)


@FAST
@given(cases("squared-singular-values"), DPS, SEED)
def test_random_singular_value_laws(case, dps, seed):
    run_case(case, "squared-singular-values", dps, seed)


@pytest.mark.slow
@FULL
@given(cases("eigenvalues"), DPS, SEED)
def test_random_eigenvalue_laws_full(case, dps, seed):
    run_case(case, "eigenvalues", dps, seed)


@pytest.mark.slow
@FULL
@given(cases("squared-singular-values"), DPS, SEED)
def test_random_singular_value_laws_full(case, dps, seed):
    run_case(case, "squared-singular-values", dps, seed)
