"""When an inverse has a limit: bounds of the limiting spectrum of its argument.

The law of an expression containing ``inv(M)`` is computed only when the
limiting spectrum of ``M`` provably stays away from 0; then ``M^{-1}`` is a
bounded operator and the bordered pencil (:mod:`freeprob.reduce.pencil`) is
invertible at every point the solvers visit. The proof is a bound read off
the expression tree in the normalized limit (every Gaussian of entry
variance ``1/N``, dimensions as ratios; :mod:`freeprob.reduce.scaling`):

* norms: ``s (sqrt(rho_a) + sqrt(rho_b))`` for a Gaussian ``a x b`` of
  normalized scale ``s``, ``2 s sqrt(rho_a)`` for a Wigner matrix, 1 for the
  identity; sums add, products multiply, ``||M^{-1}|| <= 1/gap(M)``;
* spectral intervals ``[lo, hi]`` of symmetric pieces: the identity
  ``[1, 1]``; a Wigner matrix ``[-r, r]``; ``c A`` scales; sums add; a
  product ``P C P^T`` (``C`` symmetric or absent) lies in
  ``[min(0, lo_C) ||P||^2, max(0, hi_C) ||P||^2]`` (so ``X X^T`` is positive),
  and ``P P^T`` for one Gaussian ``P`` (``r x c``, or its transpose) above the
  Marchenko-Pastur edge ``s^2 (sqrt(rho_c) - sqrt(rho_r))^2``, positive when
  ``P`` is wide (``X^T X`` for a tall ``X``: least squares);
  ``M^{-1}`` lies in ``[1/hi, 1/lo]``; any other piece in ``[-norm, norm]``.

``gap(M) = max(lo, -hi)``: the spectrum of ``M`` avoids ``(-gap, gap)``.
The bounds are sympy expressions in the ratios and parameters; they are
checked when values are given (:meth:`~freeprob.reduce.dyson.DysonSystem.subs`).
A refusal only means that these bounds cannot prove invertibility; it never
lets a law through that they do not cover.
"""

import sympy

from .._errors import DomainError
from .blocks import profile_max
from ..expr.tree import Inverse, Matrix, Product, Scaled, Sum, Transpose, expand, transpose_word
from .scaling import normalize

__all__ = ["check_gap", "has_inverse", "inverse_conditions", "inverse_gap", "inverse_norm_bound", "spectral_interval", "norm_bound"]


def _symmetric(node):
    if node.shape[0] != node.shape[1]:
        return False
    try:
        monos = expand(node)
    except ValueError:
        return False
    return all(sympy.simplify(c - monos.get(transpose_word(w), 0)) == 0 for w, c in monos.items())


def norm_bound(node, norm):
    """An upper bound (sympy) of the operator norm of the normalized limit of ``node``."""
    if isinstance(node, Matrix):
        a, b = node.shape
        if node.kind == "identity":
            return sympy.Integer(1)
        if node.kind == "deterministic":
            return sympy.Max(*[sympy.Abs(a) for a, _ in node.spectrum])
        s = norm.leaf_scale[node]
        if node.profile is not None:  # the largest variance of the profile bounds the norm
            s = s * sympy.sqrt(profile_max(node))
        if node.kind == "wigner":
            return 2 * s * sympy.sqrt(a)
        return s * (sympy.sqrt(a) + sympy.sqrt(b))
    if isinstance(node, Scaled):
        return sympy.Abs(norm.coeff[node]) * norm_bound(node.arg, norm)
    if isinstance(node, Transpose):
        return norm_bound(node.arg, norm)
    if isinstance(node, Product):
        return sympy.Mul(*[norm_bound(f, norm) for f in node.factors])
    if isinstance(node, Sum):
        return sympy.Add(*[norm_bound(t, norm) for t in node.terms])
    if isinstance(node, Inverse):
        return 1 / inverse_gap(node, norm)
    raise TypeError(f"not a matrix expression: {node!r}")


