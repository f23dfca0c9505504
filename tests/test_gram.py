"""The eigenvalues of a Gram matrix ``c F F^T`` solved as the squared singular values of ``sqrt(c) F``.

Contract (docs/math.md §3.2, docs/engine.md: pencil): the law is the same as
through the symmetric pencil of the product (``gram=False``), which these
tests compute independently: Cauchy transforms to 30 digits, exact moments,
support and atoms. Only the system shrinks. The point 0, where the
hermitized system of a non-square factor is singular, keeps the eigenvalue
law's meaning (an atom or a hard edge there has no density).
"""

import mpmath
import numpy as np
import pytest
import sympy

import freeprob as fp
from freeprob.reduce.reduction import gram_factor

DPS = 30


def _pair(expr, ratios, params=None):
    return (fp.SpectralLaw(expr, "eigenvalues", ratios, params),
            fp.SpectralLaw(expr, "eigenvalues", ratios, params, gram=False))


def _model_pair(name, **values):
    m = fp.find_model(name)
    ratios = {**m.ratios, **{k: v for k, v in values.items() if fp.dims(k) in m.ratios}}
    return (fp.SpectralLaw(m.expr, m.law_kind, ratios, m.params),
            fp.SpectralLaw(m.expr, m.law_kind, ratios, m.params, gram=False))


def _close(a, b, dps=DPS):
    """Two values each verified to ``10^-dps`` (relative to ``max(1, |value|)``) of the truth."""
    return abs(a - b) <= 2 * mpmath.mpf(10) ** (-dps) * max(1, abs(b))


# -- recognizing the Gram form ----------------------------------------------------

def test_gram_factor_reads_palindromic_products():
    n, p = fp.dims("n p")
    X = fp.gaussian("X", (n, p))
    Y = fp.gaussian("Y", (n, p))
    S = fp.deterministic("S", (n, n), {1: "1/2", 4: "1/2"})
    D = fp.deterministic("D", (p, p), {1: "1/2", 4: "1/2"})
    assert gram_factor(X @ X.T / n) == (1 / n, X)
    assert gram_factor(X.T @ X) == (1, X.T)
    assert gram_factor((X / 2) @ (X.T / 3)) == (sympy.Rational(1, 6), X)
    c, f = gram_factor(S @ X @ X.T @ S / n)
    assert c == 1 / n and f == S @ X
    # (X X^T)^2 = (X X^T)(X X^T)^T: a Gram matrix too
    c, f = gram_factor(X @ X.T @ X @ X.T)
    assert c == 1 and f == X @ X.T
    for not_gram in (X @ Y.T / n, X @ X.T + Y @ Y.T, X @ D @ X.T, X @ X.T @ X @ Y.T):
        assert gram_factor(not_gram) == (None, None)


def test_which_laws_are_reduced_through_the_factor():
    n, p = fp.dims("n p")
    X = fp.gaussian("X", (n, p))
    W = fp.wigner("W", n)
    assert fp.SpectralLaw(X @ X.T / n, "eigenvalues", {n: 1, p: 2}).reduction.kind == "squared-singular-values"
    # a negative coefficient has no real square root, and a sum is no product: the symmetric pencil
    assert fp.SpectralLaw(-(X @ X.T) / n, "eigenvalues", {n: 1, p: 2}).reduction.kind == "eigenvalues"
    assert fp.SpectralLaw(W / sympy.sqrt(n) + X @ X.T / n, "eigenvalues", {n: 1, p: 2}).reduction.kind == "eigenvalues"
    assert fp.SpectralLaw(X @ X.T / n, "eigenvalues", {n: 1, p: 2}, gram=False).reduction.kind == "eigenvalues"


def test_the_systems_shrink():
    for name, before, after in (("block-variance-profile", 18, 6), ("marchenko-pastur", 6, 2),
                                ("population-covariance", 9, 3)):
        gram, symmetric = _model_pair(name)
        assert (symmetric.system.n_unknowns, gram.system.n_unknowns) == (before, after)


def test_a_scaling_error_names_the_expression_given():
    n, p = fp.dims("n p")
    X = fp.gaussian("X", (n, p))
    with pytest.raises(fp.ScalingError, match=r"X @ X\.T scales as N\^\(1\)"):
        fp.SpectralLaw(X @ X.T, "eigenvalues", {n: 1, p: 2})


# -- the same law -------------------------------------------------------------------

