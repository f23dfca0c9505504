"""Real softmax attention against its Gaussian-equivalent law: the multi-size check.

Multi-size check (:func:`check_attention`)
------------------------------------------
Real softmax converges to its limit more slowly than a Gaussian polynomial,
and one size is not evidence. The check samples real multi-head softmax
attention (:func:`freeprob._softmax.sample_attention`) at several sizes
``N`` (``l = round(N * ratio_l)`` and so on), computes bulk statistics of each
spectrum, subtracts the theory at the same size, and fits the per-size means
of the differences by weighted least squares,

    D(N) = a + b N^(-1/2) + c N^(-1) ,

the ``N^(-1/2)`` trend of the row normalization (MATH.md section 5) plus
the ``1/N`` bias that every finite-size linear statistic carries. (Measured
at ``beta = 1``, the bias of the bulk statistics halves with each doubling of
``N``: fitting ``N^(-1/2)`` alone to such data over-extrapolates by several
standard errors, so both terms are kept; the ``N^(-1/2)``-only fit is
reported beside it.) The intercept ``a`` is the extrapolated discrepancy;
its standard error comes from the replicates: per size, the replicate
variance, pooled over sizes on the ``1/N^2`` scale of linear statistics
(the report prints ``sd * N`` per size to show that scale holds). The
verdict is ``|a| <= t * se(a)`` for every statistic, ``t`` the Student
quantile with the pooled degrees of freedom at family-wise level ``level``
(Bonferroni); the tolerance ``t * se(a)`` is printed.

Statistics, per spectrum of ``l`` squared singular values (structural zeros
included):

* trimmed moments ``m_k = (1/l) sum x_i^k`` over all but the ``trim`` largest
  values (default 3: the few top outliers are excluded). The theory is
  trimmed alike: ``int_0^{x_t} x^k dF`` with ``F(x_t) = 1 - trim/l``, the
  moments of :meth:`SpectralLaw.moments` (from the series of the Dyson
  system at infinity; verified to 15 digits, since ``exp(beta^2)`` makes
  them transcendental) minus the tail integral from the distribution table,
  so the trimming introduces no bias beyond ``O(N^(-5/3))``;
* counting statistics ``#{x_i <= q}/l`` at quantiles ``q`` of the absolutely
  continuous part of the law, against ``F(q)``.

The pattern comparison is in :mod:`freeprob._attention_compare`.
"""

import math
import time
from dataclasses import dataclass, field

import numpy as np
import sympy

from .._errors import DomainError

__all__ = [
    "rank_atom",
    "bulk_statistics",
    "fit_trend",
    "CheckReport",
    "check_attention",
    "multi_size_check",
    "plot_check",
]


def rank_atom(cfg):
    """The atom at 0 of an attention law, ``1 - r/l`` with the generic rank ``r = min(l, d_out, H d_v)``.

    ``Y = [M_1 V_1, ..., M_H V_H] [W_1; ...; W_H]`` has generic rank
    ``min(l, H d_v, d_out)`` whatever is shared (a shared ``V`` still gives
    ``H`` different blocks ``M_h V``); for ``tied-kv`` ``d_v = d_h``. The
    mass is not trusted blindly: the law's ``cdf_function`` fails unless it and the
    integrated density add up to one.

    Returns
    -------
    list of (float, float)
    """
    r = min(cfg.l, cfg.d_out, cfg.heads * cfg.d_v)
    mass = 1 - r / cfg.l
    return [(0.0, float(mass))] if mass > 0 else []


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


def _moment_table(cdf, k):
    """``(x, int_0^x t^k dF)`` on the table's cell boundaries (midpoint rule), per interval, concatenated."""
    xs, vals = [], []
    acc = 0.0
    for xb, cum in cdf._pieces:
        mid = (xb[1:] + xb[:-1]) / 2
        inc = np.concatenate([[0.0], np.cumsum(mid ** k * np.diff(cum))])
        xs.append(xb)
        vals.append(acc + inc)
        acc += inc[-1]
    return np.concatenate(xs), np.concatenate(vals)


