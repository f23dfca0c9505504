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

A file with ``model = "causal-attention"`` instead of an ``expression`` is a
named model, read by :mod:`freeprob.expr.causal_model`.

Entrywise functions and definitions
-----------------------------------
``[functions]`` declares functions of one real variable ``x`` (formulas of the
same grammar, in ``x``, the parameters and the ``[indices]`` constants);
``f(A)`` in an expression is ``f`` applied to every entry of the matrix ``A``,
reduced as its Gaussian equivalent (:mod:`freeprob.expr.entrywise`).
``[define]`` names sub-expressions, usable in ``expression`` and in each other
(read once; cycles and unknown names are errors naming them)::

    expression = "Y @ Y.T / m"

    [functions]
    f = "tanh(x)"

    [define]
    Y = "f(W @ X / sqrt(n0))"

Sums over indices
-----------------
(The full reference of the format, with examples of every error, is
docs/model-files.md.) A sum of many terms that differ only in their matrices (the heads of an
attention layer) is written once::

    expression = "sum(h, 1, H, (beta * Q[h] @ K[h].T / sqrt(d_h) + c * Z[h]) / sqrt(l) @ V[h] @ W[h])"

    [indices]                           # integer constants: index ranges
    H = 64
    G = 8
    n = "H/G"                           # a formula in the constants above it

    [matrices.Q]
    shape = ["l", "d_h"]
    index = "H"                         # one independent matrix Q[1] ... Q[H]

    [matrices.W]
    shape = ["d_v", "d_out"]
    index = "H"
    variance = "1/(H*d_v)"              # constants are numbers in every formula

* ``[indices]`` declares integer constants, each a positive integer or a
  string formula in the constants declared before it, at most
  :data:`MAX_TERMS`. They may be used as numbers anywhere a formula is read:
  variances, coefficients of the expression, values of dimensions and
  parameters.
* ``index`` in a ``[matrices.NAME]`` table makes ``NAME`` an *indexed family*:
  ``index = "H"`` declares the independent matrices ``NAME[1]`` ...
  ``NAME[H]``; ``index = ["G", "n"]`` declares ``NAME[g, j]`` for ``g <= G``,
  ``j <= n``. A range is a constant, a positive integer or a formula in the
  constants. All members share the family's kind, shape and variance. The
  member ``NAME[i]`` is the leaf named ``NAME_i`` (``NAME[g, j]``:
  ``NAME_g_j``), so no other declared name may have that form.
* ``sum(i, first, last, term)`` is the sum over ``i = first, ..., last`` of
  ``term`` with the integer ``i`` in scope; sums nest
  (``sum(g, 1, G, sum(j, 1, n, ... K[g] ... Q[n*(g-1) + j] ...))``). The
  index name must be new (not a declared name, not the index of an enclosing
  sum). Bounds and subscripts are integer formulas in constants and enclosing
  indices (``+ - * /``; a division must be exact). Inside ``term`` the index
  is also a number (``sum(h, 1, H, Q[h] / h)``).
* The expansion is the ordinary flat sum of its terms, the same expression
  as the file written term by term: every other part of freeprob (reduction,
  the symmetry quotient of exchangeable terms, Monte-Carlo) sees no
  difference. At most :data:`MAX_TERMS` terms are expanded in all (counted
  over the innermost sums of the expression); a larger file is refused
  before it is expanded.

Every mistake (an index outside its sum, an unknown family, a subscript of
the wrong arity or out of range, a family used without a subscript, an index
used as a matrix, bounds that are not integers, an empty or too long range)
is a :class:`~freeprob.ModelFileError` naming the file, the key and the
piece.

