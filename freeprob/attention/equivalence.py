"""The Gaussian equivalent of softmax attention, and the report of ``freeprob equivalence``.

The derivation of Gaussian-equivalent coefficients is
:mod:`freeprob.expr.equivalence` (one derivation for the whole engine: entrywise
functions of model files use it too); this module derives the softmax
exponential's coefficients with it, once.
"""

from functools import lru_cache

import sympy

from .._errors import FreeProbError
from .._precision import context, mp_to_str
from ..expr.equivalence import Coefficients, GaussianEquivalent, gaussian_equivalent

__all__ = [
    "Coefficients",
    "GaussianEquivalent",
    "command_line_report",
    "gaussian_equivalent",
    "softmax_coefficients",
]


@lru_cache(maxsize=1)
def softmax_coefficients():
    """The Gaussian-equivalent coefficients of the softmax exponential, derived symbolically once.

    Runs :func:`gaussian_equivalent` on ``exp(beta*x - beta**2/2)`` with
    ``method="exact"`` (sympy integration) and maps its parameter to the real
    symbol ``beta`` used by model files. The attention builder and the
    real-softmax sampler both read the coefficients here.

    Returns
    -------
    beta : sympy.Symbol
        ``Symbol("beta", real=True)``.
    mu1 : sympy.Expr
        The coefficient of the linear part, ``E xi f(xi)``.
    c : sympy.Expr
        ``sqrt(E f^2 - mu0^2 - mu1^2)``, the amplitude of the independent
        Gaussian part.

    Raises
    ------
    FreeProbError
        If the derivation does not give ``mu0 = 1``: then ``1 1^T/l`` would
        not be the mean removed by the centering of the attention contract.

    Examples
    --------
    >>> beta, mu1, c = softmax_coefficients()
    >>> mu1, c
    (beta, sqrt(-beta**2 + exp(beta**2) - 1))
    """
    ge = gaussian_equivalent("exp(beta*x - beta**2/2)", method="exact")
    (sym,) = ge.params
    beta = sympy.Symbol("beta", real=True)
    if sympy.simplify(ge.mu0 - 1) != 0:
        raise FreeProbError(f"internal error: the normalized exponential has mu0 = {ge.mu0}, expected 1")
    mu1 = ge.mu1.xreplace({sym: beta})
    c = sympy.sqrt(ge.mu_star_sq.xreplace({sym: beta}))
    return beta, mu1, c


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
