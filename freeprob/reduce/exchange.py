"""Exchangeable terms of a sum: detection and the witness expression.

An expression ``c * (T_1 + ... + T_H)`` whose terms are copies of one term
up to a renaming of their leaves has a permutation symmetry: exchanging two
terms (and their leaves) leaves the law unchanged. freeprob recognises the
family the attention patterns need, the wreath product ``S_n wr S_g``: the
``H = g n`` terms fall into ``g`` groups of ``n``; every leaf of a term is

* **private** (used by this term only),
* **group-shared** (used by exactly the terms of its group), or
* **global** (used by every term; identities always count as global),

and every term is the same expression once its private and group-shared
leaves are renamed in order of first occurrence (same kinds, shapes,
variances, spectra and variance profiles; global leaves keep their names,
so a deterministic matrix common to all terms, such as the inputs ``X`` of
real-input attention, is one global leaf). ``mha`` is ``n = H`` with no
shared leaf, ``mqa`` ``g = 1`` with a global ``K``, ``gqa:g`` ``g`` groups
with group-shared ``K_g`` and ``V_g`` (docs/heads.md).

The **witness** is the same expression restricted to at most four of its
terms: two of the first group (when ``n >= 2``) and two of the second group
(when ``g >= 2``), with the real coefficients. Its Dyson system has every
kind of row and unknown the full one has, at a size that does not depend on
``H``; :mod:`freeprob.reduce.quotient` checks the symmetry on it exactly and
folds ``H`` back in as a number.

Detection is a structural comparison of expression trees; it proves nothing
on its own. The invariance check on the witness system is what makes a
quotient safe.
"""

import operator
from dataclasses import dataclass

from .._errors import DomainError

from ..expr.tree import Matrix, Product, Scaled, Sum, Transpose

__all__ = ["HeadStructure", "canonical_groups", "head_structure", "witness_expression"]


def canonical_groups(groups, heads):
    """A partition of ``range(heads)`` in canonical form: sorted, and one group when all groups are singletons.

    Groups of one term are the same symmetry as a single group of all terms
    (no leaf is shared inside a group), so both are written as one group.
    """
    try:
        groups = tuple(sorted(tuple(sorted(operator.index(t) for t in grp)) for grp in groups))
    except TypeError:
        raise DomainError(f"symmetry: expected True, False or groups of term indices such as ((0, 1), (2, 3)), "
                          f"got {str(groups)[:80]!r}") from None
    if sorted(t for grp in groups for t in grp) != list(range(heads)):
        raise DomainError(f"symmetry: the groups {str(groups)[:80]} are not a partition of the term indices "
                          f"0..{heads - 1}")
    if all(len(grp) == 1 for grp in groups):
        groups = (tuple(range(heads)),)
    return groups


@dataclass(frozen=True)
class HeadStructure:
    """Exchangeable terms of a sum.

    Attributes
    ----------
    scale : sympy.Expr or None
        The coefficient ``c`` of ``c * (T_1 + ... + T_H)`` (None for 1).
    terms : tuple of Expr
        ``T_1, ..., T_H`` in the order of the expression.
    groups : tuple of tuple of int
        The partition of ``range(H)`` into ``g`` groups of ``n`` terms.
    """

    scale: object
    terms: tuple
    groups: tuple

    @property
    def heads(self):
        """``H``, the number of terms."""
        return len(self.terms)

    @property
    def per_group(self):
        """``n``, the number of terms in a group."""
        return len(self.groups[0])

    @property
    def n_groups(self):
        """``g``, the number of groups."""
        return len(self.groups)

    def witness_slots(self):
        """The terms of the witness, as ``(slot, term index)``.

        Slot 0 and 1 are two terms of the first group (slot 1 only when
        ``n >= 2``), slots 2 and 3 two terms of the second group (only when
        ``g >= 2``; slot 3 only when also ``n >= 2``).
        """
        out = [(0, self.groups[0][0])]
        if self.per_group >= 2:
            out.append((1, self.groups[0][1]))
        if self.n_groups >= 2:
            out.append((2, self.groups[1][0]))
            if self.per_group >= 2:
                out.append((3, self.groups[1][1]))
        return tuple(out)

    def describe(self):
        """A one-line description, e.g. ``8 exchangeable terms in 2 groups of 4``."""
        if self.n_groups == 1:
            return f"{self.heads} exchangeable terms"
        if self.per_group == 1:
            return f"{self.heads} exchangeable terms (no shared leaves)"
        return f"{self.heads} exchangeable terms in {self.n_groups} groups of {self.per_group}"