CASES = [
    ("marchenko-pastur", {}),            # p/n = 1/2: a gap at 0
    ("marchenko-pastur", {"p": 2}),      # an atom 1/2 at 0
    ("marchenko-pastur", {"p": 1}),      # a hard edge at 0
    ("population-covariance", {}),       # S X X^T S / n, a deterministic factor
    ("block-variance-profile", {}),      # a variance profile on cells
]


@pytest.mark.parametrize("name, values", CASES)
def test_the_same_cauchy_transform_to_30_digits(name, values):
    gram, symmetric = _model_pair(name, **values)
    for z in ("0.7 + 0.3*I", "2.5 + 0.01*I", "-0.4 + 1e-3*I", "0.2"):
        assert _close(gram.cauchy(z, dps=DPS), symmetric.cauchy(z, dps=DPS))


@pytest.mark.parametrize("name, values", CASES)
def test_the_same_moments_support_and_atoms(name, values):
    gram, symmetric = _model_pair(name, **values)
    assert gram.moments(6) == symmetric.moments(6)  # exact numbers
    # 15 digits: the symmetric system of block-variance-profile verifies its hard edge at 0 to 15 digits only
    ours, theirs = gram.support(15), symmetric.support(15)
    assert len(ours) == len(theirs)
    assert all(_close(a, b, 15) for x, y in zip(ours, theirs) for a, b in zip(x, y))
    ours, theirs = gram.atoms(15), symmetric.atoms(15)
    assert len(ours) == len(theirs)
    assert all(_close(x, y, 15) and _close(m, w, 15) for (x, m), (y, w) in zip(ours, theirs))


def test_a_hard_edge_the_symmetric_system_cannot_verify():
    """block-variance-profile's support starts at 0 (a hard edge). Its symmetric system (18 unknowns)
    cannot continue the solution close enough to 0 to verify it beyond 15 digits; the factor's
    hermitization does, and its edges at 30 digits agree with those at 15 and 20."""
    gram, symmetric = _model_pair("block-variance-profile")
    with pytest.raises(fp.ConvergenceError, match="hard edge at 0"):
        symmetric.support(20)
    (a30, b30), = gram.support(30)
    (a15, b15), = symmetric.support(15)
    (a20, b20), = gram.support(20)
    assert a30 == a20 == a15 == 0 and _close(b30, b15, 15) and _close(b30, b20, 20)


# -- the point 0 ----------------------------------------------------------------------

def test_at_zero_the_eigenvalue_law_keeps_its_meaning():
    gap, _ = _model_pair("marchenko-pastur")
    atom, _ = _model_pair("marchenko-pastur", p=2)
    hard, _ = _model_pair("marchenko-pastur", p=1)
    # in the gap below the support: density 0, G(0) real (-2 for ratio 1/2: 1/(ratio - 1))
    assert gap.density(0, dps=DPS) == 0
    assert _close(gap.cauchy(0, dps=DPS), mpmath.mpf(-2))
    g = gap.cauchy_fast(np.array([0j]))[0]
    assert abs(g + 2) <= 1e-12 * 2  # the double-precision contract: 1e-12 relative to max(1, |G|)
    # next to 0 too (the hermitized variable sqrt(w) is singular there for a non-square factor)
    for w in (1e-21, 1e-27, 1e-31):
        assert abs(gap.cauchy_fast(np.array([w + 0j]))[0] + 2) <= 1e-12 * 2
        assert _close(gap.cauchy(w, dps=20), mpmath.mpf(-2), 20)
    # at an atom and at a hard edge the density does not exist: an error, not a number
    for law in (atom, hard):
        with pytest.raises(fp.ConvergenceError):
            law.density(0, dps=20)
        assert np.isnan(law.density_fast(np.array([0.0]))[0])
    # below 0 there is no mass
    assert atom.density(-0.5, dps=20) == 0


def test_a_zero_mass_at_0_with_quadrature_coefficients_comes_from_one_symmetric_solve(monkeypatch):
    """deep-features-tanh's coefficients are Gaussian means (quadratures at each precision): the mass at 0
    is settled by one solve next to 0 in the symmetric system, not by a descent to 0 in the hermitized one
    (whose ladder of precisions would each cost new quadratures). With exact coefficients the descent runs."""
    import freeprob.solve.edges as edges

    law = fp.law_of(fp.find_model("deep-features-tanh"))
    assert law._gram and law._quadrature_coefficients and law.atom_lower_bound() == 0
    with monkeypatch.context() as mp:
        mp.setattr(edges._AxisPath, "start", lambda self: pytest.fail("the imaginary-axis descent ran"))
        assert law._at_zero(15) == (0, "bound")
    mp_law = fp.law_of(fp.find_model("marchenko-pastur"))
    assert not mp_law._quadrature_coefficients
    assert mp_law._at_zero(15) == (0, "bound")
    assert mp_law._cache.peek("symmetric") is None  # no symmetric system was made


