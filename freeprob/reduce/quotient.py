"""The symmetry quotient of a Dyson system with exchangeable terms (docs/heads.md).

The Dyson system of ``c * (T_1 + ... + T_H)`` with exchangeable terms
(:mod:`freeprob.reduce.exchange`) has, in every space, rows shared by all
terms (the ``u`` rows: *fixed* rows) and ``m`` rows per term. Its solution
``G`` commutes with the permutations of the group ``S_n wr S_g``, hence has
the block form

    [[A00,          1^T (x) A01                                          ],
     [1 (x) A10,    I (x) X0 + (I_g (x) J_n - I) (x) X1 + (J - I_g (x) J_n) (x) X2]]

and an orthogonal change of basis of the term index splits it into three
blocks whose sizes do not depend on ``H``:

    T = [[A00, sqrt(H) A01], [sqrt(H) A10, X0 + (n-1) X1 + (H-n) X2]]
    R = X0 + (n-1) X1 - n X2        (absent when g = 1)
    S = X0 - X1                     (absent when n = 1)

with inverses read back as

    G[f, f']          = T^-1[f, f']
    G[f, (h, a)]      = T^-1[f, a] / sqrt(H)
    G[(h,a), (h,b)]   = T^-1[a,b]/H + (1/n - 1/H) R^-1[a,b] + (1 - 1/n) S^-1[a,b]
    G[(h,a), (h',b)]  = T^-1[a,b]/H + (1/n - 1/H) R^-1[a,b] - (1/n) S^-1[a,b]   (same group)
    G[(h,a), (h',b)]  = T^-1[a,b]/H - (1/H) R^-1[a,b]                             (other group)

``B`` and ``eta`` transform like ``A``; ``Lambda`` keeps ``z`` on the fixed
``u`` rows and ``i eps`` elsewhere (the change of basis is orthogonal), and
the law is read on the ``u`` rows of ``T``. The result is again a
:class:`~freeprob.reduce.dyson.DysonSystem`, so every solver, the series and
the equations work on it unchanged.

Nothing here is assumed. :func:`quotient` takes the Dyson system of the
*witness* (two to four terms of the real expression, with their real
coefficients) and checks exactly, with sympy, that

* the rows of the witness terms correspond one to one, space by space;
* ``B`` and ``eta`` are invariant under the generators of the group
  (exchanging two terms of a group; exchanging two groups);
* every ``eta`` term keeps term labels: a target ``(i, j)`` reads only
  ``G[p, q]`` with ``p`` in the term of ``i`` and ``q`` in the term of ``j``
  (else a coefficient would carry a multiplicity that the witness cannot see);
* the Schur reduction added nothing to the fixed rows (which would be a sum
  over terms).

Any failure raises :class:`QuotientError` with the reason; the caller falls
back to the full system.
"""

import sympy

from .._errors import FreeProbError
from .dyson import DysonSystem

__all__ = ["QuotientError", "quotient"]

# witness slots: 0, 1 in the first group; 2, 3 in the second (see HeadStructure.witness_slots)
_GROUP = {0: 0, 1: 0, 2: 1, 3: 1}


class QuotientError(FreeProbError):
    """The symmetry of the witness system could not be verified; the full system must be used."""


def _zero(x):
    return sympy.expand(x) == 0


def _labels(system, row_of):
    """Per space, per local row, ``None`` (fixed) or ``(slot, key)`` from ``row_of(pencil row)``."""
    return [[row_of(r) for r in rows] for rows in system.blocks]


