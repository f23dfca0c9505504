"""The one reader of user numbers, and the one whitelisted scalar grammar.

Every number or scalar formula a user hands to freeprob (a command-line
``--at`` or ``--set``, a model file, a string given to the Python API, a
nonlinearity) goes through this module. Nothing here evaluates Python:

* :func:`parse_scalar` reads a formula with :mod:`ast` and evaluates it node by
  node over a whitelist: numbers, names the caller declares, ``+ - * / **``
  (and ``^``), the constants ``pi`` and ``E`` (and ``I`` for complex values),
  and the functions in :data:`ALLOWED_FUNCTIONS`. Decimal literals are exact
  (``0.1`` is ``1/10``, however many digits it has). Formulas longer than
  :data:`MAX_LENGTH` characters, nested deeper than the parser allows, or with
  an exact power too large to hold (``2**10**10**10``) are refused before any
  work is done. :class:`ScalarGrammar` is the evaluator; the model-file
  grammar extends it with ``@`` and ``.T``.
* :func:`read_number` turns any user value (int, float, Fraction, Decimal,
  str, mpmath or sympy number, numpy scalar) into an exact sympy number,
  refusing NaN, infinities and, unless asked for, complex values.
* :func:`read_scalar` is the same for scalar coefficients of expressions,
  which may contain symbols.
* :func:`parse_nonlinearity` reads an entrywise function such as
  ``"exp(beta*x - beta**2/2)"``.

Every refusal is a :class:`~freeprob.DomainError` that names the offending
piece.

>>> read_number("1/3", what="p"), read_number(0.1, what="p"), read_number("0.2", what="p")
(1/3, 1/10, 1/5)
>>> read_number("__import__('os')", what="p")
Traceback (most recent call last):
...
freeprob._errors.DomainError: p: the function '__import__' is not allowed in "__import__('os')"; allowed functions: Abs, Heaviside, Max, Min, cos, cosh, erf, erfc, exp, log, sign, sin, sinh, sqrt, tanh
"""

import ast
import decimal
import keyword
import math
import numbers
import re
from fractions import Fraction

import mpmath
import numpy as np
import sympy

from ._errors import DomainError

__all__ = [
    "ALLOWED_FUNCTIONS",
    "MAX_LENGTH",
    "ScalarGrammar",
    "parse_nonlinearity",
    "parse_scalar",
    "magnitude",
    "read_number",
    "read_points",
    "read_scalar",
]

#: Functions a formula may call (names as written in a string).
ALLOWED_FUNCTIONS = {
    "exp": sympy.exp,
    "log": sympy.log,
    "sqrt": sympy.sqrt,
    "tanh": sympy.tanh,
    "sinh": sympy.sinh,
    "cosh": sympy.cosh,
    "sin": sympy.sin,
    "cos": sympy.cos,
    "erf": sympy.erf,
    "erfc": sympy.erfc,
    "Abs": sympy.Abs,
    "Max": sympy.Max,
    "Min": sympy.Min,
    "Heaviside": sympy.Heaviside,
    "sign": sympy.sign,
}
_FUNCTION_CLASSES = tuple(f for f in ALLOWED_FUNCTIONS.values() if isinstance(f, type))  # sqrt is a Pow
_MULTI_ARGUMENT = {"Max", "Min"}
_CONSTANTS = {"pi": sympy.pi, "E": sympy.E}
#: Longest formula accepted, in characters.
MAX_LENGTH = 10000
#: Largest exact power evaluated, in bits of the result.
_MAX_POWER_BITS = 100000
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
# names sympy's own constructors use; a fresh symbol may not shadow them
_RESERVED = {"Integer", "Float", "Rational", "Symbol", "Add", "Mul", "Pow", "I", "oo", "nan", "zoo"}
_ALLOWED_TEXT = ", ".join(sorted(ALLOWED_FUNCTIONS))
#: Periodic functions, whose value at a number needs that number modulo 2 pi (the digits of its size: the
#: evaluation of sin(exp(exp(20))) never ends), and the largest argument they take.
_PERIODIC = {"sin", "cos"}
_MAX_PERIODIC_ARGUMENT = 1e15


