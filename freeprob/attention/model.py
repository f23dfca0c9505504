"""Multi-head self-attention: the Gaussian-equivalent model of every head allocation and sharing pattern.

The public contract (MATH.md section 6, issue 3). The law reported is that of
the squared singular values, over its ``l`` rows, of the centered output

    Y = sum_h sqrt(l) (A_h - 1 1^T / l) V_h W_h ,

with, for each head ``h = 1..H``, ``Q_h, K_h`` (``l x d_h``) iid ``N(0, 1)``,
``S_h = Q_h K_h^T / sqrt(d_h)``, ``A_h = softmax(beta S_h)`` row-wise,
``V_h`` (``l x d_v``) iid ``N(0, 1/l)``, ``W_h`` (``d_v x d_out``) iid
``N(0, 1/(H d_v))``; for ``tied-kv``, ``V_h = K_h / sqrt(l)`` and
``d_v = d_h``. The Gaussian equivalent replaces ``sqrt(l)(A_h - 1 1^T/l)`` by

    (mu1 S_h + c Z_h) / sqrt(l),     Z_h (l x l) iid N(0, 1), independent across heads,

where ``mu1 = E xi f(xi)`` and ``c^2 = E f(xi)^2 - mu0^2 - mu1^2`` are the
Hermite coefficients of the normalized exponential ``f(x) = exp(beta x -
beta^2/2)``, obtained by symbolic integration in
:func:`freeprob._equivalence.gaussian_equivalent` (``mu0 = 1``,
``mu1 = beta``, ``c^2 = exp(beta^2) - 1 - beta^2``); nothing here types them
in. Sizes are ratios (``l``, ``d_h``, ``d_v``, ``d_out`` relative to a common
scale ``N``), the inverse temperature ``beta`` a parameter.

Sharing patterns are realized by reusing the same leaf of the expression
graph: ``mha`` (independent heads), ``mqa`` (one ``K`` for all heads),
``gqa:G`` (heads split into ``G`` contiguous groups, one ``K`` and one ``V``
per group), ``shared-v`` (one ``V``), ``tied-kv`` (``V_h = K_h/sqrt(l)``).
The output projections ``W_h`` and the queries ``Q_h`` are never shared.
``tied-qk`` is refused (:class:`~freeprob.RegimeError`).

Every configuration is an ordinary model file (:func:`model_text`,
:func:`emit_model`): the builder parses the text it writes, so the law of the
builder and the law of the file are the same object by construction, and
``freeprob equations/density/law/check`` work on the file unchanged.
"""

import math
import numbers
import tomllib
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import sympy

from .._errors import DomainError, FreeProbError, RegimeError, ShapeError
from .._numbers import read_number
from ..law import law_of

__all__ = [
    "PATTERNS",
    "AttentionConfig",
    "RegimeWarning",
    "attention_config",
    "head_plan",
    "attention_expression",
    "attention_model",
    "attention_law",
    "model_text",
    "emit_model",
    "softmax_coefficients",
    "regime_parameter",
    "check_regime",
    "REGIME_WARN",
    "REGIME_REFUSE",
    "BETA_WARN",
]

#: Sharing patterns (``gqa:G`` with ``G`` groups); ``tied-qk`` is refused.
PATTERNS = ("mha", "mqa", "gqa:G", "shared-v", "tied-kv", "tied-qk")

#: ``epsilon = exp(2 beta^2)/seq_len`` above which :func:`check_regime` warns.
REGIME_WARN = 0.05
#: ``epsilon`` above which :func:`check_regime` refuses (raises RegimeError).
REGIME_REFUSE = 1.0
#: Without a sequence length, ``|beta|`` above which the builder warns: the limit
#: is then reached (epsilon <= REGIME_WARN) only for l >= 20 exp(2 beta^2) > 10^5.
BETA_WARN = 2.0

_DEFAULT_WIDTH = sympy.Rational(1, 2)


