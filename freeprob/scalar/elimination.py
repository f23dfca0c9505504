"""Elimination of a reduced Dyson system to one polynomial ``Π(G, z) = 0`` (docs/math.md §3.5 (b)).

The Dyson equations of :class:`~freeprob.reduce.dyson.DysonSystem` read, per space
``s``, ``g_k = adj(A_s)[p, q] / det(A_s)`` for every unknown ``k = (s, p, q)``
and ``G = adj(A_s)[i, i] / det(A_s)`` for the first ``u`` row ``(s, i)``, with
``A_s = Λ - B_s - η_s(g)`` at ``ε = 0``. They are eliminated in three stages:

1. **Coefficients.** Square roots in the coefficients (``sqrt(2)`` of the
   symmetric pencil, ``1/sqrt(n)`` of scale factors) become symbols ``t``
   with an equation ``t^2 = radicand``; a radicand that is not a rational
   function of the ratios and parameters (``exp(beta^2) - 1 - beta^2``)
   becomes a symbol ``c2`` first, and any other transcendental constant a
   symbol ``T1, ...``. Everything is then a polynomial with integer
   coefficients (python-flint ``fmpz_mpoly``).
2. **Linear reduction.** Per space, the rational functions ``adj/det`` often
   satisfy affine relations with constant coefficients (identical blocks of
   the hermitization, ``G = 2 g_1``, ...). They are found exactly as the
   null space of the coefficient matrix of ``det, adj_1, adj_2, ...`` over
   ``QQ(ratios, parameters)``, and each one removes an unknown by a linear
   substitution (an identity of the rational functions, so nothing is lost
   or added on ``det(A_s) != 0``, where the true solution lives).
3. **Resultants guided by the true solution.** The remaining unknowns (and
   the symbols ``t``) are eliminated one at a time by resultants
   (``fmpz_mpoly.resultant``). After every step each polynomial is factored
   and only the irreducible factor that vanishes at the true solution (the
   Dyson solution at a point ``z0`` of the upper half plane, at 60 digits)
   is kept, which stops the growth of spurious factors. For squared singular
   values ``G_11 = ζ g`` and ``ζ^2 = w`` are substituted and ``ζ`` is
   eliminated the same way.

The result is an irreducible polynomial of the ratios, the parameters, ``G``
and ``z`` with integer coefficients. Choosing the factor by evaluation at the
numeric solution is a heuristic certificate; :mod:`freeprob.scalar.closedform`
checks the kept factor again against the exact moment series.
"""

import time
from dataclasses import dataclass, field

import flint
import sympy

from .._errors import ConvergenceError, EliminationError
from .._precision import context, to_mpc

__all__ = ["LawData", "Symbolized", "ReducedSystem", "Elimination", "as_law_data", "symbolize", "reduce_system", "eliminate"]

Z_SYM, G_OUT, G_SYM, W_SYM = sympy.symbols("z G g w")
_CHECK_DPS = 60


class _Budget:
    """A wall-clock deadline; :meth:`check` raises :class:`EliminationError` past it."""

    def __init__(self, seconds, what):
        self.start = time.perf_counter()
        self.seconds = seconds
        self.what = what

    def elapsed(self):
        return time.perf_counter() - self.start

    def check(self, stage):
        if self.seconds is not None and self.elapsed() > self.seconds:
            raise EliminationError(
                f"elimination of {self.what} did not finish within its budget of {self.seconds} s "
                f"(stopped {stage}, after {self.elapsed():.1f} s); the Dyson (fixed-point) route still "
                f"works: use law.cauchy / law.density, or give a larger budget_seconds"
            )