def magnitude(v):
    """``|v|`` of an exact number as a float, for range checks (``inf`` when too large to evaluate, such as
    ``exp(exp(exp(10)))``)."""
    try:
        return abs(float(sympy.N(v, 17)))
    except (ValueError, TypeError, OverflowError):
        return math.inf


_EXPONENT_RE = re.compile(r"[eE]([+-]?[0-9_]+)$")


def _literal(text):
    """An exact sympy number from the source text of a numeric literal (``1e-3`` is ``1/1000``)."""
    text = text.replace("_", "")
    exponent = _EXPONENT_RE.search(text)
    if exponent and abs(int(exponent.group(1))) > _MAX_POWER_BITS // 4:
        raise ValueError(f"the literal {text} has an exponent beyond 10^{_MAX_POWER_BITS // 4}")
    return sympy.Rational(text)


def _bits(v):
    """Bits of an exact rational (numerator plus denominator)."""
    p, q = sympy.fraction(v)
    return int(p).bit_length() + int(q).bit_length()


class ScalarGrammar:
    """Evaluate a formula's :mod:`ast` over a whitelist.

    Parameters
    ----------
    names : dict
        Name -> value (sympy symbols or numbers; subclasses also matrices).
    what : str
        What is being read, for error messages (``"--at"``, ``"parameter beta"``).
    new_symbols : bool
        Turn unknown plain names into real sympy symbols (parameters of a
        nonlinearity) instead of refusing them.
    complex_values : bool
        Accept ``I`` and imaginary literals (``2j``).
    """

    functions = ALLOWED_FUNCTIONS

    def __init__(self, names=None, *, what="value", new_symbols=False, complex_values=False):
        self.names = dict(names or {})
        self.what = what
        self.new_symbols = new_symbols
        self.complex_values = complex_values
        self.created = {}
        self.text = ""

    # -- entry --------------------------------------------------------------
    def parse(self, text):
        if not isinstance(text, str):
            raise self.error(f"expected a string, got {type(text).__name__}")
        self.text = text.strip()
        if not self.text:
            raise self.error("empty value; give a number or a formula such as 1/2")
        if len(self.text) > MAX_LENGTH:
            raise self.error(f"the formula is longer than {MAX_LENGTH} characters")
        if "\x00" in self.text:
            raise self.error("the formula contains a NUL character")
        source = self.text.replace("^", "**")
        self.source = source
        try:
            tree = ast.parse(source, mode="eval")
        except SyntaxError as exc:
            raise self.error(f"cannot read {self.shown()} ({exc.msg})") from None
        except (RecursionError, MemoryError, ValueError):
            raise self.error(f"{self.shown()} is nested too deeply to read") from None
        try:
            return self.eval(tree.body)
        except RecursionError:
            raise self.error(f"{self.shown()} is nested too deeply to evaluate") from None

    def error(self, message):
        """The exception for ``message`` (subclasses name a file and key instead)."""
        return DomainError(f"{self.what}: {message}")

    def fail(self, message):
        raise self.error(f"{message} in {self.shown()}")

    def shown(self):
        """The text for a message, cut to 80 characters."""
        return repr(self.text) if len(self.text) <= 80 else repr(self.text[:60]) + f"... ({len(self.text)} characters)"

    # -- nodes --------------------------------------------------------------
    def eval(self, node):
        method = getattr(self, "eval_" + type(node).__name__, None)
        if method is None:
            self.fail(self.refusal(node))
        return method(node)

    def refusal(self, node):
        names = {
            ast.Attribute: "attribute access", ast.Subscript: "indexing '[...]'", ast.Lambda: "lambda",
            ast.Compare: "a comparison", ast.BoolOp: "'and'/'or'", ast.IfExp: "'if'",
        }
        return f"{names.get(type(node), type(node).__name__)} is not allowed"

    def eval_Constant(self, node):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float, complex)):
            self.fail(f"the constant {ast.get_source_segment(self.source, node) or repr(value)} is not allowed")
        text = ast.get_source_segment(self.source, node) or repr(value)
        if len(text) > 400:
            self.fail(f"the literal {text[:20]}... has more than 400 characters")
        if isinstance(value, complex) and not self.complex_values:
            self.fail(f"the number {text} is not allowed (real literals only)")
        if isinstance(value, int):
            return sympy.Integer(value)  # exact already, in any base
        try:
            if isinstance(value, complex):
                return sympy.I * _literal(text[:-1])
            return _literal(text)
        except (ValueError, TypeError) as exc:
            self.fail(f"cannot read the literal {text} ({exc})")

    def eval_Name(self, node):
        name = node.id
        if name in self.names:
            return self.names[name]
        if name in _CONSTANTS:
            return _CONSTANTS[name]
        if name == "I" and self.complex_values:
            return sympy.I
        if name in self.functions:
            self.fail(f"the function {name!r} must be called, as {name}(...),")
        if self.new_symbols and _NAME_RE.match(name) and name not in _RESERVED and not keyword.iskeyword(name):
            if name not in self.created:
                self.created[name] = sympy.Symbol(name, real=True)
            return self.created[name]
        self.fail(self.unknown_name(name))

    def unknown_name(self, name):
        known = ", ".join(sorted(self.names)) or "none"
        return f"the name {name!r} is not known (known names: {known}; constants pi, E)"

    def eval_UnaryOp(self, node):
        if isinstance(node.op, ast.USub):
            return -self.eval(node.operand)
        if isinstance(node.op, ast.UAdd):
            return self.eval(node.operand)
        self.fail(f"the operator {type(node.op).__name__} is not allowed")

    def eval_BinOp(self, node):
        # a left-leaning chain (a + b + c + ...) is folded in a loop, so a long
        # flat formula does not run into Python's recursion limit
        chain = []
        while isinstance(node, ast.BinOp):
            chain.append(node)
            node = node.left
        value = self.eval(node)
        for link in reversed(chain):
            value = self.binop(link.op, value, self.eval(link.right))
        return value

    def binop(self, op, a, b):
        try:
            if isinstance(op, ast.Add):
                return a + b
            if isinstance(op, ast.Sub):
                return a - b
            if isinstance(op, ast.Mult):
                return a * b
            if isinstance(op, ast.Div):
                if b == 0:
                    self.fail("division by zero")
                return a / b
            if isinstance(op, ast.Pow):
                return self.power(a, b)
        except TypeError as exc:
            self.fail(str(exc))
        self.fail(f"the operator {type(op).__name__} is not allowed")

    def power(self, a, b):
        """``a ** b``, refused when an exact value would be too large to hold."""
        if isinstance(a, sympy.Basic) and isinstance(b, sympy.Basic) and a.is_Rational and b.is_Rational:
            if a == 0 and b < 0:
                self.fail("division by zero (0 to a negative power)")
            size = abs(b) * max(_bits(a), 1)
            if size > _MAX_POWER_BITS:
                self.fail(f"the exact power {a}**{b} is too large (more than {_MAX_POWER_BITS} bits)")
        elif isinstance(b, sympy.Basic) and b.is_Rational and abs(b) > _MAX_POWER_BITS:
            self.fail(f"the exponent {b} is too large")
        return a ** b

    def eval_Call(self, node):
        if not isinstance(node.func, ast.Name):
            self.fail(f"only the functions {_ALLOWED_TEXT} may be called, by name")
        name = node.func.id
        if name not in self.functions:
            raise self.error(f"the function {name!r} is not allowed in {self.shown()}; allowed functions: {_ALLOWED_TEXT}")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            self.fail(f"{name}() takes plain arguments only")
        n = len(node.args)
        if (name in _MULTI_ARGUMENT and n < 2) or (name not in _MULTI_ARGUMENT and n != 1):
            self.fail(f"{name}() takes {'two or more arguments' if name in _MULTI_ARGUMENT else 'one argument'}")
        args = [self.eval(a) for a in node.args]
        return self.call(name, args)

    def call(self, name, args):
        for a in args:
            if not isinstance(a, sympy.Basic):
                self.fail(f"{name} applies to scalars, not to {a}")
        if name in _PERIODIC and self.functions[name] is ALLOWED_FUNCTIONS[name] and not args[0].free_symbols:
            size = magnitude(args[0])
            if not size <= _MAX_PERIODIC_ARGUMENT:
                shown = f"{size:.3g}" if math.isfinite(size) else "beyond 1e308"
                self.fail(f"{name} of an argument of size {shown}: evaluating it needs the argument modulo 2 pi, "
                          f"about as many digits as the argument has; give an argument below "
                          f"{_MAX_PERIODIC_ARGUMENT:.0e}")
        return self.functions[name](*args)


