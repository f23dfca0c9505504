"""The exception hierarchy of freeprob.

Every failure the library can report is a subclass of :class:`FreeProbError`.
Messages name the offending piece (operand, monomial, file and key, point) and
say what to do next.
"""

__all__ = [
    "FreeProbError",
    "ShapeError",
    "NotSelfAdjointError",
    "ScalingError",
    "DomainError",
    "ConvergenceError",
    "RegimeError",
    "EquivalenceError",
    "RegimeWarning",
    "ModelFileError",
    "EliminationError",
    "MissingDependencyError",
    "ClusterError",
]


class FreeProbError(Exception):
    """Base class of every error raised by freeprob."""


class ShapeError(FreeProbError, ValueError):
    """Operands whose shapes do not fit (``A @ B`` with ``cols(A) != rows(B)``, ...)."""


class NotSelfAdjointError(FreeProbError, ValueError):
    """An eigenvalue law was asked for an expression that is not symmetric."""


class ScalingError(FreeProbError, ValueError):
    """A monomial that does not stay of order one as the dimensions grow.

    Attributes
    ----------
    monomial : str
        The offending monomial.
    power : sympy.Rational
        Its power of ``N`` once every Gaussian is normalized to variance ``1/N``.
    """

    def __init__(self, message, monomial=None, power=None):
        super().__init__(message)
        self.monomial = monomial
        self.power = power


class DomainError(FreeProbError, ValueError):
    """A parameter outside its domain (negative ratio or variance, ...)."""


class ConvergenceError(FreeProbError, ArithmeticError):
    """A solve that did not reach the requested accuracy.

    Attributes
    ----------
    point : complex or mpc
        Where the solve failed.
    residual : float or mpf
        The last residual reached.
    dps : int
        The precision (decimal digits) that was asked for.
    """

    def __init__(self, message, point=None, residual=None, dps=None):
        super().__init__(message)
        self.point = point
        self.residual = residual
        self.dps = dps


class RegimeError(FreeProbError, ValueError):
    """A model outside the regime where the limiting law is valid."""


class EquivalenceError(RegimeError):
    """An entrywise function whose argument or form is outside the regime of its Gaussian equivalent.

    Attributes
    ----------
    condition : str
        The condition that fails: ``"independent-product"`` (the argument is
        not a product of independent Gaussian factors: a Gram-type argument
        that repeats a matrix, a Wigner or identity factor, a nested
        entrywise function), ``"growth"`` (the function is not of polynomial
        growth), ``"real"`` (it is not real on the real line),
        ``"integrable"`` (its Gaussian integrals are not finite),
        ``"constant"`` (it has no bulk: ``mu1 = nu = 0``), ``"gram"`` (a kernel
        matrix of an argument that is not a Gram matrix), ``"centred"`` (an
        inner layer of a deep network with a nonzero mean) or
        ``"causal-mask"`` (a softmax under the causal mask, docs/causal.md).
    """

    def __init__(self, message, condition=None):
        super().__init__(message)
        self.condition = condition


class RegimeWarning(UserWarning):
    """A configuration at the edge of the regime where the limiting law is valid.

    The limiting law is still returned; at the stated size the finite system
    is expected to differ from it by corrections of the stated relative size.
    (A warning, not an error: it is not a :class:`FreeProbError`.)
    """


class ModelFileError(FreeProbError, ValueError):
    """A malformed model file: names the file and the key."""


class EliminationError(FreeProbError, RuntimeError):
    """Elimination to one polynomial equation did not finish (time or size budget)."""


class MissingDependencyError(FreeProbError, ImportError):
    """An optional dependency that a request needs is not installed; the message says what to install."""


class ClusterError(FreeProbError, ConnectionError):
    """A compute cluster (a Dask scheduler) that cannot be reached."""