# --------------------------------------------------------------------------
# 1. coefficients: square roots and transcendental constants become symbols
# --------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class LawData:
    """What the closed forms need to know of a spectral law, as plain data.

    Built by the law (:meth:`freeprob.SpectralLaw.closed_form_data`); nothing
    here calls back into a law object or a solver except through the two
    callables.

    Attributes
    ----------
    name : str
    kind : {"eigenvalues", "squared-singular-values"}
    system : DysonSystem
        With ratios and parameters as symbols.
    numeric_system : DysonSystem
        With every ratio and parameter substituted.
    values : Mapping
        Symbol -> exact value of the ratios and parameters.
    moments : callable
        ``moments(k) -> (exact, [m_1, ..., m_k])``: exact sympy numbers from
        the Dyson series when ``exact``, else mpf values to 40 digits.
    series_moments : callable
        ``series_moments(system, k)``: ``m_1..m_k`` from the series at
        infinity of ``system`` (a DysonSystem with rational-function
        coefficients), or None when its coefficients are not in such a field.
    reference : callable
        ``reference(z, dps)``: the verified Dyson solution (a
        :class:`~freeprob.solve.newton.PointSolution`) at the point ``z`` of
        the system's variable (Im z > 0).
    memo : dict
        Results computed from these data (polynomials), kept with them.
    asked : str, optional
        The law asked for when it differs from ``kind``: ``"eigenvalues"`` of
        a Gram matrix solved as squared singular values (its point 0 is then
        an eigenvalue law's: no density there at an atom or a hard edge).
    """

    name: str
    kind: str
    system: object
    numeric_system: object
    values: object
    moments: object
    series_moments: object
    reference: object
    memo: dict = field(default_factory=dict, repr=False)
    asked: str = None

    @property
    def law(self):
        """The law asked for: ``asked``, else ``kind``."""
        return self.asked or self.kind


def as_law_data(law):
    """``law`` as :class:`LawData`: itself, or the ``closed_form_data`` of a spectral law."""
    return law if isinstance(law, LawData) else law.closed_form_data


@dataclass(frozen=True)
class Symbolized:
    """The Dyson matrices with polynomial-friendly coefficients.

    Attributes
    ----------
    matrices : tuple of sympy.Matrix
        ``A_s(g, z)`` at ``ε = 0``; entries rational in ``params`` and linear in ``g``.
    unknowns : tuple of Symbol
        ``g1, ..., gr``.
    params : tuple of Symbol
        Ratios and parameters kept symbolic, then ``c2``/``T`` symbols.
    roots : tuple of (Symbol, Expr)
        ``(t, radicand)``: ``t = sqrt(radicand)`` (``radicand`` in ``params``).
    substitutions : dict
        Symbol -> the expression it stands for (``t``, ``c2`` and ``T`` symbols).
    values : dict
        Symbol -> exact value at the law's ratios and parameters (all symbols
        of ``params`` and ``roots``).
    output : (int, int)
        ``(space, row)`` of the output ``G``.
    replacements : tuple of dict
        The ``xreplace`` maps applied, in order, to the system's coefficients
        (powers of square roots, then transcendental atoms).
    """

    matrices: tuple
    unknowns: tuple
    params: tuple
    roots: tuple
    substitutions: dict
    values: dict
    output: tuple
    replacements: tuple = ()

    def system(self, system):
        """``system`` (a DysonSystem) with the same replacements in its coefficients."""

        def conv(c):
            c = sympy.sympify(c)
            for rep in self.replacements:
                c = c.xreplace(rep)
            return c

        return system.map_coefficients(conv)


def _fresh(name, taken):
    out, i = name, 1
    while out in taken:
        i += 1
        out = f"{name}_{i}"
    taken.add(out)
    return sympy.Symbol(out)


