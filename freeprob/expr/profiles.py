"""Atomic spectra of deterministic matrices and variance profiles of Gaussians.

Both describe a matrix that is constant on the cells of a partition of its
dimensions (docs/blocks.md): a deterministic matrix with spectrum
``{a_1: w_1, ..., a_m: w_m}`` is the diagonal matrix with ``a_1`` on the first
fraction ``w_1`` of its coordinates, ``a_2`` on the next ``w_2``, and so on (the
order given); a Gaussian with a variance profile ``s(r, c)`` that is piecewise
constant on a grid has independent blocks of constant variance. This module
reads and checks them (exactly, never evaluating a user string); the reduction
(:mod:`freeprob.reduce.blocks`) splits the dimensions along the cells.

>>> read_spectrum({1: "1/2", 4: "1/2"}, "D")
((1, 1/2), (4, 1/2))
>>> profile_grid(read_profile("1 + 2*Heaviside(c - 1/3)", "T"))
((0, 1), (0, 1/3, 1), ((1, 3),))
"""

from dataclasses import dataclass

import numpy as np
import sympy

from .._errors import DomainError
from .._numbers import parse_scalar, read_number

__all__ = ["R", "C", "ProfileTable", "cell_edges", "is_piecewise_constant", "profile_grid", "read_profile",
           "read_spectrum", "scale_profile", "uniform_table"]

#: The profile's variables: ``r = i/rows`` and ``c = j/cols``.
R = sympy.Symbol("r", real=True)
C = sympy.Symbol("c", real=True)

#: At most this many atoms (each is one part of the dimension, hence rows of the Dyson system).
MAX_ATOMS = 64


@dataclass(frozen=True)
class ProfileTable:
    """A variance profile given by its cells: ``table[k][l]`` on ``[r_edges[k], r_edges[k+1]) x [c_edges[l], c_edges[l+1])``."""

    r_edges: tuple
    c_edges: tuple
    table: tuple

    def __str__(self):
        return f"table({len(self.r_edges) - 1}x{len(self.c_edges) - 1} cells)"

    def at(self, r, c):
        """Values at arrays of points (numpy), cell by cell."""
        rk = np.clip(np.searchsorted([float(e) for e in self.r_edges], r, side="right") - 1, 0, len(self.table) - 1)
        cl = np.clip(np.searchsorted([float(e) for e in self.c_edges], c, side="right") - 1, 0,
                     len(self.table[0]) - 1)
        values = np.array([[float(v) for v in row] for row in self.table])
        return values[rk, cl]


def scale_profile(profile, factor):
    """``factor * profile`` (a formula or a :class:`ProfileTable`), exact."""
    if isinstance(profile, ProfileTable):
        return ProfileTable(profile.r_edges, profile.c_edges,
                            tuple(tuple(factor * v for v in row) for row in profile.table))
    return sympy.nsimplify(profile * factor)


def uniform_table(profile, cells, what="profile"):
    """The profile sampled at the midpoints of a uniform grid of ``cells x cells`` cells (exact values).

    ``Heaviside(0)`` is ``1/2``, so a jump along a diagonal of the grid (``Heaviside(c - r)``) gets its
    cell average on the diagonal cells. The discretization error is that of the midpoint rule: second
    order in ``1/cells`` where the profile is smooth.
    """
    if isinstance(cells, bool) or not isinstance(cells, int) or cells < 1:
        raise DomainError(f"{what}: the number of cells must be a positive integer, got {cells!r}")
    edges = tuple(sympy.Rational(k, cells) for k in range(cells + 1))
    table = []
    for k in range(cells):
        row = []
        for l in range(cells):
            v = sympy.nsimplify(profile.subs({R: sympy.Rational(2 * k + 1, 2 * cells),
                                              C: sympy.Rational(2 * l + 1, 2 * cells)}))
            if not v.is_number or v.is_extended_real is not True or v.is_negative:
                raise DomainError(f"{what}: the profile {profile} is {v} at a cell midpoint; it must be a "
                                  f"non-negative real number")
            row.append(v)
        table.append(tuple(row))
    return ProfileTable(edges, edges, tuple(table))


