"""The centred row-wise softmax of a matrix, replaced by its Gaussian equivalent.

``softmax(M)`` is, for an ``m x n`` matrix ``M``, the centred and scaled
row-wise softmax

    sqrt(n) (A - 1 1^T / n),    A_ij = exp(M_ij) / sum_k exp(M_ik),

the matrix attention mixes its values with (docs/attention.md: ``M = beta Q
K^T / sqrt(d_h)`` and ``n = l``). For an argument whose entries are
asymptotically ``N(0, s)`` and weakly dependent (the conditions of
:mod:`freeprob.expr.entrywise`, checked by the same
:func:`~freeprob.expr.entrywise.entry_variance`), each row sum concentrates
at ``n E exp(u)``, so ``n A_ij = exp(M_ij) / E exp(u)`` up to the
fluctuation of the normalization, and the Gaussian equivalent of the
exponential gives

    softmax(M) = (mu1 M + nu Z) / sqrt(n),

``Z`` a fresh Gaussian matrix of ``M``'s shape with unit entry variance,
and, with ``e0, e1, nu_e^2`` the coefficients of ``f(x) = exp(x)`` at entry
variance ``s`` (the one derivation,
:func:`~freeprob.expr.equivalence.entry_coefficients`),

    mu1 = e1 / e0,    nu^2 = nu_e^2 / e0^2.

The derivation gives ``mu1 = 1`` and ``nu^2 = exp(s) - 1 - s``; nothing
types them in. The mean ``1 1^T`` of ``n A`` is what the centring removes,
so softmax has no outlier. The exponential is not of polynomial growth (an
entrywise ``exp`` is refused): softmax is a node of its own, whose
normalization keeps it bounded, with a regime of its own. The neglected
fluctuation of the normalization enters the law at relative order
``exp(2 s) / n`` (:func:`freeprob.attention.regime_parameter`); a numeric
entry variance above :data:`VARIANCE_WARN` (``|beta| > 2`` for unit-variance
scores) gets a :class:`~freeprob.RegimeWarning` (:func:`check_softmax_regime`).

Monte-Carlo applies the real softmax to the sampled argument
(:mod:`freeprob.montecarlo.sample`).

Examples
--------
>>> import freeprob as fp, sympy
>>> l, d = fp.dims("l d")
>>> beta = sympy.Symbol("beta", real=True)
>>> Q, K = fp.gaussian("Q", (l, d)), fp.gaussian("K", (l, d))
>>> A = fp.softmax(beta * Q @ K.T / sympy.sqrt(d), noise="Z")
>>> print(A)
softmax((beta*Q) @ K.T/(sqrt(d)))
>>> print(A.equivalent_str())
((beta*Q) @ K.T/(sqrt(d)) + sqrt(-beta**2 + exp(beta**2) - 1)*Z)/sqrt(l)
>>> A.coefficients.mu1, A.coefficients.nu_sq, A.noise.variance
(1, -beta**2 + exp(beta**2) - 1, 1)
"""

import warnings
from dataclasses import dataclass
from functools import lru_cache

import sympy

from .._errors import DomainError, EquivalenceError, RegimeWarning
from .entrywise import COEFFICIENT_DPS, TIME_BUDGET, Entrywise, derive_coefficients, entry_variance, \
    equivalent_text, noise_name
from .equivalence import EntryCoefficients, coefficient_value_text, numeric_text
from .tree import Expr, Scaled, gaussian

__all__ = ["Softmax", "VARIANCE_WARN", "check_softmax_regime", "softmax", "softmax_coefficients"]

#: Entry variance of the argument above which :func:`check_softmax_regime` warns (``|beta| > 2`` for unit scores):
#: the limit is then reached only for rows longer than ``20 exp(2 s)`` > 10^5 (docs/attention.md, the regime).
VARIANCE_WARN = 4

_X = sympy.Symbol("x")