def symbolize(law, symbolic):
    """The :class:`Symbolized` form of ``law``'s Dyson system.

    Parameters
    ----------
    law : LawData
    symbolic : bool
        Keep ratios and parameters as symbols (else substitute their exact values).
    """
    law = as_law_data(law)
    system = law.system if symbolic else law.numeric_system
    values = dict(law.values) if symbolic else {}
    mats, gs = system.matrices(z=Z_SYM, eps=0)
    plain = set(system.symbols)
    taken = {str(s) for s in plain} | {str(s) for s in gs} | {"z", "G", "g", "w"}
    entries = [e for m in mats for e in m]
    repl, roots, subst, vals = {}, {}, {}, {}

    def allowed(expr):
        if expr.atoms(sympy.Function) or expr.atoms(sympy.NumberSymbol):
            return False
        return all(p.exp.is_Integer for p in expr.atoms(sympy.Pow)) and expr.free_symbols <= plain

    for e in entries:
        for a in e.atoms(sympy.Pow):
            if a.exp.is_Rational and not a.exp.is_Integer:
                if a.exp.q != 2:
                    raise EliminationError(
                        f"the coefficient {e} has a root of order {a.exp.q}; only square roots are eliminated"
                    )
                base = a.base
                if base not in roots:
                    if allowed(base):
                        rad = base
                    else:
                        rad = _fresh("c2", taken)
                        subst[rad] = base
                        vals[rad] = base.subs(values)
                    label = str(base if allowed(base) else rad)
                    label = label if label.replace("_", "").isalnum() else f"{len(roots) + 1}"
                    t = _fresh(f"sqrt_{label}", taken)
                    roots[base] = (t, rad)
                    subst[t] = sympy.sqrt(base)
                    vals[t] = sympy.sqrt(base.subs(values))
                repl[a] = roots[base][0] ** (a.exp.p)
    entries = [e.xreplace(repl) for e in entries]
    others = set()
    for e in entries:
        others |= {a for a in e.atoms(sympy.Function, sympy.NumberSymbol)}
    trans = {}
    for i, a in enumerate(sorted(others, key=str)):
        s = _fresh(f"T{i + 1}", taken)
        trans[a] = s
        subst[s] = a
        vals[s] = a.subs(values)
    entries = [e.xreplace(trans) for e in entries]
    params = tuple(sorted(plain, key=str)) + tuple(s for s in subst if s not in {t for t, _ in roots.values()})
    for e in entries:
        if not e.is_rational_function(*(params + tuple(t for t, _ in roots.values()) + tuple(gs) + (Z_SYM,))):
            raise EliminationError(f"the coefficient {e} is not a rational function of the ratios and parameters")
    it = iter(entries)
    out_mats = tuple(sympy.Matrix(m.rows, m.cols, [next(it) for _ in range(m.rows * m.cols)]) for m in mats)
    vals.update({s: values[s] for s in plain})
    return Symbolized(
        out_mats, tuple(gs), params, tuple(roots.values()), subst, vals, tuple(system.u[0]), (repl, trans)
    )


# --------------------------------------------------------------------------
# flint helpers
# --------------------------------------------------------------------------

class _Ring:
    """``ZZ[syms]`` in python-flint, with conversions and numeric evaluation."""

    def __init__(self, syms, backend="flint"):
        if backend not in ("flint", "sympy"):
            raise ValueError(f"backend must be 'flint' or 'sympy', got {backend!r}")
        self.backend = backend
        self.syms = tuple(syms)
        self.index = {s: i for i, s in enumerate(self.syms)}
        self.ctx = flint.fmpz_mpoly_ctx.get(tuple(f"v{i}" for i in range(len(self.syms))), "lex")

    def from_sympy(self, expr):
        P = sympy.Poly(expr, *self.syms, domain=sympy.ZZ)
        return self.ctx.from_dict({m: int(c) for m, c in P.terms()})

    def to_sympy(self, f):
        return sympy.Poly.from_dict({tuple(m): int(c) for m, c in f.to_dict().items()}, *self.syms).as_expr()

    def resultant(self, a, b, sym):
        """Resultant in ``sym``: python-flint, or sympy when ``backend == "sympy"`` (for benchmarks)."""
        if self.backend == "sympy":
            r = sympy.resultant(self.to_sympy(a), self.to_sympy(b), sym)
            return self.from_sympy(sympy.expand(r))
        return a.resultant(b, f"v{self.index[sym]}")

    def factors(self, f):
        """Irreducible factors of ``f`` (without multiplicities)."""
        if self.backend == "sympy":
            _, facs = sympy.factor_list(self.to_sympy(f), *self.syms)
            return [self.from_sympy(h) for h, _ in facs]
        return [h for h, _ in f.factor()[1]]

    def degree(self, f, sym):
        return f.degrees()[self.index[sym]]

    def involves(self, f, syms):
        d = f.degrees()
        return any(d[self.index[s]] > 0 for s in syms if s in self.index)

    def evaluate(self, f, point, ctx):
        """``(|f(point)|, sum |c| |monomial|)`` with ``point`` a dict index -> mpc."""
        val, scale = ctx.mpc(0), ctx.mpf(0)
        cache = {}
        for m, c in f.to_dict().items():
            term = ctx.mpf(int(c))
            for i, e in enumerate(m):
                if e:
                    key = (i, e)
                    if key not in cache:
                        cache[key] = point[i] ** int(e)
                    term *= cache[key]
            val += term
            scale += abs(term)
        return abs(val), scale


