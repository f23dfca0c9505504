"""Laws far from scale one are solved in units of their scale (:mod:`freeprob.units`).

The Wishart law with entry variance ``v`` is Marchenko-Pastur scaled by ``v``;
with ``v = 10^40`` and ``v = 10^-40`` its density lies near ``10^-40`` and
``10^40``, where the double-precision scans see nothing. Every answer is
compared with the Marchenko-Pastur closed form written here in mpmath
(independently of the engine) at the precision asked for. The Gaussian
equivalent of softmax attention at ``beta = 10`` (noise variance
``e^100 - 101``) is the model that needed it.
"""

import json
import warnings

import mpmath
import numpy as np
import pytest
import sympy

import freeprob as fp
import freeprob.units as units
from freeprob.cli import main

DPS = 30
p, n = fp.dims("p n")


def _wishart(v, ratio):
    X = fp.gaussian("X", (p, n), variance=v)
    return fp.eigenvalue_law(X @ X.T / n, ratios={p: ratio, n: 1})


def _mp(v, ratio, dps):
    """Closed form of the scaled Marchenko-Pastur law: (density(x), edges, atom) at ``dps`` digits."""
    ctx = mpmath.MPContext()
    ctx.dps = dps + 10
    v, g = ctx.mpf(sympy.Rational(v).p) / sympy.Rational(v).q, ctx.mpf(sympy.Rational(ratio).p) / sympy.Rational(ratio).q
    a, b = v * (1 - ctx.sqrt(g)) ** 2, v * (1 + ctx.sqrt(g)) ** 2

    def density(x):
        x = ctx.mpf(x)
        return ctx.sqrt((b - x) * (x - a)) / (2 * ctx.pi * g * v * x) if a < x < b else ctx.mpf(0)

    def cauchy(z):  # the branch with G ~ 1/z at infinity
        z = ctx.mpc(z)
        s = ctx.sqrt(z - a) * ctx.sqrt(z - b)
        return (z + v * (g - 1) - s) / (2 * g * v * z)

    return density, cauchy, (a, b), max(0, 1 - 1 / g)


def _close(a, b, digits=DPS):
    return abs(a - b) <= mpmath.mpf(10) ** (-digits) * max(1, abs(b))


@pytest.mark.parametrize("v", [sympy.Integer(10) ** 40, sympy.Integer(10) ** -40, sympy.Rational(3, 7) * 2 ** 60])
@pytest.mark.parametrize("ratio", [sympy.Rational(1, 2), sympy.Integer(2)])
def test_scaled_wishart_to_30_digits(v, ratio):
    law = _wishart(v, ratio)
    assert law._units is not None  # the case this file is about
    density, cauchy, (a, b), atom = _mp(v, ratio, DPS)
    edges = law.support(dps=DPS)
    assert len(edges) == 1 and _close(edges[0][1], b)
    assert _close(edges[0][0], a)  # for ratio 2 the mass 1/2 at 0 is an atom, not a piece of support
    for t in ("0.1", "0.5", "0.93"):
        x = a + (b - a) * mpmath.mpf(t)
        assert _close(law.density(x, dps=DPS), density(x))
    z = mpmath.mpc(b / 2, b / 5)
    assert _close(law.cauchy(z, dps=DPS), cauchy(z))
    masses = law.atoms(dps=20)
    assert (masses == [] if atom == 0 else _close(masses[0][1], atom, 20))
    m = law.moments(3)
    assert m[0] == v and m[1] == v ** 2 * (1 + ratio)  # exact: m_k scales as v^k


@pytest.mark.parametrize("v", [sympy.Integer(10) ** 40, sympy.Integer(10) ** -40])
def test_scaled_double_path_and_table(v):
    ratio = sympy.Rational(1, 2)
    law = _wishart(v, ratio)
    density, _, (a, b), _ = _mp(v, ratio, 20)
    xs = np.array([float(a + (b - a) * t) for t in (0.05, 0.3, 0.6, 0.95)])
    fast = law.density_fast(xs)
    exact = np.array([float(density(x)) for x in xs])
    # 1e-12 relative to max(1, |G|), and |G| is about 1/v here: relative to the values for v > 1
    assert np.all(np.abs(fast - exact) <= 1e-12 * np.maximum(np.abs(exact), 1 / float(v) if v > 1 else 1))
    (lo, hi), = law.support_fast()
    assert abs(hi - float(b)) <= 1e-6 * float(b - a) and abs(lo - float(a)) <= 1e-6 * float(b - a)
    median = law.quantile(0.5)
    plain = _wishart(1, ratio).quantile(0.5)
    assert abs(median / float(v) - plain) <= 1e-9 * plain  # the same table, moved by a power of two


