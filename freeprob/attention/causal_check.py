"""Causal attention without its first tokens: the law and the multi-size check against real causal softmax.

Under the causal mask the centred output ``sqrt(l)(A - M) V W`` (``M`` the
Cesaro mean) has a Gaussian equivalent whose rows of small ``r = i/l`` make
every moment infinite (docs/causal.md). Leaving out the first ``skip * l``
tokens (rows) gives a law with finite moments, :class:`~freeprob.CausalLaw`,
made by :func:`causal_attention_law`.

:func:`check_causal` samples real causal softmax
(:func:`~freeprob.attention.sample_causal`, the tail of ``l - round(skip l)``
rows) at several lengths ``l`` and compares linear spectral statistics with
the law:

* the Stieltjes statistics ``(1/rows) sum 1/(z - x_i)`` (real and imaginary
  parts) at points ``z = c mu (1 + i/2)``, ``mu`` the exact mean
  ``(d_out/l)(exp(beta^2) - 1) log(1/skip)/(1 - skip)`` and
  ``c = 1/4, 1/2, 1, 2``, against the extrapolated Cauchy transform (its error
  estimate, about ``1e-5``, is far below the Monte-Carlo errors).

The mean of the spectrum is reported beside them but is not part of the
verdict: it is an unbounded statistic, and the replicate standard deviation
of real causal softmax's mean does not fall like ``1/l`` (``l sd`` was 26,
45, 57 at ``l = 250, 1000, 4000``), which the pooled variance of the fit
assumes; its ``|a|/se`` over 40 seeds had a standard deviation of 1.45. The
bounded Stieltjes statistics have it between 0.84 and 1.26.

The per-size mean differences are fitted by ``a + b l^(-1/2) + c l^(-1)``
(:func:`~freeprob.montecarlo.stats.fit_trend`, as the non-causal check does),
and the verdict is ``|a| <= t se(a)`` for every statistic, ``t`` the Student
quantile at family-wise level ``level`` (Bonferroni). Stieltjes statistics at
points off the axis need no distribution table, whose top edge converges
slowly in the number of cells (:class:`~freeprob.CausalLaw`).
"""

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._errors import DomainError, RegimeError
from ..causal_law import DEFAULT_SKIP, CausalLaw
from ..expr.causal_model import causal_model_text
from ..expr.modelfile import load_model
from ..montecarlo.report import cell
from ..montecarlo.sample import spawn_generators
from ..montecarlo.stats import fit_trend, student_t_quantile
from .causal import sample_bytes, sample_causal
from .config import DEFAULT_WIDTH, positive_int
from .regime import REGIME_REFUSE

__all__ = ["CAUSAL_SIZES", "CausalCheckReport", "causal_attention_law", "check_causal", "emit_causal_model"]

#: Default lengths ``l`` of :func:`check_causal`.
CAUSAL_SIZES = (250, 500, 1000, 2000)
#: The Stieltjes points, as multiples ``c`` of ``mu (1 + i/2)``.
POINT_MULTIPLES = (0.25, 0.5, 1.0, 2.0)
#: Largest length of a sample (one causal softmax holds several ``l x l`` arrays: 0.5 GiB each at 8000).
MAX_LENGTH = 8000
#: Largest memory of one sample of the check (its arrays at the largest length, :func:`sample_bytes`).
MAX_SAMPLE_BYTES = 4 * 2 ** 30


def causal_attention_law(beta=1, skip=DEFAULT_SKIP, *, d_h=DEFAULT_WIDTH, d_v=DEFAULT_WIDTH, d_out=DEFAULT_WIDTH,
                         heads=1):
    """The law of causal attention's centred output without its first ``skip * l`` tokens (:class:`~freeprob.CausalLaw`).

    The squared singular values of the Gaussian equivalent of
    ``sum_h sqrt(l)(A_h - M) V_h W_h`` over its last ``(1 - skip) l`` rows,
    ``A_h`` the causal softmax of ``beta Q_h K_h^T / sqrt(d_h)``, ``M`` its
    mean (the Cesaro matrix), ``heads`` independent heads (the ``mha``
    pattern) with ``W_h`` of variance ``1/(heads d_v)``; widths are ratios
    to ``l`` (docs/causal.md, section 6).

    Examples
    --------
    >>> law = causal_attention_law(1, "1/10")
    >>> law.mean(), law.atom_mass()
    (5*(-1 + E)*log(10)/9, 4/9)
    """
    return CausalLaw(beta, skip, d_h, d_v, d_out, heads=heads)


