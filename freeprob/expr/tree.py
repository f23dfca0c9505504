"""Random-matrix expressions with symbolic dimensions.

An expression is an immutable tree built from leaves (Gaussian, Wigner and
identity matrices) with ``@``, ``+``, ``-``, scalar ``*`` and ``/``,
``.T`` and :func:`inv` (the inverse of a symmetric square expression). Dimensions are positive sympy symbols; each names a vector space.
Shapes are checked when the tree is built.

Examples
--------
>>> import freeprob as fp
>>> p, n = fp.dims("p n")
>>> X = fp.gaussian("X", (p, n))
>>> W = X @ X.T / n
>>> W.shape
(p, p)
>>> print(W)
X @ X.T/n
"""

import numbers
from dataclasses import dataclass, field
from typing import Tuple

import sympy

from .._errors import DomainError, NotSelfAdjointError, ShapeError
from .._numbers import read_scalar
from .profiles import is_piecewise_constant, profile_grid, read_profile, read_spectrum, scale_profile

__all__ = [
    "LAWS",
    "dims",
    "gaussian",
    "wigner",
    "identity",
    "deterministic",
    "haar",
    "Expr",
    "Matrix",
    "Sum",
    "Product",
    "Scaled",
    "Transpose",
    "Inverse",
    "inv",
    "as_scalar",
    "leaves",
    "expand",
    "word_str",
    "transpose_word",
    "expression_graph",
]

KINDS = ("gaussian", "wigner", "identity", "deterministic", "haar")
#: Kinds whose law is invariant under orthogonal conjugation, or fixed (symmetric letters in expansions).
SYMMETRIC_KINDS = ("wigner", "identity", "deterministic")
#: The spectral laws a model can ask for (part of a model's description).
LAWS = ("eigenvalues", "squared-singular-values")


def dims(names):
    """Dimension symbols, one per name (positive sympy symbols).

    ``names`` is one string of identifiers separated by spaces or commas.

    >>> p, n = dims("p n")
    >>> p.is_positive
    True
    """
    if not isinstance(names, str):
        raise DomainError(f"dims: expected a string of names such as \"p n\", got {names!r}")
    parts = names.replace(",", " ").split()
    if not parts:
        raise DomainError(f"dims: no dimension names in {names!r}; give names such as \"p n\"")
    bad = [t for t in parts if not t.isidentifier()]
    if bad:
        raise DomainError(f"dims: {bad[0]!r} is not a name (letters, digits and _, not starting with a digit)")
    out = sympy.symbols(names, positive=True)
    return out


def as_scalar(value, where="scalar"):
    """Convert a Python or sympy number/expression to an exact sympy scalar.

    Floats are read through their shortest decimal representation
    (``0.1 -> 1/10``), so that the symbolic layer stays exact; strings are
    read by the whitelisted grammar (:func:`freeprob._numbers.read_scalar`),
    never evaluated.
    """
    if isinstance(value, Expr):
        raise TypeError(f"{where}: expected a scalar, got the matrix expression {value}")
    if isinstance(value, bool):
        raise TypeError(f"{where}: expected a scalar, got {value!r}")
    if isinstance(value, complex):
        raise DomainError(f"{where}: complex scalars are not supported (got {value!r}); models are real")
    if not isinstance(value, (str, numbers.Number, sympy.Basic)) and type(value).__name__ != "mpf":
        raise TypeError(f"{where}: cannot read {value!r} as a scalar")
    return read_scalar(value, what=where)