class RegimeWarning(UserWarning):
    """A configuration at the edge of the regime of Gaussian equivalence.

    The limiting law is still returned; at the stated sequence length the
    real softmax layer is expected to differ from it by corrections of the
    stated relative size.
    """


_TIED_QK = (
    "pattern 'tied-qk' (Q_h = K_h, symmetric scores) is outside the regime of Gaussian equivalence, "
    "so no law is returned: the diagonal score |k_i|^2/sqrt(d_h) concentrates at sqrt(d_h) (= 8 at "
    "d_h = 64, against off-diagonal scores of order 1), and it grows without bound in the proportional "
    "limit d_h = rho N. exp(beta sqrt(d_h)) then outweighs the whole row (about l exp(beta^2/2)) as soon "
    "as beta sqrt(d_h) > log(l) + beta^2/2, softmax saturates on the diagonal, A_h tends to the identity "
    "and the output is of order l, not the O(1) law of (beta S + c Z)/sqrt(l). Use distinct query and "
    "key matrices; freeprob._softmax.sample_attention(..., pattern='tied-qk', allow_outside_regime=True) "
    "samples the real layer to show the failure."
)


# ----------------------------------------------------------------------------
# Coefficients and regime
# ----------------------------------------------------------------------------


@lru_cache(maxsize=1)
def softmax_coefficients():
    """The Gaussian-equivalent coefficients of the softmax exponential, derived symbolically.

    Runs :func:`freeprob._equivalence.gaussian_equivalent` on
    ``exp(beta*x - beta**2/2)`` with ``method="exact"`` (sympy integration)
    and maps its parameter to the real symbol ``beta`` used by model files.

    Returns
    -------
    beta : sympy.Symbol
        ``Symbol("beta", real=True)``.
    mu1 : sympy.Expr
        The coefficient of the linear part, ``E xi f(xi)``.
    c : sympy.Expr
        ``sqrt(E f^2 - mu0^2 - mu1^2)``, the amplitude of the independent
        Gaussian part.

    Raises
    ------
    FreeProbError
        If the derivation does not give ``mu0 = 1``: then ``1 1^T/l`` would
        not be the mean removed by the centering of the public contract.

    Examples
    --------
    >>> beta, mu1, c = softmax_coefficients()
    >>> mu1, c
    (beta, sqrt(-beta**2 + exp(beta**2) - 1))
    """
    from .equivalence import gaussian_equivalent

    ge = gaussian_equivalent("exp(beta*x - beta**2/2)", method="exact")
    (sym,) = ge.params
    beta = sympy.Symbol("beta", real=True)
    if sympy.simplify(ge.mu0 - 1) != 0:
        raise FreeProbError(f"internal error: the normalized exponential has mu0 = {ge.mu0}, expected 1")
    mu1 = ge.mu1.xreplace({sym: beta})
    c = sympy.sqrt(ge.mu_star_sq.xreplace({sym: beta}))
    return beta, mu1, c


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
    b = float(_beta_value(beta))
    n = _positive_int("seq_len", seq_len)
    return math.exp(2 * b * b) / n


