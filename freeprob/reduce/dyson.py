"""The covariance map and the reduced Dyson equation (docs/math.md §3.3-3.5).

From a self-adjoint pencil ``L = b0 + sum c E_ij (x) X~`` this module builds,
exactly in sympy:

* the covariance map ``eta(G)_ij = sum c1 c2 rho_inner G_pq`` over pairs of
  occurrences of the same matrix (``X ... X^T`` for Gaussians, any pair for
  Wigner matrices);
* the reduction of the pencil to its *active* rows (those a random entry
  reaches), by exact Schur complements of the constant rows;
* one small system per space, ``G_s = (Lambda_s - B_s - eta_s(g))^{-1}``, in
  the few unknowns ``g`` (block-trace entries) that ``eta`` reads.

The result, :class:`DysonSystem`, knows nothing of expressions: it is the
object the solvers take.
"""

from dataclasses import dataclass

import sympy

from .._errors import FreeProbError
from .inverse import check_gap

__all__ = ["DysonSystem", "dyson_system"]


@dataclass(frozen=True)
class DysonSystem:
    """Reduced Dyson equations, one block per space.

    Attributes
    ----------
    spaces : tuple of Symbol
        The spaces (dimension symbols) that carry equations.
    blocks : tuple of tuple
        Per space, the active pencil rows it keeps (labels).
    u : tuple of (int, int)
        ``(space index, local row)`` of each ``u`` row, in order.
    b : tuple of sympy.Matrix
        Per space, the constant part ``B_s`` after the Schur reduction.
    unknowns : tuple of (int, int, int)
        ``(space index, p, q)`` with ``p <= q``: ``g_k = G_s[p, q] = G_s[q, p]``.
    eta : tuple of (int, int, int, int, Expr)
        ``(space index, i, j, k, coeff)``: ``eta_s(g)[i, j] += coeff * g_k``.
    symbols : tuple of Symbol
        Ratios and parameters the coefficients depend on.
    conditions : tuple of (str, Expr)
        ``(what, value)`` pairs whose value must be positive for the system
        to describe a law (the spectral gap of each inverse's argument,
        :mod:`freeprob.reduce.inverse`); checked by :meth:`subs` once the
        values are numbers. Empty for polynomials.
    """

    spaces: tuple
    blocks: tuple
    u: tuple
    b: tuple
    unknowns: tuple
    eta: tuple
    symbols: tuple
    conditions: tuple = ()

    @classmethod
    def of(cls, spaces, blocks, u, b, unknowns, eta, conditions=()):
        """A system from its parts, with :attr:`symbols` computed from ``b`` and ``eta``.

        Raises :class:`~freeprob.DomainError` when a condition is a number that is not positive.
        """
        left = set()
        for m in b:
            left |= m.free_symbols
        for *_, c in eta:
            left |= sympy.sympify(c).free_symbols
        conditions = tuple((what, sympy.sympify(v)) for what, v in conditions)
        for what, v in conditions:
            check_gap(what, v)
        return cls(tuple(spaces), tuple(blocks), tuple(u), tuple(b), tuple(unknowns), tuple(eta),
                   tuple(sorted(left, key=str)), conditions)

    def with_conditions(self, conditions):
        """The same system with ``conditions`` added (checked as in :meth:`of`)."""
        return DysonSystem.of(self.spaces, self.blocks, self.u, self.b, self.unknowns, self.eta,
                              self.conditions + tuple(conditions))

    @property
    def exact_series(self):
        """Whether the series at infinity is exact: True without inverses.

        The bordered row of an inverse makes order 0 of the series a genuine
        fixed point (values algebraic, not rational), which exact iteration
        never reaches; such systems take the numeric series.
        """
        return not self.conditions

    @property
    def n_unknowns(self):
        return len(self.unknowns)

    def subs(self, values):
        """The same system with ``values`` (``{symbol: exact number}``) substituted."""
        b = tuple(m.subs(values) for m in self.b)
        eta = tuple((s, i, j, k, sympy.sympify(c).subs(values)) for s, i, j, k, c in self.eta)
        conditions = tuple((what, v.subs(values)) for what, v in self.conditions)
        return DysonSystem.of(self.spaces, self.blocks, self.u, b, self.unknowns, eta, conditions)

    def map_coefficients(self, f):
        """The same system with ``f`` applied to every coefficient of ``B`` and ``eta`` (symbols recomputed)."""
        b = tuple(m.applyfunc(f) for m in self.b)
        eta = tuple((s, i, j, k, f(c)) for s, i, j, k, c in self.eta)
        return DysonSystem.of(self.spaces, self.blocks, self.u, b, self.unknowns, eta, self.conditions)

    def block_data(self, convert):
        """Per space ``(k, u, B, terms, reads)`` with every coefficient passed through ``convert``.

        ``u`` is a list of flags (u row or not), ``B`` a list of lists,
        ``terms`` the ``eta`` entries ``(i, j, k, coeff)`` written in the space
        and ``reads`` the unknowns ``(k, p, q)`` it defines. The numeric
        backends (numpy, flint, exact series) are all built from this.
        """
        out = []
        for s, rows in enumerate(self.blocks):
            k = len(rows)
            u = [(s, i) in self.u for i in range(k)]
            b = [[convert(self.b[s][i, j]) for j in range(k)] for i in range(k)]
            terms = [(i, j, kk, convert(c)) for s2, i, j, kk, c in self.eta if s2 == s]
            reads = [(kk, p, q) for kk, (s2, p, q) in enumerate(self.unknowns) if s2 == s]
            out.append((k, u, b, terms, reads))
        return out

    def matrices(self, z=None, eps=None):
        """Per space, the sympy matrix ``Lambda_s - B_s - eta_s(g)`` with symbols ``g1, g2, ...``."""
        z = sympy.Symbol("z") if z is None else z
        eps = sympy.Symbol("epsilon") if eps is None else eps
        g = sympy.symbols(f"g1:{self.n_unknowns + 1}")
        out = []
        for s, rows in enumerate(self.blocks):
            k = len(rows)
            lam = sympy.zeros(k, k)
            for i in range(k):
                lam[i, i] = z if (s, i) in self.u else sympy.I * eps
            eta = sympy.zeros(k, k)
            for s2, i, j, kk, c in self.eta:
                if s2 == s:
                    eta[i, j] += c * g[kk]
            out.append(lam - self.b[s] - eta)
        return out, g

    def equations(self, latex=False):
        """Human-readable equations: for each space, the unknowns it defines and its matrix."""
        mats, g = self.matrices()
        lines = []
        for s, space in enumerate(self.spaces):
            defs = [f"g{k + 1} = G[{p},{q}]" for k, (s2, p, q) in enumerate(self.unknowns) if s2 == s]
            outs = [f"G[{i},{i}] (u row)" for s2, i in self.u if s2 == s]
            head = f"space {space}: G = A^-1 with A = Lambda - B - eta(g); " + ", ".join(defs + outs)
            if latex:
                body = sympy.latex(mats[s])
            else:
                body = sympy.pretty(mats[s], use_unicode=False, wrap_line=False)
            lines.append(head + "\n" + body)
        return "\n\n".join(lines)