class Expr:
    """Base class of matrix expressions (immutable)."""

    __slots__ = ()

    # -- operators -------------------------------------------------------
    def __matmul__(self, other):
        if not isinstance(other, Expr):
            raise TypeError(f"'@' needs two matrix expressions; use '*' to scale {self} by {other!r}")
        return Product.of(self, other)

    def __rmatmul__(self, other):
        raise TypeError(f"'@' needs two matrix expressions; use '*' to scale {self} by {other!r}")

    def __add__(self, other):
        if not isinstance(other, Expr):
            if other == 0:
                return self
            raise TypeError(
                f"cannot add the scalar {other!r} to the matrix {self}; "
                f"add a multiple of fp.identity({self.shape[0]}) instead"
            )
        return Sum.of(self, other)

    def __radd__(self, other):
        return self.__add__(other)

    def __neg__(self):
        return Scaled.of(sympy.Integer(-1), self)

    def __sub__(self, other):
        if not isinstance(other, Expr):
            return self.__add__(-other if other != 0 else 0)
        return Sum.of(self, -other)

    def __rsub__(self, other):
        return (-self).__add__(other)

    def __mul__(self, other):
        return Scaled.of(as_scalar(other, f"scaling {self}"), self)

    def __rmul__(self, other):
        return self.__mul__(other)

    def __truediv__(self, other):
        c = as_scalar(other, f"dividing {self}")
        if c == 0:
            raise DomainError(f"division of {self} by zero")
        return Scaled.of(1 / c, self)

    @property
    def T(self):
        """The transpose."""
        return Transpose.of(self)

    # -- structure -------------------------------------------------------
    @property
    def rows(self):
        return self.shape[0]

    @property
    def cols(self):
        return self.shape[1]

    def leaves(self):
        """The distinct leaves, in order of first occurrence."""
        return leaves(self)

    def graph(self):
        """A new networkx DiGraph of this expression (see :func:`expression_graph`)."""
        return expression_graph(self)

    def real_children(self):
        """Operands the finite-size matrix depends on beyond :meth:`children`.

        ``children()`` is what the engine reduces; for an entrywise function
        (:class:`~freeprob.expr.entrywise.Entrywise`) that is its Gaussian
        equivalent, and its argument is a real child: Monte-Carlo evaluates
        it, and its dimensions and scalars belong to the model. Empty for
        every other node.
        """
        return ()

    def free_scalars(self):
        """Symbols in scalar coefficients and variances (dimensions and parameters), real children included."""
        out = set()
        for node in _walk(self, real=True):
            if isinstance(node, Scaled):
                out |= node.coeff.free_symbols
            elif isinstance(node, Matrix):
                out |= node.variance.free_symbols
                out |= {node.shape[0], node.shape[1]}
        return out

    def dimensions(self):
        """The dimension symbols the expression's leaves live on (real children included)."""
        out = []
        for node in _walk(self, real=True):
            if isinstance(node, Matrix):
                for s in node.shape:
                    if s not in out:
                        out.append(s)
        return out


