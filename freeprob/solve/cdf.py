"""The distribution function of a law, tabulated for Monte-Carlo comparisons.

On each support interval ``[a, b]`` the substitution
``x = a + (b - a)(1 - cos t)/2`` turns square-root endpoint behaviour into a
smooth integrand in ``t`` (at a hard edge, where the density has an integrable
singularity, a second map that vanishes quadratically there is composed with
it, see :func:`_map`); the midpoint
rule in ``t`` with ``nodes`` points per interval then gives the cumulative
mass at the cell boundaries, interpolated linearly in between. Atoms are added
as jumps. The total mass must be one to ``mass_tol``, otherwise the support or
the atoms were not all found and a :class:`ConvergenceError` says so.
"""

from fractions import Fraction

import numpy as np

from .._errors import ConvergenceError

__all__ = ["DistributionTable", "continuous_mass", "tabulate"]


class DistributionTable:
    """A right-continuous CDF with its atoms; vectorized ``__call__``."""

    vectorized = True

    def __init__(self, intervals, atoms, pieces, mass_ac, quad_error):
        self.intervals = intervals
        self.atoms = atoms  # [(x, mass)] floats
        self._pieces = pieces  # per interval: (x boundaries, cumulative mass within)
        self.mass_ac = mass_ac
        self.quad_error = quad_error
        xs = [np.array([x for x, _ in atoms])]
        self._atom_x = np.array([x for x, _ in atoms], float)
        self._atom_m = np.array([m for _, m in atoms], float)
        self._starts = [(a, b) for a, b in intervals]
        self._before = []
        acc = 0.0
        for (a, b), (_, cum) in zip(intervals, pieces):
            self._before.append(acc)
            acc += cum[-1]
        del xs

    def __call__(self, x):
        x = np.asarray(x, float)
        out = np.zeros_like(x)
        for (a, b), (xb, cum), before in zip(self.intervals, self._pieces, self._before):
            inside = np.interp(x, xb, cum, left=0.0, right=cum[-1])
            out += inside
        for xa, m in zip(self._atom_x, self._atom_m):
            out += np.where(x >= xa, m, 0.0)
        return out

    def moment_table(self, k):
        """``(x, int_0^x t^k dF_ac)`` on the table's cell boundaries (midpoint rule), per interval, concatenated."""
        xs, vals = [], []
        acc = 0.0
        for xb, cum in self._pieces:
            mid = (xb[1:] + xb[:-1]) / 2
            inc = np.concatenate([[0.0], np.cumsum(mid ** k * np.diff(cum))])
            xs.append(xb)
            vals.append(acc + inc)
            acc += inc[-1]
        return np.concatenate(xs), np.concatenate(vals)

    def left(self, x):
        """``F(x-)``: the CDF without the atom at ``x`` itself."""
        x = np.asarray(x, float)
        out = self(x)
        for xa, m in zip(self._atom_x, self._atom_m):
            out -= np.where(x == xa, m, 0.0)
        return out

    def ac_quantile(self, p):
        """The ``p``-quantile of the absolutely continuous part (atoms removed, renormalized)."""
        target = p * self.mass_ac
        lo = min(a for a, _ in self.intervals)
        hi = max(b for _, b in self.intervals)
        for _ in range(200):
            mid = (lo + hi) / 2
            if sum(np.interp(mid, xb, cum, left=0.0, right=cum[-1]) for xb, cum in self._pieces) >= target:
                hi = mid
            else:
                lo = mid
        return hi

    def scaled(self, power):
        """The table of the law pushed forward by ``x -> 2^power x`` (exact: a power of two moves no digit)."""
        def up(x):
            return np.ldexp(np.asarray(x, float), power)
        return DistributionTable([(float(up(a)), float(up(b))) for a, b in self.intervals],
                                 [(float(up(x)), m) for x, m in self.atoms],
                                 [(up(xb), cum) for xb, cum in self._pieces], self.mass_ac, self.quad_error)

    def quantile(self, p):
        """Smallest ``x`` with ``F(x) >= p``."""
        lo = min([a for a, _ in self.intervals] + list(self._atom_x)) - 1.0
        hi = max([b for _, b in self.intervals] + list(self._atom_x)) + 1.0
        for _ in range(200):
            mid = (lo + hi) / 2
            if self(mid) >= p:
                hi = mid
            else:
                lo = mid
        return hi