def emit_causal_model(path, law, *, name=None, description=None):
    """Write a :class:`~freeprob.CausalLaw` as a model file (``model = "causal-attention"``) and read it back.

    Parameters
    ----------
    path : str or Path
        Destination ``.toml`` file (overwritten).
    law : CausalLaw
    name, description : str, optional

    Returns
    -------
    CausalModel
        The file as loaded by :func:`freeprob.load_model` (``freeprob.causal_law_of`` gives ``law`` back).
    """
    if not isinstance(law, CausalLaw):
        raise DomainError(f"emit_causal_model writes a CausalLaw (causal_attention_law(...)), got {law!r}")
    path = Path(path)
    if path.suffix != ".toml":
        raise DomainError(f"a model file must end in .toml, got {path}")
    r = law.ratios
    path.write_text(causal_model_text(law.beta, law.skip, r["d_h"], r["d_v"], r["d_out"], law.heads, name,
                                      description))
    return load_model(path)


@dataclass(frozen=True)
class CausalCheckReport:
    """Result of :func:`check_causal`; ``passed`` is the verdict, ``text()`` the report."""

    law: str
    sampler: str
    sizes: tuple
    reps: tuple
    seed: object
    rates: tuple
    level: float
    critical: float
    df: int
    epsilon: float
    rows: tuple
    passed: bool
    seconds: float
    spectra: tuple = field(default=(), repr=False)

    def as_dict(self):
        """JSON-ready dictionary."""
        return {"law": self.law, "sampler": self.sampler, "sizes": list(self.sizes), "reps": list(self.reps),
                "seed": str(self.seed), "rates": list(self.rates), "level": self.level,
                "critical_t": self.critical, "df": self.df, "epsilon_at_smallest_size": self.epsilon,
                "seconds": self.seconds,
                "statistics": [{k: (list(v) if isinstance(v, (tuple, list, np.ndarray)) else v)
                                for k, v in row.items()} for row in self.rows],
                "verdict": "pass" if self.passed else "fail"}

    def text(self):
        """The report as printed by ``freeprob attention check --causal``."""
        terms = " + ".join(["a"] + [f"b{i + 1} l^-{p:g}" for i, p in enumerate(self.rates)])
        lines = [
            f"Multi-size check of {self.sampler} against {self.law}",
            f"lengths l = {', '.join(map(str, self.sizes))} with {', '.join(map(str, self.reps))} replicates "
            f"({self.seconds:.1f} s); exp(2 beta^2)/(skip l) = {self.epsilon:.3g} at the smallest length "
            f"(the first row kept)",
            f"fit of the mean difference (sample - theory): D(l) = {terms}; the extrapolated discrepancy is a",
            "",
            f"{'statistic':<22}{'theory':>13}" + "".join(f"{'D(' + str(n) + ')':>12}" for n in self.sizes)
            + f"{'a = D(inf)':>13}{'se(a)':>10}{'|a|/se':>8}{'tol':>10}",
        ]
        for row in self.rows:
            note = "" if row["passed"] else "  <-- FAIL"
            if not row["judged"]:
                note = "  (reported, not judged)"
            lines.append(f"{row['name']:<22}" + cell(row["theory"], ".6g", 13)
                         + "".join(cell(d, ".3e", 12) for d in row["differences"])
                         + cell(row["a"], ".3e", 13) + cell(row["se_a"], ".2e", 10) + cell(abs(row["t"]), ".2f", 8)
                         + cell(row["tolerance"], ".2e", 10) + note)
        judged = sum(r["judged"] for r in self.rows)
        lines.append(f"verdict: {'PASS' if self.passed else 'FAIL'}: every judged |a| <= tol = {self.critical:.2f} "
                     f"se(a) (Student t, {self.df} pooled replicate degrees of freedom, family-wise level "
                     f"{self.level:g} over the {judged} Stieltjes statistics, Bonferroni); the mean is an unbounded "
                     f"statistic whose fluctuations do not fall like 1/l, reported only")
        return "\n".join(lines)


