"""Multi-head self-attention (rank 5): the Gaussian-equivalent models of every
head allocation and sharing pattern, their laws, the real-softmax check and
the pattern comparison.

>>> from freeprob import attention
>>> cfg = attention.attention_config(heads=2, pattern="mqa")
>>> cfg.heads
2
"""

from .check import check_attention
from .compare import compare_patterns
from .equivalence import GaussianEquivalent, gaussian_equivalent
from .model import attention_config, attention_law, emit_model
from .softmax import sample_attention

__all__ = [
    "GaussianEquivalent",
    "attention_config",
    "attention_law",
    "check_attention",
    "compare_patterns",
    "emit_model",
    "gaussian_equivalent",
    "sample_attention",
]
