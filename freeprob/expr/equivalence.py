"""Gaussian-equivalent coefficients of an entrywise nonlinearity.

For a function ``f`` applied entrywise to a standard Gaussian ``xi ~ N(0, 1)``
the linear model that shares the limiting spectrum of ``f`` applied to a
Gaussian random matrix is described by three numbers (Hermite coefficients):

* ``mu0 = E f(xi)``,
* ``mu1 = E xi f(xi)``,
* ``mu_star_sq = E f(xi)^2 - mu0^2 - mu1^2`` (the variance of the
  "nonlinear part", written ``c^2`` in docs/math.md section 6).

They are derived by integrating against the Gaussian weight
``exp(-x^2/2)/sqrt(2 pi)`` over the real line with :func:`sympy.integrate`,
never by hand; when SymPy cannot find a closed form (it returns an unevaluated
integral, raises, or exceeds a time budget; functions without Gaussian closed
forms such as tanh are not searched at all) the coefficient is computed by
mpmath quadrature at the requested precision and marked ``"numeric"``. At an
entry variance (:func:`entry_coefficients`, the coefficients of entrywise
nodes) such a coefficient is the number :class:`GaussianMean` of its
integrand, computed to the digits each later computation asks for.

For the normalized exponential ``f(x) = exp(beta x - beta^2/2)`` of softmax
attention the integration gives ``mu0 = 1``, ``mu1 = beta`` and
``mu_star_sq = exp(beta^2) - 1 - beta^2``.

Parsing of a nonlinearity given as a string, and of parameter values, is in
:mod:`freeprob._numbers`.
"""

import gc
import math
import signal
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import mpmath
import sympy
from sympy.core.symbol import Str

from .._errors import ConvergenceError, DomainError
from .._numbers import check_structure, parse_nonlinearity, read_number
from .._precision import check_dps, context, flint_precision, guard_digits, mp_to_str, to_mpf

__all__ = [
    "Coefficients",
    "EntryCoefficients",
    "GaussianMean",
    "numeric_text",
    "coefficient_value_text",
    "GaussianEquivalent",
    "entry_coefficients",
    "gaussian_equivalent",
]


class Coefficients(NamedTuple):
    """The three Gaussian-equivalent coefficients (or their methods, or values)."""

    mu0: object
    mu1: object
    mu_star_sq: object


# ----------------------------------------------------------------------------
# Time budget
# ----------------------------------------------------------------------------


class _Timeout(BaseException):
    """Raised by the alarm handler; a BaseException so sympy's ``except Exception`` cannot swallow it."""


def _within_budget(func, seconds):
    """Run ``func()``; raise :class:`_Timeout` after ``seconds`` (SIGALRM, main thread only).

    Outside the main thread, on platforms without ``SIGALRM``, or when an
    outer interval timer is already running, ``func`` runs without a budget.
    """
    usable = (
        seconds is not None
        and hasattr(signal, "SIGALRM")
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL)[0] == 0
    )
    if not usable:
        return func()
    if seconds <= 0:
        raise _Timeout

    def handler(signum, frame):
        # an exception raised inside a finalizer (a weakref callback or __del__ run by the garbage
        # collector in the middle of sympy's work) cannot propagate: it would be reported as unraisable
        # and the budget lost; try again a moment later, back in ordinary code
        f = frame
        while f is not None:
            if f.f_code.co_name == "__del__" or f.f_code.co_filename.endswith("weakref.py"):
                signal.setitimer(signal.ITIMER_REAL, 0.01)
                return
            f = f.f_back
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, handler)
    # no cyclic garbage collection inside the budget: its callbacks (gc.callbacks, finalizers)
    # run at arbitrary points, and an alarm raised in one of them is lost as "unraisable"
    collecting = gc.isenabled()
    gc.disable()
    try:
        signal.setitimer(signal.ITIMER_REAL, float(seconds))
        return func()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if collecting:
            gc.enable()


#: Functions whose Gaussian moments have no closed form: sympy searches for one until its budget runs out.
_NO_CLOSED_FORM = (sympy.tanh, sympy.coth, sympy.sech, sympy.csch, sympy.atan, sympy.acot)


def _without_closed_form(g, x):
    """Whether ``g`` applies a function of :data:`_NO_CLOSED_FORM` to an argument in ``x`` (and is not odd).

    ``E tanh(xi)^2``, ``E xi tanh(xi)`` and the like are not elementary (nor
    in the special functions sympy knows), so the symbolic attempt is skipped
    rather than timed out: the coefficient is computed by quadrature at once.
    """
    return any(isinstance(node, _NO_CLOSED_FORM) and x in node.free_symbols for node in sympy.preorder_traversal(g))


def _gaussian_moment(k):
    """``E xi^k`` for ``xi ~ N(0, 1)``: 0 for odd ``k``, ``(k - 1)!!`` for even ``k``."""
    return sympy.Integer(0) if k % 2 else sympy.factorial2(k - 1)


def _polynomial_times_exponential(g, x):
    """``E g(xi)`` when ``g`` is a sum of terms ``c x^k exp(a x + b)`` (``a``, ``b``, ``c`` free of ``x``), else None.

    Completing the square, ``E[xi^k e^(a xi)] = e^(a^2/2) E[(xi + a)^k]``
    (the moment generating function shifts the Gaussian's mean to ``a``),
    and the shifted moments expand binomially: an exact closed form at once,
    where :func:`sympy.integrate` takes a Meijer-G detour of about 0.1-0.2 s
    per integrand (the softmax coefficients ``E e^(s xi)``, ``E xi e^(s xi)``
    and ``E e^(2 s xi)``).
    """
    total = sympy.Integer(0)
    for term in sympy.Add.make_args(sympy.expand(g)):
        power, exponent, rest = 0, sympy.Integer(0), []
        for factor in sympy.Mul.make_args(term):
            if x not in factor.free_symbols:
                rest.append(factor)
            elif factor == x:
                power += 1
            elif factor.is_Pow and factor.base == x and factor.exp.is_Integer and factor.exp > 0:
                power += int(factor.exp)
            elif isinstance(factor, sympy.exp):
                exponent += factor.args[0]
            elif factor.is_Pow and isinstance(factor.base, sympy.exp) and factor.exp.is_Integer:
                exponent += factor.exp * factor.base.args[0]
            else:
                return None
        try:
            linear = sympy.Poly(sympy.expand(exponent), x)
        except sympy.PolynomialError:
            return None
        if linear.degree() > 1:
            return None
        a, b = linear.coeff_monomial(x), linear.coeff_monomial(1)
        shifted = sum(sympy.binomial(power, j) * a ** (power - j) * _gaussian_moment(j) for j in range(power + 1))
        total += sympy.Mul(*rest) * sympy.exp(a ** 2 / 2 + b) * shifted
    return total


