"""The distribution function of a law, tabulated for Monte-Carlo comparisons.

On each support interval ``[a, b]`` the substitution
``x = a + (b - a)(1 - cos t)/2`` turns square-root (and inverse square-root
hard-edge) endpoint behaviour into a smooth integrand in ``t``; the midpoint
rule in ``t`` with ``nodes`` points per interval then gives the cumulative
mass at the cell boundaries, interpolated linearly in between. Atoms are added
as jumps. The total mass must be one to ``mass_tol``, otherwise the support or
the atoms were not all found and a :class:`ConvergenceError` says so.
"""

import numpy as np

from .._errors import ConvergenceError

__all__ = ["DistributionTable", "tabulate"]


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


def tabulate(density, intervals, atoms, nodes=2000, mass_tol=1e-6):
    """Build a :class:`DistributionTable` from a vectorized density.

    Parameters
    ----------
    density : callable
        Vectorized double-precision density.
    intervals : list of (float, float)
    atoms : list of (float, float)
        Locations and masses.
    """
    pieces = []
    total = sum(m for _, m in atoms)
    err = 0.0
    for a, b in intervals:
        cums = []
        for m in (nodes // 2, nodes):
            t = (np.arange(m) + 0.5) * np.pi / m
            x = a + (b - a) * (1 - np.cos(t)) / 2
            w = (b - a) / 2 * np.sin(t) * (np.pi / m)
            d = density(x)
            if np.isnan(d).any():
                raise ConvergenceError(f"the density could not be verified at {np.sum(np.isnan(d))} points of [{a}, {b}]")
            cums.append(np.concatenate([[0.0], np.cumsum(d * w)]))
        tb = np.arange(nodes + 1) * np.pi / nodes
        xb = a + (b - a) * (1 - np.cos(tb)) / 2
        err += abs(cums[1][-1] - cums[0][-1])
        pieces.append((xb, cums[1]))
        total += cums[1][-1]
    if abs(total - 1) > mass_tol + err:
        raise ConvergenceError(
            f"the law's mass is {total:.9f}, not 1 (atoms {sum(m for _, m in atoms):.9f}, quadrature error "
            f"{err:.1e}): part of the support or an atom was not found"
        )
    return DistributionTable(list(intervals), list(atoms), pieces, total - sum(m for _, m in atoms), err)
