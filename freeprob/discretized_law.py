"""A spectral law extrapolated from discretized laws: values with error estimates, support, distribution.

Some laws are limits of laws that freeprob solves exactly for each
discretization but not in the limit itself: a continuous variance profile
(:class:`~freeprob.ProfileLaw`, ``m x m`` cells), causal attention's
Gaussian equivalent (:class:`~freeprob.CausalLaw`, ``m`` token cells). Each
discretization is solved in double precision with a verified residual, for
``m`` in a geometric sequence, and values are extrapolated to ``1/m = 0``
by :func:`freeprob.solve.richardson.richardson` in the powers of ``1/m``
that the discretization implies.

:class:`DiscretizedLaw` holds what such laws share: the extrapolated Cauchy
transform and density with their error estimates, a value above the
tolerance being a :class:`~freeprob.ConvergenceError` with the numbers; the
support edges, bisected per discretization and extrapolated like values; the
distribution table from the extrapolated density. A subclass gives the
discretizations: ``cells``, ``exponents``, ``name``, ``scale`` (a bound of
every discretized support), :meth:`~DiscretizedLaw.atoms`, and

* ``_solve_level(i, z, start)``: ``(G, unknowns)`` of discretization ``i``
  at points ``z`` (``Im z >= 0``; NaN where unverified), Newton's method
  started from ``start`` (one row of unknowns per point, or ``None``);
* ``_refine(i, unknowns)``: starts for discretization ``i`` from the
  unknowns of discretization ``i - 1`` at the same points;
* ``_resolvent(i, unknowns)``: the columns of discretization ``i``'s unknowns that are diagonal entries of a
  resolvent (in the closed lower half-plane), which decide whether a start
  is safe near the real axis.
"""

import numpy as np

from ._errors import ConvergenceError, DomainError
from ._numbers import read_number, read_points
from ._precision import context, to_mpc
from .solve.cdf import tabulate
from .solve.richardson import Extrapolated, richardson

__all__ = ["DEFAULT_TOL", "DiscretizedLaw", "FAST_TOL", "MASS_TOL"]

#: Default tolerance of a value, relative to ``max(value_unit, |value|)`` (``value_unit`` is 1 for laws of order one).
DEFAULT_TOL = 1e-8
#: Tolerance of the grid densities (:meth:`DiscretizedLaw.density_fast`), relative to ``max(value_unit, |G|)``.
FAST_TOL = 1e-6
#: Largest mass error of :meth:`DiscretizedLaw.cdf_function` (the integrated density error estimates).
MASS_TOL = 1e-6


