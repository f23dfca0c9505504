"""Support edges of many-head quotient systems on the fast fold route (docs/engine.md: edges)."""

import numpy as np
import pytest

import freeprob as fp
from freeprob._precision import context
from freeprob.solve import edges

DPS = 15


@pytest.fixture(scope="module")
def gqa64(tmp_path_factory):
    """The 64-head grouped-query model (8 groups) at the realistic allocation d_h = d_v = 1/128, d_out = 1/2."""
    path = tmp_path_factory.mktemp("models") / "gqa8-h64.toml"
    fp.attention.emit_model(str(path), 64, "gqa:8", "1", d_h="1/128", d_v="1/128", d_out="1/2")
    law = fp.law_of(fp.find_model(str(path)))
    return law, law.support(dps=DPS)


def _fallback_only(*args, **kwargs):
    raise AssertionError("the finite-difference fallback ran")


def test_fast_fold_route_converges_on_the_quotient_system(gqa64, monkeypatch):
    """Newton in double precision and the chord steps converge on the 30-unknown quotient system
    of gqa:8 at 64 heads (they stalled there, and the slow fallback ran); the edge agrees with the
    verified support to the digits asked for."""
    law, support = gqa64
    (_, right), = support
    z_edge = float(np.sqrt(float(right)))  # squared singular values: the system variable is sqrt(x)
    monkeypatch.setattr(edges, "_refine_mp", _fallback_only)
    for rel in (1e-2, 1e-4):
        z_out = z_edge * (1 + rel)
        e = edges.refine_edge(law._numerics, z_out, DPS, bracket=(z_out, z_edge * (1 - rel)), fallback=False)
        ctx = context(DPS + 10)
        assert abs(ctx.mpf(e) ** 2 - right) <= ctx.mpf(10) ** (-DPS) * max(1, abs(right))


def test_fast_fold_route_agrees_with_the_fallback(gqa64, monkeypatch):
    """The same edge from the finite-difference Newton at twice the working precision (forced)."""
    law, support = gqa64
    (_, right), = support
    z_out = float(np.sqrt(float(right))) * 1.01
    fast = edges.refine_edge(law._numerics, z_out, DPS, fallback=False)
    monkeypatch.setattr(edges, "_fold_newton_fast", lambda *a, **k: (None, None))
    slow = edges.refine_edge(law._numerics, z_out, DPS, fallback=True)
    ctx = context(DPS + 10)
    assert abs(ctx.mpf(fast) - ctx.mpf(slow)) <= ctx.mpf(10) ** (-DPS) * max(1, abs(ctx.mpf(slow)))