def _map(t, hard_left, hard_right):
    """``(s, ds/dt)`` of the substitution of ``t`` in ``[0, pi]`` onto ``[0, 1]``.

    ``u = (1 - cos t)/2`` vanishes quadratically at both ends, which makes a
    square-root edge smooth in ``t``. At a hard end (density
    ``~ |x - a|^-gamma``, ``gamma < 1``) ``u`` is composed with a map that
    vanishes to fourth order there as well (``u^4``, ``1 - (1 - u)^4``, or
    ``u^4 (35 - 84 u + 70 u^2 - 20 u^3)`` at both ends): the integrand in
    ``t`` then behaves like ``t^(7 - 8 gamma)`` instead of ``t^(1 - 2 gamma)``
    (an inverse-square-root edge gives ``t^3``, and the midpoint rule's
    error falls like ``nodes^-4``; a quadratic map gave ``t`` and
    ``nodes^-2``, which needed 512 nodes for ``10^-7`` of the mass).
    """
    u = (1 - np.cos(t)) / 2
    du = np.sin(t) / 2
    if hard_left and hard_right:
        v = 1 - u
        return u ** 4 * (35 - 84 * u + 70 * u * u - 20 * u ** 3), 140 * u ** 3 * v ** 3 * du
    if hard_left:
        return u ** 4, 4 * u ** 3 * du
    if hard_right:
        return 1 - (1 - u) ** 4, 4 * (1 - u) ** 3 * du
    return u, du


#: Relative width (of its interval) of the sliver next to a hard edge whose mass
#: comes from a fitted power law: at 1e-6 of the width the double-precision
#: density is still verified (closer to the branch point at the edge it is not).
HARD_CUT = 1e-6


def _edge_mass(density, e, cut):
    """Mass of ``density`` between the hard edge ``e`` and ``e + cut`` (``cut`` < 0: to the left).

    Next to a hard edge an algebraic density expands as
    ``c0 h^-gamma + c1 h^(-gamma + 1/q) + c2 h^(-gamma + 2/q) + ...`` in
    ``h = |x - e|``, with a rational ``gamma = p/q`` (any of the ``c_k`` may
    vanish). Every fraction with ``q <= 6`` in ``[0, 1)`` within 0.1 of the
    local exponent at ``h = |cut|`` is tried: the three terms are fitted to
    the values at ``|cut|, 2|cut|, 4|cut|``, and the fraction whose fit
    predicts the values at ``8|cut|, 16|cut|`` best is kept; it must predict
    them to ``1e-3`` (relative), or :class:`ConvergenceError` says so. Returns ``(mass, error)``: the integral
    of the three terms, and its difference from that of the two-term fit on
    ``|cut|, 2|cut|`` as the error estimate (it enters the table's quadrature
    error, so the mass check accounts for the singular edge).
    """
    h = abs(cut)
    hs = h * np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    d = density(e + np.sign(cut) * hs)
    if not (np.isfinite(d).all() and (d > 0).all()):
        raise ConvergenceError(f"the density next to the hard edge {e} could not be verified ({d})")
    g = -np.log2(d[1] / d[0])
    # the local exponent g is gamma plus a correction of order h^(1/q), which at
    # h = 1e-6 and q = 4 is still 0.02: every fraction near g is tried, and the
    # one whose three-term expansion (fitted on h, 2h, 4h) predicts the values
    # at 8h and 16h best is kept
    candidates = sorted({Fraction(p, q) for q in range(1, 7) for p in range(q) if abs(p / q - g) <= 0.1})
    best = None
    for gamma in candidates:
        powers = -float(gamma) + np.arange(3) / gamma.denominator
        basis = hs[:, None] ** powers[None, :]
        c = np.linalg.solve(basis[:3], d[:3])
        miss = float(np.max(np.abs(basis[3:] @ c - d[3:]) / d[3:]))
        if best is None or miss < best[0]:
            best = (miss, gamma, powers, basis, c)
    if best is None:
        raise ConvergenceError(
            f"the density next to the hard edge {e} does not follow a power law |x - e|^-gamma, 0 <= gamma < 1 "
            f"(local exponent {g:.4f})")
    miss, gamma, powers, basis, c = best
    if miss > 1e-3:
        raise ConvergenceError(
            f"the density next to the hard edge {e} is not the expansion sum c_k h^(k/{gamma.denominator} - {gamma}) "
            f"(relative miss {miss:.3g} at h = {hs[3]:.3g}, {hs[4]:.3g}; local exponent {g:.4f})")
    mass = float(np.sum(c * h ** (powers + 1) / (powers + 1)))
    # the error of the truncated expansion: against the two-term fit (on h, 2h)
    c2 = np.linalg.solve(basis[:2, :2], d[:2])
    mass2 = float(np.sum(c2 * h ** (powers[:2] + 1) / (powers[:2] + 1)))
    return mass, abs(mass - mass2)


