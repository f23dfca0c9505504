"""Closed forms of a spectral law: one algebraic equation, and what it gives.

For a polynomial model in Gaussian matrices the Cauchy transform is
algebraic: ``Π(G(z), z) = 0`` for one irreducible polynomial ``Π``.
:func:`cauchy_polynomial` finds it by eliminating the reduced Dyson system
(:mod:`freeprob.scalar.elimination`), and chooses the factor that carries the law:
the one that vanishes at the Dyson solution and whose branch
``g = 1/z + m_1/z^2 + ...`` at infinity reproduces the exact moments. From
``Π``:

* :func:`polynomial_cauchy`, :func:`polynomial_density`: the branch ``g ~ 1/z``
  continued from infinity (roots of ``Π(·, z)``, Newton polishing, verified);
* :func:`polynomial_edges`: the real roots of ``disc_g Π · lc_g Π`` at which the
  density changes from zero to positive, to any precision and as algebraic
  numbers (minimal polynomial and isolating interval);
* :func:`polynomial_atoms`: poles of the branch (``g ~ m/(z - z0)``) with their
  exact masses, from the Newton polygon of ``Π`` at the roots of ``lc_g Π``;
* :func:`exact_moments`: the power series of the branch at infinity, exact
  rational functions of the ratios and parameters.

For squared singular values ``Π`` is written in ``w = ζ^2`` (the variable of
``P P^T``), so every function above speaks of the law of ``P P^T``.

Examples
--------
>>> import freeprob as fp
>>> law = fp.law_of(fp.find_model("marchenko-pastur"))
>>> cauchy_polynomial(law, symbolic=True).expr()
g**2*p*z - g*n*z + g*n - g*p + n
>>> exact_moments(law, 4)
(1, 3/2, 11/4, 45/8)
"""

from dataclasses import dataclass, field

import time

import sympy

from .elimination import G_SYM, Z_SYM, LawData, ReducedSystem, as_law_data, eliminate, symbolize
from .._deadline import call_with_deadline
from .._errors import ConvergenceError, DomainError, EliminationError
from .._numbers import read_number
from .._precision import check_dps, context, exact, flint_precision, guard_digits, to_mpf
from .algebraic import AlgebraicLaw
from .curves import at_infinity, moments_at_infinity, vanishing_order

__all__ = [
    "LawData",
    "CauchyPolynomial",
    "Edge",
    "Atom",
    "cauchy_polynomial",
    "polynomial_law",
    "polynomial_cauchy",
    "polynomial_density",
    "polynomial_edges",
    "polynomial_support",
    "polynomial_atoms",
    "exact_moments",
    "dyson_series_moments",
]

_SERIES_ORDER = 12


@dataclass(frozen=True)
class CauchyPolynomial:
    """The algebraic equation ``Π(g, z) = 0`` of a law's Cauchy transform.

    Attributes
    ----------
    poly : sympy.Poly
        ``Π`` in ``(g, z)``, irreducible, primitive, with integer-polynomial
        coefficients in the symbols kept (ratios and parameters when
        ``symbolic``, and the symbols of :attr:`substitutions`).
    g, z : sympy.Symbol
        The unknown and the variable (``z`` is ``w``, the variable of ``P P^T``,
        for squared singular values).
    law : str
        ``"eigenvalues"`` or ``"squared-singular-values"``: the law asked for (a
        Gram matrix's eigenvalues, solved as squared singular values, have
        the same polynomial in their own variable).
    symbolic : bool
        Whether ratios and parameters are kept as symbols.
    substitutions : dict
        Symbols standing for expressions that are not rational in the ratios
        and parameters (``c2 = exp(beta**2) - 1 - beta**2``).
    values : dict
        Exact value of every symbol of ``poly`` at the law's ratios and parameters.
    factors : tuple of sympy expressions
        The irreducible factors (involving ``g``) of the last polynomial of the elimination.
    kept : int
        Index of ``poly`` in ``factors``.
    checks : tuple of str
        Per factor, what the checks found.
    reason : str
        Why ``factors[kept]`` was kept.
    series_order : int
        Number of terms of the series at infinity compared with the exact moments.
    reduced : ReducedSystem
        The system the polynomial was eliminated from.
    steps : tuple of str
        The elimination steps.
    timing : dict
        Seconds per stage (``reduction``, ``resultants``, ``checks``, ``total``).
    """

    poly: object
    g: object
    z: object
    law: str
    symbolic: bool
    substitutions: dict
    values: dict
    factors: tuple
    kept: int
    checks: tuple
    reason: str
    series_order: int
    reduced: ReducedSystem = field(repr=False)
    steps: tuple = field(repr=False)
    timing: dict = field(repr=False)

    @property
    def degrees(self):
        """``(degree in g, degree in z)``."""
        return self.poly.degree(self.g), self.poly.degree(self.z)

    def expr(self):
        """``Π`` as an expanded sympy expression."""
        return sympy.expand(self.poly.as_expr())

    def numeric(self):
        """``Π`` with every symbol replaced by its exact value (a sympy expression in ``g``, ``z``)."""
        vals = {s: v for s, v in self.values.items()}
        return sympy.expand(self.poly.as_expr().xreplace(vals))

    def __str__(self):
        subs = "".join(f"\n  where {s} = {e}" for s, e in self.substitutions.items())
        return f"{self.expr()} = 0{subs}"


