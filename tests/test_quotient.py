"""The symmetry quotient of exchangeable terms (docs/heads.md): equal to the full system, refused when unsafe."""

import mpmath
import pytest
import sympy

import freeprob as fp
from freeprob.attention import attention_config, attention_expression, head_groups
from freeprob.law import singular_value_law, eigenvalue_law
from freeprob.reduce import reduction as reduction_module
from freeprob.reduce.exchange import HeadStructure, head_structure

DPS = 30
TOL = mpmath.mpf(10) ** -DPS

PATTERN_HEADS = [
    (pattern, heads)
    for pattern in ("mha", "mqa", "gqa:2", "shared-v", "tied-kv")
    for heads in (1, 2, 3, 4)
    if not (pattern == "gqa:2" and heads % 2)
]


def _laws(heads, pattern, **ratios):
    cfg = attention_config(heads, pattern, 1, **ratios)
    expr = attention_expression(cfg)
    quotient = singular_value_law(expr, cfg.ratios, {"beta": cfg.beta}, symmetry=head_groups(cfg))
    full = singular_value_law(expr, cfg.ratios, {"beta": cfg.beta}, symmetry=False)
    return quotient, full


def _close(a, b):
    return abs(a - b) <= TOL * max(1, abs(b))


def _assert_same_values(quotient, full, points=("0.3", "1.1")):
    """Density and Cauchy transform of the quotient equal those of the full system at ``points``."""
    for x in points:
        dq, gq = quotient.density_and_cauchy(x, DPS)
        df, gf = full.density_and_cauchy(x, DPS)
        assert _close(dq, df), (x, dq, df)
        assert _close(gq, gf), (x, gq, gf)


def _unknowns(patterns, heads, **kwargs):
    """``{pattern: {unknowns of the reduced system}}`` of the attention law over ``heads``."""
    sizes = {}
    for pattern in patterns:
        for h in heads:
            law = fp.attention_law(h, pattern, 1, **{k: f(h) for k, f in kwargs.items()})
            assert law.reduction.structure.heads == h, law.reduction.symmetry_note
            assert law.reduction.structure.n_groups == (2 if pattern == "gqa:2" else 1)
            sizes.setdefault(pattern, set()).add(law.system.n_unknowns)
    return sizes


@pytest.mark.parametrize("pattern, heads", PATTERN_HEADS)
def test_quotient_equals_full_system(pattern, heads):
    quotient, full = _laws(heads, pattern)
    if heads >= 2:
        assert quotient.reduction.structure is not None, quotient.reduction.symmetry_note
        assert quotient.reduction.structure.heads == heads
    _assert_same_values(quotient, full)
    z = "0.7+0.25j"
    assert _close(quotient.cauchy(z, dps=DPS), full.cauchy(z, dps=DPS))


def test_quotient_size_does_not_grow_with_heads():
    assert _unknowns(("mha", "mqa", "gqa:2"), (4, 8, 64)) == {"mha": {20}, "mqa": {20}, "gqa:2": {30}}


def test_quotient_moments_equal_full_system():
    quotient, full = _laws(3, "gqa:3")  # three groups of one head: S_3
    for mq, mf in zip(quotient.moments(4, dps=DPS), full.moments(4, dps=DPS)):
        assert _close(mq, mf), (mq, mf)


@pytest.mark.parametrize("heads", [8, 32, 128])
def test_mqa_and_gqa_equal_mha_at_many_heads(heads):
    """docs/math.md §6: sharing K (mqa) or K and V per group (gqa) leaves the law of mha unchanged."""
    ratios = dict(d_h=sympy.Rational(1, 2 * heads), d_v=sympy.Rational(1, 2 * heads), d_out=sympy.Rational(1, 2))
    ref = fp.attention_law(heads, "mha", 1, **ratios).density("0.5", dps=DPS)
    for pattern in ("mqa", "gqa:8"):
        law = fp.attention_law(heads, pattern, 1, **ratios)
        assert law.reduction.structure is not None
        assert _close(law.density("0.5", dps=DPS), ref), pattern


