"""Precision helpers: local mpmath contexts, exact crossing from sympy, printing.

Nothing here touches the global ``mpmath.mp`` context: every high-precision
computation in freeprob runs in a context made by :func:`context`.
"""

import contextlib
import threading

import mpmath
import sympy

from ._errors import DomainError
from ._numbers import read_number

__all__ = ["check_dps", "context", "exact", "flint_precision", "shared_precision", "fmt", "guard_digits", "mp_to_str", "to_mpc", "to_mpf"]


def check_dps(dps):
    """Return ``dps`` as an int, or raise :class:`DomainError` if it is not a positive count of digits."""
    if isinstance(dps, bool) or not isinstance(dps, (int,)) and not (
        hasattr(dps, "__index__")
    ):
        raise DomainError(f"dps must be a positive integer number of decimal digits, got {dps!r}")
    dps = int(dps)
    if dps < 1 or dps > 100000:
        raise DomainError(f"dps must be between 1 and 100000 decimal digits, got {dps}")
    return dps


def guard_digits(dps):
    """Extra working digits used on top of the ``dps`` a caller asks for."""
    return 10 + dps // 4


#: One mpmath context per thread and precision (making one costs about 1 ms, and a law asks for
#: dozens). No caller sets a context's precision; mpmath's own temporary changes
#: (``workprec`` inside quadrature, root finding) are restored on exit.
_CONTEXTS = threading.local()


def context(dps):
    """An mpmath context working at ``dps`` decimal digits, separate from mpmath's global one.

    The context is shared by the calls of one thread at the same ``dps``:
    never set its precision (make a context at the precision wanted instead).

    Examples
    --------
    >>> ctx = context(40)
    >>> ctx.dps
    40
    >>> import mpmath; mpmath.mp.dps   # the global context is untouched
    15
    >>> context(40) is ctx
    True
    """
    dps = int(dps)
    cache = getattr(_CONTEXTS, "by_dps", None)
    if cache is None:
        cache = _CONTEXTS.by_dps = {}
    ctx = cache.get(dps)
    if ctx is None or ctx.dps != dps:  # (a caller that broke the rule gets a new one)
        ctx = mpmath.MPContext()
        ctx.dps = dps
        cache[dps] = ctx
    return ctx


#: python-flint keeps its working precision in one process-wide context, so
#: ``flint.ctx.workprec`` in two threads at once would let one thread compute
#: at (and restore) the other's precision. Every use of flint's ball
#: arithmetic holds this lock, through :func:`flint_precision`.
_FLINT_LOCK = threading.RLock()


#: SymPy's numerical evaluation of algebraic numbers (``CRootOf.evalf``,
#: ``nsolve``) works in mpmath's global context, whose precision another thread
#: can change in the middle of it: the polynomial route runs under this lock.
#: It is not flint's lock, so a long elimination does not stall Dyson solves in
#: other threads (the polynomial route may take flint's lock inside this one;
#: the Dyson route never takes this one, so the order is fixed).
_SYMPY_LOCK = threading.RLock()


@contextlib.contextmanager
def shared_precision():
    """Run SymPy numerics that use mpmath's global context, one thread at a time (see ``_SYMPY_LOCK``)."""
    with _SYMPY_LOCK:
        yield


@contextlib.contextmanager
def flint_precision(bits):
    """Run flint's ball arithmetic at ``bits`` of working precision, one thread at a time."""
    import flint  # a compiled dependency, loaded where ball arithmetic is used

    with _FLINT_LOCK, flint.ctx.workprec(int(bits)):
        yield


def exact(value, what="value"):
    """An exact sympy number from an int, float (its shortest decimal), str or sympy value.

    Strings are read by the whitelisted grammar (:func:`freeprob._numbers.read_number`),
    never evaluated.

    >>> exact("0.2"), exact(0.1), exact("1/3"), exact("1+2j")
    (1/5, 1/10, 1/3, 1 + 2*I)
    """
    if isinstance(value, sympy.Basic) and isinstance(value, sympy.Expr) and value.is_number and value.is_finite:
        return value
    return read_number(value, what=what, real=False)


def to_mpf(ctx, value):
    """Convert an exact sympy number (or int, str, float) to an mpf of ``ctx`` at its precision."""
    value = exact(value)
    if value.is_real is False:
        raise DomainError(f"expected a real number, got {value}")
    num = sympy.Float(value.evalf(ctx.dps + 5), ctx.dps + 5)
    return ctx.make_mpf(num._mpf_)


def to_mpc(ctx, value):
    """Convert an exact sympy number, complex or str to an mpc of ``ctx``."""
    if isinstance(value, (complex,)):
        return ctx.mpc(to_mpf(ctx, value.real), to_mpf(ctx, value.imag))
    if isinstance(value, (mpmath.mpf, mpmath.mpc)) or type(value).__name__ in ("mpf", "mpc"):
        return ctx.mpc(value)
    value = exact(value)
    re, im = value.as_real_imag()
    return ctx.mpc(to_mpf(ctx, re), to_mpf(ctx, im))


def mp_to_str(x, dps):
    """Decimal string of a real mpf (or float) carrying ``dps`` significant digits."""
    if isinstance(x, float):
        x = mpmath.mpf(x)
    if x == 0:
        return "0"
    return mpmath.nstr(x, dps, strip_zeros=False, min_fixed=-5, max_fixed=8)


def fmt(x, digits=10):
    """Print-friendly fixed-digit string, used in docstring examples so they are stable."""
    if isinstance(x, complex) or type(x).__name__ == "mpc":
        re, im = x.real, x.imag
        sign = "-" if im < 0 else "+"
        return f"{mp_to_str(re, digits)} {sign} {mp_to_str(abs(im), digits)}j"
    return mp_to_str(x, digits)