def _normalize(expr, gens):
    """Primitive, with a positive leading integer coefficient (lex order in ``gens``, then the symbols)."""
    extra = sorted(sympy.sympify(expr).free_symbols - set(gens), key=str)
    P = sympy.Poly(expr, *gens, *extra)
    _, P = P.primitive()
    if P.LC() < 0:
        P = -P
    return sympy.Poly(P.as_expr(), *gens)


def _specialize(expr, values):
    """Substitute the algebraic values; transcendental ones stay symbolic."""
    alg = {s: v for s, v in values.items() if v.is_algebraic is not False and not v.atoms(sympy.NumberSymbol)
           and not v.atoms(sympy.Function)}
    return sympy.expand(expr.xreplace(alg)), {s: v for s, v in values.items() if s not in alg}


def _reference_moments(law, order):
    """``(exact, moments)``: exact sympy moments from the Dyson series, else 40-digit mpf values."""
    exact, ms = law.moments(order)
    return exact, list(ms)


def _check_factors(law, elim, values):
    """Per factor of the final polynomial: does it carry the branch with the exact moments?"""
    order = _SERIES_ORDER
    exact, ref = _reference_moments(law, order)
    h, u = sympy.Dummy("h"), sympy.Dummy("u")
    notes, matching = [], []
    ctx = context(40)
    for i, f in enumerate(elim.factors):
        fs, rest = _specialize(f, values)
        vanish = elim.residuals[i] < 1e-40
        try:
            Q = at_infinity(fs, G_SYM, Z_SYM, h, u)
        except sympy.PolynomialError:
            notes.append("not a polynomial in g, z after substitution")
            continue
        if sympy.Poly(fs, G_SYM, Z_SYM).degree(G_SYM) < 1:
            notes.append("does not involve g")
            continue
        try:
            if exact and not rest:
                bad = vanishing_order(Q, h, u, [1] + ref[: order - 1], order)
            else:
                ms = moments_at_infinity(fs, G_SYM, Z_SYM, order)
                bad = None
                for k, (a, b) in enumerate(zip(ms, ref)):
                    av = to_mpf(ctx, sympy.re(sympy.sympify(a).xreplace(rest)))
                    if abs(av - b) > ctx.mpf(10) ** (-30) * max(1, abs(b)):
                        bad = k + 1
                        break
        except (DomainError, EliminationError) as exc:
            notes.append(f"no simple branch g ~ 1/z at infinity ({str(exc).split(';')[0]})")
            continue
        state = "vanishes" if vanish else f"does not vanish (relative residual {elim.residuals[i]:.2g})"
        if bad is None:
            matching.append(i)
            notes.append(f"{state} at the Dyson solution; its branch at infinity matches the exact moments "
                         f"m_1..m_{order - 1}")
        else:
            notes.append(f"{state} at the Dyson solution; its series at infinity first differs from the "
                         f"exact moments at order {bad}")
    return tuple(notes), matching, order


