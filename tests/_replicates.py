"""Replicate statistics of sampled spectra, shared by the Monte-Carlo trend tests."""

import numpy as np

import freeprob as fp


def replicate_statistics(law, sizes, reps, seed, qpoints, powers=(1, 2, 3)):
    """Per size: replicate means and variances of the moments ``powers`` and of ``F(q)`` at ``qpoints``.

    Returns ``(means, variances)``, arrays of shape ``(len(sizes), len(powers) + len(qpoints))``.
    """
    rng = np.random.default_rng(seed)
    means, variances = [], []
    for n, r in zip(sizes, reps):
        rows = []
        for _ in range(r):
            s = fp.sample_spectrum(law, n, rng)
            rows.append([np.mean(s ** k) for k in powers] + [np.mean(s <= q) for q in qpoints])
        rows = np.array(rows)
        means.append(rows.mean(0))
        variances.append(rows.var(0, ddof=1))
    return np.array(means), np.array(variances)


def theory_statistics(law, powers=(1, 2, 3), levels=(0.25, 0.5, 0.75)):
    """``(theory, qpoints)``: the law's moments ``powers`` and ``F`` at the quantiles ``levels`` of its
    absolutely continuous part (``qpoints``), in the order :func:`replicate_statistics` uses."""
    moments = law.moments(max(powers))
    cdf = law.cdf_function()
    qpoints = [float(cdf.ac_quantile(q)) for q in levels]
    return [float(moments[k - 1]) for k in powers] + [float(cdf(q)) for q in qpoints], qpoints