@lru_cache(maxsize=256)
def _integrate_gaussian(g, x, budget):
    """``E g(xi)`` in closed form, or None; ``x`` is a real symbol, ``budget`` seconds or None.

    Tries, in order: parity (an odd integrand has mean 0), a polynomial times
    the exponential of a linear function (:func:`_polynomial_times_exponential`,
    exact by completing the square), then :func:`sympy.integrate` with
    ``conds='none'`` within the budget, then a simplification of the result
    with what is left of the budget.
    """
    if g.subs(x, -x) + g == 0 or sympy.expand(g.subs(x, -x) + g) == 0:
        return sympy.Integer(0)
    if _without_closed_form(g, x):
        return None
    direct = _polynomial_times_exponential(g, x)
    if direct is not None:
        return sympy.factor_terms(direct)
    start = time.monotonic()
    weight = sympy.exp(-x**2 / 2) / sympy.sqrt(2 * sympy.pi)
    try:
        result = _within_budget(
            lambda: sympy.integrate(g * weight, (x, -sympy.oo, sympy.oo), conds="none"), budget
        )
    except _Timeout:
        return None
    except Exception:  # sympy raises assorted errors (NotImplementedError, PolynomialError, ...)
        return None
    if not isinstance(result, sympy.Expr) or result.has(sympy.Integral):
        return None
    if result.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo) or x in result.free_symbols:
        return None
    remaining = None if budget is None else budget - (time.monotonic() - start)
    try:
        result = _within_budget(lambda: sympy.simplify(result), remaining)
    except _Timeout:
        pass
    return result


# ----------------------------------------------------------------------------
# Numerical quadrature in a local context
# ----------------------------------------------------------------------------


def _namespace(ctx):
    """Names used by sympy's mpmath printer, bound to the local context ``ctx``."""
    ns = {name: getattr(ctx, name) for name in dir(mpmath) if not name.startswith("_") and hasattr(ctx, name)}
    ns["mpmath"] = ctx
    return ns


def _gaussian_weighted(ctx, func):
    """``t -> func(t) exp(-t^2/2)`` in ``ctx``, without mpmath's slow path at the far nodes.

    Above 600 bits mpmath computes ``exp`` of an integral-valued argument as a
    power of ``e`` (thousands of squarings for the huge ``t^2/2`` of the far
    tanh-sinh nodes of an infinite interval: most of the time of a quadrature
    at 150 digits). Where ``t^2/2`` exceeds ``4 prec`` a 53-bit estimate of
    the node's term, ``|func(t)| exp(-t^2/2)`` times ``4 (1 + t^2)`` (a bound
    of the Jacobian of mpmath's map of a half-line), decides: below
    ``2^-(prec + 30)`` the term is 0 (the sum of all such terms changes the
    integral by far less than its working precision), else it is computed as
    everywhere else.
    """
    far = ctx.mpf(4 * ctx.prec)
    rough = context(15)
    tiny = rough.mpf(2) ** (-(ctx.prec + 30))

    def weighted(t):
        v = func(t)
        w = t * t / 2
        if w > far and v == 0:
            return v
        if w > far and rough.mpf(abs(v)) * rough.exp(-rough.mpf(w)) * 4 * (1 + rough.mpf(t) ** 2) < tiny:
            return ctx.zero
        return v * ctx.exp(-w)

    return weighted


def _kinks(g, x):
    """Real points where ``g`` (a function of ``x`` only) may fail to be smooth."""
    pieces = []
    for node in sympy.preorder_traversal(g):
        if isinstance(node, (sympy.Abs, sympy.Heaviside, sympy.sign)):
            pieces.append(node.args[0])
        elif isinstance(node, (sympy.Max, sympy.Min)):
            args = node.args
            pieces.extend(a - b for i, a in enumerate(args) for b in args[i + 1:])
    points = set()
    for p in pieces:
        if x not in p.free_symbols:
            continue
        try:
            poly = sympy.Poly(p, x)
        except sympy.PolynomialError:
            continue
        if poly.degree() > 4:
            continue
        for r in sympy.Poly(poly, x).real_roots():
            points.add(r)
    return sorted(points, key=lambda r: float(r))


#: Functions bounded by 1 in absolute value on the real line (their argument's growth does not matter).
_BOUNDED = (sympy.tanh, sympy.sin, sympy.cos, sympy.erf, sympy.sech, sympy.Heaviside, sympy.sign)


def _growth(g, x):
    """``(C, d)`` with ``|g(t)| <= C (1 + |t|)^d`` for every real ``t``, or None when no such bound is read
    off the expression (exponentials, negative powers, functions not known to be bounded).

    Read off the expression tree: a sum adds the constants and keeps the largest
    power, a product multiplies both, a positive power ``p`` raises the constant
    to ``p`` and multiplies the power by ``p``; tanh, sin, cos, erf, sech, sign
    and Heaviside are at most 1 and atan at most ``pi/2``, whatever their
    argument; ``|a|``, ``max`` and ``min`` are bounded as their arguments.
    ``C`` is an mpf rounded up (30 digits and a factor 2 of margin).
    """
    ctx = context(30)

    def bound(e):
        if x not in e.free_symbols:
            try:
                v = ctx.mpf(str(sympy.N(sympy.Abs(e), 30)))
            except (TypeError, ValueError):
                return None
            return (v, 0) if ctx.isfinite(v) else None
        if e == x:
            return ctx.one, 1
        if isinstance(e, _BOUNDED):
            return ctx.one, 0
        if isinstance(e, sympy.atan):
            return ctx.pi / 2, 0
        if isinstance(e, (sympy.Abs, sympy.re, sympy.im)):
            return bound(e.args[0])
        if isinstance(e, (sympy.Add, sympy.Max, sympy.Min)):
            parts = [bound(a) for a in e.args]
            if any(p is None for p in parts):
                return None
            return ctx.fsum(p[0] for p in parts), max(p[1] for p in parts)
        if isinstance(e, sympy.Mul):
            parts = [bound(a) for a in e.args]
            if any(p is None for p in parts):
                return None
            return ctx.fprod(p[0] for p in parts), sum(p[1] for p in parts)
        if isinstance(e, sympy.Pow) and x not in e.exp.free_symbols and e.exp.is_number:
            p = sympy.Rational(e.exp) if e.exp.is_Rational else None
            if p is None or p < 0:
                return None
            base = bound(e.base)
            if base is None:
                return None
            return ctx.power(base[0], ctx.mpf(p.p) / p.q), base[1] * p
        return None

    out = bound(g)
    if out is None:
        return None
    return 2 * out[0], sympy.Rational(out[1])