def cauchy_polynomial(law, symbolic=False, budget_seconds=60):
    """The irreducible polynomial ``Π(g, z)`` with ``Π(G(z), z) = 0`` for ``law``.

    Parameters
    ----------
    law : SpectralLaw
    symbolic : bool
        Keep the ratios and parameters as symbols (the dimension symbols stand
        for their ratios); otherwise their exact values are substituted.
    budget_seconds : float or None
        Wall-clock budget of the elimination.

    Returns
    -------
    CauchyPolynomial

    Raises
    ------
    EliminationError
        If the elimination does not finish within the budget, or no factor
        (or more than one) carries the branch of the law. The Dyson route
        (``law.cauchy``, ``law.density``) keeps working.

    Notes
    -----
    Square roots in the coefficients are eliminated, so ``Π`` has integer
    coefficients in the symbols; a square-root radicand that is not rational
    in the ratios and parameters is replaced by a symbol (``c2``), listed in
    ``substitutions``. The kept factor vanishes at the Dyson solution (60
    digits, two points of the upper half plane) and its series at infinity
    matches the exact moments through order 12; the other factors are listed
    with what failed.

    Examples
    --------
    >>> import freeprob as fp
    >>> law = fp.law_of(fp.find_model("wigner-semicircle"))
    >>> cauchy_polynomial(law).poly.as_expr()
    g**2 - g*z + 1
    >>> law = fp.law_of(fp.find_model("wigner-plus-wishart"))
    >>> cauchy_polynomial(law).degrees
    (3, 1)
    """
    law = as_law_data(law)
    per_law = law.memo
    if symbolic in per_law:
        return per_law[symbolic]
    if budget_seconds is not None:
        # a hard limit: one resultant can run far past the cooperative budget
        def timeout(seconds):
            return EliminationError(
                f"elimination of {law.name} did not finish within its budget of {seconds} s (stopped at the "
                f"deadline); the Dyson (fixed-point) route still works: use law.cauchy / law.density, or give "
                f"a larger budget_seconds"
            )

        out = call_with_deadline(cauchy_polynomial, (law, symbolic, None), seconds=budget_seconds,
                                 on_timeout=timeout)
        per_law[symbolic] = out
        return out
    t0 = time.perf_counter()
    elim = eliminate(law, symbolic=symbolic, budget_seconds=budget_seconds)
    sym = elim.symbolized
    t1 = time.perf_counter()
    keep = set(elim.poly.free_symbols) - {G_SYM, Z_SYM}
    values = {s: v for s, v in sym.values.items() if s in keep}
    for s in keep:
        if s not in values:
            raise EliminationError(f"internal error: no value for the symbol {s} of the polynomial")
    subst = {s: e for s, e in sym.substitutions.items() if s in keep}
    checks, matching, order = _check_factors(law, elim, values)
    if elim.kept not in matching:
        raise EliminationError(
            f"the factor of {law.name} that vanishes at the Dyson solution does not reproduce the exact "
            f"moments: {checks[elim.kept]}"
        )
    if len(matching) > 1:
        raise EliminationError(f"{len(matching)} factors of the polynomial of {law.name} match the moments")
    gens = (G_SYM, Z_SYM)
    poly = _normalize(elim.factors[elim.kept], gens)
    others = [i for i in range(len(elim.factors)) if i != elim.kept]
    reason = (
        f"kept factor {elim.kept} of {len(elim.factors)} (degree {poly.degree(G_SYM)} in g, "
        f"{poly.degree(Z_SYM)} in {'w' if law.law != 'eigenvalues' else 'z'}): the only one that vanishes at "
        f"the Dyson solution and has the branch g = 1/z + m_1/z^2 + ... with the exact moments "
        f"(checked through order {order - 1})"
    )
    if others:
        reason += "; " + "; ".join(f"factor {i} {checks[i]}" for i in others)
    t2 = time.perf_counter()
    timing = dict(elim.times)
    timing["checks"] = t2 - t1
    timing["total"] = t2 - t0
    out = CauchyPolynomial(
        poly, G_SYM, Z_SYM, law.law, symbolic, subst, values, elim.factors, elim.kept, checks, reason,
        order, elim.reduced, elim.steps, timing,
    )
    per_law[symbolic] = out
    return out


class _Constant(sympy.NumberSymbol):
    """An exact real constant known by an expression (``c2 = e^{β²} - 1 - β²``), shown by name.

    sympy's domains treat it as one transcendental generator (as they treat
    ``E``), which keeps ``AlgebraicLaw``'s exact series working where the
    expression itself (``exp(64/25)``) confuses the domain construction; its
    numerical value is the expression evaluated at the precision asked for.
    """

    is_real = True
    is_number = True
    is_commutative = True
    __slots__ = ("_name", "_expr")

    def __new__(cls, name, expr):
        obj = super().__new__(cls)
        obj._name = str(name)
        obj._expr = sympy.sympify(expr)
        return obj

    def __getnewargs__(self):
        return (self._name, self._expr)

    def _hashable_content(self):
        return (self._name, self._expr)

    def _as_mpf_val(self, prec):
        digits = int(prec * 0.30103) + 10
        return sympy.Float(self._expr.evalf(digits), digits)._as_mpf_val(prec)

    def _sympystr(self, printer):
        return self._name

    @property
    def expression(self):
        return self._expr