def _covariance(pencil, ratio_of):
    """Covariance terms ``(i, j, p, q, coeff)``: ``eta[i, j] += coeff * G[p, q]``."""
    by_leaf = {}
    for entry in pencil.rand:
        by_leaf.setdefault(entry[2].name, []).append(entry)
    terms = {}
    for entries in by_leaf.values():
        for i1, p1, leaf, t1, c1 in entries:
            for q2, j2, _leaf, t2, c2 in entries:
                if leaf.kind == "gaussian" and t1 == t2:
                    continue
                sp, sq = pencil.spaces[p1], pencil.spaces[q2]
                if sp != sq or pencil.spaces[i1] != pencil.spaces[j2]:
                    raise FreeProbError(
                        f"internal error: covariance of {leaf.name} pairs rows of spaces {sp} and {sq}"
                    )
                key = (i1, j2, p1, q2)
                terms[key] = terms.get(key, 0) + c1 * c2 * ratio_of(sp)
    return [(i, j, p, q, sympy.expand(c)) for (i, j, p, q), c in terms.items() if sympy.expand(c) != 0]


def _eliminate(const, n, passive_pairs):
    """Exact Schur complement of ``const`` onto the rows not in ``passive_pairs``.

    ``const`` is a dict-of-dicts sparse symmetric matrix; pairs are eliminated
    one 2x2 pivot at a time (the constant part pairs row ``i`` of ``Q^T`` with
    row ``i`` of ``Q`` through the ``-1`` diagonal of ``Q``). Returns the set of
    indices that could not be eliminated (singular pivot) and updates ``const``.
    """
    kept = set()
    for a, b in passive_pairs:
        piv = sympy.Matrix(2, 2, [const[a].get(a, 0), const[a].get(b, 0), const[b].get(a, 0), const[b].get(b, 0)])
        det = sympy.expand(piv.det())
        if det == 0:
            kept |= {a, b}
            continue
        inv = piv.adjugate() / det
        rows = (set(const[a]) | set(const[b])) - {a, b}
        cols = rows  # symmetric pattern
        col_a = {r: const[r].get(a, 0) for r in rows}
        col_b = {r: const[r].get(b, 0) for r in rows}
        for r in rows:
            left = (col_a[r] * inv[0, 0] + col_b[r] * inv[1, 0], col_a[r] * inv[0, 1] + col_b[r] * inv[1, 1])
            if left == (0, 0):
                continue
            for c in cols:
                upd = left[0] * const[a].get(c, 0) + left[1] * const[b].get(c, 0)
                if upd != 0:
                    val = sympy.expand(const[r].get(c, 0) - upd)
                    if val == 0:
                        const[r].pop(c, None)
                    else:
                        const[r][c] = val
        for r in rows:
            const[r].pop(a, None)
            const[r].pop(b, None)
        const.pop(a)
        const.pop(b)
    return kept