def _theory_statistics(cdf, exact_moments, qpoints, trim, l):
    """The limit of :func:`bulk_statistics` at sequence length ``l`` (trimmed moments need ``l``)."""
    out = []
    x_t = cdf.quantile(1 - trim / l) if trim else math.inf
    for k, m in enumerate(exact_moments, start=1):
        xs, phi = _moment_table(cdf, k)
        tail = phi[-1] - np.interp(x_t, xs, phi) if trim else 0.0
        out.append(m - tail)
    out += [float(cdf(q)) for q in qpoints]
    return np.array(out)


def _f_survival(f, d1, d2):
    """``P(F > f)`` for Fisher's F with ``(d1, d2)`` degrees of freedom (mpmath, local context)."""
    from .._precision import context

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
        lof_p = _f_survival(lof_f, lof_df, df)
    else:
        lof_f = lof_p = float("nan")
    return {"coef": coef, "se": se, "df": df, "lof_F": lof_f, "lof_p": lof_p, "lof_df": lof_df,
            "sd_N": np.sqrt(v) * n}


def _spawn(seed, count):
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return seq, [np.random.default_rng(s) for s in seq.spawn(count)]


def _float_moments(law, k):
    ms = law.moments(k)
    return [float(sympy.re(sympy.N(m, 20))) if isinstance(m, sympy.Basic) else float(m.real if hasattr(m, "real") else m)
            for m in ms]


@dataclass(frozen=True)
class CheckReport:
    """Result of :func:`check_attention`; ``passed`` is the verdict, ``text()`` the report."""

    config: str
    linear: bool
    sizes: tuple
    reps: tuple
    seed: object
    trim: int
    rates: tuple
    level: float
    critical: float
    df: int
    epsilon: float
    rows: tuple  # dicts, see check_attention
    passed: bool
    seconds: float
    spectra: tuple = field(default=(), repr=False)  # one spectrum per size
    law: object = field(default=None, repr=False, compare=False)
    atoms: tuple = field(default=(), repr=False)

    def as_dict(self):
        """JSON-ready dictionary."""
        return {
            "config": self.config, "sampler": "linear surrogate" if self.linear else "real softmax",
            "sizes": list(self.sizes), "reps": list(self.reps), "seed": str(self.seed), "trim": self.trim,
            "rates": list(self.rates), "level": self.level, "critical_t": self.critical, "df": self.df,
            "epsilon_at_smallest_size": self.epsilon, "seconds": self.seconds,
            "statistics": [{k: (list(v) if isinstance(v, (tuple, list, np.ndarray)) else v) for k, v in row.items()}
                           for row in self.rows],
            "verdict": "pass" if self.passed else "fail",
        }

    def text(self):
        """The report as printed by ``freeprob attention check``."""
        terms = " + ".join(["a"] + [f"b{i + 1} N^-{p:g}" for i, p in enumerate(self.rates)])
        head = [
            f"Multi-size check of {'the linear surrogate' if self.linear else 'real softmax attention'} against "
            f"the Gaussian-equivalent law: {self.config}",
            f"sizes N = {', '.join(map(str, self.sizes))} with {', '.join(map(str, self.reps))} replicates "
            f"({self.seconds:.1f} s); exp(2 beta^2)/l = {self.epsilon:.3g} at the smallest size",
            f"moments exclude the {self.trim} largest values of each spectrum (theory truncated at the same "
            f"quantile); counting statistics use all values",
            f"fit of the mean difference (sample - theory at that size): D(N) = {terms}; the extrapolated "
            f"discrepancy is a",
            "",
            f"{'statistic':<10}{'theory':>12}" + "".join(f"{'D(' + str(n) + ')':>12}" for n in self.sizes)
            + f"{'a = D(inf)':>13}{'se(a)':>10}{'|a|/se':>8}{'tol':>10}{'lof p':>7}{'sqrt-only a':>13}{'(se)':>10}"
            + f"{'lof p':>7}",
        ]
        for row in self.rows:
            head.append(
                f"{row['name']:<10}{row['theory']:>12.6g}" + "".join(f"{d:>12.3e}" for d in row["differences"])
                + f"{row['a']:>13.3e}{row['se_a']:>10.2e}{abs(row['t']):>8.2f}{row['tolerance']:>10.2e}"
                + f"{row['lof_p']:>7.3f}{row['a_sqrt_only']:>13.3e}{row['se_sqrt_only']:>10.2e}"
                + f"{row['lof_p_sqrt_only']:>7.3f}"
                + ("" if row["passed"] else "  <-- FAIL")
            )
        head.append("sd*N per size (replicate scale; constant if fluctuations are O(1/N)): "
                    + "; ".join(f"{r['name']}: " + ", ".join(f"{s:.3g}" for s in r["sd_N"]) for r in self.rows[:1]
                                + self.rows[-1:]))
        head.append(
            f"verdict: {'PASS' if self.passed else 'FAIL'}: every |a| <= tol = {self.critical:.2f} se(a) "
            f"(Student t, {self.df} pooled replicate degrees of freedom, family-wise level {self.level:g} over "
            f"{len(self.rows)} statistics, Bonferroni). 'lof p': lack-of-fit p-value of a fit against the replicate "
            f"variance (nan when the fit has no spare size); 'sqrt-only': the fit a + b N^-1/2 alone, for "
            f"comparison (it over-extrapolates when the bias decays faster than N^-1/2)."
        )
        return "\n".join(head)