def _transcendental(value):
    return bool(value.atoms(sympy.Function) or value.atoms(sympy.NumberSymbol))


def polynomial_law(law, budget_seconds=60):
    """The law's numeric ``Π`` as a :class:`~freeprob.AlgebraicLaw` (branch tracking, series).

    Symbols standing for transcendental values (``c2 = e - 2``) are replaced
    by their exact sympy values, which the numerics evaluate at any precision.
    """
    law = as_law_data(law)
    per_law = law.memo
    if "algebraic" not in per_law:
        cp = cauchy_polynomial(law, symbolic=False, budget_seconds=budget_seconds)
        vals = {s: (_Constant(s, v) if _transcendental(v) else v) for s, v in cp.values.items()}
        expr = sympy.expand(cp.poly.as_expr().xreplace(vals))
        per_law["algebraic"] = AlgebraicLaw(expr, G_SYM, Z_SYM)
    return per_law["algebraic"]


# --------------------------------------------------------------------------
# numeric values from the branch
# --------------------------------------------------------------------------

def _exact_point(z):
    """A user point, read exactly (floats through their shortest decimal string)."""
    return read_number(z, what="the point", real=False)


def polynomial_cauchy(law, z, dps=15):
    """``G(z)`` from the branch ``g ~ 1/z`` of ``Π``, verified to ``dps`` digits.

    For squared singular values ``z`` is the variable of ``P P^T``. On the real
    axis the boundary value ``G(x + i0)`` is returned.

    Raises
    ------
    ConvergenceError
        If the value cannot be certified (Newton correction above ``10^-dps``,
        wrong half plane, or unstable under a precision increase).
    DomainError
        At an atom.

    Examples
    --------
    >>> import freeprob as fp
    >>> law = fp.law_of(fp.find_model("wigner-semicircle"))
    >>> fp.fmt(polynomial_cauchy(law, 1j, dps=30), 20)     # (sqrt(5) - 1)/2 i
    '0 - 0.61803398874989484820j'
    """
    law = as_law_data(law)
    dps = check_dps(dps)
    return polynomial_law(law).cauchy(_exact_point(z), dps, method="polynomial")


def polynomial_density(law, x, dps=15):
    """The density ``-Im G(x + i0)/π`` from the branch of ``Π``, to ``dps`` digits.

    Exactly 0 where the branch is real (outside the support), and for
    ``x <= 0`` for squared singular values.

    Examples
    --------
    >>> import freeprob as fp
    >>> law = fp.law_of(fp.find_model("marchenko-pastur"))
    >>> fp.fmt(polynomial_density(law, 1, dps=30), 20)
    '0.42108439934779238984'
    """
    law = as_law_data(law)
    dps = check_dps(dps)
    xv = _exact_point(x)
    x0 = float(sympy.sympify(xv))
    if law.kind == "squared-singular-values" and (x0 < 0 or (x0 == 0 and law.law == law.kind)):
        return context(dps).mpf(0)
    return polynomial_law(law).density(xv, dps, method="polynomial")


# --------------------------------------------------------------------------
# support edges
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Edge:
    """A support edge, numerically and as an algebraic number.

    Attributes
    ----------
    value : mpf
        The edge to ``dps`` digits.
    side : str
        ``"left"`` (density positive to the right) or ``"right"``.
    minpoly : sympy.Poly or None
        Irreducible polynomial of the edge over ``QQ`` (None when ``Π`` has
        transcendental coefficients).
    interval : (Rational, Rational) or None
        An interval isolating the edge among the real roots of ``minpoly``.
    exact : sympy expression or None
        The edge as a sympy number (``CRootOf`` or rational).
    dps : int
    """

    value: object
    side: str
    minpoly: object
    interval: tuple
    exact: object
    dps: int


