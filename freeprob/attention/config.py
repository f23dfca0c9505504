"""Attention configurations: sharing patterns, head plans and validated exact sizes.

Both the expression builder (:mod:`freeprob.attention.model`) and the
real-softmax sampler (:mod:`freeprob.attention.softmax`) read a pattern
through :func:`head_plan`; nothing here imports either of them.
"""

import numbers
from dataclasses import dataclass

import sympy

from .._errors import DomainError, EquivalenceError, RegimeError, ShapeError
from .._numbers import read_number
from ..expr.modelfile import MAX_TERMS
from ..expr.profiles import read_spectrum

__all__ = [
    "COUPLINGS",
    "INPUT_POSITIONS",
    "PATTERNS",
    "AttentionConfig",
    "ValueCoupling",
    "attention_config",
    "groups_divide",
    "head_plan",
    "positive_int",
    "beta_value",
    "input_spectrum_value",
    "read_input_spectrum",
    "split_pattern",
]

#: Sharing patterns (``gqa:G`` with ``G`` groups); ``tied-qk`` is refused.
PATTERNS = ("mha", "mqa", "gqa:G", "shared-v", "tied-kv", "tied-qk")

#: Kinds of value coupling ``V_h = a K_h M_h / sqrt(l) + b V'_h`` (written ``+kv-KIND:A:B`` after a pattern).
COUPLINGS = ("identity", "gaussian")

DEFAULT_WIDTH = sympy.Rational(1, 2)

_TIED_QK = (
    "pattern 'tied-qk' (Q_h = K_h, symmetric scores) is outside the regime of Gaussian equivalence, "
    "so no law is returned: the diagonal score |k_i|^2/sqrt(d_h) concentrates at sqrt(d_h) (= 8 at "
    "d_h = 64, against off-diagonal scores of order 1), and it grows without bound in the proportional "
    "limit d_h = rho N. exp(beta sqrt(d_h)) then outweighs the whole row (about l exp(beta^2/2)) as soon "
    "as beta sqrt(d_h) > log(l) + beta^2/2, softmax saturates on the diagonal, A_h tends to the identity "
    "and the output is of order l, not the O(1) law of (beta S + c Z)/sqrt(l). Use distinct query and "
    "key matrices; freeprob.attention.sample_attention(..., pattern='tied-qk', allow_outside_regime=True) "
    "samples the real layer to show the failure."
)


_CAUSAL = (
    "causal=True (each query attends to earlier tokens only) has no law of the form of this configuration, so "
    "none is built here; the derivation and the Monte-Carlo evidence are in docs/causal.md. Under the mask the "
    "mean of A_h is the Cesaro matrix M_ij = 1[j <= i]/i, and the Gaussian equivalent of sqrt(l)(A_h - M) is "
    "(sqrt(l)/i)(beta S_ij + c Z_ij - row mean) on j <= i: its score part is the masked product "
    "1[j <= i](Q_h K_h^T)_ij, and its row weight sqrt(l)/i is a variance profile 1[c <= r]/r^2 (r = i/l, "
    "c = j/l) whose integral diverges, so over all rows every moment of the law is infinite (the mean grows "
    "like (d_out/l)(exp(beta^2) - 1) log l) and the first exp(2 beta^2) tokens are outside the Gaussian regime "
    "at every length. Without the first tokens the law exists and real causal softmax approaches it: use "
    "freeprob.attention.causal_attention_law(beta, skip=1/10) (one head) and check_causal, or on the command "
    "line freeprob attention --causal [--skip 1/10] and freeprob attention check --causal; "
    "freeprob.attention.sample_causal samples the real layer."
)


#: Where the eigenvectors of the token covariance lie with respect to the tokens (docs/attention.md, "Real inputs").
INPUT_POSITIONS = ("generic", "diagonal")

