"""The regime of Gaussian equivalence: when the limiting attention law describes a finite layer.

Gaussian equivalence is a statement about ``l -> infinity`` at fixed
``beta``. :func:`check_regime` refuses, warns about or accepts an inverse
temperature at a sequence length (and a query/key width), with the measured
numbers behind each threshold.
"""

import math
import warnings

from .._errors import RegimeError, RegimeWarning
from .config import beta_value, positive_int

__all__ = [
    "BETA_WARN",
    "REGIME_REFUSE",
    "REGIME_WARN",
    "check_config_regime",
    "check_regime",
    "regime_parameter",
]

#: ``epsilon = exp(2 beta^2)/seq_len`` above which :func:`check_regime` warns.
REGIME_WARN = 0.05
#: ``epsilon`` above which :func:`check_regime` refuses (raises RegimeError).
REGIME_REFUSE = 1.0
#: Without a sequence length, ``|beta|`` above which the builder warns: the limit
#: is then reached (epsilon <= REGIME_WARN) only for l >= 20 exp(2 beta^2) > 10^5.
BETA_WARN = 2.0


def regime_parameter(beta, seq_len):
    """``epsilon = exp(2 beta^2) / seq_len``, the size of the first correction to Gaussian equivalence.

    Writing ``f_j = exp(beta s_j - beta^2/2)`` for one row of scores, softmax
    is ``f_j / (l fbar)`` with ``fbar = (1/l) sum_j f_j``. Gaussian equivalence
    replaces ``fbar`` by its mean 1. Expanding ``1/fbar^2`` around 1 in the
    second moment of the row gives the relative correction
    ``-2 E[f^2 (f - 1)] / (l E f^2) = -2 (exp(2 beta^2) - 1)/l``, of order
    ``epsilon``; the expansion itself is meaningful only for ``epsilon < 1``
    (``beta^2 < log(l)/2``: beyond, the row's second moment is carried by
    scores the row does not contain, and softmax approaches an argmax).

    Parameters
    ----------
    beta : real
        Inverse temperature.
    seq_len : int
        Sequence length ``l`` (a size, not a ratio).

    Returns
    -------
    float

    Examples
    --------
    >>> print(f"{regime_parameter(1, 1000):.5f}")
    0.00739
    """
    b = float(beta_value(beta))
    n = positive_int("seq_len", seq_len)
    return _exp(2 * b * b) / n


def _exp(x):
    """``exp(x)`` as a float, ``inf`` beyond the double range (math.exp raises there)."""
    return math.exp(x) if x < 709 else math.inf


