"""Splitting dimensions into weighted parts: deterministic matrices and variance profiles.

A deterministic matrix ``D`` (``p x p``) with spectrum ``{a_k: w_k}`` is taken
diagonal, ``D = sum_k a_k P_k`` with ``P_k`` the coordinate projection onto
the ``k``-th part ``p_k = w_k p`` of its dimension (every random matrix of the
expression is orthogonally invariant in law, so only the spectrum matters).
A Gaussian whose variance profile is constant on a grid of row and column
cells is a block matrix of independent Gaussian blocks of constant variance.
Both are one operation, applied to the self-adjoint pencil (docs/blocks.md):

* every dimension is cut at the union of the cell edges of the matrices on
  it; pencil row ``i`` of a cut dimension becomes one row per part, of ratio
  ``w_k rho_p``;
* a constant ``c I`` becomes ``c I`` on every part, a deterministic entry
  ``c D`` the constant ``c a_k`` on part ``k``, a Gaussian entry ``c X`` the
  independent blocks ``c sqrt(s_kl) X_kl`` (a Wigner matrix: Wigner blocks on
  the diagonal, a Gaussian block and its transpose off it);
* the ``u`` rows of the first output are rotated (a Householder reflection)
  so that the first one is ``sum_k sqrt(w_k) u_k``: its resolvent entry is
  ``sum_k w_k G_kk``, the normalized trace over the whole dimension, which is
  what the solvers read. ``Lambda`` is ``z`` on every ``u`` row, so the
  rotation leaves the equation unchanged.

The parts of a dimension share its block of the Dyson system
(:func:`freeprob.reduce.dyson.dyson_system`, ``block_of``).
"""

import dataclasses
from dataclasses import dataclass

import sympy

from .._errors import DomainError
from ..expr.profiles import cell_edges, is_piecewise_constant, profile_grid, uniform_table
from ..expr.entrywise import Entrywise
from ..expr.tree import Expr, Inverse, Matrix, Product, Scaled, Sum, Transpose, leaves
from .pencil import SelfAdjointPencil

__all__ = ["Block", "Parts", "check_blocks", "has_blocks", "dimension_parts", "refine", "profile_max", "discretize",
           "has_continuous_profile", "extrapolate"]


@dataclass(frozen=True)
class Block:
    """One block of a split random matrix, as a leaf of a refined pencil."""

    name: str
    kind: str  # "gaussian" or "wigner"


@dataclass(frozen=True)
class Parts:
    """A refined self-adjoint pencil with what the Dyson system needs to read it."""

    pencil: SelfAdjointPencil
    ratios: dict  # part space -> ratio (an expression in the dimension's ratio)
    parents: dict  # part space -> dimension
    pairs: dict  # refined index -> paired refined index
    edges: dict  # dimension -> cell edges (0, ..., 1)
    origins: dict = None  # refined index -> (row of the unrefined pencil, part k of its dimension)

    def origin_of(self, i):
        """``(row, part)``: the row of the unrefined pencil that refined row ``i`` splits, and its part index."""
        return self.origins[i]

    def ratio_of(self, space):
        return self.ratios[space]

    def block_of(self, space):
        return self.parents[space]

    def pair_of(self, i):
        return self.pairs.get(i)


def has_blocks(expr):
    """Whether ``expr`` has a deterministic matrix or a variance profile (and needs :func:`refine`)."""
    return any(leaf.kind == "deterministic" or getattr(leaf, "profile", None) is not None for leaf in leaves(expr))


