"""Atoms away from the points asked about: poles of the Cauchy transform in the gaps of the support.

On the real axis outside the support, ``G(x) = int dmu(t)/(x - t)`` is real and
strictly decreasing (``G'(x) = -int dmu(t)/(x - t)^2``), except at an atom ``a``
of mass ``m``, where it jumps from ``-inf`` to ``+inf`` (``G ~ m/(x - a)``).
So a cell of a grid in a gap over which ``Re G`` increases holds an atom, or
a narrow piece of support the scan missed (across which ``Re G`` rises too).
:func:`pole_cells` finds such cells in double precision; a cell is narrowed
until a circle around it keeps three radii from every known edge and atom.

:func:`atom_on_circle` measures what the circle ``|z - c| = r`` encloses, from
``I_k = (1/2 pi i) \\oint (z - c)^k G(z) dz`` (:func:`~freeprob.solve.contour.circle_rules`):
the mass ``I_0``, the location ``c + I_1/I_0``, and ``I_0 I_2 - I_1^2``, the
mass times the variance of what lies inside, which vanishes exactly when that
is one point (Cauchy-Schwarz): a piece of support inside the circle is refused,
never reported as an atom. ``G`` is analytic on the annulus out to the next
singularity, three radii away, so the trapezoidal rule's error falls like
``3^-nodes``.
"""

import math

import numpy as np

from .._errors import ConvergenceError, FreeProbError
from .._precision import context, guard_digits
from .cdf import continuous_mass
from .contour import circle_rules

__all__ = ["MissedSupport", "atom_on_circle", "complete_atoms", "pole_cells"]

#: Points of the double-precision grid in each gap (cosine-spaced, denser next to the edges).
GAP_POINTS = 200

#: Points of the finer grid a suspicious cell is cut into, and how many times it is cut at most.
CUT_POINTS = 16
MAX_CUTS = 8

#: A circle keeps ``1/SEPARATION`` of its center's distance to the nearest other singularity.
SEPARATION = 3.0


def _suspicious(xs, g):
    """Cells ``(x0, x1)`` between consecutive verified points of the grid ``xs`` over which ``Re G``
    increases: they may hold a pole, or a narrow piece of support the scan missed (across which ``Re G``
    rises as well; :func:`atom_on_circle` tells the two apart).

    Points the double-precision solve could not verify are bridged, not taken as poles: a pole among them
    still shows as an increase between the verified points on either side. Fewer than two verified points
    make the whole grid one cell.
    """
    ok = np.nonzero(np.isfinite(g))[0]
    if len(ok) < 2:
        return [(xs[0], xs[-1])]
    up = g.real[ok][1:] > g.real[ok][:-1]
    return [(xs[ok[i]], xs[ok[i + 1]]) for i in np.nonzero(up)[0]]


def _merge(cells):
    """Adjacent cells joined (a pole on a grid point marks the cells on both sides)."""
    out = []
    for a, b in sorted(cells):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(b, out[-1][1]))
        else:
            out.append((a, b))
    return out


def pole_cells(cauchy_fast, gaps, singular, points=GAP_POINTS):
    """Cells ``(x0, x1)`` in the ``gaps`` that hold a pole of ``G`` or a missed piece of support.

    Parameters
    ----------
    cauchy_fast : callable
        Vectorized double-precision ``G`` at points of the upper half-plane (NaN where not verified).
    gaps : list of (float, float)
        Open intervals without known support or atoms (between support intervals, and out to the range).
    singular : list of float
        The points a circle around a cell must keep away from (support edges, atoms, the ends of the
        range): each cell is cut (at most :data:`MAX_CUTS` times) until its distance from them is at least
        ``2 SEPARATION`` times its width.

    Returns
    -------
    list of (float, float)
    """
    found = []
    for a, b in gaps:
        if not b > a:
            continue
        t = np.arange(1, points) * np.pi / points
        xs = a + (b - a) * (1 - np.cos(t)) / 2
        found.extend(_narrow(cauchy_fast, xs, singular))
    return _merge(found)


#: Height above the axis of the grid's points, in units of its smallest spacing.
LIFT = 1e-3


def _narrow(cauchy_fast, xs, singular, depth=0):
    """The suspicious cells of the grid ``xs``, each cut into :data:`CUT_POINTS` until it is narrow enough.

    ``G`` is evaluated at ``x + i y`` with ``y`` :data:`LIFT` times the grid's smallest spacing: off the
    axis the double-precision solve needs no retries where the linearization is singular on the axis, and a
    pole ``m/(x - a)`` still shows as an increase of ``Re G`` across it.
    """
    y = LIFT * float(np.min(np.diff(xs)))
    g = cauchy_fast(xs + 1j * y)
    out = []
    for a, b in _merge(_suspicious(xs, g)):
        c, h = (a + b) / 2, b - a
        d = min([abs(c - s) for s in singular] + [math.inf])
        if SEPARATION * 2 * h <= d or depth >= MAX_CUTS or h <= 1e-13 * max(1.0, abs(c)):
            out.append((a, b))
        else:
            out.extend(_narrow(cauchy_fast, np.linspace(a, b, CUT_POINTS + 1), singular, depth + 1))
    return out


