"""The law of a Gram matrix whose Gaussian has a continuous variance profile.

``H = kappa X X^T`` (eigenvalues; or the squared singular values of
``sqrt(kappa) X``), ``X`` a Gaussian ``a x b`` of variance ``v`` and profile
``s(r, c)`` that is not piecewise constant on a grid (``Heaviside(c - r)``,
the upper-triangular Dykema-Haagerup matrix; ``1 + r*c``). Its law is the
limit of the laws of the discretized profiles (``s`` at the midpoints of
``m x m`` cells, exactly what :func:`freeprob.reduce.blocks.discretize` gives),
each solved as the vector Dyson equation of :mod:`freeprob.solve.vector_dyson`
for ``m`` in a geometric sequence (default 8, 16, 32, 64, 128), and
extrapolated to ``1/m = 0`` by :func:`freeprob.solve.richardson.richardson`.

The powers of ``1/m`` removed are read from the profile
(:func:`expansion_exponents`): even powers (2, 4, 6, ...) for a smooth
profile (the midpoint rule) and for a smooth profile times jumps along the
grid's diagonal (``Heaviside(c - r)``: the midpoint value 1/2 on the diagonal
cells is their exact average), all powers (1, 2, 3, ...) otherwise.

Every value comes with its error estimate (:class:`~freeprob.solve.richardson.Extrapolated`),
and a value whose estimate is above the tolerance asked for is a
:class:`~freeprob.ConvergenceError` carrying the numbers, never a value.
Reachable precision: about 1e-12 for smooth profiles and diagonal jumps at
points away from the edges; less near an edge or a singularity of the density
(the discretized laws converge non-uniformly there), and a profile singular
on the square (``1/r``) is refused by its error estimate.

>>> import freeprob as fp
>>> n = fp.dims("n")
>>> T = fp.gaussian("T", (n, n), profile="Heaviside(c - r)")
>>> law = ProfileLaw(T @ T.T / n, "eigenvalues", {n: 1})
>>> est = law.cauchy("1 + 0.5*I")       # 1 - exp(W(-1/z)), Dykema-Haagerup
>>> fp.fmt(est.value, 10), bool(est.error < 1e-10)
('0.5130775203 - 0.7493239476j', True)
"""

from types import MappingProxyType

import networkx as nx
import numpy as np
import sympy

from ._errors import ConvergenceError, DomainError, ScalingError
from ._numbers import read_number
from ._precision import context, to_mpc
from .expr.profiles import C, R, uniform_table
from .expr.tree import Expr, Matrix, Transpose, leaves
from .law import _Cache, _read_values  # the law's value cache and the one reader of ratios and parameters (same rank)
from .profiled import MAX_PROFILE_MOMENTS
from .reduce.blocks import extrapolate, has_continuous_profile
from .reduce.reduction import gram_factor, strip_scalar
from .solve.cdf import tabulate
from .solve.richardson import Extrapolated, richardson
from .solve.vector_dyson import gram_moments, solve_gram

__all__ = ["DEFAULT_CELLS", "DEFAULT_TOL", "ProfileLaw", "expansion_exponents", "profile_law_of"]

#: Cell counts of the discretizations (geometric, ratio 2).
DEFAULT_CELLS = (8, 16, 32, 64, 128)
#: Default tolerance of a value, relative to ``max(1, |value|)``.
DEFAULT_TOL = 1e-8
#: Tolerance of the grid densities (:meth:`ProfileLaw.density_fast`), relative to ``max(1, |G|)``.
FAST_TOL = 1e-6
#: Largest mass error of :meth:`ProfileLaw.cdf_function` (the integrated density error estimates).
MASS_TOL = 1e-6
#: Memory of one batch of Jacobians.
BATCH_BYTES = 2 ** 26

_NONSMOOTH = (sympy.Heaviside, sympy.Abs, sympy.sign, sympy.Min, sympy.Max, sympy.Piecewise, sympy.floor,
              sympy.ceiling, sympy.DiracDelta)


