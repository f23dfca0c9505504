"""Entrywise functions of matrices, replaced by their Gaussian equivalent.

``entrywise(f, M)`` is the matrix whose entries are ``f(M_ij)``. For an
argument ``M`` whose entries are asymptotically Gaussian and weakly
dependent (a product of independent Gaussian matrices with its dimension
scalings, such as ``W @ X / sqrt(n0)``), the limiting spectra of
expressions in ``f(M)`` are those of the *Gaussian equivalent*

    f(M) = mu0 1 1^T + mu1 M + nu Z ,

with ``Z`` a fresh Gaussian matrix of ``M``'s shape and unit entry variance,
independent of everything else, and, for entries ``u ~ N(0, s)``,

    mu0 = E f(u),   mu1 = E u f(u) / s,   nu^2 = E f(u)^2 - mu0^2 - s mu1^2

(Pennington-Worah 2017; Mei-Montanari 2022; Hu-Lu 2023). The coefficients
come from the one derivation of :mod:`freeprob.expr.equivalence`: exact
with sympy where it integrates, mpmath quadrature where it cannot (marked
``"numeric"``). The rank-one part ``mu0 1 1^T`` does not move the bulk:
it is not part of the law, and it is reported as an outlier
(:class:`EquivalenceReport`), never silently dropped.

The node :class:`Entrywise` *is*, for the engine, the sum ``mu1 M + nu Z``
(its ``terms``; it is a :class:`~freeprob.expr.tree.Sum`), so the reduction,
the bounds and the printing of equations see the linear model. Its argument
``M`` and the function stay on the node: Monte-Carlo evaluates ``f`` on the
sampled ``M`` (the real nonlinear model, not the surrogate), and the
argument's dimensions and scalars belong to the model
(:meth:`~freeprob.expr.tree.Expr.real_children`).

Conditions, checked when the node is made (each refusal an
:class:`~freeprob.EquivalenceError` naming the condition):

* the argument is a sum of scalar multiples of products of Gaussian
  matrices (transposes allowed) in which no matrix occurs twice in a
  product, and a matrix shared by two products sits at the same place in
  both (``W @ (X + V)``): the entries are then asymptotically Gaussian and
  weakly dependent. A matrix used twice (a Gram-type argument such as
  ``X @ X.T / sqrt(p)``, whose diagonal is not in the Gaussian regime:
  kernel matrices), ``W + W.T``, a Wigner or identity factor is refused;
* an entrywise function inside the argument is one layer of a deep network:
  ``c W @ Y`` or ``c Y @ W`` with ``Y`` an entrywise node of mean
  ``mu0 = 0`` and ``W`` a Gaussian matrix independent of it. The entries are
  then Gaussian given ``Y``, of a variance that concentrates at
  ``E f(u)^2`` of the inner layer, and the equivalence applies layer by
  layer (Fan-Wang 2020: the conjugate kernel's law is the recursion of
  Marchenko-Pastur maps this gives). Anything else (``f(f(M))``, an
  uncentred inner layer) is refused;
* the entry variance of the argument is of order one (a
  :class:`~freeprob.ScalingError` otherwise: divide by the square root of
  the contracted dimensions);
* (a kernel matrix ``zero_diagonal(f(X @ X.T / sqrt(p)))`` is the Gram case
  with its diagonal removed: :mod:`freeprob.expr.kernel`);
* ``f`` is real on the real line and of polynomial growth
  (``log(1 + f(x)^2) / log|x|`` has a finite limit at both infinities), so
  every Gaussian integral above is finite.

Examples
--------
>>> import freeprob as fp, sympy
>>> n1, n0, m = fp.dims("n1 n0 m")
>>> W, X = fp.gaussian("W", (n1, n0)), fp.gaussian("X", (n0, m))
>>> Y = fp.entrywise("x + (x**2 - 1)/2", W @ X / sympy.sqrt(n0), name="f", noise="Z")
>>> print(Y)
f(W @ X/(sqrt(n0)))
>>> print(Y.equivalent_str())
W @ X/(sqrt(n0)) + Z
>>> print(Sum.__str__(Y))      # the terms the engine reduces
W @ X/(sqrt(n0)) + Z
>>> Y.noise.variance, Y.coefficients.mu0
(1/2, 0)
"""

import hashlib
from dataclasses import dataclass
from functools import lru_cache

