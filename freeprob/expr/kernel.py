"""Inner-product kernel matrices ``zero_diagonal(f(c X X^T))``, replaced by their Gaussian equivalent.

For ``X`` (n x p) with iid ``N(0, v)`` entries and ``G = c X X^T`` with
``c ~ 1/sqrt(p)``, the off-diagonal entries of ``G`` are asymptotically
``N(0, s)``, ``s = c^2 v^2 p``, and weakly dependent, while the diagonal
concentrates at ``d = c v p`` (of order ``sqrt(p)``): an entrywise function
of ``G`` is not in the regime of :mod:`freeprob.expr.entrywise`. With its
diagonal removed it is (Cheng-Singer 2013; Fan-Montanari 2019): expanding
``f`` in Hermite polynomials at variance ``s``, the degree-one part is
``mu1 (G - d I)`` up to a negligible diagonal, the degrees two and higher
together act as an independent Wigner matrix of off-diagonal variance
``nu^2``, and the degree-zero part ``mu0 (1 1^T - I)`` is a rank-one outlier
(plus a negligible multiple of the identity):

    zero_diagonal(f(G)) = mu0 (1 1^T - I) + mu1 (G - d I) + nu Z,   Z Wigner,

with ``mu0 = E f(u)``, ``mu1 = E u f(u) / s``, ``nu^2 = E f(u)^2 - mu0^2 -
s mu1^2`` for ``u ~ N(0, s)``: the coefficients of the one derivation
(:func:`~freeprob.expr.equivalence.entry_coefficients`). For ``f(x) = x^2 - 1``
and unit variances, ``mu1 = 0`` and ``nu^2 = 2``: ``zero_diagonal(f(X X^T /
sqrt(p))) / sqrt(n)`` has the semicircle law of variance 2, whatever ``n/p``.

:class:`Kernel` is an :class:`~freeprob.expr.entrywise.Entrywise` node (the
same report, the same outliers) whose terms are ``mu1 G - mu1 d I + Z``;
Monte-Carlo applies ``f`` to the sampled ``G`` and sets the diagonal to 0.

Examples
--------
>>> import freeprob as fp, sympy
>>> n, p = fp.dims("n p")
>>> X = fp.gaussian("X", (n, p))
>>> K = kernel_matrix("x**2 - 1", X @ X.T / sympy.sqrt(p), noise="Z")
>>> print(K, "->", K.equivalent_str())
zero_diagonal(f(X @ X.T/(sqrt(p)))) -> Z
>>> K.noise.kind, K.noise.variance
('wigner', 2)
"""

from dataclasses import dataclass

import sympy

from .._errors import DomainError, EquivalenceError, ScalingError
from .entrywise import (COEFFICIENT_DPS, TIME_BUDGET, Entrywise, check_function, derive_coefficients,
                        equivalent_text, noise_name, read_function)
from .tree import Expr, Scaled, _walk, expand, identity, wigner

__all__ = ["Kernel", "gram_structure", "kernel_matrix"]


@dataclass(frozen=True)
class Kernel(Entrywise):
    """``zero_diagonal(f(G))`` for a Gram matrix ``G = c X X^T``; for the engine, ``mu1 G - mu1 d I + Z`` (Z Wigner).

    Besides the fields of :class:`~freeprob.expr.entrywise.Entrywise`:
    ``shift``, the limit ``d`` of the diagonal entries of ``G`` (exact).
    """

    shift: sympy.Expr

    #: Marks a kernel matrix for the checks of :mod:`freeprob.expr.entrywise` (not a field).
    diagonal_removed = True

    def __str__(self):
        return f"zero_diagonal({self.name}({self.argument}))"

    def equivalent_str(self):
        """The Gaussian equivalent as text, ``mu1*(G - d*I) + Z``."""
        return equivalent_text(self.coefficients, f"{self.argument} - {sympy.sstr(self.shift)}*I", self.noise)