def test_a_symmetric_system_too_large_to_make(monkeypatch):
    """The symmetric pencil carries each leaf twice: for a Gram law whose factor fits the unknowns a law
    solves but whose symmetric system does not, points at 0 are a ConvergenceError that says so (not the
    too-large error of a law that was made), and the mass at 0 comes from the hermitized system's descent,
    equal to the one the symmetric system gives."""
    import freeprob.law as law_module

    ref = fp.law_of(fp.find_model("deep-features-tanh"))._at_zero(15)
    law = fp.law_of(fp.find_model("deep-features-tanh"))
    small = law.system.n_unknowns
    monkeypatch.setattr(law_module, "MAX_UNKNOWNS", small)  # the factor's system fits, the symmetric one not
    with pytest.raises(fp.ConvergenceError, match="symmetric system, which cannot be made"):
        law.cauchy_fast(np.array([0j]))
    mass, _ = law._at_zero(15)
    assert mass == ref[0] == 0


def test_the_printed_equations_say_how_the_law_was_reduced():
    import io
    import json

    from freeprob.cli import main

    out = io.StringIO()
    assert main(["equations", "marchenko-pastur"], out=out) == 0
    assert "# reduced as the squared singular values of X/(sqrt(n)) (the same law): z below is sqrt(w)" in out.getvalue()
    out = io.StringIO()
    assert main(["equations", "marchenko-pastur", "--json"], out=out) == 0
    assert json.loads(out.getvalue())["reduced_as"] == "squared singular values of X/(sqrt(n))"
    out = io.StringIO()
    assert main(["equations", "wigner-semicircle", "--json"], out=out) == 0
    assert json.loads(out.getvalue())["reduced_as"] is None


def test_an_atom_away_from_0():
    """(I + X Y^T / p)(I + X Y^T / p)^T with Y of rank 1/4: the eigenvalue 1 carries mass 1/2 (I on the
    complement of the span of X and Y). The hermitized output zeta G(zeta^2) has residue m/2 at zeta = 1:
    the mass at a candidate is twice it, for a Gram matrix and for squared singular values alike."""
    p, q = fp.dims("p q")
    X, Y = fp.gaussian("X", (p, q)), fp.gaussian("Y", (p, q))
    F = fp.identity(p) + X @ Y.T / p
    ratios = {p: 1, q: sympy.Rational(1, 4)}
    gram = fp.SpectralLaw(F @ F.T, "eigenvalues", ratios)
    assert gram.reduction.kind == "squared-singular-values"
    (x, m), = gram.atoms(20, candidates=[1])
    assert x == 1 and _close(m, mpmath.mpf(1) / 2, 20)
    (x, m), = fp.singular_value_law(F, ratios).atoms(20, candidates=[1])
    assert x == 1 and _close(m, mpmath.mpf(1) / 2, 20)
    assert gram.atoms(20, candidates=[-1]) == []  # no mass below 0


def test_a_coefficient_with_a_parameter_keeps_the_symmetric_pencil():
    """a X X^T / n with a positive-declared symbol a: its value is known only to the law (here -1, which the
    Gram route's sqrt(a) would get wrong), so the reduction keeps the symmetric pencil."""
    n, p = fp.dims("n p")
    X = fp.gaussian("X", (p, n))
    a = sympy.Symbol("a", positive=True)
    law = fp.SpectralLaw(a * X @ X.T / n, "eigenvalues", {n: 1, p: sympy.Rational(1, 2)}, {a: -1})
    assert law.reduction.kind == "eigenvalues"
    mp_law, _ = _model_pair("marchenko-pastur")
    assert _close(law.density(-1, dps=20), mp_law.density(1, dps=20), 20)


def test_the_polynomial_route_at_0_keeps_the_meaning_too():
    gap, _ = _model_pair("marchenko-pastur")
    atom, _ = _model_pair("marchenko-pastur", p=2)
    hard, _ = _model_pair("marchenko-pastur", p=1)
    assert gap.density(0, dps=20, method="polynomial") == 0
    assert gap.polynomial().law == "eigenvalues"
    with pytest.raises(fp.DomainError, match="pole at x = 0"):
        atom.density(0, dps=20, method="polynomial")
    with pytest.raises(fp.ConvergenceError):
        hard.density(0, dps=20, method="polynomial")