import sympy

from .._errors import ConvergenceError, DomainError, EquivalenceError, ScalingError
from .._numbers import check_structure, parse_nonlinearity
from .equivalence import EntryCoefficients, GaussianMean, entry_coefficients, numeric_text
from .generic import check_generic_word, generic_variance
from .tree import Expr, Matrix, Product, Scaled, Sum, Transpose, _walk, expand, gaussian

__all__ = ["Entrywise", "EquivalenceReport", "check_function", "check_generic_position", "entry_variance", "entrywise",
           "entrywise_nodes", "derive_coefficients", "generic_spaces", "equivalence_report", "equivalent_text", "noise_name", "read_function"]

#: Default digits to which a coefficient without a closed form is first computed by quadrature (checking that its
#: Gaussian integral converges); it is a :class:`~freeprob.expr.equivalence.GaussianMean` number, recomputed to the
#: digits each later computation asks for.
COEFFICIENT_DPS = 50
#: Default seconds allowed to sympy for each Gaussian integral of an entrywise function (as
#: :func:`~freeprob.expr.equivalence.gaussian_equivalent`). A closed form sympy finds in time is exact; one it does
#: not is computed by quadrature and marked numeric, so on a loaded machine a coefficient may come out numeric.
#: Functions without Gaussian closed forms (tanh, atan, ...) skip the symbolic attempt.
TIME_BUDGET = 10.0


@dataclass(frozen=True)
class Entrywise(Sum):
    """``f`` applied entrywise to ``argument``; for the engine, its Gaussian equivalent ``mu1 M + nu Z``.

    Made by :func:`entrywise`. Attributes besides ``terms`` (the equivalent's
    terms): ``f`` and ``x`` (the function, a sympy expression in ``x``),
    ``argument`` (``M``), ``name`` (of the function, for printing),
    ``coefficients`` (:class:`~freeprob.expr.equivalence.EntryCoefficients`)
    and ``noise`` (the Gaussian leaf ``Z``, of variance ``nu^2``: absent,
    None, when ``nu = 0``).
    """

    f: sympy.Expr
    x: sympy.Symbol
    argument: Expr
    name: str
    coefficients: EntryCoefficients
    noise: object

    def real_children(self):
        return (self.argument,)

    def __str__(self):
        return f"{self.name}({self.argument})"

    def equivalent_str(self):
        """The Gaussian equivalent as text, ``mu1*(M) + Z`` (a numeric ``mu1`` shown with 20 digits)."""
        return equivalent_text(self.coefficients, str(self.argument), self.noise)


def equivalent_text(c, linear, noise):
    """``mu1*(linear) + Z`` for the coefficients ``c`` (a numeric ``mu1`` shown with 20 digits)."""
    parts = []
    if c.mu1 != 0:
        shown = sympy.sstr(c.mu1) if c.method.mu1 == "exact" else numeric_text(c.mu1)
        parts.append(linear if c.mu1 == 1 else f"{shown}*({linear})")
    if noise is not None:
        parts.append(noise.name)
    return " + ".join(parts)


def derive_coefficients(expr, xsym, variance, dps, time_budget, where):
    """:func:`~freeprob.expr.equivalence.entry_coefficients`, with a failed integral an
    :class:`EquivalenceError` (condition ``"integrable"``) naming the function."""
    try:
        return entry_coefficients(expr, xsym, variance, dps, time_budget)
    except ConvergenceError as exc:
        raise EquivalenceError(f"{where}, f({xsym}) = {expr}: its Gaussian integrals are not finite, or not computable "
                               f"to {dps} digits ({exc}); the equivalence needs E f(u)^2 finite",
                               condition="integrable") from None


def noise_name(name, key):
    """The name of the fresh Gaussian of an equivalent: ``Z_<name>_<6 hex digits of key>``."""
    return f"Z_{name}_{hashlib.sha1(key.encode()).hexdigest()[:6]}"


def entrywise_nodes(expr):
    """The distinct :class:`Entrywise` nodes of ``expr``, in order of first occurrence (outermost first)."""
    out = []
    for node in _walk(expr, real=True):
        if isinstance(node, Entrywise) and node not in out:
            out.append(node)
    return out