def _heterogeneous():
    """Three heads, the last with its own query/key width ``e`` (a different head)."""
    l, d, e, v, o = sympy.symbols("l d_h e v d_out", positive=True)
    terms = []
    for h, width in enumerate((d, d, e)):
        q = fp.gaussian(f"Q{h}", (l, width))
        k = fp.gaussian(f"K{h}", (l, width))
        val = fp.gaussian(f"V{h}", (l, v), 1 / l)
        w = fp.gaussian(f"W{h}", (v, o), 1 / (3 * v))
        terms.append((q @ k.T / sympy.sqrt(width) / sympy.sqrt(l)) @ val @ w)
    expr = terms[0] + terms[1] + terms[2]
    ratios = {"l": 1, "d_h": sympy.Rational(1, 2), "e": sympy.Rational(1, 4), "v": sympy.Rational(1, 2),
              "d_out": sympy.Rational(1, 2)}
    return expr, ratios


def test_heterogeneous_head_is_not_quotiented():
    expr, ratios = _heterogeneous()
    law = singular_value_law(expr, ratios)
    assert law.reduction.structure is None
    assert "term 3 is not a copy of term 1" in law.reduction.symmetry_note
    full = singular_value_law(expr, ratios, symmetry=False)
    assert law.system.n_unknowns == full.system.n_unknowns


def test_invariance_check_refuses_a_forced_wrong_structure(monkeypatch):
    """Even if detection were fooled, the exact check on the witness refuses and the full system is used."""
    expr, ratios = _heterogeneous()
    terms = expr.terms
    # heads 1 and 3 as a group: their pencils have the same shape, their coefficients differ
    forced = HeadStructure(None, (terms[0], terms[2], terms[1]), ((0, 1, 2),))
    monkeypatch.setattr(reduction_module, "head_structure", lambda e: (forced, ""))
    law = singular_value_law(expr, ratios)
    assert law.reduction.structure is None
    assert "not invariant" in law.reduction.symmetry_note, law.reduction.symmetry_note
    reference = singular_value_law(expr, ratios, symmetry=False)
    assert _close(law.density("0.4", dps=DPS), reference.density("0.4", dps=DPS))


def test_declared_groups_must_match_the_expression():
    cfg = attention_config(4, "gqa:2", 1)
    expr = attention_expression(cfg)
    law = singular_value_law(expr, cfg.ratios, {"beta": 1}, symmetry=((0, 1, 2, 3),))
    assert law.reduction.structure is None
    assert "declared groups" in law.reduction.symmetry_note


def test_sum_of_wisharts_is_detected_and_exact():
    """A user's own sum of identical terms, eigenvalue law: sum of 5 Wisharts X_h X_h^T / (5 m)."""
    n, m = sympy.symbols("n m", positive=True)
    xs = [fp.gaussian(f"X{h}", (n, m)) for h in range(5)]
    expr = xs[0] @ xs[0].T / (5 * m)
    for x in xs[1:]:
        expr = expr + x @ x.T / (5 * m)
    ratios = {"n": 1, "m": sympy.Rational(1, 2)}
    law = eigenvalue_law(expr, ratios)
    assert law.reduction.structure is not None and law.reduction.structure.heads == 5
    full = eigenvalue_law(expr, ratios, symmetry=False)
    assert law.system.n_unknowns < full.system.n_unknowns
    # the sum is one Wishart of 5 m columns: Marchenko-Pastur with ratio n / (5 m) = 2/5
    mp = eigenvalue_law(fp.gaussian("Y", (n, m)) @ fp.gaussian("Y", (n, m)).T / m, {"n": 1, "m": 5 * ratios["m"]})
    for x in ("0.5", "1.3"):
        assert _close(law.density(x, dps=DPS), full.density(x, dps=DPS))
        assert _close(law.density(x, dps=DPS), mp.density(x, dps=DPS))


def test_detection_of_patterns():
    for pattern, heads, groups in (("mha", 4, 1), ("mqa", 4, 1), ("gqa:2", 4, 2), ("gqa:4", 4, 1)):
        structure, why = head_structure(attention_expression(attention_config(heads, pattern, 1)))
        assert why == "" and structure.n_groups == groups and structure.heads == heads
    n = sympy.Symbol("n", positive=True)
    structure, why = head_structure(fp.wigner("A", n) + fp.wigner("B", n) @ fp.wigner("B", n))
    assert structure is None and "not a copy" in why


def test_support_and_atoms_of_the_quotient_equal_the_full_system():
    """Edges are refined on the quotient's fold system (its chord steps may stall; the fallback must finish)."""
    quotient, full = _laws(4, "mha", d_h=sympy.Rational(1, 8), d_v=sympy.Rational(1, 8))
    assert quotient.reduction.structure is not None
    sq, sf = quotient.support(dps=20), full.support(dps=20)
    assert len(sq) == len(sf)
    for (a, b), (c, d) in zip(sq, sf):
        assert abs(a - c) <= mpmath.mpf(10) ** -20 * max(1, abs(c))
        assert abs(b - d) <= mpmath.mpf(10) ** -20 * max(1, abs(d))