#: The Monte-Carlo evidence of the refusal of ``input_position="diagonal"``: benchmarks/real_inputs_evidence.py
#: (spectrum {1/4: 1/2, 7/4: 1/2}, one head, beta = 1, sizes N = 200..1600, seed 1), filled in from its output.
_DIAGONAL = (
    "input_position='diagonal' is refused: with the token covariance diagonal in the token basis, the score "
    "beta S_ij has variance beta^2 lambda_i lambda_j, which varies from token to token, so the isotropic Gaussian "
    "equivalent (beta S + c Z)/sqrt(l) is wrong. {evidence} Use input_position='generic' (the default: token "
    "covariance O diag(spectrum) O^T with O Haar), or sample the real layer with "
    "freeprob.attention.sample_attention(..., input_position='diagonal'); docs/attention.md, 'Real inputs'."
)

#: The measured numbers quoted by the refusal (see :data:`_DIAGONAL`).
DIAGONAL_EVIDENCE = (
    "Measured (benchmarks/real_inputs_evidence.py: one head, beta = 1, widths 1/2, spectrum {1/4: 1/2, 7/4: 1/2}, "
    "N = 200, 400, 800, 1600, seed 1): generic inputs pass the multi-size check (mean 2.9e-3 +- 1.5e-2 from the "
    "law's 1.1404, 0.19 se); diagonal inputs exceed the law's mean by 2.57, 3.94, 5.28, 6.72, extrapolated "
    "11.0 +- 0.26 (42.9 se)."
)


def read_input_spectrum(value):
    """A token-covariance spectrum: ``((value, weight), ...)`` exact, values positive, weights summing to 1.

    ``value`` is a mapping value -> weight (``{"1/4": "1/2", "7/4": "1/2"}``)
    or the text ``"1/4:1/2,7/4:1/2"`` (comma-separated ``VALUE:WEIGHT``
    pieces, each number read by :func:`freeprob._numbers.read_number`).

    Examples
    --------
    >>> read_input_spectrum("1/4:1/2, 7/4:1/2")
    ((1/4, 1/2), (7/4, 1/2))
    >>> read_input_spectrum({1: 1})
    ((1, 1),)
    >>> read_input_spectrum("1/4:1/2,7/4")
    Traceback (most recent call last):
    ...
    freeprob._errors.DomainError: input spectrum: the piece '7/4' is not VALUE:WEIGHT (write the spectrum as comma-separated VALUE:WEIGHT pieces, e.g. 1/4:1/2,7/4:1/2)
    """
    what = "input spectrum"
    if isinstance(value, str):
        pairs = []
        for piece in value.split(","):
            parts = piece.strip().split(":")
            if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
                raise DomainError(f"{what}: the piece {piece.strip()!r} is not VALUE:WEIGHT (write the spectrum as "
                                  f"comma-separated VALUE:WEIGHT pieces, e.g. 1/4:1/2,7/4:1/2)")
            pairs.append((read_number(parts[0].strip(), what=f"{what}: the value of the piece {piece.strip()!r}"),
                          read_number(parts[1].strip(), what=f"{what}: the weight of the piece {piece.strip()!r}")))
        value = pairs
    elif isinstance(value, dict):
        value = list(value.items())
    spectrum = read_spectrum(value, what)
    for a, _ in spectrum:
        if not a > 0:
            raise DomainError(f"{what}: the value {a} is not positive; a token covariance X X^T has positive "
                              f"eigenvalues (drop the zero ones with their weight and shorten l instead)")
    return spectrum


def input_spectrum_value(spectrum):
    """``(m1, m2)`` of a token-covariance spectrum ``((value, weight), ...)``: ``sum w a`` and ``sum w a^2``."""
    m1 = sympy.nsimplify(sum((w * a for a, w in spectrum), sympy.Integer(0)))
    m2 = sympy.nsimplify(sum((w * a ** 2 for a, w in spectrum), sympy.Integer(0)))
    return m1, m2