def _hard_ends(density, a0, b0, hard_left, hard_right):
    """``(a, b, end_mass, fit_err)``: the interval ``[a0, b0]`` without its slivers next to hard ends (within
    :data:`HARD_CUT` of the width the double-precision density cannot be verified), the masses of those
    slivers from the power law ``c |x - e|^-gamma`` fitted beyond them (:func:`_edge_mass`), and the fits'
    error estimate."""
    a, b = a0, b0
    fit_err = 0.0
    cut = HARD_CUT * (b - a)
    end_mass = [0.0, 0.0]
    if hard_left:
        end_mass[0], e_err = _edge_mass(density, a, cut)
        fit_err += e_err
        a = a + cut
    if hard_right:
        end_mass[1], e_err = _edge_mass(density, b, -cut)
        fit_err += e_err
        b = b - cut
    return a, b, end_mass, fit_err


def _positive_density(density, x, a, b, exact=None):
    """The density at ``x`` (inside ``[a, b]``), each point that is not positive solved again on its own path:
    inside a support interval the density is positive, and a zero is a solve that ended on a real (wrong)
    branch next to a hard edge. A point still unverified is solved by ``exact`` (a verified point solve in
    more digits) when given; one left unverified raises :class:`ConvergenceError`."""
    d = density(x)
    again = np.nonzero(~(d > 0))[0]
    if len(again):
        d[again] = np.concatenate([density(x[again[k:k + 100]]) for k in range(0, len(again), 100)])
    missing = np.nonzero(np.isnan(d))[0]
    if exact is not None and 0 < len(missing) <= EXACT_POINTS:
        # next to an edge of a narrow piece far from 0 the double-precision solve is not verified (its
        # distance from the edge is below about 1e-10 of |x|)
        d[missing] = [float(exact(float(t))) for t in x[missing]]
    if np.isnan(d).any():
        raise ConvergenceError(f"the density could not be verified at {np.sum(np.isnan(d))} points of [{a}, {b}]")
    return d