def generic_spaces(expr):
    """The spaces (dimension symbols) of the deterministic matrices inside an entrywise argument of ``expr``.

    Every deterministic matrix of such a space is taken in generic position
    (:mod:`freeprob.expr.generic`); the Monte-Carlo samples it as
    ``O diag(values) O^T`` with one Haar ``O`` for the space.

    >>> import freeprob as fp, sympy
    >>> l, d = fp.dims("l d")
    >>> D = fp.deterministic("D", (l, l), {1: 1})
    >>> Q, K = fp.gaussian("Q", (l, d)), fp.gaussian("K", (l, d))
    >>> generic_spaces(fp.softmax(D @ Q @ K.T @ D / sympy.sqrt(d)) @ Q), generic_spaces(D @ Q)
    ({l}, set())
    """
    return {m.shape[0] for node in entrywise_nodes(expr) for m in node.argument.leaves() if m.kind == "deterministic"}


def check_generic_position(expr):
    """Refuse a model whose deterministic matrices must be both generic and aligned with the coordinates.

    A deterministic matrix inside an entrywise argument is taken in generic
    position (its eigenvectors delocalized). A Gaussian matrix with a variance
    profile on the same space is defined in the coordinate basis, and the
    engine lays the deterministic values out on the profile's cells (aligned
    with it): the two descriptions disagree, and neither the law nor the
    Monte-Carlo would be the model meant. Raises
    :class:`~freeprob.EquivalenceError` (condition ``"generic-position"``).
    """
    spaces = generic_spaces(expr)
    if not spaces:
        return
    for node in _walk(expr, real=True):
        if isinstance(node, Matrix) and node.kind == "gaussian" and node.profile is not None:
            shared = [str(d) for d in node.shape if d in spaces]
            if shared:
                raise EquivalenceError(
                    f"{expr}: the Gaussian matrix {node.name} has a variance profile on the space {shared[0]}, whose "
                    f"deterministic matrices sit inside an entrywise argument and are therefore taken in generic "
                    f"position (eigenvectors delocalized, docs/attention.md, 'Real inputs'); a profile is aligned with "
                    f"the coordinates of {shared[0]}, so the model is ambiguous. Use a different dimension symbol for "
                    f"the profiled matrix, or drop its profile", condition="generic-position")


def _refuse(argument, what, condition):
    raise EquivalenceError(f"an entrywise function of {argument}: {what}", condition=condition)