def _check_generator(system, labels, perm):
    """Raise unless ``B`` and ``eta`` are invariant under the slot permutation ``perm``."""
    where = [{lab: a for a, lab in enumerate(labs)} for labs in labels]

    def image(s, a):
        lab = labels[s][a]
        if lab is None:
            return a
        slot, key = lab
        target = (perm.get(slot, slot), key)
        if target not in where[s]:
            raise QuotientError(f"row {key} of term slot {slot} has no partner in slot {target[0]}")
        return where[s][target]

    for s, b in enumerate(system.b):
        k = b.shape[0]
        img = [image(s, a) for a in range(k)]
        if sorted(img) != list(range(k)):
            raise QuotientError(f"the term rows of space {system.spaces[s]} do not correspond one to one")
        for i in range(k):
            for j in range(k):
                if not _zero(b[img[i], img[j]] - b[i, j]):
                    raise QuotientError(
                        f"B of space {system.spaces[s]} is not invariant: entry ({i}, {j}) is {b[i, j]}, "
                        f"its image {b[img[i], img[j]]}"
                    )
    index = {u: k for k, u in enumerate(system.unknowns)}
    eta = {}
    for s, i, j, k, c in system.eta:
        eta[(s, i, j, k)] = eta.get((s, i, j, k), 0) + c
    for (s, i, j, k), c in eta.items():
        s2, p, q = system.unknowns[k]
        pi, pj, pp, pq = image(s, i), image(s, j), image(s2, p), image(s2, q)
        key = (s2, min(pp, pq), max(pp, pq))
        if key not in index:
            raise QuotientError(f"eta reads G[{p}, {q}] of space {system.spaces[s2]}, whose image is not read")
        if not _zero(eta.get((s, pi, pj, index[key]), 0) - c):
            raise QuotientError(f"eta of space {system.spaces[s]} is not invariant at ({i}, {j})")


def _check_labels(system, labels):
    for s, i, j, k, c in system.eta:
        s2, p, q = system.unknowns[k]
        li, lj = (None if x is None else x[0] for x in (labels[s][i], labels[s][j]))
        lp, lq = (None if x is None else x[0] for x in (labels[s2][p], labels[s2][q]))
        if (li, lj) != (lp, lq) and (li, lj) != (lq, lp):
            raise QuotientError(
                f"eta of space {system.spaces[s]} at ({i}, {j}) reads G[{p}, {q}] of other terms; a leaf acting "
                f"on the whole sum is not supported by the quotient"
            )


def _pair_type(a, b):
    """0: same term, 1: same group, 2: other group (``a``, ``b`` slots)."""
    if a == b:
        return 0
    return 1 if _GROUP[a] == _GROUP[b] else 2


def quotient(system, row_of, heads, per_group, fixed_b):
    """The quotient of the witness system ``system`` for ``heads`` terms in groups of ``per_group``.

    Parameters
    ----------
    system : DysonSystem
        The Dyson system of the witness expression.
    row_of : callable
        Pencil row label (an entry of ``system.blocks``) -> ``None`` for a
        row shared by all terms, or ``(slot, key)``: the witness slot of its
        term and a key that names the row inside its term.
    heads, per_group : int
        ``H`` and ``n`` of the full expression (``H / n`` groups).
    fixed_b : callable
        ``(label, label) -> exact value`` of the pencil's constant between
        two fixed rows before the Schur reduction.

    Returns
    -------
    DysonSystem
        Blocks ``T`` (and ``R``, ``S`` when present) per space; spaces are
        named ``s``, ``s_R``, ``s_S``.

    Raises
    ------
    QuotientError
        When the invariance cannot be verified (see the module notes).
    """
    H, n = sympy.Integer(heads), sympy.Integer(per_group)
    g = H / n
    if not g.is_integer:
        raise QuotientError(f"{heads} terms do not split into groups of {per_group}")
    labels = _labels(system, row_of)
    slots = {lab[0] for labs in labels for lab in labs if lab is not None}
    want = {0} | ({1} if n >= 2 else set()) | ({2} if g >= 2 else set()) | ({3} if g >= 2 and n >= 2 else set())
    if slots != want:
        raise QuotientError(f"the witness has term slots {sorted(slots)}, expected {sorted(want)}")
    gens = []
    if n >= 2:
        gens.append({0: 1, 1: 0})
    if g >= 2:
        gens.append({0: 2, 2: 0, 1: 3, 3: 1} if n >= 2 else {0: 2, 2: 0})
    for perm in gens:
        _check_generator(system, labels, perm)
    _check_labels(system, labels)
    for s, labs in enumerate(labels):
        fixed = [a for a, lab in enumerate(labs) if lab is None]
        for a in fixed:
            for b in fixed:
                before = fixed_b(system.blocks[s][a], system.blocks[s][b])
                if not _zero(system.b[s][a, b] - before):
                    raise QuotientError(
                        f"the reduction added to the shared rows of space {system.spaces[s]}, a sum over terms "
                        f"the witness cannot count"
                    )
    return _build(system, labels, H, n, g)