def test_units_agree_with_the_plain_solve(monkeypatch):
    """Attention at beta = 3 (scale 6e4) is solved both ways: the two agree to 30 digits."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        law = fp.attention.attention_law(1, "mha", 3)
        assert law._units is not None
        top = law.support(dps=20)[0][1]
        xs = [top * t for t in (mpmath.mpf("0.01"), mpmath.mpf("0.4"), mpmath.mpf("0.9"))]
        a = [law.density(x, dps=DPS) for x in xs]
        monkeypatch.setattr(units, "LOG2_SCALE_LIMIT", 10 ** 6)
        plain = fp.attention.attention_law(1, "mha", 3)
        assert plain._units is None
        b = [plain.density(x, dps=DPS) for x in xs]
        assert all(_close(u, w) for u, w in zip(a, b))
        assert _close(plain.support(dps=20)[0][1], top, 20)


def test_beta_10_attention_law():
    """The law of attention at beta = 10, refused before (its scale 1.9e44 overflowed the scans).

    The undivided model cannot be solved there even at given points (no verified double-precision
    start), so the law is checked by its structure (the atom 1/2 the ranks give, a hard edge at 0),
    by Monte-Carlo of the same model (below), and at beta = 3 against the plain solve (above)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the regime warning: beta = 10 is far from the linear regime
        law = fp.attention.attention_law(1, "mha", 10)
        (lo, hi), = law.support()
        (x0, mass), = law.atoms()
    assert lo == 0 and 1e44 < hi < 1e45
    assert x0 == 0 and _close(mass, mpmath.mpf(1) / 2, 15)  # rank 1/2 of l = 1


def test_beta_10_cli(tmp_path, capsys):
    path = tmp_path / "b10.toml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["attention", "--beta", "10", "--emit", str(path)]) == 0
        capsys.readouterr()
        assert main(["law", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["atoms"][0]["x"] == "0" and data["support"][0][0] == "0"
    inside = [r for r in data["grid"] if r["density"] not in ("0", "inf")]
    assert len(inside) > 100 and all(0 < float(r["density"]) < 1e-40 for r in inside)


def test_monte_carlo_in_units_has_finite_errors():
    """The Monte-Carlo check compares moments in units of the scale: m4 of a law near 1e160 has a finite
    standard error (its variance overflowed before, and |t| = 0 passed silently), and the check passes."""
    law = _wishart(sympy.Integer(10) ** 40, sympy.Rational(1, 2))
    report = fp.check(law, n=200, reps=4, seed=1)
    assert [r["name"] for r in report.statistics][:4] == ["m1", "m2", "m3", "m4"]
    assert all(np.isfinite(r["se"]) and r["se"] > 0 for r in report.statistics)
    assert report.passed


def test_units_follow_the_typical_size_not_the_bound():
    """The 64-head attention law's bound is 25238 and its support ends near 5.2: no unit. Inverses
    are solved as they are (their edge search measures residuals absolutely)."""
    assert fp.law_of(fp.find_model("attention-gqa8-h64"))._units is None
    X = fp.gaussian("X", (p, n), variance=sympy.Rational(1, 1000))
    ridge = fp.eigenvalue_law(fp.inv(X @ X.T / n + sympy.Rational(1, 1500) * fp.identity(p)),
                              ratios={p: sympy.Rational(1, 2), n: 1})
    assert ridge._units is None and len(ridge.support()) == 1


def test_check_compares_the_moments_a_double_holds():
    law = _wishart(sympy.Integer(10) ** 100, sympy.Rational(1, 2))
    report = fp.check(law, n=100, reps=3, seed=1)
    names = [r["name"] for r in report.statistics]
    assert names[:2] == ["m1", "m2"] and "m4" not in names  # m4 near 1e400 is beyond a double
    assert all(np.isfinite(r["theory"]) and np.isfinite(r["se"]) for r in report.statistics)