def parse_scalar(text, names=None, *, what="value", new_symbols=False, complex_values=False):
    """Read a scalar formula over the whitelist; returns an exact sympy expression.

    Parameters
    ----------
    text : str
    names : dict, optional
        Name -> sympy value the formula may use (dimensions, parameters).
    what : str
        What is being read, named in every error.
    new_symbols : bool
        Turn unknown plain names into real symbols instead of refusing them.
    complex_values : bool
        Accept ``I`` and ``2j``-style literals.

    >>> p = sympy.Symbol("p", positive=True)
    >>> parse_scalar("sqrt(p)/2 + 0.25", {"p": p}, what="variance")
    sqrt(p)/2 + 1/4
    >>> parse_scalar("2**10**10**10", what="--set")
    Traceback (most recent call last):
    ...
    freeprob._errors.DomainError: --set: the exact power 10**10000000000 is too large (more than 100000 bits) in '2**10**10**10'
    """
    out = ScalarGrammar(names, what=what, new_symbols=new_symbols, complex_values=complex_values).parse(text)
    if not isinstance(out, sympy.Expr):
        raise DomainError(f"{what}: {text!r} is not a scalar")
    return out


# ----------------------------------------------------------------------------
# Numbers
# ----------------------------------------------------------------------------


def _from_mpf(v):
    """Exact value of a finite mpmath real: ``(-1)^sign man 2^exp`` from its raw tuple.

    (``mpf.man`` is the unsigned mantissa: reading it alone turned every
    negative mpmath number into its absolute value.)
    """
    sign, man, exp, _ = v._mpf_
    out = sympy.Integer(int(man)) * sympy.Integer(2) ** int(exp)
    return -out if sign else out


