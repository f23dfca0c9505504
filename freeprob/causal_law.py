"""The law of causal attention's Gaussian equivalent without its first tokens, extrapolated in the number of cells.

Under the causal mask the Gaussian equivalent of one centred head is
``Y = G V W`` with ``G_rc = (1/r) 1[c <= r] (beta S_rc + c_Z Z_rc)/sqrt(l)``
(docs/causal.md, sections 3 and 6). Its rows of small ``r`` make every
moment infinite; without the first ``skip * l`` rows (``r > skip``) the law
exists, has finite moments, and is what real causal softmax approaches
(section 4). :class:`CausalLaw` is that law: the squared singular values of
``Y`` over its ``(1 - skip) l`` rows, for ``l -> infinity`` with the ratios
``d_h/l``, ``d_v/l``, ``d_out/l`` fixed.

It is the limit of the cell equations of
:mod:`freeprob.solve.causal_dyson` (the token axis cut into ``m`` equal
cells: the mask, ``1/r^2`` and the masked score product constant on cells),
solved in double precision with a verified residual for
``m = m0, 2 m0, 4 m0, 8 m0`` (``m0`` the smallest multiple of the
denominator of ``skip`` that is at least 8, so that ``skip`` falls on a cell
boundary) and extrapolated to ``1/m = 0`` in the powers ``1, 2, 3`` of
``1/m`` (the diagonal cells of the masked product give a first-order term:
measured, the differences halve with each doubling of ``m``). Values carry
the extrapolation's error estimate (:class:`~freeprob.solve.richardson.Extrapolated`);
one above the tolerance (default ``1e-4`` relative to ``max(value_unit, |value|)``,
``value_unit = min(1, 10/mean)``)
is a :class:`~freeprob.ConvergenceError`, never a value. The top support
edge converges slowly (it is set by the first rows kept); it is reported
with its estimate, and the distribution table counts it in its mass bound
(docs/causal.md, section 6).

Exact: the mean ``(d_out/l)(exp(beta^2) - 1) log(1/skip)/(1 - skip)`` and the
atom at 0, ``1 - min(1 - skip, H d_v/l, d_out/l)/(1 - skip)`` (the generic rank of
``G V W``). ``H`` independent heads (``heads``, the ``mha`` pattern) are summed
as in the non-causal contract, ``W_h`` of variance ``1/(H d_v)``: the mean does
not depend on ``H``.

>>> law = CausalLaw(1, "1/10")
>>> law.mean()
5*(-1 + E)*log(10)/9
>>> g = law.cauchy(1 + 0.5j)
>>> round(g.value.real, 5), bool(g.error < 1e-4)
(0.51654, True)
"""

import math
from types import MappingProxyType

import numpy as np
import sympy

from ._errors import DomainError
from ._numbers import magnitude, read_number
from .discretized_law import DiscretizedLaw
from .expr.causal_model import DEFAULT_SKIP, MAX_HEADS, CausalModel
from .law import _Cache  # the law's value cache (same rank)
from .solve.causal_dyson import causal_cells, refine_start, solve_causal, upper_edge_bracket

__all__ = ["CAUSAL_TOL", "CausalLaw", "DEFAULT_SKIP", "causal_law_of", "cells_for_skip"]

#: Default tolerance of a value, relative to ``max(value_unit, |value|)`` (the estimates on 10..80 cells are 1e-6 to 3e-5,
#: and about ten times the distance to the extrapolation on 40..320 cells).
CAUSAL_TOL = 1e-4
#: Fewest cells of the coarsest discretization.
MIN_CELLS = 8
#: Most cells of the finest discretization (the cost of a point grows like its cube: 1/32 took 166 s for the
#: command's summary, 1/10 takes 11 s).
MAX_CELLS = 160
#: Largest |beta|: the law's scale grows like exp(beta^2) (2e8 at beta = 4), and real causal softmax reaches it
#: only when skip * l >> exp(2 beta^2) tokens (8.9e6 at beta = 4).
MAX_BETA = 4
#: Smallest |beta| (the law shrinks like beta^2 toward the point mass at 0).
MIN_BETA = sympy.Rational(1, 100)
#: The widths' ratios to l lie in [1/MAX_RATIO, MAX_RATIO].
MAX_RATIO = 1000