def _det(mat):
    """Fraction-free (Bareiss) determinant of a square list of fmpz_mpoly."""
    n = len(mat)
    if n == 0:
        return None
    m = [list(r) for r in mat]
    sign, prev = 1, None
    for k in range(n - 1):
        if m[k][k] == 0:
            piv = next((i for i in range(k + 1, n) if m[i][k] != 0), None)
            if piv is None:
                return m[k][k] * 0
            m[k], m[piv] = m[piv], m[k]
            sign = -sign
        for i in range(k + 1, n):
            for j in range(k + 1, n):
                v = m[i][j] * m[k][k] - m[i][k] * m[k][j]
                m[i][j] = v if prev is None else v / prev
        prev = m[k][k]
    return m[n - 1][n - 1] if sign > 0 else -m[n - 1][n - 1]


def _adj(mat, p, q, one):
    """``adj(mat)[p, q] = (-1)^(p+q) det(mat without row q and column p)``."""
    n = len(mat)
    if n == 1:
        return one
    minor = [[mat[i][j] for j in range(n) if j != p] for i in range(n) if i != q]
    d = _det(minor)
    return d if (p + q) % 2 == 0 else -d


# --------------------------------------------------------------------------
# 2. linear reduction
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class ReducedSystem:
    """The Dyson system after the linear reduction, as polynomial equations.

    Attributes
    ----------
    unknowns : tuple of Symbol
        The unknowns ``g_k`` left (``G`` is the output).
    relations : tuple of (Symbol, Expr)
        ``g_k = affine expression`` found and substituted, in order.
    equations : tuple of Expr
        Polynomial equations ``g_k det(A_s) - adj(A_s)[p, q] = 0`` (denominators
        cleared) and ``G det - adj[i, i] = 0``, in the unknowns left, ``G``, ``z``
        and the symbols of the coefficients.
    roots : tuple of (Symbol, Expr)
        ``t = sqrt(radicand)`` symbols still to eliminate.
    """

    unknowns: tuple
    relations: tuple
    equations: tuple
    roots: tuple

    def __str__(self):
        lines = [f"{g} = {e}" for g, e in self.relations]
        lines += [f"{sympy.factor(e)} = 0" for e in self.equations]
        lines += [f"{t}**2 = {r}" for t, r in self.roots]
        return "\n".join(lines)