def _exact(value, what, real):
    if isinstance(value, bool):
        raise DomainError(f"{what}: expected a number, got {value!r}")
    if isinstance(value, str):
        return parse_scalar(value, what=what, complex_values=not real)
    if isinstance(value, numbers.Integral):
        return sympy.Integer(int(value))
    if isinstance(value, Fraction):
        return sympy.Rational(value.numerator, value.denominator)
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise DomainError(f"{what}: must be finite, got {value}")
        return sympy.Rational(str(value))
    if isinstance(value, numbers.Real) and not isinstance(value, sympy.Basic) and type(value).__name__ != "mpf":
        value = float(value)
        if not math.isfinite(value):
            raise DomainError(f"{what}: must be a finite number, got {value!r}")
        return sympy.Rational(repr(value))
    if isinstance(value, mpmath.mpf) or type(value).__name__ == "mpf":
        if not mpmath.isfinite(value):
            raise DomainError(f"{what}: must be a finite number, got {value}")
        return _from_mpf(value)
    if isinstance(value, mpmath.mpc) or type(value).__name__ == "mpc":
        if not (mpmath.isfinite(value.real) and mpmath.isfinite(value.imag)):
            raise DomainError(f"{what}: must be a finite number, got {value}")
        return _from_mpf(value.real) + sympy.I * _from_mpf(value.imag)
    if isinstance(value, numbers.Complex) and not isinstance(value, sympy.Basic):
        value = complex(value)
        if not (math.isfinite(value.real) and math.isfinite(value.imag)):
            raise DomainError(f"{what}: must be a finite number, got {value!r}")
        return sympy.Rational(repr(value.real)) + sympy.I * sympy.Rational(repr(value.imag))
    if isinstance(value, sympy.Basic):
        if not isinstance(value, sympy.Expr):
            raise DomainError(f"{what}: {value} is not a number")
        floats = value.atoms(sympy.Float)
        if floats:
            value = value.xreplace({f: sympy.Rational(str(f)) for f in floats})
        return value
    raise DomainError(f"{what}: expected a number, got {type(value).__name__} {value!r}")