def _body_half_width(growth, work):
    """A half-width ``L`` with both Gaussian tails of ``g`` below ``10^-(work + 5)``: ``(L, tail bound)``.

    With ``|g(t)| <= C (1 + |t|)^d`` and ``L >= max(1, sqrt(2 d))`` (where
    ``(1 + t)^d e^(-t^2/4)`` decreases for ``t >= L``),
    ``int_L^inf |g| e^(-t^2/2) dt <= C (1 + L)^d e^(-L^2/4) int_L^inf e^(-t^2/4) dt
    <= 2 C (1 + L)^d e^(-L^2/2) / L``; both tails, divided by ``sqrt(2 pi)``,
    give the bound returned.
    """
    c, d = growth
    ctx = context(30)
    d = ctx.mpf(d.p) / d.q

    def tail(L):
        return 4 * c * (1 + L) ** d * ctx.exp(-L * L / 2) / (L * ctx.sqrt(2 * ctx.pi))

    target = ctx.mpf(10) ** (-(work + 5))
    L = max(ctx.one, ctx.sqrt(2 * d), ctx.sqrt(2 * (work + 5) * ctx.ln(10)))
    while tail(L) > target:
        L *= ctx.mpf(1.05)
    return L, tail(L)


#: Per thread, the mpmath context of each quadrature precision: tanh-sinh nodes are cached in the context,
#: so the integrands of one law (tanh, t tanh, tanh^2 at a few precisions) share them.
_QUAD_CONTEXTS = threading.local()


def _quad_context(work):
    cache = getattr(_QUAD_CONTEXTS, "by_digits", None)
    if cache is None:
        cache = _QUAD_CONTEXTS.by_digits = {}
    if work not in cache:
        cache[work] = context(work)
    return cache[work]


#: The trapezoidal rule gives up (tanh-sinh quadrature takes over) beyond this many nodes.
TRAPEZOID_NODES = 10000


#: sympy functions the ball-arithmetic integrand (:func:`_arb_integrand`) evaluates, by their name in flint's arb.
_ARB_FUNCTIONS = {sympy.exp: "exp", sympy.tanh: "tanh", sympy.sin: "sin", sympy.cos: "cos", sympy.atan: "atan",
                  sympy.erf: "erf", sympy.sinh: "sinh", sympy.cosh: "cosh", sympy.sech: "sech"}


def _arb_integrand(g, x, digits):
    """``g`` (in ``x`` only) as a function of one flint ``arb``, or None when ``g`` holds something else.

    Sums, products, integer powers, ``x``, numbers (an ``x``-free subexpression
    is evaluated by sympy to ``digits + 10`` digits and entered exactly as the
    binary value of that) and the functions of :data:`_ARB_FUNCTIONS`. Flint's
    ball arithmetic runs in C: a node of tanh's trapezoidal rule at 100 digits
    costs about 3 microseconds, some fifteen times mpmath.
    """
    import flint  # a compiled dependency, loaded where ball arithmetic is used

    def number(c):
        sign, man, exp, _ = sympy.Float(c.evalf(digits + 10), digits + 10)._mpf_
        value = flint.arb(int(man) * (-1 if sign else 1)) * flint.arb(2) ** int(exp)
        return lambda t: value

    def build(e):
        if e == x:
            return lambda t: t
        if x not in e.free_symbols:
            return number(e) if e.is_number and e.is_real else None
        if e.is_Add or e.is_Mul:
            parts = [build(a) for a in e.args]
            if any(p is None for p in parts):
                return None
            first, rest = parts[0], parts[1:]
            if e.is_Add:
                def add(t):
                    out = first(t)
                    for q in rest:
                        out = out + q(t)
                    return out
                return add

            def mul(t):
                out = first(t)
                for q in rest:
                    out = out * q(t)
                return out
            return mul
        if e.is_Pow and e.exp.is_Integer:
            base, n = build(e.base), int(e.exp)
            return None if base is None else (lambda t: base(t) ** n)
        name = _ARB_FUNCTIONS.get(e.func)
        if name is not None and len(e.args) == 1:
            inner = build(e.args[0])
            return None if inner is None else (lambda t: getattr(inner(t), name)())
        return None

    return build(g)


def _node_sums(g, x):
    """``sums(digits, j, ks)``: ``sum_k g(t_k) exp(-t_k^2/2)`` over ``t_k = k 2^-j``, ``k`` in ``ks``, as an
    mpf of the quadrature context at ``digits`` (None when a value is not finite).

    In flint's ball arithmetic when ``g`` compiles to it (:func:`_arb_integrand`;
    the ball's midpoint is returned, exactly, when its radius is below
    ``10^-(digits + 5)`` of ``max(1, |sum|)``, else the sum is made again in
    mpmath), otherwise by mpmath in the context (lambdified).
    """
    compiled = {}

    def by_flint(digits, j, ks):
        import flint

        ctx = _quad_context(digits)
        with flint_precision(ctx.prec + 60):
            if digits not in compiled:
                compiled[digits] = _arb_integrand(g, x, digits)
            f = compiled[digits]
            if f is None:
                return by_mpmath(digits, j, ks)
            step = flint.arb(2) ** (-j)
            total = flint.arb(0)
            for k in ks:
                t = step * k
                total += f(t) * (-(t * t) / 2).exp()
            if not total.is_finite() or total.rad() > max(abs(total.mid()), 1) * flint.arb(10) ** (-(digits + 5)):
                wide = True
            else:
                wide = False
                man, exp = total.mid().man_exp()
        if wide:  # the ball lost too much to rounding (or overflowed): the same sum in mpmath
            return by_mpmath(digits, j, ks)
        return ctx.make_mpf(mpmath.libmp.from_man_exp(int(man), int(exp)))

    lambdified = {}

    def by_mpmath(digits, j, ks):
        ctx = _quad_context(digits)
        if digits not in lambdified:
            lambdified[digits] = sympy.lambdify(x, g, modules=[_namespace(ctx), "mpmath"])
        func = lambdified[digits]
        step = ctx.ldexp(ctx.one, -j)
        out = ctx.fsum(func(k * step) * ctx.exp(-(k * step) ** 2 / 2) for k in ks)
        return out if ctx.isfinite(out) else None

    return by_flint