def _integers(values, what):
    try:
        values = tuple(values)
    except TypeError:
        raise DomainError(f"{what} must be a sequence of integers, got {values!r}") from None
    return tuple(positive_int(what, v) for v in values)


def _sizes(sizes, rates):
    sizes = _integers(sizes, "sizes")
    if len(set(sizes)) != len(sizes) or min(sizes) < 40 or max(sizes) > MAX_LENGTH:
        raise DomainError(f"sizes must be distinct integers between 40 and {MAX_LENGTH}, got {sizes}")
    if len(sizes) < max(3, 1 + len(rates)):
        raise DomainError(f"the fit a + {len(rates)} trend term(s) needs at least {max(3, 1 + len(rates))} sizes, "
                          f"got {len(sizes)}")
    return tuple(sorted(sizes))


def _width(ratio, l):
    return max(1, round(float(ratio) * l))


def _statistics(spectrum, points):
    g = np.mean(1.0 / (points[:, None] - spectrum[None, :]), axis=1)
    return np.concatenate([[spectrum.mean()], g.real, g.imag])


def check_causal(beta=1, skip=DEFAULT_SKIP, *, d_h=DEFAULT_WIDTH, d_v=DEFAULT_WIDTH, d_out=DEFAULT_WIDTH,
                 heads=1, sizes=CAUSAL_SIZES, reps=None, seed=0, rates=(0.5, 1.0), level=1e-3, linear=False,
                 progress=None):
    """Real causal softmax, first ``skip * l`` tokens left out, at several lengths against :class:`~freeprob.CausalLaw`.

    Parameters
    ----------
    beta, skip, d_h, d_v, d_out, heads
        As :func:`causal_attention_law`.
    sizes : sequence of int, optional
        Lengths ``l`` (at least three, each ``>= 40``); default 250, 500, 1000, 2000.
    reps : sequence of int, optional
        Replicates per length (each ``>= 2``); default ``max(4, round(4 l_max / l))``.
    seed : int, SeedSequence or None, optional
        Seeds one independent stream per replicate.
    rates : tuple of float, optional
        Trend exponents (default ``(0.5, 1.0)``).
    level : float, optional
        Family-wise level of the verdict.
    linear : bool, optional
        Sample the Gaussian-equivalent surrogate instead (a control of the law's derivation, without the
        equivalence).
    progress : callable, optional
        Called with a line of text after each length.

    Returns
    -------
    CausalCheckReport

    Raises
    ------
    DomainError
        Bad sizes or replicates (and bad law parameters).
    RegimeError
        When the first row kept, at the smallest length, is shorter than ``exp(2 beta^2)`` (no row of the
        real layer is then in the Gaussian regime; docs/causal.md, section 3).
    """
    t0 = time.perf_counter()
    law = causal_attention_law(beta, skip, d_h=d_h, d_v=d_v, d_out=d_out, heads=heads)
    try:
        rates = tuple(float(r) for r in rates)
    except (TypeError, ValueError):
        raise DomainError(f"rates must be positive numbers, got {rates!r}") from None
    if not rates or len(set(rates)) != len(rates) or not all(0 < r < 10 for r in rates):
        raise DomainError(f"rates must be distinct positive exponents (such as 0.5, 1), got {rates!r}")
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise DomainError(f"level must be a number strictly between 0 and 1, got {level!r}")
    sizes = _sizes(sizes, rates)
    if reps is None:
        reps = tuple(max(4, round(4 * max(sizes) / n)) for n in sizes)
    reps = _integers(reps, "reps")
    if len(reps) != len(sizes) or min(reps) < 2:
        raise DomainError(f"reps must give at least 2 replicates for each of the {len(sizes)} sizes, got {reps}")
    if linear is not True and linear is not False:
        raise DomainError(f"linear must be True or False, got {linear!r}")
    l_max = max(sizes)
    widths = [_width(law.ratios[w], l_max) for w in ("d_h", "d_v", "d_out")]
    need = sample_bytes(l_max, *widths)
    if need > MAX_SAMPLE_BYTES:
        raise DomainError(f"one sample at l = {l_max} with widths d_h, d_v, d_out = {', '.join(map(str, widths))} "
                          f"holds about {need / 2 ** 30:.3g} GiB, more than the {MAX_SAMPLE_BYTES / 2 ** 30:g} GiB "
                          f"the check allows: give smaller lengths or widths")
    s = float(law.skip)
    first = min(round(s * n) for n in sizes)
    if first < 1:
        raise DomainError(f"skip = {law.skip} leaves out no token at l = {min(sizes)}: give larger sizes")
    epsilon = math.exp(2 * float(law.beta) ** 2) / first
    if epsilon > REGIME_REFUSE:
        raise RegimeError(f"at l = {min(sizes)} the first row kept attends to {first} tokens, fewer than "
                          f"exp(2 beta^2) = {math.exp(2 * float(law.beta) ** 2):.4g}: no row of real causal softmax "
                          f"is in the Gaussian regime there (docs/causal.md, section 3); give lengths with "
                          f"skip * l well above exp(2 beta^2), or a smaller beta")
    mu = float(law.mean())
    points = np.array([c * mu * (1 + 0.5j) for c in POINT_MULTIPLES])
    g = np.array([law.cauchy(z).value for z in points])    # each within its tolerance, or ConvergenceError
    theory = np.concatenate([[mu], g.real, g.imag])
    judged = np.arange(len(theory)) > 0        # the mean is reported, not judged (module docstring)
    names = ["mean"] + [f"Re G({z.real:.3g}{z.imag:+.3g}i)" for z in points] \
        + [f"Im G({z.real:.3g}{z.imag:+.3g}i)" for z in points]
    obj = "linear" if linear else "centred"
    seq, rngs = spawn_generators(seed, sum(reps))
    rng_iter = iter(rngs)
    means, variances, spectra = [], [], []
    for n, r in zip(sizes, reps):
        k = round(s * n)
        stats = []
        for i in range(r):
            out = sample_causal(n, _width(law.ratios["d_h"], n), _width(law.ratios["d_v"], n),
                                _width(law.ratios["d_out"], n), float(law.beta), objects=(obj,), skip=k,
                                rng=next(rng_iter), full=False, heads=law.heads)
            spec = out[f"{obj}-tail"]
            if i == 0:
                spectra.append(spec)
            stats.append(_statistics(spec, points) - theory)
        stats = np.array(stats)
        means.append(stats.mean(0))
        variances.append(stats.var(0, ddof=1))
        if progress is not None:
            progress(f"l = {n}: {r} samples done ({time.perf_counter() - t0:.1f} s)")
    means, variances = np.array(means), np.array(variances)
    rows = []
    critical = None
    df = None
    for j, name in enumerate(names):
        fit = fit_trend(sizes, reps, means[:, j], variances[:, j], rates)
        df = fit["df"]
        if critical is None:
            critical = student_t_quantile(1 - level / (2 * int(judged.sum())), df)
        a, se = float(fit["coef"][0]), float(fit["se"][0])
        rows.append({"name": name, "theory": float(theory[j]), "differences": [float(d) for d in means[:, j]],
                     "a": a, "se_a": se, "trend": [float(c) for c in fit["coef"][1:]],
                     "t": a / se if se > 0 else math.inf, "tolerance": critical * se, "judged": bool(judged[j]),
                     "passed": bool(abs(a) <= critical * se) or not judged[j]})
    return CausalCheckReport(
        law=repr(law), sampler="the linear surrogate" if linear else "real causal softmax (first tokens left out)",
        sizes=sizes, reps=reps, seed=seq.entropy if seed is not None else None, rates=tuple(rates), level=level,
        critical=critical, df=df, epsilon=epsilon, rows=tuple(rows), passed=all(r["passed"] for r in rows),
        seconds=time.perf_counter() - t0, spectra=tuple(spectra))