class _Linear:
    """A linear form ``{unknown: coeff}`` in the quotient's unknowns (``+``, ``-`` and scaling)."""

    __slots__ = ("terms",)

    def __init__(self, terms):
        self.terms = terms

    def __add__(self, other):
        if not isinstance(other, _Linear):
            if other == 0:
                return self
            raise TypeError(f"cannot add {other!r} to a linear form")
        out = dict(self.terms)
        for key, v in other.terms.items():
            out[key] = out.get(key, 0) + v
        return _Linear(out)

    __radd__ = __add__

    def __sub__(self, other):
        return self + (-1) * other if isinstance(other, _Linear) else self + (-other)

    def __mul__(self, c):
        return _Linear({key: c * v for key, v in self.terms.items()})

    __rmul__ = __mul__


def _blocks(s, layout, entry, H, n, g):
    """``{block: {(i, j): value}}`` of the quotient of one space, from ``entry(i, j)`` on witness rows.

    The same linear maps build ``B_T, B_R, B_S`` (values are numbers) and
    ``eta_T, eta_R, eta_S`` (values are :class:`_Linear` forms).
    """
    t_idx, r_idx, s_idx, fixed, keys, row = layout[s]
    k0, m = len(fixed), len(keys)

    def rep(slot, a):
        return row[(slot, keys[a])]

    def x(slot, a, b):
        # X0 (same term), X1 (slot 1: same group), X2 (slot 2: other group)
        if (slot, keys[b]) not in row:
            return 0
        return entry(rep(0, a), rep(slot, b))

    t = {}
    for a, fa in enumerate(fixed):
        for b, fb in enumerate(fixed):
            t[(a, b)] = entry(fa, fb)
        for b in range(m):
            t[(a, k0 + b)] = sympy.sqrt(H) * entry(fa, rep(0, b))
            t[(k0 + b, a)] = sympy.sqrt(H) * entry(rep(0, b), fa)
    for a in range(m):
        for b in range(m):
            t[(k0 + a, k0 + b)] = x(0, a, b) + (n - 1) * x(1, a, b) + (H - n) * x(2, a, b)
    out = {t_idx: t}
    pairs = [(a, b) for a in range(m) for b in range(m)]
    if r_idx is not None:
        out[r_idx] = {(a, b): x(0, a, b) + (n - 1) * x(1, a, b) - n * x(2, a, b) for a, b in pairs}
    if s_idx is not None:
        out[s_idx] = {(a, b): x(0, a, b) - x(1, a, b) for a, b in pairs}
    return out