def positive_int(name, value):
    """``value`` as an int, or DomainError naming ``name`` (bools and non-integers refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise DomainError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def beta_value(beta):
    """The exact nonzero inverse temperature (read by :func:`freeprob._numbers.read_number`)."""
    b = read_number(beta, what="beta")
    if b == 0:
        raise DomainError("beta must be nonzero: at beta = 0 softmax is uniform and the centered output is 0")
    return b


def _ratio_value(value, name):
    v = read_number(value, what=f"ratio {name}")
    if not v > 0:
        raise DomainError(f"ratio {name} must be positive, got {value!r}")
    return v


def _gqa_groups(name, pattern):
    """``G`` of a normalized ``gqa:G`` pattern name (DomainError when it is not a positive integer)."""
    text = name[4:]
    if not text.isdigit() or int(text) < 1:
        raise DomainError(f"pattern {pattern!r}: the group count G in 'gqa:G' must be a positive integer")
    return int(text)


def groups_divide(heads, pattern):
    """Whether ``heads`` can be split as ``pattern`` asks: False only for ``gqa:G`` with ``G`` not dividing ``H``.

    Other problems of the pattern (unknown name, malformed ``G``) are left to
    :func:`head_plan`, which raises on them.

    Examples
    --------
    >>> groups_divide(4, "gqa:2"), groups_divide(3, "gqa:2"), groups_divide(3, "mqa")
    (True, False, True)
    """
    if not isinstance(pattern, str):
        return True
    name = pattern.strip().lower().partition("+")[0]
    if not name.startswith("gqa:"):
        return True
    text = name[4:]
    if not text.isdigit() or int(text) < 1:
        return True
    return heads % int(text) == 0


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
        An unknown pattern, or ``H`` not divisible by ``G``
        (:func:`groups_divide` tells beforehand).
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
        groups = _gqa_groups(name, pattern)
        if not groups_divide(heads, name):
            raise DomainError(f"pattern {pattern!r}: {heads} heads cannot be split into {groups} equal groups "
                              f"(H must be divisible by G)")
        size = heads // groups
        return f"gqa:{groups}", groups, [(h, h // size, h // size) for h in hs]
    raise DomainError(f"unknown sharing pattern {pattern!r}; expected one of {', '.join(PATTERNS)}")


@dataclass(frozen=True)
class ValueCoupling:
    """Values that depend on the keys: ``V_h = a K_h M_h / sqrt(l) + b V'_h``.

    ``K_h`` is the head's key matrix (``l x d_h``, unit entries), ``V'_h``
    the value matrix the sharing pattern gives the head (``l x d_v``, entry
    variance ``1/l``), and the coupling ``M_h`` (``d_h x d_v``) is

    * ``"identity"``: ``M_h = I`` (deterministic; needs ``d_v = d_h``);
      ``a = 1, b = 0`` is the pattern ``tied-kv``;
    * ``"gaussian"``: iid ``N(0, 1/d_h)`` entries, independent across heads
      and of everything else (a random coupling).

    Either way ``K_h M_h / sqrt(l)`` has entries of variance ``1/l``, like
    ``V'_h``, so ``V_h`` has entry variance ``(a^2 + b^2)/l``; ``a = 0``
    leaves the pattern's own values (times ``b``). Written
    ``kv-KIND:A:B`` (:attr:`spec`) after a sharing pattern and a ``+``.

    Attributes
    ----------
    kind : str
        ``"identity"`` or ``"gaussian"``.
    a, b : sympy.Expr
        Exact real weights, not both zero.
    """

    kind: str
    a: sympy.Expr
    b: sympy.Expr

    @property
    def spec(self):
        """``kv-KIND:A:B``, the spelling read back by :func:`split_pattern`."""
        return f"kv-{self.kind}:{self.a}:{self.b}"


def split_pattern(pattern):
    """A pattern ``SHARING[+kv-KIND:A:B]`` split into the sharing name and a :class:`ValueCoupling` (or None).

    ``SHARING`` is one of :data:`PATTERNS` (``mha`` when the pattern starts
    with ``kv-``); ``KIND`` one of :data:`COUPLINGS`; ``A`` and ``B`` exact
    real numbers (``1/2``, ``sqrt(2)/2``, ``0.5``), not both zero. The
    sharing name is returned as given (lower case, stripped): :func:`head_plan`
    checks it.

    Examples
    --------
    >>> split_pattern("mqa+kv-gaussian:1:1/2")
    ('mqa', ValueCoupling(kind='gaussian', a=1, b=1/2))
    >>> split_pattern("kv-identity:1:0")
    ('mha', ValueCoupling(kind='identity', a=1, b=0))
    >>> split_pattern("mha")
    ('mha', None)

    Raises
    ------
    DomainError
        A malformed coupling, an unknown kind, non-real or zero weights,
        or a coupling added to ``tied-kv`` (which is already the coupling
        ``kv-identity:1:0``).
    """
    if not isinstance(pattern, str):
        raise DomainError(f"pattern must be a string among {PATTERNS}, got {pattern!r}")
    name = pattern.strip().lower()
    if name.startswith("kv-"):
        name = "mha+" + name
    sharing, plus, rest = name.partition("+")
    sharing = sharing.strip()
    if not plus:
        return sharing, None
    usage = (f"pattern {pattern!r}: a value coupling is written SHARING+kv-KIND:A:B with KIND one of "
             f"{', '.join(COUPLINGS)} and exact weights A, B (V_h = A K_h M_h / sqrt(l) + B V'_h), "
             f"e.g. mha+kv-gaussian:1:1")
    parts = rest.strip().split(":")
    if len(parts) != 3 or not parts[0].startswith("kv-"):
        raise DomainError(usage)
    kind = parts[0][3:]
    if kind not in COUPLINGS:
        raise DomainError(f"{usage}; got the kind {kind!r}")
    a = read_number(parts[1].strip(), what=f"pattern {pattern!r}: the coupling weight A")
    b = read_number(parts[2].strip(), what=f"pattern {pattern!r}: the weight B of the independent values")
    if a == 0 and b == 0:
        raise DomainError(f"pattern {pattern!r}: A = B = 0 gives zero values; at least one weight must be nonzero")
    if sharing == "tied-kv":
        raise DomainError(f"pattern {pattern!r}: tied-kv is already the coupling kv-identity:1:0; couple the values "
                          f"of another pattern (mha+kv-identity:1:0 is tied-kv)")
    return sharing, ValueCoupling(kind, a, b)


@dataclass(frozen=True)
class AttentionConfig:
    """One attention configuration; exact values, hashable.

    Attributes
    ----------
    heads : int
    pattern : str
        The sharing pattern, normalized: ``mha``, ``mqa``, ``gqa:G``,
        ``shared-v`` or ``tied-kv``.
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
    coupling: ValueCoupling = None
    input_spectrum: tuple = None
    input_position: str = "generic"

    @property
    def spec(self):
        """The pattern with its value coupling, ``mha+kv-gaussian:1:1`` (the pattern alone without one)."""
        return self.pattern if self.coupling is None else f"{self.pattern}+{self.coupling.spec}"

    def value_coupling(self):
        """The effective :class:`ValueCoupling`: ``tied-kv`` is ``kv-identity:1:0``; None for plain values."""
        if self.pattern == "tied-kv":
            return ValueCoupling("identity", sympy.Integer(1), sympy.Integer(0))
        return self.coupling

    @property
    def value_width_is_key_width(self):
        """Whether the values are ``l x d_h`` (an identity coupling, tied-kv): then ``d_v`` is ``d_h``."""
        coupling = self.value_coupling()
        return coupling is not None and coupling.kind == "identity"

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
        """``attention-<pattern>-h<H>`` (``gqa:2`` written ``gqa2``; a coupling adds ``-kv-<kind>``)."""
        kv = "" if self.coupling is None else f"-kv-{self.coupling.kind}"
        real = "" if self.input_spectrum is None else "-real-input"
        return f"attention-{self.pattern.replace(':', '')}{kv}{real}-h{self.heads}"

    @property
    def score_beta(self):
        """``beta m1(Sigma)``: the standard deviation of the scores ``beta S_ij`` (``beta`` for orthonormal inputs).

        The regime of the equivalence is that of ``beta`` at this value: the
        entry variance of the scores is ``beta^2 m1(Sigma)^2``
        (docs/attention.md, "Real inputs").
        """
        if self.input_spectrum is None:
            return self.beta
        return self.beta * input_spectrum_value(self.input_spectrum)[0]

    @property
    def score_beta_name(self):
        """How regime messages name :attr:`score_beta`: ``"beta"``, or ``"beta m1(Sigma)"`` with both factors."""
        if self.input_spectrum is None:
            return "beta"
        return f"beta m1(Sigma) (beta = {self.beta}, m1(Sigma) = {input_spectrum_value(self.input_spectrum)[0]})"

    @property
    def input_text(self):
        """The token-covariance spectrum as ``VALUE:WEIGHT,...`` (None for orthonormal inputs)."""
        if self.input_spectrum is None:
            return None
        return ",".join(f"{a}:{w}" for a, w in self.input_spectrum)

    @property
    def ratios(self):
        """``{name: exact ratio}`` of the dimensions of the expression."""
        out = {"l": self.l, "d_h": self.d_h, "d_v": self.d_v, "d_out": self.d_out}
        if self.value_width_is_key_width:
            del out["d_v"]
        return out

    def label(self):
        """A short description for tables."""
        inputs = "" if self.input_spectrum is None else f" inputs={self.input_text} ({self.input_position})"
        return (f"{self.spec} H={self.heads} beta={self.beta} l={self.l} d_h={self.d_h} d_v={self.d_v} "
                f"d_out={self.d_out}{inputs}")


