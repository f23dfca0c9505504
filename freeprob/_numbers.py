"""Safe parsing of an entrywise nonlinearity and of exact parameter values.

A nonlinearity handed to :func:`freeprob._equivalence.gaussian_equivalent`
may be a string such as ``"exp(beta*x - beta**2/2)"``. It is read by
:func:`parse_nonlinearity` without evaluating anything as Python: every token
is checked against a whitelist (the variable, numbers, ``+ - * / ** ^ ( ) ,``,
the constants ``pi`` and ``E``, the functions in :data:`ALLOWED_FUNCTIONS`
and parameter names), numeric powers too large to evaluate exactly are
refused, and the symbols and functions of the parsed expression are checked
again. Decimal literals are read exactly (``0.5`` is ``1/2``).

Parameter values (int, Fraction, float read by its repr, decimal string,
mpmath or sympy number) are converted to exact sympy real numbers, refusing
anything non-real or non-finite.
"""

import io
import keyword
import math
import re
import tokenize
from fractions import Fraction

import mpmath
import sympy
from sympy.parsing.sympy_parser import (
    convert_xor,
    parse_expr,
    rationalize,
    standard_transformations,
)

from ._errors import DomainError

__all__ = [
    "parse_nonlinearity",
    "ALLOWED_FUNCTIONS",
]

#: Functions a nonlinearity may use (names as written in a string).
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
_CONSTANTS = {"pi": sympy.pi, "E": sympy.E}
_FUNCTION_CLASSES = (
    sympy.exp, sympy.log, sympy.tanh, sympy.sinh, sympy.cosh, sympy.sin, sympy.cos,
    sympy.erf, sympy.erfc, sympy.Abs, sympy.Max, sympy.Min, sympy.Heaviside, sympy.sign,
)
_ALLOWED_OPS = {"+", "-", "*", "/", "**", "^", "(", ")", ","}
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
# names the parser's generated code uses; a parameter may not shadow them
_RESERVED = {"Integer", "Float", "Rational", "Symbol", "Add", "Mul", "Pow"}
_MAX_LENGTH = 1000


# ----------------------------------------------------------------------------
# Safe parsing
# ----------------------------------------------------------------------------