>>> model = parse_model({
...     "name": "wishart-sum", "law": "eigenvalues", "expression": "sum(h, 1, H, X[h] @ X[h].T) / (H * n)",
...     "indices": {"H": 3}, "dimensions": {"p": 0.5, "n": 1},
...     "matrices": {"X": {"shape": ["p", "n"], "index": "H"}}})
>>> print(model.expr)
(X_1 @ X_1.T + X_2 @ X_2.T + X_3 @ X_3.T)/(3*n)
>>> parse_model({"name": "m", "law": "eigenvalues", "expression": "X[h] @ X[h].T", "indices": {"H": 3},
...              "dimensions": {"p": 1}, "matrices": {"X": {"shape": ["p", "p"], "index": "H"}}}, "m.toml")
Traceback (most recent call last):
...
freeprob._errors.ModelFileError: m.toml: [expression] the name 'h' is not defined here: subscripts and bounds use integers, [indices] constants and the indices of enclosing sums (an index exists only inside its sum, as in sum(h, 1, N, X[h])) in 'X[h] @ X[h].T'
"""

import ast
import copy
import os
import re
import tomllib
from pathlib import Path

import sympy

from .._errors import DomainError, EquivalenceError, ModelFileError, NotSelfAdjointError, ScalingError, ShapeError
from .._numbers import ALLOWED_FUNCTIONS, ScalarGrammar
from .causal_model import parse_causal_model
from .entrywise import entrywise
from .kernel import kernel_matrix
from .model import Model
from .softmax import Softmax, check_softmax_regime, softmax
from .tree import LAWS, Expr, Matrix, Sum, as_scalar, inv

__all__ = ["MAX_TERMS", "Model", "generated_noise_name", "load_model", "parse_model", "parse_expression",
           "builtin_models", "find_model"]

_KEYS = {"name", "description", "law", "expression", "dimensions", "parameters", "indices", "matrices", "functions",
         "define"}
_MATRIX_KEYS = ("kind", "shape", "variance", "index", "spectrum", "profile")
#: Most terms the sums of one model file expand to, together (and the largest index range).
MAX_TERMS = 4096
#: Names a model file may not declare: what each one is.
_RESERVED_NAMES = {"sum": "sum(i, first, last, term) is a sum over an index",
                   "inv": "inv(M) is the inverse of a square symmetric matrix expression",
                   "zero_diagonal": "zero_diagonal(f(X @ X.T / sqrt(p))) is a kernel matrix",
                   "softmax": "softmax(M) is the centred row-wise softmax sqrt(n) (A - 1 1^T/n) of an m x n matrix"}


def _fail(where, key, msg):
    raise ModelFileError(f"{where}: [{key}] {msg}")


class _Family:
    """An indexed family of matrices: one independent leaf per index tuple, made when first used.

    Parameters
    ----------
    name : str
    sizes : tuple of int
        The range of each subscript (``Q[i]`` with ``1 <= i <= sizes[0]``).
    shape, kind, variance
        Shared by every member (see :class:`~freeprob.expr.tree.Matrix`).
    """

    __slots__ = ("name", "sizes", "shape", "kind", "variance", "members")

    def __init__(self, name, sizes, shape, kind, variance):
        self.name, self.sizes, self.shape, self.kind, self.variance = name, tuple(sizes), shape, kind, variance
        self.members = {}

    def member(self, values):
        """The leaf ``name_i_j...`` of the index tuple ``values`` (1-based ints)."""
        leaf = self.members.get(values)
        if leaf is None:
            leaf = Matrix(member_name(self.name, values), self.shape, self.kind, self.variance)
            self.members[values] = leaf
        return leaf

    def describe(self):
        """``Q[1..64]`` or ``Q[1..8, 1..8]``."""
        return f"{self.name}[{', '.join(f'1..{n}' for n in self.sizes)}]"


def member_name(family, values):
    """The leaf name of a family member: ``member_name("Q", (3,))`` is ``"Q_3"``, ``(2, 5)`` gives ``"Q_2_5"``."""
    return family + "".join(f"_{int(v)}" for v in values)


def _calls_sum(node):
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "sum" for n in ast.walk(node))


class MatrixGrammar(ScalarGrammar):
    """The scalar grammar of :mod:`freeprob._numbers` plus matrices, ``@``, ``.T``, indexed families and ``sum``.

    Parameters
    ----------
    names : dict
        Name -> sympy scalar or :class:`~freeprob.expr.tree.Matrix`.
    where, key : str
        The file and the key being read, named in every error.
    families : dict, optional
        Name -> indexed family (``Q[h]``).
    unknown : str, optional
        What to say about an unknown name (default: where to declare it).

    Errors are :class:`ModelFileError` naming the file and the key.
    ``sum(i, first, last, term)`` evaluates ``term`` once per value of ``i``
    (bound as an exact integer in ``names`` while it runs) and adds the
    results; the number of terms of the innermost sums is counted against
    :data:`MAX_TERMS` before each sum runs.
    """

    def __init__(self, names, where, key, families=None, unknown=None, scope=None):
        super().__init__(names, what=f"{where}: [{key}]")
        self.where, self.key = where, key
        self.families = dict(families or {})
        self.unknown = unknown
        self.scope = scope  # the file's [functions] and [define], or None
        self.bound = []  # indices of the enclosing sums, innermost last
        self.in_index = 0  # > 0 while reading a subscript or a bound
        self.counter = scope if scope is not None else self  # .expanded: terms of innermost sums so far
        self.expanded = 0

    def error(self, message):
        return ModelFileError(f"{self.what} {message}")

    def unknown_name(self, name):
        if self.in_index:
            return (f"the name {name!r} is not defined here: subscripts and bounds use integers, [indices] "
                    f"constants and the indices of enclosing sums (an index exists only inside its sum, as in "
                    f"sum({name}, 1, N, X[{name}]))")
        if self.unknown:
            return f"unknown name {name!r}: {self.unknown},"
        return f"unknown name {name!r}: declare it under [matrices], [dimensions], [parameters], [indices] or [define],"

    # -- indexed families and sums ------------------------------------------
    def eval_Name(self, node):
        family = self.families.get(node.id)
        if family is not None:
            self.fail(f"{node.id} is an indexed family ({family.describe()}): use one member, as in "
                      f"{node.id}[{', '.join('ijk'[:len(family.sizes)]) if len(family.sizes) <= 3 else '...'}] "
                      f"inside a sum,")
        if node.id == "sum" and node.id not in self.names:
            self.fail("sum must be called, as sum(i, first, last, term),")
        if self.scope is not None and node.id not in self.names:
            if node.id in self.scope.texts:
                return self.scope.value(node.id)
            if node.id in self.scope.functions:
                self.fail(f"{node.id} is an entrywise function: call it on a matrix, as {node.id}(W @ X / sqrt(n0)),")
        return super().eval_Name(node)

    def integer(self, node, what):
        """The exact integer value of an index formula (a subscript or a bound)."""
        self.in_index += 1
        try:
            value = self.eval(node)
        finally:
            self.in_index -= 1
        if isinstance(value, Expr) or not isinstance(value, sympy.Basic) or not value.is_Integer:
            segment = ast.get_source_segment(self.source, node) or "?"
            self.fail(f"{what} must be an integer: {segment!r} is {value} (write integers, [indices] constants "
                      f"and indices of enclosing sums, with + - * and exact /)")
        return int(value)

    def eval_Subscript(self, node):
        if not isinstance(node.value, ast.Name):
            self.fail("only a declared family may be subscripted, as Q[h]")
        name = node.value.id
        family = self.families.get(name)
        if family is None:
            if isinstance(self.names.get(name), Matrix):
                self.fail(f"{name} is a single matrix, not an indexed family: drop the subscript, or add "
                          f"index = \"N\" under [matrices.{name}] for one matrix per value 1..N")
            if name in self.names:
                self.fail(f"{name} is a scalar, not an indexed family of matrices")
            self.fail(f"unknown indexed family {name!r}: declare it under [matrices.{name}] with index = \"N\"")
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if any(isinstance(i, (ast.Slice, ast.Starred)) for i in items):
            self.fail(f"{name}[...] takes integer subscripts, not slices")
        if len(items) != len(family.sizes):
            self.fail(f"{name} has {len(family.sizes)} subscript{'s' if len(family.sizes) > 1 else ''} "
                      f"({family.describe()}), got {len(items)}")
        values = []
        for position, (item, size) in enumerate(zip(items, family.sizes)):
            v = self.integer(item, f"the subscript {position + 1} of {name}")
            if not 1 <= v <= size:
                self.fail(f"the subscript {position + 1} of {name} is outside its range 1..{size} "
                          f"({family.describe()}): {ast.get_source_segment(self.source, item)!r} is {v}")
            values.append(v)
        return family.member(tuple(values))

    def eval_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == "sum":
            return self.sum_call(node)
        if isinstance(node.func, ast.Name) and node.func.id == "inv":
            return self.inverse(node)
        if isinstance(node.func, ast.Name) and self.scope is not None and node.func.id in self.scope.functions:
            return self.scope.apply(node.func.id, node, self)
        if isinstance(node.func, ast.Name) and node.func.id == "zero_diagonal" and self.scope is not None:
            return self.scope.zero_diagonal(node, self)
        if isinstance(node.func, ast.Name) and node.func.id == "softmax" and self.scope is not None:
            return self.scope.softmax(node, self)
        return super().eval_Call(node)

    def inverse(self, node):
        """``inv(M)``: the inverse of a square, symmetric matrix expression (:func:`~freeprob.expr.tree.inv`)."""
        usage = "inv(M) with M a square symmetric matrix expression, e.g. inv(X @ X.T / n + lam * I)"
        if node.keywords or len(node.args) != 1 or isinstance(node.args[0], ast.Starred):
            self.fail(f"inv takes one argument: {usage},")
        arg = self.eval(node.args[0])
        if not isinstance(arg, Expr):
            self.fail(f"inv applies to matrices, not to the scalar {arg} (write 1/c for a scalar): {usage},")
        try:
            return inv(arg)
        except (ShapeError, NotSelfAdjointError) as exc:
            raise type(exc)(f"{self.where}: [{self.key}] {exc} (in {self.shown()})") from None

    def sum_call(self, node):
        """``sum(i, first, last, term)``: the expanded sum over ``i``."""
        usage = "sum(i, first, last, term), e.g. sum(h, 1, H, Q[h])"
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args) or len(node.args) != 4:
            self.fail(f"sum takes four plain arguments: {usage},")
        index, first, last, body = node.args
        if not isinstance(index, ast.Name):
            self.fail(f"the first argument of sum must be a new index name: {usage},")
        i = index.id
        if i in self.bound:
            self.fail(f"the index {i!r} is already the index of an enclosing sum; choose another letter")
        declared = self.scope is not None and (i in self.scope.texts or i in self.scope.functions)
        if declared or i in self.names or i in self.families or i in self.functions or i in ("pi", "E", "I", "sum"):
            self.fail(f"the index {i!r} of a sum is already a declared name or a constant; choose another letter")
        lo = self.integer(first, f"the first value of {i}")
        hi = self.integer(last, f"the last value of {i}")
        if hi < lo:
            self.fail(f"the range of {i} is empty ({lo}..{hi}); a sum needs first <= last")
        count = hi - lo + 1
        innermost = not _calls_sum(body)
        if count > MAX_TERMS:
            self.fail(f"the sum over {i} has {count} terms, more than {MAX_TERMS} (the limit of a model file); "
                      f"use fewer terms")
        if innermost and self.counter.expanded + count > MAX_TERMS:
            self.fail(f"the sums expand to more than {MAX_TERMS} terms in all (the limit of a model file): "
                      f"{self.counter.expanded} before this sum over {i}, which adds {count}; use fewer terms")
        if innermost:
            self.counter.expanded += count
        self.bound.append(i)
        values = []
        try:
            for v in range(lo, hi + 1):
                self.names[i] = sympy.Integer(v)
                values.append(self.eval(body))
        finally:
            self.bound.pop()
            self.names.pop(i, None)
        matrices = [isinstance(v, Expr) for v in values]
        if all(matrices):
            terms = []
            for v in values:
                if v.shape != values[0].shape:
                    raise ShapeError(f"{self.where}: [{self.key}] the terms of sum({i}, ...) have different shapes: "
                                     f"{values[0]} is ({values[0].shape[0]}, {values[0].shape[1]}), {v} is "
                                     f"({v.shape[0]}, {v.shape[1]})")
                terms.extend(v.terms if type(v) is Sum else (v,))
            return terms[0] if len(terms) == 1 else Sum(tuple(terms))
        if any(matrices):
            self.fail(f"the terms of sum({i}, ...) mix matrices and scalars")
        return sympy.Add(*values)

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
                self.fail(f"{name} applies to scalars, not to the matrix {a} (to apply a function to every entry, "
                          f"declare it under [functions], as f = \"{name}(x)\", and write f(...))")
        return super().call(name, args)


def generated_noise_name(fname, k):
    """The name a model file gives the Gaussian leaf of the ``k``-th argument of ``fname`` (from 1): Z_f, Z2_f, ...

    The names declared in the file are skipped (the next ``k`` is used), so a
    builder that writes a file without such names can name its leaves alike.

    >>> generated_noise_name("softmax", 1), generated_noise_name("softmax", 2)
    ('Z_softmax', 'Z2_softmax')
    """
    return f"Z_{fname}" if k == 1 else f"Z{k}_{fname}"


class _Scope:
    """The ``[functions]`` and ``[define]`` of one file: definitions read when first used, entrywise nodes made once.

    Parameters
    ----------
    names : dict
        The declared scalars and matrices (what a definition may use besides
        other definitions and the functions).
    where : str
    families : dict
    functions : dict
        Name -> sympy expression in ``x``.
    x : sympy.Symbol
    texts : dict
        Name -> the text of each definition.
    taken : set of str
        Declared names (a generated noise leaf avoids them).
    """

    def __init__(self, names, where, families, functions, x, texts, taken):
        self.names, self.where, self.families = dict(names), where, families
        self.functions, self.x, self.texts = functions, x, texts
        self.taken = set(taken)
        self.values = {}
        self.stack = []  # definitions being read, outermost first
        self.nodes = {}  # (function name, argument) -> Entrywise
        self.expanded = 0  # terms of innermost sums, over the whole file

    def value(self, name):
        """The value of the definition ``name`` (read once; a cycle is a ModelFileError naming it)."""
        if name in self.values:
            return self.values[name]
        if name in self.stack:
            cycle = self.stack[self.stack.index(name):] + [name]
            raise ModelFileError(f"{self.where}: [define.{cycle[0]}] the definitions refer to each other in a cycle: "
                                 f"{' -> '.join(cycle)}; a definition may use declared names and other definitions, "
                                 f"never itself")
        self.stack.append(name)
        try:
            grammar = MatrixGrammar(self.names, self.where, f"define.{name}", self.families, scope=self, unknown=(
                "declare it under [matrices], [dimensions], [parameters], [indices], [functions] or [define]"))
            value = grammar.parse(self.texts[name])
        finally:
            self.stack.pop()
        self.values[name] = value
        return value

    def noise_name(self, fname):
        """A fresh leaf name for the Gaussian part of ``fname``'s next argument: Z_f, then Z2_f, Z3_f, ..."""
        k = 1
        while True:
            name = generated_noise_name(fname, k)
            if name not in self.taken and not any(re.fullmatch(re.escape(fam) + r"(_[0-9]+)+", name)
                                                  for fam in self.families):
                self.taken.add(name)
                return name
            k += 1

    def zero_diagonal(self, node, grammar):
        """``zero_diagonal(f(G))``: the kernel matrix of a declared function ``f`` and a Gram matrix ``G``."""
        usage = "zero_diagonal(f(X @ X.T / sqrt(p))), with f declared under [functions]"
        if node.keywords or len(node.args) != 1:
            grammar.fail(f"zero_diagonal takes one argument: {usage},")
        inner = node.args[0]
        if not (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id in self.functions
                and len(inner.args) == 1 and not inner.keywords and not isinstance(inner.args[0], ast.Starred)):
            grammar.fail(f"zero_diagonal applies to an entrywise function of a Gram matrix (a kernel matrix): {usage},")
        fname = inner.func.id
        arg = grammar.eval(inner.args[0])
        if not isinstance(arg, Expr):
            grammar.fail(f"zero_diagonal needs a matrix: {usage},")
        key = ("zero_diagonal", fname, arg)
        if key not in self.nodes:
            try:
                self.nodes[key] = kernel_matrix(self.functions[fname], arg, x=self.x, name=fname,
                                                noise=self.noise_name(fname))
            except (EquivalenceError, ScalingError, DomainError) as exc:
                located = copy.copy(exc)
                located.args = (f"{grammar.what} {exc} (in {grammar.shown()})",)
                raise located from None
        return self.nodes[key]

    def softmax(self, node, grammar):
        """``softmax(M)``: the centred row-wise softmax of a matrix (one node per argument)."""
        usage = "softmax(M), e.g. softmax(beta * Q @ K.T / sqrt(d_h))"
        if node.keywords or len(node.args) != 1 or isinstance(node.args[0], ast.Starred):
            grammar.fail(f"softmax takes one argument: {usage},")
        arg = grammar.eval(node.args[0])
        if not isinstance(arg, Expr):
            grammar.fail(f"softmax applies to a matrix, not to the scalar {arg}: {usage},")
        key = ("softmax", arg)
        if key not in self.nodes:
            try:
                self.nodes[key] = softmax(arg, noise=self.noise_name("softmax"))
            except (EquivalenceError, ScalingError, DomainError) as exc:
                located = copy.copy(exc)
                located.args = (f"{grammar.what} {exc} (in {grammar.shown()})",)
                raise located from None
        return self.nodes[key]

    def apply(self, fname, node, grammar):
        """``fname(argument)``: the entrywise function of a matrix (one node per argument), or its value at a scalar."""
        if node.keywords or len(node.args) != 1 or isinstance(node.args[0], ast.Starred):
            grammar.fail(f"{fname} is a function of one argument, as {fname}(W @ X / sqrt(n0)),")
        arg = grammar.eval(node.args[0])
        f = self.functions[fname]
        if not isinstance(arg, Expr):
            return f.xreplace({self.x: arg})
        key = (fname, arg)
        if key not in self.nodes:
            try:
                self.nodes[key] = entrywise(f, arg, x=self.x, name=fname, noise=self.noise_name(fname))
            except (EquivalenceError, ScalingError, DomainError) as exc:
                located = copy.copy(exc)
                located.args = (f"{grammar.what} {exc} (in {grammar.shown()})",)
                raise located from None
        return self.nodes[key]


