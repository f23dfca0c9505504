"""Deterministic matrices inside the argument of an entrywise function: the generic position.

A deterministic matrix ``D`` (``p x p``, symmetric, given by its limiting
spectrum; :func:`~freeprob.expr.tree.deterministic`) may sit between the
Gaussian factors of the argument of an entrywise function or a softmax, as
the input factor of attention on real inputs: ``D Q K^T D`` with ``D =
Sigma^{1/2}``, ``Sigma`` the token covariance (docs/attention.md, "Real
inputs"). Whether the entries of such an argument are asymptotically
Gaussian of one common variance depends on where ``D``'s eigenvectors lie:

* in **generic position** (``D = O diag(a) O^T`` with ``O`` Haar, or any
  basis delocalized with respect to the coordinates of the entrywise
  function), ``(D^2)_ii -> m1(D^2)`` for every ``i``, and ``D`` enters the
  entry variance as a Gaussian factor of variance ``m1(D^2)/p`` would: an
  entry ``(D G)_ij = sum_k D_ik G_kj`` has variance ``(D^2)_ii``, one
  ``(G D H)_ij`` has variance ``tr(D^2) = p m1(D^2)``. The entries are then
  isotropic and the Gaussian equivalent of the node keeps its one set of
  coefficients;
* aligned with the coordinates (``D`` diagonal in the basis of the rows the
  function acts on) the entries have a variance profile ``a_i^2 ...``, and
  the isotropic equivalent is wrong. freeprob's engine keeps deterministic
  matrices diagonal, which is harmless for every rotation-invariant part of a
  model; it is the *sampled* real nonlinear model that must put ``D`` in
  generic position (:mod:`freeprob.montecarlo.sample` rotates every
  deterministic matrix of a space that meets an entrywise argument by one
  Haar matrix).

Conditions checked here (an :class:`~freeprob.EquivalenceError` with
condition ``"independent-product"`` otherwise): each monomial of the argument
has at least one Gaussian leaf (``D`` alone, or ``D1 D2``, is not random),
and no two deterministic leaves are adjacent (``D1 @ D2`` is one
deterministic matrix: write its spectrum as one leaf).

Examples
--------
>>> import freeprob as fp
>>> p = fp.dims("p")
>>> generic_variance(fp.deterministic("D", (p, p), {1: "1/2", 3: "1/2"}))
5/p
"""

import sympy

from .._errors import EquivalenceError

__all__ = ["check_generic_word", "generic_variance", "second_moment"]


def second_moment(leaf):
    """``m1(D^2) = sum_k w_k a_k^2`` of a deterministic leaf's spectrum ``((a_k, w_k), ...)``.

    >>> import freeprob as fp
    >>> p = fp.dims("p")
    >>> second_moment(fp.deterministic("D", (p, p), {1: "1/2", 3: "1/2"}))
    5
    """
    return sympy.nsimplify(sum((a ** 2 * w for a, w in leaf.spectrum), sympy.Integer(0)))


def generic_variance(leaf):
    """The variance ``m1(D^2)/p`` a deterministic leaf counts with in an entry variance (generic position)."""
    return second_moment(leaf) / leaf.shape[0]


def check_generic_word(argument, word):
    """Refuse a monomial ``word`` of ``argument`` that the generic-position rule does not cover.

    ``word`` is a tuple of ``(leaf, transposed)`` letters
    (:func:`~freeprob.expr.tree.expand`). Raises
    :class:`~freeprob.EquivalenceError` (condition ``"independent-product"``)
    when it has no Gaussian leaf or two adjacent deterministic leaves.

    >>> import freeprob as fp
    >>> p, q = fp.dims("p q")
    >>> D, E = fp.deterministic("D", (p, p), {1: 1}), fp.deterministic("E", (p, p), {2: 1})
    >>> G = fp.gaussian("G", (p, q))
    >>> check_generic_word(D @ E @ G, ((D, False), (E, False), (G, False)))
    Traceback (most recent call last):
    ...
    freeprob._errors.EquivalenceError: an entrywise function of D @ E @ G: the deterministic matrices D and E are adjacent; write their product as one deterministic matrix (its spectrum the products of their values: they commute)
    """
    kinds = [leaf.kind for leaf, _ in word]
    if "gaussian" not in kinds:
        names = " @ ".join(leaf.name for leaf, _ in word) or "a constant"
        raise EquivalenceError(
            f"an entrywise function of {argument}: the term {names} has no Gaussian matrix, so its entries are not "
            f"random; an entrywise function needs a product with at least one independent Gaussian matrix (put "
            f"deterministic matrices next to Gaussian ones, as in D @ Q @ K.T @ D)", condition="independent-product")
    for (a, _), (b, _) in zip(word, word[1:]):
        if a.kind == b.kind == "deterministic":
            raise EquivalenceError(
                f"an entrywise function of {argument}: the deterministic matrices {a.name} and {b.name} are "
                f"adjacent; write their product as one deterministic matrix (its spectrum the products of their "
                f"values: they commute)", condition="independent-product")