def read_number(value, *, what, real=True, positive=False):
    """An exact sympy number from any user value.

    Parameters
    ----------
    value : int, float, Fraction, Decimal, str, mpmath or sympy number, numpy scalar
        Floats are read through their shortest decimal (``0.1`` is ``1/10``);
        strings through :func:`parse_scalar` (no names); mpmath numbers exactly.
    what : str
        What is being read (``"--at"``, ``"ratio of p"``), named in every error.
    real : bool
        Refuse complex values (default). With ``real=False``, ``1+2j``,
        ``"0.5 + 1e-3j"`` and ``"1 + 2*I"`` are accepted.
    positive : bool
        Refuse values that are not strictly positive.

    Raises
    ------
    DomainError
        For anything that is not a finite number of the requested kind.

    >>> read_number("0.5+1e-3j", what="z", real=False)
    1/2 + I/1000
    >>> read_number(float("nan"), what="p")
    Traceback (most recent call last):
    ...
    freeprob._errors.DomainError: p: must be a finite number, got nan
    """
    v = _exact(value, what, real)
    if not v.is_number:
        names = ", ".join(sorted(map(str, v.free_symbols)))
        raise DomainError(f"{what}: must be a number, got {value!r} (it contains {names})")
    if v.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo) or v.is_finite is False:
        raise DomainError(f"{what}: must be a finite number, got {value!r}")
    if real:
        if v.is_extended_real is not True:
            if v.is_extended_real is False:
                raise DomainError(f"{what}: must be a real number, got {value!r}")
            raise DomainError(f"{what}: cannot decide that {value!r} is real; give a simpler value")
    if positive and v.is_positive is not True:
        raise DomainError(f"{what}: must be positive, got {value!r}")
    return v


def read_scalar(value, *, what, names=None):
    """An exact scalar coefficient (a number or a formula in symbols).

    Strings are read by :func:`parse_scalar`; plain names not in ``names``
    become real symbols. Floats anywhere are made exact.

    >>> read_scalar("beta/2", what="scale")
    beta/2
    """
    if isinstance(value, str):
        return parse_scalar(value, names, what=what, new_symbols=True)
    if isinstance(value, sympy.Basic) and isinstance(value, sympy.Expr) and not value.is_number:
        floats = value.atoms(sympy.Float)
        return value.xreplace({f: sympy.Rational(str(f)) for f in floats}) if floats else value
    if isinstance(value, sympy.Basic) and not isinstance(value, sympy.Expr):
        raise DomainError(f"{what}: {value} is not a scalar expression")
    return read_number(value, what=what)


# ----------------------------------------------------------------------------
# Nonlinearities
# ----------------------------------------------------------------------------


def check_structure(expr, x, params, what):
    """Free symbols of a nonlinearity must be ``x`` or parameters, functions whitelisted."""
    allowed = {x, *params}
    extra = expr.free_symbols - allowed
    if extra:
        raise DomainError(f"unexpected symbols {sorted(map(str, extra))} in {what}")
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.Function) and not isinstance(node, _FUNCTION_CLASSES):
            raise DomainError(f"the function {node.func} in {what} is not allowed; allowed functions: {_ALLOWED_TEXT}")
        if isinstance(node, (sympy.Integral, sympy.Derivative, sympy.Piecewise)):
            raise DomainError(f"{type(node).__name__} is not allowed in {what}")
    _check_growth(expr, x, what)


def _exponentials(expr, x):
    """Subexpressions of ``expr`` that grow exponentially in ``x``: exp, cosh, sinh of something in ``x``,
    and powers whose exponent depends on ``x``."""
    out = []
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, (sympy.exp, sympy.cosh, sympy.sinh)) and node.args[0].has(x):
            out.append(node)
        elif isinstance(node, sympy.Pow) and node.exp.has(x):
            out.append(node)
    return out


