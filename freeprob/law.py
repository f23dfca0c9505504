"""Limiting spectral laws: the orchestration layer.

:class:`SpectralLaw` composes the symbolic reduction (:mod:`freeprob.reduce`),
the numeric systems and solvers (:mod:`freeprob.solve`) and the closed forms
(:mod:`freeprob.scalar.closedform`, which get plain data and a reference
solve, never the law), and answers: Cauchy transform, density, support,
atoms, moments, equations. :func:`eigenvalue_law`, :func:`singular_value_law`
and :func:`law_of` are the entry points.
"""

import threading
from types import MappingProxyType

import mpmath
import numpy as np
import sympy

from ._errors import ConvergenceError, DomainError, EliminationError
from ._numbers import read_number, read_points
from ._precision import check_dps, context, guard_digits, shared_precision, to_mpc, to_mpf
from .expr.entrywise import check_generic_position
from .expr.equivalence import GaussianMean
from .expr.tree import Expr, Inverse, Matrix, Product, Scaled, Sum, Transpose, leaves
from .expr.haar import has_haar
from .reduce.inverse import has_inverse, inverse_norm_bound
from .reduce.reduction import Reduction
from .scalar.closedform import (
    LawData,
    cauchy_polynomial,
    exact_moments,
    polynomial_atoms,
    polynomial_cauchy,
    polynomial_density,
    polynomial_support,
)
from .solve.cdf import tabulate
from .solve.contour import contour_moments
from .solve.edges import atom_at, hard_edge_at, support_by_density, support_by_folds
from .solve.newton import solve_fast, solve_point, solve_points
from .solve.numeric import NumericSystems
from .solve.poles import MissedSupport, complete_atoms
from .solve.series import series_coefficients, series_moments, system_domain
from .units import InUnits, divided_expression, unit_for

__all__ = ["MAX_GRID", "MAX_MOMENTS", "MAX_UNKNOWNS", "POLYNOMIAL_MAX_UNKNOWNS", "SpectralLaw", "eigenvalue_law", "law_of", "norm_bound", "rank_bound",
           "singular_value_law"]


#: Most moments a law computes in one call (the series costs grow like its square).
MAX_MOMENTS = 200
#: Fewest moments a law computes from the series at infinity (shorter requests are served from them).
MIN_SERIES_MOMENTS = 4
#: Largest grid or number of quadrature nodes a law tabulates.
MAX_GRID = 100000
#: How much finer the support scan is repeated when the moments show mass beyond the support found.
SUPPORT_RETRY = 5
#: Pieces of support the mass check may find missing, and a scan of their window then find, in one support().
MAX_RESCANS = 4
#: Default route for support and atoms: systems with more unknowns skip the
#: polynomial (elimination) route. Measured: 6-12 unknowns eliminate in
#: 0.1-1.6 s; the 20-unknown two-head attention system had not finished after
#: 260 s. An explicit ``method="polynomial"`` still tries, within its budget.
POLYNOMIAL_MAX_UNKNOWNS = 16

#: Largest reduced Dyson system a law solves: a Newton step costs ``n^3``
#: operations and a batch of points ``16 n^2`` bytes each (a product of 20
#: Wigner matrices, 820 unknowns, took 63 s for one density value; a product of
#: 201, 81003 unknowns, asked for 195 GiB).
MAX_UNKNOWNS = 1024
#: Memory of the Jacobians of one batch of double-precision points.
BATCH_BYTES = 2 ** 28

_METHODS = (None, "dyson", "polynomial")


def _mapping(value, what):
    """``value`` as a dict (None is empty); anything but a mapping is a :class:`DomainError`."""
    if value is None:
        return {}
    if not hasattr(value, "items"):
        raise DomainError(f"{what} must be a mapping {{dimension or name: value}}, got {type(value).__name__} "
                          f"{value!r}")
    return dict(value.items())


def _count(value, what, lo, hi):
    """An int in ``[lo, hi]`` (no bool, no float), or :class:`DomainError` naming ``what`` and the limits."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise DomainError(f"{what} must be an integer between {lo} and {hi}, got {value!r}")
    value = int(value)
    if not lo <= value <= hi:
        raise DomainError(f"{what} must be between {lo} and {hi}, got {value}")
    return value


def _dps_or_default(dps, default=15):
    """``check_dps(dps)``, with None meaning ``default`` (0 is refused, not taken for None)."""
    return check_dps(default if dps is None else dps)


def _read_values(expr, ratios, params):
    """``(ratios, params, dimensions)``: exact values keyed by symbol; :class:`DomainError` on bad input."""
    dims = expr.dimensions()
    symbols = {str(s): s for s in expr.free_scalars()}

    def symbol(key, unknown):
        sym = symbols.get(str(key)) if not isinstance(key, sympy.Symbol) else key
        if sym is None:
            raise DomainError(f"{unknown} {expr}")
        return sym

    exact_ratios = {}
    for key, value in _mapping(ratios, "ratios").items():
        sym = symbol(key, f"ratio given for {key}, which is not a dimension of")
        v = read_number(value, what=f"ratio of {key}")
        if not v > 0:
            raise DomainError(f"the ratio of dimension {key} must be positive, got {value}")
        exact_ratios[sym] = v
    missing = [str(d) for d in dims if d not in exact_ratios]
    if missing:
        raise DomainError(f"no ratio given for the dimension(s) {', '.join(missing)} of {expr}")
    exact_params = {}
    for key, value in _mapping(params, "params").items():
        sym = symbol(key, f"value given for {key}, which does not occur in")
        exact_params[sym] = read_number(value, what=f"parameter {key}")
    dimensions = tuple(dims) + tuple(s for s in exact_ratios if s not in dims)
    return exact_ratios, exact_params, dimensions


def rank_bound(expr, values):
    """An upper bound of the limiting normalized rank of ``expr`` (exact; ``rank/N`` as ``N -> oo``).

    Built on the expression tree: a Gaussian ``a x b`` has rank at most
    ``min(rho_a, rho_b)``, a Wigner or identity matrix ``rho_a``; a product has
    at most the smallest rank of its factors, a sum at most the sum of its
    terms' ranks (and never more than its rows or columns), a nonzero
    multiple or a transpose the rank of its argument. For polynomials in
    independent Gaussians the bound is attained generically; when it is not
    (cancellations, repeated factors), the atom it implies is only a lower
    bound, and :func:`~freeprob.solve.edges.atom_at` finds the larger mass.

    Parameters
    ----------
    expr : Expr
    values : dict
        Exact ratios (dimension symbol -> value) and parameters.

    Returns
    -------
    sympy number
    """

    def dim(s):
        return values[s]

    # with numbers for every ratio the bound is a rational built by min and + (sympy's Min and Add of many
    # terms simplify as they go: 0.2 s for 64 heads); with a symbol among them, sympy's Min and Add
    numeric = all(sympy.sympify(v).is_number for v in values.values())
    least = (lambda *xs: min(xs)) if numeric else sympy.Min
    total = (lambda xs: sum(xs, sympy.Integer(0))) if numeric else (lambda xs: sympy.Add(*xs))

    def walk(node):
        rows, cols = node.shape
        cap = least(dim(rows), dim(cols))
        if isinstance(node, Matrix):
            return cap if node.kind == "gaussian" else dim(rows)
        if isinstance(node, Inverse):  # invertible (the reduction proved it)
            return dim(rows)
        if isinstance(node, Transpose):
            return walk(node.arg)
        if isinstance(node, Scaled):
            c = sympy.sympify(node.coeff).subs(values)
            return sympy.Integer(0) if c == 0 else walk(node.arg)
        if isinstance(node, Product):
            return least(*[walk(f) for f in node.factors], cap)
        if isinstance(node, Sum):
            return least(total([walk(t) for t in node.terms]), cap)
        raise TypeError(f"unknown expression node {node!r}")

    out = walk(expr)
    return sympy.nsimplify(out) if isinstance(out, sympy.Float) else out


def norm_bound(expr, values, n=1e8):
    """An upper bound (float) of the limiting operator norm of ``expr``.

    ``||X|| <= sqrt(v) (sqrt(a) + sqrt(b))`` for a Gaussian ``a x b`` of entry
    variance ``v`` (its limiting largest singular value), ``2 sqrt(v a)`` for a
    Wigner matrix, 1 for the identity; norms of sums add and of products
    multiply. Dimensions are ``ratio * n`` with ``n = 1e8`` (every monomial is of
    order one, so this is the limit up to ``O(1/n)``; the result carries a
    factor ``1 + 1e-6``).
    """
    at = {s: v * n for s, v in values.items() if s in expr.dimensions()}
    at.update({s: v for s, v in values.items() if s not in at})

    seen = {}  # the coefficient of every head's term is the same expression

    def num(c):
        if c not in seen:
            seen[c] = abs(complex(sympy.sympify(c).subs(at).evalf(30)))
        return seen[c]

    def dim(s):
        return float(at[s])

    def walk(node):
        if isinstance(node, Inverse):  # 1/gap of the argument, in the limit (freeprob.reduce.inverse)
            return inverse_norm_bound(node, values, expr.dimensions())
        if isinstance(node, Matrix):
            a, b = node.shape
            if node.kind == "identity":
                return 1.0
            v = num(node.variance)
            if node.kind == "wigner":
                return 2.0 * np.sqrt(v * dim(a))
            return np.sqrt(v) * (np.sqrt(dim(a)) + np.sqrt(dim(b)))
        if isinstance(node, Transpose):
            return walk(node.arg)
        if isinstance(node, Scaled):
            return num(node.coeff) * walk(node.arg)
        if isinstance(node, Product):
            return float(np.prod([walk(f) for f in node.factors]))
        if isinstance(node, Sum):
            return float(sum(walk(t) for t in node.terms))
        raise TypeError(f"unknown expression node {node!r}")

    return walk(expr) * (1 + 1e-6)


class _Cache:
    """Everything a law computes once, behind one lock.

    A value is built outside the lock (builds may take long, and may ask the
    cache for other values); when two threads build the same key, the first
    stored wins and both get it.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._values = {}

    def get(self, key, build):
        with self._lock:
            if key in self._values:
                return self._values[key]
        value = build()
        with self._lock:
            return self._values.setdefault(key, value)

    def peek(self, key):
        with self._lock:
            return self._values.get(key)

    def put(self, key, value):
        with self._lock:
            self._values[key] = value