def _walk(expr, real=False):
    """Every node of ``expr``, depth first; with ``real``, also the real children (:meth:`Expr.real_children`)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children() + (node.real_children() if real else ())))


def _check_dim(s, what):
    if not isinstance(s, sympy.Symbol):
        raise ShapeError(f"{what}: dimensions must be symbols made by fp.dims, got {s!r}")
    if not s.is_positive:
        raise DomainError(f"{what}: dimension {s} must be a positive symbol (use fp.dims)")


@dataclass(frozen=True)
class Matrix(Expr):
    """A leaf: a Gaussian, Wigner, identity or deterministic matrix.

    ``gaussian``: iid real ``N(0, variance)`` entries (with a ``profile``,
    entry ``(i, j)`` has variance ``variance * profile(i/rows, j/cols)``).
    ``wigner``: symmetric, off-diagonal entries ``N(0, variance)``, diagonal
    ``N(0, 2 variance)``. ``identity``: the identity of its space (variance
    is unused). ``deterministic``: the diagonal matrix of an atomic
    ``spectrum`` ``((value, weight), ...)``, its values in the order given
    (variance is unused; docs/blocks.md).
    """

    name: str
    shape: Tuple[sympy.Symbol, sympy.Symbol]
    kind: str = "gaussian"
    variance: sympy.Expr = sympy.Integer(1)
    spectrum: tuple = None
    profile: object = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise DomainError(f"matrix name must be an identifier (letters, digits and _, not starting with a digit), "
                              f"got {self.name!r}")
        if self.kind not in KINDS:
            raise DomainError(f"matrix {self.name}: kind must be one of {KINDS}, got {self.kind!r}")
        if not isinstance(self.shape, tuple) or len(self.shape) != 2:
            raise ShapeError(f"matrix {self.name}: shape must be (rows, cols), got {self.shape!r}")
        for s in self.shape:
            _check_dim(s, f"matrix {self.name}")
        if (self.kind in SYMMETRIC_KINDS or self.kind == "haar") and self.shape[0] != self.shape[1]:
            raise ShapeError(
                f"matrix {self.name}: a {self.kind} matrix is square, got shape "
                f"({self.shape[0]}, {self.shape[1]})"
            )
        try:
            var = as_scalar(self.variance, f"variance of {self.name}")
        except TypeError as exc:
            raise DomainError(str(exc)) from None
        object.__setattr__(self, "variance", var)
        if var.is_number and (not var.is_real or var <= 0):
            raise DomainError(f"matrix {self.name}: variance must be positive, got {var}")
        if var.is_nonpositive:
            raise DomainError(f"matrix {self.name}: variance must be positive, got {var}")
        if (self.spectrum is not None) != (self.kind == "deterministic"):
            raise DomainError(f"matrix {self.name}: a spectrum is given for deterministic matrices, and only for them "
                              f"(kind {self.kind!r})")
        if self.spectrum is not None:
            spectrum = read_spectrum(self.spectrum, f"matrix {self.name}")
            object.__setattr__(self, "spectrum", spectrum)
            # the variance of a deterministic matrix is unused by the engine; it is set so that the
            # Gaussian norm bound sqrt(v) (sqrt(rows) + sqrt(cols)) is its norm max |a_k| (docs/blocks.md)
            top = sympy.Max(*[abs(a) for a, _ in spectrum])
            object.__setattr__(self, "variance", (top if top != 0 else sympy.Integer(1)) ** 2 / (4 * self.shape[0]))
        if self.kind == "haar":  # orthogonal: norm 1, which the Gaussian norm bound gives with this variance
            object.__setattr__(self, "variance", sympy.Integer(1) / (4 * self.shape[0]))
        if self.profile is not None:
            if self.kind != "gaussian":
                raise DomainError(f"matrix {self.name}: a variance profile is given for Gaussian matrices only "
                                  f"(kind {self.kind!r})")
            profile = read_profile(self.profile, f"matrix {self.name}")
            object.__setattr__(self, "profile", profile)
            if is_piecewise_constant(profile):  # a continuous one is discretized before any law (docs/blocks.md)
                _, _, table = profile_grid(profile, f"matrix {self.name}")
                top = sympy.Max(*[v for row in table for v in row])
                # stored with maximum 1, its maximum moved into the variance: the same entry variances, and
                # every norm bound made from the variance stays a bound
                object.__setattr__(self, "profile", scale_profile(profile, 1 / top) if top != 1 else profile)
                object.__setattr__(self, "variance", var * top)

    def children(self):
        return ()

    def __str__(self):
        return self.name

    def __repr__(self):
        extra = "" if self.spectrum is None else f", spectrum={self.spectrum}"
        extra += "" if self.profile is None else f", profile={self.profile}"
        return (f"Matrix({self.name!r}, ({self.shape[0]}, {self.shape[1]}), kind={self.kind!r}, "
                f"variance={self.variance}{extra})")


def gaussian(name, shape, variance=1, profile=None):
    """A matrix with independent real ``N(0, variance)`` entries.

    Parameters
    ----------
    name : str
        Identifier; two leaves with the same name must be the same matrix.
    shape : (Symbol, Symbol)
        Dimension symbols from :func:`dims`.
    variance : scalar, optional
        Entry variance, an expression in dimensions and parameters (default 1).
    profile : str or sympy expression in ``r`` and ``c``, optional
        Variance profile: entry ``(i, j)`` has variance
        ``variance * profile(r = i/rows, c = j/cols)``; piecewise constant
        (breakpoints read from ``Heaviside``), see docs/blocks.md.
    """
    return Matrix(name, _shape(name, shape), "gaussian", variance, None, profile)


def deterministic(name, shape, spectrum):
    """A symmetric deterministic matrix given by its atomic limiting spectrum.

    ``spectrum`` maps each value to its weight (the weights are positive and
    sum to 1; strings such as ``"1/2"`` are exact). The matrix is the
    diagonal matrix with its values in the order given; several
    deterministic matrices on one space are diagonal in the same basis, so
    they commute (docs/blocks.md).

    >>> import freeprob as fp
    >>> p = fp.dims("p")
    >>> fp.deterministic("D", (p, p), spectrum={1: "1/2", 4: "1/2"}).spectrum
    ((1, 1/2), (4, 1/2))
    """
    return Matrix(name, _shape(name, shape), "deterministic", 1, spectrum)


def haar(name, dim):
    """A Haar-distributed orthogonal matrix of shape ``(dim, dim)``.

    It may appear only as a conjugation ``O @ D @ O.T`` (or ``O.T @ D @ O``)
    of a deterministic matrix ``D`` (docs/engine.md, "Haar rotations"): with
    two eigenvalues the rotated matrix is ``b_1 I + (b_2 - b_1) Q`` with ``Q``
    the projection onto a uniformly random subspace, which the engine writes
    with a Gaussian matrix and an inverse; with more, a sum of nested such
    projections.

    >>> import freeprob as fp
    >>> n = fp.dims("n")
    >>> fp.haar("O", n).kind
    'haar'
    """
    return Matrix(name, (dim, dim), "haar", 1)


def _shape(name, shape):
    """``shape`` as a tuple (ShapeError when it is not a sequence)."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise ShapeError(f"matrix {name}: shape must be (rows, cols), two symbols made by fp.dims, got {shape!r}")
    return tuple(shape)