class _State:
    """Sympy matrices plus their flint determinants and adjugate entries."""

    def __init__(self, sym, ring, budget):
        self.sym = sym
        self.ring = ring
        self.budget = budget
        self.mats = list(sym.matrices)
        self.alive = list(sym.unknowns)  # unknowns whose equation is kept
        self.where = {}  # g -> (space, p, q)
        self.output_var = False  # G replaced an unknown in the matrices
        self.relations = []
        self._cache = {}

    def polys(self, s, reads):
        """``(det A'_s, {key: L_s adj(A'_s)[p, q]})`` with ``A'_s = L_s A_s`` integral."""
        key = (s, tuple(self.mats[s]), tuple(reads))
        if key in self._cache:
            return self._cache[key]
        m = self.mats[s]
        fr = [sympy.fraction(sympy.together(e)) for e in m]
        lcm = sympy.lcm([d for _, d in fr]) if fr else sympy.Integer(1)
        ents = [sympy.expand(n * sympy.cancel(lcm / d)) for n, d in fr]
        fm = [[self.ring.from_sympy(ents[i * m.cols + j]) for j in range(m.cols)] for i in range(m.rows)]
        L = self.ring.from_sympy(sympy.expand(lcm))
        det = _det(fm)
        one = self.ring.ctx.from_dict({(0,) * len(self.ring.syms): 1})
        adj = {k: L * _adj(fm, p, q, one) for k, (p, q) in reads.items()}
        self.budget.check("computing determinants")
        self._cache[key] = (det, adj)
        return det, adj


def _space_reads(sym, system, alive):
    reads = {}
    for k, (s, p, q) in enumerate(system.unknowns):
        g = sym.unknowns[k]
        if g in alive:
            reads.setdefault(s, {})[g] = (p, q)
    s0, i0 = sym.output
    reads.setdefault(s0, {})[G_OUT] = (i0, i0)
    return reads


def _relations(ring, det, adj, params, budget):
    """Null space over QQ(params) of the coefficient matrix of ``[det] + adj``."""
    keys = list(adj)
    polys = [det] + [adj[k] for k in keys]
    pidx = [ring.index[s] for s in params]
    cols = []
    monos = {}
    for f in polys:
        col = {}
        for m, c in f.to_dict().items():
            mono = tuple(e for i, e in enumerate(m) if i not in pidx)
            pm = tuple(m[i] for i in pidx)
            col.setdefault(mono, {})[pm] = int(c)
            monos.setdefault(mono, len(monos))
        cols.append(col)
    if params:
        K = sympy.QQ.frac_field(*params)
        R = sympy.QQ.poly_ring(*params)

        def elem(d):
            return K.convert_from(R.ring.from_dict(d), R) if d else K.zero
    else:
        K = sympy.QQ

        def elem(d):
            return K(d[()]) if d else K.zero
    from sympy.polys.matrices import DomainMatrix

    rows = [[elem(col.get(mono, {})) for col in cols] for mono in monos]
    dm = DomainMatrix(rows, (len(rows), len(cols)), K)
    budget.check("finding linear relations")
    ns = dm.nullspace()
    out = []
    for v in ns.to_Matrix().tolist():
        out.append((sympy.sympify(v[0]), {k: sympy.sympify(c) for k, c in zip(keys, v[1:]) if c != 0}))
    return out