def check_blocks(expr):
    """Refuse what the splitting cannot solve: a continuous profile, a profiled Gaussian inside an entrywise function.

    Raises :class:`~freeprob.DomainError` naming the matrix.
    """
    for leaf in leaves(expr):
        if leaf.kind == "gaussian" and leaf.profile is not None and not is_piecewise_constant(leaf.profile):
            raise DomainError(f"matrix {leaf.name}: the profile {leaf.profile} is not piecewise constant on a grid, "
                              f"so the splitting cannot solve it exactly: the law of a Gram matrix X @ X.T of a "
                              f"continuous profile is fp.ProfileLaw (extrapolated, with error estimates; the "
                              f"command line uses it), and exact moments of any expression come from "
                              f"freeprob moments MODEL -k K --exact, or fp.profile_moments (docs/blocks.md)")
    stack = [expr]
    while stack:
        node = stack.pop()
        stack.extend(node.children() + node.real_children())
        if isinstance(node, Entrywise):
            bad = [leaf.name for leaf in leaves(node.argument) if leaf.profile is not None]
            if bad:
                raise DomainError(f"{node}: the entrywise function's argument has the profiled matrix {bad[0]}; "
                                  f"its Gaussian equivalent assumes identically distributed entries")


def _grid(leaf):
    return profile_grid(leaf.profile, f"matrix {leaf.name}")


def profile_max(leaf):
    """The largest value of a Gaussian's (piecewise-constant) profile."""
    _, _, table = _grid(leaf)
    return sympy.Max(*[v for row in table for v in row])


def dimension_parts(expr):
    """``{dimension: cell edges}``: each dimension cut at the edges of every matrix on it."""
    cuts = {}
    for leaf in leaves(expr):
        if leaf.kind == "deterministic":
            cuts.setdefault(leaf.shape[0], set()).update(cell_edges(leaf.spectrum))
        elif leaf.profile is not None:
            r_edges, c_edges, _ = _grid(leaf)
            cuts.setdefault(leaf.shape[0], set()).update(r_edges)
            cuts.setdefault(leaf.shape[1], set()).update(c_edges)
    return {s: tuple(sorted(e)) for s, e in cuts.items()}


def _cell(edges, x):
    """Index of the cell of ``edges`` that contains the point ``x`` (an interior midpoint)."""
    for k in range(len(edges) - 1):
        if edges[k] < x < edges[k + 1]:
            return k
    raise DomainError(f"internal error: {x} lies in no cell of {edges}")


def _householder(weights):
    """An orthogonal symmetric matrix (rows of sympy numbers) whose first row is ``sqrt(w_k)``."""
    v = [sympy.sqrt(w) for w in weights]
    m = len(v)
    if m == 1:
        return [[sympy.Integer(1)]]
    if weights[0] == 1:
        raise DomainError("internal error: a part of weight 1 among several")
    # I - u u^T / (1 - v_0) with u = e_0 - v, |v| = 1, entry by entry: v_j in row and column 0, and
    # delta_ij - v_i v_j / (1 - v_0) = delta_ij - sqrt(w_i w_j) (1 + v_0) / (1 - w_0) elsewhere (no radical left
    # in a denominator, so no simplification is needed)
    c = (1 + v[0]) / (sympy.Integer(1) - weights[0])
    return [[v[j] if i == 0 else v[i] if j == 0 else
             sympy.expand((1 if i == j else 0) - sympy.sqrt(weights[i] * weights[j]) * c) for j in range(m)]
            for i in range(m)]