def wigner(name, dim, variance=1):
    """A symmetric Gaussian (Wigner) matrix of shape ``(dim, dim)``, off-diagonal variance ``variance``."""
    return Matrix(name, (dim, dim), "wigner", variance)


def identity(dim, name=None):
    """The identity matrix of the space ``dim``."""
    return Matrix(name or f"I_{dim}", (dim, dim), "identity", 1)


@dataclass(frozen=True)
class Sum(Expr):
    terms: tuple

    @staticmethod
    def of(a, b):
        if a.shape != b.shape:
            raise ShapeError(
                f"cannot add {a} (shape ({a.shape[0]}, {a.shape[1]})) and "
                f"{b} (shape ({b.shape[0]}, {b.shape[1]})): shapes differ"
            )
        # an entrywise function is a Sum of its equivalent's terms, but a node of its own: not flattened
        terms = (a.terms if type(a) is Sum else (a,)) + (b.terms if type(b) is Sum else (b,))
        return Sum(terms)

    @property
    def shape(self):
        return self.terms[0].shape

    def children(self):
        return self.terms

    def __str__(self):
        out = str(self.terms[0])
        for t in self.terms[1:]:
            s = str(t)
            out += " - " + s[1:] if s.startswith("-") else " + " + s
        return out


@dataclass(frozen=True)
class Product(Expr):
    factors: tuple

    @staticmethod
    def of(a, b):
        if a.shape[1] != b.shape[0]:
            raise ShapeError(
                f"cannot multiply {a} (shape ({a.shape[0]}, {a.shape[1]})) by "
                f"{b} (shape ({b.shape[0]}, {b.shape[1]})): {a.shape[1]} != {b.shape[0]}"
            )
        fa = a.factors if isinstance(a, Product) else (a,)
        fb = b.factors if isinstance(b, Product) else (b,)
        return Product(fa + fb)

    @property
    def shape(self):
        return (self.factors[0].shape[0], self.factors[-1].shape[1])

    def children(self):
        return self.factors

    def __str__(self):
        return " @ ".join(f"({f})" if type(f) is Sum or isinstance(f, Scaled) else str(f) for f in self.factors)


@dataclass(frozen=True)
class Scaled(Expr):
    coeff: sympy.Expr
    arg: Expr

    @staticmethod
    def of(c, a):
        if isinstance(a, Scaled):
            return Scaled(sympy.sympify(c * a.coeff), a.arg)
        return Scaled(sympy.sympify(c), a)

    @property
    def shape(self):
        return self.arg.shape

    def children(self):
        return (self.arg,)

    def __str__(self):
        inner = f"({self.arg})" if type(self.arg) is Sum else str(self.arg)
        c = self.coeff
        if c == 1:
            return inner
        if c == -1:
            return f"-{inner}"
        num, den = sympy.fraction(c)
        if num == 1:
            return f"{inner}/{_paren(den)}"
        if num == -1:
            return f"-{inner}/{_paren(den)}"
        return f"{_paren(c)}*{inner}"


def _paren(c):
    s = sympy.sstr(c)
    return s if (c.is_Atom or c.is_Function or (c.is_Pow and c.exp.is_Integer)) else f"({s})"