def check_attention(heads=1, pattern="mha", beta=1, *, l=1, d_h=sympy.Rational(1, 2), d_v=None,
                    d_out=sympy.Rational(1, 2), sizes=(375, 750, 1500, 3000), reps=None, seed=0, trim=3, moments=3,
                    quantiles=(0.1, 0.25, 0.5, 0.75, 0.9), rates=(0.5, 1.0), level=1e-3, linear=False,
                    progress=None):
    """Real softmax attention at several sizes against the Gaussian-equivalent law (module docstring).

    Parameters
    ----------
    heads, pattern, beta, l, d_h, d_v, d_out
        The configuration (:func:`freeprob._attention.attention_config`).
    sizes : sequence of int, optional
        Scales ``N`` (``l = round(N * ratio_l)``), at least ``1 + len(rates)``
        (and 3) distinct values, each ``>= 20``.
    reps : sequence of int, optional
        Replicates per size (each ``>= 2``); default
        ``max(4, round(6 N_max / N))``: equal eigenvalue counts per size,
        more replicates where they are cheap.
    seed : int, SeedSequence or None, optional
        Seeds one independent stream per replicate (``SeedSequence.spawn``).
    trim : int, optional
        Largest values left out of the moments (default 3).
    moments : int, optional
        Number of trimmed moments (default 3).
    quantiles : sequence of float, optional
        Levels of the absolutely continuous part at which counts are compared.
    rates : tuple of float, optional
        Trend exponents (default ``(0.5, 1.0)``).
    level : float, optional
        Family-wise level of the verdict.
    linear : bool, optional
        Sample the Gaussian-equivalent surrogate instead (a control: it must pass).
    progress : callable, optional
        Called with a line of text after each size.

    Returns
    -------
    CheckReport

    Raises
    ------
    DomainError
        Bad sizes, replicates, trim or quantiles.
    RegimeError
        ``exp(2 beta^2)`` larger than the smallest sequence length
        (:func:`freeprob._attention.check_regime`), and for ``tied-qk``.

    Notes
    -----
    With the defaults (four sizes 375..3000, 48/24/12/6 replicates) two heads
    take about 30 s on two idle cores (one sample at ``N = 3000`` about 3 s).
    """
    from .model import attention_config, attention_law, check_regime

    cfg = attention_config(heads, pattern, beta, l=l, d_h=d_h, d_v=d_v, d_out=d_out)
    sizes = _check_sizes(sizes, rates)
    lengths = [cfg.sizes(n)["l"] for n in sizes]
    epsilon = check_regime(cfg.beta, min(lengths), head_dim=min(cfg.sizes(n)["d_h"] for n in sizes))
    law = attention_law(cfg.heads, cfg.pattern, cfg.beta, l=cfg.l, d_h=cfg.d_h, d_v=cfg.d_v, d_out=cfg.d_out)

    def sample(n, rng):
        return cfg.sample(n, rng, linear=linear)

    return multi_size_check(sample, law, rank_atom(cfg), sizes, lengths=lengths, reps=reps, seed=seed, trim=trim,
                            moments=moments, quantiles=quantiles, rates=rates, level=level, progress=progress,
                            label=cfg.label(), linear=linear, epsilon=epsilon)