def _real_candidates(law, dps):
    """Sorted real roots of ``disc_g(Π) · lc_g(Π)`` as ``(mpf, exact, minpoly, interval)``."""
    P = sympy.Poly(polynomial_law(law).poly.as_expr(), G_SYM)
    disc = sympy.discriminant(P.as_expr(), G_SYM)
    crit = sympy.Poly(sympy.expand(disc * P.LC()), Z_SYM)
    work = dps + guard_digits(dps)
    ctx = context(work)
    out = []
    if crit.domain.is_QQ or crit.domain.is_ZZ:
        for f, _ in crit.factor_list()[1]:
            if f.degree() < 1:
                continue
            roots = f.real_roots(radicals=False)
            vals = [to_mpf(ctx, r if r.is_Rational else r.evalf(work + 5)) for r in roots]
            for r, val in zip(roots, vals):
                if r.is_Rational:
                    iv = (r, r)
                else:
                    # [v - d, v + d] with d = 10^-dps: contains the root (v is exact to
                    # work digits) and no other real root of the minimal polynomial
                    gap = min((abs(val - w) for w in vals if w != val), default=ctx.inf)
                    d = sympy.Rational(1, 10**dps)
                    while gap <= 4 * ctx.mpf(d.p) / d.q:
                        d /= 10**dps
                    vq = sympy.Rational(ctx.nstr(val, work, strip_zeros=False, min_fixed=-ctx.inf, max_fixed=ctx.inf))
                    iv = (vq - d, vq + d)
                out.append((val, r, f.monic(), iv))
    else:
        # transcendental coefficients: root isolation in ball arithmetic (python-flint
        # acb_poly.roots), repeated with more digits as a check
        import flint

        for f, _ in crit.factor_list()[1]:
            if f.degree() < 1:
                continue
            found = []
            for extra in (0, 20):
                digits = 2 * (work + extra) + 20
                with flint_precision(int(digits * 3.33) + 64):
                    coeffs = []
                    for a in reversed(f.all_coeffs()):
                        v = sympy.re(sympy.sympify(a)).evalf(digits + 10)
                        coeffs.append(flint.arb(str(v), f"1e-{digits}") * 1 if v != 0 else flint.arb(0))
                    try:
                        roots = flint.acb_poly(coeffs).roots(tol=flint.arb(10) ** (-(work + extra)))
                    except ValueError as exc:
                        raise ConvergenceError(f"{law.name}: the real roots of the discriminant could not be "
                                               f"isolated ({exc})", dps=dps) from None
                    c = context(work + extra)
                    real = [r.real.mid() for r in roots if r.imag.contains(0)]
                    found.append(sorted(c.mpf(x.str(work + extra + 5, radius=False)) for x in real))
            if len(found[0]) != len(found[1]) or any(
                abs(a - b) > ctx.mpf(10) ** (-dps - 2) * max(1, abs(b)) for a, b in zip(*found)
            ):
                raise ConvergenceError(f"the real roots of the discriminant of {law.name} are not stable")
            out.extend((ctx.mpf(r), None, None, None) for r in found[0])
    out.sort(key=lambda t: t[0])
    uniq = []
    for item in out:
        if uniq and abs(item[0] - uniq[-1][0]) <= ctx.mpf(10) ** (-work + 5) * max(1, abs(item[0])):
            continue
        uniq.append(item)
    return uniq, ctx


def _mid_density(law, a, b):
    if law.kind == "squared-singular-values" and b <= 0:
        return 0
    x = (a + b) / 2
    return polynomial_density(law, sympy.Rational(str(context(30).nstr(x, 25))), dps=15)


