"""The Monte-Carlo check of a law against samples of its own expression (rank 3).

:func:`check` compares samples with the theory. For polynomials in Gaussian
matrices, linear statistics (moments, the counting function at fixed points)
have fluctuations of order ``1/N`` and a bias ``c/N + O(1/N^2)``. The check
therefore samples ``reps`` replicates at ``N`` and ``2 reps`` at ``N/2``,
removes the ``1/N`` bias by Richardson extrapolation,
``s_inf = 2 s(N) - s(N/2)``, and compares ``s_inf`` with the theory in units
of its standard error (a Student-t test with a Bonferroni family-wise level).
The variance is pooled over both sizes on the scale ``Var s(N) = sigma^2/N^2``
of linear statistics (for counting statistics the true scale carries an
extra ``log N``, which makes the pooled error slightly conservative at ``N``).
The Kolmogorov-Smirnov distance is reported at both sizes; it should halve
from ``N/2`` to ``N``.

Kernel matrices (:class:`~freeprob.expr.kernel.Kernel`) converge at the
rate ``N^-1/2`` instead: for an expression that contains one, the bias is
taken as ``c N^-1/2`` and removed by ``s_inf = (sqrt(2) s(N) - s(N/2)) /
(sqrt(2) - 1)`` (``rate=1/2``; ``check(..., rate=...)`` overrides), and the
KS distance is expected to shrink by ``sqrt(2)``.

The law is taken by duck type: what :func:`~freeprob.montecarlo.sample.sample_spectrum`
reads, plus ``name``, ``moments(k)`` and ``cdf_function()``.
"""

from dataclasses import dataclass, field

import numpy as np
import sympy

from .._errors import DomainError
from .._numbers import read_number
from ..expr.entrywise import entrywise_nodes
from ..expr.kernel import Kernel
from .sample import check_sample_size, generator, sample_spectrum
from .report import cell
from .stats import ks_distance, student_t_quantile

__all__ = ["MAX_MOMENTS", "MAX_REPS", "CheckReport", "check", "finite_size_rate"]

#: Most replicates and moments one check takes.
MAX_REPS = 1000
MAX_MOMENTS = 200


def _integer(k):
    return isinstance(k, (int, np.integer)) and not isinstance(k, bool)


def _probability(p):
    return isinstance(p, (int, float, np.floating)) and not isinstance(p, bool) and 0 < p < 1


@dataclass(frozen=True)
class CheckReport:
    """Result of :func:`check`; ``passed`` is the verdict."""

    model: str
    n: int
    reps: int
    seed: object
    ks: float
    ks_half: float
    statistics: tuple  # dicts: name, theory, at_n, at_half, extrapolated, se, z, limit, passed
    critical: float
    passed: bool
    samples: tuple = field(default=(), repr=False)
    rate: float = 1.0  # the bias is c N^-rate

    def as_dict(self):
        return {
            "model": self.model,
            "n": self.n,
            "reps": self.reps,
            "seed": self.seed,
            "ks": {"at_n": self.ks, "at_half_n": self.ks_half},
            "statistics": [dict(s) for s in self.statistics],
            "critical_value": self.critical,
            "rate": self.rate,
            "verdict": "pass" if self.passed else "fail",
        }

    def _bias(self):
        return "1/N" if self.rate == 1 else f"N^-{self.rate:g}"

    def text(self):
        lines = [
            f"Monte-Carlo check of {self.model}: {self.reps} samples at N = {self.n} and {2 * self.reps} at N = {self.n // 2}",
            f"KS distance to the theoretical CDF: {self.ks:.3e} at N, {self.ks_half:.3e} at N/2 (expected to shrink like "
            f"{self._bias()})",
            f"{'statistic':<14}{'theory':>14}{'at N':>14}{'at N/2':>14}{'N->inf':>14}{'s.e.':>11}{'|t|':>7}",
        ]
        for s in self.statistics:
            t = abs(s["t"])
            lines.append(
                f"{s['name']:<14}{cell(s['theory'], '.6g', 14)}{cell(s['at_n'], '.6g', 14)}"
                f"{cell(s['at_half'], '.6g', 14)}{cell(s['extrapolated'], '.6g', 14)}{cell(s['se'], '.2e', 11)}"
                f"{cell(t, '.2f' if t < 1e4 else '.2e', 7)}"
                + ("" if s["passed"] else "  <-- FAIL")
            )
        lines.append(
            f"verdict: {'PASS' if self.passed else 'FAIL'} (every |t| <= {self.critical:.2f}: Student t with "
            f"{3 * self.reps - 2} degrees of freedom, family-wise level 0.001 over {len(self.statistics)} statistics, "
            f"after removing the {self._bias()} bias by Richardson extrapolation; standard errors pooled over both sizes "
            f"on the 1/N fluctuation scale of linear statistics)"
        )
        return "\n".join(lines)



def finite_size_rate(expr):
    """The exponent ``r`` of the finite-size bias ``c N^-r`` of linear statistics: 1/2 with a kernel matrix, else 1."""
    return 0.5 if any(isinstance(node, Kernel) for node in entrywise_nodes(expr)) else 1.0


def _scale_exponent(law):
    """``e`` with ``2^e`` the law's scale bound rounded to a power of two (0 for a law without a scale)."""
    scale = getattr(law, "scale", None)
    if scale is None or not np.isfinite(float(scale)) or not float(scale) > 0:
        return 0
    return int(round(np.log2(float(scale))))