def reduce_system(law, symbolic=False, budget=None, backend="flint"):
    """Linear reduction of ``law``'s Dyson system (stages 1 and 2).

    Returns
    -------
    reduced : ReducedSystem
    symbolized : Symbolized
    ring : _Ring
        The python-flint ring of every symbol.
    equations : list of fmpz_mpoly
        The equations of ``reduced``, in ``ring``.
    """
    law = as_law_data(law)
    budget = budget or _Budget(None, law.name)
    sym = symbolize(law, symbolic)
    system = law.system
    ts = tuple(t for t, _ in sym.roots)
    ring = _Ring(sym.params + ts + tuple(sym.unknowns) + (G_OUT, Z_SYM, G_SYM, W_SYM), backend)
    st = _State(sym, ring, budget)
    coeff_syms = sym.params + ts
    changed = True
    while changed:
        changed = False
        reads = _space_reads(sym, system, st.alive)
        for s in range(len(st.mats)):
            if s not in reads:
                continue
            det, adj = st.polys(s, reads[s])
            for c0, coeffs in _relations(ring, det, adj, coeff_syms, budget):
                gs = [g for g in coeffs if g != G_OUT]
                if not gs:
                    if G_OUT in coeffs:
                        raise EliminationError(f"the output G of {law.name} is constant ({-c0 / coeffs[G_OUT]})")
                    continue
                # eliminate the unknown read by the fewest matrices; keep G
                def uses(g):
                    return sum(1 for m in st.mats for e in m if e.has(g))

                gj = min(gs, key=lambda g: (uses(g), -sym.unknowns.index(g)))
                cj = coeffs[gj]
                rhs = -(c0 + sum(c * (G_OUT if g == G_OUT else g) for g, c in coeffs.items() if g != gj)) / cj
                rhs = sympy.expand(rhs)
                st.mats = [m.subs(gj, rhs).applyfunc(sympy.expand) for m in st.mats]
                st.alive.remove(gj)
                st.relations.append((gj, rhs))
                if G_OUT in coeffs:
                    st.output_var = True
                changed = True
                break
            if changed:
                break
    reads = _space_reads(sym, system, st.alive)
    eqs = []
    for s, rd in reads.items():
        det, adj = st.polys(s, rd)
        for g, poly in adj.items():
            eqs.append(ring.from_sympy(g) * det - poly)
    eqs = [e.primitive()[1] for e in eqs]

    def shown(expr, primitive):
        # for display only: t^2 -> radicand, integer content removed
        for t, rad in sym.roots:
            expr = expr.subs(t**2, rad)
        expr = sympy.expand(expr)
        if primitive and expr.free_symbols:
            num, den = sympy.fraction(sympy.together(expr))
            expr = sympy.Poly(num, *sorted(num.free_symbols, key=str)).primitive()[1].as_expr()
        return expr

    red = ReducedSystem(
        tuple(st.alive),
        tuple((g, shown(e, False)) for g, e in st.relations),
        tuple(shown(ring.to_sympy(e), True) for e in eqs),
        sym.roots,
    )
    return red, sym, ring, eqs


# --------------------------------------------------------------------------
# 3. resultants guided by the true solution
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Elimination:
    """Outcome of :func:`eliminate`.

    Attributes
    ----------
    poly : sympy.Poly
        The irreducible ``Π(g, z)`` (``z`` is ``w`` for squared singular values).
    factors : tuple of Expr
        The factors of the last polynomial computed, that involve ``g``.
    kept : int
        Index of ``poly`` in ``factors``.
    residuals : tuple of float
        ``|factor(G(z0), z0)|`` relative to the size of its terms, per factor.
    reduced : ReducedSystem
    symbolized : Symbolized
    steps : tuple of str
        What each elimination step did.
    times : dict
        Seconds per stage.
    z0 : complex
        The point of the upper half plane where the true solution was evaluated.
    """

    poly: object
    factors: tuple
    kept: int
    residuals: tuple
    reduced: ReducedSystem
    symbolized: Symbolized
    steps: tuple
    times: dict
    z0: complex


def _true_point(law, z0, dps):
    """Verified Dyson solution (unknowns, output 0) at the system point ``z0``, at ``dps`` digits."""
    try:
        sol = law.reference(z0, dps)
    except ConvergenceError as exc:
        raise ConvergenceError(f"no Dyson solution at z0 = {z0} to guide the elimination: {exc}", point=z0) from exc
    return context(sol.work_dps), sol


def _probe_points(law):
    """Two generic points of the upper half plane (system variable) at the scale of the law."""
    exact, ms = law.moments(2)
    if exact:
        m1, m2 = (complex(sympy.N(m, 20)).real for m in ms)
    else:
        m1, m2 = (float(m) for m in ms)
    if law.kind == "eigenvalues":
        s = max(abs(m2 - m1 * m1), 1e-300) ** 0.5
        return complex(m1 + 0.31 * s, 1.13 * s), complex(m1 - 0.53 * s, 0.71 * s)
    s = max(m2, 1e-300) ** 0.25  # zeta = sqrt(w), w ~ sqrt(m2)
    return complex(0.31 * s, 1.13 * s), complex(-0.53 * s, 0.71 * s)