def attention_config(heads=1, pattern="mha", beta=1, *, l=1, d_h=DEFAULT_WIDTH, d_v=None, d_out=DEFAULT_WIDTH,
                     causal=False, input_spectrum=None, input_position="generic"):
    """Validate a configuration.

    Parameters
    ----------
    heads : int
        Number of heads ``H``.
    pattern : str
        ``mha``, ``mqa``, ``gqa:G``, ``shared-v``, ``tied-kv`` (``tied-qk`` is
        refused), optionally followed by a value coupling ``+kv-KIND:A:B``
        (:class:`ValueCoupling`, :func:`split_pattern`): values
        ``V_h = A K_h M_h / sqrt(l) + B V'_h`` with ``M_h = I``
        (``identity``) or Gaussian (``gaussian``).
    beta : real
        Inverse temperature (nonzero); floats are read by their shortest
        decimal (``0.1 -> 1/10``).
    l, d_h, d_v, d_out : real, optional
        Ratios of the sequence length, the query/key width per head, the
        value width per head and the output width. Default ``l = 1``,
        ``d_h = d_out = 1/2``, ``d_v = d_h``.
    causal : bool, optional
        The causal mask (query ``i`` attends to keys ``j <= i``). Refused
        here (see Raises); its law without the first tokens is
        :func:`~freeprob.attention.causal_attention_law` (docs/causal.md).
    input_spectrum : dict or str, optional
        Real inputs: the limiting spectrum of the token covariance
        ``Sigma = X X^T`` (value -> weight, or ``"1/4:1/2,7/4:1/2"``;
        :func:`read_input_spectrum`), with ``Q_h = X W_Q^h``, ``K_h = X W_K^h``,
        ``V_h = X W_V^h``. Default None: orthonormal rows (``Sigma = I``).
    input_position : {"generic", "diagonal"}, optional
        Where the eigenvectors of ``Sigma`` lie: ``"generic"`` (Haar, the
        default; the Gaussian equivalent holds) or ``"diagonal"`` (aligned
        with the tokens; refused, see Raises). Docs: docs/attention.md, "Real inputs".

    Returns
    -------
    AttentionConfig

    Raises
    ------
    DomainError
        Bad sizes, ``beta = 0``, unknown pattern, ``H`` not divisible by ``G``,
        more than :data:`~freeprob.expr.modelfile.MAX_TERMS` heads.
    ShapeError
        ``tied-kv`` or an identity coupling with ``d_v != d_h``.
    RegimeError
        ``tied-qk``.
    EquivalenceError
        ``causal=True`` (condition ``"causal-mask"``): the Gaussian
        equivalent of masked softmax is a masked score product with an
        unbounded variance profile, whose law over all rows has no finite
        moment; without the first tokens it is
        :func:`~freeprob.attention.causal_attention_law` (docs/causal.md). ``input_position=
        "diagonal"`` (condition ``"input-position"``): the score variance is
        then a profile over the tokens and the Monte-Carlo of real softmax
        leaves the isotropic law (the numbers are in the message).

    Examples
    --------
    >>> cfg = attention_config(2, "GQA:2", "1.5")
    >>> cfg.pattern, cfg.groups, cfg.beta, cfg.d_v
    ('gqa:2', 2, 3/2, 1/2)
    >>> attention_config(2, "mqa+kv-gaussian:1:1/2").spec
    'mqa+kv-gaussian:1:1/2'
    >>> attention_config(1, "mha", 1, causal=True)
    Traceback (most recent call last):
      ...
    freeprob._errors.EquivalenceError: causal=True (each query attends to earlier tokens only) has no law of the form of this configuration, ...
    """
    if not isinstance(causal, bool):
        raise DomainError(f"causal must be True or False, got {causal!r}")
    if causal:
        raise EquivalenceError(_CAUSAL, condition="causal-mask")
    if input_position not in INPUT_POSITIONS:
        raise DomainError(f"input_position must be one of {', '.join(INPUT_POSITIONS)}, got {input_position!r}")
    spectrum = None if input_spectrum is None else read_input_spectrum(input_spectrum)
    if input_position == "diagonal" and spectrum is not None and len(spectrum) > 1:  # one value: Sigma = a I
        raise EquivalenceError(_DIAGONAL.format(evidence=DIAGONAL_EVIDENCE), condition="input-position")
    heads = positive_int("heads", heads)
    if heads > MAX_TERMS:
        # the model file of the configuration (emit_model) holds at most MAX_TERMS terms
        raise DomainError(f"heads must be at most {MAX_TERMS} (the limit on the terms of a model file), got {heads}")
    sharing, coupling = split_pattern(pattern)
    name, groups, _ = head_plan(sharing, heads)
    b = beta_value(beta)
    lr = _ratio_value(l, "l")
    dh = _ratio_value(d_h, "d_h")
    dv = dh if d_v is None else _ratio_value(d_v, "d_v")
    do = _ratio_value(d_out, "d_out")
    if name == "tied-kv" and dv != dh:
        raise ShapeError(f"pattern 'tied-kv' sets V_h = K_h/sqrt(l), so it needs d_v = d_h; got d_v = {dv}, d_h = {dh}")
    if coupling is not None and coupling.kind == "identity" and dv != dh:
        raise ShapeError(f"pattern {pattern!r}: the identity coupling V_h = a K_h / sqrt(l) + b V'_h needs d_v = d_h; "
                         f"got d_v = {dv}, d_h = {dh} (a gaussian coupling M_h is d_h x d_v)")
    return AttentionConfig(heads, name, groups, b, lr, dh, dv, do, coupling, spectrum, input_position)