def _within(x, lo, hi):
    """``lo <= |x| <= hi`` for an exact number: by its float where that decides, exactly next to a bound."""
    size = magnitude(x)
    if not math.isfinite(size):
        return False
    if lo * (1 + 1e-9) < size < hi * (1 - 1e-9):
        return True
    if size < lo * (1 - 1e-9) or size > hi * (1 + 1e-9):
        return False
    return bool(lo <= abs(x)) and bool(abs(x) <= hi)


def cells_for_skip(skip):
    """The cell counts ``m0, 2 m0, 4 m0, 8 m0`` for ``skip`` (``m0``: the smallest multiple of its denominator >= 8).

    >>> cells_for_skip(sympy.Rational(1, 10)), cells_for_skip(sympy.Rational(1, 3))
    ((10, 20, 40, 80), (9, 18, 36, 72))
    >>> cells_for_skip(sympy.Rational(1, 32))
    Traceback (most recent call last):
      ...
    freeprob._errors.DomainError: skip = 1/32: its denominator 32 needs 256 cells ...
    """
    q = int(sympy.Rational(skip).q)
    m0 = q * math.ceil(MIN_CELLS / q)
    if 8 * m0 > MAX_CELLS:
        if q < 10 ** 6:
            raise DomainError(f"skip = {skip}: its denominator {q} needs {8 * m0} cells for the finest "
                              f"discretization (at most {MAX_CELLS}); give a fraction with a denominator of at most "
                              f"{MAX_CELLS // 8}, such as 1/10")
        raise DomainError(f"skip = {float(skip):.3g}: its denominator has {len(str(q))} digits, and the cells must "
                          f"fall on it (at most {MAX_CELLS} cells); give a fraction with a denominator of at most "
                          f"{MAX_CELLS // 8}, such as 1/10")
    return (m0, 2 * m0, 4 * m0, 8 * m0)