def read_spectrum(spectrum, what):
    """``((value, weight), ...)``: exact, distinct values and positive weights summing to 1.

    ``spectrum`` is a mapping value -> weight (or a sequence of pairs); keys
    and weights are read by :func:`freeprob._numbers.read_number`.
    """
    if isinstance(spectrum, dict):
        pairs = list(spectrum.items())
    elif isinstance(spectrum, (list, tuple)) and all(isinstance(x, (list, tuple)) and len(x) == 2 for x in spectrum):
        pairs = list(spectrum)
    else:
        raise DomainError(f"{what}: the spectrum must map each value to its weight, e.g. {{1: \"1/2\", 4: \"1/2\"}}, "
                          f"got {spectrum!r}")
    if not pairs:
        raise DomainError(f"{what}: the spectrum is empty; give at least one value with weight 1")
    if len(pairs) > MAX_ATOMS:
        raise DomainError(f"{what}: the spectrum has {len(pairs)} atoms, more than {MAX_ATOMS}")
    out, seen = [], {}
    for key, weight in pairs:
        a = read_number(key, what=f"{what}: spectrum value {key!r}")
        w = read_number(weight, what=f"{what}: weight of the spectrum value {key!r}", positive=True)
        if a in seen:
            raise DomainError(f"{what}: the spectrum values {seen[a]!r} and {key!r} are the same number {a}; "
                              f"give each value once, with the sum of its weights")
        seen[a] = key
        out.append((a, w))
    total = sympy.Add(*[w for _, w in out])
    if sympy.simplify(total - 1) != 0:
        raise DomainError(f"{what}: the spectrum weights sum to {total}, not 1; they are the fractions of the "
                          f"dimension carrying each value")
    return tuple(out)


def read_profile(profile, what):
    """A variance profile as an exact sympy expression in :data:`R` and :data:`C`.

    A string is read by the whitelisted grammar with the names ``r`` and
    ``c`` (``Heaviside`` is among its functions); a sympy expression may use
    symbols named ``r`` and ``c``.
    """
    if isinstance(profile, ProfileTable):
        return profile
    if isinstance(profile, str):
        expr = parse_scalar(profile, {"r": R, "c": C}, what=f"{what}: profile")
    elif isinstance(profile, sympy.Basic) and not isinstance(profile, sympy.MatrixBase):
        names = {s.name: s for s in profile.free_symbols if isinstance(s, sympy.Symbol)}
        bad = sorted(set(names) - {"r", "c"})
        if bad or len(names) != len(profile.free_symbols):
            raise DomainError(f"{what}: a profile is a formula in r and c only, got {profile} (with {bad})")
        expr = profile.subs({s: (R if n == "r" else C) for n, s in names.items()}, simultaneous=True)
    elif isinstance(profile, (int, float)) and not isinstance(profile, bool):
        expr = read_number(profile, what=f"{what}: profile")
    else:
        raise DomainError(f"{what}: a profile is a formula in r and c such as \"Heaviside(c - 1/2)\", "
                          f"got {profile!r}")
    expr = sympy.sympify(expr)
    if expr.free_symbols - {R, C}:
        raise DomainError(f"{what}: a profile is a formula in r and c only, got {expr}")
    return expr