def check_regime(beta, seq_len=None, head_dim=None, *, name="beta"):
    """Refuse, warn about, or accept an inverse temperature at a sequence length.

    The decision (measured with the real-softmax sampler, see Notes):

    * ``seq_len`` given: ``epsilon = regime_parameter(beta, seq_len)``;
      ``epsilon > REGIME_REFUSE = 1`` raises :class:`RegimeError`,
      ``epsilon > REGIME_WARN = 0.05`` emits a :class:`RegimeWarning`;
    * ``seq_len`` None (the law as a limit only): Gaussian equivalence holds
      for every fixed ``beta`` as ``l -> infinity``, so nothing is refused;
      ``|beta| > BETA_WARN = 2`` emits a :class:`RegimeWarning`, since the
      limit then describes only sequences longer than
      ``20 exp(2 beta^2) > 10^5``.

    * ``head_dim`` given (a query/key width ``d_h``, a size): the scores
      ``q.k/sqrt(d_h)`` are Gaussian only as ``d_h -> infinity``; at finite
      ``d_h``, ``E exp(2 beta s) = (1 - 4 beta^2/d_h)^(-d_h/2)``, which is
      infinite for ``d_h <= 4 beta^2``: then the second moment of a softmax
      row, which the Gaussian equivalent matches, does not exist, and the
      configuration is refused. (For ``d_h > 4 beta^2`` the excess
      ``exp(4 beta^4/d_h + ...)`` is an ``O(1/N)`` correction in the
      proportional limit.)

    Parameters
    ----------
    beta : real
    seq_len : int, optional
    head_dim : int, optional
    name : str, optional
        What ``beta`` stands for in the messages: ``"beta"``, or the scale of
        the scores ``beta m1(Sigma)`` on real inputs
        (:attr:`AttentionConfig.score_beta_name`).

    Returns
    -------
    float or None
        ``epsilon``, or None without ``seq_len``.

    Raises
    ------
    RegimeError
        When ``epsilon > 1``; the message gives ``beta``, ``l``, ``epsilon``,
        the largest admissible ``beta`` at this ``l`` and the smallest ``l``
        at this ``beta``. When ``head_dim <= 4 beta^2``.

    Notes
    -----
    Real-softmax Monte-Carlo (one head, ``d_h = d_v = d_out = l/2``; mean
    squared singular value against the limit ``(d_out/l)(exp(beta^2) - 1)``)
    gave the ratios real/limit 0.996 at ``beta = 1, l = 2000``
    (``epsilon = 0.004``), 0.93 at ``beta = 1.5, l = 2000``
    (``epsilon = 0.045``), 0.63 at ``beta = 2, l = 2000`` (``epsilon =
    1.5``), 0.20 at ``beta = 2.5, l = 2000`` (``epsilon = 134``) and 0.026 at
    ``beta = 3`` (``epsilon = 3.3e4``). The deficit tracks ``epsilon``; at
    ``epsilon ~ 1`` it is tens of per cent, and extrapolation in ``N^{-1/2}``
    from such sizes is not meaningful.
    """
    b = beta_value(beta)
    if head_dim is not None:
        d = positive_int("head_dim", head_dim)
        if d <= 4 * float(b) ** 2:
            raise RegimeError(
                f"{name} = {b} with query/key width d_h = {d} is outside the regime of Gaussian equivalence: "
                f"E exp(2 beta q.k/sqrt(d_h)) = (1 - 4 beta^2/d_h)^(-d_h/2) is infinite for d_h <= 4 beta^2 = "
                f"{4 * float(b) ** 2:.3g}: the unnormalized weights exp(beta s) have no second moment, which is what "
                f"c^2 = E f^2 - 1 - beta^2 stands for, and softmax rows are dominated by their largest scores; "
                f"use d_h > {4 * float(b) ** 2:.3g}"
            )
    if seq_len is None:
        if abs(float(b)) > BETA_WARN:
            lmin = 20 * _exp(2 * float(b) ** 2)
            warnings.warn(
                f"{name} = {b} is large compared with 1: the Gaussian-equivalent law is the l -> infinity limit, "
                f"approached (corrections exp(2 beta^2)/l <= {REGIME_WARN}) only for sequence lengths "
                f"l >= {lmin:.3g}; at shorter lengths softmax is closer to an argmax than to its linearization. "
                f"Pass seq_len to check a given length.",
                RegimeWarning,
                stacklevel=3,
            )
        return None
    eps = regime_parameter(b, seq_len)
    fb = float(b)
    beta_max = math.sqrt(math.log(seq_len) / 2)
    lmin = _exp(2 * fb * fb)
    if eps > REGIME_REFUSE:
        raise RegimeError(
            f"{name} = {b} at sequence length l = {seq_len} is outside the regime of Gaussian equivalence: "
            f"epsilon = exp(2 beta^2)/l = {eps:.3g} > {REGIME_REFUSE} (beta^2 = {fb * fb:.3g} > log(l)/2 = "
            f"{math.log(seq_len) / 2:.3g}). The softmax normalization no longer concentrates, and real attention "
            f"is far from the limiting law (measured: 37% below it in mean at beta = 2, l = 2000). "
            f"At l = {seq_len} use |{name}| <= {beta_max:.3g}; at {name} = {b} use l >= {lmin:.3g}."
        )
    if eps > REGIME_WARN:
        warnings.warn(
            f"{name} = {b} at l = {seq_len}: epsilon = exp(2 beta^2)/l = {eps:.3g} > {REGIME_WARN}; expect real "
            f"softmax to differ from the limiting law by corrections of relative order {2 * eps:.2g} "
            f"(2 epsilon, the first term of the normalization expansion)",
            RegimeWarning,
            stacklevel=3,
        )
    return eps


def check_config_regime(cfg, seq_len):
    """:func:`check_regime` for a configuration; with ``seq_len`` also at ``d_h = seq_len * d_h / l``."""
    head_dim = None
    if seq_len is not None:
        head_dim = max(1, int(round(positive_int("seq_len", seq_len) * cfg.d_h / cfg.l)))
    return check_regime(cfg.score_beta, seq_len, head_dim=head_dim, name=cfg.score_beta_name)