def entry_variance(argument):
    """The exact entry variance of a product of independent Gaussian matrices (or a sum of such products).

    Deterministic matrices may sit between the Gaussian factors (not next to
    each other, and not alone): in generic position a deterministic ``D``
    (``p x p``) counts as a Gaussian factor of variance ``m1(D^2)/p``
    (:mod:`freeprob.expr.generic`), and it may occur several times
    (``D @ Q @ K.T @ D``).

    For a monomial ``c A1 A2 ... Ak`` of distinct Gaussian leaves (each may be
    transposed) of variances ``v_i``, an entry is a sum over the contracted
    indices of products of independent entries: its variance is
    ``c^2 v_1 ... v_k`` times the product of the inner dimensions. Monomials
    with disjoint leaves are independent and their variances add.

    Raises
    ------
    EquivalenceError
        When the argument is not of that form (the message says which
        condition fails).
    ScalingError
        When the variance is not of order one as the dimensions grow.

    Examples
    --------
    >>> import freeprob as fp, sympy
    >>> n1, n0, m = fp.dims("n1 n0 m")
    >>> W, X = fp.gaussian("W", (n1, n0), variance=2), fp.gaussian("X", (n0, m))
    >>> entry_variance(W @ X / sympy.sqrt(n0)), entry_variance(W @ X / sympy.sqrt(n1))
    (2, 2*n0/n1)
    >>> entry_variance(X.T @ X / sympy.sqrt(n0))
    Traceback (most recent call last):
    ...
    freeprob._errors.EquivalenceError: an entrywise function of X.T @ X/(sqrt(n0)): X occurs twice (a Gram-type argument, as in kernel matrices X X^T/sqrt(p), whose diagonal is not in the Gaussian regime); the argument must be a product of independent Gaussian matrices (for a kernel matrix, remove the diagonal: zero_diagonal(f(X @ X.T / sqrt(p))), fp.kernel_matrix)
    """
    if not isinstance(argument, Expr):
        raise DomainError(f"an entrywise function applies to a matrix expression, got {argument!r}")
    if any(isinstance(node, Entrywise) for node in _walk(argument, real=True)):
        _check_layer(argument)
    for node in _walk(argument, real=True):
        if isinstance(node, Matrix) and node.kind not in ("gaussian", "deterministic"):
            _refuse(argument, f"{node.name} is a {node.kind} matrix; the argument must be a product of independent "
                              f"Gaussian (iid) matrices, with deterministic matrices between them at most",
                    "independent-product")
    monomials = expand(argument)
    if not monomials:
        _refuse(argument, "the argument is zero", "independent-product")
    where = {}  # leaf name -> (position, transposed) in the monomials seen so far
    skeletons = {}  # the Gaussian letters of a monomial, with positions -> that monomial
    total = sympy.Integer(0)
    dims = argument.dimensions()
    for word, c in monomials.items():
        part = c ** 2
        seen = set()
        check_generic_word(argument, word)
        skeleton = tuple((k, leaf.name, t) for k, (leaf, t) in enumerate(word) if leaf.kind != "deterministic")
        if skeleton in skeletons:  # differ only in deterministic letters: correlated, not independent terms
            other = " @ ".join(leaf.name for leaf, _ in skeletons[skeleton])
            this = " @ ".join(leaf.name for leaf, _ in word)
            _refuse(argument, f"the terms {other} and {this} have the same Gaussian matrices in the same places and "
                              f"differ only in deterministic matrices, so they are correlated, not independent; "
                              f"combine them into one term with one deterministic matrix (for D1 @ G + D2 @ G write "
                              f"D @ G with D = D1 + D2, its spectrum the sums of their values)", "independent-product")
        skeletons[skeleton] = word
        for k, (leaf, transposed) in enumerate(word):
            if leaf.kind == "deterministic":  # generic position: a Gaussian of variance m1(D^2)/p (expr.generic)
                part *= generic_variance(leaf)
                if k < len(word) - 1:
                    part *= leaf.shape[1]
                continue
            if leaf.name in seen:
                _refuse(argument, f"{leaf.name} occurs twice (a Gram-type argument, as in kernel matrices X X^T/sqrt(p), "
                                  f"whose diagonal is not in the Gaussian regime); the argument must be a product of "
                                  f"independent Gaussian matrices (for a kernel matrix, remove the diagonal: "
                                  f"zero_diagonal(f(X @ X.T / sqrt(p))), fp.kernel_matrix)", "independent-product")
            if leaf.name in where and where[leaf.name] != (k, transposed):
                _refuse(argument, f"{leaf.name} occurs in two terms at different places (as in W + W.T); the "
                                  f"entries of the argument are then not weakly dependent", "independent-product")
            where[leaf.name] = (k, transposed)
            seen.add(leaf.name)
            part *= leaf.variance
            if k < len(word) - 1:
                part *= leaf.shape[0] if transposed else leaf.shape[1]
        power = _growth_power(part, frozenset(dims))
        if not power.is_number:
            raise ScalingError(f"an entrywise function of {argument}: cannot decide how the entry variance {part} "
                               f"grows with the dimensions", monomial=str(argument))
        if power != 0:
            raise ScalingError(
                f"an entrywise function of {argument}: its entries have variance {part}, of order N^{power} as the "
                f"dimensions grow; the argument of an entrywise function must have entries of order one (divide "
                f"by the square root of the contracted dimensions, as in W @ X / sqrt(n0))",
                monomial=str(argument), power=power)
        total += part
    return _simplified(total)


@lru_cache(maxsize=1024)
def _growth_power(part, dims):
    """The power ``q`` with ``part ~ N^q`` as the dimensions ``dims`` grow together (cached: the heads of an
    attention model give the same entry variance, and each costs two sympy simplifications)."""
    big = sympy.Dummy("N", positive=True)
    growth = sympy.simplify(part.xreplace({d: d * big for d in dims}) / part)
    return sympy.simplify(sympy.log(growth) / sympy.log(big)) if growth != 1 else sympy.Integer(0)


@lru_cache(maxsize=1024)
def _simplified(expr):
    return sympy.simplify(expr)


_BOUNDED = (sympy.tanh, sympy.erf, sympy.erfc, sympy.sin, sympy.cos, sympy.sign, sympy.Heaviside)


