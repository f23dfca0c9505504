"""Moments from the Dyson equation as a power series at infinity.

With ``w = 1/z`` and ``D_w = diag(w on the u rows, 1 elsewhere)``, the Dyson
equation ``G = (Lambda - B - eta(G))^{-1}`` reads ``N(w) G(w) = D_w`` with
``N(w) = E_u + D_w C(w)``, ``C = -B - eta(G)``. Order 0 is a small fixed point
(solved by iteration, which terminates for the nilpotent pencils freeprob
builds); each higher order is one linear solve with a fixed matrix. The
``u``-row entries of ``G`` give the moments: ``G(z) = sum m_k z^(-k-1)``.

Arithmetic is exact (sympy domains: rationals or algebraic number fields)
when every coefficient of the system is algebraic, and otherwise in flint's
ball arithmetic at the precision of an mpmath context (:func:`_ball_series`).
"""

import numpy as np
import sympy
from sympy.polys.constructor import construct_domain

from .._errors import ConvergenceError
from .._precision import check_dps, context, flint_precision, guard_digits

__all__ = ["series_coefficients", "series_moments", "system_domain"]


def system_domain(system, symbolic=False):
    """A sympy domain holding every coefficient of ``system`` exactly, or None.

    With ``symbolic=True`` a system whose coefficients are rational functions
    of symbols (over the rationals or an algebraic number field) gets the
    fraction field ``K(symbols)``; square roots of symbols are not rational
    functions (replace them by symbols first).
    """
    coeffs = []
    for m in system.b:
        coeffs.extend(m)
    coeffs.extend(c for *_, c in system.eta)
    coeffs = [sympy.nsimplify(c) if c.is_Float else c for c in map(sympy.sympify, coeffs)]
    try:
        dom, _ = construct_domain(coeffs, extension=True, field=bool(symbolic))
    except (sympy.polys.polyerrors.PolynomialError, NotImplementedError, ValueError):
        return None
    if dom.is_QQ or dom.is_ZZ or dom.is_AlgebraicField:
        return dom
    if symbolic and (dom.is_FractionField or dom.is_PolynomialRing):
        ground = dom.domain
        if ground.is_QQ or ground.is_ZZ or ground.is_AlgebraicField:
            return dom.get_field()
    return None


def _inverse(a, zero, one):
    """Gauss-Jordan inverse of a square list-of-lists matrix (exact arithmetic: the first nonzero pivot)."""
    n = len(a)
    m = [list(row) + [one if i == j else zero for j in range(n)] for i, row in enumerate(a)]
    for col in range(n):
        piv = next((r for r in range(col, n) if m[r][col] != zero), None)
        if piv is None:
            raise ZeroDivisionError("singular matrix")
        m[col], m[piv] = m[piv], m[col]
        p = m[col][col]
        inv_p = one / p
        m[col] = [x * inv_p for x in m[col]]
        for r in range(n):
            if r != col and m[r][col] != zero:
                f = m[r][col]
                m[r] = [x - f * y for x, y in zip(m[r], m[col])]
    return [row[n:] for row in m]


def _matmul(a, b, zero):
    n, k, p = len(a), len(b), len(b[0]) if b else 0
    out = []
    # truthiness, not ``!= zero``: far cheaper for domain elements
    for i in range(n):
        ai = a[i]
        nz = [t for t in range(k) if ai[t]]
        row = []
        for j in range(p):
            s = zero
            for t in nz:
                btj = b[t][j]
                if btj:
                    s = s + ai[t] * btj
            row.append(s)
        out.append(row)
    return out


def _add(a, b):
    # a zero term is skipped (truthiness, as in _matmul): exact field arithmetic costs the same for a zero
    return [[x + y if y else x for x, y in zip(ra, rb)] for ra, rb in zip(a, b)]


def _sub(a, b):
    return [[x - y if y else x for x, y in zip(ra, rb)] for ra, rb in zip(a, b)]


#: The move of a plain order-0 iteration below which chord steps take over (numeric series only,
#: :func:`_ball_series`).
CHORD_SWITCH = 1e-4