def check_regime(beta, seq_len=None, head_dim=None):
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
    b = _beta_value(beta)
    if head_dim is not None:
        d = _positive_int("head_dim", head_dim)
        if d <= 4 * float(b) ** 2:
            raise RegimeError(
                f"beta = {b} with query/key width d_h = {d} is outside the regime of Gaussian equivalence: "
                f"E exp(2 beta q.k/sqrt(d_h)) = (1 - 4 beta^2/d_h)^(-d_h/2) is infinite for d_h <= 4 beta^2 = "
                f"{4 * float(b) ** 2:.3g}: the unnormalized weights exp(beta s) have no second moment, which is what "
                f"c^2 = E f^2 - 1 - beta^2 stands for, and softmax rows are dominated by their largest scores; "
                f"use d_h > {4 * float(b) ** 2:.3g}"
            )
    if seq_len is None:
        if abs(float(b)) > BETA_WARN:
            lmin = 20 * math.exp(2 * float(b) ** 2)
            warnings.warn(
                f"beta = {b} is large compared with 1: the Gaussian-equivalent law is the l -> infinity limit, "
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
    lmin = math.exp(2 * fb * fb)
    if eps > REGIME_REFUSE:
        raise RegimeError(
            f"beta = {b} at sequence length l = {seq_len} is outside the regime of Gaussian equivalence: "
            f"epsilon = exp(2 beta^2)/l = {eps:.3g} > {REGIME_REFUSE} (beta^2 = {fb * fb:.3g} > log(l)/2 = "
            f"{math.log(seq_len) / 2:.3g}). The softmax normalization no longer concentrates, and real attention "
            f"is far from the limiting law (measured: 37% below it in mean at beta = 2, l = 2000). "
            f"At l = {seq_len} use |beta| <= {beta_max:.3g}; at beta = {b} use l >= {lmin:.3g}."
        )
    if eps > REGIME_WARN:
        warnings.warn(
            f"beta = {b} at l = {seq_len}: epsilon = exp(2 beta^2)/l = {eps:.3g} > {REGIME_WARN}; expect real "
            f"softmax to differ from the limiting law by corrections of relative order {2 * eps:.2g} "
            f"(2 epsilon, the first term of the normalization expansion)",
            RegimeWarning,
            stacklevel=3,
        )
    return eps


# ----------------------------------------------------------------------------
# Configuration
# ----------------------------------------------------------------------------


def _positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise DomainError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _exact_number(value, what):
    return read_number(value, what=what)


def _beta_value(beta):
    b = _exact_number(beta, "beta")
    if b == 0:
        raise DomainError("beta must be nonzero: at beta = 0 softmax is uniform and the centered output is 0")
    return b


def _ratio_value(value, name):
    v = _exact_number(value, f"ratio {name}")
    if not v > 0:
        raise DomainError(f"ratio {name} must be positive, got {value!r}")
    return v


def head_plan(pattern, heads, allow_tied_qk=False):
    """Normalize a sharing pattern: ``(name, groups, plan)``.

    ``groups`` is the number of distinct key matrices (``H``, 1 for ``mqa``,
    ``G`` for ``gqa:G``); ``plan[h] = (q, k, v)`` gives head ``h``'s query,
    key and value matrix (0-based; ``"tied"`` where it is another of the
    head's own matrices). Both the builder and the real-softmax sampler
    read the pattern through this one function.

    Examples
    --------
    >>> head_plan("gqa:2", 4)
    ('gqa:2', 2, [(0, 0, 0), (1, 0, 0), (2, 1, 1), (3, 1, 1)])
    >>> head_plan("tied-kv", 2)[2]
    [(0, 0, 'tied'), (1, 1, 'tied')]

    Raises
    ------
    RegimeError
        ``tied-qk`` unless ``allow_tied_qk`` (the sampler shows its failure).
    DomainError
        An unknown pattern, or ``H`` not divisible by ``G``.
    """
    if not isinstance(pattern, str):
        raise DomainError(f"pattern must be a string among {PATTERNS}, got {pattern!r}")
    name = pattern.strip().lower()
    hs = range(heads)
    if name == "tied-qk" and not allow_tied_qk:
        raise RegimeError(_TIED_QK)
    plans = {
        "mha": (heads, [(h, h, h) for h in hs]),
        "mqa": (1, [(h, 0, h) for h in hs]),
        "shared-v": (heads, [(h, h, 0) for h in hs]),
        "tied-kv": (heads, [(h, h, "tied") for h in hs]),
        "tied-qk": (heads, [("tied", h, h) for h in hs]),
    }
    if name in plans:
        return (name, *plans[name])
    if name.startswith("gqa:"):
        text = name[4:]
        if not text.isdigit() or int(text) < 1:
            raise DomainError(f"pattern {pattern!r}: the group count G in 'gqa:G' must be a positive integer")
        groups = int(text)
        if heads % groups:
            raise DomainError(f"pattern {pattern!r}: {heads} heads cannot be split into {groups} equal groups "
                              f"(H must be divisible by G)")
        size = heads // groups
        return f"gqa:{groups}", groups, [(h, h // size, h // size) for h in hs]
    raise DomainError(f"unknown sharing pattern {pattern!r}; expected one of {', '.join(PATTERNS)}")


@dataclass(frozen=True)
class AttentionConfig:
    """One attention configuration; exact values, hashable (laws are cached on it).

    Attributes
    ----------
    heads : int
    pattern : str
        Normalized: ``mha``, ``mqa``, ``gqa:G``, ``shared-v`` or ``tied-kv``.
    groups : int
        Number of distinct key matrices (``H``, 1 for ``mqa``, ``G``).
    beta : sympy.Expr
    l, d_h, d_v, d_out : sympy.Expr
        Exact ratios; ``d_v == d_h`` for ``tied-kv``.
    """

    heads: int
    pattern: str
    groups: int
    beta: sympy.Expr
    l: sympy.Expr
    d_h: sympy.Expr
    d_v: sympy.Expr
    d_out: sympy.Expr

    def key_index(self, h):
        """Key matrix (1-based) used by head ``h`` (0-based)."""
        return 1 + h // (self.heads // self.groups)

    def value_index(self, h):
        """Value matrix (1-based) used by head ``h``; 0 for ``tied-kv``."""
        if self.pattern == "tied-kv":
            return 0
        if self.pattern == "shared-v":
            return 1
        if self.pattern.startswith("gqa:"):
            return self.key_index(h)
        return h + 1

    @property
    def name(self):
        """``attention-<pattern>-h<H>`` (``gqa:2`` written ``gqa2``)."""
        return f"attention-{self.pattern.replace(':', '')}-h{self.heads}"

    @property
    def ratios(self):
        """``{name: exact ratio}`` of the dimensions of the expression."""
        out = {"l": self.l, "d_h": self.d_h, "d_v": self.d_v, "d_out": self.d_out}
        if self.pattern == "tied-kv":
            del out["d_v"]
        return out

    def sizes(self, n):
        """Integer sizes ``round(ratio * n)`` for the sampler."""
        from .softmax import attention_sizes

        return attention_sizes(n, {k: float(getattr(self, k)) for k in ("l", "d_h", "d_v", "d_out")})

    def sample(self, n, rng=None, linear=False):
        """Squared singular values of one real-softmax (or ``linear``) sample at scale ``n``."""
        from .softmax import sample_attention

        s = self.sizes(n)
        return sample_attention(s["l"], self.heads, s["d_h"], s["d_v"], s["d_out"], float(self.beta),
                                pattern=self.pattern, rng=rng, linear=linear)

    def label(self):
        """A short description for tables."""
        return (f"{self.pattern} H={self.heads} beta={self.beta} l={self.l} d_h={self.d_h} d_v={self.d_v} "
                f"d_out={self.d_out}")


def attention_config(heads=1, pattern="mha", beta=1, *, l=1, d_h=_DEFAULT_WIDTH, d_v=None, d_out=_DEFAULT_WIDTH):
    """Validate a configuration.

    Parameters
    ----------
    heads : int
        Number of heads ``H``.
    pattern : str
        ``mha``, ``mqa``, ``gqa:G``, ``shared-v``, ``tied-kv`` (``tied-qk`` is
        refused).
    beta : real
        Inverse temperature (nonzero); floats are read by their shortest
        decimal (``0.1 -> 1/10``).
    l, d_h, d_v, d_out : real, optional
        Ratios of the sequence length, the query/key width per head, the
        value width per head and the output width. Default ``l = 1``,
        ``d_h = d_out = 1/2``, ``d_v = d_h``.

    Returns
    -------
    AttentionConfig

    Raises
    ------
    DomainError
        Bad sizes, ``beta = 0``, unknown pattern, ``H`` not divisible by ``G``.
    ShapeError
        ``tied-kv`` with ``d_v != d_h``.
    RegimeError
        ``tied-qk``.
    """
    heads = _positive_int("heads", heads)
    name, groups, _ = head_plan(pattern, heads)
    b = _beta_value(beta)
    lr = _ratio_value(l, "l")
    dh = _ratio_value(d_h, "d_h")
    dv = dh if d_v is None else _ratio_value(d_v, "d_v")
    do = _ratio_value(d_out, "d_out")
    if name == "tied-kv" and dv != dh:
        raise ShapeError(f"pattern 'tied-kv' sets V_h = K_h/sqrt(l), so it needs d_v = d_h; got d_v = {dv}, d_h = {dh}")
    return AttentionConfig(heads, name, groups, b, lr, dh, dv, do)


# ----------------------------------------------------------------------------
# Expression and model file
# ----------------------------------------------------------------------------


def _scalar_text(expr):
    if expr.is_Atom:
        return str(expr)
    if expr.is_Pow and expr.exp == sympy.Rational(1, 2):
        return f"sqrt({expr.base})"
    return f"({expr})"


def _structure(cfg):
    """``(expression text, {matrix: (shape, variance text)})`` of a configuration."""
    _, mu1, c = softmax_coefficients()
    mu1_text, c_text = _scalar_text(mu1), _scalar_text(c)
    H = cfg.heads
    vdim = "d_h" if cfg.pattern == "tied-kv" else "d_v"
    mats = {}
    terms = []

    def key_name(h):
        return "K" if cfg.groups == 1 and H > 1 else f"K{cfg.key_index(h)}"

    for h in range(H):
        q, z, w = f"Q{h + 1}", f"Z{h + 1}", f"W{h + 1}"
        k = key_name(h)
        mats[q] = (("l", "d_h"), "1")
        mats[k] = (("l", "d_h"), "1")
        mats[z] = (("l", "l"), "1")
        if cfg.pattern == "tied-kv":
            value = f"({k} / sqrt(l))"
        else:
            vi = cfg.value_index(h)
            value = "V" if cfg.pattern == "shared-v" and H > 1 else f"V{vi}"
            mats[value] = (("l", "d_v"), "1/l")
        mats[w] = ((vdim, "d_out"), f"1/({H}*{vdim})")
        terms.append(f"({mu1_text} * {q} @ {k}.T / sqrt(d_h) + {c_text} * {z}) / sqrt(l) @ {value} @ {w}")
    return " + ".join(terms), mats


def _number_text(v):
    v = sympy.nsimplify(v)
    if v.is_Integer:
        return str(int(v))
    return '"' + str(v) + '"'


def model_text(cfg, name=None, description=None):
    """The TOML model file of a configuration (see :mod:`freeprob._modelfile` for the format).

    Parameters
    ----------
    cfg : AttentionConfig
    name : str, optional
        Default ``cfg.name``.
    description : str, optional

    Returns
    -------
    str
    """
    expr_text, mats = _structure(cfg)
    name = name or cfg.name
    if description is None:
        _, _, c = softmax_coefficients()
        shared = {"mha": "independent heads", "mqa": "one K for all heads", "shared-v": "one V for all heads",
                  "tied-kv": "V_h = K_h/sqrt(l)"}.get(cfg.pattern, f"one K and one V per group of "
                                                                  f"{cfg.heads // cfg.groups} heads")
        description = (
            f"Gaussian equivalent of centered {cfg.heads}-head softmax attention, pattern {cfg.pattern} ({shared}): "
            f"squared singular values of sum_h (beta Q_h K_h^T/sqrt(d_h) + c Z_h)/sqrt(l) V_h W_h, c = {c} "
            f"(derived by freeprob._equivalence)"
        )
    lines = [
        f"# Generated by freeprob._attention.emit_model(heads={cfg.heads}, pattern={cfg.pattern!r}, "
        f"beta={cfg.beta}, l={cfg.l}, d_h={cfg.d_h}, d_v={cfg.d_v}, d_out={cfg.d_out}).",
        "# Contract: the law of the squared singular values, over its l rows, of",
        "#   Y = sum_h sqrt(l) (A_h - 1 1^T/l) V_h W_h,  A_h = softmax(beta Q_h K_h^T / sqrt(d_h)) row-wise,",
        "# replaced by its Gaussian equivalent (sqrt(l)(A_h - 1 1^T/l) -> (beta S_h + c Z_h)/sqrt(l)).",
        f"name = {_quote(name)}",
        f"description = {_quote(description)}",
        'law = "squared-singular-values"',
        f"expression = {_quote(expr_text)}",
        "",
        "[dimensions]",
    ]
    for dim, v in cfg.ratios.items():
        lines.append(f"{dim} = {_number_text(v)}")
    lines += ["", "[parameters]", f"beta = {_number_text(cfg.beta)}"]
    for mname, (shape, var) in mats.items():
        lines += ["", f"[matrices.{mname}]", 'kind = "gaussian"', f'shape = ["{shape[0]}", "{shape[1]}"]',
                  f'variance = "{var}"']
    return "\n".join(lines) + "\n"


def _quote(text):
    if any(ch in text for ch in '"\\\n'):
        raise DomainError(f"cannot write {text!r} as a TOML string (quotes, backslashes or newlines)")
    return f'"{text}"'


def _check_config_regime(cfg, seq_len):
    """:func:`check_regime` for a configuration; with ``seq_len`` also at ``d_h = seq_len * d_h / l``."""
    head_dim = None
    if seq_len is not None:
        head_dim = max(1, int(round(_positive_int("seq_len", seq_len) * cfg.d_h / cfg.l)))
    return check_regime(cfg.beta, seq_len, head_dim=head_dim)


@lru_cache(maxsize=256)
def _model_of(cfg, name=None):
    from ..expr.modelfile import parse_model

    return parse_model(tomllib.loads(model_text(cfg, name)), f"<attention model {cfg.name}>")


def attention_model(heads=1, pattern="mha", beta=1, *, seq_len=None, **ratios):
    """The configuration as a :class:`~freeprob.Model` (parsed from its own model-file text).

    Parameters are those of :func:`attention_config`, plus ``seq_len`` (see
    :func:`attention_law`).
    """
    cfg = attention_config(heads, pattern, beta, **ratios)
    _check_config_regime(cfg, seq_len)
    return _model_of(cfg)


def attention_expression(heads=1, pattern="mha", **ratios):
    """The Gaussian-equivalent expression ``Y_lin`` (a :class:`freeprob._expr.Expr`).

    Its scalars are the dimension symbols ``l, d_h, d_v, d_out`` (positive)
    and the parameter ``beta`` (real); ratios only enter through
    ``tied-kv``'s check ``d_v = d_h``.

    Examples
    --------
    >>> sorted(m.name for m in attention_expression(2, "mqa").leaves())
    ['K', 'Q1', 'Q2', 'V1', 'V2', 'W1', 'W2', 'Z1', 'Z2']
    >>> attention_expression(2, "mqa").shape
    (l, d_out)
    """
    cfg = attention_config(heads, pattern, 1, **ratios)
    return _model_of(cfg).expr


@lru_cache(maxsize=256)
def _law_of(cfg):
    return law_of(_model_of(cfg))


def attention_law(heads=1, pattern="mha", beta=1, *, l=1, d_h=_DEFAULT_WIDTH, d_v=None, d_out=_DEFAULT_WIDTH,
                  seq_len=None):
    """The limiting squared-singular-value law of centered multi-head attention (Gaussian equivalent).

    Parameters
    ----------
    heads : int
        Number of heads ``H``.
    pattern : str
        ``"mha"`` (independent heads), ``"mqa"`` (one ``K`` for all heads),
        ``"gqa:G"`` (``G`` contiguous groups, one ``K`` and one ``V`` per
        group; ``G`` divides ``H``), ``"shared-v"`` (one ``V``),
        ``"tied-kv"`` (``V_h = K_h/sqrt(l)``, ``d_v = d_h``). ``"tied-qk"``
        is refused.
    beta : real
        Inverse temperature, nonzero.
    l, d_h, d_v, d_out : real, optional
        Ratios (see :func:`attention_config`; default ``1, 1/2, d_h, 1/2``).
    seq_len : int, optional
        A finite sequence length the law is meant to describe; enables the
        regime checks of :func:`check_regime` at that length and at the
        query/key width ``seq_len * d_h / l``.

    Returns
    -------
    SpectralLaw
        Cached: equal configurations return the same object.

    Raises
    ------
    RegimeError
        For ``tied-qk`` (the diagonal of ``Q Q^T/sqrt(d_h)`` grows like
        ``sqrt(d_h)`` and softmax saturates on it), and, when ``seq_len`` is
        given, for ``exp(2 beta^2) > seq_len`` or ``seq_len d_h/l <= 4 beta^2``.
    DomainError, ShapeError
        See :func:`attention_config`.

    Warns
    -----
    RegimeWarning
        ``exp(2 beta^2)/seq_len > 0.05`` (with ``seq_len``), or ``|beta| > 2``
        (without): the law is valid as a limit, but reached only at long
        sequences.

    Notes
    -----
    The regime decision. Gaussian equivalence is a statement about
    ``l -> infinity`` at fixed ``beta``; the builder works with ratios, so it
    returns the limit for every finite nonzero ``beta``. What ``beta`` does
    control is how long a sequence must be for the limit to describe it: the
    neglected fluctuation of the softmax normalization enters the law at
    relative order ``epsilon = exp(2 beta^2)/l`` (:func:`regime_parameter`).
    Measured with the real-softmax sampler (:func:`check_regime`, Notes) the
    mean of the spectrum at ``l = 2000`` is 0.4% below the limit at
    ``beta = 1``, 7% at ``beta = 1.5``, 37% at ``beta = 2`` and 80% at
    ``beta = 2.5``. Hence: refuse (RegimeError, with the numbers) when a
    length is given and ``epsilon > 1``; warn when ``epsilon > 0.05``, or,
    without a length, when ``|beta| > 2`` (the limit then needs
    ``l > 10^5``). ``beta`` comparable to ``sqrt(log l)`` is exactly
    ``epsilon`` of order one.

    Examples
    --------
    >>> law = attention_law(2, "mqa", 1)
    >>> law is attention_law(2, "mqa", 1)
    True
    >>> from freeprob import fmt
    >>> fmt(law.density("0.5", dps=30), 25)
    '0.2091383396098217134031242'
    """
    cfg = attention_config(heads, pattern, beta, l=l, d_h=d_h, d_v=d_v, d_out=d_out)
    _check_config_regime(cfg, seq_len)
    return _law_of(cfg)


def emit_model(path, heads=1, pattern="mha", beta=1, *, name=None, description=None, **ratios):
    """Write the configuration as an ordinary model file and read it back.

    Parameters
    ----------
    path : str or Path
        Destination ``.toml`` file (overwritten).
    heads, pattern, beta, **ratios
        As :func:`attention_config`.
    name, description : str, optional

    Returns
    -------
    Model
        The file as loaded by :func:`freeprob.load_model`.
    """
    from ..expr.modelfile import load_model

    cfg = attention_config(heads, pattern, beta, **ratios)
    check_regime(cfg.beta)
    path = Path(path)
    if path.suffix != ".toml":
        raise DomainError(f"a model file must end in .toml, got {path}")
    path.write_text(model_text(cfg, name, description))
    return load_model(path)