def _trapezoid_expectation(g, x, dps, growth):
    """``E g(xi)`` by the trapezoidal rule on the finite body, or None when it does not settle.

    For an integrand analytic in a strip around the real axis and decaying like
    a Gaussian the trapezoidal rule converges exponentially in ``1/h``, at a
    few microseconds a node in ball arithmetic (:func:`_node_sums`; tanh's
    coefficients at 150 digits: about 1000 nodes, where tanh-sinh quadrature
    takes several times as long). The
    step is halved from ``1/2`` at ``dps + 2 guard`` digits until two
    successive sums agree to ``10^-(dps + 5)`` (after at least two halvings);
    the sum with the previous step is then recomputed at ``dps + guard``
    digits and must agree with the last to ``10^-dps`` (relative above 1), the
    check of two precisions :func:`_quad_expectation` makes. The tails beyond
    the body are below ``10^-(work + 5)`` (:func:`_body_half_width`). An
    integrand that is not smooth enough (a kink, a pole near the axis) does
    not settle within :data:`TRAPEZOID_NODES` nodes: None.
    """
    low_digits, high_digits = dps + guard_digits(dps), dps + 2 * guard_digits(dps)
    ctx = _quad_context(high_digits)
    half = ctx.mpf(_body_half_width(growth, high_digits)[0])
    sums_at = _node_sums(g, x)
    j = 1  # the step is 2^-j
    try:
        n = int(half * 2 ** j)
        first = sums_at(high_digits, j, range(-n, n + 1))
        if first is None:
            return None
        sums = [ctx.ldexp(first, -j)]
        used = 2 * n
        while used < TRAPEZOID_NODES:
            j += 1
            n = int(half * 2 ** j)
            odd = sums_at(high_digits, j, range(-n if n % 2 else -n + 1, n + 1, 2))
            if odd is None:
                return None
            sums.append(sums[-1] / 2 + ctx.ldexp(odd, -j))
            used += n
            change = abs(sums[-1] - sums[-2]) / max(1, abs(sums[-1]))
            if len(sums) >= 3 and change <= ctx.mpf(10) ** (-(dps + 5)):
                break
            # the digits gained double with each halving: give up early when
            # the nodes that would take exceed the budget
            gained = -float(ctx.log10(change)) if change > 0 else float(dps + 5)
            if len(sums) >= 3 and used * 2 ** max(0.0, math.log2((dps + 5) / max(gained, 0.5))) > TRAPEZOID_NODES:
                return None
        else:
            return None
        low_ctx = _quad_context(low_digits)
        n = int(low_ctx.mpf(half) * 2 ** (j - 1))
        low = sums_at(low_digits, j - 1, range(-n, n + 1))
        if low is None:
            return None
        low = low_ctx.ldexp(low, -(j - 1))
    except (ZeroDivisionError, OverflowError, ValueError, TypeError, AttributeError):
        # AttributeError: a complex value where a real one was expected (an mpc has no ldexp)
        return None
    high = sums[-1]
    if not (ctx.isfinite(high) and low_ctx.isfinite(low)):
        return None
    if abs(ctx.mpf(low) - high) > ctx.mpf(10) ** (-dps) * max(1, abs(high)):
        return None
    return high / ctx.sqrt(2 * ctx.pi)


@lru_cache(maxsize=1024)
def _quad_expectation(g, x, dps):
    """``E g(xi)`` by tanh-sinh quadrature, stable to ``dps`` digits (g exact, in ``x`` only).

    Computed at two working precisions; the two must agree to within
    ``10**-dps`` (relative for values above 1 in magnitude, absolute below),
    else :class:`ConvergenceError`. When a growth bound ``|g(t)| <= C (1 +
    |t|)^d`` is read off the expression (:func:`_growth`), the integral runs
    over a finite body ``[-L, L]`` whose Gaussian tails are proved below
    ``10^-(work + 5)`` (:func:`_body_half_width`; several times faster than
    the infinite interval, whose far tanh-sinh nodes carry nothing); else
    over the real line.
    """
    g = _numbers_of(g, dps + guard_digits(dps) + 10)
    kinks = _kinks(g, x)
    growth = _growth(g, x)
    if growth is not None and not kinks:
        value = _trapezoid_expectation(g, x, dps, growth)
        if value is not None:
            return value
    values = []
    for work in (dps + guard_digits(dps), dps + 2 * guard_digits(dps)):
        ctx = _quad_context(work)
        func = sympy.lambdify(x, g, modules=[_namespace(ctx), "mpmath"])
        norm = 1 / ctx.sqrt(2 * ctx.pi)
        inner = [to_mpf(ctx, r) for r in kinks]
        if all(r != 0 for r in inner):
            inner.append(ctx.zero)
        if growth is None:
            points = [ctx.ninf] + sorted(inner) + [ctx.inf]
        else:
            half = ctx.mpf(_body_half_width(growth, work)[0])
            points = [-half] + sorted(r for r in inner if -half < r < half) + [half]
        try:
            value = ctx.quad(_gaussian_weighted(ctx, func), points) * norm
        except (ZeroDivisionError, OverflowError, ValueError, TypeError) as exc:
            raise ConvergenceError(
                f"quadrature of E[{g}] failed ({exc}); the integrand may not be integrable "
                "against the Gaussian weight", dps=dps) from None
        if not ctx.isfinite(value):
            raise ConvergenceError(f"quadrature of E[{g}] gave {value}", dps=dps)
        values.append(value)
    ctx = context(dps + 2 * guard_digits(dps))
    low, high = values
    diff = abs(ctx.mpf(low) - ctx.mpf(high))
    tol = ctx.mpf(10) ** (-dps) * max(1, abs(high))
    if diff > tol:
        raise ConvergenceError(
            f"quadrature of E[{g}] is not stable to {dps} digits: {mp_to_str(low, dps)} at "
            f"{dps + guard_digits(dps)} digits vs {mp_to_str(high, dps)} at "
            f"{dps + 2 * guard_digits(dps)} digits; try a lower dps or a smoother nonlinearity",
            residual=diff, dps=dps)
    return high


def _numbers_of(g, dps):
    """``g`` with every :class:`GaussianMean` inside it (a coefficient of an inner layer) replaced by its value
    to ``dps`` digits (nested layers add 10 digits each, not a margin)."""
    atoms = g.atoms(GaussianMean)
    if not atoms:
        return g
    return g.xreplace({a: sympy.Float(mp_to_str(_mean_value(a.integrand, dps, margin=False), dps + 3), dps + 3)
                       for a in atoms})


