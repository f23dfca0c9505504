"""Moments from the Cauchy transform on a circle around the support.

For a law supported in ``[-r, r]``, ``G`` is analytic outside that disk and
``z G(z) = sum_k m_k z^-k``, so on the circle ``|z| = R > r``

    m_k = (1 / 2 pi i) \\oint z^k G(z) dz = (1 / 2 pi) \\int_0^{2 pi} z^(k+1) G(z) d theta,  z = R e^(i theta).

The trapezoidal rule with ``N`` nodes is exact for the terms ``z^-j`` with
``j < N`` and aliases the rest, so its error is about ``(r/R)^N`` relative
to ``R^k``: with ``R = 4 r`` (:data:`CIRCLE_RATIO`) each doubling of ``N`` squares it, and reuses
the nodes solved before. The nodes come in conjugate pairs
(``G(conj z) = conj G(z)``), so only the upper half is solved. The moments are accepted when the rules with ``N`` and ``2N`` nodes
agree to the digits asked for.

This route serves expressions whose series at infinity has no expansion the
series route (:mod:`freeprob.solve.series`) can start, such as
``inv(X^T X / n)`` without a shift, whose leading coefficient is singular.
"""

import math

from .._errors import ConvergenceError
from .._precision import context, guard_digits

__all__ = ["circle_rules", "contour_moments"]

#: The circle of :func:`contour_moments` has this many times the radius of the support's bound: the rule's
#: error falls like ``CIRCLE_RATIO^-N`` (15 digits and guard digits at 64 nodes, where a ratio of 2 needed
#: 128), and the sum loses ``k log10(CIRCLE_RATIO)`` digits to the moment ``m_k``, which the working
#: precision adds.
CIRCLE_RATIO = 4

#: Largest number of nodes on the circle (the upper half is solved: half of them).
MAX_NODES = 1024


def circle_rules(cauchy, center, radius, kmax, work, first=32, many=None):
    """The trapezoidal rules for ``I_k = (1/2 pi i) \\oint (z - c)^k G(z) dz``, ``k = 0..kmax``, on ``|z - c| = r``.

    Yields ``(nodes, [I_0, ..., I_kmax])`` (mpf) for ``nodes = first, 2 first, ...`` up to
    :data:`MAX_NODES`; each rule reuses the nodes solved for the coarser ones. ``center`` is real, so the
    nodes come in conjugate pairs (``G(conj z) = conj G(z)``) and only the upper half is solved;
    ``cauchy(z, work)`` returns ``G(z)`` correct to ``work`` digits, or, given, ``many(zs, work)`` the values
    at the new nodes of a rule at once (their double-precision starts from one vectorized solve). The two
    real nodes ``c +- r`` must lie outside the support.
    """
    ctx = context(work)
    c, r = ctx.mpf(center), ctx.mpf(radius)
    solved = {}

    def key_of(j, nodes):
        # node j of the rule with `nodes` nodes, theta = 2 pi j / nodes: shared by the finer rules
        g = math.gcd(j, nodes)
        return j // g, nodes // g

    def node(j, nodes):
        w = r * ctx.expjpi(ctx.mpf(2 * j) / nodes)
        return ctx.mpc(w.real, 0) if j == 0 or 2 * j == nodes else w  # the two real nodes are real

    nodes = first
    while nodes <= MAX_NODES:
        new = [j for j in range(nodes // 2 + 1) if key_of(j, nodes) not in solved]
        ws = [node(j, nodes) for j in new]
        values = many([c + w for w in ws], work) if many is not None else [cauchy(c + w, work) for w in ws]
        for j, w, g in zip(new, ws, values):
            solved[key_of(j, nodes)] = (w, ctx.mpc(g))
        sums = [ctx.mpf(0)] * (kmax + 1)
        for j in range(nodes // 2 + 1):  # the upper half; the lower half is its conjugate
            w, g = solved[key_of(j, nodes)]
            weight = 1 if j == 0 or 2 * j == nodes else 2
            t = w * g
            for k in range(kmax + 1):
                sums[k] += weight * t.real
                t *= w
        yield nodes, [x / nodes for x in sums]
        nodes *= 2


def contour_moments(cauchy, k, dps, radius, name="the law", many=None):
    """``[m_1, ..., m_k]`` (mpf) from ``cauchy(z, dps)`` on the circle ``|z| = CIRCLE_RATIO radius``.

    ``radius`` bounds the support (``|x| <= radius``); ``cauchy(z, dps)`` returns
    ``G(z)`` correct to ``dps`` digits (or ``many(zs, dps)`` at several points,
    see :func:`circle_rules`). Raises :class:`ConvergenceError` when
    :data:`MAX_NODES` nodes do not reach ``dps`` digits.
    """
    if k == 0:
        return []
    # the sum loses about k log10(CIRCLE_RATIO) digits against the moments (terms of size R^k, moments of
    # size r^k)
    work = dps + guard_digits(dps) + math.ceil(k * math.log10(CIRCLE_RATIO)) + 2
    ctx = context(work)
    tol = ctx.mpf(10) ** (-dps)
    previous = None
    for _, rule in circle_rules(cauchy, 0, CIRCLE_RATIO * ctx.mpf(radius), k, work, many=many):
        current = rule[1:]
        if previous is not None and all(abs(a - b) <= tol * max(1, abs(b)) for a, b in zip(previous, current)):
            # a moment below 10^-dps is 0 to the digits asked for (odd moments of a symmetric law)
            return [ctx.mpf(0) if abs(m) <= tol else m for m in current]
        previous = current
    raise ConvergenceError(f"the moments of {name} from its Cauchy transform on a circle did not reach {dps} digits "
                           f"with {MAX_NODES} nodes", dps=dps)