class MissedSupport(ConvergenceError):
    """Mass inside the circle ``|z - center| = radius`` that is not at one point: a piece of support the scan
    stepped over (:func:`atom_on_circle`). The circle keeps :data:`SEPARATION` times its radius from the
    support found and the atoms, so the piece lies in ``(center - radius, center + radius)``."""

    def __init__(self, message, center, radius, dps):
        super().__init__(message, point=center, dps=dps)
        self.center = float(center)
        self.radius = float(radius)

    def __reduce__(self):  # a parallel sweep's worker sends it back to its caller
        return type(self), (str(self), self.center, self.radius, self.dps)


def atom_on_circle(cauchy, center, radius, dps, what="the law"):
    """``(location, mass)`` (mpf) of the atom inside ``|z - center| = radius``, or None when it encloses no mass.

    ``cauchy(z, dps)`` returns ``G(z)`` correct to ``dps`` digits; the circle must keep :data:`SEPARATION`
    times its radius from any other singularity of ``G``. The rules with ``N`` and ``2N`` nodes must agree to
    ``10^-(dps + 3)`` (of ``radius^k`` for ``I_k``); the location is then correct to ``10^-(dps + 3) radius /
    mass``, which must be below ``10^-dps max(1, |location|)``.

    Raises
    ------
    ConvergenceError
        When the rules do not settle, when what the circle encloses is not one point (``I_0 I_2 - I_1^2`` is
        not 0: a piece of support, :class:`MissedSupport`), or when the location is not settled to ``dps``
        digits.
    """
    work = dps + guard_digits(dps) + 3
    ctx = context(work)
    r = ctx.mpf(radius)
    tol = ctx.mpf(10) ** (-(dps + 3))
    previous = None
    for nodes, rule in circle_rules(cauchy, center, radius, 2, work, first=16):
        if previous is not None and all(abs(a - b) <= tol * r ** k for k, (a, b) in enumerate(zip(previous, rule))):
            break
        previous = rule
    else:
        raise ConvergenceError(f"the mass of {what} inside |z - {center:.17g}| = {float(radius):.3g} did not settle "
                               f"with {nodes} nodes", point=center, dps=dps)
    i0, i1, i2 = rule
    if abs(i0) <= ctx.mpf(10) ** (-dps):
        return None
    if i0 < 0:  # the mass of a law inside a circle is never negative: G is not what it claims to be there
        raise ConvergenceError(f"the mass of {what} inside |z - {center:.10g}| = {float(radius):.3g} came out "
                               f"negative ({ctx.nstr(i0, 8)})", point=center, dps=dps)
    spread = i0 * i2 - i1 * i1  # mass^2 times the variance of what lies inside the circle
    if abs(spread) > 4 * tol * r * r:
        raise MissedSupport(
            f"{what} has mass {ctx.nstr(i0, 8)} near x = {center:.10g}, but not at one point (mass times variance "
            f"{ctx.nstr(spread, 3)} inside |z - {center:.10g}| = {float(radius):.3g}): a piece of support the scan "
            f"missed", center, radius, dps)
    location = ctx.mpf(center) + i1 / i0
    if tol * r / i0 > ctx.mpf(10) ** (-dps) * max(1, abs(location)):
        raise ConvergenceError(
            f"the atom of {what} of mass {ctx.nstr(i0, 8)} near x = {ctx.nstr(location, 12)} is too light for its "
            f"location to {dps} digits from a circle of radius {float(radius):.3g}", point=center, dps=dps)
    return location, i0


#: The mass check's tolerance beyond the quadrature's error estimate: missing mass above this is found.
MASS_TOL = 1e-6


def _adds_up(continuous, err, atoms):
    """Whether the ``continuous`` mass (error estimate ``err``) and the ``atoms`` make 1 to :data:`MASS_TOL`."""
    return abs(continuous + sum(float(m) for _, m in atoms) - 1) <= MASS_TOL + err


def _gaps(intervals, range_):
    """The open intervals of ``range_`` outside the support ``intervals`` (sorted)."""
    lo, hi = range_
    out, left = [], lo
    for a, b in sorted(intervals):
        out.append((left, a))
        left = max(left, b)
    out.append((left, hi))
    return [(a, b) for a, b in out if b > a]


