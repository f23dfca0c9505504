"""freeprob: exact limiting spectral laws of random-matrix expressions.

Describe a model with symbolic dimensions, get its reduced Dyson equations,
solve them to any precision, and check the answer by Monte-Carlo.

>>> import freeprob as fp
>>> p, n = fp.dims("p n")
>>> X = fp.gaussian("X", (p, n))
>>> law = fp.eigenvalue_law(X @ X.T / n, ratios={p: 1, n: 2})
"""

from ._errors import (
    ConvergenceError,
    DomainError,
    EliminationError,
    FreeProbError,
    ModelFileError,
    NotSelfAdjointError,
    RegimeError,
    ScalingError,
    ShapeError,
)
from ._expr import dims, expression_graph, gaussian, identity, wigner
from ._law import SpectralLaw, eigenvalue_law, singular_value_law
from ._precision import fmt

__all__ = [
    "ConvergenceError",
    "DomainError",
    "EliminationError",
    "FreeProbError",
    "ModelFileError",
    "NotSelfAdjointError",
    "RegimeError",
    "ScalingError",
    "ShapeError",
    "SpectralLaw",
    "dims",
    "eigenvalue_law",
    "expression_graph",
    "fmt",
    "gaussian",
    "identity",
    "singular_value_law",
    "wigner",
]

__version__ = "0.1.0"