def _interval_mass(density, a0, b0, hard_left, hard_right, nodes):
    """``(xb, cum, err, fit_err)`` of one support interval ``[a0, b0]``: cell boundaries, the cumulative mass
    at them (midpoint rule on ``nodes`` cells in the variable of :func:`_map`), the error estimate (against
    ``nodes // 2`` cells, plus ``fit_err``, that of the power-law fits next to hard ends, which more nodes
    do not change)."""
    a, b, end_mass, fit_err = _hard_ends(density, a0, b0, hard_left, hard_right)
    cums = []
    for m in (nodes // 2, nodes):
        t = (np.arange(m) + 0.5) * np.pi / m
        sv, ds = _map(t, hard_left, hard_right)
        x = a + (b - a) * sv
        w = (b - a) * ds * (np.pi / m)
        d = _positive_density(density, x, a, b)
        cums.append(np.concatenate([[0.0], np.cumsum(d * w)]))
    tb = np.arange(nodes + 1) * np.pi / nodes
    xb = a + (b - a) * _map(tb, hard_left, hard_right)[0]
    err = fit_err + abs(cums[1][-1] - cums[0][-1])
    cum = cums[1] + end_mass[0]
    if hard_left:
        xb, cum = np.concatenate([[a0], xb]), np.concatenate([[0.0], cum])
    if hard_right:
        xb, cum = np.concatenate([xb, [b0]]), np.concatenate([cum, [cum[-1] + end_mass[1]]])
    return xb, cum, err, fit_err


def tabulate(density, intervals, atoms, nodes=2000, mass_tol=1e-6, hard=()):
    """Build a :class:`DistributionTable` from a vectorized density.

    Parameters
    ----------
    density : callable
        Vectorized double-precision density.
    intervals : list of (float, float)
    atoms : list of (float, float)
        Locations and masses.
    nodes : int
        Midpoint nodes per interval (and half as many for the error estimate).
    mass_tol : float
        The total mass must be 1 within this plus the quadrature error.
    hard : iterable of float
        Interval ends that are hard edges (an integrable singularity of the
        density, as at 0 for a square Gaussian); see :func:`_map` and
        :data:`HARD_CUT`.
    """
    hard = {float(h) for h in hard}
    pieces = []
    total = sum(m for _, m in atoms)
    err = 0.0
    for a0, b0 in intervals:
        xb, cum, e, _ = _interval_mass(density, a0, b0, float(a0) in hard, float(b0) in hard, nodes)
        pieces.append((xb, cum))
        total += cum[-1]
        err += e
    if abs(total - 1) > mass_tol + err:
        raise ConvergenceError(
            f"the law's mass is {total:.9f}, not 1 (atoms {sum(m for _, m in atoms):.9f}, quadrature error "
            f"{err:.1e}): part of the support or an atom was not found"
        )
    return DistributionTable(list(intervals), list(atoms), pieces, total - sum(m for _, m in atoms), err)


#: Quadrature error at which :func:`continuous_mass` stops refining, and the most density values it spends on
#: one support interval.
MASS_QUAD_TOL = 1e-6
MASS_MAX_POINTS = 4096
#: Panels of the map's variable ``t`` in ``[0, pi]`` that :func:`continuous_mass` starts from.
MASS_FIRST_PANELS = 4

# The 15-point Gauss-Kronrod rule on [-1, 1] (QUADPACK's qk15): nodes, Kronrod weights, and the weights of
# the 7-point Gauss rule on every other node (the odd positions of the full rule below)
_XK = np.array([0.991455371120812639206854697526329, 0.949107912342758524526189684047851,
                0.864864423359769072789712788640926, 0.741531185599394439863864773280788,
                0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
                0.207784955007898467600689403773245, 0.0])
_WK = np.array([0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
                0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
                0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
                0.204432940075298892414161999234649, 0.209482141084727828012999174891714])
_WG = np.array([0.129484966168869693270611432679082, 0.279705391489276667901467771423780,
                0.381830050505118944950369775488975, 0.417959183673469387755102040816327])
GK15_NODES = np.concatenate([-_XK[:-1], _XK[::-1]])
GK15_KRONROD = np.concatenate([_WK[:-1], _WK[::-1]])
GK15_GAUSS = np.zeros(15)
GK15_GAUSS[1::2] = np.concatenate([_WG[:-1], _WG[::-1]])


def _adaptive_mass(integrand, tol, max_points):
    """``(integral, error, points)`` of ``integrand`` (vectorized) over ``[0, pi]``: adaptive Gauss-Kronrod.

    All panels of a round are evaluated in one call; a panel whose
    ``|K15 - G7|`` exceeds its share of ``tol`` (proportional to its width)
    is halved, the others are kept. The sum of ``|K15 - G7|`` over the kept
    panels is the error estimate (for a smooth integrand a large
    overestimate: ``K15`` is exact for polynomials of degree 22, ``G7`` of
    degree 13). Stops when no panel is left or the next round would exceed
    ``max_points`` evaluations; the panels left then count with their
    estimates.
    """
    edges = np.linspace(0.0, np.pi, MASS_FIRST_PANELS + 1)
    lo, hi = edges[:-1], edges[1:]
    total, err, points = 0.0, 0.0, 0
    while len(lo):
        half = (hi - lo) / 2
        t = (lo + hi)[:, None] / 2 + half[:, None] * GK15_NODES[None, :]
        f = integrand(t.ravel()).reshape(t.shape)
        points += f.size
        k = half * (f @ GK15_KRONROD)
        e = np.abs(k - half * (f @ GK15_GAUSS))
        done = e <= tol * (hi - lo) / np.pi
        if points + 2 * 15 * int(np.sum(~done)) > max_points:
            done[:] = True
        total += float(np.sum(k[done]))
        err += float(np.sum(e[done]))
        mid = (lo + hi) / 2
        lo, hi = np.concatenate([lo[~done], mid[~done]]), np.concatenate([mid[~done], hi[~done]])
    return total, err, points


#: Points of one quadrature round the mass check solves in more digits when the double-precision density is
#: not verified there (:func:`_positive_density`).
EXACT_POINTS = 8


def continuous_mass(density, intervals, hard=(), exact=None, power=0):
    """``(mass, error)``: the mass of the density on the support intervals (double precision); with ``power``
    ``k``, its ``k``-th moment ``int x^k density``.

    ``exact(x)``, when given, is the verified density at a point in more digits, for the few points where the
    double-precision solve is not verified.

    Per interval, the integral in the variable of :func:`_map` (square-root
    edges smooth, hard ends as in :func:`tabulate`: slivers from power-law
    fits), by adaptive Gauss-Kronrod quadrature (:func:`_adaptive_mass`) to
    :data:`MASS_QUAD_TOL` (at most :data:`MASS_MAX_POINTS` density values
    per interval). The error is the quadrature's estimate plus that of the
    power-law fits next to hard edges.
    """
    hard = {float(h) for h in hard}
    mass, err = 0.0, 0.0
    for a0, b0 in intervals:
        hard_left, hard_right = float(a0) in hard, float(b0) in hard
        a, b, end_mass, fit_err = _hard_ends(density, a0, b0, hard_left, hard_right)

        def integrand(t):
            sv, ds = _map(t, hard_left, hard_right)
            x = a + (b - a) * sv
            f = _positive_density(density, x, a, b, exact) * (b - a) * ds
            return f * x ** power if power else f

        value, e, _ = _adaptive_mass(integrand, MASS_QUAD_TOL, MASS_MAX_POINTS)
        # a sliver next to a hard end lies within HARD_CUT of the width from it: its moment is its mass there
        mass += value + end_mass[0] * float(a0) ** power + end_mass[1] * float(b0) ** power
        err += e + fit_err * max(1.0, abs(float(a0)), abs(float(b0))) ** power
    return mass, err