def gram_structure(argument):
    """``(X, c, s, d)`` of a Gram argument ``c X X^T`` (or ``c X^T X``): off-diagonal variance ``s``, diagonal ``d``.

    Raises
    ------
    EquivalenceError
        When the argument is not a multiple of ``X X^T`` or ``X^T X`` for one
        Gaussian ``X`` (condition ``"gram"``).
    ScalingError
        When ``s`` is not of order one (the scale must be ``1/sqrt(p)``).

    Examples
    --------
    >>> import freeprob as fp, sympy
    >>> n, p = fp.dims("n p")
    >>> X = fp.gaussian("X", (n, p), variance=2)
    >>> gram_structure(X @ X.T / sympy.sqrt(p))[2:]
    (4, 2*sqrt(p))
    """
    if not isinstance(argument, Expr):
        raise DomainError(f"a kernel matrix applies to a matrix expression, got {argument!r}")
    for node in _walk(argument, real=True):
        if isinstance(node, Entrywise):
            raise EquivalenceError(f"a kernel matrix of {argument}: it contains the entrywise function {node} "
                                   f"(deep features are not supported yet)", condition="gram")
    monomials = expand(argument)
    if len(monomials) != 1:
        raise EquivalenceError(f"a kernel matrix of {argument}: the argument must be a Gram matrix c X @ X.T (or "
                               f"c X.T @ X) of one Gaussian X", condition="gram")
    ((word, c),) = monomials.items()
    if len(word) != 2 or word[0][0] != word[1][0] or word[0][1] == word[1][1] or word[0][0].kind != "gaussian":
        raise EquivalenceError(f"a kernel matrix of {argument}: the argument must be a Gram matrix c X @ X.T (or "
                               f"c X.T @ X) of one Gaussian X", condition="gram")
    leaf, transposed = word[0]
    inner = leaf.shape[0] if transposed else leaf.shape[1]
    s = sympy.simplify(c ** 2 * leaf.variance ** 2 * inner)
    d = sympy.simplify(c * leaf.variance * inner)
    big = sympy.Dummy("N", positive=True)
    dims = argument.dimensions()
    power = sympy.simplify(sympy.log(sympy.simplify(s.xreplace({x: x * big for x in dims}) / s)) / sympy.log(big))
    if power != 0:
        raise ScalingError(
            f"a kernel matrix of {argument}: its off-diagonal entries have variance {s}, of order N^{power}; "
            f"scale the Gram matrix by 1/sqrt of the contracted dimension, as in X @ X.T / sqrt(p)",
            monomial=str(argument), power=power)
    return leaf, c, s, d


def kernel_matrix(f, argument, *, x="x", name="f", noise=None, dps=COEFFICIENT_DPS, time_budget=TIME_BUDGET):
    """The kernel matrix ``zero_diagonal(f(argument))`` for a Gram ``argument``, with its Gaussian equivalent derived.

    Parameters
    ----------
    f : str or sympy.Expr
        A function of ``x`` (the whitelisted grammar, as in
        :func:`~freeprob.expr.entrywise.entrywise`).
    argument : Expr
        ``c X @ X.T`` (or ``c X.T @ X``) for one Gaussian ``X``, with ``c``
        of order ``1/sqrt(p)``.
    x, name, noise, dps, time_budget
        As in :func:`~freeprob.expr.entrywise.entrywise`; the noise leaf is
        a Wigner matrix of off-diagonal variance ``nu^2``.

    Returns
    -------
    Kernel

    Raises
    ------
    EquivalenceError, ScalingError, DomainError
        As :func:`gram_structure` and :func:`~freeprob.expr.entrywise.entrywise`.
    """
    where = f"the kernel matrix of {name}"
    if not isinstance(name, str) or not name.isidentifier():
        raise DomainError(f"the name of an entrywise function must be an identifier, got {name!r}")
    expr, xsym = read_function(f, x, where)
    check_function(expr, xsym, f"{where}, f({xsym}) = {expr}")
    _, _, s, d = gram_structure(argument)
    coeffs = derive_coefficients(expr, xsym, s, dps, time_budget, where)
    size = argument.shape[0]
    if noise is None:
        noise = noise_name(name, f"kernel|{expr}|{xsym}|{argument!r}|{coeffs.nu_sq}")
    terms = []
    if coeffs.mu1 != 0:
        terms.append(Scaled.of(coeffs.mu1, argument) if coeffs.mu1 != 1 else argument)
        terms.append(Scaled.of(-coeffs.mu1 * d, identity(size)))
    leaf_z = None
    if coeffs.nu_sq != 0:
        leaf_z = wigner(noise, size, variance=coeffs.nu_sq)
        terms.append(leaf_z)
    if not terms:
        raise EquivalenceError(f"{where}: f({xsym}) = {expr} is constant on the off-diagonal entries (mu1 = nu = 0)",
                               condition="constant")
    return Kernel(tuple(terms), expr, xsym, argument, name, coeffs, leaf_z, d)