def _check_growth(expr, x, what):
    """Refuse an exponential of an exponential (``exp(exp(x))``, ``2**exp(x)``, ``cosh(cosh(x))``) and ``x**x``.

    Their values at the far nodes of the Gaussian quadrature (``|x|`` near
    ``10^dps``) have exponents that no arbitrary-precision number holds.
    """
    for node in _exponentials(expr, x):
        inner = node.args[0] if not isinstance(node, sympy.Pow) else node.exp
        if isinstance(node, sympy.Pow) and node.base.has(x):
            raise DomainError(f"{node} in {what}: a power whose base and exponent both depend on {x} is not "
                              f"supported; write it as exp(...) of a function of {x}")
        nested = _exponentials(inner, x)
        if nested:
            raise DomainError(f"{node} in {what}: an exponential of an exponential ({nested[0]} inside it) grows too "
                              f"fast for the Gaussian integrals freeprob computes; use a nonlinearity whose "
                              f"exponentials have arguments without exp, cosh, sinh or powers in {x}")


def parse_nonlinearity(text, x="x"):
    """Parse an entrywise nonlinearity written as a string.

    The string may use the variable ``x`` (or the name given), numbers,
    ``+ - * / ** ^``, the constants ``pi`` and ``E``, the functions in
    :data:`ALLOWED_FUNCTIONS` and parameters: any other plain name that is
    not called as a function (``beta``, ``a2``). It is read by the scalar
    grammar (:func:`parse_scalar`), so nothing is evaluated as Python.

    Returns
    -------
    expr : sympy.Expr
    x : sympy.Symbol
    params : tuple of sympy.Symbol
        The parameters, sorted by name.

    Examples
    --------
    >>> expr, x, params = parse_nonlinearity("exp(beta*x - beta**2/2)")
    >>> expr, params
    (exp(-beta**2/2 + beta*x), (beta,))
    >>> parse_nonlinearity("__import__('os')")
    Traceback (most recent call last):
    ...
    freeprob._errors.DomainError: the nonlinearity: the function '__import__' is not allowed in "__import__('os')"; allowed functions: Abs, Heaviside, Max, Min, cos, cosh, erf, erfc, exp, log, sign, sin, sinh, sqrt, tanh
    """
    if not isinstance(text, str):
        raise DomainError(f"the nonlinearity must be a string or a sympy expression, got {type(text).__name__}")
    xname = str(x)
    if not _NAME_RE.match(xname) or xname in ALLOWED_FUNCTIONS or xname in _CONSTANTS or xname in _RESERVED:
        raise DomainError(f"{xname!r} cannot be the name of the variable")
    xsym = sympy.Symbol(xname)
    grammar = ScalarGrammar({xname: xsym}, what="the nonlinearity", new_symbols=True)
    expr = grammar.parse(text)
    if not isinstance(expr, sympy.Expr):
        raise DomainError(f"the nonlinearity {text!r} is not a scalar expression")
    # parameters are plain symbols, as a user writing sympy would make them
    plain = {s: sympy.Symbol(s.name) for s in grammar.created.values()}
    expr = expr.xreplace(plain)
    params = tuple(sorted(plain.values(), key=lambda s: s.name))
    check_structure(expr, xsym, params, f"the nonlinearity {text!r}")
    return expr, xsym, params


def read_points(values, *, real=False):
    """The points of a vectorized double-precision evaluation: a scalar or a 1-d array, as a 1-d numpy array
    (complex, or float with ``real=True``), every one finite; DomainError for anything else.

    >>> read_points(2), read_points([0.5, 1], real=True)
    (array([2.+0.j]), array([0.5, 1. ]))
    """
    kind = "real numbers" if real else "numbers"
    try:
        out = np.atleast_1d(np.asarray(values, dtype=float if real else complex))
    except (TypeError, ValueError):
        raise DomainError(f"points must be {kind} (a scalar or a 1-d array), got {values!r}") from None
    if out.ndim != 1:
        raise DomainError(f"points must be a scalar or a 1-d array, got an array of shape {out.shape}")
    if not np.all(np.isfinite(out)):
        raise DomainError(f"points must be finite numbers, got {values!r}")
    return out