def refine(pencil, expr, pair_of):
    """Split the rows of ``pencil`` (the self-adjoint pencil of ``expr``) along the parts of every dimension.

    ``pair_of`` is the pairing of the unrefined rows (the ``-1`` diagonal of
    ``Q``). Returns :class:`Parts`.
    """
    edges = dimension_parts(expr)
    grids = {leaf.name: _grid(leaf) for leaf in leaves(expr) if leaf.kind == "gaussian" and leaf.profile is not None}
    part_space, ratios, parents = {}, {}, {}

    def parts(space):
        e = edges.get(space)
        if e is None or len(e) == 2:
            part_space[(space, 0)] = space
            ratios[space], parents[space] = space, space
            return [(space, sympy.Integer(0), sympy.Integer(1))]
        out = []
        for k in range(len(e) - 1):
            sym = sympy.Symbol(f"{space}[{k + 1}]", positive=True)  # not an identifier: never a user's dimension
            ratios[sym], parents[sym] = (e[k + 1] - e[k]) * space, space
            out.append((sym, e[k], e[k + 1]))
        return out

    by_space = {}
    index = {}  # (old row, part) -> new row
    spaces = []
    order = list(range(pencil.size))
    for i in order:
        sp = pencil.spaces[i]
        if sp not in by_space:
            by_space[sp] = parts(sp)
        for k, (sym, _, _) in enumerate(by_space[sp]):
            index[(i, k)] = len(spaces)
            spaces.append(sym)
    n_u = sum(len(by_space[pencil.spaces[i]]) for i in range(pencil.n_u))

    def split(i):
        return by_space[pencil.spaces[i]]

    const = {}

    def add(i, j, c):
        if c != 0:
            const[(i, j)] = const.get((i, j), 0) + c

    for i, j, c in pencil.const:
        if pencil.spaces[i] != pencil.spaces[j]:
            raise DomainError(f"internal error: a constant couples rows of spaces {pencil.spaces[i]} and "
                              f"{pencil.spaces[j]}")
        for k in range(len(split(i))):
            add(index[(i, k)], index[(j, k)], c)
    rand = []
    for i, j, leaf, t, c in pencil.rand:
        pi, pj = split(i), split(j)
        if leaf.kind == "deterministic":
            values = leaf.spectrum
            own = cell_edges(values)
            for k, (_, lo, hi) in enumerate(pi):
                a = values[_cell(own, (lo + hi) / 2)][0]
                add(index[(i, k)], index[(j, k)], c * a)
            continue
        grid = grids.get(leaf.name)
        for k, (_, lo_i, hi_i) in enumerate(pi):
            for l, (_, lo_j, hi_j) in enumerate(pj):
                if leaf.kind == "wigner":
                    if k == l:
                        block, bt = Block(f"{leaf.name}[{k + 1},{k + 1}]", "wigner"), False
                    else:
                        a, b = min(k, l), max(k, l)
                        block, bt = Block(f"{leaf.name}[{a + 1},{b + 1}]", "gaussian"), k > l
                    rand.append((index[(i, k)], index[(j, l)], block, bt, c))
                    continue
                # rows of the leaf itself: part k of row i, or part l of column j when the entry is transposed
                (rk, rlo, rhi), (ck, clo, chi) = ((k, lo_i, hi_i), (l, lo_j, hi_j)) if not t else \
                    ((l, lo_j, hi_j), (k, lo_i, hi_i))
                s = sympy.Integer(1)
                if grid is not None:
                    r_edges, c_edges, table = grid
                    s = table[_cell(r_edges, (rlo + rhi) / 2)][_cell(c_edges, (clo + chi) / 2)]
                if s == 0:
                    continue
                block = Block(f"{leaf.name}[{rk + 1},{ck + 1}]", "gaussian")
                rand.append((index[(i, k)], index[(j, l)], block, t, c * sympy.sqrt(s)))
    # the first output: rotate the parts of u row 0 so that the first is sum_k sqrt(w_k) u_k
    first = split(0)
    if len(first) > 1:
        rot = _householder([hi - lo for _, lo, hi in first])
        group = {index[(0, k)]: k for k in range(len(first))}

        def images(i):
            if i not in group:
                return [(i, sympy.Integer(1))]
            k = group[i]
            return [(index[(0, r)], rot[r][k]) for r in range(len(first)) if rot[r][k] != 0]

        rotated = {}
        for (i, j), c in const.items():
            for i2, a in images(i):
                for j2, b in images(j):
                    rotated[(i2, j2)] = rotated.get((i2, j2), 0) + a * b * c
        const = {key: v for key, v in ((key, sympy.expand(v)) for key, v in rotated.items()) if v != 0}
    pairs = {}
    for (i, k), new in index.items():
        if i < pencil.n_u:
            continue
        q = pair_of(i)
        if q is not None:
            pairs[new] = index[(q, k)]
    refined = SelfAdjointPencil(tuple(spaces), n_u, tuple((i, j, c) for (i, j), c in const.items()), tuple(rand))
    origins = {new: key for key, new in index.items()}
    return Parts(refined, ratios, parents, pairs, edges, origins)