def _point(ring, sym, law, z0, ctx, sol):
    pt = {}
    for s in sym.params + tuple(t for t, _ in sym.roots):
        pt[ring.index[s]] = to_mpc(ctx, sym.values[s])
    for k, g in enumerate(sym.unknowns):
        pt[ring.index[g]] = sol.g[k]
    zc = ctx.mpc(z0)
    out = sol.outputs[0]
    pt[ring.index[G_OUT]] = out
    pt[ring.index[Z_SYM]] = zc
    if law.kind == "eigenvalues":
        pt[ring.index[G_SYM]] = out
        pt[ring.index[W_SYM]] = zc
    else:
        pt[ring.index[G_SYM]] = out / zc
        pt[ring.index[W_SYM]] = zc * zc
    return pt


class _Pruner:
    """Keeps the irreducible factors that vanish at the true solution."""

    def __init__(self, ring, points, ctx, live):
        self.ring, self.points, self.ctx, self.live = ring, points, ctx, live
        self.tol = ctx.mpf(10) ** (-(_CHECK_DPS - 15))

    def residuals(self, f):
        out = []
        for pt in self.points:
            v, sc = self.ring.evaluate(f, pt, self.ctx)
            out.append(v / sc if sc else self.ctx.mpf(0))
        return out

    def factors(self, f):
        return [g for g in self.ring.factors(f) if self.ring.involves(g, self.live)]

    def __call__(self, f, what):
        facs = self.factors(f)
        res = [self.residuals(g) for g in facs]
        keep = [g for g, r in zip(facs, res) if r[0] < self.tol]
        if len(keep) > 1:
            keep = [g for g, r in zip(facs, res) if max(r) < self.tol]
        if not keep:
            best = min((float(r[0]) for r in res), default=float("nan"))
            raise EliminationError(
                f"no factor of {what} vanishes at the Dyson solution (smallest relative residual {best:.3g}); "
                "the elimination lost the branch of the law"
            )
        if len(keep) > 1:
            prod = keep[0]
            for g in keep[1:]:
                prod = prod * g
            return prod, facs, res
        return keep[0], facs, res


def _eliminate_var(ring, eqs, v, prune, steps, budget):
    has = [e for e in eqs if ring.degree(e, v) > 0]
    rest = [e for e in eqs if ring.degree(e, v) == 0]
    if not has:
        return eqs
    pivot = min(has, key=lambda e: (ring.degree(e, v), len(e)))
    name = str(ring.syms[ring.index[v]])
    if len(has) == 1:
        steps.append(f"{name}: occurs in one equation only, which is dropped")
        return rest
    new = []
    for e in has:
        if e is pivot:
            continue
        budget.check(f"eliminating {name}")
        r = ring.resultant(pivot, e, v)
        if r == 0:
            continue  # e and pivot are the same irreducible polynomial
        kept, facs, _ = prune(r, f"the resultant in {name}")
        new.append(kept)
        steps.append(
            f"{name}: resultant of degrees {ring.degree(pivot, v)} and {ring.degree(e, v)}, "
            f"{len(facs)} factor(s), kept one of total degree {kept.total_degree()}"
        )
    uniq = []
    for e in new + rest:
        if not any(e == u or e == -u for u in uniq):
            uniq.append(e)
    return uniq