def _degree(g, x):
    """A power ``d`` with ``|g(x)| = O(1 + |x|^d)`` for every value of the parameters, read off the formula; oo if none.

    Bounded functions (tanh, erf, sin, ...) have degree 0 whatever their
    argument; ``exp`` and ``cosh``/``sinh`` of anything growing, and ``log``
    (of degree 0 plus any positive power), are not bounded by this reading.
    Conservative: a bound it cannot see is oo, and the caller refuses.
    """
    if x not in g.free_symbols:
        return sympy.Integer(0)
    if g == x:
        return sympy.Integer(1)
    if isinstance(g, _BOUNDED):
        return sympy.Integer(0)
    if isinstance(g, (sympy.Add, sympy.Max, sympy.Min)):
        return sympy.Max(*[_degree(a, x) for a in g.args])
    if isinstance(g, sympy.Mul):
        return sympy.Add(*[_degree(a, x) for a in g.args])
    if isinstance(g, sympy.Abs):
        return _degree(g.args[0], x)
    if isinstance(g, sympy.Pow) and x not in g.exp.free_symbols and g.exp.is_number and g.exp >= 0:
        return g.exp * _degree(g.base, x)
    if isinstance(g, (sympy.exp, sympy.cosh, sympy.sinh)) and _degree(g.args[0], x) == 0:
        return sympy.Integer(0)
    return sympy.oo


def _check_layer(argument):
    """An argument with an entrywise function inside must be one layer of a network: ``c W @ Y`` or ``c Y @ W``.

    ``Y`` an entrywise node (possibly transposed) with ``mu0 = 0``, ``W`` a
    Gaussian leaf (possibly transposed) not used by ``Y``: the entries of
    ``W Y`` are Gaussian given ``Y``, of variance ``|y_j|^2 v / n``, which
    concentrates at ``E f(u)^2`` (Fan-Wang 2020). Otherwise
    :class:`EquivalenceError`.
    """
    body = argument.arg if isinstance(argument, Scaled) else argument
    usage = ("an entrywise function inside the argument must be one layer of a network, c W @ f(...) or c f(...) @ W "
             "with W an independent Gaussian matrix (deep features)")
    if not (isinstance(body, Product) and len(body.factors) == 2):
        _refuse(argument, usage, "independent-product")
    a, b = body.factors
    bare = [x.arg if isinstance(x, Transpose) else x for x in (a, b)]
    if isinstance(bare[1], Entrywise):
        gauss, inner = bare
    else:
        inner, gauss = bare
    if not (isinstance(inner, Entrywise) and isinstance(gauss, Matrix) and gauss.kind == "gaussian"):
        _refuse(argument, usage, "independent-product")
    if hasattr(inner, "exponential"):  # a softmax node
        _refuse(argument, f"the softmax {inner} cannot be a layer of a network", "independent-product")
    if getattr(inner, "diagonal_removed", False):
        _refuse(argument, f"the kernel matrix {inner} cannot be a layer of a network", "independent-product")
    if any(isinstance(n, Matrix) and n.name == gauss.name for n in _walk(inner, real=True)):
        _refuse(argument, f"{gauss.name} is used inside {inner}; the weights of a layer must be independent of its "
                          f"input", "independent-product")
    if inner.coefficients.mu0 != 0:
        _refuse(argument, f"the inner layer {inner} has mean mu0 = {inner.coefficients.mu0} != 0 (a rank-one part that "
                          f"would enter this argument); the activations of a deep network must be centred",
                "centred")


def check_function(f, x, where):
    """``f`` real on the real line and of polynomial growth, else :class:`EquivalenceError`."""
    t = sympy.Dummy("t", positive=True)
    # a polynomial bound read off the formula settles the growth (and parameters of unknown sign defeat the
    # limit); sympy's limit (gruntz, a noticeable part of loading a model) only decides the other functions
    bounded = _degree(f, x).is_finite
    for sign, end in ((1, "+oo"), (-1, "-oo")):
        h = f.xreplace({x: sign * t})
        if h.is_extended_real is False:
            raise EquivalenceError(f"{where}: f is not real for x < 0 or x > 0 ({h.xreplace({t: sympy.Symbol('t')})}"
                                   f" with t > 0); an entrywise function must be real on the real line",
                                   condition="real")
        if bounded:
            continue
        try:
            limit = sympy.limit(sympy.log(1 + h ** 2) / sympy.log(t), t, sympy.oo)
        except Exception:  # sympy raises assorted errors on hard limits
            limit = None
        if limit is None or not limit.is_finite or not limit.is_real:
            grows = "grows faster than any power of x" if limit in (sympy.oo, -sympy.oo) else \
                "has a growth sympy cannot decide"
            raise EquivalenceError(
                f"{where}: f {grows} as x -> {end} (the limit of log(1 + f^2)/log|x| is {limit}); the Gaussian "
                f"equivalence is established for f of polynomial growth (every moment E f(u)^k finite)",
                condition="growth")