def dyson_system(pencil, ratio_of, pair_of, block_of=None):
    """Build the reduced :class:`DysonSystem` of a self-adjoint pencil.

    Parameters
    ----------
    pencil : SelfAdjointPencil
    ratio_of : callable
        Space symbol -> its ratio (a symbol or an exact number).
    pair_of : callable
        Index -> the index it is paired with by the ``-1`` diagonal of ``Q``
        (or None), used to choose invertible 2x2 pivots.
    block_of : callable, optional
        Space -> the space whose block of the system its rows join (default:
        itself). The parts of a split dimension (:mod:`freeprob.reduce.blocks`)
        join the block of the dimension: rows of different parts are never
        coupled, so the block is block-diagonal in the parts, while a rotation
        of the ``u`` rows may combine parts.
    """
    block_of = block_of or (lambda s: s)
    n = pencil.size
    cov = _covariance(pencil, ratio_of)
    active = set(range(pencil.n_u))
    for i, j, *_ in pencil.rand:
        active |= {i, j}
    const = {i: {} for i in range(n)}
    for i, j, c in pencil.const:
        const[i][j] = const[i].get(j, 0) + c
    pairs = []
    for i in range(n):
        if i in active:
            continue
        k = pair_of(i)
        if k is not None and k not in active and i < k:
            pairs.append((i, k))
    lonely = {i for i in range(n) if i not in active and not any(i in pr for pr in pairs)}
    kept = _eliminate(const, n, pairs)
    active |= kept | lonely
    # one block per space, keeping the order of first appearance
    spaces, blocks = [], []
    where = {}
    for i in sorted(active):
        sp = block_of(pencil.spaces[i])
        if sp not in spaces:
            spaces.append(sp)
            blocks.append([])
        s = spaces.index(sp)
        where[i] = (s, len(blocks[s]))
        blocks[s].append(i)
    for i in active:
        for j in const[i]:
            if j in active and block_of(pencil.spaces[i]) != block_of(pencil.spaces[j]) and const[i][j] != 0:
                raise FreeProbError(f"internal error: constant couples rows of spaces {pencil.spaces[i]} and {pencil.spaces[j]}")
    b = []
    for s, rows in enumerate(blocks):
        k = len(rows)
        m = sympy.zeros(k, k)
        for a, i in enumerate(rows):
            for c, j in enumerate(rows):
                m[a, c] = const[i].get(j, 0)
        b.append(m)
    unknowns, index = [], {}
    eta = {}
    for i, j, p, q, c in cov:
        si, li = where[i]
        _, lj = where[j]
        sp, lp = where[p]
        _, lq = where[q]
        key = (sp, min(lp, lq), max(lp, lq))
        if key not in index:
            index[key] = len(unknowns)
            unknowns.append(key)
        ek = (si, li, lj, index[key])
        eta[ek] = eta.get(ek, 0) + c
    eta_t = tuple((s, i, j, k, sympy.expand(c)) for (s, i, j, k), c in eta.items() if sympy.expand(c) != 0)
    u = tuple(where[i] for i in range(pencil.n_u))
    return DysonSystem.of(spaces, (tuple(r) for r in blocks), u, b, unknowns, eta_t)