# ----------------------------------------------------------------------------
# The result object
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class GaussianEquivalent:
    """Gaussian-equivalent coefficients of ``f`` against ``xi ~ N(0, 1)``.

    Attributes
    ----------
    f : sympy.Expr
        The nonlinearity.
    x : sympy.Symbol
        Its variable.
    params : tuple of sympy.Symbol
        The parameters of ``f``, sorted by name.
    mu0, mu1, mu_star_sq : sympy.Expr
        ``E f``, ``E xi f`` and ``E f^2 - mu0^2 - mu1^2``: exact expressions in
        the parameters when ``method`` says ``"exact"``, else a
        :class:`sympy.Float` carrying ``dps`` digits, at ``values``.
    second_moment : sympy.Expr
        ``E f^2``, exact or numeric as ``mu_star_sq`` (never less exact).
    method : Coefficients
        ``"exact"`` or ``"numeric"`` for each of the three coefficients.
    values : tuple of (sympy.Symbol, sympy.Rational) pairs
        The parameter values (exact) used by numeric coefficients and as
        defaults of :meth:`evaluate`.
    dps : int
        Decimal digits of the numeric coefficients.

    Notes
    -----
    Exact coefficients are valid for every real value of the parameters
    (positive for those declared positive).
    """

    f: sympy.Expr
    x: sympy.Symbol
    params: tuple
    mu0: sympy.Expr
    mu1: sympy.Expr
    mu_star_sq: sympy.Expr
    second_moment: sympy.Expr
    method: Coefficients
    values: tuple
    dps: int

    @property
    def c_squared(self):
        """``c^2 = mu_star_sq``, the variance of the independent Gaussian part."""
        return self.mu_star_sq

    @property
    def c(self):
        """``c = sqrt(mu_star_sq)``."""
        return sympy.sqrt(self.mu_star_sq)

    @property
    def coefficients(self):
        """The three coefficients as a :class:`Coefficients` tuple."""
        return Coefficients(self.mu0, self.mu1, self.mu_star_sq)

    def evaluate(self, values=None, dps=None):
        """The three coefficients as mpmath numbers at ``dps`` digits.

        Parameters
        ----------
        values : mapping, optional
            Parameter values by name or symbol; they override the stored
            :attr:`values`. Every parameter needs a value.
        dps : int, optional
            Decimal digits; default :attr:`dps`. Numeric coefficients are
            recomputed by quadrature at these digits.

        Returns
        -------
        Coefficients
            ``mu0, mu1, mu_star_sq`` as mpf numbers of a local context at
            ``dps`` digits.

        Raises
        ------
        DomainError
            If a parameter has no value.

        Examples
        --------
        >>> from freeprob._precision import fmt
        >>> ge = gaussian_equivalent("exp(beta*x - beta**2/2)")
        >>> [fmt(v, 12) for v in ge.evaluate({"beta": 1}, dps=20)]
        ['1.00000000000', '1.00000000000', '0.718281828459']
        """
        dps = self.dps if dps is None else check_dps(dps)
        subs = dict(self.values)
        by_name = {p.name: p for p in self.params}
        for key, val in (values or {}).items():
            name = key.name if isinstance(key, sympy.Symbol) else str(key)
            if name not in by_name:
                raise DomainError(f"{name!r} is not a parameter of f = {self.f}; parameters: "
                                  f"{[p.name for p in self.params]}")
            subs[by_name[name]] = read_number(val, what=f"parameter {name!r}")
        missing = [p.name for p in self.params if p not in subs]
        if missing:
            raise DomainError(f"parameters {missing} of f = {self.f} need numeric values to evaluate")
        ctx = context(dps)
        work = context(dps + guard_digits(dps))
        exact = {}
        for name, expr, how in (("mu0", self.mu0, self.method.mu0), ("mu1", self.mu1, self.method.mu1),
                                ("second_moment", self.second_moment, self.method.mu_star_sq)):
            if how == "exact":
                exact[name] = to_mpf(work, expr.xreplace(subs))
            else:
                g = {"mu0": self.f, "mu1": self.x * self.f, "second_moment": self.f**2}[name]
                g = _real_variable(g.xreplace(subs), self.x)
                exact[name] = work.mpf(_quad_expectation(g, _REAL_X, dps))
        if self.method.mu_star_sq == "exact":
            star = to_mpf(work, self.mu_star_sq.xreplace(subs))
        else:
            star = exact["second_moment"] - exact["mu0"] ** 2 - exact["mu1"] ** 2
        return Coefficients(ctx.mpf(exact["mu0"]), ctx.mpf(exact["mu1"]), ctx.mpf(star))

    def __str__(self):
        def line(label, definition, value, how):
            note = how
            if how == "numeric":
                shown = ", ".join(f"{p}={v}" for p, v in self.values)
                note = f"numeric, {self.dps} digits" + (f", at {shown}" if shown else "")
            return f"  {label:<11}= {definition:<26}= {value}   [{note}]"

        return "\n".join([
            f"Gaussian equivalent of f({self.x}) = {self.f},  {self.x} ~ N(0, 1)",
            line("mu0", "E f", self.mu0, self.method.mu0),
            line("mu1", "E x f", self.mu1, self.method.mu1),
            line("mu_star^2", "E f^2 - mu0^2 - mu1^2", self.mu_star_sq, self.method.mu_star_sq),
        ])


_REAL_X = sympy.Dummy("xi", real=True)


def _real_variable(g, x):
    return g.xreplace({x: _REAL_X})


def _to_float_expr(value, dps):
    """An mpf as a sympy Float carrying ``dps`` digits."""
    return sympy.Float(mpmath.nstr(value, dps + 3, strip_zeros=False), dps)


