"""freeprob: exact limiting spectral laws of random-matrix expressions.

Describe a model with symbolic dimensions, get its reduced Dyson equations,
solve them to any precision, and check the answer by Monte-Carlo.

>>> import freeprob as fp
>>> p, n = fp.dims("p n")
>>> X = fp.gaussian("X", (p, n))
>>> law = fp.eigenvalue_law(X @ X.T / n, ratios={p: 1, n: 2})
"""

from . import attention
from ._errors import (
    ClusterError,
    ConvergenceError,
    DomainError,
    EliminationError,
    EquivalenceError,
    FreeProbError,
    MissingDependencyError,
    ModelFileError,
    NotSelfAdjointError,
    RegimeError,
    RegimeWarning,
    ScalingError,
    ShapeError,
)
from ._precision import fmt
from .attention import (
    attention_config,
    attention_law,
    check_attention,
    compare_patterns,
    emit_model,
    sample_attention,
)
from .expr.entrywise import Entrywise, EquivalenceReport, entrywise, equivalence_report
from .expr.kernel import Kernel, kernel_matrix
from .expr.softmax import Softmax, softmax
from .expr.equivalence import EntryCoefficients, GaussianEquivalent, gaussian_equivalent
from .expr.causal_model import CausalModel
from .expr.modelfile import Model, builtin_models, find_model, load_model
from .expr.tree import Inverse, deterministic, dims, expression_graph, gaussian, haar, identity, inv, wigner
from .law import SpectralLaw, eigenvalue_law, law_of, singular_value_law
from .profiled import has_continuous_profile, profile_moments
from .profile_law import ProfileLaw, profile_law_of
from .causal_law import CausalLaw, causal_law_of
from .discretized_law import DiscretizedLaw
from .montecarlo.check import CheckReport, check
from .montecarlo.sample import sample_spectrum
from .scalar.algebraic import (
    AlgebraicLaw,
    free_additive_convolution,
    free_multiplicative_convolution,
    subordination,
)
from .scalar.laws import (
    Arcsine,
    Atomic,
    FreePoisson,
    MarchenkoPastur,
    Semicircle,
    free_cumulants_from_moments,
    moments_from_free_cumulants,
)

__all__ = [
    "AlgebraicLaw",
    "Arcsine",
    "Atomic",
    "attention",
    "attention_config",
    "attention_law",
    "builtin_models",
    "causal_law_of",
    "CausalLaw",
    "CausalModel",
    "check",
    "check_attention",
    "CheckReport",
    "ClusterError",
    "compare_patterns",
    "ConvergenceError",
    "deterministic",
    "dims",
    "DiscretizedLaw",
    "DomainError",
    "eigenvalue_law",
    "EliminationError",
    "emit_model",
    "EntryCoefficients",
    "entrywise",
    "Entrywise",
    "EquivalenceError",
    "equivalence_report",
    "EquivalenceReport",
    "expression_graph",
    "find_model",
    "fmt",
    "free_additive_convolution",
    "free_cumulants_from_moments",
    "free_multiplicative_convolution",
    "FreePoisson",
    "FreeProbError",
    "gaussian",
    "gaussian_equivalent",
    "haar",
    "has_continuous_profile",
    "GaussianEquivalent",
    "identity",
    "inv",
    "Inverse",
    "Kernel",
    "kernel_matrix",
    "law_of",
    "load_model",
    "MarchenkoPastur",
    "MissingDependencyError",
    "Model",
    "ModelFileError",
    "moments_from_free_cumulants",
    "profile_law_of",
    "profile_moments",
    "ProfileLaw",
    "NotSelfAdjointError",
    "RegimeError",
    "RegimeWarning",
    "sample_attention",
    "sample_spectrum",
    "ScalingError",
    "Semicircle",
    "ShapeError",
    "singular_value_law",
    "softmax",
    "Softmax",
    "SpectralLaw",
    "subordination",
    "wigner",
]

__version__ = "0.1.0"