def parse_expression(text, names, where="expression", key="expression", families=None, unknown=None, scope=None):
    """Evaluate ``text`` safely over ``names`` (matrices and scalar symbols), indexed ``families`` and the
    ``[functions]``/``[define]`` of a file (``scope``)."""
    if not isinstance(text, str):
        _fail(where, key, f"expected a string, got {text!r}")
    return MatrixGrammar(names, where, key, families, unknown, scope).parse(text)


def _number(value, where, key, constants=None):
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        _fail(where, key, f"expected a number, got {value!r}")
    v = parse_expression(value, constants or {}, where, key) if isinstance(value, str) else as_scalar(value)
    if isinstance(v, Expr) or not v.is_number or v.is_real is False:
        _fail(where, key, f"expected a real number, got {value!r}")
    return v


def _range(value, constants, where, key):
    """A positive integer at most :data:`MAX_TERMS`: an int, or a formula in the ``[indices]`` constants."""
    if isinstance(value, int) and not isinstance(value, bool):
        v = sympy.Integer(value)
    elif isinstance(value, str):
        v = parse_expression(value, constants, where, key, unknown=(
            "an index range is an integer or a formula in the [indices] constants declared before it"))
    else:
        _fail(where, key, f"expected a positive integer or a formula in [indices] constants, got {value!r}")
    if isinstance(v, Expr) or not isinstance(v, sympy.Basic) or not v.is_Integer:
        _fail(where, key, f"must be an integer, got {value!r} = {v}")
    if not 1 <= v <= MAX_TERMS:
        _fail(where, key, f"must be a positive integer at most {MAX_TERMS} (the limit on terms of a model file), "
                          f"got {v}")
    return int(v)


