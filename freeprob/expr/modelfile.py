"""Model files (TOML): a public, versionable description of a model.

::

    name = "marchenko-pastur"
    description = "Eigenvalues of X X^T / n for a p x n Gaussian X"
    law = "eigenvalues"                 # or "squared-singular-values"
    expression = "X @ X.T / n"

    [dimensions]                        # ratios in the proportional limit
    p = 0.5
    n = 1

    [parameters]                        # optional named scalars
    # beta = 1.0

    [matrices.X]
    kind = "gaussian"                   # "gaussian", "wigner" or "identity"
    shape = ["p", "n"]
    variance = "1"                      # an expression in dimensions and parameters

Expressions are read by the scalar grammar of :mod:`freeprob._numbers`
(numbers, declared names, ``+ - * / **``, ``pi``, ``E``, the whitelisted
functions ``sqrt``, ``exp``, ``log``, ...) extended with ``@`` and ``.T``
(:class:`MatrixGrammar`); nothing is passed to ``eval``. Numbers are exact:
``0.5`` is ``1/2``; a value may also be a string such as ``"1/3"``.
"""

import ast
import tomllib
from pathlib import Path
from types import MappingProxyType

import sympy

from .._errors import DomainError, ModelFileError, ShapeError
from .._numbers import ScalarGrammar, read_number
from .tree import LAWS, Expr, Matrix, as_scalar

__all__ = ["Model", "load_model", "parse_model", "parse_expression", "builtin_models", "find_model"]

_KEYS = {"name", "description", "law", "expression", "dimensions", "parameters", "matrices"}


class Model:
    """A model read from a file: expression, law kind, ratios and parameters.

    A frozen description (``ratios`` and ``params`` are read-only mappings);
    :func:`freeprob.law_of` builds its :class:`~freeprob.SpectralLaw`.
    """

    __slots__ = ("name", "description", "law_kind", "expression", "expr", "ratios", "params", "source")

    def __init__(self, name, description, law, expression, expr, ratios, params, source=None):
        init = object.__setattr__
        init(self, "name", name)
        init(self, "description", description)
        init(self, "law_kind", law)
        init(self, "expression", expression)
        init(self, "expr", expr)
        init(self, "ratios", MappingProxyType(dict(ratios)))
        init(self, "params", MappingProxyType(dict(params)))
        init(self, "source", source)

    def __setattr__(self, name, value):
        raise AttributeError(f"a Model is immutable (cannot set {name!r}); use with_values for a changed copy")

    def __delattr__(self, name):
        raise AttributeError(f"a Model is immutable (cannot delete {name!r})")

    def with_values(self, overrides):
        """A copy with some dimensions or parameters replaced (``{name: value}``)."""
        ratios = dict(self.ratios)
        params = dict(self.params)
        by_name = {str(k): k for k in list(ratios) + list(params)}
        for key, value in overrides.items():
            if key not in by_name:
                known = ", ".join(sorted(by_name)) or "none"
                raise DomainError(f"--set {key}: model {self.name} has no dimension or parameter {key} (known: {known})")
            sym = by_name[key]
            v = read_number(value, what=f"--set {key}")
            if sym in ratios:
                if not v.is_number or not v > 0:
                    raise DomainError(f"--set {key}={value}: a ratio must be a positive number")
                ratios[sym] = v
            else:
                params[sym] = v
        return Model(self.name, self.description, self.law_kind, self.expression, self.expr, ratios, params, self.source)


def _fail(where, key, msg):
    raise ModelFileError(f"{where}: [{key}] {msg}")