#: Points within this fraction of the scale of 0 are solved, for a Gram matrix's eigenvalues, in its symmetric
#: system: the hermitized variable sqrt(w) of a non-square factor is singular there (double precision loses the
#: solution below about 1e-26 of the scale).
GRAM_ZERO = 1e-20


class SpectralLaw:
    """The limiting law of the eigenvalues of a symmetric expression, or of the
    squared singular values of any expression.

    Parameters
    ----------
    expr : Expr
        A polynomial in Gaussian, Wigner and identity matrices.
    law : {"eigenvalues", "squared-singular-values"}
    ratios : dict
        Dimension (symbol or name) -> ratio ``rho_s`` (positive); every
        dimension of the expression needs one.
    params : dict, optional
        Parameter (symbol or name) -> value, for every other symbol.
    name : str, optional
    symmetry : bool, optional
        Reduce a sum of exchangeable terms (heads) through the verified
        symmetry quotient, whose size does not depend on the number of terms
        (default True; see :mod:`freeprob.reduce.quotient` and
        ``reduction.symmetry_note``). ``False`` reduces the full expression.
    gram : bool, optional
        Solve the eigenvalues of a Gram matrix ``c F F^T`` (``c > 0``) as the
        squared singular values of ``sqrt(c) F``, a smaller system (default
        True; ``reduction.kind`` says which was solved). The point ``0``
        itself, where the hermitized system of a non-square ``F`` is
        singular, is solved in the symmetric system of ``c F F^T``.

    Notes
    -----
    Numbers are converted to exact sympy values (floats through their
    shortest decimal string). For the squared singular values of ``P``
    (``a x b``) the law is that of the eigenvalues of ``P P^T`` over the
    ``a`` rows, with its atom at 0 when ``P`` has rank below ``a``.
    """

    def __init__(self, expr, law="eigenvalues", ratios=None, params=None, name=None, symmetry=True, gram=True):
        if not isinstance(expr, Expr):
            raise DomainError(f"expected a matrix expression (built from fp.gaussian, fp.wigner, ...), got "
                              f"{type(expr).__name__} {expr!r}")
        if law not in ("eigenvalues", "squared-singular-values"):
            raise DomainError(f"law must be 'eigenvalues' or 'squared-singular-values', got {law!r}")
        if not any(leaf.kind in ("gaussian", "wigner", "haar") for leaf in leaves(expr)):  # raises on clashing names
            raise DomainError(f"{expr} has no Gaussian or Wigner matrix: a deterministic expression has no "
                              f"random-matrix law to compute (its spectrum is its own)")
        check_generic_position(expr)
        exact_ratios, exact_params, dimensions = _read_values(expr, ratios, params)
        init = object.__setattr__
        init(self, "expr", expr)
        init(self, "law", law)
        init(self, "name", name or str(expr))
        init(self, "ratios", MappingProxyType(exact_ratios))
        init(self, "params", MappingProxyType(exact_params))
        init(self, "dimensions", dimensions)
        init(self, "_cache", _Cache())
        init(self, "_symmetry", symmetry)
        init(self, "_gram_option", gram)
        # the symbolic reduction runs now, so that bad input (shapes, scaling,
        # symmetry) is reported when the law is made, not at its first use
        init(self, "reduction", Reduction(expr, law, dimensions, symmetry=symmetry, gram=gram))
        unknowns = self.reduction.system.n_unknowns
        if unknowns > MAX_UNKNOWNS:
            raise DomainError(
                f"{self.name}: its reduced Dyson system has {unknowns} unknowns, more than the {MAX_UNKNOWNS} a law "
                f"solves (a Newton step costs n^3 operations, a point 16 n^2 bytes). Write exchangeable terms as a "
                f"sum over an index (sum(h, 1, H, ...)) so that the symmetry quotient applies, or solve a smaller "
                f"expression")

    def __setattr__(self, name, value):
        raise AttributeError(f"a SpectralLaw is immutable (cannot set {name!r}); make a new law instead")

    def __delattr__(self, name):
        raise AttributeError(f"a SpectralLaw is immutable (cannot delete {name!r})")

    # -- symbolic -------------------------------------------------------------
    @property
    def system(self):
        """The reduced Dyson system with ratios and parameters as symbols."""
        return self.reduction.system

    def values(self):
        """``{symbol: exact value}`` for ratios and parameters (a new dict)."""
        return {**self.ratios, **self.params}

    @property
    def numeric_system(self):
        """The Dyson system with every ratio and parameter substituted (exact)."""
        return self._cache.get("numeric", self._substitute)

    def _substitute(self):
        sub = self.system.subs(self.values())
        if sub.symbols:
            names = ", ".join(map(str, sub.symbols))
            raise DomainError(f"give values for the parameter(s) {names} of {self.name}")
        for leaf in leaves(self.expr):
            v = leaf.variance.subs(self.values())
            if v.is_number and not v > 0:
                raise DomainError(f"the variance of {leaf.name} is {v} at these values; it must be positive")
        return sub

    def equations(self, latex=False, symbolic=True):
        """The reduced Dyson equations as text (or LaTeX)."""
        sysm = self.system if symbolic else self.numeric_system
        return sysm.equations(latex=latex)

    # -- numeric, double precision --------------------------------------------
    @property
    def _numerics(self):
        return self._cache.get("numerics", lambda: NumericSystems(self.numeric_system))

    @property
    def fast(self):
        """The double-precision :class:`~freeprob.solve.numeric.FastSystem`."""
        return self._numerics.fast

    @property
    def _kind(self):
        """The law the reduced system is solved as: the law asked for, or squared singular values for the
        eigenvalues of a Gram matrix ``c F F^T`` (reduced as ``sqrt(c) F``: :func:`~freeprob.reduce.reduction.gram_factor`)."""
        return self.reduction.kind

    @property
    def _series_step(self):
        """The power of the system's variable per moment in the series at infinity: 1, or 2 for ``zeta = sqrt(w)``."""
        return 1 if self._kind == "eigenvalues" else 2

    @property
    def _scan_range(self):
        """The range the scale bounds, in the user's variable: ``(-s, s)``, or ``(0, s)`` for a law on ``[0, inf)``
        solved as squared singular values."""
        s = self.scale
        return (-s, s) if self._kind == "eigenvalues" else (0.0, s)

    @property
    def _symmetric(self):
        """The same law solved in the symmetric system of the Gram matrix (made once, when first needed): its
        values at the point 0, where the hermitized system of a non-square factor is singular."""
        def build():
            try:
                return SpectralLaw(self.expr, self.law, self.ratios, self.params, self.name, symmetry=self._symmetry,
                                   gram=False)
            except DomainError as exc:  # the symmetric pencil carries each leaf twice: it can be too large
                raise ConvergenceError(
                    f"{self.name}: the eigenvalues of a Gram matrix at 0 (within {GRAM_ZERO:g} of the scale) are "
                    f"solved in its symmetric system, which cannot be made here ({exc}); ask for points away "
                    f"from 0") from None
        return self._cache.get("symmetric", build)

    @property
    def _quadrature_coefficients(self):
        """Whether a coefficient of the system is a Gaussian mean, computed by quadrature at each precision."""
        def build():
            system = self.numeric_system
            coefficients = [c for m in system.b for c in m] + [t[-1] for t in system.eta]
            return any(isinstance(c, sympy.Basic) and c.has(GaussianMean) for c in coefficients)
        return self._cache.get("quadrature-coefficients", build)

    @property
    def _gram(self):
        """Whether the eigenvalues of a Gram matrix are solved as squared singular values (``_kind``)."""
        return self._kind != self.law

    def _to_system_z(self, w):
        w = np.asarray(w, dtype=complex)
        if self._kind == "eigenvalues":
            return w
        return np.sqrt(w)

    def _from_outputs(self, zs, outs):
        if self._kind == "eigenvalues":
            return outs[:, 0]
        return outs[:, 0] / zs

    def cauchy_fast(self, z):
        """Double-precision Cauchy transform at complex points (a scalar or a 1-d array).

        Points where the solve could not be verified are NaN: a Newton
        correction above 1e-10 (relative), the Herglotz bound
        ``-Im G >= y/((|x| + R)^2 + y^2)/2`` failed (a wrong branch), or a real
        point whose boundary value is not reached (at an atom, or within about
        ``1e-10`` of the width from an edge).
        """
        z = read_points(z)
        if z.size == 0:
            return np.zeros(0, dtype=complex)
        if self._units:
            return self._units.cauchy_fast(z)
        flip = z.imag < 0
        w = np.where(flip, np.conj(z), z)
        zs = self._to_system_z(w)
        eta = 1e-12 * (1 + np.abs(zs))
        # Points on (or within round-off of) the axis are solved on the axis
        # itself: solve_fast continues them from just above it and finishes
        # with Newton on the real line. For squared singular values, w < 0
        # is the imaginary system point i sqrt(-w), solved as it is, and
        # w = 0 (where the atom and a hard edge sit) has no value.
        zero = (zs == 0) & (self._kind == "squared-singular-values")
        # a Gram matrix's eigenvalues at 0 and next to it: in its symmetric system (below), not solved here
        near0 = self._gram & (np.abs(w) <= GRAM_ZERO * self.scale)
        zero |= near0
        near = (zs.imag < eta) & ~zero & ((zs.real != 0) | (self._kind == "eigenvalues"))
        zs = np.where(near, zs.real + 0j, np.where(zero, 1j, zs))
        fast = self.fast  # first: a parameter without a value is reported here, by name
        radius = self.scale if self._kind == "eigenvalues" else float(np.sqrt(self.scale))
        # a batch holds a dense Jacobian per point: batches are cut to BATCH_BYTES of them
        size = max(1, BATCH_BYTES // (16 * self.system.n_unknowns ** 2))
        pieces = [solve_fast(fast, zs[i:i + size], raise_on_failure=False, radius=radius)
                  for i in range(0, zs.size, size)]
        outs = np.concatenate([piece[1] for piece in pieces])
        conv = np.concatenate([piece[2] for piece in pieces])
        g = self._from_outputs(zs, outs)
        conv &= ~zero
        g = np.where(conv, g, complex(np.nan, np.nan))  # NaN in both parts: an unverified density is NaN, not 0
        if near0.any():
            g[near0] = self._symmetric.cauchy_fast(w[near0])
        return np.where(flip, np.conj(g), g)

    def density_fast(self, x):
        """Double-precision density at real points (vectorized).

        The value at ``x`` is ``-Im G(x + i0)/pi``, solved on the real axis
        (continued from just above it); it is accurate to about ``1e-12``
        relative to ``max(1, |G|)`` inside the support.
        Unverified points (at an atom) are NaN.
        """
        x = read_points(x, real=True)
        if self._units:
            return self._units.density_fast(x)
        g = self.cauchy_fast(x.astype(complex))
        d = -g.imag / np.pi
        if self._kind == "squared-singular-values":  # the law of x > 0; a Gram matrix's eigenvalues: of x >= 0
            d = np.where((x > 0) | ((x == 0) & self._gram), d, 0.0)
        return np.where(np.isnan(d), np.nan, np.maximum(d, 0.0))

    # -- numeric, arbitrary precision -----------------------------------------
    def _system_point(self, w):
        """``(point, value)`` for :func:`~freeprob.solve.newton.solve_point` at the user point ``w``: the point
        in the system's variable at a context's precision, and the checked value (None: the first output)."""
        if self._kind == "eigenvalues":
            return (lambda ctx: ctx.mpc(w)), None
        # hermitized variable zeta = sqrt(w), G = G_11 / zeta
        return (lambda ctx: ctx.sqrt(ctx.mpc(w))), (lambda z, outs: outs[0] / z)

    def _solve_point(self, w, dps, on_axis):
        """Solve at one user point ``w`` (Im w >= 0) at ``dps`` digits; returns (G, solution)."""
        if self._gram and abs(w) <= GRAM_ZERO * self.scale:
            return self._symmetric._solve_point(w, dps, on_axis)
        point, value = self._system_point(w)
        sol = solve_point(self._numerics, point, dps, on_axis=on_axis, value=value, where=w)
        return sol.value, sol

    def _cauchy_many(self, zs, dps):
        """``[cauchy(z, dps) for z in zs]`` for points with ``Im z >= 0`` (the upper half of a circle), each
        verified as :meth:`cauchy` verifies it, with the double-precision starts of all of them from one
        vectorized solve (:func:`~freeprob.solve.newton.solve_points`)."""
        if self._units:
            return [self.cauchy(z, dps=dps) for z in zs]
        dps = check_dps(dps)
        ctx = context(dps + guard_digits(dps))
        points = [to_mpc(ctx, z) for z in zs]
        if any(z.imag < 0 for z in points):
            raise DomainError("_cauchy_many takes points with Im z >= 0")
        targets = [self._system_point(z)[0] for z in points]
        value = self._system_point(points[0])[1] if points else None
        sols = solve_points(self._numerics, targets, dps, on_axis=[z.imag == 0 for z in points], value=value,
                            where=points)
        return [sol.value for sol in sols]

    def cauchy(self, z, dps=None, method="dyson"):
        """The Cauchy transform ``G(z) = int dmu(x)/(z - x)``.

        Parameters
        ----------
        z : complex, str or sympy number
            Off the real axis; on the real axis ``G(x + i0)`` is returned.
        dps : int, optional
            Decimal digits; ``None`` gives a double-precision complex.
        method : {"dyson", "polynomial"}
            The Dyson equation (default), or branch tracking on the eliminated
            polynomial equation of ``G`` (see :meth:`polynomial`).

        Returns
        -------
        complex or mpc
            The mpc carries ``dps`` plus guard digits; its error is below
            ``10^-dps`` (relative to ``max(1, |G|)``).

        Raises
        ------
        ConvergenceError
            When the value cannot be verified to ``dps`` digits.
        """
        if self._units:
            self._route(method)
            return self._units.cauchy(z, dps, method)
        if self._route(method) == "polynomial":
            with shared_precision():
                return polynomial_cauchy(self.closed_form_data, z, dps=_dps_or_default(dps))
        if dps is None:
            # one reader for every spelling of a point (a string such as "1 + 0.5*I" included)
            g = complex(self.cauchy_fast(np.array([complex(to_mpc(context(20), z))]))[0])
            # a point the double-precision path cannot verify is solved (and verified) in mpmath
            return g if np.isfinite(g) else complex(self.cauchy(z, dps=15))
        dps = check_dps(dps)
        ctx = context(dps + guard_digits(dps))
        zq = to_mpc(ctx, z)
        flip = zq.imag < 0
        if flip:
            zq = ctx.conj(zq)
        g, _ = self._solve_point(zq, dps, on_axis=(zq.imag == 0))
        return ctx.conj(g) if flip else g

    def density(self, x, dps=None, method="dyson"):
        """The density ``-Im G(x + i0)/pi`` at a real point ``x``.

        With ``dps`` the value is correct to ``10^-dps`` (absolute, relative to
        ``max(1, |G|)``); a value below that is returned as exactly 0.
        ``method`` as in :meth:`cauchy`.
        """
        if self._units:
            self._route(method)
            return self._units.density(x, dps, method)
        if self._route(method) == "polynomial":
            with shared_precision():
                return polynomial_density(self.closed_form_data, x, dps=_dps_or_default(dps))
        if dps is None:
            d = float(self.density_fast(np.array([float(read_number(x, what="density point"))]))[0])
            # a point the double-precision path cannot verify is solved (and verified) in mpmath
            return d if np.isfinite(d) else float(self.density(x, dps=15))
        return self._density_point(x, dps, cauchy=False)[0]

    def density_and_cauchy(self, x, dps):
        """``(density, G(x + i0))`` at a real point ``x`` from one verified solve.

        Each is the value :meth:`density` and :meth:`cauchy` give at ``dps`` digits.
        """
        if self._units:
            return self._units.density_and_cauchy(x, dps)
        return self._density_point(x, dps, cauchy=True)

    def _density_point(self, x, dps, cauchy):
        dps = check_dps(dps)
        ctx = context(dps + guard_digits(dps))
        xq = to_mpf(ctx, x)
        # squared singular values: the law of x > 0 (the density is 0 at x <= 0 by convention); the eigenvalues
        # of a Gram matrix (solved as squared singular values) have density 0 at x < 0, and at 0 the solve
        # below decides (an atom or a hard edge there is an error, as for every eigenvalue law)
        if self._kind == "squared-singular-values" and (xq < 0 or (xq == 0 and not self._gram)):
            return ctx.mpf(0), (self._solve_point(ctx.mpc(xq), dps, on_axis=True)[0] if cauchy else None)
        g, _ = self._solve_point(xq, dps, on_axis=True)
        d = -g.imag / ctx.pi
        if abs(d) < ctx.mpf(10) ** (-dps) * max(1, abs(g)):
            return ctx.mpf(0), g
        if d < 0:
            raise ConvergenceError(f"negative density {ctx.nstr(d, 5)} at x = {x}", point=x, dps=dps)
        return d, g

    # -- moments, support, atoms ---------------------------------------------
    def moments(self, k, dps=None):
        """The moments ``m_1, ..., m_k`` from the Dyson equation's series at infinity.

        Exact sympy numbers when every coefficient is algebraic (and ``dps`` is
        None) and the expression has no inverse; otherwise mpf values correct
        to ``10^-dps`` (default 15), checked by a second computation with 10
        more digits. When the series does not start (an inverse whose
        argument has no identity part, as ``inv(X^T X / n)``), the moments come
        from ``G`` on a circle around the support
        (:func:`~freeprob.solve.contour.contour_moments`), to the same digits.
        """
        k = _count(k, "the number of moments", 0, MAX_MOMENTS)
        if dps is not None:
            dps = check_dps(dps)
        elif not self.system.exact_series:  # an inverse: algebraic moments, from the numeric series
            dps = 15
        # m_1..m_k do not depend on how many more are asked for: the longest list computed serves every
        # shorter request, and a series is never shorter than MIN_SERIES_MOMENTS (its fixed costs, the
        # number field of the coefficients or their numeric values, dominate a few more terms)
        key = ("moments", dps)
        have = self._cache.peek(key)
        if have is not None and len(have) >= k:
            return list(have[:k])
        n = max(k, MIN_SERIES_MOMENTS)
        try:
            out = series_moments(self.numeric_system, n, self._series_step, dps)
            if self._has_inverse:
                try:
                    self._check_far_field(out)
                except ConvergenceError:
                    # a wrong branch of the series: G on a circle of the scale bound's radius (the support found
                    # by the scan may miss a far piece, which the wrong moments hid from its mass check)
                    return self._cache.get(("contour-moments", k, dps), lambda: self._contour_moments(k, dps))
            self._cache.put(key, tuple(out))
            return out[:k]
        except ZeroDivisionError:
            # the series at infinity does not start (inv(X^T X/n): the leading coefficient is singular):
            # the moments from G on a circle around the support, to the same digits
            return self._cache.get(("contour-moments", k, dps), lambda: self._contour_moments(k, dps))

    def _contour_moments(self, k, dps):
        """``m_1..m_k`` from ``G`` on a circle around the support (:func:`contour_moments`), checked against
        :meth:`_far_field`: a circle drawn around a support that misses a far piece misses its mass, and is
        then redrawn around the scale bound, which encloses every piece."""
        def on(radius):
            return contour_moments(lambda z, d: self.cauchy(z, dps=d), k, dps or 15, radius, self.name,
                                   many=self._cauchy_many)

        out = on(self._contour_radius())
        if not out:
            return out
        r = max(float(self.scale), 1e-300)
        est = self._far_field()
        if est is None:
            return out  # nothing to check against

        def agrees(ms):
            return all(abs(e - m) <= 1e-6 * r ** (j + 1) for j, (e, m) in enumerate(zip(est, ms)))

        if not agrees(out):
            out = on(r)
            if not agrees(out):
                raise ConvergenceError(
                    f"the moments of {self.name} from G on a circle ({', '.join(mpmath.nstr(m, 10) for m in out[:2])}) "
                    f"disagree with G far from the support ({', '.join(mpmath.nstr(e, 10) for e in est)})", dps=dps)
        return out

    def _far_field(self):
        """``(m1, m2)`` estimated from the verified ``G`` far from the support (mpf), or None when ``G`` cannot be
        verified there.

        At ``z = i T``, ``Re (G - 1/z) z^2 = m_1 - m_3/T^2 + ...`` and ``Re (G - 1/z) z^3 = m_2 - m_4/T^2 +
        ...``: with ``T = 10^4 R`` (``R`` the scale bound) the error is about ``10^-8`` of ``R`` and ``R^2``.
        Where the solve cannot start that far out (a loose bound), ``T = 100 R`` and ``200 R`` combined by
        Richardson extrapolation remove the ``T^-2`` term, to the same order.
        """
        r = max(float(self.scale), 1e-300)
        ctx = context(40)

        def at(t):
            z = ctx.mpc(0, t)
            h = ctx.mpc(self.cauchy(complex(z), dps=30)) - 1 / z
            return ctx.matrix([(h * z ** 2).real, (h * z ** 3).real])

        try:
            e = at(1e4 * r)
        except ConvergenceError:
            try:
                e = (4 * at(200 * r) - at(100 * r)) / 3
            except ConvergenceError:
                return None
        return e[0], e[1]

    def _check_far_field(self, ms):
        """Refuse series moments that the verified ``G`` far from the support contradicts.

        With an inverse, the series' order-0 term solves a fixed point with
        more than one solution (as ``G`` of an inverse has more than one branch),
        and the iteration can settle on a non-physical one: ``W + 40 Q`` with a
        projection ``Q`` of rank ratio 1/100 gave ``m_1 = -0.00025`` instead of
        ``0.4``. The estimates of :meth:`_far_field` (off by about ``10^-8 R``
        and ``10^-8 R^2``) must agree with the series to ``10^-6 R`` and
        ``10^-6 R^2``; :class:`ConvergenceError` with the numbers otherwise.
        """
        r = max(float(self.scale), 1e-300)
        far = self._far_field()
        if far is None:
            return  # nothing to check against: the series is taken as it is
        est1, est2 = far
        # both callers hold at least MIN_SERIES_MOMENTS (4) moments
        m1, m2 = (mpmath.mpf(str(sympy.re(m))) if isinstance(m, sympy.Basic) else mpmath.mpf(m) for m in ms[:2])
        if abs(est1 - m1) > 1e-6 * r or abs(est2 - m2) > 1e-6 * r * r:
            raise ConvergenceError(
                f"the moments of {self.name} from the series at infinity (m1 = {mpmath.nstr(m1, 10)}, m2 = "
                f"{mpmath.nstr(m2, 10)}) disagree with the verified Cauchy transform far from the support (m1 ~ "
                f"{mpmath.nstr(est1, 10)}, m2 ~ {mpmath.nstr(est2, 10)}): the series settled on a non-physical "
                f"branch of an inverse", dps=15)

    def _contour_radius(self):
        """A bound of ``|x|`` on the support for :func:`contour_moments`: the verified support's edges when
        they can be had (the norm bound of an inverse, ``1/gap``, can be far larger, and points far out
        are harder to start), else :attr:`scale`."""
        try:
            # atoms() also checks that the support and the atoms carry mass one: a piece the scan missed fails it
            edges = [abs(float(e)) for iv in self.support() for e in iv] + [abs(float(x)) for x, _ in self.atoms()]
        except ConvergenceError:
            return self.scale
        return max(edges) * (1 + 1e-6)

    def _moments_float(self, k):
        try:
            ms = self.moments(k)
        except ConvergenceError:
            ms = self.moments(k, dps=15)
        return [float(sympy.re(m)) if isinstance(m, sympy.Basic) else float(m) for m in ms]

    def support_range(self):
        """An interval ``(lo, hi)`` (floats) that contains the support, from the even moments."""
        if self._kind == "eigenvalues":
            ms = self._moments_float(16)
            r = max(abs(ms[2 * j - 1]) ** (1 / (2 * j)) for j in range(1, 9))
            return -1.6 * r - 1e-3, 1.6 * r + 1e-3
        ms = self._moments_float(8)
        r = max(abs(ms[j - 1]) ** (1 / j) for j in range(1, 9))
        return 0.0, 2.0 * r + 1e-3

    # -- routes ---------------------------------------------------------------
    def _route(self, method, auto=False):
        """``"dyson"``, ``"polynomial"``, or for ``auto`` and ``method=None`` ``"auto"``."""
        if method not in _METHODS:
            raise DomainError(f"method must be 'dyson', 'polynomial' or None, got {method!r}")
        if method is None:
            return "auto" if auto else "dyson"
        return method

    def _closed_or_dyson(self, method, closed, dyson):
        """The Dyson route (fast, verified) by default; the polynomial route when asked for, or when the
        Dyson route cannot verify its answer and elimination finishes within 30 seconds (systems of at
        most :data:`POLYNOMIAL_MAX_UNKNOWNS` unknowns)."""
        route = self._route(method, auto=True)
        if route == "polynomial":
            with shared_precision():  # SymPy evaluates algebraic numbers in mpmath's global context
                self.polynomial(budget_seconds=30)
                return closed(self.closed_form_data)
        try:
            return dyson()
        except ConvergenceError:
            if route == "dyson" or self.system.n_unknowns > POLYNOMIAL_MAX_UNKNOWNS:
                raise
            try:
                with shared_precision():
                    self.polynomial(budget_seconds=30)
                    return closed(self.closed_form_data)
            except (EliminationError, ConvergenceError, DomainError):
                pass
            raise

    @property
    def closed_form_data(self):
        """The :class:`~freeprob.scalar.closedform.LawData` the closed forms work from."""
        return self._cache.get("closed-form", lambda: _closed_form_data(self))

    def polynomial(self, symbolic=False, budget_seconds=60):
        """The irreducible polynomial ``Pi(g, z)`` with ``Pi(G(z), z) = 0``
        (:func:`freeprob.scalar.closedform.cauchy_polynomial`); raises
        :class:`EliminationError` when elimination exceeds its budget."""
        key = ("elimination-failed", symbolic, budget_seconds)
        failed = self._cache.peek(key)
        if failed is not None:
            raise failed
        try:
            with shared_precision():
                return cauchy_polynomial(self.closed_form_data, symbolic=symbolic, budget_seconds=budget_seconds)
        except EliminationError as exc:
            self._cache.put(key, exc)
            raise

    def exact_moments(self, k, symbolic=False):
        """Moments ``(m_1, ..., m_k)`` from the series at infinity of :meth:`polynomial`'s branch
        (:func:`freeprob.scalar.closedform.exact_moments`): exact numbers, or with
        ``symbolic=True`` rational functions of the ratios and parameters."""
        k = _count(k, "the number of moments", 0, MAX_MOMENTS)
        with shared_precision():
            return exact_moments(self.closed_form_data, k, symbolic=symbolic)

    def support(self, dps=None, grid=401, method=None):
        """Support intervals ``[(a, b), ...]`` with edges to ``dps`` digits (default 15).

        ``method="dyson"``: edges bracketed on a double-precision scan of the
        Cauchy transform over the range :attr:`scale` bounds (a coarse pass of
        ``grid // 4`` points refined where ``G`` is not smooth, down to cells
        of a uniform ``grid``-point scan: :func:`~freeprob.solve.edges.adaptive_scan`)
        and refined by Newton's method on the fold system (see
        :mod:`freeprob.solve.edges`); an end at 0 towards which the density
        grows is a hard edge, reported as exactly 0 once verified
        (:func:`~freeprob.solve.edges.hard_edge_at`: absolutely continuous
        mass within ``10^-dps`` of the scale from 0). ``method="polynomial"``:
        the real roots of the discriminant of :meth:`polynomial` that are true
        edges. By default the Dyson route, and the polynomial route when the
        Dyson route cannot verify an edge and elimination finishes within 30
        seconds (systems of at most :data:`POLYNOMIAL_MAX_UNKNOWNS` unknowns).
        """
        dps = _dps_or_default(dps)
        grid = _count(grid, "grid", 16, MAX_GRID)
        self._route(method, auto=True)
        self.scale  # a scale that overflows double precision is refused before either route
        if self._units:
            return self._units.support(dps, grid, method)
        out = self._closed_or_dyson(
            method,
            lambda data: polynomial_support(data, dps),
            lambda: list(self._cache.get(("support", dps, grid), lambda: tuple(self._support_dyson(dps, grid)))),
        )
        if not out:
            raise ConvergenceError(f"no support interval of {self.name} could be verified (an empty support is "
                                   f"never right for a random matrix model)")
        return out

    def _support_dyson(self, dps, grid):
        range_ = self._scan_range

        def scan(points):
            out = support_by_folds(self._numerics, self.density_fast, self._kind, range_, points, dps, self.name,
                                   hard_edge=lambda x0: self._at_zero(dps, hard_edge=True), cauchy=self.cauchy_fast)
            if not out:
                raise ConvergenceError(f"no positive density of {self.name} found on [{range_[0]:.6g}, "
                                       f"{range_[1]:.6g}]")
            return out

        out = scan(grid)
        # a support piece narrower than the coarse pass's spacing, far from the rest, can be missed by the
        # scan; the moments say so: a law on [-R, R] has |m_k| <= R^k. Then the scan is repeated on a grid
        # SUPPORT_RETRY times finer, whose result is taken (an atom away from 0 can also break the bound,
        # so the bound alone refuses nothing)
        if grid * SUPPORT_RETRY <= MAX_GRID and self._mass_beyond(out):
            out = scan(grid * SUPPORT_RETRY)
        # the support is complete only when its continuous mass and the atoms make 1 (the mass check,
        # complete_atoms): a piece the scan stepped over is found again by a scan of the window the check
        # locates it in, or is an error, never a silent omission. The atoms the check finds in the gaps are
        # those atoms() gives
        for rescans in range(MAX_RESCANS + 1):
            try:
                self._mass_check(out, dps)
                return out
            except MissedSupport as missed:
                if rescans == MAX_RESCANS:
                    raise ConvergenceError(f"{missed} ({MAX_RESCANS} windows were scanned for pieces the scan "
                                           f"missed already)", point=missed.point, dps=dps) from None
                out = self._with_missed_piece(out, missed, dps, grid)

    def _mass_check(self, intervals, dps):
        """Every atom, from the mass check of the support ``intervals`` (:meth:`_complete_atoms`), run once per
        support: a support found on another grid is checked again (a piece found by a window's scan is missed
        by every grid's scan)."""
        key = tuple((str(a), str(b)) for a, b in intervals)
        return self._cache.get(("mass-check", dps, key), lambda: self._complete_atoms(intervals, dps))

    def _with_missed_piece(self, intervals, missed, dps, grid):
        """``intervals`` with the support in the window ``(center - radius, center + radius)`` where the mass
        check found mass that is not an atom (:class:`~freeprob.solve.poles.MissedSupport`), scanned alone
        (the window keeps away from the support found, and from 0). Re-raises when the scan finds nothing
        new there."""
        lo, hi = missed.center - missed.radius, missed.center + missed.radius
        if lo <= 0 <= hi or any(a < hi and lo < b for a, b in ((float(a), float(b)) for a, b in intervals)):
            raise missed
        try:
            pieces = support_by_folds(self._numerics, self.density_fast, self._kind, (lo, hi), grid, dps,
                                      self.name, cauchy=self.cauchy_fast, local=True)
        except ConvergenceError:
            raise missed from None
        pieces = [(a, b) for a, b in pieces if lo < float(a) and float(b) < hi]
        if not pieces:
            raise missed
        return sorted(list(intervals) + pieces, key=lambda ab: float(ab[0]))

    @property
    def _has_inverse(self):
        """Whether the expression has an inverse (a Haar rotation is written with one)."""
        return has_inverse(self.expr) or has_haar(self.expr)

    def _mass_beyond(self, intervals):
        """Whether the moments ``m_1..m_4`` (of the series; without a verified series ``m_1, m_2`` from
        :meth:`_far_field`) exceed the bound ``R^k`` of a law on ``[-R, R]``, with ``R`` the largest ``|edge|``
        of ``intervals``."""
        dps = None if self.system.exact_series else 15
        have = self._cache.peek(("moments", dps))
        if have is None or len(have) < MIN_SERIES_MOMENTS:
            try:
                have = tuple(series_moments(self.numeric_system, MIN_SERIES_MOMENTS, self._series_step, dps))
                if self._has_inverse:
                    self._check_far_field(have)
                self._cache.put(("moments", dps), have)
            except (ZeroDivisionError, ConvergenceError):
                # no series (or a wrong branch of it): m1 and m2 estimated from G far out (not cached)
                far = self._far_field()
                if far is None:
                    return False
                have = tuple(abs(e) * (1 - 1e-3) for e in far)
        r = max(abs(float(e)) for iv in intervals for e in iv)
        for k, m in enumerate(have[:MIN_SERIES_MOMENTS], start=1):  # a law on [-R, R] has |m_k| <= R^k
            value = abs(float(sympy.re(m))) if isinstance(m, sympy.Basic) else abs(float(m))
            if value > r ** k * (1 + 1e-8) + 1e-12:
                return True
        return False

    # -- structure --------------------------------------------------------------
    def _scale_bound(self):
        """:func:`norm_bound` of the expression, squared for squared singular values (float, may be inf)."""
        self.numeric_system  # a parameter without a value is reported here, by name
        b = norm_bound(self.expr, self.values())
        return b if self.law == "eigenvalues" else b * b

    def _typical_log2(self):
        """``log2`` of the law's typical size, ``sqrt(m_2)`` (eigenvalues) or ``m_1`` (squared singular
        values), from the series (exact or 15 digits; None if it is not positive)."""
        ms = self.moments(2)
        m = ms[1] if self.law == "eigenvalues" else ms[0]
        v = mpmath.mpf(str(sympy.N(sympy.re(m), 20))) if isinstance(m, sympy.Basic) else mpmath.mpf(m)
        if not v > 0:
            return None
        return float(mpmath.log(v, 2)) / (2 if self.law == "eigenvalues" else 1)

    @property
    def _units(self):
        """None, or the :class:`~freeprob.units.InUnits` that answers numeric questions when the
        scale is far from one (:func:`~freeprob.units.unit_for`): the law of the expression divided
        by a power of two, converted back exactly."""
        def build():
            if has_inverse(self.expr) or has_haar(self.expr):
                # the edge and atom searches of inverse pencils measure residuals absolutely, and a divided
                # inverse moves its unknowns by the unit: these laws are solved as they are
                return None
            self.numeric_system  # a parameter without a value is reported here, by name
            e = unit_for(self._typical_log2(), self.law)
            if e == 0:
                return None
            divided = divided_expression(self.expr, self.values(), e)
            inner = SpectralLaw(divided, self.law, self.ratios, self.params, self.name, symmetry=self._symmetry,
                                gram=self._gram_option)
            return InUnits(inner, e)
        return self._cache.get("units", build)

    @property
    def scale(self):
        """A bound (float) of ``|x|`` on the support, from the norms of the leaves
        (:func:`norm_bound`; squared for squared singular values)."""
        def build():
            out = self._scale_bound()
            if not (np.isfinite(out) and 1e-300 < out < 1e300):
                raise ConvergenceError(
                    f"the law's scale (a bound {out:.3g} of its support) is beyond the range of double precision, "
                    f"in which the law is solved in units of its scale: rescale the model")
            return out
        return self._cache.get("scale", build)

    def rank_bound(self):
        """An upper bound of the normalized rank of the expression (exact; :func:`rank_bound`)."""
        return self._cache.get("rank", lambda: rank_bound(self.expr, self.values()))

    def atom_lower_bound(self):
        """The mass at 0 implied by the ranks: ``max(0, 1 - rank/rows)`` (exact), a lower bound of the atom at 0."""
        rows = self.ratios[self.expr.shape[0]]
        return sympy.Max(0, 1 - self.rank_bound() / rows)

    def _at_zero(self, dps, hard_edge=False):
        """``(mass, how)`` at 0 (:func:`~freeprob.solve.edges.atom_at`), with ``hard_edge`` also verifying
        absolutely continuous mass at 0; cached, and the hard-edge result serves the atom too."""
        done = self._cache.peek(("zero", dps, True))
        if done is not None:
            return done
        if not hard_edge:
            if self._gram and self.atom_lower_bound() == 0 and self._quadrature_coefficients:
                # no atom expected: one solve next to 0 in the symmetric system settles a zero mass. The
                # hermitized system of a non-square factor is singular at 0, and its descent to 0 works at a
                # ladder of precisions (60 to 100 digits for 15), each of which costs new quadratures of the
                # coefficients that are Gaussian means (deep-features-tanh: 0.35 s against 0.13 s with the
                # symmetric system's reduction); with exact coefficients the descent is the cheaper (0.02 s)
                try:
                    twin = self._symmetric
                except ConvergenceError:  # too large: the descent in the hermitized system, slower but sound
                    twin = None
                if twin is not None:
                    return self._cache.get(("zero", dps, False), lambda: twin._at_zero(dps))
            return self._cache.get(("zero", dps, False), lambda: atom_at(
                self._numerics, self._kind, 0, dps, self.atom_lower_bound(), self.scale))
        return self._cache.get(("zero", dps, True), lambda: hard_edge_at(
            self._numerics, self._kind, 0, dps, self.atom_lower_bound(), self.scale))

    def support_fast(self, grid=2001, rel=1e-6):
        """Support intervals in double precision, from the fast density alone.

        No moments and no fold system: the range is found by probing the
        density on a doubling grid ``±2^k`` (``k = -6..16``) and widened while
        the density is positive at an end; each grid bracket of an edge is
        shrunk by repeated 16-point searches on ``density > threshold`` to
        ``rel`` of its width (the threshold is ``1e-4`` of the median bulk
        density, which moves a square-root edge by about ``1e-8`` of the
        support's width: a smaller ``rel`` buys nothing). These are edges of
        the double-precision density, for tables and plots; use
        :meth:`support` for verified digits. A narrow piece of support missed
        by the probe shows up as missing mass in :meth:`cdf_function`, which
        raises.

        Returns
        -------
        list of (float, float)
        """
        if self._units:
            return self._units.support_fast(grid, rel)
        key = ("support-fast", grid, rel)
        return list(self._cache.get(key, lambda: support_by_density(self.density_fast, self._kind, grid, rel, self.name)))

    def atoms(self, dps=None, candidates=None, method=None):
        """Atoms ``[(x, mass), ...]`` with masses to ``dps`` digits (default 15).

        ``method="dyson"``: at each of ``candidates``, the mass
        ``lim iy G(x0 + iy)``, kept when above ``10^-dps``. At 0 it is settled
        between the lower bound the ranks of the expression give
        (:meth:`atom_lower_bound`) and the upper bounds ``Re(iy G(iy))`` of the
        Dyson solution on the imaginary axis (:func:`~freeprob.solve.edges.atom_at`):
        when they agree to the digits asked for, the mass is the exact bound.
        By default (``candidates=None``) every atom: the one at 0, and those
        in the gaps of the :meth:`support`, found when the support's continuous
        mass and the atom at 0 do not add up to 1 (as poles of ``G`` on the
        real axis, measured on circles around them:
        :func:`~freeprob.solve.poles.complete_atoms`); a mass that still does
        not add up raises :class:`ConvergenceError`.
        ``method="polynomial"``: every pole of the branch of :meth:`polynomial`,
        location and mass exact. By default the Dyson route, and the
        polynomial route when the Dyson route cannot verify a mass and
        elimination finishes within 30 seconds.
        """
        dps = _dps_or_default(dps)
        if candidates is not None and (isinstance(candidates, (str, bytes)) or not hasattr(candidates, "__iter__")):
            raise DomainError(f"candidates must be a sequence of points (default: every atom), got {candidates!r}")
        if self._units:
            self._route(method, auto=True)
            return self._units.atoms(dps, candidates, method)

        def closed(data):
            ctx = context(dps + guard_digits(dps))
            return [(ctx.mpf(a.x), ctx.mpf(a.mass)) for a in polynomial_atoms(data, dps)]

        def dyson():
            if candidates is None:
                return self._cache.get(("all-atoms", dps), lambda: self._all_atoms(dps))
            ctx = context(dps + guard_digits(dps))
            out = []
            for x0 in candidates:
                x0 = read_number(x0, what="atom candidate")
                if x0 == 0:
                    mass, _ = self._at_zero(dps)
                else:
                    mass, _ = atom_at(self._numerics, self._kind, float(x0), dps, 0, self.scale)
                if abs(mass) > ctx.mpf(10) ** (-dps):
                    out.append((to_mpf(ctx, x0), ctx.mpf(mass)))
            return out

        return self._closed_or_dyson(method, closed, dyson)

    def _all_atoms(self, dps):
        """Every atom: those the Dyson support's mass check settled (:meth:`_mass_check`, run by the support)."""
        return self._mass_check(self.support(dps, method="dyson"), dps)

    def _complete_atoms(self, intervals, dps):
        """The atom at 0 completed by those in the gaps of ``intervals`` (:func:`complete_atoms`, which raises
        when the continuous mass and the atoms do not make 1)."""
        at_zero = self.atoms(dps, (0,), method="dyson")
        return complete_atoms(at_zero, intervals, self._scan_range, dps, self.density_fast, self.cauchy_fast,
                              lambda z, d: self.cauchy(z, dps=d), self.name, lambda x: self.density(x, dps=15),
                              self.moments)

    def cdf_function(self, nodes=2000, atoms=None, grid=2001):
        """The distribution function as a :class:`~freeprob.solve.cdf.DistributionTable` (double precision).

        Built from :meth:`support_fast` (on ``grid`` points), the fast density
        and the atoms (default :meth:`atoms`; pass ``[(x, mass), ...]`` when
        they are known exactly). Raises :class:`ConvergenceError` if the total
        mass is not one, so a missed piece of support or a wrong atom never
        goes unnoticed.
        """
        nodes = _count(nodes, "nodes", 16, MAX_GRID)
        grid = _count(grid, "grid", 16, MAX_GRID)
        if self._units:
            return self._units.cdf_function(nodes, atoms, grid)
        if atoms is None:
            try:
                atoms = self.atoms()
            except ConvergenceError:
                atoms = []
        atoms = tuple((float(x), float(m)) for x, m in atoms)

        def table(intervals):
            # an end exactly at 0 is a hard edge (support_fast shrinks soft ones to the grid)
            hard = [0.0] if any(0.0 in iv for iv in intervals) else []
            return tabulate(self.density_fast, intervals, list(atoms), nodes=nodes, hard=hard)

        def build():
            try:
                return table(self.support_fast(grid))
            except ConvergenceError as first:
                # a piece the density probe missed (or a point it could not verify inside it): the verified
                # support's intervals, and the same mass check
                try:
                    verified = [(float(a), float(b)) for a, b in self.support()]
                except ConvergenceError:
                    raise first from None
                return table(verified)

        return self._cache.get(("cdf", nodes, atoms, grid), build)

    def quantile(self, p):
        """The ``p``-quantile of the law (double precision), ``0 <= p <= 1``."""
        q = read_number(p, what="quantile level p")
        if not 0 <= q <= 1:
            raise DomainError(f"quantile level p must be between 0 and 1, got {p!r}")
        return self.cdf_function().quantile(float(q))

    def __repr__(self):
        r = ", ".join(f"{k}={v}" for k, v in self.ratios.items())
        return f"SpectralLaw({self.name!r}, law={self.law!r}, ratios={{{r}}})"


def _closed_form_data(law):
    """The plain data (and the two callables into the solvers) that :mod:`freeprob.scalar.closedform` works from."""
    step = law._series_step
    numeric = law.numeric_system
    if not numeric.exact_series:  # an inverse: the closed forms start from the exact series
        raise EliminationError(f"{law.name}: the polynomial route does not take inverses yet; use the Dyson route")

    def moments(k):
        exact = system_domain(numeric) is not None
        return exact, law.moments(k) if exact else law.moments(k, dps=40)

    def series_moments_of(system, k):
        dom = system_domain(system, symbolic=True)
        if dom is None:
            return None
        coeffs, _ = series_coefficients(system, step * k + 1, domain=dom)
        return [coeffs[step * j + 1][0] for j in range(1, k + 1)]

    def reference(z, dps):
        return solve_point(law._numerics, lambda ctx: ctx.mpc(z), dps, where=z)

    return LawData(law.name, law._kind, law.system, numeric, MappingProxyType(law.values()), moments, series_moments_of,
                   reference, asked=law.law)


def law_of(model):
    """The :class:`SpectralLaw` of a :class:`~freeprob.Model` (a model file's description).

    Examples
    --------
    >>> import freeprob as fp
    >>> fp.law_of(fp.find_model("wigner-semicircle")).moments(4)
    [0, 1, 0, 2]
    """
    if model.expr is None:  # a named model (causal attention) has no expression to reduce
        raise DomainError(f"{model.name} is a {model.kind} model, which has no expression for the engine; its law "
                          f"is freeprob.causal_law_of(model)")
    return SpectralLaw(model.expr, model.law_kind, model.ratios, model.params, name=model.name)


def eigenvalue_law(expr, ratios, params=None, name=None, symmetry=True):
    """The limiting eigenvalue law of a symmetric expression.

    Examples
    --------
    >>> import freeprob as fp
    >>> p, n = fp.dims("p n")
    >>> X = fp.gaussian("X", (p, n))
    >>> law = fp.eigenvalue_law(X @ X.T / n, ratios={p: 0.5, n: 1})
    >>> fp.fmt(law.density(1.0, dps=30), 20)   # sqrt((b - 1)(1 - a))/pi, a, b = (1 -+ sqrt(1/2))^2
    '0.42108439934779238984'
    >>> law.moments(3)
    [1, 3/2, 11/4]
    """
    return SpectralLaw(expr, "eigenvalues", ratios, params, name, symmetry=symmetry)


def singular_value_law(expr, ratios, params=None, name=None, symmetry=True):
    """The limiting law of the squared singular values of any expression.

    For ``P`` of shape ``(a, b)``: the eigenvalue law of ``P P^T`` over its
    ``a`` rows (with an atom at 0 when ``P`` has rank below ``a``).
    """
    return SpectralLaw(expr, "squared-singular-values", ratios, params, name, symmetry=symmetry)