def eliminate(law, symbolic=False, budget_seconds=60, backend="flint"):
    """Eliminate ``law``'s Dyson system to one irreducible polynomial; see the module notes.

    Returns
    -------
    Elimination

    Raises
    ------
    EliminationError
        When the budget is exceeded or no factor carries the branch of the law.

    Notes
    -----
    ``backend="sympy"`` runs the resultants and factorizations of stage 3 in
    sympy instead of python-flint; it exists to measure the difference
    (``benchmarks/bench_closedform.py``).
    """
    law = as_law_data(law)
    budget = _Budget(budget_seconds, law.name)
    times = {}
    t0 = time.perf_counter()
    red, sym, ring, eqs = reduce_system(law, symbolic, budget, backend)
    times["reduction"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    z0, z1 = _probe_points(law)
    ctx, sol = _true_point(law, z0, _CHECK_DPS)
    ctx1, sol1 = _true_point(law, z1, _CHECK_DPS)
    points = [_point(ring, sym, law, z0, ctx, sol), _point(ring, sym, law, z1, ctx, sol1)]
    live = (G_OUT, Z_SYM, G_SYM, W_SYM) + tuple(red.unknowns)
    prune = _Pruner(ring, points, ctx, live)
    steps = []
    eqs = [prune(e, "a Dyson equation")[0] for e in eqs]
    for t, rad in sym.roots:
        num, den = sympy.fraction(sympy.together(rad))
        eqs.append(ring.from_sympy(sympy.expand(t**2 * den - num)))
    todo = list(red.unknowns)
    while todo:
        budget.check("choosing the next unknown")

        def cost(v):
            ds = [ring.degree(e, v) for e in eqs if ring.degree(e, v) > 0]
            return (min(ds) if ds else 0, len(ds))

        v = min(todo, key=cost)
        todo.remove(v)
        eqs = _eliminate_var(ring, eqs, v, prune, steps, budget)
    for t, _ in sym.roots:
        eqs = _eliminate_var(ring, eqs, t, prune, steps, budget)
    final = [e for e in eqs if ring.degree(e, G_OUT) > 0]
    if len(final) != 1:
        raise EliminationError(f"elimination of {law.name} left {len(final)} equations in G")
    f = final[0]
    if law.kind != "eigenvalues":
        # G_11 = zeta g, zeta^2 = w: eliminate zeta
        gens = list(ring.ctx.gens())
        gens[ring.index[G_OUT]] = gens[ring.index[Z_SYM]] * gens[ring.index[G_SYM]]
        f = f.compose(*gens)
        sq = gens[ring.index[Z_SYM]] ** 2 - gens[ring.index[W_SYM]]
        budget.check("eliminating zeta")
        f = ring.resultant(f, sq, Z_SYM)
        steps.append("zeta: G_11 = zeta g and zeta^2 = w substituted, zeta eliminated by a resultant")
        var_g, var_z = G_SYM, W_SYM
    else:
        var_g, var_z = G_OUT, Z_SYM
    kept, facs, res = prune(f, "the final polynomial")
    facs_g = [h for h in facs if ring.degree(h, var_g) > 0]
    res_g = [r for h, r in zip(facs, res) if ring.degree(h, var_g) > 0]
    times["resultants"] = time.perf_counter() - t0
    swap = {var_g: G_SYM, var_z: Z_SYM}
    if var_g == G_OUT:
        swap = {G_OUT: G_SYM}

    def named(h):
        return ring.to_sympy(h).xreplace(swap)

    factors = tuple(named(h) for h in facs_g)
    kept_expr = named(kept)
    try:
        k = next(i for i, h in enumerate(facs_g) if h == kept or h == -kept)
    except StopIteration:
        raise EliminationError(
            f"the factors of the final polynomial of {law.name} that vanish at the Dyson solution are not "
            f"a single irreducible factor; cannot choose"
        ) from None
    coeff_syms = [s for s in sym.params]
    poly = sympy.Poly(kept_expr, G_SYM, Z_SYM, *coeff_syms)
    keep_syms = [s for s in coeff_syms if poly.degree(s) > 0]
    poly = sympy.Poly(kept_expr, G_SYM, Z_SYM, domain=sympy.ZZ[tuple(keep_syms)] if keep_syms else sympy.ZZ)
    return Elimination(
        poly, factors, k, tuple(float(r[0]) for r in res_g), red, sym, tuple(steps), times, z0
    )