def _check_tokens(text):
    """Reject any token of ``text`` outside the whitelist; return the parameter names."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError) as exc:
        raise DomainError(f"cannot read the nonlinearity {text!r}: {exc}") from None
    skip = {tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER}
    tokens = [t for t in tokens if t.type not in skip]
    names = set()
    for i, tok in enumerate(tokens):
        nxt = tokens[i + 1].string if i + 1 < len(tokens) else ""
        where = f"in the nonlinearity {text!r}"
        if tok.type == tokenize.NAME:
            name = tok.string
            if keyword.iskeyword(name) or not _NAME_RE.match(name) or name in _RESERVED:
                raise DomainError(f"the token {name!r} is not allowed {where}")
            if name in ALLOWED_FUNCTIONS:
                if nxt != "(":
                    raise DomainError(f"the function {name!r} must be called, as {name}(...), {where}")
            elif nxt == "(":
                allowed = ", ".join(sorted(ALLOWED_FUNCTIONS))
                raise DomainError(
                    f"the function {name!r} is not allowed {where}; allowed functions: {allowed}"
                )
            elif name not in _CONSTANTS:
                names.add(name)
        elif tok.type == tokenize.NUMBER:
            if tok.string[-1] in "jJ" or len(tok.string) > 60:
                raise DomainError(f"the number {tok.string!r} is not allowed {where} (real literals only)")
        elif tok.type == tokenize.OP:
            if tok.string not in _ALLOWED_OPS:
                raise DomainError(f"the operator {tok.string!r} is not allowed {where}")
        else:
            raise DomainError(f"the token {tok.string!r} is not allowed {where}")
    return names


class _TooLarge(Exception):
    pass


def _rational_size(node):
    """Approximate value of a pure rational-arithmetic subtree (None if not one)."""
    if isinstance(node, sympy.Rational):
        try:
            return float(node)
        except OverflowError:
            raise _TooLarge from None
    if isinstance(node, (sympy.Add, sympy.Mul, sympy.Pow)):
        vals = [_rational_size(a) for a in node.args]
        if any(v is None for v in vals):
            return None
        try:
            if isinstance(node, sympy.Add):
                out = math.fsum(vals)
            elif isinstance(node, sympy.Mul):
                out = math.prod(vals)
            else:
                if vals[0] == 0 and vals[1] < 0:
                    return None
                out = abs(vals[0]) ** vals[1]
        except (OverflowError, ZeroDivisionError):
            raise _TooLarge from None
        if not math.isfinite(out) or abs(out) > 1e300:
            raise _TooLarge
        return out
    return None


def _check_literal_powers(expr, text):
    """Refuse ``9**9**9``-like literals before SymPy evaluates them exactly."""
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.Pow):
            try:
                _rational_size(node)
            except _TooLarge:
                raise DomainError(
                    f"the numeric power {node} in the nonlinearity {text!r} is too large"
                ) from None


def _check_structure(expr, x, params, what):
    """Free symbols must be ``x`` or parameters, functions must be whitelisted."""
    allowed = {x, *params}
    extra = expr.free_symbols - allowed
    if extra:
        raise DomainError(f"unexpected symbols {sorted(map(str, extra))} in {what}")
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.Function) and not isinstance(node, _FUNCTION_CLASSES):
            raise DomainError(
                f"the function {node.func} in {what} is not allowed; allowed functions: "
                + ", ".join(sorted(ALLOWED_FUNCTIONS))
            )
        if isinstance(node, (sympy.Integral, sympy.Derivative, sympy.Piecewise)):
            raise DomainError(f"{type(node).__name__} is not allowed in {what}")


def parse_nonlinearity(text, x="x"):
    """Parse a nonlinearity written as a string, accepting only whitelisted names.

    The string may use the variable ``x`` (or the name given), numbers,
    ``+ - * / ** ^ ( ) ,``, the constants ``pi`` and ``E``, the functions in
    :data:`ALLOWED_FUNCTIONS` (``exp, log, sqrt, tanh, erf, Abs, Max,
    Heaviside, ...``) and parameters: any other plain identifier that is not
    called as a function (``beta``, ``a2``). Nothing is evaluated as Python:
    the tokens are checked first, then :func:`sympy.parsing.sympy_parser.parse_expr`
    runs with a dictionary built from the whitelist only (no builtins), and
    the result's symbols and functions are checked again. Decimal literals are
    read exactly (``0.5`` is ``1/2``).

    Parameters
    ----------
    text : str
        The nonlinearity, e.g. ``"exp(beta*x - beta**2/2)"``.
    x : str, optional
        Name of the variable. Default ``"x"``.

    Returns
    -------
    expr : sympy.Expr
        The expression, in plain symbols ``Symbol(name)``.
    x : sympy.Symbol
        The variable.
    params : tuple of sympy.Symbol
        The parameters, sorted by name.

    Raises
    ------
    DomainError
        For any token, function or construct outside the whitelist; the
        message names it.

    Examples
    --------
    >>> expr, x, params = parse_nonlinearity("exp(beta*x - beta**2/2)")
    >>> expr, params
    (exp(-beta**2/2 + beta*x), (beta,))
    >>> parse_nonlinearity("__import__('os')")
    Traceback (most recent call last):
    ...
    freeprob._errors.DomainError: the token '__import__' is not allowed in the nonlinearity "__import__('os')"
    """
    if not isinstance(text, str):
        raise DomainError(f"the nonlinearity must be a string or a sympy expression, got {type(text).__name__}")
    xname = str(x)
    if not _NAME_RE.match(xname) or xname in ALLOWED_FUNCTIONS or xname in _CONSTANTS:
        raise DomainError(f"{xname!r} cannot be the name of the variable")
    text = text.strip()
    if not text:
        raise DomainError("the nonlinearity is empty")
    if len(text) > _MAX_LENGTH:
        raise DomainError(f"the nonlinearity is longer than {_MAX_LENGTH} characters")
    names = _check_tokens(text)
    xsym = sympy.Symbol(xname)
    params = tuple(sympy.Symbol(n) for n in sorted(names - {xname}))
    local = {p.name: p for p in params}
    local[xname] = xsym
    local.update(ALLOWED_FUNCTIONS)
    local.update(_CONSTANTS)
    glob = {
        "__builtins__": {},
        "Integer": sympy.Integer,
        "Float": sympy.Float,
        "Rational": sympy.Rational,
        "Symbol": sympy.Symbol,
        "Add": sympy.Add,
        "Mul": sympy.Mul,
        "Pow": sympy.Pow,
    }
    transformations = standard_transformations + (convert_xor, rationalize)
    what = f"the nonlinearity {text!r}"
    try:
        raw = parse_expr(text, local_dict=dict(local), global_dict=dict(glob),
                         transformations=transformations, evaluate=False)
        if not isinstance(raw, sympy.Expr):
            raise DomainError(f"{what} is not a scalar expression")
        _check_literal_powers(raw, text)
        expr = parse_expr(text, local_dict=dict(local), global_dict=dict(glob),
                          transformations=transformations)
    except DomainError:
        raise
    except Exception as exc:  # SyntaxError, TypeError from a malformed call, ...
        raise DomainError(f"cannot parse {what}: {exc}") from None
    if not isinstance(expr, sympy.Expr) or isinstance(expr, sympy.Tuple):
        raise DomainError(f"{what} is not a scalar expression")
    _check_structure(expr, xsym, params, what)
    return expr, xsym, params


# ----------------------------------------------------------------------------
# Exact parameter values
# ----------------------------------------------------------------------------


def _exact_value(name, value):
    """An exact sympy real number from a user value (floats are read by their repr)."""
    if isinstance(value, bool):
        raise DomainError(f"parameter {name!r} must be a real number, got {value!r}")
    try:
        if isinstance(value, int):
            out = sympy.Integer(value)
        elif isinstance(value, Fraction):
            out = sympy.Rational(value.numerator, value.denominator)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise DomainError(f"parameter {name!r} must be finite, got {value!r}")
            out = sympy.Rational(repr(value))
        elif isinstance(value, str):
            out, _, extra = parse_nonlinearity(value, x="x")
            if extra or out.free_symbols:
                raise DomainError(f"the value {value!r} of parameter {name!r} is not a number")
        elif isinstance(value, mpmath.mpf) or type(value).__name__ == "mpf":
            if not mpmath.isfinite(value):
                raise DomainError(f"parameter {name!r} must be finite, got {value!r}")
            out = sympy.Integer(int(value.man)) * sympy.Integer(2) ** int(value.exp)
        else:
            out = sympy.sympify(value, strict=True)
    except DomainError:
        raise
    except Exception:
        raise DomainError(f"parameter {name!r} must be a real number, got {value!r}") from None
    if not (isinstance(out, sympy.Expr) and out.is_number and out.is_extended_real):
        raise DomainError(f"parameter {name!r} must be a real number, got {value!r}")
    if not out.is_finite:
        raise DomainError(f"parameter {name!r} must be finite, got {value!r}")
    return out