def _read(system, labels, layout, H, n, k):
    """The witness unknown ``g_k = G[p, q]`` as ``{(block, p', q'): coeff}`` over entries of the inverse blocks."""
    s, p, q = system.unknowns[k]
    t_idx, r_idx, s_idx, fixed, keys, _ = layout[s]
    k0 = len(fixed)
    lp, lq = labels[s][p], labels[s][q]
    if lp is None and lq is None:
        return {(t_idx, fixed.index(p), fixed.index(q)): sympy.Integer(1)}
    if lp is None or lq is None:
        f, h = (p, lq) if lp is None else (q, lp)
        return {(t_idx, fixed.index(f), k0 + keys.index(h[1])): 1 / sympy.sqrt(H)}
    a, b = keys.index(lp[1]), keys.index(lq[1])
    typ = _pair_type(lp[0], lq[0])
    coef_r = {0: 1 / n - 1 / H, 1: 1 / n - 1 / H, 2: -1 / H}[typ]
    coef_s = {0: 1 - 1 / n, 1: -1 / n, 2: sympy.Integer(0)}[typ]
    out = {(t_idx, k0 + a, k0 + b): 1 / H}
    if r_idx is not None and coef_r != 0:
        out[(r_idx, a, b)] = coef_r
    if s_idx is not None and coef_s != 0:
        out[(s_idx, a, b)] = coef_s
    return out


def _build(system, labels, H, n, g):
    new_spaces, new_blocks = [], []
    layout = []  # per witness space: (T index, R index or None, S index or None, fixed rows, keys, row lookup)
    for s, labs in enumerate(labels):
        fixed = [a for a, lab in enumerate(labs) if lab is None]
        keys = [lab[1] for lab in labs if lab is not None and lab[0] == 0]
        row = {lab: a for a, lab in enumerate(labs) if lab is not None}
        name = system.spaces[s]
        t_idx = len(new_spaces)
        new_spaces.append(name)
        new_blocks.append(tuple(("fixed", system.blocks[s][a]) for a in fixed) + tuple(("T", k) for k in keys))
        r_idx = s_idx = None
        if keys and g >= 2:
            r_idx = len(new_spaces)
            new_spaces.append(sympy.Symbol(f"{name}_R", positive=True))
            new_blocks.append(tuple(("R", k) for k in keys))
        if keys and n >= 2:
            s_idx = len(new_spaces)
            new_spaces.append(sympy.Symbol(f"{name}_S", positive=True))
            new_blocks.append(tuple(("S", k) for k in keys))
        layout.append((t_idx, r_idx, s_idx, fixed, keys, row))

    new_b = [None] * len(new_spaces)
    for s in range(len(labels)):
        for blk, entries in _blocks(s, layout, lambda i, j, s=s: system.b[s][i, j], H, n, g).items():
            size = len(new_blocks[blk])
            new_b[blk] = sympy.Matrix(size, size, lambda i, j: sympy.expand(entries[(i, j)]))

    reads = [_read(system, labels, layout, H, n, k) for k in range(system.n_unknowns)]
    eta_at = {}
    for s, i, j, k, c in system.eta:
        eta_at.setdefault((s, i, j), []).append((k, c))

    def eta_entry(s, i, j):
        out = {}
        for k, c in eta_at.get((s, i, j), ()):
            for (blk, p, q), w in reads[k].items():
                key = (blk, min(p, q), max(p, q))
                out[key] = out.get(key, 0) + c * w
        return _Linear(out)

    unknowns, index, eta = [], {}, {}
    for s in range(len(labels)):
        for blk, entries in _blocks(s, layout, lambda i, j, s=s: eta_entry(s, i, j), H, n, g).items():
            for (i, j), form in entries.items():
                if not isinstance(form, _Linear):
                    continue  # an exact 0
                for key, v in form.terms.items():
                    v = sympy.expand(v)
                    if v == 0:
                        continue
                    if key not in index:
                        index[key] = len(unknowns)
                        unknowns.append(key)
                    ek = (blk, i, j, index[key])
                    eta[ek] = eta.get(ek, 0) + v
    eta_t = tuple((s, i, j, k, sympy.expand(c)) for (s, i, j, k), c in eta.items() if sympy.expand(c) != 0)
    u = tuple((layout[s][0], layout[s][3].index(i)) for s, i in system.u)
    return DysonSystem.of(new_spaces, new_blocks, u, new_b, unknowns, eta_t)