class CausalLaw(DiscretizedLaw):
    """The law of the squared singular values of causal attention's Gaussian equivalent, first tokens left out.

    Parameters
    ----------
    beta : number
        The inverse temperature (nonzero; the law depends on ``beta^2``).
    skip : rational number in (0, 1)
        The fraction of first tokens (rows) left out; default 1/10.
    d_h, d_v, d_out : positive numbers
        The head, value and output widths as ratios to the length ``l``
        (default 1/2 each).
    heads : int, optional
        Independent heads summed, ``Y = sum_h G_h V_h W_h`` with ``W_h`` of
        variance ``1/(heads d_v)`` (the ``mha`` pattern; default 1).
    name : str, optional

    Notes
    -----
    ``skip = 0`` (every row) is refused: its law has no finite moment
    (docs/causal.md, section 3), and the rows of small ``r`` make the cell
    equations diverge.
    """

    _tol = CAUSAL_TOL
    _fast_tol = 1e-4
    # the top edge, set by the first rows kept (r near skip, where 1/r^2 is largest), converges slowly in m
    # (edges 43.31, 45.02, 45.55, 45.66 on 10..80 cells for beta = 1, skip = 1/10: estimate 0.19) under a
    # density of about 1e-4: the table takes the edges to 1e-2 relative and counts edge error times density
    # in its mass bound; the density's estimates near that edge dominate the bound (5.4e-4 of mass at
    # beta = 1, skip = 1/10), so the table is verified to 1e-3 of mass
    _edge_tol = 1e-2
    _support_tol = 1e-2  # the support's default tolerance, for the same reason
    _mass_tol = 1e-3
    _cdf_hint = ("the density's error estimates near the slowly converging top edge dominate the bound "
                 "(docs/causal.md, section 6); the Cauchy transform off the axis and the density in the bulk "
                 "are unaffected")
    _edge_resolution = 1e-7

    @property
    def _g_unit(self):
        # the scale grows like exp(beta^2) (and shrinks like beta^2): the support scan's thresholds relative to
        # |G| ~ 1/scale, not to 1 (an absolute floor snapped the edges to the scan grid at beta = 4, and found no
        # support at beta = 5)
        return 1e-3 / self.scale

    @property
    def value_unit(self):
        # G is about 1/x on the law's scale: the tolerance of a value is relative to max(10/mean, |G|) (G at a
        # tenth of the mean) when that is below 1, not to max(1, |G|), which at beta = 4 (mean 1.1e7, G about
        # 1e-7) would verify nothing; a law of mean at most 10 (beta below about 1.47 at the default widths and
        # skip) keeps max(1, |G|)
        return self._memoized("value_unit", lambda: min(1.0, 10.0 / float(self.mean())))

    def __init__(self, beta=1, skip=DEFAULT_SKIP, d_h="1/2", d_v="1/2", d_out="1/2", *, heads=1, name=None):
        b = read_number(beta, what="beta")
        size = magnitude(b)
        if b.is_zero:
            raise DomainError("beta must be nonzero: at beta = 0 softmax is uniform and the centred output is 0")
        if math.isfinite(size) and not _within(b, MIN_BETA, math.inf):
            raise DomainError(f"|beta| must be at least {MIN_BETA}, got {beta!r}: the law shrinks like beta^2 to the "
                              f"point mass at 0 (at beta = 0 softmax is uniform and the centred output is 0)")
        if not _within(b, MIN_BETA, MAX_BETA):
            tokens = f"{math.exp(2 * size ** 2):.3g}" if size < 18 else "more than 1e280"
            raise DomainError(f"|beta| must be at most {MAX_BETA}, got {beta!r}: the law's scale grows like "
                              f"exp(beta^2), and real causal softmax approaches it only when more than "
                              f"exp(2 beta^2) = {tokens} tokens precede the first row kept")
        s = read_number(skip, what="skip")
        if not (s.is_Rational and 0 < s < 1):
            raise DomainError(f"skip must be a rational number strictly between 0 and 1 (the fraction of first "
                              f"tokens left out, such as 1/10), got {skip!r}; the law of every row (skip = 0) has no "
                              f"finite moment (docs/causal.md, section 3)")
        ratios = {name: read_number(value, what=f"ratio {name}", positive=True)
                  for name, value in (("d_h", d_h), ("d_v", d_v), ("d_out", d_out))}
        for width, value in ratios.items():
            if not _within(value, sympy.Rational(1, MAX_RATIO), MAX_RATIO):
                shown = value if len(str(value)) <= 30 else sympy.N(value, 40)
                raise DomainError(f"ratio {width} = {shown} must lie between 1/{MAX_RATIO} and {MAX_RATIO} (a width "
                                  f"as a ratio to the length l)")
        if isinstance(heads, bool) or not isinstance(heads, int) or not 1 <= heads <= MAX_HEADS:
            shown = heads if not isinstance(heads, int) or abs(heads) < 10 ** 30 else "a larger integer"
            raise DomainError(f"heads must be an integer between 1 and {MAX_HEADS}, got {shown!r}")
        cells = cells_for_skip(s)
        init = object.__setattr__
        init(self, "beta", b)
        init(self, "skip", s)
        init(self, "ratios", MappingProxyType(ratios))
        init(self, "heads", heads)
        init(self, "cells", cells)
        init(self, "exponents", (1, 2, 3))
        init(self, "name", name or f"causal attention (beta = {b}, skip = {s}{f', {heads} heads' if heads > 1 else ''})")
        init(self, "_equations", tuple(causal_cells(m, float(s), float(b), float(ratios["d_h"]),
                                                    float(ratios["d_v"]), float(ratios["d_out"]), heads)
                                       for m in cells))
        init(self, "_memo", _Cache())

    def __repr__(self):
        r = self.ratios
        heads = f", heads={self.heads}" if self.heads > 1 else ""
        return (f"CausalLaw(beta={self.beta}, skip={self.skip}, d_h={r['d_h']}, d_v={r['d_v']}, "
                f"d_out={r['d_out']}{heads})")

    # -- exact values ---------------------------------------------------------------------------------
    def mean(self):
        """The mean of the law, exactly: ``(d_out/l)(exp(beta^2) - 1) log(1/skip)/(1 - skip)``."""
        s = self.skip
        return sympy.factor_terms(self.ratios["d_out"] * (sympy.exp(self.beta ** 2) - 1) * sympy.log(1 / s) / (1 - s))

    def atoms(self):
        """``[(0.0, mass)]`` with the exact :meth:`atom_mass`, or ``[]`` when it is 0."""
        mass = self.atom_mass()
        return [] if mass == 0 else [(0.0, float(mass))]

    def atom_mass(self):
        """The mass at 0, exactly: ``1 - min(1 - skip, heads d_v/l, d_out/l)/(1 - skip)``, the generic rank of
        ``sum_h G_h V_h W_h`` over its rows."""
        rows = 1 - self.skip
        return 1 - sympy.Min(rows, self.heads * self.ratios["d_v"], self.ratios["d_out"]) / rows

    # -- the discretized equations ---------------------------------------------------------------------
    @property
    def scale(self):
        """A point beyond the support of every discretized law (the top of the real branch from infinity)."""
        def build():
            start = 100.0 * (1.0 + float(self.mean()))
            top = 0.0
            for S in self._equations:
                while True:
                    try:
                        _, above = upper_edge_bracket(S, start)
                        break
                    except DomainError:
                        start *= 4.0
                        if start > 1e12:
                            raise
                top = max(top, above)
                start = 1.25 * above
            return top * 1.01
        return self._memoized("scale", build)

    def _solve_level(self, i, z, start):
        sol = solve_causal(self._equations[i], z, start=start, top=self.scale)
        return sol.G, sol.u

    def _refine(self, i, unknowns):
        return refine_start(self._equations[i - 1], self._equations[i], unknowns)

    def _resolvent(self, i, unknowns):
        return unknowns[:, :len(self._equations[i].rows)]

    def level_means(self):
        """The mean of each discretized law (floats): the midpoint rule of ``int_skip^1 dr/r``, times the constants."""
        out = []
        for S in self._equations:
            mid = (S.rows + 0.5) / S.m
            out.append(S.gamma_o * math.expm1(S.beta2) * float(np.sum(1.0 / mid) / S.m) / (1.0 - S.skip))
        return out