def gaussian_equivalent(f, x="x", params=None, *, positive=(), dps=30, method="auto", time_budget=10.0):
    """Gaussian-equivalent coefficients of an entrywise nonlinearity.

    Computes ``mu0 = E f(xi)``, ``mu1 = E xi f(xi)`` and
    ``mu_star_sq = E f(xi)^2 - mu0^2 - mu1^2`` for ``xi ~ N(0, 1)`` by
    integrating against ``exp(-x^2/2)/sqrt(2 pi)`` over the real line.

    Parameters
    ----------
    f : str or sympy.Expr
        The nonlinearity. A string is parsed safely by
        :func:`parse_nonlinearity` (whitelisted names only, nothing evaluated
        as Python); the coefficients are then in plain symbols
        ``Symbol(name)``. A sympy expression keeps its own symbols.
    x : str or sympy.Symbol, optional
        The variable (default ``"x"``).
    params : mapping, optional
        Parameter values by name (or symbol): a number (int, Fraction,
        decimal string, float read by its repr, sympy number) or None for
        "symbolic". Values are needed only for coefficients that have to be
        computed numerically, and become the defaults of
        :meth:`GaussianEquivalent.evaluate`.
    positive : iterable of str, optional
        Names of parameters declared positive for the integration (all
        parameters are declared real).
    dps : int, optional
        Decimal digits of numeric coefficients (default 30).
    method : {"auto", "exact", "numeric"}, optional
        ``"auto"`` integrates with sympy and falls back to quadrature per
        coefficient; ``"exact"`` raises when sympy finds no closed form;
        ``"numeric"`` skips sympy (all parameters need values).
    time_budget : float or None, optional
        Seconds allowed to sympy for each of the three integrals (default
        10). Enforced with ``SIGALRM`` in the main thread only; elsewhere
        sympy runs unbounded.

    Returns
    -------
    GaussianEquivalent

    Raises
    ------
    DomainError
        For a string outside the whitelist, an unknown parameter, a
        non-numeric value, a coefficient that must be computed numerically
        while a parameter has no value (the message names the parameter), or
        ``method="exact"`` when sympy finds no closed form.
    ConvergenceError
        When quadrature is not stable to ``dps`` digits.

    Notes
    -----
    Parity is used before integration: if ``g(-x) = -g(x)`` for an integrand
    ``g`` (``f``, ``x f`` or ``f^2``), its Gaussian mean is exactly 0. Exact
    results are valid for all real parameter values (positive for names in
    ``positive``). A numeric coefficient is stable under a precision increase:
    quadrature runs at two working precisions which must agree to ``dps``
    digits.

    References
    ----------
    Hayase, Collins, Karakida (2025); Hayase, Karakida (2026): Gaussian
    equivalence of softmax attention (docs/math.md section 6).

    Examples
    --------
    >>> ge = gaussian_equivalent("exp(beta*x - beta**2/2)")
    >>> ge.mu0, ge.mu1, ge.mu_star_sq
    (1, beta, -beta**2 + exp(beta**2) - 1)
    >>> ge.method
    Coefficients(mu0='exact', mu1='exact', mu_star_sq='exact')
    >>> gaussian_equivalent("x**3").coefficients
    Coefficients(mu0=0, mu1=3, mu_star_sq=6)
    """
    dps = check_dps(dps)
    if method not in ("auto", "exact", "numeric"):
        raise DomainError(f"method must be 'auto', 'exact' or 'numeric', got {method!r}")
    if time_budget is not None and not (isinstance(time_budget, (int, float)) and time_budget > 0):
        raise DomainError(f"time_budget must be a positive number of seconds or None, got {time_budget!r}")
    xname = x.name if isinstance(x, sympy.Symbol) else str(x)
    if isinstance(f, str):
        expr, xsym, syms = parse_nonlinearity(f, x=xname)
    elif isinstance(f, sympy.Expr):
        expr = f
        found = [s for s in expr.free_symbols if s.name == xname]
        if len(found) > 1:
            raise DomainError(f"several symbols named {xname!r} in f = {f}")
        xsym = x if isinstance(x, sympy.Symbol) else (found[0] if found else sympy.Symbol(xname))
        syms = tuple(sorted(expr.free_symbols - {xsym}, key=lambda s: s.name))
        if len({s.name for s in syms} | {xsym.name}) != len(syms) + 1:
            raise DomainError(f"f = {f} has several symbols with the same name")
        check_structure(expr, xsym, syms, f"f = {f}")
    else:
        raise DomainError(f"f must be a string or a sympy expression, got {type(f).__name__}")
    by_name = {s.name: s for s in syms}
    positive = tuple(positive)
    for name in positive:
        if str(name) not in by_name:
            raise DomainError(f"{name!r} (declared positive) is not a parameter of f = {expr}")
    values = {}
    for key, val in (params or {}).items():
        name = key.name if isinstance(key, sympy.Symbol) else str(key)
        if name not in by_name:
            raise DomainError(f"{name!r} is not a parameter of f = {expr}; parameters: {sorted(by_name)}")
        if val is not None:
            v = read_number(val, what=f"parameter {name!r}")
            if name in positive and not v.is_positive:
                raise DomainError(f"parameter {name!r} is declared positive, got {val!r}")
            values[by_name[name]] = v

    # Integrate in real (or positive) symbols, map back to the caller's symbols.
    real = {s: sympy.Symbol(s.name, positive=True) if s.name in positive else sympy.Symbol(s.name, real=True)
            for s in syms}
    real[xsym] = _REAL_X
    back = {v: k for k, v in real.items() if k is not xsym}
    g_real = expr.xreplace(real)
    integrands = {"mu0": g_real, "mu1": _REAL_X * g_real, "second_moment": g_real**2}

    exact = {}
    for name, g in integrands.items():
        result = None if method == "numeric" else _integrate_gaussian(g, _REAL_X, time_budget)
        if result is None and method == "exact":
            raise DomainError(f"sympy found no closed form for E[{g.xreplace(back).xreplace({_REAL_X: xsym})}] "
                              "within the time budget; use method='auto' or 'numeric'")
        exact[name] = None if result is None else result.xreplace(back)

    numeric = {}
    needs = [n for n in integrands if exact[n] is None]
    if needs:
        missing = [s.name for s in syms if s not in values]
        if missing:
            raise DomainError(
                f"sympy found no closed form for {', '.join(needs)} of f = {expr}; computing it "
                f"numerically needs a value for parameter(s) {missing} (pass params={{{missing[0]!r}: ...}})")
        for n in needs:
            g = integrands[n].xreplace({real[s]: values[s] for s in syms})
            numeric[n] = _quad_expectation(g, _REAL_X, dps)
            _remember(g, dps, numeric[n])

    def coefficient(n):
        if exact[n] is not None:
            return exact[n], "exact"
        return _to_float_expr(numeric[n], dps), "numeric"

    mu0, how0 = coefficient("mu0")
    mu1, how1 = coefficient("mu1")
    second, how2 = coefficient("second_moment")
    if how0 == how1 == how2 == "exact":
        star = sympy.simplify(second - mu0**2 - mu1**2)
        how_star = "exact"
    else:
        ctx = context(dps + guard_digits(dps))
        vals = {}
        for n in integrands:
            if exact[n] is not None:
                vals[n] = to_mpf(ctx, exact[n].xreplace(values))
            else:
                vals[n] = ctx.mpf(numeric[n])
        star_value = vals["second_moment"] - vals["mu0"] ** 2 - vals["mu1"] ** 2
        star, how_star = _to_float_expr(star_value, dps), "numeric"
        if how2 == "exact":
            second, how2 = _to_float_expr(vals["second_moment"], dps), "numeric"
    used = tuple(sorted(values.items(), key=lambda kv: kv[0].name))
    return GaussianEquivalent(
        f=expr, x=xsym, params=syms, mu0=mu0, mu1=mu1, mu_star_sq=star, second_moment=second,
        method=Coefficients(how0, how1, how_star), values=used, dps=dps)