def series_coefficients(system, order, ctx=None, domain=None):
    """Coefficients ``G_0, ..., G_order`` (of ``w^k``) of the ``u``-row outputs.

    Parameters
    ----------
    system : DysonSystem
        Fully substituted.
    order : int
    ctx : mpmath context, optional
        Numeric arithmetic in this context; by default exact when possible.
    domain : sympy domain, optional
        Exact arithmetic in this domain (for instance ``system_domain(system,
        symbolic=True)``, a fraction field, for coefficients with symbols).

    Returns
    -------
    coeffs : list of list
        ``coeffs[k][a]`` is the coefficient of ``w^k`` of output ``a``
        (sympy numbers when exact, mpc otherwise).
    exact : bool
    """
    dom = None if ctx is not None else (domain if domain is not None else system_domain(system))
    if dom is None and ctx is None:
        raise ValueError("the system has non-algebraic coefficients: give an mpmath context")
    if dom is None:
        return _ball_series(system, order, ctx), False
    converted = {}  # a coefficient repeats across blocks; placing an algebraic number in the field is slow

    def conv(c):
        c = sympy.sympify(c)
        if c not in converted:
            converted[c] = _to_field(dom, sympy.nsimplify(c) if c.is_Float else c, converted)
        return converted[c]

    zero, one = dom.zero, dom.one
    r = system.n_unknowns
    try:
        spaces = system.block_data(conv)
    except (sympy.polys.polyerrors.CoercionFailed, sympy.polys.polyerrors.PolynomialError) as exc:
        # sympy places algebraic numbers in a common field by PSLQ, which fails
        # for extreme values (a ratio of 1e-207 gave "nan is not in any domain")
        raise ConvergenceError(f"the exact series could not place the coefficients in one algebraic number field "
                               f"(sympy: {exc}); ask for moments with dps=... instead") from None

    def eta(s, g):
        k = spaces[s][0]
        m = [[zero] * k for _ in range(k)]
        for i, j, kk, c in spaces[s][3]:
            if g[kk]:
                m[i][j] = m[i][j] + c * g[kk]
        return m

    def read(gs):
        out = [zero] * r
        for s, (k, u, b, terms, reads) in enumerate(spaces):
            for kk, p, q in reads:
                out[kk] = gs[s][p][q]
        return out

    def c0(s, g):
        k, u, b, _, _ = spaces[s]
        e = eta(s, g)
        return [[-b[i][j] - e[i][j] for j in range(k)] for i in range(k)]

    def n0(s, g):
        k, u, *_ = spaces[s]
        c = c0(s, g)
        return [[(one if i == j else zero) if u[i] else c[i][j] for j in range(k)] for i in range(k)]

    def er(s):
        k, u, *_ = spaces[s]
        return [[(one if (i == j and not u[i]) else zero) for j in range(k)] for i in range(k)]

    def unit(m):
        v = [zero] * r
        v[m] = one
        return v

    def order0(g):
        """``N0(g)^{-1}`` per space, and ``G_0`` per space for it."""
        inv = [_inverse(n0(s, g), zero, one) for s in range(len(spaces))]
        return inv, [_matmul(inv[s], er(s), zero) for s in range(len(spaces))]

    def derivative(inv, gs):
        """``K[:, m] = read(N0^{-1} E_r T_m G_0)``: the derivative of the order-0 map ``g -> read(G_0(g))``."""
        kmat = [[zero] * r for _ in range(r)]
        for m in range(r):
            gm = unit(m)
            cols = read([_matmul(inv[s], _matmul(er(s), _matmul(eta(s, gm), gs[s], zero), zero), zero)
                         for s in range(len(spaces))])
            for a in range(r):
                kmat[a][m] = cols[a]
        return kmat

    def one_minus_inverse(kmat):
        return _inverse([[(one if a == b else zero) - kmat[a][b] for b in range(r)] for a in range(r)], zero,
                        one) if r else []

    # order 0: fixed point, by iteration until the value repeats (the nilpotent pencils of polynomials get
    # there in a few steps)
    g0 = [zero] * r
    for it in range(500):
        n0inv, gs0 = order0(g0)
        new = read(gs0)
        done = new == g0
        g0 = new
        if done:
            break
    else:
        raise ConvergenceError("the series at infinity did not settle at order 0 after 500 iterations")
    n0inv, gs0 = order0(g0)
    G = [gs0]
    gser = [read(G[0])]
    C = [[c0(s, g0) for s in range(len(spaces))]]
    ik = one_minus_inverse(derivative(n0inv, G[0]))

    def eu(s):
        k, u, *_ = spaces[s]
        return [[(one if (i == j and u[i]) else zero) for j in range(k)] for i in range(k)]

    def rows_of(s, on_u, off_u):
        """The rows of ``on_u`` on the ``u`` rows and of ``off_u`` elsewhere (``E_u A + E_r B`` without
        products; None stands for a zero matrix)."""
        k, u, *_ = spaces[s]
        empty = [zero] * k
        return [((on_u[i] if on_u is not None else empty) if u[i] else (off_u[i] if off_u is not None else empty))
                for i in range(k)]

    # N_j = E_r C_j + E_u C_(j-1) (a choice of rows), per space, for j = 1, 2, ...: each is used by every later order
    merged = [None]
    for order_k in range(1, order + 1):
        xs = []
        for s in range(len(spaces)):
            k = spaces[s][0]
            rhs = eu(s) if order_k == 1 else [[zero] * k for _ in range(k)]
            rhs = _sub(rhs, _matmul(rows_of(s, C[order_k - 1][s], None), G[0][s], zero))
            for j in range(1, order_k):
                rhs = _sub(rhs, _matmul(merged[j][s], G[order_k - j][s], zero))
            xs.append(_matmul(n0inv[s], rhs, zero))
        rx = read(xs)
        gk = [sum((ik[a][b] * rx[b] for b in range(r)), zero) for a in range(r)]
        gks = [_add(xs[s], _matmul(n0inv[s], rows_of(s, None, _matmul(eta(s, gk), G[0][s], zero)), zero))
               for s in range(len(spaces))]
        G.append(gks)
        gser.append(gk)
        C.append([[[-x for x in row] for row in eta(s, gk)] for s in range(len(spaces))])
        merged.append([rows_of(s, C[order_k - 1][s], C[order_k][s]) for s in range(len(spaces))])
    outs = [[G[k][s][i][i] for s, i in system.u] for k in range(order + 1)]
    return [[dom.to_sympy(x) for x in row] for row in outs], True