def _check_sizes(sizes, rates):
    sizes = tuple(int(n) for n in sizes)
    if len(set(sizes)) != len(sizes) or min(sizes) < 20:
        raise DomainError(f"sizes must be distinct integers >= 20, got {sizes}")
    if len(sizes) < max(3, 1 + len(rates)):
        raise DomainError(f"the fit a + {len(rates)} trend term(s) needs at least {max(3, 1 + len(rates))} sizes, "
                          f"got {len(sizes)}")
    return sizes


def multi_size_check(sample, law, atoms, sizes, *, lengths=None, reps=None, seed=0, trim=3, moments=3,
                     quantiles=(0.1, 0.25, 0.5, 0.75, 0.9), rates=(0.5, 1.0), level=1e-3, progress=None,
                     label=None, linear=False, epsilon=float("nan")):
    """The multi-size extrapolation for any sampler and law (what :func:`check_attention` runs).

    Parameters
    ----------
    sample : callable
        ``sample(n, rng)`` returns the sorted spectrum (length ``l``) at scale ``n``.
    law : SpectralLaw
        The theory (squared singular values).
    atoms : list of (float, float)
        Its atoms, checked by the mass balance of ``law.cdf_function``.
    sizes : sequence of int
    lengths : sequence of int, optional
        Spectrum length at each size (default: the sizes).
    reps, seed, trim, moments, quantiles, rates, level, progress
        As :func:`check_attention`.
    label : str, optional
    linear : bool, optional
        Only recorded in the report.
    epsilon : float, optional
        Only recorded in the report.

    Returns
    -------
    CheckReport
    """
    from ..montecarlo.check import student_t_quantile

    t0 = time.perf_counter()
    sizes = _check_sizes(sizes, rates)
    lengths = list(sizes) if lengths is None else [int(x) for x in lengths]
    if reps is None:
        reps = tuple(max(4, round(6 * max(sizes) / n)) for n in sizes)
    reps = tuple(int(r) for r in reps)
    if len(reps) != len(sizes) or min(reps) < 2:
        raise DomainError(f"reps must give at least 2 replicates for each of the {len(sizes)} sizes, got {reps}")
    if isinstance(trim, bool) or not isinstance(trim, int) or trim < 0 or trim >= min(lengths):
        raise DomainError(f"trim must be an integer in [0, {min(lengths)}), got {trim!r}")
    if isinstance(moments, bool) or not isinstance(moments, int) or moments < 0:
        raise DomainError(f"moments must be a non-negative integer, got {moments!r}")
    if any(not 0 < p < 1 for p in quantiles) or moments + len(quantiles) == 0:
        raise DomainError(f"quantiles must lie in (0, 1) and some statistic must be asked for, got {quantiles}")
    cdf = law.cdf_function(atoms=atoms)
    exact_m = _float_moments(law, moments) if moments else []
    qpoints = [float(cdf.ac_quantile(p)) for p in quantiles]
    names = [f"m{k}" for k in range(1, moments + 1)] + [f"F(q{p:g})" for p in quantiles]
    limit = _theory_statistics(cdf, exact_m, qpoints, 0, 10 ** 9)

    seq, rngs = _spawn(seed, sum(reps))
    rng_iter = iter(rngs)
    means, variances, spectra = [], [], []
    for n, r, length in zip(sizes, reps, lengths):
        theory = _theory_statistics(cdf, exact_m, qpoints, trim, length)
        stats = []
        for i in range(r):
            spec = sample(n, next(rng_iter))
            if i == 0:
                spectra.append(spec)
            stats.append(bulk_statistics(spec, qpoints, moments, trim) - theory)
        stats = np.array(stats)
        means.append(stats.mean(0))
        variances.append(stats.var(0, ddof=1))
        if progress is not None:
            progress(f"N = {n}: {r} samples done ({time.perf_counter() - t0:.1f} s)")
    means = np.array(means)
    variances = np.array(variances)
    rows = []
    ok = True
    df = int(sum(r - 1 for r in reps))
    crit = student_t_quantile(1 - level / (2 * len(names)), df)
    for j, name in enumerate(names):
        fit = fit_trend(sizes, reps, means[:, j], variances[:, j], rates)
        fit1 = fit_trend(sizes, reps, means[:, j], variances[:, j], (0.5,))
        a, se = float(fit["coef"][0]), float(fit["se"][0])
        # the theory's own error (double-precision CDF table, 15-digit moments) is far below any se
        floor = 1e-7 * max(1.0, abs(limit[j]))
        t = a / max(se, floor)
        passed = bool(abs(t) <= crit)
        ok &= passed
        rows.append({
            "name": name, "theory": float(limit[j]), "differences": tuple(float(x) for x in means[:, j]),
            "a": a, "se_a": se, "t": float(t), "tolerance": float(crit * max(se, floor)),
            "trend": tuple(float(c) for c in fit["coef"][1:]), "trend_se": tuple(float(c) for c in fit["se"][1:]),
            "lof_p": fit["lof_p"], "a_sqrt_only": float(fit1["coef"][0]), "se_sqrt_only": float(fit1["se"][0]),
            "lof_p_sqrt_only": fit1["lof_p"], "sd_N": tuple(float(s) for s in fit["sd_N"]), "passed": passed,
        })
    seed_repr = seed if isinstance(seed, int) else seq.entropy
    return CheckReport(label or law.name, bool(linear), sizes, reps, seed_repr, trim, tuple(rates), level,
                       float(crit), df, float(epsilon), tuple(rows), bool(ok), time.perf_counter() - t0,
                       tuple(spectra), law, tuple(atoms))


