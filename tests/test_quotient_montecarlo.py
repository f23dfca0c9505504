"""Monte-Carlo of the full H-head model against the law of the symmetry quotient (slow).

The sampler draws every one of the 64 heads (nothing is quotiented there), so
this checks the quotient against the model itself, not against the full
Dyson system.
"""

import numpy as np
import pytest
import sympy

import freeprob as fp
from freeprob.attention import attention_config, sample_config

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("pattern", ["mha", "gqa:8"])
def test_sixty_four_heads_sampled_directly_agree_with_the_quotient(pattern):
    heads, n, reps = 64, 2048, 3
    width = sympy.Rational(1, 2 * heads)
    ratios = dict(d_h=width, d_v=width, d_out=sympy.Rational(1, 2))
    law = fp.attention_law(heads, pattern, 1, **ratios)
    assert law.reduction.structure is not None, law.reduction.symmetry_note
    cfg = attention_config(heads, pattern, 1, **ratios)
    points = np.array([0.3, 0.8, 1.5]) + 0.25j
    # the Gaussian-equivalent model itself, all 64 heads (d_h = 16 at this size)
    spectra = [sample_config(cfg, n, np.random.default_rng(seed), linear=True) for seed in range(reps)]
    samples = np.array([[np.mean(1 / (z - ev)) for z in points] for ev in spectra])
    mean = samples.mean(axis=0)
    se = np.abs(samples.std(axis=0, ddof=1)) / np.sqrt(reps)
    theory = np.array([law.cauchy(complex(z)) for z in points])
    # tolerance of the issue: 5e-3 at N = 2000; it is only meaningful if the
    # replicate standard error is well below it (measured about 9e-4)
    assert np.all(se < 2e-3), se
    assert np.all(np.abs(mean - theory) <= 5e-3), (mean, theory, se)