def expansion_exponents(profile, count):
    """The powers of ``1/m`` in the discretization error of ``profile``: ``count`` of them.

    Even (2, 4, ...) when the profile is smooth, or smooth except for
    ``Heaviside`` factors of ``r - c`` (a jump along the diagonal of the grid,
    averaged exactly by ``Heaviside(0) = 1/2``); all (1, 2, ...) otherwise.

    >>> expansion_exponents(sympy.Heaviside(C - R), 3), expansion_exponents(sympy.Heaviside(C - R / 2), 3)
    ((2, 4, 6), (1, 2, 3))
    """
    rough = [a for a in profile.atoms(sympy.Function) if isinstance(a, _NONSMOOTH)]
    diagonal = all(isinstance(a, sympy.Heaviside) and
                   sympy.expand(a.args[0]) in (sympy.expand(R - C), sympy.expand(C - R)) for a in rough)
    if diagonal:
        return tuple(2 * (j + 1) for j in range(count))
    return tuple(j + 1 for j in range(count))


def _gram_factor(expr, law):
    """``(kappa, F)`` with ``expr = kappa F F^T`` (eigenvalues) or ``expr = sqrt(kappa) F`` (singular values)."""
    if law == "squared-singular-values":
        coeff, node = strip_scalar(expr)
        return coeff ** 2, node
    return gram_factor(expr)