# -- continuous profiles: discretization and extrapolation ------------------------------------------------------


def has_continuous_profile(expr):
    """Whether a Gaussian of ``expr`` has a profile that is not piecewise constant on a grid."""
    if not isinstance(expr, Expr):
        raise DomainError(f"has_continuous_profile takes a matrix expression, got {expr!r} (a model named by "
                          f"model = ..., such as causal attention, has no expression: model.expr is None)")
    return any(leaf.kind == "gaussian" and leaf.profile is not None and not is_piecewise_constant(leaf.profile)
               for leaf in leaves(expr))


def discretize(expr, cells):
    """``expr`` with every continuous profile replaced by its values at the midpoints of ``cells x cells`` cells.

    The discretized Gaussian keeps its name, shape and variance; its profile
    becomes a :class:`~freeprob.expr.profiles.ProfileTable` (exact values,
    ``Heaviside(0) = 1/2``), which the splitting solves exactly. The law of
    the discretized expression differs from the limit by the discretization
    error; :func:`extrapolate` removes it from a sequence of cell counts.
    """
    cache = {}

    def rebuild(node):
        if node in cache:
            return cache[node]
        if isinstance(node, Matrix):
            out = node
            if node.kind == "gaussian" and node.profile is not None and not is_piecewise_constant(node.profile):
                table = uniform_table(node.profile, cells, f"matrix {node.name}")
                out = Matrix(node.name, node.shape, "gaussian", node.variance, None, table)
        elif isinstance(node, Scaled):
            out = Scaled.of(node.coeff, rebuild(node.arg))
        elif isinstance(node, Transpose):
            out = Transpose.of(rebuild(node.arg))
        elif isinstance(node, Inverse):
            out = dataclasses.replace(node, arg=rebuild(node.arg))  # keeps a proved floor
        elif type(node) is Sum:
            terms = [rebuild(t) for t in node.terms]
            out = terms[0]
            for t in terms[1:]:
                out = Sum.of(out, t)
        elif isinstance(node, Product):
            factors = [rebuild(f) for f in node.factors]
            out = factors[0]
            for f in factors[1:]:
                out = Product.of(out, f)
        else:
            raise DomainError(f"discretize: {node} ({type(node).__name__}) is not supported with a continuous "
                              f"profile; only sums, products, scalings, transposes and inverses are")
        cache[node] = out
        return out

    return rebuild(expr)


def extrapolate(values, variable=lambda m: sympy.Rational(1, m)):
    """Exact polynomial extrapolation to ``1/cells = 0`` of ``{cells: value}`` (rationals), with its check.

    The values at ``m`` cells are interpolated by the polynomial in
    ``h = variable(m)`` through all points but the last, and through all
    points but the first; returns ``(limit, difference)`` where ``limit`` is
    the value at ``h = 0`` through all points and ``difference`` the spread
    of the two one-point-shorter extrapolations (0 when the sequence is a
    polynomial in ``h`` of degree below ``len(values) - 1``: the limit is
    then exact under that hypothesis, verified on one extra point).
    """
    ms = sorted(values)
    if len(ms) < 3:
        raise DomainError(f"extrapolate: at least three cell counts are needed, got {ms}")

    def at_zero(sub):
        hs = [variable(m) for m in sub]
        total = 0
        for i, m in enumerate(sub):
            w = sympy.Integer(1)
            for j in range(len(sub)):
                if j != i:
                    w *= (0 - hs[j]) / (hs[i] - hs[j])
            total += w * values[m]
        return sympy.nsimplify(sympy.simplify(total))

    a, b, full = at_zero(ms[:-1]), at_zero(ms[1:]), at_zero(ms)
    return full, abs(a - b)