class MatrixGrammar(ScalarGrammar):
    """The scalar grammar of :mod:`freeprob._numbers` plus matrices, ``@`` and ``.T``.

    Errors are :class:`ModelFileError` naming the file and the key.
    """

    def __init__(self, names, where, key):
        super().__init__(names, what=f"{where}: [{key}]")
        self.where, self.key = where, key

    def error(self, message):
        return ModelFileError(f"{self.what} {message}")

    def unknown_name(self, name):
        return f"unknown name {name!r}: declare it under [matrices], [dimensions] or [parameters],"

    def eval_Attribute(self, node):
        if node.attr != "T":
            self.fail(f"only the attribute .T is allowed, got .{node.attr}")
        val = self.eval(node.value)
        if not isinstance(val, Expr):
            self.fail(f".T applies to a matrix, got the scalar {val}")
        return val.T

    def binop(self, op, a, b):
        """Matrix rules first; the arithmetic itself is the scalar grammar's."""
        a_matrix, b_matrix = isinstance(a, Expr), isinstance(b, Expr)
        if isinstance(op, ast.MatMult):
            if not (a_matrix and b_matrix):
                self.fail("'@' needs two matrices")
        elif not (a_matrix or b_matrix):
            return super().binop(op, a, b)
        elif isinstance(op, ast.Mult) and a_matrix and b_matrix:
            self.fail("'*' between two matrices: use '@' for the matrix product")
        elif isinstance(op, ast.Div) and b_matrix:
            self.fail(f"cannot divide by the matrix {b}")
        elif isinstance(op, ast.Pow):
            self.fail("'**' applies to scalars only (write matrix products with '@')")
        try:
            return a @ b if isinstance(op, ast.MatMult) else super().binop(op, a, b)
        except ShapeError as exc:
            raise ShapeError(f"{self.where}: [{self.key}] {exc}") from None
        except (TypeError, DomainError) as exc:
            self.fail(str(exc))

    def call(self, name, args):
        for a in args:
            if isinstance(a, Expr):
                self.fail(f"{name} applies to scalars, not to the matrix {a}")
        return super().call(name, args)


def parse_expression(text, names, where="expression", key="expression"):
    """Evaluate ``text`` safely over ``names`` (matrices and scalar symbols)."""
    if not isinstance(text, str):
        _fail(where, key, f"expected a string, got {text!r}")
    return MatrixGrammar(names, where, key).parse(text)


def _number(value, where, key):
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        _fail(where, key, f"expected a number, got {value!r}")
    v = parse_expression(value, {}, where, key) if isinstance(value, str) else as_scalar(value)
    if isinstance(v, Expr) or not v.is_number or v.is_real is False:
        _fail(where, key, f"expected a real number, got {value!r}")
    return v