# ----------------------------------------------------------------------------
# At an entry variance: the coefficients of an entrywise function of a matrix
# ----------------------------------------------------------------------------

#: The standard deviation of the entries while integrating (a positive symbol; never a user name).
_SD = sympy.Dummy("sd", positive=True)


#: The integrands of the GaussianMean numbers made in this process, by key (the sympy representation of g in xi).
_INTEGRANDS = {}
#: The most precise quadrature value of each integrand computed in this process: g -> (digits, value).
_BEST = {}


def _remember(g, dps, value):
    best = _BEST.get(g)
    if best is None or best[0] < dps:
        _BEST[g] = (dps, value)


#: The digits of the first quadrature of a number: one 15-digit law asks for its numbers at up to about 73
#: digits (15 + 13 guard digits, 10 more for the second computation that verifies a result, 5 for the
#: conversion to mpmath, sympy's own working digits when it evaluates a sum, and the edge refinement's
#: systems at higher precision), so that one quadrature at 80 digits serves all of them. With levels at
#: multiples of 50 the requests at 51 and 73 forced a second quadrature at 100 digits, and a nested layer's
#: number at 100 asks for its inner layer's at 145 digits: a third one, at 150.
_FIRST_MEAN_LEVEL = 80
#: Later levels are multiples of this many digits (a value at D digits serves every request at <= D): a
#: layer's number at ``L`` digits asks for its inner layer's at ``L + guard_digits(L) + 10`` (120 for 80),
#: one level up.
_MEAN_LEVEL = 40