def _ball_series(system, order, ctx):
    """:func:`series_coefficients` in numbers: ``coeffs[k][a]`` as mpc of ``ctx``.

    The same recursion on flint's ``acb_mat`` (ball arithmetic in C) at the
    context's precision plus 20 bits; the balls' midpoints are returned (the
    caller checks them against a second computation with more digits, as
    :func:`series_moments` does). The order-0 fixed point is iterated until a
    step moves by less than :data:`CHORD_SWITCH`, then finished by chord
    steps ``g <- g + (I - K)^{-1} (Phi(g) - g)``, ``K`` the derivative at that
    point: each gains about as many digits as the distance to the fixed point
    has (a resolvent's map contracts by about 0.4 a step, 80 plain steps to 35
    digits). The point reached must attract plain iteration (``K`` of
    spectral radius below 1 there), else plain iteration alone is run again:
    a chord step from a slowly moving iterate could reach another root. Mpmath's matrices in Python took 0.35 s of deep-features-tanh's
    law for 16 moments.
    """
    import flint

    r = system.n_unknowns
    tol = ctx.mpf(10) ** (-(ctx.dps - 3))  # an mpf: a float would underflow to 0 beyond 300 digits
    switch = ctx.mpf(CHORD_SWITCH)
    with flint_precision(ctx.prec + 20):
        values = {}  # a coefficient repeats across blocks (0 and 1 most of all): each is converted once

        def conv(c):
            if c not in values:
                values[c] = flint.acb(ctx.mpc(*[_mp(ctx, x) for x in sympy.sympify(c).as_real_imag()]))
            return values[c]

        spaces = system.block_data(conv)
        zero, one = flint.acb(0), flint.acb(1)

        def diagonal(flags):
            m = flint.acb_mat(len(flags), len(flags))
            for i, f in enumerate(flags):
                if f:
                    m[i, i] = one
            return m

        base = [flint.acb_mat(b) if k else flint.acb_mat(0, 0) for k, u, b, _, _ in spaces]
        er = [diagonal([not x for x in u]) for _, u, *_ in spaces]
        eu = [diagonal(u) for _, u, *_ in spaces]
        n_spaces = len(spaces)

        def eta(s, g):
            k, _, _, terms, _ = spaces[s]
            m = flint.acb_mat(k, k)
            for i, j, kk, c in terms:
                m[i, j] += c * g[kk]
            return m

        def read(gs):
            out = [zero] * r
            for s, (_, _, _, _, reads) in enumerate(spaces):
                for kk, p, q in reads:
                    out[kk] = gs[s][p, q]
            return out

        def c0(s, g):
            return (base[s] + eta(s, g)) * (-1)

        def order0(g):
            """``N0(g)^{-1} = (E_u + E_r C_0(g))^{-1}`` per space, and ``G_0 = N0^{-1} E_r`` for it."""
            try:
                inv = [(eu[s] + er[s] * c0(s, g)).mid().inv() for s in range(n_spaces)]
            except ZeroDivisionError:
                raise ZeroDivisionError("singular matrix") from None
            return inv, [inv[s] * er[s] for s in range(n_spaces)]

        def unit(m):
            return [one if a == m else zero for a in range(r)]

        def derivative(inv, gs):
            """``K[:, m] = read(N0^{-1} E_r T_m G_0)``: the derivative of the order-0 map ``g -> read(G_0(g))``."""
            k_mat = flint.acb_mat(r, r)
            for m in range(r):
                cols = read([inv[s] * (er[s] * (eta(s, unit(m)) * gs[s])) for s in range(n_spaces)])
                for a in range(r):
                    k_mat[a, m] = cols[a]
            return k_mat

        def one_minus_inverse(k_mat):
            return (diagonal([True] * r) - k_mat).mid().inv() if r else k_mat

        def size(x):
            return ctx.make_mpf(abs(x.mid()).mid()._mpf_)

        def fixed_point(chords):
            g0 = [zero] * r
            chord, last = None, None
            for _ in range(500):
                n0inv, gs0 = order0(g0)
                new = read(gs0)
                change = max([size(a - b) for a, b in zip(new, g0)] + [ctx.zero])
                if change < tol:
                    return new
                if chords and chord is None and change < switch:
                    chord = one_minus_inverse(derivative(n0inv, gs0))
                if chord is not None and (last is None or change < last):
                    step = chord * flint.acb_mat([[a - b] for a, b in zip(new, g0)])
                    new = [g + step[a, 0] for a, g in enumerate(g0)]
                elif chord is not None:
                    chord = None  # the chord steps stopped shrinking: plain iteration
                last = change
                g0 = [x.mid() for x in new]
            raise ConvergenceError("the series at infinity did not settle at order 0 after 500 iterations")

        def attracting(k_mat):
            """Whether the fixed point attracts plain iteration (spectral radius of ``K`` below 1): the one plain
            iteration from 0 approaches, and not another root of ``g = Phi(g)`` a chord step could reach."""
            if not r:
                return True
            k = np.array([[complex(k_mat[a, b].mid()) for b in range(r)] for a in range(r)])
            return bool(np.max(np.abs(np.linalg.eigvals(k))) < 1)

        g0 = fixed_point(chords=True)
        n0inv, gs0 = order0(g0)
        k_mat = derivative(n0inv, gs0)
        if not attracting(k_mat):
            g0 = fixed_point(chords=False)
            n0inv, gs0 = order0(g0)
            k_mat = derivative(n0inv, gs0)
        ik = one_minus_inverse(k_mat)
        G = [gs0]
        C = [[c0(s, g0) for s in range(n_spaces)]]
        merged = [None]  # N_j = E_r C_j + E_u C_(j-1) per space, built once and used by every later order
        for order_k in range(1, order + 1):
            xs = []
            for s in range(n_spaces):
                k = spaces[s][0]
                rhs = eu[s] if order_k == 1 else flint.acb_mat(k, k)
                rhs = rhs - eu[s] * (C[order_k - 1][s] * G[0][s])
                for j in range(1, order_k):
                    rhs = rhs - merged[j][s] * G[order_k - j][s]
                xs.append(n0inv[s] * rhs)
            rx = flint.acb_mat([[x] for x in read(xs)])
            gk_col = ik * rx
            gk = [gk_col[a, 0] for a in range(r)]
            G.append([xs[s] + n0inv[s] * (er[s] * (eta(s, gk) * G[0][s])) for s in range(n_spaces)])
            C.append([eta(s, gk) * (-1) for s in range(n_spaces)])
            merged.append([er[s] * C[order_k][s] + eu[s] * C[order_k - 1][s] for s in range(n_spaces)])
        return [[ctx.make_mpc((G[k][s][i, i].real.mid()._mpf_, G[k][s][i, i].imag.mid()._mpf_))
                 for s, i in system.u] for k in range(order + 1)]


