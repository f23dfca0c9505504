"""Statistics of Monte-Carlo checks (rank 3): Student and Fisher tails, the KS distance, bulk statistics, trend fits.

Nothing here samples or knows a law; the callers hand in arrays and a CDF
table (anything callable with a ``left`` method).
"""

import math

import mpmath
import numpy as np

from .._precision import context

__all__ = ["bulk_statistics", "f_survival", "fit_trend", "ks_distance", "student_t_quantile"]


def student_t_quantile(p, df):
    """Quantile of Student's t distribution (mpmath, no scipy)."""
    df = mpmath.mpf(df)

    def cdf(t):
        x = df / (df + t * t)
        tail = mpmath.betainc(df / 2, mpmath.mpf(1) / 2, 0, x, regularized=True) / 2
        return 1 - tail if t > 0 else tail

    return float(mpmath.findroot(lambda t: cdf(t) - p, mpmath.sqrt(2) * mpmath.erfinv(2 * p - 1)))


def bulk_statistics(spectrum, qpoints, moments=3, trim=3):
    """Trimmed moments ``m_1..m_moments`` and counting fractions at ``qpoints`` of one spectrum.

    Parameters
    ----------
    spectrum : numpy.ndarray
        Sorted squared singular values (``l`` of them, zeros included).
    qpoints : sequence of float
    moments : int, optional
    trim : int, optional
        Number of largest values left out of the moments.

    Returns
    -------
    numpy.ndarray
        ``moments + len(qpoints)`` values; each moment is normalized by the
        full ``l``.

    Examples
    --------
    >>> bulk_statistics(np.array([0.0, 1.0, 2.0, 10.0]), [1.5], moments=2, trim=1)
    array([0.75, 1.25, 0.5 ])
    """
    x = np.sort(np.asarray(spectrum, float))
    n = len(x)
    kept = x[: n - trim] if trim else x
    out = [np.sum(kept ** k) / n for k in range(1, moments + 1)]
    out += [np.count_nonzero(x <= q) / n for q in qpoints]
    return np.array(out)


def f_survival(f, d1, d2):
    """``P(F > f)`` for Fisher's F with ``(d1, d2)`` degrees of freedom (mpmath, local context)."""
    if d1 <= 0 or not math.isfinite(f):
        return float("nan")
    ctx = context(20)
    x = ctx.mpf(d1 * f) / (d1 * f + d2)
    return float(1 - ctx.betainc(ctx.mpf(d1) / 2, ctx.mpf(d2) / 2, 0, x, regularized=True))


def fit_trend(sizes, reps, means, variances, rates=(0.5, 1.0)):
    """Weighted least squares of per-size means on ``1, N^-rate...``, errors from the replicates.

    Parameters
    ----------
    sizes : sequence of int
        The sizes ``N``.
    reps : sequence of int
        Replicates per size.
    means, variances : sequence of float
        Replicate mean and (ddof=1) variance of one statistic per size.
    rates : tuple of float, optional
        Exponents of the trend terms (default ``N^(-1/2)`` and ``N^(-1)``).

    Returns
    -------
    dict
        ``coef`` (intercept first), ``se`` (their standard errors), ``df``
        (pooled replicate degrees of freedom), ``lof_F`` and ``lof_p`` (lack
        of fit against the replicate variance; NaN when the fit is exact),
        ``sd_N`` (replicate standard deviation times ``N`` per size).

    Notes
    -----
    The replicate variance is pooled on the ``1/N^2`` scale of linear
    spectral statistics: ``sigma^2 = sum (r_N - 1) N^2 s_N^2 / sum (r_N - 1)``,
    so ``Var(mean at N) = sigma^2/(r_N N^2)``.

    Examples
    --------
    >>> f = fit_trend([100, 400, 1600], [4, 4, 4], [0.1 + 1 / 10, 0.1 + 1 / 20, 0.1 + 1 / 40],
    ...               [1e-4, 1e-4 / 16, 1e-4 / 256], rates=(0.5,))
    >>> print(f"{f['coef'][0]:.6f} {f['coef'][1]:.6f}")
    0.100000 1.000000
    """
    n = np.asarray(sizes, float)
    r = np.asarray(reps, float)
    y = np.asarray(means, float)
    v = np.asarray(variances, float)
    df = int(np.sum(r - 1))
    sigma2 = float(np.sum((r - 1) * n ** 2 * v) / df)
    x = np.column_stack([np.ones_like(n)] + [n ** (-p) for p in rates])
    w = r * n ** 2
    xtwx = x.T @ (w[:, None] * x)
    cov_unit = np.linalg.inv(xtwx)
    coef = cov_unit @ (x.T @ (w * y))
    se = np.sqrt(np.diag(cov_unit) * sigma2)
    resid = y - x @ coef
    lof_df = len(n) - x.shape[1]
    if lof_df > 0 and sigma2 > 0:
        lof_f = float(np.sum(w * resid ** 2) / sigma2 / lof_df)
        lof_p = f_survival(lof_f, lof_df, df)
    else:
        lof_f = lof_p = float("nan")
    return {"coef": coef, "se": se, "df": df, "lof_F": lof_f, "lof_p": lof_p, "lof_df": lof_df,
            "sd_N": np.sqrt(v) * n}


def ks_distance(sample, cdf):
    """``sup |F_n - F|`` for a law with atoms: compared at every sample value from both sides."""
    x = np.sort(sample)
    m = len(x)
    ux, first = np.unique(x, return_index=True)
    counts_le = np.searchsorted(x, ux, side="right") / m
    counts_lt = first / m
    f = cdf(ux)
    fl = cdf.left(ux)
    return float(max(np.max(np.abs(counts_le - f)), np.max(np.abs(counts_lt - fl))))
