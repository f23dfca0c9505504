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
    RegimeWarning,
    ScalingError,
    ShapeError,
)
from .attention.equivalence import GaussianEquivalent, gaussian_equivalent
from .expr.tree import dims, expression_graph, gaussian, identity, wigner
from .law import SpectralLaw, eigenvalue_law, law_of, singular_value_law
from .expr.modelfile import Model, builtin_models, find_model, load_model
from .montecarlo.check import CheckReport, check
from .montecarlo.sample import sample_spectrum
from ._precision import fmt
from .scalar.laws import (
    Arcsine,
    Atomic,
    FreePoisson,
    MarchenkoPastur,
    Semicircle,
    free_cumulants_from_moments,
    moments_from_free_cumulants,
)
from .scalar.algebraic import (
    AlgebraicLaw,
    free_additive_convolution,
    free_multiplicative_convolution,
    subordination,
)
from . import attention
from .attention import (
    attention_config,
    attention_law,
    check_attention,
    compare_patterns,
    emit_model,
    sample_attention,
)

__all__ = [
    "AlgebraicLaw",
    "Arcsine",
    "attention_config",
    "attention_law",
    "check_attention",
    "compare_patterns",
    "emit_model",
    "Atomic",
    "attention",
    "CheckReport",
    "FreePoisson",
    "GaussianEquivalent",
    "MarchenkoPastur",
    "Model",
    "Semicircle",
    "builtin_models",
    "check",
    "find_model",
    "free_additive_convolution",
    "free_cumulants_from_moments",
    "free_multiplicative_convolution",
    "gaussian_equivalent",
    "load_model",
    "moments_from_free_cumulants",
    "sample_attention",
    "sample_spectrum",
    "subordination",
    "ConvergenceError",
    "DomainError",
    "EliminationError",
    "FreeProbError",
    "ModelFileError",
    "NotSelfAdjointError",
    "RegimeError",
    "RegimeWarning",
    "ScalingError",
    "ShapeError",
    "SpectralLaw",
    "dims",
    "eigenvalue_law",
    "expression_graph",
    "fmt",
    "gaussian",
    "identity",
    "law_of",
    "singular_value_law",
    "wigner",
]

__version__ = "0.1.0"