def read_function(f, x, where):
    """``(expr, x_symbol)`` of a function given as a string or a sympy expression in ``x``."""
    if isinstance(f, str):
        expr, xsym, _ = parse_nonlinearity(f, x=x)
        return expr, xsym
    if isinstance(f, sympy.Expr):
        xname = x.name if isinstance(x, sympy.Symbol) else str(x)
        found = [s for s in f.free_symbols if s.name == xname]
        xsym = found[0] if found else (x if isinstance(x, sympy.Symbol) else sympy.Symbol(xname))
        check_structure(f, xsym, tuple(f.free_symbols - {xsym}), where)
        return f, xsym
    raise DomainError(f"{where}: f must be a string such as 'tanh(x)' or a sympy expression, got {type(f).__name__}")


def entrywise(f, argument, *, x="x", name="f", noise=None, dps=COEFFICIENT_DPS, time_budget=TIME_BUDGET):
    """The matrix ``f(argument)``, ``f`` applied to every entry, with its Gaussian equivalent derived.

    Parameters
    ----------
    f : str or sympy.Expr
        A function of one real variable ``x``. A string is read by the
        whitelisted scalar grammar (:func:`freeprob._numbers.parse_nonlinearity`:
        ``+ - * / **``, ``sqrt``, ``exp``, ``log``, ``tanh``, ``erf``, ``Max``,
        ``Abs``, ``Heaviside``, ``pi``, ``E``, ...; other plain names are
        parameters); nothing is evaluated as Python.
    argument : Expr
        ``M``: a product of independent Gaussian matrices with its scalings
        (or a sum of such products with no matrix in common).
    x : str or sympy.Symbol, optional
        The variable of ``f`` (default ``"x"``).
    name : str, optional
        The function's name, for printing (default ``"f"``).
    noise : str, optional
        The name of the independent Gaussian leaf ``Z`` of the equivalent.
        Default: ``Z_<name>_<6 hex digits of the node>`` (of ``f``, the
        argument and the coefficients), the same for equal nodes (``f(M)``
        written twice is one matrix) and different for different ones.
    dps : int, optional
        Digits to which coefficients without a closed form are first
        computed (by quadrature; default 50). Such a coefficient is the
        number ``E g(xi)`` of its integrand
        (:class:`~freeprob.expr.equivalence.GaussianMean`), recomputed by
        quadrature to whatever precision a law asks for: a density at 80
        digits has coefficients correct to 80 digits.
    time_budget : float, optional
        Seconds allowed to sympy per Gaussian integral (default 10). A
        function without Gaussian closed forms (tanh, atan, ...) skips
        sympy and goes to quadrature at once (the coefficients are cached
        per function and variance).

    Returns
    -------
    Entrywise

    Raises
    ------
    EquivalenceError
        Outside the conditions of the equivalence (module docstring), or when
        the Gaussian integrals of ``f`` are not finite (``1/x``).
    ScalingError
        When the argument's entries are not of order one.
    DomainError
        For a bad function, or when coefficients without a closed form
        would depend on symbols.
    """
    where = f"the entrywise function {name}"
    if not isinstance(name, str) or not name.isidentifier():
        raise DomainError(f"the name of an entrywise function must be an identifier, got {name!r}")
    expr, xsym = read_function(f, x, where)
    if not isinstance(argument, Expr):
        raise DomainError(f"{where} applies to a matrix expression, got {argument!r}")
    check_function(expr, xsym, f"{where}, f({xsym}) = {expr}")
    variance = entry_variance(argument)
    coeffs = derive_coefficients(expr, xsym, variance, dps, time_budget, where)
    if noise is None:
        noise = noise_name(name, f"{expr}|{xsym}|{argument!r}|{coeffs.mu1}|{coeffs.nu_sq}")
    terms = []
    if coeffs.mu1 != 0:
        terms.append(Scaled.of(coeffs.mu1, argument) if coeffs.mu1 != 1 else argument)
    leaf = None
    if coeffs.nu_sq != 0:
        leaf = gaussian(noise, argument.shape, variance=coeffs.nu_sq)
        terms.append(leaf)
    if not terms:
        raise EquivalenceError(f"{where}: f({xsym}) = {expr} is constant on the Gaussian entries of {argument} "
                               f"(mu1 = nu = 0): f(M) is the rank-one matrix mu0 1 1^T, with no bulk",
                               condition="constant")
    return Entrywise(tuple(terms), expr, xsym, argument, name, coeffs, leaf)