def _check_name(where, key, name, taken):
    """A declared name: an identifier, not reserved, not declared in another table."""
    if not isinstance(name, str) or not name.isidentifier():
        _fail(where, key, "is not a valid name (letters, digits and _, not starting with a digit)")
    if name in _RESERVED_NAMES:
        _fail(where, key, f"the name {name!r} is reserved ({_RESERVED_NAMES[name]})")
    if name in taken:
        _fail(where, key, f"the name {name!r} is already declared under [{taken[name]}]")


def _check_members(where, families, taken):
    """No declared name may be a family's name followed by ``_`` and digits (``Q_3`` is the leaf of ``Q[3]``).

    Two leaf names of different declarations can only be equal when one
    declared name is the other followed by ``_<digits>`` groups, so this
    keeps every leaf name unique.
    """
    for fname, family in families.items():
        pattern = re.compile(re.escape(fname) + r"(_[0-9]+)+")
        for name, table in taken.items():
            if pattern.fullmatch(name):
                _fail(where, f"{table}.{name}", f"the name {name!r} has the form of a leaf of the indexed family "
                                                f"{family.describe()} ({fname}[{', '.join('1' * len(family.sizes))}] is the leaf "
                                                f"{member_name(fname, (1,) * len(family.sizes))}); "
                                                f"rename one of them")