@pytest.mark.parametrize("bad", ["yes", 3.5, ((0, 1), (1, 2, 3)), ((0, "a"),), ((0, 1),)])
def test_bad_symmetry_argument_is_a_typed_error(bad):
    cfg = attention_config(4, "gqa:2", 1)
    with pytest.raises(fp.DomainError, match="symmetry"):
        singular_value_law(attention_expression(cfg), cfg.ratios, {"beta": 1}, symmetry=bad)


# -- real inputs: a deterministic X common to every head (docs/attention.md, "Real inputs") ----------------------

REAL_INPUTS = "1/4:1/2,7/4:1/2"


@pytest.mark.parametrize("pattern, heads", [(p, h) for p in ("mha", "mqa", "gqa:2") for h in (1, 2, 3, 4)
                                            if not (p == "gqa:2" and h % 2)])
def test_real_input_quotient_equals_full_system(pattern, heads):
    """X is one deterministic leaf of every head: head permutations fix the expression, the witness check passes."""
    ratios = dict(d_h=sympy.Rational(1, 2 * heads), d_v=sympy.Rational(1, 2 * heads))
    quotient, full = _laws(heads, pattern, input_spectrum=REAL_INPUTS, **ratios)
    if heads >= 2:
        assert quotient.reduction.structure is not None, quotient.reduction.symmetry_note
        assert "verified exactly" in quotient.reduction.symmetry_note
        assert full.reduction.structure is None
    _assert_same_values(quotient, full)


def test_real_input_quotient_size_does_not_grow_with_heads():
    width = lambda h: sympy.Rational(1, 2 * h)  # noqa: E731
    sizes = _unknowns(("mha", "gqa:2"), (4, 64), d_h=width, d_v=width, input_spectrum=lambda h: REAL_INPUTS)
    assert all(len(s) == 1 for s in sizes.values()), sizes


def test_heads_with_different_deterministic_matrices_are_not_quotiented():
    """Three heads, the last (never in the witness) with its own deterministic matrix of another spectrum."""
    l, d, v, o = sympy.symbols("l d_h v d_out", positive=True)
    terms = []
    half = sympy.Rational(1, 2)
    for h, spectrum in enumerate(({half: half, 2: half}, {half: half, 2: half}, {1: half, 2: half})):
        x = fp.deterministic(f"X{h}", (l, l), spectrum)
        q = fp.gaussian(f"Q{h}", (l, d), 1 / l)
        w = fp.gaussian(f"W{h}", (d, o), 1 / (3 * d))
        terms.append(x @ q @ w)
    expr = terms[0] + terms[1] + terms[2]
    ratios = {"l": 1, "d_h": sympy.Rational(1, 2), "d_out": sympy.Rational(1, 2)}
    law = singular_value_law(expr, ratios)
    assert law.reduction.structure is None
    assert "term 3 is not a copy of term 1" in law.reduction.symmetry_note, law.reduction.symmetry_note
    full = singular_value_law(expr, ratios, symmetry=False)
    assert _close(law.density("0.4", dps=DPS), full.density("0.4", dps=DPS))


def test_sum_of_profiled_wisharts_is_quotiented_and_exact():
    """Exchangeable terms whose Gaussians carry one variance profile: the split witness is checked and quotiented."""
    n, m = sympy.symbols("n m", positive=True)
    xs = [fp.gaussian(f"X{h}", (n, m), profile="1 + 3*Heaviside(r - 1/2)") for h in range(4)]
    expr = xs[0] @ xs[0].T / (4 * m)
    for x in xs[1:]:
        expr = expr + x @ x.T / (4 * m)
    ratios = {"n": 1, "m": sympy.Rational(1, 2)}
    law = eigenvalue_law(expr, ratios)
    assert law.reduction.structure is not None and law.reduction.structure.heads == 4, law.reduction.symmetry_note
    full = eigenvalue_law(expr, ratios, symmetry=False)
    for x in ("0.5", "1.3", "3.1"):
        assert _close(law.density(x, dps=DPS), full.density(x, dps=DPS)), x
    # one profile differs (same scale): not exchangeable
    other = fp.gaussian("X4", (n, m), profile="4 - 3*Heaviside(r - 1/2)")
    mixed = expr + other @ other.T / (4 * m)
    assert eigenvalue_law(mixed, ratios).reduction.structure is None