@dataclass(frozen=True)
class EquivalenceReport:
    """The Gaussian equivalents an expression's entrywise functions were replaced by, and their outliers.

    Attributes
    ----------
    nodes : tuple of Entrywise
    outliers : tuple of (Entrywise, sympy.Expr)
        The nodes with ``mu0 != 0`` and their ``mu0``: ``f(M)`` carries the
        rank-one part ``mu0 1 1^T`` (norm ``|mu0| sqrt(rows cols)``), which
        does not move the limiting bulk reported by the law but adds an
        outlier eigenvalue (or singular value) to finite samples.
    """

    nodes: tuple
    outliers: tuple

    def __bool__(self):
        return bool(self.nodes)

    def text(self):
        """The substitutions and their coefficients, one block per entrywise function."""
        lines = []
        for node in self.nodes:
            if hasattr(node, "report_lines"):  # a node with its own form (softmax)
                lines.extend(node.report_lines())
                continue
            c = node.coefficients
            entries = "off-diagonal entries" if hasattr(node, "shift") else "entries"  # a kernel matrix
            lines.append(f"{node} -> {node.equivalent_str()}   (Gaussian equivalent of {node.name}({node.x}) = "
                         f"{node.f} on {entries} u ~ N(0, s) of its argument, s = {_shown(c.variance)}; mean part "
                         f"{c.mu0}*1*1^T)")
            lines.append(str(c))
            if node.noise is not None:
                what = "Wigner matrix of off-diagonal" if node.noise.kind == "wigner" else "Gaussian matrix of entry"
                lines.append(f"  {node.noise.name}: an independent {what} variance nu^2")
        for node, mu0 in self.outliers:
            rows, cols = node.shape
            lines.append(f"outlier: {node} carries the rank-one part {mu0}*1*1^T (norm |mu0|*sqrt({rows}*{cols})); "
                         f"it does not move the bulk law and is not part of it")
        return "\n".join(lines)

    def as_dict(self):
        """Plain strings: one entry per node (function, argument, variance, coefficients, methods) and the outliers."""
        out = []
        for node in self.nodes:
            c = node.coefficients
            out.append({
                "function": f"{node.name}({node.x}) = {node.f}", "argument": str(node.argument),
                "entry_variance": _shown(c.variance), "mu0": _value(c.mu0, c.method.mu0),
                "mu1": _value(c.mu1, c.method.mu1), "nu_sq": _value(c.nu_sq, c.method.mu_star_sq),
                "method": dict(mu0=c.method.mu0, mu1=c.method.mu1, nu_sq=c.method.mu_star_sq),
                "numeric_digits": 30 if "numeric" in c.method else None,
                "equivalent": node.equivalent_str(), "noise": node.noise.name if node.noise is not None else None,
                "noise_kind": node.noise.kind if node.noise is not None else None,
            })
        return {"entrywise": out, "outliers": [{"node": str(n), "mu0": str(m)} for n, m in self.outliers]}


def _shown(value):
    """A value for a report: one without a closed form (from numeric coefficients of an inner layer) with 20 digits."""
    if isinstance(value, sympy.Expr) and value.has(GaussianMean):
        return f"{numeric_text(value)} (numeric)"
    return str(value)


def _value(value, how):
    """A coefficient as text: exact as it is, numeric as a decimal of 30 digits."""
    return str(value) if how == "exact" else numeric_text(value, 30)


def equivalence_report(expr):
    """The :class:`EquivalenceReport` of ``expr`` (empty when it has no entrywise function)."""
    nodes = tuple(entrywise_nodes(expr))
    outliers = tuple((n, n.coefficients.mu0) for n in nodes if n.coefficients.mu0 != 0)
    return EquivalenceReport(nodes, outliers)