class DiscretizedLaw:
    """The machinery shared by laws extrapolated from discretized laws (module docstring).

    Subclasses set ``_tol`` (the default tolerance of values), ``_fast_tol``,
    ``_mass_tol`` and ``_edge_tol`` (the edges of the distribution table) when
    theirs differ from :data:`DEFAULT_TOL`, :data:`FAST_TOL`, :data:`MASS_TOL`
    and ``1e-6``.
    """

    _tol = DEFAULT_TOL
    _fast_tol = FAST_TOL
    _mass_tol = MASS_TOL
    _edge_tol = 1e-6
    #: The default tolerance of :meth:`support` (``None``: the tolerance of values, ``_tol``).
    _support_tol = None
    #: Width (relative to the scale) to which each discretization's edges are bisected.
    _edge_resolution = 1e-13
    #: The size of ``G`` below which the support scan's thresholds stop being relative (1 for laws of order one;
    #: a law whose scale is far from one sets it from its scale).
    _g_unit = 1.0
    #: What a refused distribution table says about why (the end of its ConvergenceError).
    _cdf_hint = ("near a hard edge whose density is not a power law (Dykema-Haagerup: about 1/(x log^2 x) at 0) "
                 "the table is not built, so distribution checks and quantiles are refused")
    #: Points solved together (a subclass whose solver is vectorized bounds its memory with it).
    _batch = 1 << 30

    def __setattr__(self, name, value):
        raise AttributeError(f"a {type(self).__name__} is immutable (cannot set {name!r}); make a new law instead")

    @property
    def tol(self):
        """The default tolerance of a value (relative to ``max(value_unit, |value|)``)."""
        return self._tol

    @property
    def value_unit(self):
        """The size of ``G`` below which the tolerance of a value is absolute: ``G`` is verified to
        ``tol * max(value_unit, |G|)``. 1 for a law of order one; a law whose scale is far from one (causal
        attention at large ``beta``, where ``G`` is about ``1e-8``) sets it from its scale, so that a
        tolerance of ``1e-4`` is not an absolute bound larger than every value."""
        return 1.0

    @property
    def fast_tol(self):
        """The tolerance of the grid densities of :meth:`density_fast` (relative to ``max(value_unit, |G|)``)."""
        return self._fast_tol

    @property
    def support_tol(self):
        """The default tolerance of :meth:`support` (relative to ``max(1, |edge|)``)."""
        return self._tol if self._support_tol is None else self._support_tol

    @property
    def edge_tol(self):
        """The tolerance to which :meth:`cdf_function` takes the support edges (its mass bound counts their error)."""
        return self._edge_tol

    def _memoized(self, key, build):
        return self._memo.get(key, build)

    def _levels(self, z):
        """``G`` of every discretization at the points ``z`` (``Im z >= 0``): a list of arrays, NaN if unverified."""
        out = [np.empty(len(z), complex) for _ in self.cells]
        radius = self.scale
        size = max(1, self._batch)
        for lo in range(0, len(z), size):
            piece = z[lo:lo + size]
            unknowns = None
            for i in range(len(self.cells)):
                guess = None
                if unknowns is not None:
                    guess = self._refine(i, unknowns)
                    guess = _safe_start(guess, self._resolvent(i, guess), piece, radius)
                G, unknowns = self._solve_level(i, piece, guess)
                out[i][lo:lo + size] = G
        return out

    # -- values -------------------------------------------------------------------------------------------
    def cauchy_estimate(self, z):
        """Extrapolated ``G`` at complex points (an array; ``G(x + i0)`` on the real axis), NaN where unverified.

        The point 0 (a hard edge or an atom of a Gram matrix) has no value.
        """
        z = read_points(z)
        flip = z.imag < 0
        w = np.where(flip, np.conj(z), z)
        zero = w == 0
        w = np.where(zero, 1j, w)
        est = richardson(self._levels(w), self.cells, self.exponents)
        value = np.where(zero, complex(np.nan, np.nan), np.where(flip, np.conj(est.value), est.value))
        error = np.where(zero | ~np.isfinite(value), np.nan, est.error)
        return Extrapolated(value, error, est.cells, est.exponents)

    def cauchy(self, z, tol=None):
        """``G(z)`` (on the real axis ``G(x + i0)``) with its error estimate, below ``tol * max(value_unit, |G|)``.

        Raises :class:`ConvergenceError` with the value and the estimate when the estimate is larger, or when
        a discretization could not be solved at ``z``.
        """
        tol = _tolerance(self._tol if tol is None else tol)
        point = complex(to_mpc(context(20), z))
        if point == 0:
            raise DomainError(f"{self.name}: 0 is the hard edge or the atom of a Gram matrix; G has no value there "
                              f"(ask at another point)")
        est = self.cauchy_estimate(np.array([point]))
        value, error = complex(est.value[0]), float(est.error[0])
        if not np.isfinite(value) or not np.isfinite(error):
            raise ConvergenceError(f"{self.name}: G({z}) could not be solved for every discretization "
                                   f"(m = {', '.join(map(str, self.cells))} cells)", point=z)
        unit = self.value_unit
        if error > tol * max(unit, abs(value)):
            raise ConvergenceError(
                f"{self.name}: G({z}) = {value:.12g} has the error estimate {error:.2e} from extrapolating "
                f"m = {', '.join(map(str, self.cells))} cells in powers {self.exponents} of 1/m, above the "
                f"tolerance {tol:.0e} (relative to max({unit:.3g}, |G|)); ask for a larger tolerance",
                point=z, residual=error)
        return Extrapolated(value, error, est.cells, est.exponents)

    def density(self, x, tol=None):
        """The density ``-Im G(x + i0)/pi`` at a real point with its error estimate (0 for ``x < 0``, exactly)."""
        x = read_number(x, what="density point")
        if not x.is_real:
            raise DomainError(f"the density is taken at real points, got {x}")
        if x < 0:
            return Extrapolated(0.0, 0.0, self.cells, self.exponents)
        if x == 0:
            raise DomainError(f"{self.name}: 0 is the hard edge or the atom of a Gram matrix; the density has no "
                              f"value there (ask at a positive point)")
        g = self.cauchy(x, tol)
        return Extrapolated(max(0.0, -g.value.imag / np.pi), g.error / np.pi, g.cells, g.exponents)

    def density_fast(self, x):
        """The extrapolated density at real points (vectorized), NaN where its estimate is above
        ``_fast_tol`` (default :data:`FAST_TOL`) (relative to ``max(value_unit, |G|)``); 0 at ``x < 0``."""
        x = read_points(x, real=True)
        out = np.zeros(len(x))
        pos = x > 0
        if pos.any():
            est = self.cauchy_estimate(x[pos].astype(complex))
            d = np.maximum(0.0, -est.value.imag / np.pi)
            ok = np.isfinite(d) & (est.error <= self._fast_tol * np.maximum(self.value_unit, np.abs(est.value)))
            out[pos] = np.where(ok, d, np.nan)
        out[x == 0] = np.nan
        return out

    def support(self, tol=None, grid=200):
        """Support intervals ``[(lo, hi), ...]`` of :class:`~freeprob.solve.richardson.Extrapolated` edges.

        For each discretization the density is scanned on ``grid`` points of
        ``(0, scale]``; each edge is refined by bisection on ``density > 0``
        (batched, to ``1e-13`` of the scale) and the edges are extrapolated
        like values. An end that stays at 0 for every discretization (positive
        density at ``1e-12`` of the scale) is the hard edge 0, exactly.
        Raises :class:`ConvergenceError` when the discretizations do not have
        the same number of intervals or an edge's estimate exceeds
        ``tol * max(1, |edge|)`` (default :attr:`support_tol`).
        """
        tol = _tolerance(self.support_tol if tol is None else tol)
        if isinstance(grid, bool) or not isinstance(grid, int) or not 10 <= grid <= 100_000:
            raise DomainError(f"grid must be an integer between 10 and 100000 (points of the support scan), "
                              f"got {grid!r}")
        per_level = self._memoized(("support", grid), lambda: self._support_levels(grid))
        counts = {len(ivs) for ivs in per_level}
        if len(counts) != 1:
            raise ConvergenceError(f"{self.name}: the discretized laws have different numbers of support intervals "
                                   f"({[len(ivs) for ivs in per_level]} for m = {self.cells})")
        out = []
        for j in range(counts.pop()):
            pair = []
            for side in (0, 1):
                edges = [ivs[j][side] for ivs in per_level]
                if all(e == 0 for e in edges):
                    pair.append(Extrapolated(0.0, 0.0, self.cells, self.exponents))
                    continue
                est = richardson(edges, self.cells, self.exponents)
                if not est.error <= tol * max(1.0, abs(est.value)):
                    raise ConvergenceError(
                        f"{self.name}: a support edge extrapolates to {float(est.value):.12g} with the error estimate "
                        f"{est.error:.2e} (edges {', '.join(f'{e:.12g}' for e in edges)} for m = {self.cells}), "
                        f"above the tolerance {tol:.0e}", point=float(est.value), residual=est.error)
                pair.append(Extrapolated(float(est.value), float(est.error), est.cells, est.exponents))
            out.append(tuple(pair))
        return out

    def _support_levels(self, grid):
        top = self.scale
        xs = np.linspace(0, top, grid + 1)[1:]
        levels = self._levels(xs.astype(complex))
        out = []
        for i, m in enumerate(self.cells):
            dens = -levels[i].imag / np.pi
            if np.isnan(dens).any():
                bad = xs[np.isnan(dens)][0]
                raise ConvergenceError(f"{self.name}: the discretization on {m} cells could not be solved at "
                                       f"x = {bad:.6g}", point=float(bad))
            pos = dens > 1e-9 * max(self._g_unit, float(np.max(np.abs(levels[i]))))

            known = {"x": None, "g": None, "inside": None}

            def positive(x):
                # just above the axis (Newton on the axis stalls at the fold of an edge): outside the support
                # -Im G is about eta/sqrt(distance), inside C sqrt(distance), so the threshold 1e-7 puts the
                # edge within about 1e-13 of the scale either way. Newton starts from the nearest point of the
                # previous round that was inside the support (see _safe_start: a real start could end on a
                # real root of the equation that is not the law's).
                x = np.asarray(x, float)
                start = None
                if known["x"] is not None and known["inside"].any():
                    xi, gi = known["x"][known["inside"]], known["g"][known["inside"]]
                    start = gi[np.abs(xi[None, :] - x[:, None]).argmin(axis=1)]
                g, unknowns = self._solve_level(i, x + 1e-14j * top, start)
                if np.isnan(g).any():
                    raise ConvergenceError(f"{self.name}: the discretization on {m} cells could not be solved near "
                                           f"a support edge", point=float(x[np.isnan(g)][0]))
                inside = -g.imag > 1e-7 * np.maximum(self._g_unit, np.abs(g))
                known["x"], known["g"], known["inside"] = x, unknowns, inside
                return inside

            def edge(lo, hi, rising):
                # density(lo) is 0 and density(hi) > 0 when rising, the reverse otherwise; starts only from
                # this bracket's own points (a start far away may end on another root)
                known["x"] = None
                while hi - lo > self._edge_resolution * top:
                    pts = np.linspace(lo, hi, 18)[1:-1]
                    p = positive(pts)
                    flips = np.nonzero(p if rising else ~p)[0]
                    k = flips[0] if flips.size else len(pts)
                    lo, hi = (pts[k - 1] if k > 0 else lo), (pts[k] if k < len(pts) else hi)
                return (lo + hi) / 2

            ivs = []
            k = 0
            while k < grid:
                if not pos[k]:
                    k += 1
                    continue
                j = k
                while j + 1 < grid and pos[j + 1]:
                    j += 1
                if k == 0:
                    left = 0.0 if positive([1e-12 * top])[0] else edge(1e-12 * top, xs[0], True)
                else:
                    left = edge(xs[k - 1], xs[k], True)
                if j == grid - 1:
                    raise ConvergenceError(f"{self.name}: positive density at the norm bound {top:.6g} on {m} cells")
                ivs.append((left, edge(xs[j], xs[j + 1], False)))
                k = j + 1
            out.append(ivs)
        return out

    def cdf_function(self, nodes=2000):
        """The distribution function (:class:`~freeprob.solve.cdf.DistributionTable`) from the extrapolated density
        on the support and the atoms.

        Every density value used carries its error estimate; near an edge the
        estimate can be large relative to the (small) density, so the check is
        on the mass: the integral of the estimates over the support (trapezoid
        on the nodes used), plus for each soft edge its error estimate times
        the density next to it, must be below ``_mass_tol`` (default
        :data:`MASS_TOL`), and the total mass one to that tolerance
        (:func:`~freeprob.solve.cdf.tabulate`); otherwise
        :class:`ConvergenceError` with the numbers. The edges are taken to the
        relative tolerance ``_edge_tol`` (1e-6 unless a subclass says
        otherwise).
        """
        def build():
            edges = self.support(tol=self._edge_tol)
            intervals = [(float(a.value), float(b.value)) for a, b in edges]
            hard = [0.0] if any(a == 0.0 for a, _ in intervals) else []
            seen = []

            def density(x):
                x = np.atleast_1d(np.asarray(x, dtype=float))
                est = self.cauchy_estimate(np.where(x > 0, x, 1.0).astype(complex))
                d = np.where(x > 0, np.maximum(0.0, -est.value.imag / np.pi), 0.0)
                seen.append((x, np.where(x > 0, est.error / np.pi, 0.0)))
                return d

            try:
                table = tabulate(density, intervals, self.atoms(), nodes=nodes, mass_tol=self._mass_tol, hard=hard)
            except ConvergenceError as exc:
                raise ConvergenceError(
                    f"{self.name}: the distribution function could not be tabulated from the extrapolated density "
                    f"({exc}); {self._cdf_hint}",
                    residual=getattr(exc, "residual", None)) from None
            xs = np.concatenate([x for x, _ in seen])
            errs = np.concatenate([e for _, e in seen])
            order = np.argsort(xs)
            xs, errs = xs[order], errs[order]
            inside = np.zeros(len(xs), bool)
            for a, b in intervals:
                inside |= (xs >= a) & (xs <= b)
            xs, errs = xs[inside], errs[inside]
            bound = float(np.sum(np.diff(xs) * (errs[1:] + errs[:-1]) / 2)) if len(xs) > 1 else 0.0
            # an edge known to +-e moves the mass by at most e times the density within e of it
            for a, b in edges:
                for end, inward in ((a, 1.0), (b, -1.0)):
                    if end.error > 0:
                        near = float(end.value) + inward * np.linspace(0.0, float(end.error), 5)
                        near = near[near > 0]
                        if near.size:
                            bound += float(end.error) * float(np.max(density(near) + seen[-1][1]))
            if not bound <= self._mass_tol:
                raise ConvergenceError(f"{self.name}: the error estimates of the extrapolated density integrate to "
                                       f"{bound:.2e} over the support, above {self._mass_tol:.0e}: the distribution "
                                       f"function is not verified to that mass", residual=bound)
            return table
        return self._memoized(("cdf", nodes), build)

    def quantile(self, p):
        """The ``p``-quantile (double precision)."""
        q = read_number(p, what="quantile level p")
        if not 0 <= q <= 1:
            raise DomainError(f"quantile level p must be between 0 and 1, got {p!r}")
        return self.cdf_function().quantile(float(q))



def _safe_start(start, resolvent, z, radius):
    """``start`` where it can only lead to the law's solution, NaN rows (the path instead) elsewhere.

    Off the axis the solution with every ``g_k`` in the open lower half-plane is unique, and near the
    axis a start clearly inside it (``Im g_k < 0``) stays on that branch or fails (then the path runs).
    A real start at a real point (outside the coarser law's support, but maybe inside this one's, whose
    edges moved) would keep Newton on the real roots, one of which may not be the law's: it is dropped.
    """
    near = z.imag <= 1e-6 * radius
    size = 1 + np.max(np.abs(resolvent), axis=1)
    real = np.max(resolvent.imag, axis=1) > -1e-10 * size
    out = start.copy()
    out[near & real] = np.nan
    return out


def _tolerance(tol):
    try:
        t = float(tol)
    except (TypeError, ValueError):
        raise DomainError(f"tol must be a positive number, got {tol!r}") from None
    if not 0 < t < 1:
        raise DomainError(f"tol must be a number between 0 and 1 (relative to the size of the value), got {tol!r}")
    return t