@dataclass(frozen=True)
class Softmax(Entrywise):
    """``sqrt(n) (A - 1 1^T/n)``, ``A`` the row-wise softmax of ``argument``; for the engine ``(mu1 M + nu Z)/sqrt(n)``.

    Made by :func:`softmax`. The fields are those of
    :class:`~freeprob.expr.entrywise.Entrywise` (``f`` is ``exp(x)``, the
    function whose coefficients are derived; ``coefficients`` are those of
    the normalized and centred exponential: ``mu0 = 0``, ``mu1``, ``nu_sq``),
    and ``exponential``, the coefficients of ``exp`` itself at the entry
    variance (``mu0`` of it is the normalization ``E exp(u)``).
    """

    exponential: EntryCoefficients

    def __str__(self):
        return f"softmax({self.argument})"

    @property
    def length(self):
        """``n``, the length of a row (the columns of the argument)."""
        return self.argument.shape[1]

    def equivalent_str(self):
        """``(mu1*(M) + nu*Z)/sqrt(n)``."""
        text = equivalent_text(self.coefficients, str(self.argument), None)
        if self.noise is not None:
            nu = sympy.sqrt(self.coefficients.nu_sq)
            shown = sympy.sstr(nu) if self.coefficients.method.mu_star_sq == "exact" else numeric_text(nu)
            text = (text + " + " if text else "") + f"{shown}*{self.noise.name}"
        return f"({text})/sqrt({self.length})"

    def report_lines(self):
        """The lines of :meth:`~freeprob.expr.entrywise.EquivalenceReport.text` for this node."""
        c, e = self.coefficients, self.exponential
        n = self.length
        lines = [f"{self} -> {self.equivalent_str()}   (Gaussian equivalent of the centred row-wise softmax "
                 f"sqrt({n})*(A - 1*1^T/{n}), A = exp(M)/row sums, on entries u ~ N(0, s) of its argument M, "
                 f"s = {c.variance}; row sums {n}*E exp(u) = {n}*{e.mu0}, no mean part)"]
        lines.append(_coefficient_text(c))
        if self.noise is not None:
            lines.append(f"  {self.noise.name}: an independent Gaussian matrix of unit entry variance")
        return lines


def _coefficient_text(c):
    shown = coefficient_value_text
    return "\n".join([
        f"  mu1   = E u exp(u) / (s E exp(u))            = {shown(c.mu1, c.method.mu1)}",
        f"  nu^2  = E exp(2u) / (E exp(u))^2 - 1 - s mu1^2 = {shown(c.nu_sq, c.method.mu_star_sq)}",
    ])


@lru_cache(maxsize=256)
def softmax_coefficients(variance, dps=COEFFICIENT_DPS, time_budget=TIME_BUDGET):
    """``(normalized, exponential)``: the coefficients of the centred softmax at entry variance ``variance``.

    ``exponential`` is :func:`~freeprob.expr.equivalence.entry_coefficients`
    of ``exp(x)`` (the derivation every entrywise node uses); ``normalized``
    divides it by the row normalization ``E exp(u)``: ``mu0 = 0`` (centred),
    ``mu1 = E u exp(u) / (s E exp(u))``, ``nu^2 = (E exp(2u) - (E exp(u))^2 -
    s (E u exp(u) / s)^2) / (E exp(u))^2``.

    Examples
    --------
    >>> beta = sympy.Symbol("beta", real=True)
    >>> c, e = softmax_coefficients(beta ** 2)
    >>> c.mu0, c.mu1, c.nu_sq, e.mu0
    (0, 1, -beta**2 + exp(beta**2) - 1, exp(beta**2/2))
    """
    variance = sympy.sympify(variance)
    e = derive_coefficients(sympy.exp(_X), _X, variance, dps, time_budget, "softmax")
    if e.method.mu0 == e.method.mu1 == e.method.mu_star_sq == "exact":
        mu1 = sympy.simplify(e.mu1 / e.mu0)
        nu_sq = sympy.simplify(e.nu_sq / e.mu0 ** 2)
    else:  # numbers without a closed form (GaussianMean), computed to the digits asked
        mu1 = e.mu1 / e.mu0
        nu_sq = e.nu_sq / e.mu0 ** 2
    normalized = EntryCoefficients(f=sympy.exp(_X), x=_X, variance=variance, mu0=sympy.Integer(0), mu1=mu1,
                                   nu_sq=nu_sq, method=e.method, dps=dps)
    return normalized, e


