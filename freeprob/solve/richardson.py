"""Richardson extrapolation in ``1/m`` of values computed on ``m`` cells, with its error estimate.

A quantity ``Q_m`` computed on ``m x m`` cells with an asymptotic expansion
``Q_m = Q + c_1 h^p1 + c_2 h^p2 + ...`` (``h = 1/m``) is extrapolated by the
Richardson table: column ``j`` removes the term ``h^pj``,

    T[i][j] = T[i][j-1] + (T[i][j-1] - T[i-1][j-1]) / (q^pj - 1),

for cell counts in a geometric sequence of ratio ``q`` (``8, 16, 32, ...``).

The estimate is the last diagonal entry; its error estimate is the larger of
its distances to the two extrapolations one order lower (the last entry of the
previous column, and the previous diagonal entry), never below
:data:`ROUND_OFF` relative (the values come from double-precision solves).
This is a *heuristic* bound: it is an estimate of the first neglected term,
valid when the expansion holds with the exponents given and the finest
values are in its asymptotic regime; a profile that breaks the expansion (a
singularity, a jump across cells) shows up as a large estimate, never as a
small one unless the sequence happens to stall.

>>> import numpy as np
>>> ms = (8, 16, 32, 64)
>>> est = richardson([1 + 1 / m ** 2 + 3 / m ** 4 for m in ms], ms, (2, 4, 6))
>>> float(est.value), bool(est.error < 1e-12)
(1.0, True)
"""

from dataclasses import dataclass

import numpy as np

from .._errors import DomainError

__all__ = ["Extrapolated", "ROUND_OFF", "richardson"]

#: Smallest relative error claimed (the round-off of the double-precision values, amplified by the table).
ROUND_OFF = 1e-13


@dataclass(frozen=True)
class Extrapolated:
    """An extrapolated value (a number or an array) with its error estimate.

    Attributes
    ----------
    value : float, complex or ndarray
    error : float or ndarray
        The estimate of ``|value - limit|`` (see the module docstring).
    cells : tuple of int
        The cell counts ``m`` of the values extrapolated.
    exponents : tuple of int
        The powers of ``1/m`` removed.
    """

    value: object
    error: object
    cells: tuple
    exponents: tuple

    def __iter__(self):  # value, error = estimate
        return iter((self.value, self.error))


def richardson(values, cells, exponents):
    """Extrapolate ``values[i]`` (computed on ``cells[i]`` cells, increasing) to ``1/m = 0``.

    Parameters
    ----------
    values : sequence of numbers or arrays (all of one shape)
    cells : sequence of int
        At least three, increasing geometrically (``m_(i+1) / m_i`` constant).
    exponents : sequence of positive numbers
        The powers ``p_1 < p_2 < ...`` of ``1/m`` in the expansion; the first
        ``len(cells) - 1`` are used.

    Returns
    -------
    Extrapolated
        NaN (value and error) where any input value is NaN.
    """
    cells = tuple(int(m) for m in cells)
    if len(cells) < 3 or cells[0] < 1 or any(b * cells[0] != a * cells[1] for a, b in zip(cells, cells[1:])) \
            or cells[1] <= cells[0]:
        raise DomainError(f"richardson: at least three increasing cell counts in a geometric sequence (such as "
                          f"8, 16, 32) are needed, got {cells}")
    if len(values) != len(cells):
        raise DomainError(f"richardson: {len(values)} values for {len(cells)} cell counts")
    exps = tuple(exponents)[:len(cells) - 1]
    if len(exps) < len(cells) - 1:
        raise DomainError(f"richardson: {len(cells) - 1} exponents are needed, got {exponents}")
    ratio = cells[1] / cells[0]
    column = [np.asarray(v) for v in values]
    previous = None
    for j, p in enumerate(exps):
        previous = column
        column = [previous[i + 1] + (previous[i + 1] - previous[i]) / (ratio ** p - 1) for i in range(len(previous) - 1)]
    best = column[-1]
    error = np.maximum(np.abs(best - previous[-1]), np.abs(best - previous[-2]))
    error = np.maximum(error, ROUND_OFF * np.maximum(1.0, np.abs(best)))
    if np.ndim(best) == 0:
        best, error = best[()], float(error)
    return Extrapolated(best, error, cells, exps)
