"""Multi-head self-attention (rank 5): the Gaussian-equivalent models of every
head allocation and sharing pattern, their laws, the real-softmax check and
the pattern comparison.

The public names, by step:

* configuration: :func:`attention_config`, :class:`AttentionConfig`,
  :func:`head_plan`, :func:`groups_divide`, ``PATTERNS``; values that
  depend on the keys: :class:`ValueCoupling`, :func:`split_pattern`,
  ``COUPLINGS``; real inputs (docs/attention.md, "Real inputs"):
  :func:`read_input_spectrum`, ``INPUT_POSITIONS``, :func:`input_factor`,
  :func:`real_inputs`;
* regime: :func:`check_regime`, :func:`regime_parameter`,
  :class:`RegimeWarning`;
* law: :func:`softmax_coefficients`, :func:`attention_expression`,
  :func:`attention_law`, :func:`model_text`, :func:`emit_model`;
* sampling: :func:`sample_attention`, :func:`sample_config`,
  :func:`config_sizes`; under the causal mask (docs/causal.md):
  :func:`sample_causal`, :func:`causal_softmax`, :func:`cesaro_mean`, and
  without the first tokens the law :func:`causal_attention_law` (a
  :class:`~freeprob.CausalLaw`) with its check :func:`check_causal`,
  figure :func:`plot_causal` and model file :func:`emit_causal_model`;
* checks: :func:`check_attention`, :func:`multi_size_check`,
  :func:`compare_patterns` (with :func:`allocation_study`,
  :func:`width_study`), :func:`plot_check`;
* sweeps: :func:`attention_sweep` (over head counts at a fixed total
  width, or over widths), :func:`plan_sweep`, :class:`SweepResult`,
  :func:`plot_sweep`.

The functions keep their descriptive names (``attention_law`` rather than
``law``): the short names ``config``, ``check``, ``compare`` and ``sweep``
are the submodules of this package, and a function of the same name would
hide them. So :func:`freeprob.attention.sweep.sweep` is exported here as
``attention_sweep``.

>>> from freeprob import attention
>>> cfg = attention.attention_config(heads=2, pattern="mqa")
>>> cfg.heads
2
"""

from .._errors import RegimeWarning
from .causal import CAUSAL_OBJECTS, causal_softmax, cesaro_mean, sample_causal
from .causal_check import CAUSAL_SIZES, CausalCheckReport, causal_attention_law, check_causal, emit_causal_model
from .check import AttentionCheckReport, check_attention, multi_size_check, rank_atom
from .compare import ComparisonReport, allocation_study, compare_patterns, same_system, width_study
from .config import (
    COUPLINGS,
    INPUT_POSITIONS,
    PATTERNS,
    AttentionConfig,
    ValueCoupling,
    attention_config,
    groups_divide,
    head_plan,
    read_input_spectrum,
    split_pattern,
)
from .equivalence import GaussianEquivalent, command_line_report, gaussian_equivalent, softmax_coefficients
from .model import attention_expression, attention_law, emit_model, head_groups, input_factor, model_text
from .plots import plot_causal, plot_check, plot_comparison, plot_sweep
from .regime import BETA_WARN, REGIME_REFUSE, REGIME_WARN, check_regime, regime_parameter
from .softmax import (
    attention_sizes,
    config_sizes,
    real_inputs,
    sample_attention,
    sample_config,
    softmax_gaussian_equivalent,
)
from .sweep import (
    DEFAULT_HEADS,
    MAX_HEADS,
    MAX_SWEEP_MOMENTS,
    SweepPlan,
    SweepResult,
    SweepRow,
    head_counts,
    plan_sweep,
)
from .sweep import sweep as attention_sweep

__all__ = [
    "BETA_WARN",
    "CAUSAL_OBJECTS",
    "CAUSAL_SIZES",
    "COUPLINGS",
    "DEFAULT_HEADS",
    "INPUT_POSITIONS",
    "MAX_HEADS",
    "MAX_SWEEP_MOMENTS",
    "PATTERNS",
    "REGIME_REFUSE",
    "REGIME_WARN",
    "AttentionConfig",
    "AttentionCheckReport",
    "CausalCheckReport",
    "ComparisonReport",
    "GaussianEquivalent",
    "RegimeWarning",
    "SweepPlan",
    "SweepResult",
    "SweepRow",
    "ValueCoupling",
    "allocation_study",
    "attention_config",
    "attention_expression",
    "attention_law",
    "attention_sizes",
    "attention_sweep",
    "causal_attention_law",
    "causal_softmax",
    "cesaro_mean",
    "check_attention",
    "check_causal",
    "check_regime",
    "command_line_report",
    "compare_patterns",
    "config_sizes",
    "emit_causal_model",
    "emit_model",
    "head_groups",
    "gaussian_equivalent",
    "groups_divide",
    "head_counts",
    "head_plan",
    "input_factor",
    "model_text",
    "multi_size_check",
    "plan_sweep",
    "plot_causal",
    "plot_check",
    "plot_comparison",
    "plot_sweep",
    "rank_atom",
    "read_input_spectrum",
    "real_inputs",
    "regime_parameter",
    "same_system",
    "sample_attention",
    "sample_causal",
    "sample_config",
    "softmax_coefficients",
    "softmax_gaussian_equivalent",
    "split_pattern",
    "width_study",
]