def causal_law_of(model):
    """The :class:`CausalLaw` of a causal-attention model file (``model = "causal-attention"``).

    The widths are the file's ratios to ``l``; a value out of the law's range
    (from the file or from ``with_values``) is a :class:`~freeprob.DomainError`
    that names the model.

    >>> import freeprob as fp
    >>> law = fp.causal_law_of(fp.find_model("attention-causal"))
    >>> law.mean(), law.atom_mass()
    (5*(-1 + E)*log(10)/9, 4/9)
    """
    if not isinstance(model, CausalModel):
        raise DomainError(f"causal_law_of takes a causal-attention model (a model file with "
                          f"model = \"causal-attention\"), got {model!r}; the law of an expression model is "
                          f"freeprob.law_of(model)")
    r = {str(k): v for k, v in model.ratios.items()}
    p = {str(k): v for k, v in model.params.items()}
    l = r["l"]
    try:
        return CausalLaw(p["beta"], p["skip"], r["d_h"] / l, r["d_v"] / l, r["d_out"] / l, heads=model.heads,
                         name=model.name)
    except DomainError as exc:
        where = (model.source or f"model {model.name}") + ("" if l == 1 else
                                                            f" (widths d_h/l, d_v/l, d_out/l with l = {l})")
        raise DomainError(f"{where}: {exc}") from None