def parse_model(data, where="<model>"):
    """Build a :class:`Model` from a parsed TOML table (see the module documentation for the format)."""
    if not isinstance(data, dict):
        raise ModelFileError(f"{where}: the model must be a TOML table")
    if "model" in data:  # a named model (causal attention): widths and parameters, no expression
        return parse_causal_model(data, where)
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
    taken = {}  # declared name -> its table
    constants = {}
    indices = data.get("indices") or {}
    if not isinstance(indices, dict):
        _fail(where, "indices", "must be a table of integer constants, e.g. H = 8")
    for iname, value in indices.items():
        key = f"indices.{iname}"
        _check_name(where, key, iname, taken)
        constants[iname] = sympy.Integer(_range(value, constants, where, key))
        taken[iname] = "indices"
    if not isinstance(data["dimensions"], dict) or not data["dimensions"]:
        _fail(where, "dimensions", "must be a table of ratios, e.g. p = 0.5")
    dims = {}
    ratios = {}
    for dname, value in data["dimensions"].items():
        _check_name(where, f"dimensions.{dname}", dname, taken)
        sym = sympy.Symbol(dname, positive=True)
        v = _number(value, where, f"dimensions.{dname}", constants)
        if not v > 0:
            raise DomainError(f"{where}: [dimensions.{dname}] the ratio must be positive, got {value!r}")
        dims[dname] = sym
        ratios[sym] = v
        taken[dname] = "dimensions"
    params = {}
    psyms = {}
    parameters = data.get("parameters") or {}
    if not isinstance(parameters, dict):
        _fail(where, "parameters", "must be a table of named numbers, e.g. beta = 1")
    for pname, value in parameters.items():
        _check_name(where, f"parameters.{pname}", pname, taken)
        sym = sympy.Symbol(pname, real=True)
        psyms[pname] = sym
        params[sym] = _number(value, where, f"parameters.{pname}", constants)
        taken[pname] = "parameters"
    x = sympy.Symbol("x", real=True)
    functions = {}
    table = data.get("functions") or {}
    if not isinstance(table, dict):
        _fail(where, "functions", "must be a table of functions of x, e.g. f = \"tanh(x)\"")
    for fname, text in table.items():
        key = f"functions.{fname}"
        _check_name(where, key, fname, taken)
        if fname in ALLOWED_FUNCTIONS:
            _fail(where, key, f"the name {fname!r} is a built-in function of formulas; choose another name")
        if not isinstance(text, str):
            _fail(where, key, f"must be a string, a formula in x such as \"tanh(x)\", got {text!r}")
        value = parse_expression(text, {**psyms, **constants, "x": x}, where, key, unknown=(
            "a function is a formula in x, the [parameters] and the [indices] constants"))
        functions[fname] = value
        taken[fname] = "functions"
    scalars = dict(dims)
    scalars.update(psyms)
    scalars.update(constants)
    mats = {}
    families = {}
    if not isinstance(data["matrices"], dict) or not data["matrices"]:
        _fail(where, "matrices", "must declare at least one matrix")
    for mname, spec in data["matrices"].items():
        key = f"matrices.{mname}"
        _check_name(where, key, mname, taken)
        if not isinstance(spec, dict):
            _fail(where, key, "must be a table")
        extra = set(spec) - set(_MATRIX_KEYS)
        if extra:
            _fail(where, f"{key}.{sorted(extra)[0]}", f"unknown key; allowed: {', '.join(_MATRIX_KEYS)}")
        kind = spec.get("kind", "gaussian")
        if kind not in ("gaussian", "wigner", "identity", "deterministic", "haar"):
            _fail(where, f"{key}.kind", f"must be gaussian, wigner, identity, deterministic or haar, got {kind!r}")
        spectrum, profile = _spectrum_and_profile(where, key, kind, spec)
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
            leaf = Matrix(mname, (dims[shape[0]], dims[shape[1]]), kind, var, spectrum, profile)
        except (DomainError, ShapeError) as exc:
            raise type(exc)(f"{where}: [{key}] {exc}") from None
        taken[mname] = "matrices"
        if "index" not in spec:
            mats[mname] = leaf
            continue
        ranges = spec["index"]
        if isinstance(ranges, list):
            if not ranges:
                _fail(where, f"{key}.index", "must name at least one range, e.g. index = \"H\"")
            sizes = [_range(r, constants, where, f"{key}.index") for r in ranges]
        else:
            sizes = [_range(ranges, constants, where, f"{key}.index")]
        families[mname] = _Family(mname, sizes, leaf.shape, kind, leaf.variance)
    defines = data.get("define") or {}
    if not isinstance(defines, dict):
        _fail(where, "define", "must be a table of named expressions, e.g. Y = \"f(W @ X / sqrt(n0))\"")
    for dname, text in defines.items():
        _check_name(where, f"define.{dname}", dname, taken)
        if not isinstance(text, str):
            _fail(where, f"define.{dname}", f"must be a string, an expression such as \"f(W @ X / sqrt(n0))\", "
                                            f"got {text!r}")
        taken[dname] = "define"
    _check_members(where, families, taken)
    names = dict(scalars)
    names.update(mats)
    text = data["expression"]
    if not isinstance(text, str):
        _fail(where, "expression", "must be a string")
    scope = _Scope(names, where, families, functions, x, dict(defines), taken)
    expr = parse_expression(text, names, where, "expression", families, scope=scope)
    for dname in defines:  # every definition is read, used or not, so that none hides a mistake
        scope.value(dname)
    if not isinstance(expr, Expr):
        _fail(where, "expression", f"{text!r} is a scalar, not a matrix expression")
    used = set(expr.dimensions())
    for sym in list(ratios):
        if sym not in used and sym not in expr.free_scalars():
            del ratios[sym]
    variances = {node.coefficients.variance for node in scope.nodes.values() if isinstance(node, Softmax)}
    for variance in sorted(variances, key=str):  # the regime of softmax at the file's parameter values
        check_softmax_regime(variance.subs(params), f"{where}: softmax with scores of entry variance {variance}")
    desc = data.get("description", "")
    return Model(name, desc, law, text, expr, ratios, params, where, {k: int(v) for k, v in constants.items()})