def polynomial_edges(law, dps=15):
    """Support edges: real roots of the discriminant where the density switches on or off.

    Candidates are the real roots of ``disc_g(Π) · lc_g(Π)``. Between two
    consecutive candidates the branch cannot leave the real axis, so the
    density is either positive or zero on the whole interval; it is evaluated
    (by branch tracking) on both sides of every candidate, and the candidate
    is an edge when exactly one side carries density.

    Returns
    -------
    tuple of Edge
        Sorted. A hard edge at 0 of a squared-singular-value law is reported
        as 0.

    Examples
    --------
    >>> import freeprob as fp
    >>> law = fp.law_of(fp.find_model("wigner-semicircle"))
    >>> [(fp.fmt(e.value, 5), e.side, e.minpoly.as_expr()) for e in polynomial_edges(law, dps=20)]
    [('-2.0000', 'left', z + 2), ('2.0000', 'right', z - 2)]
    """
    law = as_law_data(law)
    dps = check_dps(dps)
    cands, ctx = _real_candidates(law, dps)
    if not cands:
        return ()
    pts = [c[0] for c in cands]
    far = 1 + max(abs(p) for p in pts)
    bounds = [pts[0] - far] + pts + [pts[-1] + far]
    if law.kind == "squared-singular-values":
        bounds[0] = min(bounds[0], ctx.mpf(-1))
    pos = [_mid_density(law, a, b) > 0 for a, b in zip(bounds, bounds[1:])]
    if pos[0] or pos[-1]:
        raise ConvergenceError(f"{law.name}: positive density beyond the outermost candidate edge")
    out = []
    res = context(dps)
    for i, (val, is_exact, minpoly, iv) in enumerate(cands):
        left, right = pos[i], pos[i + 1]
        if left == right:
            continue
        out.append(Edge(res.mpf(val), "left" if right else "right", minpoly, iv, is_exact, dps))
    return tuple(out)


def polynomial_support(law, dps=15):
    """Support intervals ``[(a, b), ...]`` (mpf at ``dps`` digits) from :func:`polynomial_edges`."""
    law = as_law_data(law)
    edges = polynomial_edges(law, dps)
    out, start = [], None
    for e in edges:
        if e.side == "left":
            start = e.value
        elif start is not None:
            out.append((start, e.value))
            start = None
    return out


# --------------------------------------------------------------------------
# atoms
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class Atom:
    """An atom of the law.

    Attributes
    ----------
    x, mass : mpf
        Location and mass to ``dps`` digits.
    x_exact, mass_exact : sympy numbers
        The same exactly (rational or ``CRootOf``), None with transcendental coefficients.
    dps : int
    """

    x: object
    mass: object
    x_exact: object
    mass_exact: object
    dps: int


def _pole_coefficients(P, z0):
    """Nonzero ``h`` with a branch ``g ~ h/(z - z0)`` of ``Π = 0`` (Newton polygon, slope one)."""
    t, h = sympy.Dummy("t"), sympy.Dummy("h")
    Q = sympy.Poly(sympy.expand(P.as_expr().xreplace({Z_SYM: z0 + t})), G_SYM, t)
    terms = Q.terms()
    e = min(b - a for (a, b), _ in terms)
    H = sympy.Poly(sum(c * h**a for (a, b), c in terms if b - a == e), h)
    if len([1 for (a, b), _ in terms if b - a == e]) < 2:
        return []
    H = sympy.Poly(sympy.cancel(H.as_expr() / h ** min(m[0] for m in H.monoms())), h)
    return [r for r in sympy.Poly(H, h).all_roots(radicals=False) if r != 0]


def polynomial_atoms(law, dps=15):
    """Atoms: poles ``G ~ m/(z - z0)`` of the branch of ``Π``, with exact masses.

    The locations are real roots of the leading coefficient ``lc_g(Π)``; at
    each, the slope-one edge of the Newton polygon of ``Π`` gives the possible
    masses exactly, and the branch value ``iy G(z0 + iy)`` (``y = 10^-9``,
    by branch tracking) picks the mass of the law's branch, or shows that it
    has no pole there.

    Returns
    -------
    tuple of Atom

    Examples
    --------
    >>> import freeprob as fp
    >>> law = fp.law_of(fp.find_model("marchenko-pastur").with_values({"p": 2}))
    >>> [(fp.fmt(a.x, 5), a.mass_exact) for a in polynomial_atoms(law)]
    [('0', 1/2)]
    """
    law = as_law_data(law)
    dps = check_dps(dps)
    alg = polynomial_law(law)
    P = sympy.Poly(alg.poly.as_expr(), G_SYM, Z_SYM)
    lc = sympy.Poly(sympy.Poly(P.as_expr(), G_SYM).LC(), Z_SYM)
    if lc.degree() < 1:
        return ()
    if not (lc.domain.is_QQ or lc.domain.is_ZZ):
        raise DomainError(f"{law.name}: atoms are located exactly only for rational coefficients")
    work = dps + guard_digits(dps)
    ctx = context(work)
    out = []
    for f, _ in lc.factor_list()[1]:
        for z0 in f.real_roots(radicals=False):
            hs = _pole_coefficients(P, z0)
            if not hs:
                continue
            lo = context(40)
            y = lo.mpf(10) ** -12
            zq = lo.mpc(to_mpf(lo, z0), y)
            try:
                gval = alg.cauchy(zq, 30, method="polynomial")
            except (ConvergenceError, DomainError):
                continue
            m = lo.mpc(0, y) * lo.mpc(gval)
            if abs(m) < lo.mpf(10) ** -5:
                continue
            dist = [abs(m - lo.mpc(complex(sympy.N(hv, 20)))) for hv in hs]
            i = min(range(len(hs)), key=dist.__getitem__)
            if dist[i] > lo.mpf(10) ** -4 * max(1, abs(m)):
                raise ConvergenceError(
                    f"{law.name}: the branch has mass {lo.nstr(m, 8)} near x = {z0}, which matches none of "
                    f"the exact candidates {hs}", point=complex(zq), dps=dps)
            mass = hs[i]
            if not mass.is_real:
                raise ConvergenceError(f"{law.name}: non-real mass {mass} at x = {z0}", point=float(z0))
            res = context(dps)
            xv = to_mpf(ctx, z0 if z0.is_Rational else z0.evalf(work + 5))
            mv = to_mpf(ctx, mass if mass.is_Rational else mass.evalf(work + 5))
            if not 0 < mv <= 1:
                raise ConvergenceError(f"{law.name}: mass {mv} at x = {z0} is not in (0, 1]", point=float(z0))
            out.append(Atom(res.mpf(xv), res.mpf(mv), z0, mass, dps))
    return tuple(sorted(out, key=lambda a: a.x))