def _visible(d):
    """Density values for plotting: the solver's ~1e-12 floor outside the support is not drawn."""
    d = np.array(d, float)
    d[~(d > 1e-9)] = np.nan
    return d


def _cap(ax, xs, curves):
    """A linear y-limit that shows the bulk (the hard edge at 0 is unbounded)."""
    top = 0.0
    for d in curves:
        sel = (xs > xs[-1] / 15) & np.isfinite(d)
        if sel.any():
            top = max(top, float(np.max(d[sel])))
    if top > 0:
        ax.set_ylim(0, 1.6 * top)


def _save(fig, title, path):
    """Title, lay out, write and close a figure; returns ``path``."""
    import matplotlib.pyplot as plt

    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_check(report, path):
    """Two panels: one spectrum per size against the density; ``D(N)`` against ``N^-1/2`` with the fits.

    Parameters
    ----------
    report : CheckReport
    path : str or Path
        PNG file to write.

    Returns
    -------
    path
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    law = report.law
    cdf = law.cdf_function(atoms=report.atoms)
    hi = max(b for _, b in cdf.intervals)
    xs = np.linspace(hi / 400, hi, 400)
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(12, 4.2))
    dens = _visible(law.density_fast(xs))
    ax0.plot(xs, dens, color="black", lw=1.6, label="Gaussian-equivalent law")
    for n, spec in zip(report.sizes, report.spectra):
        pos = spec[spec > 0]
        bins = 60
        ax0.hist(pos, bins=bins, range=(0, hi), weights=np.full(pos.shape, bins / (len(spec) * hi)),
                 histtype="step", lw=0.9, label=f"{'linear' if report.linear else 'real softmax'}, N = {n}")
    _cap(ax0, xs, [dens])
    ax0.set_xlabel("squared singular value x")
    ax0.set_ylabel("density (absolutely continuous part)")
    ax0.legend(fontsize=7)
    xn = np.array(report.sizes, float) ** -0.5
    xf = np.linspace(0, xn.max() * 1.05, 100)
    for row in report.rows:
        if not row["name"].startswith("F("):
            continue
        line = ax1.plot(xn, row["differences"], "o", ms=4)[0]
        coef = [row["a"]] + list(row["trend"])
        fit = coef[0] + sum(c * xf ** (2 * p) for c, p in zip(coef[1:], report.rates))
        ax1.plot(xf, fit, color=line.get_color(), lw=1, label=f"{row['name']}: a = {row['a']:.1e} +- {row['se_a']:.0e}")
        ax1.errorbar([0], [row["a"]], yerr=[row["tolerance"]], color=line.get_color(), capsize=3)
    ax1.axhline(0, color="gray", lw=0.8)
    ax1.set_xlabel("N^(-1/2)")
    ax1.set_ylabel("sample - theory (counting statistics)")
    ax1.legend(fontsize=7)
    return _save(fig, report.config, path)