def _breakpoint(arg, what, profile):
    """``(variable, point)`` of a ``Heaviside`` argument ``alpha (v - v0)``; None if it depends on neither."""
    arg = sympy.expand(arg)
    free = arg.free_symbols
    if not free:
        return None
    if len(free) == 2:
        raise DomainError(f"{what}: the profile {profile} is not piecewise constant on a grid: "
                          f"Heaviside({arg}) depends on both r and c (a continuous profile needs a discretization: "
                          f"freeprob.reduce.blocks.discretize, docs/blocks.md)")
    v = next(iter(free))
    poly = sympy.Poly(arg, v)
    if poly.degree() != 1:
        raise DomainError(f"{what}: the profile {profile} is not piecewise constant on a grid: Heaviside({arg}) "
                          f"has no single breakpoint in {v}")
    a, b = poly.all_coeffs()
    point = sympy.nsimplify(-b / a)
    if not point.is_Rational:
        raise DomainError(f"{what}: the breakpoint {point} of Heaviside({arg}) in the profile {profile} is not a "
                          f"rational number")
    return v, point


def _cuts(profile, what):
    """The breakpoints ``{R: {...}, C: {...}}`` of a piecewise-constant profile (DomainError otherwise)."""
    cuts = {R: {sympy.Integer(0), sympy.Integer(1)}, C: {sympy.Integer(0), sympy.Integer(1)}}
    heavisides = list(profile.atoms(sympy.Heaviside))
    dummies = sympy.symbols(f"h0:{len(heavisides)}")
    for h in heavisides:
        found = _breakpoint(h.args[0], what, profile)
        if found is not None and 0 < found[1] < 1:
            cuts[found[0]].add(found[1])
    rest = profile.subs(dict(zip(heavisides, dummies)), simultaneous=True)
    if rest.free_symbols & {R, C}:
        raise DomainError(f"{what}: the profile {profile} is not piecewise constant (it depends on r or c outside "
                          f"Heaviside factors); a continuous profile needs a discretization (docs/blocks.md)")
    return cuts


def is_piecewise_constant(profile):
    """Whether ``profile`` is constant on a grid of cells (a table, or Heaviside breakpoints in r or c alone)."""
    if isinstance(profile, ProfileTable):
        return True
    try:
        _cuts(profile, "profile")
    except DomainError:
        return False
    return True


def profile_grid(profile, what="profile"):
    """``(r_edges, c_edges, table)`` of a profile constant on a grid of cells.

    The breakpoints are those of the ``Heaviside`` factors, each of the form
    ``Heaviside(alpha (r - r0))`` or ``Heaviside(alpha (c - c0))``; outside
    them the profile must not depend on ``r`` or ``c``. ``table[k][l]`` is
    the (exact, non-negative) value on the cell ``k`` of rows and ``l`` of
    columns. Raises :class:`~freeprob.DomainError` otherwise.
    """
    if isinstance(profile, ProfileTable):
        return profile.r_edges, profile.c_edges, profile.table
    cuts = _cuts(profile, what)
    r_edges, c_edges = tuple(sorted(cuts[R])), tuple(sorted(cuts[C]))
    table = []
    for k in range(len(r_edges) - 1):
        row = []
        for l in range(len(c_edges) - 1):
            mid = {R: (r_edges[k] + r_edges[k + 1]) / 2, C: (c_edges[l] + c_edges[l + 1]) / 2}
            v = sympy.nsimplify(sympy.simplify(profile.subs(mid)))
            if not v.is_number or v.is_extended_real is not True:
                raise DomainError(f"{what}: the profile {profile} is {v} at r = {mid[R]}, c = {mid[C]}; "
                                  f"it must be a real number")
            if v.is_negative:
                raise DomainError(f"{what}: the profile {profile} is {v} < 0 at r = {mid[R]}, c = {mid[C]}; "
                                  f"a variance profile is non-negative")
            row.append(v)
        table.append(tuple(row))
    if all(v == 0 for row in table for v in row):
        raise DomainError(f"{what}: the profile {profile} vanishes everywhere")
    return r_edges, c_edges, tuple(table)


def cell_edges(spectrum):
    """The cells ``(0, w_1, w_1 + w_2, ..., 1)`` of a spectrum's values, in the order given."""
    edges = [sympy.Integer(0)]
    for _, w in spectrum:
        edges.append(edges[-1] + w)
    return tuple(edges)
