"""The Gaussian equivalent of softmax attention, and the report of ``freeprob equivalence``.

The derivation of Gaussian-equivalent coefficients is
:mod:`freeprob.expr.equivalence` (one derivation for the whole engine: entrywise
functions of model files use it too); the softmax node
(:mod:`freeprob.expr.softmax`) derives the coefficients of softmax with it, and
this module reads them for attention.
"""

from functools import lru_cache

import sympy

from .._errors import FreeProbError
from .._precision import context, mp_to_str
from ..expr.equivalence import Coefficients, GaussianEquivalent, gaussian_equivalent
from ..expr.softmax import softmax_coefficients as node_coefficients

__all__ = [
    "Coefficients",
    "GaussianEquivalent",
    "command_line_report",
    "gaussian_equivalent",
    "softmax_coefficients",
]


@lru_cache(maxsize=1)
def softmax_coefficients():
    """The Gaussian-equivalent coefficients of softmax attention, from the softmax node's derivation.

    The centred softmax of ``beta S`` (``S`` with unit-variance entries) is
    replaced by ``(beta S + Z)/sqrt(l)``, ``Z`` of entry variance ``c^2``
    (:func:`freeprob.expr.softmax.softmax_coefficients` at entry variance
    ``beta^2``, the one derivation the attention builder's expression goes
    through). In the form ``(mu1 S + c Z')/sqrt(l)``, ``Z'`` of unit entry
    variance, they are returned for the real-softmax sampler and the reports.

    Returns
    -------
    beta : sympy.Symbol
        ``Symbol("beta", real=True)``.
    mu1 : sympy.Expr
        The coefficient of ``S`` (``beta`` times the derived coefficient of ``beta S``).
    c : sympy.Expr
        The amplitude of the independent Gaussian part, ``sqrt(nu^2)``.

    Raises
    ------
    FreeProbError
        If the derivation is not exact, or the row normalization ``E exp(u)``
        it divides by is not positive.

    Examples
    --------
    >>> beta, mu1, c = softmax_coefficients()
    >>> mu1, c
    (beta, sqrt(-beta**2 + exp(beta**2) - 1))
    """
    beta = sympy.Symbol("beta", real=True)
    normalized, exponential = node_coefficients(beta ** 2)
    if "numeric" in normalized.method or not exponential.mu0.is_positive:
        raise FreeProbError(f"internal error: the softmax coefficients at entry variance beta^2 are not exact "
                            f"({normalized.method}) or the row normalization E exp(u) = {exponential.mu0} is not "
                            f"positive")
    return beta, sympy.simplify(beta * normalized.mu1), sympy.sqrt(normalized.nu_sq)


def command_line_report(expr_string, params=None, dps=30):
    """Text report of the Gaussian-equivalent coefficients, for ``freeprob equivalence``.

    Parameters
    ----------
    expr_string : str
        The nonlinearity, parsed by :func:`parse_nonlinearity`.
    params : mapping, optional
        Parameter values by name (None for symbolic). When every parameter
        has a value, the coefficients are also printed numerically.
    dps : int, optional
        Digits of the numeric values (default 30).

    Returns
    -------
    str

    Examples
    --------
    >>> print(command_line_report("exp(beta*x - beta**2/2)", {"beta": 1}, dps=15))
    Gaussian equivalent of f(x) = exp(-beta**2/2 + beta*x),  x ~ N(0, 1)
      mu0        = E f                       = 1   [exact]
      mu1        = E x f                     = beta   [exact]
      mu_star^2  = E f^2 - mu0^2 - mu1^2     = -beta**2 + exp(beta**2) - 1   [exact]
    at beta=1, 15 digits:
      mu0        = 1.00000000000000
      mu1        = 1.00000000000000
      mu_star^2  = 0.718281828459045
      c          = 0.847515090401962
    """
    ge = gaussian_equivalent(expr_string, params=params, dps=dps)
    lines = [str(ge)]
    if all(p in dict(ge.values) for p in ge.params):
        vals = ge.evaluate(dps=dps)
        shown = ", ".join(f"{p}={v}" for p, v in ge.values)
        lines.append(f"at {shown}, {dps} digits:" if shown else f"{dps} digits:")
        ctx = context(dps)
        for label, v in (("mu0", vals.mu0), ("mu1", vals.mu1), ("mu_star^2", vals.mu_star_sq)):
            lines.append(f"  {label:<11}= {mp_to_str(v, dps)}")
        c = ctx.sqrt(vals.mu_star_sq) if vals.mu_star_sq >= 0 else ctx.nan
        lines.append(f"  {'c':<11}= {mp_to_str(c, dps)}")
    return "\n".join(lines)