def _in_units(m, power):
    """The moment ``m`` (sympy or mpmath number) divided by ``2^power``, as a float."""
    if isinstance(m, sympy.Basic):
        return float(sympy.re(sympy.N(m * sympy.Integer(2) ** (-power), 20)))
    return float(m * 2.0 ** (-power)) if abs(power) < 1000 else float(sympy.Float(str(m), 20) * sympy.Integer(2) ** (-power))


def check(law, n=1000, reps=6, seed=0, moments=4, quantiles=(0.1, 0.25, 0.5, 0.75, 0.9), level=1e-3, rate=None,
          progress=None):
    """Monte-Carlo check of ``law`` at size ``n`` (see the module docstring).

    ``rate``: the exponent of the bias removed by Richardson extrapolation
    (default :func:`finite_size_rate` of the law's expression). ``progress``,
    if given, is called as ``progress(label)`` after each of the ``3 reps``
    samples. Returns a :class:`CheckReport`; its ``samples`` hold the spectra
    at ``n``.
    """
    if getattr(law, "expr", None) is None:  # a law without an expression to sample (causal attention)
        raise DomainError(f"check samples the expression of a law; {law!r} has none (the causal attention law is "
                          f"checked against real causal softmax by freeprob.attention.check_causal)")
    if not _integer(reps) or not 3 <= reps <= MAX_REPS:
        raise DomainError(f"the check needs an integer number of replicates between 3 (to estimate standard errors) "
                          f"and {MAX_REPS}, got {reps!r}")
    if not _integer(n) or n < 20:
        raise DomainError(f"the check needs an integer size n >= 20, got {n!r}")
    if not _integer(moments) or not 0 <= moments <= MAX_MOMENTS:
        raise DomainError(f"the check compares between 0 and {MAX_MOMENTS} moments, got {moments!r}")
    if not _probability(level):
        raise DomainError(f"the family-wise level must be a number strictly between 0 and 1, got {level!r}")
    if not all(_probability(p) for p in quantiles):
        raise DomainError(f"quantiles must be numbers strictly between 0 and 1, got {quantiles!r}")
    rate = finite_size_rate(law.expr) if rate is None else float(read_number(rate, what="rate"))
    if not rate > 0:
        raise DomainError(f"the finite-size rate must be positive, got {rate}")
    check_sample_size(law, n)
    rng = generator(seed)
    cdf = law.cdf_function()
    # moments are compared in units u = 2^e of the law's scale (exact), so that m_k and the variances of
    # the sampled moments stay within double precision for laws far from scale one
    e = _scale_exponent(law)
    # m_k is reported in the law's own units, as a double: moments beyond its range (scale^k > 1e300) are not compared
    moments = min(moments, max(1, int(300 / max(1e-9, abs(e) * np.log10(2))))) if e else moments
    theory_m = [_in_units(m, e * k) for k, m in enumerate(law.moments(moments), start=1)]
    # quantiles of the absolutely continuous part, so that no point sits on an atom
    qpoints = [float(cdf.ac_quantile(p)) for p in quantiles]
    nh = max(n // 2, 10)
    tick = progress or (lambda label="": None)

    def sampled(size, label):
        spec = sample_spectrum(law, size, rng)
        tick(label)
        return spec

    big = [sampled(n, f"N = {n}") for _ in range(reps)]
    half = [sampled(nh, f"N = {nh}") for _ in range(2 * reps)]

    def stats(spec):
        out = [np.mean(np.ldexp(spec, -e) ** k) for k in range(1, moments + 1)]
        out += [np.mean(spec <= q) for q in qpoints]
        return np.array(out)

    sb = np.array([stats(s) for s in big])
    sh = np.array([stats(s) for s in half])
    theory = theory_m + [cdf(q) for q in qpoints]
    names = [f"m{k}" for k in range(1, moments + 1)] + [f"F(q{p:g})" for p in quantiles]
    mean_b, mean_h = sb.mean(0), sh.mean(0)
    # linear statistics fluctuate like sigma/N: pool the two sizes' variances on that scale
    rb, rh = len(big), len(half)
    df = (rb - 1) + (rh - 1)
    sigma2 = ((rb - 1) * n**2 * sb.var(0, ddof=1) + (rh - 1) * nh**2 * sh.var(0, ddof=1)) / df
    se_b = np.sqrt(sigma2 / rb) / n
    se_h = np.sqrt(sigma2 / rh) / nh
    w = 2.0 ** rate  # s(N) - s_inf = c N^-rate: s_inf = (w s(N) - s(N/2)) / (w - 1)
    est = (w * mean_b - mean_h) / (w - 1)
    se = np.sqrt((w * se_b) ** 2 + se_h ** 2) / (w - 1)
    crit = student_t_quantile(1 - level / (2 * len(names)), df)
    rows = []
    ok = True
    for i, name in enumerate(names):
        # the theory's own numerical error (double-precision path) is far below any s.e.
        floor = 1e-7 * max(1.0, abs(theory[i]))
        t = (est[i] - theory[i]) / max(se[i], floor)
        passed = bool(abs(t) <= crit)
        ok &= passed
        back = e * (i + 1) if i < moments else 0  # m_k is reported in the law's own units

        def own(v):
            return float(np.ldexp(v, back))
        rows.append(
            {
                "name": name,
                "theory": own(theory[i]),
                "at_n": own(mean_b[i]),
                "at_half": own(mean_h[i]),
                "extrapolated": own(est[i]),
                "se": own(se[i]),
                "t": float(t),
                "limit": float(crit),
                "passed": passed,
            }
        )
    ks = float(np.mean([ks_distance(s, cdf) for s in big]))
    ks_half = float(np.mean([ks_distance(s, cdf) for s in half]))
    return CheckReport(law.name, n, reps, seed, ks, ks_half, tuple(rows), crit, bool(ok), tuple(big), rate)