def check_softmax_regime(variance, where="softmax"):
    """Warn (:class:`~freeprob.RegimeWarning`) when a numeric entry variance exceeds :data:`VARIANCE_WARN`.

    The equivalence holds as the row length ``n`` grows at fixed ``s``; the
    first correction is of relative order ``exp(2 s)/n``, so for ``s > 4``
    the limit describes only rows longer than ``20 exp(2 s) > 10^5``.
    Returns the variance as a float, or None when it is not a number.
    """
    s = sympy.sympify(variance)
    if not s.is_number:
        return None
    value = float(s)
    if value > VARIANCE_WARN:
        warnings.warn(
            f"{where}: the scores have entry variance {value:.4g} (beta = {value ** 0.5:.4g} for unit-variance "
            f"scores) > {VARIANCE_WARN}: the Gaussian equivalent of softmax is the limit of long rows; its first "
            f"correction is of relative order exp(2 s)/n = {2.718281828459045 ** (2 * value):.3g}/n, so the law "
            f"describes rows longer than about {20 * 2.718281828459045 ** (2 * value):.3g}",
            RegimeWarning, stacklevel=3)
    return value


def softmax(argument, *, noise=None, dps=COEFFICIENT_DPS, time_budget=TIME_BUDGET):
    """The centred row-wise softmax ``sqrt(n) (A - 1 1^T/n)`` of ``argument``, with its Gaussian equivalent derived.

    Parameters
    ----------
    argument : Expr
        ``M`` (``m x n``): a product of independent Gaussian matrices with its
        scalings, entries of order one (as for
        :func:`~freeprob.expr.entrywise.entrywise`), typically ``beta Q @
        K.T / sqrt(d)``; the softmax runs along each row.
    noise : str, optional
        The name of the independent Gaussian leaf ``Z`` (unit entry
        variance, scaled by ``nu``). Default: ``Z_softmax_<6 hex digits of the node>``.
    dps, time_budget
        As in :func:`~freeprob.expr.entrywise.entrywise`.

    Returns
    -------
    Softmax

    Raises
    ------
    EquivalenceError, ScalingError
        Outside the conditions of the equivalence (a Gram-type argument such
        as ``Q @ Q.T``, a Wigner factor, entries not of order one).
    DomainError
        For an argument that is not a matrix expression.

    Warns
    -----
    RegimeWarning
        When the entry variance is a number above :data:`VARIANCE_WARN`.
    """
    if not isinstance(argument, Expr):
        raise DomainError(f"softmax applies to a matrix expression, got {argument!r}")
    if isinstance(argument, Softmax):
        raise EquivalenceError(f"softmax of {argument}: a softmax of a softmax is not in the Gaussian regime",
                               condition="independent-product")
    variance = entry_variance(argument)
    check_softmax_regime(variance, f"softmax({argument})")
    coeffs, exponential = softmax_coefficients(variance, dps, time_budget)
    n = argument.shape[1]
    if noise is None:
        noise = noise_name("softmax", f"softmax|{argument!r}|{coeffs.mu1}|{coeffs.nu_sq}")
    root = sympy.sqrt(n)
    terms = []
    if coeffs.mu1 != 0:
        terms.append(Scaled.of(coeffs.mu1 / root, argument))
    leaf = None
    if coeffs.nu_sq != 0:
        # a unit-variance leaf scaled by nu (the form of the attention surrogate, which keeps the elimination of
        # the polynomial route fast: a variance exp(s) - 1 - s slows it by orders of magnitude)
        leaf = gaussian(noise, argument.shape)
        terms.append(Scaled.of(sympy.sqrt(coeffs.nu_sq) / root, leaf))
    if not terms:
        raise EquivalenceError(f"softmax of {argument}: its entries are constant, softmax is 1 1^T/n exactly "
                               f"(no fluctuation)", condition="constant")
    return Softmax(tuple(terms), sympy.exp(_X), _X, argument, "softmax", coeffs, leaf, exponential)