def _moment_window(moments, density, intervals, hard, exact, atoms, continuous, err, range_):
    """``(center, radius)`` of a window of a gap where the moments place mass the support ``intervals`` and
    the ``atoms`` lack, or None.

    With ``D_k = m_k - int x^k density - sum_atoms x^k m`` (``m_k`` the law's moments, ``moments(2)``), a
    missing piece narrow next to its distance from 0 sits at ``D_2 / D_1`` (not ``D_1 / D_0``: the missing
    mass ``D_0`` carries the whole quadrature error, ``D_1`` and ``D_2`` are dominated by the far piece), and
    ``sd^2 = D_2 / D_0 - (D_1 / D_0)^2`` estimates its spread. The window is ``max(4 sd, 5 %)`` of the center
    wide on each side, inside the gap that holds the center and off its ends by 1 % of its width; it is only
    where to look: the scan of the window must find the piece and the mass check must then add up."""
    try:
        m1, m2 = (float(m) for m in moments(2)[:2])
    except (FreeProbError, ValueError, TypeError, OverflowError):
        return None
    d0 = 1 - continuous - sum(float(m) for _, m in atoms)
    c1, e1 = continuous_mass(density, intervals, hard, exact, power=1)
    c2, _ = continuous_mass(density, intervals, hard, exact, power=2)
    d1 = m1 - c1 - sum(float(x) * float(m) for x, m in atoms)
    d2 = m2 - c2 - sum(float(x) ** 2 * float(m) for x, m in atoms)
    if not (d0 > err and abs(d1) > 10 * (e1 + 1e-12 * max(1.0, abs(m1))) and d2 > 0):
        return None
    center = d2 / d1
    sd = math.sqrt(max(d2 / d0 - (d1 / d0) ** 2, 0.0))
    for a, b in _gaps(intervals, range_):
        if a < center < b:
            margin = 0.01 * (b - a)
            lo = a + margin if a > range_[0] else a
            hi = b - margin if b < range_[1] else b
            radius = min(max(4 * sd, 0.05 * max(1.0, abs(center))), center - lo, hi - center)
            return (center, radius) if radius > 0 else None
    return None


def complete_atoms(known, intervals, range_, dps, density_fast, cauchy_fast, cauchy, what="the law",
                   density_exact=None, moments=None):
    """Every atom: ``known`` (mpf pairs, settled at the points asked about) and those in the gaps of the support.

    The continuous mass on the support ``intervals`` (double precision,
    :func:`~freeprob.solve.cdf.continuous_mass`; ``density_exact(x)`` solves the few points the double
    precision does not verify) plus the atoms must be 1 to
    :data:`MASS_TOL` plus the quadrature's error estimate. When it is not,
    the poles of ``G`` in the gaps of ``range_`` (:func:`pole_cells`) are
    measured on circles (:func:`atom_on_circle`) and the check is made again.

    Raises
    ------
    ConvergenceError
        With the masses, when the check fails after the search (an atom or a
        piece of support was not found).
    """
    intervals = sorted((float(a), float(b)) for a, b in intervals)
    hard = [0.0] if any(0.0 in iv for iv in intervals) else []
    continuous, err = continuous_mass(density_fast, intervals, hard, density_exact)
    if _adds_up(continuous, err, known):
        return list(known)
    # the ends of the range are not singular, but the search stops there: circles keep away from them too
    singular = sorted({e for iv in intervals for e in iv} | {float(x) for x, _ in known} | set(range_))
    cells = pole_cells(cauchy_fast, _gaps(intervals, range_), singular)
    found = list(known)
    for i, (a, b) in enumerate(cells):
        c = (a + b) / 2
        others = singular + [e for j, cell in enumerate(cells) if j != i for e in cell]
        radius = min(abs(c - s) for s in others) / SEPARATION
        if not radius >= b - a:
            raise ConvergenceError(f"{what}: a pole of G near x = {c:.10g} could not be separated from the support "
                                   f"and the other atoms", point=c, dps=dps)
        atom = atom_on_circle(cauchy, c, radius, dps, what)
        if atom is not None:
            found.append(atom)
    found.sort(key=lambda xm: xm[0])
    if not _adds_up(continuous, err, found):
        atoms = sum(float(m) for _, m in found)
        message = (f"the mass of {what} is {continuous + atoms:.9f}, not 1 (continuous part {continuous:.9f}, "
                   f"quadrature error {err:.1e}; atoms {atoms:.9f}, of which {len(found) - len(known)} found in the "
                   f"gaps of the support): an atom or a piece of support was not found")
        window = None if moments is None else _moment_window(moments, density_fast, intervals, hard, density_exact,
                                                            found, continuous, err, range_)
        if window is not None:
            raise MissedSupport(f"{message}; the moments place it near x = {window[0]:.10g}", window[0], window[1],
                                dps)
        raise ConvergenceError(message, dps=dps)
    return found