# --------------------------------------------------------------------------
# moments
# --------------------------------------------------------------------------

def exact_moments(law, k, symbolic=False):
    """Moments ``(m_1, ..., m_k)`` from the series of the branch of ``Π`` at infinity.

    Exact: rational numbers (or algebraic numbers, or expressions in ``e`` for
    transcendental parameters), or with ``symbolic=True`` rational functions
    of the ratios and parameters.

    Examples
    --------
    >>> import freeprob as fp
    >>> law = fp.law_of(fp.find_model("marchenko-pastur"))
    >>> [sympy.factor(m) for m in exact_moments(law, 3, symbolic=True)]
    [1, (n + p)/n, (n**2 + 3*n*p + p**2)/n**2]
    """
    law = as_law_data(law)
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise DomainError(f"the number of moments must be a non-negative integer, got {k!r}")
    cp = cauchy_polynomial(law, symbolic=symbolic)
    if k == 0:
        return ()
    ms = moments_at_infinity(cp.poly.as_expr(), G_SYM, Z_SYM, k)
    if cp.substitutions:
        ms = [sympy.sympify(m).xreplace(cp.substitutions) for m in ms]
    if not symbolic:
        ms = [sympy.expand(sympy.sympify(m).xreplace(cp.values)) if cp.values else m for m in ms]
    else:
        ms = [sympy.factor(m) for m in ms]
    return tuple(sympy.sympify(m) for m in ms)


def dyson_series_moments(law, k, symbolic=True):
    """Moments from the power series of the Dyson equation at infinity, over ``QQ(ratios, ...)``.

    An exact route independent of ``Π``: square roots in the coefficients
    become symbols ``t`` (as in the elimination), the series runs in the
    fraction field of the symbols, and ``t = sqrt(radicand)`` (and ``c2``) are
    substituted back at the end.

    Examples
    --------
    >>> import freeprob as fp
    >>> law = fp.law_of(fp.find_model("marchenko-pastur"))
    >>> dyson_series_moments(law, 3)
    (1, (n + p)/n, (n**2 + 3*n*p + p**2)/n**2)
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise DomainError(f"the number of moments must be a non-negative integer, got {k!r}")
    law = as_law_data(law)
    sym = symbolize(law, symbolic)
    system = sym.system(law.system if symbolic else law.numeric_system)
    coeffs = law.series_moments(system, k)
    if coeffs is None:
        raise DomainError(f"the coefficients of {law.name} are not rational functions of symbols")
    back = {t: sympy.sqrt(rad) for t, rad in sym.roots}
    out = []
    for c in coeffs:
        m = sympy.sympify(c).xreplace(back)
        if sym.substitutions:
            m = m.xreplace({s: e for s, e in sym.substitutions.items() if s not in back})
        out.append(sympy.factor(sympy.radsimp(sympy.cancel(m))))
    return tuple(out)
