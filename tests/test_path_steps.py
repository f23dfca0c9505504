"""Intermediate Newton steps of a double-precision path (freeprob.solve.newton._newton_fast, verify=False).

Contract: a step whose residual rises for a while and then converges is
kept (a halved step costs two more solves); a step whose residual grows
DIVERGED times above its best is given up before maxiter iterations; what
the path finally returns is the verified solution either way.
"""

import numpy as np

import freeprob as fp
import freeprob.solve.newton as newton

LOOSE = 1e-7  # the path's tolerance for intermediate steps


def _law():
    # a Gram law solved as squared singular values of a non-square factor: its hermitized system has an
    # atom at 0, a pole of G next to the geometric scan points of the support search
    return fp.law_of(fp.find_model("population-covariance"))


def _phi_calls(monkeypatch, fast):
    count = [0]
    real = type(fast).phi

    def counted(self, *args, **kwargs):
        count[0] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(type(fast), "phi", counted)
    return count


def _history(fast, g, z, eps, iterations=12):
    """Residuals of the plain Newton iteration (no early exit), one row per iteration."""
    out = []
    for _ in range(iterations):
        phi, _, jac = fast.phi(g, z, eps, jacobian=True)
        out.append(np.max(np.abs(g - phi), axis=1) / (1 + np.max(np.abs(g), axis=1)))
        with np.errstate(all="ignore"):
            g = g - np.linalg.solve(np.eye(fast.r)[None] - jac, (g - phi)[:, :, None])[:, :, 0]
    return np.array(out)


def test_steps_kept_after_a_rise_reach_the_path_solution():
    law = _law()
    fast = law.fast
    # the geometric scan points below the first coarse cell, in the system's variable sqrt(w), and decade
    # steps of a path down to them (the path regularizes at height y with eps = y)
    x = np.sqrt(np.geomspace(law.scale * 1e-6, law.scale * 6.7e-3, 24))
    kept_after_rise = 0
    for ya, yb in [(1.0, 0.1), (0.3, 0.03), (0.1, 0.01), (0.03, 0.003), (0.01, 0.001)]:
        ga, _, ok, _ = newton.solve_fast(fast, x + 1j * ya, eps=ya, anchors=False)
        assert ok.all()
        z1, e1 = x + 1j * yb, np.full(len(x), yb)
        ref, _, ok, _ = newton.solve_fast(fast, z1, eps=yb, anchors=False)
        assert ok.all()
        g1, conv, _, _ = newton._newton_fast(fast, ga, z1, e1, tol=LOOSE, verify=False)
        # a step the path keeps is on the path's branch, to the accuracy an intermediate step promises: it counts
        # as converged once its residual is below LOOSE or its Newton step below 1e-5 relative (_newton_fast)
        err = np.max(np.abs(g1 - ref), axis=1) / (1 + np.max(np.abs(ref), axis=1))
        assert np.all(err[conv] < 1e-5), err[conv]
        hist = _history(fast, ga, z1, e1)
        # a rise from one iteration to the next, from the third on, before the tolerance is reached
        best = np.minimum.accumulate(hist, axis=0)
        rose = np.any((hist[2:] > hist[1:-1]) & (best[1:-1] >= LOOSE), axis=0)
        kept_after_rise += int(np.sum(conv & rose))
    # the rule at work: some steps whose residual rose after the second iteration (the former rule gave them up
    # there and halved the step) converged all the same
    assert kept_after_rise > 0


def test_a_diverging_step_is_given_up_early(monkeypatch):
    law = _law()
    fast = law.fast
    x = np.array([0.6])
    z = x + 1e-3j
    eps = np.full(len(x), 1e-3)
    # a start far from every solution: Newton's residual grows, and the step ends before maxiter
    start = np.full((len(x), fast.r), 1e6 + 1e6j)
    calls = _phi_calls(monkeypatch, fast)
    g, conv, res, _ = newton._newton_fast(fast, start, z, eps, maxiter=12, tol=LOOSE, verify=False)
    assert not conv.any(), res
    # maxiter iterations and the final evaluation would be 13 calls
    assert calls[0] < 12 + 1, calls[0]