def _mean_level(dps):
    """The digits of the quadrature that serves a request at ``dps``: :data:`_FIRST_MEAN_LEVEL` when it is
    enough, else the first multiple of :data:`_MEAN_LEVEL` at or above ``dps``."""
    if dps <= _FIRST_MEAN_LEVEL:
        return _FIRST_MEAN_LEVEL
    return -(-dps // _MEAN_LEVEL) * _MEAN_LEVEL


def _mean_value(g, dps, margin=True):
    """``E g(xi)`` to ``dps`` digits: the most precise value computed so far when it has enough digits, else
    quadrature (:func:`_quad_expectation`) at the level :func:`_mean_level` gives for ``dps`` (with ``margin``,
    ``dps + 10``)."""
    best = _BEST.get(g)
    if best is not None and best[0] >= dps:
        return best[1]
    # a computation asks for a few more digits at a time (guard digits, a second solve with more digits for
    # its verification, sympy's evaluation of the cancellation in nu^2 = E g^2 - mu0^2 - s mu1^2): one
    # quadrature at a coarse level serves the next requests, where steps of 10 digits recomputed at each
    work = _mean_level(dps + (10 if margin else 0))
    value = _quad_expectation(g, _REAL_X, work)
    _remember(g, work, value)
    return value


class GaussianMean(sympy.Function):
    """``E g(xi)``, ``xi ~ N(0, 1)``: a real number without a closed form, computed by quadrature at any precision.

    Made by :func:`gaussian_mean`. The number stays unevaluated in
    expressions (its one argument is an opaque key, so that no rewriting of
    the expressions it enters reaches the integrand); :meth:`evalf` (and so
    every conversion to an mpmath number at ``dps`` digits,
    :func:`freeprob._precision.to_mpf`) runs tanh-sinh quadrature at that
    precision, checked at two working precisions (:func:`_quad_expectation`,
    a :class:`~freeprob.ConvergenceError` when the two disagree), so a
    coefficient derived by quadrature carries the digits each computation
    asks for, not those of its derivation.

    Examples
    --------
    >>> m = gaussian_mean(sympy.tanh(_REAL_X) ** 2, _REAL_X)
    >>> print(m)
    E[tanh(x)**2]
    >>> m.evalf(30)
    0.394294490397841174416459772444
    >>> str(m.evalf(60))[:62]
    '0.394294490397841174416459772444119560573790749422305097621123'
    """

    nargs = 1
    is_real = True
    is_finite = True

    @classmethod
    def eval(cls, key):
        return None

    @property
    def is_number(self):
        return True

    @property
    def integrand(self):
        """``g``, in the real variable of this module."""
        return _INTEGRANDS[self.args[0].name]

    def __reduce_ex__(self, protocol):
        return gaussian_mean, (self.integrand, _REAL_X)

    def _eval_evalf(self, prec):
        dps = max(15, mpmath.libmp.prec_to_dps(prec))
        value = _mean_value(self.integrand, dps)
        return sympy.Float(mp_to_str(value, dps + 3), dps + 3)

    def _shown_integrand(self):
        return self.integrand.xreplace({_REAL_X: sympy.Symbol("x")})

    def _sympystr(self, printer):
        return f"E[{printer.doprint(self._shown_integrand())}]"

    def _pretty(self, printer):
        from sympy.printing.pretty.stringpict import prettyForm

        return prettyForm(f"E[{sympy.sstr(self._shown_integrand())}]")

    def _latex(self, printer, exp=None):
        tex = r"\mathbb{E}\left[" + printer.doprint(self._shown_integrand()) + r"\right]"
        return tex if exp is None else f"{tex}^{{{exp}}}"


def numeric_text(value, digits=20):
    """A number without a closed form (an expression in :class:`GaussianMean`) as a decimal of ``digits`` digits."""
    return str(sympy.Float(sympy.sympify(value).evalf(digits), digits))


def coefficient_value_text(value, how):
    """A coefficient as printed by ``freeprob equations``: exact, or a decimal marked numeric (``how``: its method)."""
    if how == "exact":
        return f"{sympy.sstr(value)}   [exact]"
    return f"{numeric_text(value)}   [numeric: quadrature at the precision asked]"


def gaussian_mean(g, x):
    """The number :class:`GaussianMean` ``E g(xi)`` of ``g`` (a function of ``x`` with no other symbol)."""
    g = sympy.sympify(g).xreplace({x: _REAL_X})
    if g.free_symbols - {_REAL_X}:
        raise DomainError(f"a Gaussian mean needs a function of one variable with no other symbol, got {g}")
    key = sympy.srepr(g)
    _INTEGRANDS.setdefault(key, g)
    return GaussianMean(Str(key))


@dataclass(frozen=True)
class EntryCoefficients:
    """Gaussian-equivalent coefficients of ``f`` applied to entries ``u ~ N(0, s)``.

    ``f(M) = mu0 1 1^T + mu1 M + nu Z + (negligible)``, with ``Z`` an
    independent Gaussian matrix of unit entry variance and
    ``nu^2 = E f(u)^2 - mu0^2 - s mu1^2``.

    Attributes
    ----------
    f : sympy.Expr
        The function, in ``x``.
    x : sympy.Symbol
    variance : sympy.Expr
        ``s``, the entry variance of the argument (exact, may contain symbols).
    mu0, mu1, nu_sq : sympy.Expr
        ``E f(u)``, ``E u f(u) / s`` and ``E f(u)^2 - mu0^2 - s mu1^2``:
        exact expressions (valid for all values of their symbols) where
        :attr:`method` says ``"exact"``, else expressions in the numbers
        :class:`GaussianMean` of their integrands (no closed form; computed
        by quadrature to the digits each conversion asks for).
    method : Coefficients
        ``"exact"`` or ``"numeric"`` for ``mu0``, ``mu1``, ``nu_sq``.
    dps : int
        Digits to which the derivation computed the numeric coefficients
        (checking that their integrals converge).
    """

    f: sympy.Expr
    x: sympy.Symbol
    variance: sympy.Expr
    mu0: sympy.Expr
    mu1: sympy.Expr
    nu_sq: sympy.Expr
    method: Coefficients
    dps: int

    def __str__(self):
        shown = coefficient_value_text
        return "\n".join([
            f"  mu0   = E f(u)                       = {shown(self.mu0, self.method.mu0)}",
            f"  mu1   = E u f(u) / s                 = {shown(self.mu1, self.method.mu1)}",
            f"  nu^2  = E f(u)^2 - mu0^2 - s mu1^2   = {shown(self.nu_sq, self.method.mu_star_sq)}",
        ])


def _exact_rational(value, dps):
    """The exact rational of a numeric coefficient, read from its decimal string at ``dps`` digits."""
    return sympy.Rational(mp_to_str(value, dps))


@lru_cache(maxsize=256)
def entry_coefficients(f, x, variance, dps=50, time_budget=10.0):
    """The coefficients of ``f`` (in ``x``) applied to entries of variance ``variance``.

    One derivation with :func:`gaussian_equivalent`: it integrates
    ``g(xi) = f(sd xi)`` against ``N(0, 1)`` with ``sd = sqrt(variance)``
    (a positive symbol while integrating), so that ``mu0 = E g``,
    ``mu1 = E xi g / sd`` and ``nu^2 = E g^2 - mu0^2 - (E xi g)^2``.

    Parameters
    ----------
    f : sympy.Expr
        The function (whitelisted structure, checked by the caller).
    x : sympy.Symbol
    variance : sympy.Expr
        Positive, exact; may contain symbols (ratios, parameters).
    dps : int
        Digits to which coefficients without a closed form are first computed
        (they are :class:`GaussianMean` numbers, recomputed to any precision).
    time_budget : float
        Seconds allowed to sympy per integral.

    Returns
    -------
    EntryCoefficients

    Raises
    ------
    DomainError
        When a coefficient has no closed form and the function or the
        variance still contains symbols (quadrature needs numbers).

    Examples
    --------
    >>> x = sympy.Symbol("x")
    >>> c = entry_coefficients(x + (x**2 - 1) / 2, x, sympy.Integer(1))
    >>> c.mu0, c.mu1, c.nu_sq
    (0, 1, 1/2)
    >>> c = entry_coefficients(sympy.Max(x, 0), x, sympy.Symbol("s", positive=True))
    >>> c.mu0, c.mu1, sympy.simplify(c.nu_sq)
    (sqrt(2)*sqrt(s)/(2*sqrt(pi)), 1/2, s*(-2 + pi)/(4*pi))
    """
    variance = sympy.sympify(variance)
    # a variance with a number without closed form (an inner layer's coefficient) is integrated as a symbol too;
    # its value (to the digits of the derivation) serves only the quadrature that checks the integrals converge
    inner = variance.has(GaussianMean) and not variance.free_symbols
    symbolic = bool(variance.free_symbols) or inner
    sd = _SD if symbolic else sympy.sqrt(variance)
    g = f.xreplace({x: sd * x})
    params = sorted(g.free_symbols - {x}, key=lambda s: s.name)
    positive = [_SD.name] if symbolic else []
    values = None
    if inner:
        values = {_SD.name: _exact_rational(to_mpf(context(dps + guard_digits(dps)), sympy.sqrt(variance)),
                                            dps + guard_digits(dps))}
    try:
        ge = gaussian_equivalent(g, x=x, params=values, positive=positive, dps=dps, time_budget=time_budget)
    except DomainError as exc:
        if "numerically needs a value" not in str(exc):
            raise
        shown = ", ".join(str(p) for p in params if p is not _SD)
        raise DomainError(
            f"f(x) = {f} has no closed-form Gaussian coefficients at entry variance {variance} (sympy found "
            f"none), so they are computed by quadrature, which needs numbers; "
            + (f"the entry variance {variance} of its argument depends on {sorted(map(str, variance.free_symbols))}: "
               f"scale the argument so that its entry variance is a number" if symbolic else "")
            + (f"{'; ' if symbolic and shown else ''}write the value of {shown} into the function" if shown else "")
        ) from None
    back = {_SD: sympy.sqrt(variance)} if symbolic else {}
    g = g.xreplace(back)
    mu0 = ge.mu0.xreplace(back)
    ex = ge.mu1.xreplace(back)
    how = ge.method
    # a coefficient without a closed form is the number GaussianMean of its integrand (quadrature at the
    # precision each computation asks for, never the digits of this derivation); quadrature needs numbers, so
    # the variance is a number here (a symbolic one was refused above)
    if how.mu1 == "exact":
        mu1 = sympy.simplify(ex / sympy.sqrt(variance))
    else:
        mu1 = gaussian_mean(x * g, x) / sympy.sqrt(variance)
    if how.mu0 != "exact":
        mu0 = gaussian_mean(g, x)
    if how.mu_star_sq == "exact":
        nu_sq = sympy.simplify(ge.mu_star_sq.xreplace(back))
    else:
        nu_sq = gaussian_mean(g ** 2, x) - mu0 ** 2 - variance * mu1 ** 2
    return EntryCoefficients(f=f, x=x, variance=variance, mu0=sympy.simplify(mu0), mu1=mu1, nu_sq=nu_sq,
                             method=how, dps=dps)