def spectral_interval(node, norm):
    """``(lo, hi)`` (sympy) containing the limiting spectrum of the symmetric ``node``."""
    if isinstance(node, Matrix):
        if node.kind == "identity":
            return sympy.Integer(1), sympy.Integer(1)
        if node.kind == "deterministic":
            values = [a for a, _ in node.spectrum]
            return sympy.Min(*values), sympy.Max(*values)
        r = norm_bound(node, norm)
        return -r, r
    if isinstance(node, Scaled):
        c = norm.coeff[node]
        lo, hi = spectral_interval(node.arg, norm) if _symmetric(node.arg) else _ball(node.arg, norm)
        return sympy.Min(c * lo, c * hi), sympy.Max(c * lo, c * hi)
    if isinstance(node, Transpose):
        return spectral_interval(node.arg, norm)
    if isinstance(node, Inverse):
        lo, hi = spectral_interval(node.arg, norm)
        return 1 / hi, 1 / lo
    if isinstance(node, Sum):
        los, his = [], []
        for t in node.terms:
            lo, hi = spectral_interval(t, norm) if _symmetric(t) else _ball(t, norm)
            los.append(lo)
            his.append(hi)
        return sympy.Add(*los), sympy.Add(*his)
    if isinstance(node, Product):
        fs = node.factors
        k = len(fs)
        if all(fs[i] == Transpose.of(fs[k - 1 - i]) for i in range(k // 2)):
            outer = Product(fs[:k // 2]) if k // 2 > 1 else fs[0]
            p2 = norm_bound(outer, norm) ** 2
            if k % 2 == 0:
                return _gram_floor(outer, norm), p2
            mid = fs[k // 2]
            if _symmetric(mid):
                lo, hi = spectral_interval(mid, norm)
                return sympy.Min(0, lo) * p2, sympy.Max(0, hi) * p2
        return _ball(node, norm)
    raise TypeError(f"not a matrix expression: {node!r}")


def _gram_floor(p, norm):
    """A lower bound of the spectrum of ``P P^T``: the Marchenko-Pastur lower edge
    ``s^2 (sqrt(rho_c) - sqrt(rho_r))^2`` when ``P`` (``r x c``) is one iid Gaussian leaf or
    its transpose with ``c > r`` (a wide Gaussian's rows are almost orthogonal), else 0."""
    leaf = p.arg if isinstance(p, Transpose) else p
    if not (isinstance(leaf, Matrix) and leaf.kind == "gaussian" and getattr(leaf, "profile", None) is None):
        return sympy.Integer(0)
    r, c = p.shape
    return norm.leaf_scale[leaf] ** 2 * sympy.Max(0, sympy.sqrt(c) - sympy.sqrt(r)) ** 2


def _ball(node, norm):
    r = norm_bound(node, norm)
    return -r, r


def inverse_gap(node, norm):
    """``gap(M) = max(lo, -hi)`` for ``node = inv(M)``: positive exactly when the bounds prove ``M`` invertible."""
    lo, hi = spectral_interval(node.arg, norm)
    if node.floor is not None:  # a floor proved where the node was built (Inverse.floor)
        lo = sympy.Max(lo, node.floor)
    return sympy.Max(lo, -hi)


def inverse_conditions(expr, norm):
    """``((text, gap), ...)``: one per distinct inverse in ``expr``; each ``gap`` must be positive."""
    out, seen, stack = [], set(), [expr]
    while stack:
        node = stack.pop()
        stack.extend(node.children())
        if isinstance(node, Inverse) and node not in seen:
            seen.add(node)
            out.append((str(node), inverse_gap(node, norm)))  # checked at values; simplify cost most of a law
    return tuple(out)


def has_inverse(expr):
    """Whether ``expr`` contains an inverse."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Inverse):
            return True
        stack.extend(node.children())
    return False


def check_gap(what, gap):
    """Raise :class:`~freeprob.DomainError` when the number ``gap`` (of the inverse ``what``) is not positive."""
    gap = sympy.sympify(gap)
    if gap.is_number and not gap > 0:
        raise DomainError(
            f"{what}: the limiting spectrum of the argument is not proved to stay away from 0 (the bound of its "
            f"distance to 0 is {sympy.sstr(gap)} at these values), so the inverse may not have a limit and no law is "
            f"returned; move the spectrum away from 0 (as in inv(M + lam * I) with lam > 0 for a positive M)")


def inverse_norm_bound(node, values, dimensions):
    """A float bound of ``||inv(M)||`` in the limit at ``values`` (ratios and parameters).

    Raises :class:`~freeprob.DomainError` when the gap is not proved positive, and when values are missing.
    """
    gap = inverse_gap(node, normalize(node.arg, dimensions)).subs(values)
    check_gap(str(node), gap)
    if not gap.is_number:
        raise DomainError(f"{node}: give values for {', '.join(sorted(map(str, gap.free_symbols)))}")
    return float(1 / gap) * (1 + 1e-6)