def _walk_leaves(node, out):
    if isinstance(node, Matrix):
        out.append(node)
    else:
        for child in node.children():
            _walk_leaves(child, out)
    return out


def _canonical(node, role):
    """A hashable form of ``node`` with its leaves replaced by ``role(leaf)``."""
    if isinstance(node, Matrix):
        return ("M", role(node))
    if isinstance(node, Scaled):
        return ("c", node.coeff, _canonical(node.arg, role))
    if isinstance(node, Transpose):
        return ("T", _canonical(node.arg, role))
    if isinstance(node, Product):
        return ("P",) + tuple(_canonical(f, role) for f in node.factors)
    if isinstance(node, Sum):
        return ("S",) + tuple(_canonical(t, role) for t in node.terms)
    return ("?", node)


def head_structure(expr):
    """The :class:`HeadStructure` of ``expr``, or ``(None, reason)`` when it has none.

    Returns
    -------
    (HeadStructure or None, str)
        The structure and an empty string, or None and why the terms are not
        exchangeable (for the record of the reduction).
    """
    scale = None
    body = expr
    if isinstance(body, Scaled) and isinstance(body.arg, Sum):
        scale, body = body.coeff, body.arg
    if not isinstance(body, Sum):
        return None, "the expression is not a sum"
    terms = body.terms
    H = len(terms)
    users = {}
    leaves_of = []
    for t, term in enumerate(terms):
        seen = _walk_leaves(term, [])
        leaves_of.append(seen)
        for leaf in seen:
            users.setdefault(leaf, set()).add(t)
    everyone = set(range(H))
    group_sets = set()
    for leaf, ts in users.items():
        if leaf.kind != "identity" and 1 < len(ts) < H:
            group_sets.add(frozenset(ts))
    if group_sets:
        covered = sorted(t for s in group_sets for t in s)
        sizes = {len(s) for s in group_sets}
        if covered != list(range(H)) or len(sizes) != 1:
            return None, "the shared leaves do not split the terms into equal groups"
        groups = canonical_groups(group_sets, H)
    else:
        groups = (tuple(range(H)),)
    forms = []
    for t, term in enumerate(terms):
        order = {}

        def role(leaf, t=t, order=order):
            ts = users[leaf]
            if leaf.kind == "identity" or ts == everyone:
                return ("global", leaf)
            key = "private" if len(ts) == 1 else "group"
            if leaf not in order:
                order[leaf] = len(order)
            return (key, order[leaf], leaf.kind, leaf.shape, leaf.variance, leaf.spectrum, leaf.profile)

        forms.append(_canonical(term, role))
    if any(f != forms[0] for f in forms[1:]):
        bad = next(t for t in range(1, H) if forms[t] != forms[0])
        return None, f"term {bad + 1} is not a copy of term 1 (another structure, shape, variance, spectrum or profile)"
    return HeadStructure(scale, tuple(terms), groups), ""


def witness_expression(structure):
    """The witness: the sum of the terms of :meth:`HeadStructure.witness_slots`, with the scale."""
    terms = [structure.terms[t] for _, t in structure.witness_slots()]
    body = terms[0] if len(terms) == 1 else Sum(tuple(terms))
    return body if structure.scale is None else Scaled(structure.scale, body)