def parse_model(data, where="<model>"):
    """Build a :class:`Model` from a parsed TOML table."""
    if not isinstance(data, dict):
        raise ModelFileError(f"{where}: the model must be a TOML table")
    unknown = set(data) - _KEYS
    if unknown:
        _fail(where, sorted(unknown)[0], f"unknown key; allowed keys are {', '.join(sorted(_KEYS))}")
    for key in ("name", "law", "expression", "dimensions", "matrices"):
        if key not in data:
            _fail(where, key, "missing")
    name = data["name"]
    if not isinstance(name, str) or not name:
        _fail(where, "name", "must be a non-empty string")
    law = data["law"]
    if law not in LAWS:
        _fail(where, "law", f"must be one of {', '.join(LAWS)}, got {law!r}")
    if not isinstance(data["dimensions"], dict) or not data["dimensions"]:
        _fail(where, "dimensions", "must be a table of ratios, e.g. p = 0.5")
    dims = {}
    ratios = {}
    for dname, value in data["dimensions"].items():
        if not dname.isidentifier():
            _fail(where, f"dimensions.{dname}", "is not a valid name")
        sym = sympy.Symbol(dname, positive=True)
        v = _number(value, where, f"dimensions.{dname}")
        if not v > 0:
            raise DomainError(f"{where}: [dimensions.{dname}] the ratio must be positive, got {value!r}")
        dims[dname] = sym
        ratios[sym] = v
    params = {}
    psyms = {}
    for pname, value in (data.get("parameters") or {}).items():
        if not pname.isidentifier() or pname in dims:
            _fail(where, f"parameters.{pname}", "is not a valid name or clashes with a dimension")
        sym = sympy.Symbol(pname, real=True)
        psyms[pname] = sym
        params[sym] = _number(value, where, f"parameters.{pname}")
    scalars = dict(dims)
    scalars.update(psyms)
    mats = {}
    if not isinstance(data["matrices"], dict) or not data["matrices"]:
        _fail(where, "matrices", "must declare at least one matrix")
    for mname, spec in data["matrices"].items():
        key = f"matrices.{mname}"
        if not mname.isidentifier() or mname in scalars:
            _fail(where, key, "is not a valid name or clashes with a dimension or parameter")
        if not isinstance(spec, dict):
            _fail(where, key, "must be a table")
        extra = set(spec) - {"kind", "shape", "variance"}
        if extra:
            _fail(where, f"{key}.{sorted(extra)[0]}", "unknown key; allowed: kind, shape, variance")
        kind = spec.get("kind", "gaussian")
        if kind not in ("gaussian", "wigner", "identity"):
            _fail(where, f"{key}.kind", f"must be gaussian, wigner or identity, got {kind!r}")
        shape = spec.get("shape")
        if not isinstance(shape, list) or len(shape) != 2 or not all(isinstance(s, str) for s in shape):
            _fail(where, f"{key}.shape", "must be a list of two dimension names, e.g. [\"p\", \"n\"]")
        for s in shape:
            if s not in dims:
                _fail(where, f"{key}.shape", f"unknown dimension {s!r}; declare it under [dimensions]")
        var_text = spec.get("variance", "1")
        if isinstance(var_text, (int, float)) and not isinstance(var_text, bool):
            var = _number(var_text, where, f"{key}.variance")
        elif isinstance(var_text, str):
            var = parse_expression(var_text, scalars, where, f"{key}.variance")
        else:
            _fail(where, f"{key}.variance", f"expected a number or an expression string, got {var_text!r}")
        if isinstance(var, Expr):
            _fail(where, f"{key}.variance", "must be a scalar expression")
        try:
            mats[mname] = Matrix(mname, (dims[shape[0]], dims[shape[1]]), kind, var)
        except (DomainError, ShapeError) as exc:
            raise type(exc)(f"{where}: [{key}] {exc}") from None
    names = dict(scalars)
    names.update(mats)
    text = data["expression"]
    if not isinstance(text, str):
        _fail(where, "expression", "must be a string")
    expr = parse_expression(text, names, where, "expression")
    if not isinstance(expr, Expr):
        _fail(where, "expression", f"{text!r} is a scalar, not a matrix expression")
    used = set(expr.dimensions())
    for sym in list(ratios):
        if sym not in used and sym not in expr.free_scalars():
            del ratios[sym]
    desc = data.get("description", "")
    return Model(name, desc, law, text, expr, ratios, params, where)


def load_model(path):
    """Read a model file (TOML)."""
    path = Path(path)
    if path.is_dir():
        raise ModelFileError(f"{path}: is a folder, not a model file; give the path of a .toml file")
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ModelFileError(f"{path}: no such model file") from None
    except UnicodeDecodeError as exc:
        raise ModelFileError(f"{path}: not a UTF-8 text file ({exc.reason} at byte {exc.start}); save it as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ModelFileError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ModelFileError(f"{path}: cannot read the model file ({exc.strerror})") from None
    return parse_model(data, str(path))


def _builtin_dir():
    from importlib import resources

    try:
        return resources.files("freeprob.models")
    except ModuleNotFoundError:  # pragma: no cover - running from a bare checkout
        return Path(__file__).resolve().parent.parent / "models"


def builtin_models():
    """``{name: Traversable}`` of the model files shipped with freeprob."""
    out = {}
    for entry in sorted(_builtin_dir().iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            out[entry.name[:-5]] = entry
    return out


def find_model(spec):
    """A :class:`Model` from a path or a built-in name."""
    p = Path(spec)
    if p.suffix == ".toml" or p.exists():
        return load_model(p)
    models = builtin_models()
    if spec not in models:
        raise ModelFileError(f"{spec}: neither a model file nor a built-in model (built-in: {', '.join(models)})")
    with models[spec].open("rb") as fh:
        data = tomllib.load(fh)
    return parse_model(data, f"built-in model {spec}")
