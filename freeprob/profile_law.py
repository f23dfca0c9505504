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
from .expr.profiles import C, R, uniform_table
from .expr.tree import Expr, Matrix, Transpose, leaves
from .discretized_law import DEFAULT_TOL, DiscretizedLaw
from .law import _Cache, _read_values  # the law's value cache and the one reader of ratios and parameters (same rank)
from .profiled import MAX_PROFILE_MOMENTS
from .reduce.blocks import extrapolate, has_continuous_profile
from .reduce.reduction import gram_factor, strip_scalar
from .solve.richardson import richardson
from .solve.vector_dyson import gram_moments, solve_gram

__all__ = ["DEFAULT_CELLS", "DEFAULT_TOL", "ProfileLaw", "expansion_exponents", "profile_law_of"]

#: Cell counts of the discretizations (geometric, ratio 2).
DEFAULT_CELLS = (8, 16, 32, 64, 128)
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


class ProfileLaw(DiscretizedLaw):
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

    def values(self):
        """``{symbol: exact value}`` for ratios and parameters (a new dict)."""
        return {**self.ratios, **self.params}

    def __repr__(self):
        return f"ProfileLaw({self.name!r}, law={self.law!r}, cells={self.cells})"

    # -- the discretized equations ----------------------------------------------------------------------
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

    @property
    def _batch(self):
        return BATCH_BYTES // (16 * self.cells[-1] ** 2)

    def _solve_level(self, i, z, start):
        A, B, w, _ = self._tables(self.cells[i])
        sol = solve_gram(A, B, w, z, self.scale, start=start)
        return sol.G, sol.g

    def _refine(self, i, unknowns):
        return np.repeat(unknowns, self.cells[i] // self.cells[i - 1], axis=1)

    @staticmethod
    def _resolvent(i, unknowns):
        return unknowns

    # -- moments --------------------------------------------------------------------------------------
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

    # -- atoms --------------------------------------------------------------------------------------
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

def _count(k):
    if isinstance(k, bool) or not hasattr(k, "__index__") or not 0 <= int(k) <= 200:
        raise DomainError(f"the number of moments must be an integer between 0 and 200, got {k!r}")
    return int(k)


def profile_law_of(model, cells=DEFAULT_CELLS):
    """The :class:`ProfileLaw` of a model file with a continuous variance profile.

    >>> import freeprob as fp
    >>> law = fp.profile_law_of(fp.find_model("triangular-gaussian"))
    >>> law.moments(4)                                       # k^k/(k+1)!, exact
    [1/2, 2/3, 9/8, 32/15]
    """
    if model.expr is None:  # a named model (causal attention) has no profile
        raise DomainError(f"{model.name} is a {model.kind} model, not a variance profile; its law is "
                          f"freeprob.causal_law_of(model)")
    return ProfileLaw(model.expr, model.law_kind, model.ratios, model.params, name=model.name, cells=cells)