@dataclass(frozen=True)
class Transpose(Expr):
    arg: Expr

    @staticmethod
    def of(a):
        if isinstance(a, Transpose):
            return a.arg
        if isinstance(a, Matrix) and a.kind in SYMMETRIC_KINDS:
            return a
        if isinstance(a, Inverse):  # the inverse of a symmetric matrix is symmetric
            return a
        return Transpose(a)

    @property
    def shape(self):
        return (self.arg.shape[1], self.arg.shape[0])

    def children(self):
        return (self.arg,)

    def __str__(self):
        bare = isinstance(self.arg, Matrix) or (isinstance(self.arg, Sum) and type(self.arg) is not Sum)  # f(M).T
        return f"{self.arg}.T" if bare else f"({self.arg}).T"


@dataclass(frozen=True)
class Inverse(Expr):
    """The inverse ``M^{-1}`` of a square, symmetric expression ``M`` (made by :func:`inv`).

    In expansions (:func:`expand`) the inverse is one symmetric letter, like
    a Wigner matrix: ``kind`` is ``"inverse"`` and ``name`` its text. The
    reduction linearizes it (docs/engine.md, "Inverses") and refuses it
    unless the limiting spectrum of ``M`` is certified to stay away from 0.

    ``floor`` is a lower bound of the limiting spectrum of ``M`` (a sympy
    expression in the dimensions) that holds by construction, for arguments
    the bounds of :mod:`freeprob.reduce.inverse` cannot read off the tree:
    only code that proves it sets it (the Gram matrix of a Gaussian compressed
    by an independent projection, :mod:`freeprob.expr.haar`). It is not part
    of the node's identity.
    """

    arg: Expr
    floor: object = field(default=None, compare=False, repr=False)

    #: The letter kind of an inverse in :func:`expand` (never transposed: the inverse is symmetric).
    kind = "inverse"

    @staticmethod
    def of(a):
        if not isinstance(a, Expr):
            raise TypeError(f"inv needs a square matrix expression, got {a!r}")
        rows, cols = a.shape
        if rows != cols:
            raise ShapeError(f"inv({a}): the argument has shape ({rows}, {cols}), which is not square; only a "
                             f"square matrix has an inverse (for a rectangular P use inv(P @ P.T) or inv(P.T @ P))")
        try:
            monos = expand(a)
        except ValueError as exc:
            raise DomainError(f"inv({a}): cannot check that the argument is symmetric ({exc})") from None
        for w, c in monos.items():
            d = sympy.simplify(c - monos.get(transpose_word(w), 0))
            if d != 0:
                raise NotSelfAdjointError(
                    f"inv({a}): the argument is not symmetric (M - M^T contains {word_str(w, d)}); freeprob "
                    f"inverts symmetric expressions only, whose spectrum it can keep away from 0 "
                    f"(symmetrize it, as in P + P.T, or invert P @ P.T)")
        return Inverse(a)

    @property
    def shape(self):
        return self.arg.shape

    @property
    def name(self):
        return str(self)

    def children(self):
        return (self.arg,)

    def __str__(self):
        return f"inv({self.arg})"


def inv(m):
    """The inverse of a square, symmetric matrix expression ``m``.

    Raises :class:`~freeprob.ShapeError` for a non-square ``m`` and
    :class:`~freeprob.NotSelfAdjointError` for a non-symmetric one. The law of
    an expression containing ``inv(m)`` is refused (a
    :class:`~freeprob.DomainError`) unless the limiting spectrum of ``m``
    provably avoids 0 at the values given (docs/model-files.md, "Inverses").

    >>> import freeprob as fp
    >>> p, n = fp.dims("p n")
    >>> X = fp.gaussian("X", (p, n))
    >>> print(fp.inv(X @ X.T / n + 2 * fp.identity(p)))
    inv(X @ X.T/n + 2*I_p)
    """
    return Inverse.of(m)


def leaves(expr):
    """Distinct leaves of ``expr`` in order of first occurrence.

    Raises
    ------
    ValueError
        If two different leaves share a name.
    """
    seen = {}
    for node in _walk(expr):
        if isinstance(node, Matrix):
            other = seen.get(node.name)
            if other is None:
                seen[node.name] = node
            elif other != node:
                raise ValueError(
                    f"two different matrices are both named {node.name!r}: {other!r} and {node!r}"
                )
    return list(seen.values())