def _spectrum_and_profile(where, key, kind, spec):
    """The ``spectrum`` table of a deterministic matrix and the ``profile`` string of a Gaussian (checked by Matrix)."""
    spectrum = spec.get("spectrum")
    if (spectrum is None) == (kind == "deterministic"):
        _fail(where, f"{key}.spectrum", "a deterministic matrix needs a [spectrum] table (value = weight), and only "
                                        "a deterministic matrix has one")
    if spectrum is not None and not isinstance(spectrum, dict):
        _fail(where, f"{key}.spectrum", f"must be a table value = weight, e.g. \"1\" = \"1/2\", got {spectrum!r}")
    if "variance" in spec and kind == "deterministic":
        _fail(where, f"{key}.variance", "a deterministic matrix has a spectrum, not a variance")
    profile = spec.get("profile")
    if profile is not None and not isinstance(profile, str):
        _fail(where, f"{key}.profile", f"must be a string, a formula in r and c such as \"Heaviside(c - 1/2)\", "
                                       f"got {profile!r}")
    if "index" in spec and (spectrum is not None or profile is not None):
        _fail(where, f"{key}.index", "families of deterministic or profiled matrices are not supported")
    return spectrum, profile


def load_model(path):
    """Read a model file (TOML)."""
    if not isinstance(path, (str, os.PathLike)):
        raise ModelFileError(f"expected the path of a model file, got {path!r}")
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
    if not isinstance(spec, (str, os.PathLike)):
        raise ModelFileError(f"expected the path of a model file or the name of a built-in model, got {spec!r}")
    p = Path(spec)
    if p.suffix == ".toml" or p.exists():
        return load_model(p)
    models = builtin_models()
    if spec not in models:
        raise ModelFileError(f"{spec}: neither a model file nor a built-in model (built-in: {', '.join(models)})")
    with models[spec].open("rb") as fh:
        data = tomllib.load(fh)
    return parse_model(data, f"built-in model {spec}")
