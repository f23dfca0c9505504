"""Real softmax attention against its Gaussian-equivalent law: the multi-size check.

Multi-size check (:func:`check_attention`)
------------------------------------------
Real softmax converges to its limit more slowly than a Gaussian polynomial,
and one size is not evidence. The check samples real multi-head softmax
attention (:func:`freeprob.attention.sample_attention`) at several sizes
``N`` (``l = round(N * ratio_l)`` and so on), computes bulk statistics of each
spectrum, subtracts the theory at the same size, and fits the per-size means
of the differences by weighted least squares,

    D(N) = a + b N^(-1/2) + c N^(-1) ,

the ``N^(-1/2)`` trend of the row normalization (docs/math.md section 5) plus
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

The statistics and the trend fit are in :mod:`freeprob.montecarlo.stats`,
the figure in :mod:`freeprob.attention.plots`, the pattern comparison in
:mod:`freeprob.attention.compare`.
"""

import math
import time
from dataclasses import dataclass, field

import numpy as np
import sympy

from .._errors import DomainError
from ..montecarlo.report import cell
from ..montecarlo.sample import spawn_generators
from ..montecarlo.stats import bulk_statistics, fit_trend, student_t_quantile
from .config import DEFAULT_WIDTH, attention_config
from .model import attention_law
from .regime import check_regime
from .softmax import config_sizes, sample_config

__all__ = [
    "AttentionCheckReport",
    "check_attention",
    "multi_size_check",
    "rank_atom",
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


def _theory_statistics(cdf, exact_moments, qpoints, trim, l):
    """The limit of :func:`bulk_statistics` at sequence length ``l`` (trimmed moments need ``l``)."""
    out = []
    x_t = cdf.quantile(1 - trim / l) if trim else math.inf
    for k, m in enumerate(exact_moments, start=1):
        xs, phi = cdf.moment_table(k)
        tail = phi[-1] - np.interp(x_t, xs, phi) if trim else 0.0
        out.append(m - tail)
    out += [float(cdf(q)) for q in qpoints]
    return np.array(out)


def _float_moments(law, k):
    ms = law.moments(k)
    return [float(sympy.re(sympy.N(m, 20))) if isinstance(m, sympy.Basic) else float(m.real if hasattr(m, "real") else m)
            for m in ms]


@dataclass(frozen=True)
class AttentionCheckReport:
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
            f"{'statistic':<10}{'theory':>14}" + "".join(f"{'D(' + str(n) + ')':>12}" for n in self.sizes)
            + f"{'a = D(inf)':>13}{'se(a)':>10}{'|a|/se':>8}{'tol':>10}{'lof p':>7}{'sqrt-only a':>13}{'(se)':>10}"
            + f"{'lof p':>7}",
        ]
        for row in self.rows:
            head.append(
                f"{row['name']:<10}" + cell(row["theory"], ".6g", 14)
                + "".join(cell(d, ".3e", 12) for d in row["differences"])
                + cell(row["a"], ".3e", 13) + cell(row["se_a"], ".2e", 10) + cell(abs(row["t"]), ".2f", 8)
                + cell(row["tolerance"], ".2e", 10) + cell(row["lof_p"], ".3f", 7) + cell(row["a_sqrt_only"], ".3e", 13)
                + cell(row["se_sqrt_only"], ".2e", 10) + cell(row["lof_p_sqrt_only"], ".3f", 7)
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


def check_attention(heads=1, pattern="mha", beta=1, *, l=1, d_h=DEFAULT_WIDTH, d_v=None,
                    d_out=DEFAULT_WIDTH, sizes=(375, 750, 1500, 3000), reps=None, seed=0, trim=3, moments=3,
                    quantiles=(0.1, 0.25, 0.5, 0.75, 0.9), rates=(0.5, 1.0), level=1e-3, linear=False,
                    progress=None, causal=False, input_spectrum=None, input_position="generic"):
    """Real softmax attention at several sizes against the Gaussian-equivalent law (module docstring).

    Parameters
    ----------
    heads, pattern, beta, l, d_h, d_v, d_out
        The configuration (:func:`freeprob.attention.attention_config`).
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
    causal : bool, optional
        The causal mask: refused by :func:`~freeprob.attention.attention_config`
        (EquivalenceError) before anything is sampled; the check of the law
        without the first tokens is :func:`~freeprob.attention.check_causal`
        (docs/causal.md).
    input_spectrum, input_position : optional
        Real inputs (:func:`~freeprob.attention.attention_config`): the
        real-softmax sampler draws inputs of that token covariance in generic
        position; ``input_position="diagonal"`` is refused before anything is
        sampled (its evidence: benchmarks/real_inputs_evidence.py).

    Returns
    -------
    AttentionCheckReport

    Raises
    ------
    DomainError
        Bad sizes, replicates, trim or quantiles.
    RegimeError
        ``exp(2 beta^2)`` larger than the smallest sequence length
        (:func:`freeprob.attention.check_regime`), and for ``tied-qk``.
    EquivalenceError
        ``causal=True``.

    Notes
    -----
    With the defaults (four sizes 375..3000, 48/24/12/6 replicates) two heads
    take about 30 s on two idle cores (one sample at ``N = 3000`` about 3 s).
    """
    cfg = attention_config(heads, pattern, beta, l=l, d_h=d_h, d_v=d_v, d_out=d_out, causal=causal,
                           input_spectrum=input_spectrum, input_position=input_position)
    sizes = _check_sizes(sizes, rates)
    lengths = [config_sizes(cfg, n)["l"] for n in sizes]
    epsilon = check_regime(cfg.score_beta, min(lengths), head_dim=min(config_sizes(cfg, n)["d_h"] for n in sizes),
                           name=cfg.score_beta_name)
    law = attention_law(cfg.heads, cfg.spec, cfg.beta, l=cfg.l, d_h=cfg.d_h, d_v=cfg.d_v, d_out=cfg.d_out,
                        input_spectrum=cfg.input_spectrum, input_position=cfg.input_position)

    def sample(n, rng):
        return sample_config(cfg, n, rng, linear=linear)

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
    AttentionCheckReport
    """
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

    seq, rngs = spawn_generators(seed, sum(reps))
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
    return AttentionCheckReport(label or law.name, bool(linear), sizes, reps, seed_repr, trim, tuple(rates), level,
                       float(crit), df, float(epsilon), tuple(rows), bool(ok), time.perf_counter() - t0,
                       tuple(spectra), law, tuple(atoms))