# -- noncommutative expansion -------------------------------------------------
# A word is a tuple of (leaf, transposed) letters; identities are dropped and
# Wigner letters are never transposed. ``expand`` returns {word: coefficient}.


def _letter(leaf, transposed):
    return (leaf, bool(transposed) and leaf.kind == "gaussian")


def transpose_word(word):
    """The word of the transposed monomial."""
    return _commute_deterministic(tuple(_letter(leaf, not t) for leaf, t in reversed(word)))


def word_str(word, coeff=1):
    """Human-readable monomial, e.g. ``beta/sqrt(d) * Q @ K.T``."""
    body = " @ ".join(leaf.name + (".T" if t else "") for leaf, t in word) or "I"
    if coeff == 1:
        return body
    return f"{sympy.sstr(coeff)} * {body}"


def _commute_deterministic(word):
    """``word`` with every run of adjacent deterministic letters sorted by name.

    Deterministic matrices of one space are diagonal in one basis, so they
    commute (docs/blocks.md); adjacent letters of a word share their space.
    """
    out, run = [], []
    for letter in word + ((None, False),):
        if letter[0] is not None and getattr(letter[0], "kind", None) == "deterministic":
            run.append(letter)
            continue
        out.extend(sorted(run, key=lambda x: x[0].name))
        run = []
        if letter[0] is not None:
            out.append(letter)
    return tuple(out)


def expand(expr, limit=20000):
    """Expand ``expr`` into noncommutative monomials ``{word: coefficient}``.

    Zero coefficients are dropped. Raises ``ValueError`` when more than
    ``limit`` monomials would be produced.
    """

    def rec(node, transposed):
        if isinstance(node, Inverse):
            return {((node, False),): sympy.Integer(1)}
        if isinstance(node, Matrix):
            if node.kind == "identity":
                return {(): sympy.Integer(1)}
            return {(_letter(node, transposed),): sympy.Integer(1)}
        if isinstance(node, Scaled):
            return {w: node.coeff * c for w, c in rec(node.arg, transposed).items()}
        if isinstance(node, Transpose):
            return rec(node.arg, not transposed)
        if isinstance(node, Sum):
            out = {}
            for t in node.terms:
                for w, c in rec(t, transposed).items():
                    out[w] = out.get(w, 0) + c
            return out
        if isinstance(node, Product):
            factors = reversed(node.factors) if transposed else node.factors
            out = {(): sympy.Integer(1)}
            for f in factors:
                part = rec(f, transposed)
                new = {}
                for w1, c1 in out.items():
                    for w2, c2 in part.items():
                        w = w1 + w2
                        new[w] = new.get(w, 0) + c1 * c2
                if len(new) > limit:
                    raise ValueError(f"expanding {expr} gives more than {limit} monomials")
                out = new
            return out
        raise TypeError(f"not a matrix expression: {node!r}")

    raw = {}
    for w, c in rec(expr, False).items():
        w = _commute_deterministic(w)
        raw[w] = raw.get(w, 0) + c
    out = {}
    for w, c in raw.items():
        c = sympy.simplify(c) if c != 0 else c
        if c != 0:
            out[w] = c
    return out


def expression_graph(expr):
    """The expression as a networkx ``DiGraph``.

    Nodes are subexpressions (a leaf occurring several times is one node);
    each node has attributes ``op`` (``"matrix"``, ``"sum"``, ``"product"``,
    ``"scaled"``, ``"transpose"``), ``shape`` and, for leaves, ``kind`` and
    ``variance``; for scaled nodes ``coeff``. Edges go from an operation to its
    operands with attribute ``position``. The graph is built anew on every
    call, so callers may mutate their copy.
    """
    import networkx as nx

    g = nx.DiGraph()

    def add(node):
        if node in g:
            return
        op = type(node).__name__.lower()
        attrs = {"op": "matrix" if op == "matrix" else op, "shape": node.shape, "label": str(node)}
        if isinstance(node, Matrix):
            attrs.update(kind=node.kind, variance=node.variance, name=node.name)
        if isinstance(node, Scaled):
            attrs["coeff"] = node.coeff
        g.add_node(node, **attrs)
        for pos, child in enumerate(node.children()):
            add(child)
            if g.has_edge(node, child):
                g.edges[node, child]["position"] += (pos,)
            else:
                g.add_edge(node, child, position=(pos,))

    add(expr)
    return g