def _to_field(dom, c, cache):
    """``c`` as an element of ``dom``, built from its sums, products and integer powers.

    Placing an algebraic number in a field (``dom.from_sympy``) computes its
    minimal polynomial and an isomorphism of fields, about 20 ms each: the
    coefficients of a system are few radicals (``sqrt(2)``, ``sqrt(6)``) in
    many combinations, so only those are placed, once each (``cache``), and the
    rest is exact arithmetic in the field.
    """
    if c in cache:
        return cache[c]
    if c.is_Rational:
        out = dom.from_sympy(c)
    elif c.is_Add or c.is_Mul:
        parts = [_to_field(dom, a, cache) for a in c.args]
        out = parts[0]
        for p in parts[1:]:
            out = out + p if c.is_Add else out * p
    elif c.is_Pow and c.exp.is_Integer and c.exp != 0:
        base = _to_field(dom, c.base, cache) ** abs(int(c.exp))
        out = dom.one / base if c.exp < 0 else base
    else:
        out = dom.from_sympy(c)
    cache[c] = out
    return out


def _mp(ctx, x):
    x = sympy.sympify(x)
    num = sympy.Float(x.evalf(ctx.dps + 5), ctx.dps + 5)
    return ctx.make_mpf(num._mpf_)


def series_moments(system, k, step=1, dps=None):
    """The moments ``m_1, ..., m_k`` from the series of output 0 at infinity.

    ``step`` is 1 when ``G = sum m_j z^(-j-1)`` (eigenvalues) and 2 for the
    hermitized variable of squared singular values (``G_11 = sum m_j
    zeta^(-2j-1)``). Exact sympy numbers when every coefficient is algebraic
    and ``dps`` is None; otherwise mpf values correct to ``10^-dps`` (default
    15; relative above 1, absolute below), checked by a second computation
    with 10 more digits; a moment below the working precision relative to the
    law's scale (``R^k``, ``R = max |m_j|^(1/j)``) is rounding noise of an
    exact 0 and is returned as 0.

    Raises
    ------
    ConvergenceError
        When a moment changes beyond ``10^-dps`` under the precision increase.
    """
    order = step * k + 1

    def pick(coeffs):
        return [coeffs[step * j + 1][0] for j in range(1, k + 1)]

    dom = system_domain(system) if dps is None else None
    if dom is not None:
        coeffs, _ = series_coefficients(system, order, domain=dom)
        return [sympy.nsimplify(x) if isinstance(x, sympy.Float) else sympy.simplify(x) for x in pick(coeffs)]
    dps = check_dps(dps or 15)
    work = dps + guard_digits(dps)
    c1, _ = series_coefficients(system, order, ctx=context(work))
    c2, _ = series_coefficients(system, order, ctx=context(work + 10))
    first, second = pick(c1), pick(c2)
    for a, b in zip(first, second):
        if abs(a - b) > 10.0 ** (-dps) * max(1, abs(b)):
            raise ConvergenceError(f"moment not stable under a precision increase ({a} vs {b})", dps=dps)
    # a moment below the working precision relative to the law's scale (R^k, R = max |m_j|^(1/j)) is rounding
    # noise of an exact 0 (an odd law's m_1 came out as -6.3e-30 and was printed as if it had 15 digits); a
    # small law keeps its small moments (R = 1e-4: m_4 = 2e-16)
    scale = max(abs(b) ** (context(work + 10).mpf(1) / j) for j, b in enumerate(second, start=1))
    noise = context(work + 10).mpf(10) ** (-(work - 5))
    return [a.real * 0 if abs(b) <= noise * scale ** j else a.real for j, (a, b) in enumerate(zip(first, second), 1)]