class ProfileLaw:
    """The limiting law of ``kappa X X^T`` for a Gaussian ``X`` with a continuous variance profile.

    Parameters are those of :class:`~freeprob.SpectralLaw` (the expression
    is ``kappa X @ X.T``, ``kappa X.T @ X``, or for squared singular values
    ``kappa X`` or ``kappa X.T``, with ``X`` the one profiled Gaussian),
    and ``cells``: the geometric sequence of cell counts.

    Values are :class:`~freeprob.solve.richardson.Extrapolated` (value and
    error estimate); see the module docstring for what they guarantee.
    """

    def __init__(self, expr, law="eigenvalues", ratios=None, params=None, name=None, cells=DEFAULT_CELLS):
        if not isinstance(expr, Expr):
            raise DomainError(f"expected a matrix expression, got {type(expr).__name__} {expr!r}")
        if law not in ("eigenvalues", "squared-singular-values"):
            raise DomainError(f"law must be 'eigenvalues' or 'squared-singular-values', got {law!r}")
        if not has_continuous_profile(expr):
            raise DomainError(f"{expr} has no continuous variance profile: its law is a SpectralLaw (fp.law_of, "
                              f"fp.eigenvalue_law)")
        cells = tuple(cells)
        if len(cells) < 3 or any(isinstance(m, bool) or not isinstance(m, int) for m in cells) or cells[0] < 1 or \
                any(b != cells[1] // cells[0] * a for a, b in zip(cells, cells[1:])) or cells[1] % cells[0] or \
                cells[1] == cells[0] or cells[-1] > 1024:
            raise DomainError(f"cells must be at least three integers in a geometric sequence of integer ratio, "
                              f"at most 1024 (such as 8, 16, 32, 64), got {cells!r}")
        kappa, factor = _gram_factor(expr, law)
        transposed = isinstance(factor, Transpose)
        leaf = factor.arg if transposed else factor
        if not (isinstance(leaf, Matrix) and leaf.kind == "gaussian" and leaf.profile is not None):
            raise DomainError(
                f"{expr}: the law of a continuous variance profile is built for a Gram matrix kappa X @ X.T "
                f"(or the squared singular values of kappa X) of one profiled Gaussian X; other expressions "
                f"with a continuous profile have exact moments only: freeprob moments MODEL -k K --exact, or "
                f"fp.profile_moments (docs/blocks.md)")
        others = [lf.name for lf in leaves(expr) if lf.name != leaf.name]
        if others:
            raise DomainError(f"{expr}: only the profiled Gaussian {leaf.name} may appear, got also {others}")
        exact_ratios, exact_params, dimensions = _read_values(expr, ratios, params)
        values = {**exact_ratios, **exact_params}
        big = sympy.Symbol("N_", positive=True)
        at = {d: exact_ratios[d] * big for d in expr.dimensions()}
        alpha = sympy.simplify((kappa * leaf.variance).subs(exact_params).subs(at) * big)
        if alpha.free_symbols - {big}:
            names = ", ".join(sorted(str(s) for s in alpha.free_symbols - {big}))
            raise DomainError(f"give values for the parameter(s) {names} of {expr}")
        if big in alpha.free_symbols:
            power = sympy.limit(sympy.log(sympy.Abs(alpha)) / sympy.log(big), big, sympy.oo)
            raise ScalingError(f"{expr} is not of order N^0: kappa * variance * N = {alpha} grows like N^{power}; "
                               f"scale it as T @ T.T / n", monomial=str(expr), power=power)
        if not (alpha.is_number and alpha.is_extended_real and alpha > 0):
            raise DomainError(f"{expr}: the coefficient kappa * variance * N is {alpha}; it must be positive (a Gram "
                              f"matrix with a positive factor)")
        rows, cols = leaf.shape
        if transposed:
            rows, cols = cols, rows
        init = object.__setattr__
        init(self, "expr", expr)
        init(self, "law", law)
        init(self, "name", name or str(expr))
        init(self, "ratios", MappingProxyType(exact_ratios))
        init(self, "params", MappingProxyType(exact_params))
        init(self, "dimensions", dimensions)
        init(self, "cells", cells)
        init(self, "leaf", leaf)
        init(self, "profile", leaf.profile)
        init(self, "exponents", expansion_exponents(leaf.profile, len(cells) - 1))
        init(self, "_alpha", float(alpha))
        init(self, "_rho", (float(values[rows]), float(values[cols])))
        init(self, "_exact", (alpha, values[rows], values[cols]))
        init(self, "_transposed", transposed)
        init(self, "_memo", _Cache())
        # the profile at every cell midpoint now, so that a bad profile is reported when the law is made
        for m in cells:
            self._tables(m)

    def __setattr__(self, name, value):
        raise AttributeError(f"a ProfileLaw is immutable (cannot set {name!r}); make a new law instead")

    def values(self):
        """``{symbol: exact value}`` for ratios and parameters (a new dict)."""
        return {**self.ratios, **self.params}

    def __repr__(self):
        return f"ProfileLaw({self.name!r}, law={self.law!r}, cells={self.cells})"

    # -- the discretized equations ----------------------------------------------------------------------
    def _memoized(self, key, build):
        return self._memo.get(key, build)

    def _tables(self, m):
        """``(A, B, w, bound)`` of the vector Dyson equation on ``m x m`` cells, and a bound of its support."""
        def build():
            f = sympy.lambdify((R, C), self.profile, "numpy")
            mid = (np.arange(m) + 0.5) / m
            with np.errstate(all="ignore"):
                S = np.broadcast_to(np.asarray(f(mid[:, None], mid[None, :]), dtype=float), (m, m)).copy()
            bad = ~np.isfinite(S) | (S < 0)
            if bad.any():
                k, l = np.argwhere(bad)[0]
                raise DomainError(f"matrix {self.leaf.name}: the profile {self.profile} is {S[k, l]} at the cell "
                                  f"midpoint r = {mid[k]:.6g}, c = {mid[l]:.6g}; it must be a finite non-negative "
                                  f"number")
            if not S.any():
                raise DomainError(f"matrix {self.leaf.name}: the profile {self.profile} vanishes at every midpoint "
                                  f"of {m} x {m} cells")
            if self._transposed:
                S = S.T
            rho_r, rho_c = self._rho
            A = self._alpha * rho_c * S / m
            B = self._alpha * rho_r * S / m
            top = float(S.max()) * self._alpha * (np.sqrt(rho_r) + np.sqrt(rho_c)) ** 2
            return A, B, np.full(m, 1.0 / m), top
        return self._memoized(("tables", m), build)

    @property
    def scale(self):
        """A bound (float) of the support of every discretized law (the norm bound with the largest cell value)."""
        return max(self._tables(m)[3] for m in self.cells) * (1 + 1e-6)

    def _levels(self, z):
        """``G`` of every discretization at the points ``z`` (``Im z >= 0``): a list of arrays, NaN if unverified."""
        out = [np.empty(len(z), complex) for _ in self.cells]
        radius = self.scale
        size = max(1, BATCH_BYTES // (16 * self.cells[-1] ** 2))
        for lo in range(0, len(z), size):
            piece = z[lo:lo + size]
            start, prev = None, None
            for i, m in enumerate(self.cells):
                A, B, w, _ = self._tables(m)
                guess = None if start is None else _safe_start(np.repeat(start, m // prev, axis=1), piece, radius)
                sol = solve_gram(A, B, w, piece, radius, start=guess)
                out[i][lo:lo + size] = sol.G
                start, prev = sol.g, m
        return out

    # -- values -------------------------------------------------------------------------------------------
    def cauchy_estimate(self, z):
        """Extrapolated ``G`` at complex points (an array; ``G(x + i0)`` on the real axis), NaN where unverified.

        The point 0 (a hard edge or an atom of a Gram matrix) has no value.
        """
        try:
            z = np.atleast_1d(np.asarray(z, dtype=complex))
        except (TypeError, ValueError):
            raise DomainError(f"points must be numbers (a scalar or a 1-d array), got {z!r}") from None
        if z.ndim != 1:
            raise DomainError(f"points must be a scalar or a 1-d array, got shape {z.shape}")
        flip = z.imag < 0
        w = np.where(flip, np.conj(z), z)
        zero = w == 0
        w = np.where(zero, 1j, w)
        est = richardson(self._levels(w), self.cells, self.exponents)
        value = np.where(zero, complex(np.nan, np.nan), np.where(flip, np.conj(est.value), est.value))
        error = np.where(zero | ~np.isfinite(value), np.nan, est.error)
        return Extrapolated(value, error, est.cells, est.exponents)

    def cauchy(self, z, tol=DEFAULT_TOL):
        """``G(z)`` (on the real axis ``G(x + i0)``) with its error estimate, below ``tol * max(1, |G|)``.

        Raises :class:`ConvergenceError` with the value and the estimate when the estimate is larger, or when
        a discretization could not be solved at ``z``.
        """
        tol = _tolerance(tol)
        point = complex(to_mpc(context(20), z))
        if point == 0:
            raise DomainError(f"{self.name}: 0 is the hard edge or the atom of a Gram matrix; G has no value there "
                              f"(ask at another point)")
        est = self.cauchy_estimate(np.array([point]))
        value, error = complex(est.value[0]), float(est.error[0])
        if not np.isfinite(value) or not np.isfinite(error):
            raise ConvergenceError(f"{self.name}: G({z}) could not be solved for every discretization "
                                   f"(m = {', '.join(map(str, self.cells))} cells)", point=z)
        if error > tol * max(1.0, abs(value)):
            raise ConvergenceError(
                f"{self.name}: G({z}) = {value:.12g} has the error estimate {error:.2e} from extrapolating "
                f"m = {', '.join(map(str, self.cells))} cells in powers {self.exponents} of 1/m, above the "
                f"tolerance {tol:.0e} (relative to max(1, |G|)); ask for a larger tolerance, or more cells",
                point=z, residual=error)
        return Extrapolated(value, error, est.cells, est.exponents)

    def density(self, x, tol=DEFAULT_TOL):
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
        :data:`FAST_TOL` (relative to ``max(1, |G|)``); 0 at ``x < 0``."""
        x = np.atleast_1d(np.asarray(x, dtype=float))
        out = np.zeros(len(x))
        pos = x > 0
        if pos.any():
            est = self.cauchy_estimate(x[pos].astype(complex))
            d = np.maximum(0.0, -est.value.imag / np.pi)
            ok = np.isfinite(d) & (est.error <= FAST_TOL * np.maximum(1.0, np.abs(est.value)))
            out[pos] = np.where(ok, d, np.nan)
        out[x == 0] = np.nan
        return out

    def moments_estimate(self, k):
        """The moments ``m_1, ..., m_k`` extrapolated from the discretized laws' series
        (:func:`~freeprob.solve.vector_dyson.gram_moments`): an :class:`Extrapolated` of arrays."""
        k = _count(k)
        levels = [np.array(gram_moments(*self._tables(m)[:3], k)) for m in self.cells]
        return richardson(levels, self.cells, self.exponents)

    def _exact_moments(self, k):
        """Exact moments: the series of the vector Dyson equation in exact arithmetic on ``m = 1..k+3`` cells
        (the values of :func:`~freeprob.reduce.blocks.discretize`), extrapolated exactly with the check of
        :func:`~freeprob.profile_moments` (the same numbers, without the symbolic reduction)."""
        alpha, rho_r, rho_c = self._exact
        columns = [{} for _ in range(k)]
        for m in range(1, k + 4):
            table = uniform_table(self.profile, m, f"matrix {self.leaf.name}").table
            S = np.array(table, dtype=object)
            if self._transposed:
                S = S.T
            if not all(v.is_Rational for v in S.flat) or not all(x.is_Rational for x in self._exact):
                raise DomainError("the exact moments need rational cell values and ratios")
            A = S * (alpha * rho_c / m)
            B = S * (alpha * rho_r / m)
            w = np.array([sympy.Rational(1, m)] * m, dtype=object)
            for j, v in enumerate(gram_moments(A, B, w, k, exact=True)):
                columns[j][m] = sympy.nsimplify(v)
        out = []
        for j, column in enumerate(columns):
            limit, spread = extrapolate(column)
            if spread != 0:
                raise ConvergenceError(f"moment {j + 1}: the discretized moments are not a polynomial in 1/m of "
                                       f"degree {k + 1}")
            out.append(limit)
        return out

    def moments(self, k):
        """The moments ``m_1, ..., m_k``: exact (the route of :func:`~freeprob.profile_moments`) when the profile
        is piecewise polynomial on polyhedral pieces and ``k <= 6``, else :meth:`moments_estimate` (floats) when every
        estimate is below ``1e-10`` relative; otherwise :class:`ConvergenceError`."""
        k = _count(k)
        if k == 0:
            return []
        if k <= MAX_PROFILE_MOMENTS:
            try:
                return self._exact_moments(k)
            except (ConvergenceError, DomainError):
                pass
        est = self.moments_estimate(k)
        bad = np.nonzero(~(est.error <= 1e-10 * np.maximum(1.0, np.abs(est.value))))[0]
        if bad.size:
            j = bad[0]
            raise ConvergenceError(f"{self.name}: moment {j + 1} extrapolates to {est.value[j]:.12g} with the error "
                                   f"estimate {est.error[j]:.2e}, above 1e-10 relative", residual=float(est.error[j]))
        return [float(v) for v in est.value]

    # -- support, atoms, distribution -----------------------------------------------------------------
    def atoms(self):
        """``[(0.0, mass)]`` when the discretized laws all have the same atom at 0 (``1 - rank/rows``,
        the generic rank of each block pattern by a maximum flow), ``[]`` when none has one."""
        def build():
            masses = [self._atom(m) for m in self.cells]
            if max(masses) - min(masses) > 1e-12:
                raise ConvergenceError(f"{self.name}: the mass at 0 of the discretized laws changes with the number "
                                       f"of cells ({', '.join(f'{x:.6g}' for x in masses)}); the atom of the limit is "
                                       f"not determined by them")
            return [] if masses[-1] <= 1e-12 else [(0.0, masses[-1])]
        return list(self._memoized("atoms", build))

    def _atom(self, m):
        A = self._tables(m)[0]
        rho_r, rho_c = self._rho
        g = nx.DiGraph()
        for k in range(m):
            g.add_edge("s", ("r", k), capacity=rho_r / m)
            g.add_edge(("c", k), "t", capacity=rho_c / m)
        for k, l in np.argwhere(A > 0):
            g.add_edge(("r", int(k)), ("c", int(l)))  # no capacity: unbounded
        rank = nx.maximum_flow_value(g, "s", "t")
        return max(0.0, 1.0 - rank / rho_r)

    def support(self, tol=DEFAULT_TOL, grid=200):
        """Support intervals ``[(lo, hi), ...]`` of :class:`~freeprob.solve.richardson.Extrapolated` edges.

        For each discretization the density is scanned on ``grid`` points of
        ``(0, scale]``; each edge is refined by bisection on ``density > 0``
        (batched, to ``1e-13`` of the scale) and the edges are extrapolated
        like values. An end that stays at 0 for every discretization (positive
        density at ``1e-12`` of the scale) is the hard edge 0, exactly.
        Raises :class:`ConvergenceError` when the discretizations do not have
        the same number of intervals or an edge's estimate exceeds
        ``tol * max(1, |edge|)``.
        """
        tol = _tolerance(tol)
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
            A, B, w, _ = self._tables(m)
            dens = -levels[i].imag / np.pi
            if np.isnan(dens).any():
                bad = xs[np.isnan(dens)][0]
                raise ConvergenceError(f"{self.name}: the discretization on {m} cells could not be solved at "
                                       f"x = {bad:.6g}", point=float(bad))
            pos = dens > 1e-9 * max(1.0, float(np.max(np.abs(levels[i]))))

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
                sol = solve_gram(A, B, w, x + 1e-14j * top, top, start=start)
                g = sol.G
                if np.isnan(g).any():
                    raise ConvergenceError(f"{self.name}: the discretization on {m} cells could not be solved near "
                                           f"a support edge", point=float(x[np.isnan(g)][0]))
                inside = -g.imag > 1e-7 * np.maximum(1.0, np.abs(g))
                known["x"], known["g"], known["inside"] = x, sol.g, inside
                return inside

            def edge(lo, hi, rising):
                # density(lo) is 0 and density(hi) > 0 when rising, the reverse otherwise; starts only from
                # this bracket's own points (a start far away may end on another root)
                known["x"] = None
                while hi - lo > 1e-13 * top:
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
        on the nodes used) must be below :data:`MASS_TOL`, and the total mass
        one to ``MASS_TOL`` (:func:`~freeprob.solve.cdf.tabulate`); otherwise
        :class:`ConvergenceError` with the numbers.
        """
        def build():
            intervals = [(float(a.value), float(b.value)) for a, b in self.support(tol=1e-6)]
            hard = [0.0] if any(a == 0.0 for a, _ in intervals) else []
            seen = []

            def density(x):
                x = np.atleast_1d(np.asarray(x, dtype=float))
                est = self.cauchy_estimate(np.where(x > 0, x, 1.0).astype(complex))
                d = np.where(x > 0, np.maximum(0.0, -est.value.imag / np.pi), 0.0)
                seen.append((x, np.where(x > 0, est.error / np.pi, 0.0)))
                return d

            try:
                table = tabulate(density, intervals, self.atoms(), nodes=nodes, mass_tol=MASS_TOL, hard=hard)
            except ConvergenceError as exc:
                raise ConvergenceError(
                    f"{self.name}: the distribution function could not be tabulated from the extrapolated density "
                    f"({exc}); near a hard edge whose density is not a power law (Dykema-Haagerup: about "
                    f"1/(x log^2 x) at 0) the table is not built, so Monte-Carlo checks and quantiles are refused",
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
            if not bound <= MASS_TOL:
                raise ConvergenceError(f"{self.name}: the error estimates of the extrapolated density integrate to "
                                       f"{bound:.2e} over the support, above {MASS_TOL:.0e}: the distribution "
                                       f"function is not verified to that mass", residual=bound)
            return table
        return self._memoized(("cdf", nodes), build)

    def quantile(self, p):
        """The ``p``-quantile (double precision)."""
        q = read_number(p, what="quantile level p")
        if not 0 <= q <= 1:
            raise DomainError(f"quantile level p must be between 0 and 1, got {p!r}")
        return self.cdf_function().quantile(float(q))


def _safe_start(start, z, radius):
    """``start`` where it can only lead to the law's solution, NaN rows (the path instead) elsewhere.

    Off the axis the solution with every ``g_k`` in the open lower half-plane is unique, and near the
    axis a start clearly inside it (``Im g_k < 0``) stays on that branch or fails (then the path runs).
    A real start at a real point (outside the coarser law's support, but maybe inside this one's, whose
    edges moved) would keep Newton on the real roots, one of which may not be the law's: it is dropped.
    """
    near = z.imag <= 1e-6 * radius
    size = 1 + np.max(np.abs(start), axis=1)
    real = np.max(start.imag, axis=1) > -1e-10 * size
    out = start.copy()
    out[near & real] = np.nan
    return out


def _count(k):
    if isinstance(k, bool) or not hasattr(k, "__index__") or not 0 <= int(k) <= 200:
        raise DomainError(f"the number of moments must be an integer between 0 and 200, got {k!r}")
    return int(k)


def _tolerance(tol):
    try:
        t = float(tol)
    except (TypeError, ValueError):
        raise DomainError(f"tol must be a positive number, got {tol!r}") from None
    if not 0 < t < 1:
        raise DomainError(f"tol must be a number between 0 and 1 (relative to max(1, |value|)), got {tol!r}")
    return t


def profile_law_of(model, cells=DEFAULT_CELLS):
    """The :class:`ProfileLaw` of a model file with a continuous variance profile.

    >>> import freeprob as fp
    >>> law = fp.profile_law_of(fp.find_model("triangular-gaussian"))
    >>> law.moments(4)                                       # k^k/(k+1)!, exact
    [1/2, 2/3, 9/8, 32/15]
    """
    return ProfileLaw(model.expr, model.law_kind, model.ratios, model.params, name=model.name, cells=cells)
