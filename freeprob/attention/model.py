"""Multi-head self-attention: the Gaussian-equivalent model of every head allocation and sharing pattern.

The public contract (docs/math.md section 6, issue 3). The law reported is that of
the squared singular values, over its ``l`` rows, of the centered output

    Y = sum_h sqrt(l) (A_h - 1 1^T / l) V_h W_h ,

with, for each head ``h = 1..H``, ``Q_h, K_h`` (``l x d_h``) iid ``N(0, 1)``,
``S_h = Q_h K_h^T / sqrt(d_h)``, ``A_h = softmax(beta S_h)`` row-wise,
``V_h`` (``l x d_v``) iid ``N(0, 1/l)``, ``W_h`` (``d_v x d_out``) iid
``N(0, 1/(H d_v))``; for ``tied-kv``, ``V_h = K_h / sqrt(l)`` and
``d_v = d_h``. The centred softmax ``sqrt(l)(A_h - 1 1^T/l)`` is the node
``softmax(beta S_h)`` of the expression language
(:func:`freeprob.expr.softmax.softmax`), which the engine replaces by its
Gaussian equivalent

    (beta S_h + c Z_h) / sqrt(l),     Z_h (l x l) iid N(0, 1), independent across heads,

``c^2 = exp(beta^2) - 1 - beta^2`` derived by the step that derives every
entrywise node's coefficients (the Gaussian moments of ``exp`` at the entry
variance ``beta^2`` of ``beta S_h``, divided by the row normalization);
nothing here types them in. Sizes are ratios (``l``, ``d_h``, ``d_v``, ``d_out`` relative to a common
scale ``N``), the inverse temperature ``beta`` a parameter.

Sharing patterns are realized by reusing the same leaf of the expression
graph: ``mha`` (independent heads), ``mqa`` (one ``K`` for all heads),
``gqa:G`` (heads split into ``G`` contiguous groups, one ``K`` and one ``V``
per group), ``shared-v`` (one ``V``), ``tied-kv`` (``V_h = K_h/sqrt(l)``).
The output projections ``W_h`` and the queries ``Q_h`` are never shared.
Values that depend on the keys in general are a coupling added to a pattern
(:class:`~freeprob.attention.ValueCoupling`, ``"mha+kv-gaussian:1:0"``):
``V_h = a K_h M_h / sqrt(l) + b V'_h``, ``V'_h`` the pattern's values and
``M_h`` the identity (``tied-kv`` is ``a = 1, b = 0``) or a Gaussian
``d_h x d_v`` matrix of variance ``1/d_h``, one per head (leaves ``M_h``).
``tied-qk`` is refused (:class:`~freeprob.RegimeError`).

The expression is built directly with :func:`freeprob.gaussian`, ``@`` and
sympy scalars (:func:`attention_expression`). Every configuration also
serializes to an ordinary model file (:func:`model_text`,
:func:`emit_model`), on which ``freeprob equations/density/law/check`` work
unchanged; the tests check that the file parses back to the same expression.
"""

from pathlib import Path

import sympy

from .._errors import DomainError
from ..expr.model import toml_string
from ..expr.modelfile import generated_noise_name, load_model
from ..expr.softmax import softmax
from ..expr.tree import deterministic, gaussian
from ..law import singular_value_law
from .config import DEFAULT_WIDTH, attention_config, input_spectrum_value
from .regime import check_config_regime, check_regime

__all__ = [
    "attention_expression",
    "attention_law",
    "emit_model",
    "head_groups",
    "input_factor",
    "model_text",
]


def _dimension(name):
    return sympy.Symbol(name, positive=True)


def input_factor(cfg):
    """The inputs ``X = Sigma^{1/2}`` (``l x l``, deterministic, spectrum ``sqrt(a): w``) of real inputs, or None.

    With real inputs ``Q_h = X W_Q^h`` has the law of ``Sigma^{1/2} G`` for
    ``G`` iid Gaussian (its columns are iid ``N(0, X X^T)``), so the builder
    writes ``X @ Q_h``, ``X @ K_h``, ``X @ V_h`` with ``X`` the symmetric
    square root of the token covariance (docs/attention.md, "Real inputs").

    >>> from freeprob.attention import attention_config
    >>> input_factor(attention_config(1, input_spectrum="1/4:1/2,9/4:1/2")).spectrum
    ((1/2, 1/2), (3/2, 1/2))
    """
    if cfg.input_spectrum is None:
        return None
    return deterministic("X", (_dimension("l"), _dimension("l")),
                         {sympy.sqrt(a): w for a, w in cfg.input_spectrum})


def attention_expression(cfg):
    """The Gaussian-equivalent expression ``Y_lin`` of a configuration (an :class:`~freeprob.expr.tree.Expr`).

    Built with :func:`freeprob.gaussian`, ``@``, sympy scalars and the
    softmax node (:func:`freeprob.expr.softmax.softmax`, whose Gaussian
    equivalent the engine reduces). Its scalars are the dimension symbols ``l, d_h, d_v, d_out`` (positive)
    and the parameter ``beta`` (real); sharing is the reuse of one leaf.

    Parameters
    ----------
    cfg : AttentionConfig
        From :func:`~freeprob.attention.attention_config`; only its heads and
        pattern shape the expression (values enter the law, not the
        expression).

    Returns
    -------
    Expr

    Examples
    --------
    Leaf names are those of the model file (:func:`model_text`) once its
    sums are expanded: ``Q_h``, ``W_h`` for head ``h = 1..H`` and the
    Gaussian part of its softmax (``Z_softmax`` for head 1, ``Zh_softmax``),
    ``K_g``/``V_g`` for the key/value of group ``g`` (of head ``h`` for mha),
    and ``K`` (mqa, gqa:1) or ``V`` (shared-v) for one matrix shared by all of
    several heads.

    >>> from freeprob.attention import attention_config
    >>> expr = attention_expression(attention_config(2, "mqa"))
    >>> sorted(m.name for m in expr.leaves())
    ['K', 'Q_1', 'Q_2', 'V_1', 'V_2', 'W_1', 'W_2', 'Z2_softmax', 'Z_softmax']
    >>> expr.shape
    (l, d_out)
    """
    beta = sympy.Symbol("beta", real=True)
    l, d_h, d_v, d_out = (_dimension(n) for n in ("l", "d_h", "d_v", "d_out"))
    coupling = cfg.value_coupling()
    vdim = d_h if cfg.value_width_is_key_width else d_v
    H = cfg.heads
    inputs = input_factor(cfg)

    def fed(matrix):  # X @ matrix on real inputs
        return matrix if inputs is None else inputs @ matrix

    terms = []
    for h in range(H):
        key = fed(gaussian("K" if _one_key(cfg) else f"K_{cfg.key_index(h)}", (l, d_h)))
        query = fed(gaussian(f"Q_{h + 1}", (l, d_h)))
        independent = None
        if coupling is None or coupling.b != 0:
            vname = "V" if _one_value(cfg) else f"V_{cfg.value_index(h)}"
            independent = fed(gaussian(vname, (l, vdim), 1 / l))
        if coupling is None:
            value = independent
        else:
            mixer = None if coupling.kind == "identity" else gaussian(f"M_{h + 1}", (d_h, d_v), 1 / d_h)
            value = _coupled_value(coupling, key, mixer, independent, sympy.sqrt(l))
        out = gaussian(f"W_{h + 1}", (vdim, d_out), 1 / (H * vdim))
        # the file names the Gaussian leaf of its h-th softmax Z_softmax, Z2_softmax, ...: so does the builder
        mix = softmax(beta * query @ key.T / sympy.sqrt(d_h), noise=generated_noise_name("softmax", h + 1))
        terms.append(mix @ value @ out)
    expr = terms[0]
    for term in terms[1:]:
        expr = expr + term
    return expr


def _coupled_value(coupling, key, mixer, independent, root_l):
    """``a K M / sqrt(l) + b V'`` (``M`` the Gaussian ``mixer``, or the identity when None).

    Built in the order the model-file text of :func:`_value_text` is read,
    ``((a K) @ M) / sqrt(l)``, so that the file loads back to this expression.
    """
    parts = []
    if coupling.a != 0:
        coupled = key if coupling.a == 1 else coupling.a * key
        if mixer is not None:
            coupled = coupled @ mixer
        parts.append(coupled / root_l)
    if coupling.b != 0:
        parts.append(independent if coupling.b == 1 else coupling.b * independent)
    value = parts[0]
    for part in parts[1:]:
        value = value + part
    return value


def _weight_text(w):
    """A weight of the coupling as a factor: a positive integer bare, anything else in parentheses."""
    return str(w) if w.is_Integer and w > 0 else f"({w})"


def _value_text(coupling, key, independent, head):
    """The text of :func:`_coupled_value` (``(K[h] / sqrt(l))`` for tied-kv, as before couplings existed)."""
    coupled = key if coupling.kind == "identity" else f"{key} @ M[{head}]"
    parts = []
    if coupling.a != 0:
        weight = "" if coupling.a == 1 else f"{_weight_text(coupling.a)} * "
        parts.append(f"{weight}{coupled} / sqrt(l)")
    if coupling.b != 0:
        weight = "" if coupling.b == 1 else f"{_weight_text(coupling.b)} * "
        parts.append(f"{weight}{independent}")
    return "(" + " + ".join(parts) + ")"


def _one_key(cfg):
    """Whether one key matrix ``K`` serves several heads (mqa, gqa:1 with two heads or more)."""
    return cfg.groups == 1 and cfg.heads > 1


def _one_value(cfg):
    """Whether one value matrix ``V`` serves several heads (shared-v with two heads or more)."""
    return cfg.pattern == "shared-v" and cfg.heads > 1


def _structure(cfg):
    """``(expression text, {constant: value text and comment}, {matrix: (shape, variance text, index or None)})``.

    The expression is written once with ``sum(...)`` over the heads
    (:mod:`freeprob.expr.modelfile`): one sum over ``h`` for every pattern but
    gqa, which sums over the groups ``g`` and the heads ``j`` of a group, head
    ``n*(g-1) + j``. Per-head matrices are families indexed by ``H``, per-group
    ones by ``G``; a matrix shared by several heads is a single matrix.
    """
    coupling = cfg.value_coupling()
    vdim = "d_h" if cfg.value_width_is_key_width else "d_v"
    grouped = cfg.pattern.startswith("gqa:")
    if grouped:
        indices = {"H": f"{cfg.heads}  # heads", "G": f"{cfg.groups}  # groups, one K and one V each",
                   "n": '"H/G"  # heads per group'}
        head, group, per_group = "n*(g-1) + j", "g", "G"
    else:
        indices = {"H": f"{cfg.heads}  # heads"}
        head, group, per_group = "h", "h", "H"
    mats = {"Q": (("l", "d_h"), "1", "H")}
    fed = "{}" if cfg.input_spectrum is None else "(X @ {})"  # real inputs: X @ Q[h], X @ K[h], X @ V[h]
    key = fed.format("K" if _one_key(cfg) else f"K[{group}]")
    mats["K"] = (("l", "d_h"), "1", None if _one_key(cfg) else per_group)
    value = fed.format("V" if _one_value(cfg) else f"V[{group}]")
    if coupling is None or coupling.b != 0:
        mats["V"] = (("l", vdim), "1/l", None if _one_value(cfg) else per_group)
    if coupling is not None:
        if coupling.kind == "gaussian":
            mats["M"] = (("d_h", "d_v"), "1/d_h", "H")
        value = _value_text(coupling, key, value, head)
    mats["W"] = ((vdim, "d_out"), f"1/(H*{vdim})", "H")
    term = f"softmax(beta * {fed.format(f'Q[{head}]')} @ {key}.T / sqrt(d_h)) @ {value} @ W[{head}]"
    text = f"sum(g, 1, G, sum(j, 1, n, {term}))" if grouped else f"sum(h, 1, H, {term})"
    return text, indices, mats


def _number_text(v):
    v = sympy.nsimplify(v)
    if v.is_Integer:
        return str(int(v))
    return '"' + str(v) + '"'


def model_text(cfg, name=None, description=None):
    """The TOML model file of a configuration (serialization only; see :mod:`freeprob.expr.modelfile`).

    The heads are written once, as ``sum(h, 1, H, ...)`` over indexed
    matrix families (``Q[h]``), so the file has the same few lines for any
    number of heads; loading it expands the sum to
    :func:`attention_expression` leaf for leaf.

    Parameters
    ----------
    cfg : AttentionConfig
    name : str, optional
        Default ``cfg.name``.
    description : str, optional

    Returns
    -------
    str

    Examples
    --------
    >>> from freeprob.attention import attention_config
    >>> text = model_text(attention_config(64, "gqa:8"))
    >>> print(next(line for line in text.splitlines() if line.startswith("expression")))
    expression = "sum(g, 1, G, sum(j, 1, n, softmax(beta * Q[n*(g-1) + j] @ K[g].T / sqrt(d_h)) @ V[g] @ W[n*(g-1) + j]))"
    """
    expr_text, indices, mats = _structure(cfg)
    name = name or cfg.name
    if description is None:
        shared = {"mha": "independent heads", "mqa": "one K for all heads", "shared-v": "one V for all heads",
                  "tied-kv": "V_h = K_h/sqrt(l)"}.get(cfg.pattern, f"one K and one V per group of "
                                                                  f"{cfg.heads // cfg.groups} heads")
        if cfg.coupling is not None:
            k = cfg.coupling
            shared += (f"; values V_h = a K_h M_h/sqrt(l) + b V'_h, a = {k.a}, b = {k.b}, "
                       + ("M_h = I" if k.kind == "identity" else "M_h Gaussian of variance 1/d_h, one per head"))
        description = (
            f"Gaussian equivalent of centered {cfg.heads}-head softmax attention, pattern {cfg.pattern} ({shared}): "
            f"squared singular values of sum_h softmax(beta Q_h K_h^T/sqrt(d_h)) V_h W_h, softmax(M) the centred "
            f"row-wise softmax sqrt(l)(A - 1 1^T/l), reduced as its Gaussian equivalent"
        )
        if cfg.input_spectrum is not None:
            description += (f"; real inputs X with token covariance X X^T of spectrum {cfg.input_text} (value:weight) "
                            f"in generic position, Q_h = X Q_h' and so on")
    inputs = "" if cfg.input_spectrum is None else f", input_spectrum={cfg.input_text!r}"
    lines = [
        f"# Generated by freeprob.attention.emit_model(heads={cfg.heads}, pattern={cfg.spec!r}, "
        f"beta={cfg.beta}, l={cfg.l}, d_h={cfg.d_h}, d_v={cfg.d_v}, d_out={cfg.d_out}{inputs}).",
        "# Contract: the law of the squared singular values, over its l rows, of",
        "#   Y = sum_h sqrt(l) (A_h - 1 1^T/l) V_h W_h,  A_h = softmax(beta Q_h K_h^T / sqrt(d_h)) row-wise,",
        "# written softmax(beta Q_h K_h^T / sqrt(d_h)); freeprob replaces it by its Gaussian equivalent",
        "# (beta S_h + c Z_h)/sqrt(l), c^2 = exp(beta^2) - 1 - beta^2 derived (see: freeprob equations)."
        if cfg.input_spectrum is None else
        "# (beta S_h + c Z_h)/sqrt(l), c^2 = exp(s) - 1 - s derived at the scores' entry variance s (see below).",
        "# The heads are written once, as a sum over indexed matrices: Q[h] is the leaf Q_h of head h.",
    ]
    if cfg.coupling is not None:
        lines.append("# Values depend on the keys: V_h = a K_h M_h / sqrt(l) + b V'_h (freeprob.attention.ValueCoupling).")
    if cfg.input_spectrum is not None:
        m1, _ = input_spectrum_value(cfg.input_spectrum)
        lines += [
            "# Real inputs: X = Sigma^(1/2) (l x l, deterministic), Sigma the token covariance X X^T of spectrum",
            f"# {cfg.input_text} (value:weight), in generic position (eigenvectors Haar with respect to the tokens);",
            f"# Q_h = X Q[h], K_h = X K[h], V_h = X V[h]. The scores have entry variance beta^2 m1(Sigma)^2, m1 = {m1},",
            "# and c^2 = exp(s) - 1 - s at s = beta^2 m1^2 (docs/attention.md, Real inputs).",
        ]
    lines += [
        f"name = {toml_string(name)}",
        f"description = {toml_string(description)}",
        'law = "squared-singular-values"',
        f"expression = {toml_string(expr_text)}",
        "",
        "[indices]",
    ]
    lines += [f"{k} = {v}" for k, v in indices.items()]
    lines += ["", "[dimensions]"]
    for dim, v in cfg.ratios.items():
        lines.append(f"{dim} = {_number_text(v)}")
    lines += ["", "[parameters]", f"beta = {_number_text(cfg.beta)}"]
    if cfg.input_spectrum is not None:
        lines += ["", "[matrices.X]", 'kind = "deterministic"', 'shape = ["l", "l"]', "", "[matrices.X.spectrum]"]
        lines += [f'"{sympy.sqrt(a)}" = "{w}"' for a, w in cfg.input_spectrum]
    for mname, (shape, var, index) in mats.items():
        lines += ["", f"[matrices.{mname}]", 'kind = "gaussian"', f'shape = ["{shape[0]}", "{shape[1]}"]',
                  f'variance = "{var}"']
        if index is not None:
            lines.append(f'index = "{index}"')
    return "\n".join(lines) + "\n"


def attention_law(heads=1, pattern="mha", beta=1, *, l=1, d_h=DEFAULT_WIDTH, d_v=None, d_out=DEFAULT_WIDTH,
                  seq_len=None, causal=False, input_spectrum=None, input_position="generic"):
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
        is refused. A value coupling may follow a ``+``:
        ``"mqa+kv-gaussian:1:1/2"`` gives ``V_h = K_h M_h/sqrt(l) + V'_h/2``
        (:class:`~freeprob.attention.ValueCoupling`).
    beta : real
        Inverse temperature, nonzero.
    l, d_h, d_v, d_out : real, optional
        Ratios (see :func:`attention_config`; default ``1, 1/2, d_h, 1/2``).
    seq_len : int, optional
        A finite sequence length the law is meant to describe; enables the
        regime checks of :func:`check_regime` at that length and at the
        query/key width ``seq_len * d_h / l``.
    causal : bool, optional
        The causal mask; refused here (see Raises): the law without the first
        tokens is :func:`~freeprob.attention.causal_attention_law`.
    input_spectrum : dict or str, optional
        Real inputs with this token-covariance spectrum (value -> weight;
        :func:`~freeprob.attention.attention_config`); default orthonormal rows.
    input_position : {"generic", "diagonal"}, optional
        ``"diagonal"`` is refused (EquivalenceError, condition
        ``"input-position"``); docs/attention.md, "Real inputs".

    Returns
    -------
    SpectralLaw
        A new law of :func:`attention_expression` with the configuration's
        ratios and ``beta`` (no law is shared between callers).

    Raises
    ------
    RegimeError
        For ``tied-qk`` (the diagonal of ``Q Q^T/sqrt(d_h)`` grows like
        ``sqrt(d_h)`` and softmax saturates on it), and, when ``seq_len`` is
        given, for ``exp(2 beta^2) > seq_len`` or ``seq_len d_h/l <= 4 beta^2``.
    EquivalenceError
        ``causal=True`` (condition ``"causal-mask"``): the Gaussian
        equivalent of masked softmax is a masked score product under an
        unbounded variance profile; its law over all rows has no finite
        moment. Without the first tokens it is
        :func:`~freeprob.attention.causal_attention_law` (docs/causal.md).
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
    >>> law.law, law.name
    ('squared-singular-values', 'attention-mqa-h2')
    >>> from freeprob import fmt
    >>> fmt(law.density("0.5", dps=30), 25)
    '0.2091383396098217134031242'
    """
    cfg = attention_config(heads, pattern, beta, l=l, d_h=d_h, d_v=d_v, d_out=d_out, causal=causal,
                           input_spectrum=input_spectrum, input_position=input_position)
    check_config_regime(cfg, seq_len)
    return singular_value_law(attention_expression(cfg), cfg.ratios, {"beta": cfg.beta}, name=cfg.name,
                              symmetry=head_groups(cfg))


def head_groups(cfg):
    """The exchangeable groups of heads of a configuration (term indices of :func:`attention_expression`).

    Heads that share a key (``gqa``) form a group; every other pattern is one
    group of all heads (``S_H``). The engine checks this declaration against
    the expression and verifies the symmetry before it quotients
    (:class:`~freeprob.reduce.reduction.Reduction`).

    Examples
    --------
    >>> from freeprob.attention import attention_config
    >>> head_groups(attention_config(4, "gqa:2")), head_groups(attention_config(3, "mqa"))
    (((0, 1), (2, 3)), ((0, 1, 2),))
    """
    if not cfg.pattern.startswith("gqa"):
        return (tuple(range(cfg.heads)),)
    groups = {}
    for h in range(cfg.heads):
        groups.setdefault(cfg.key_index(h), []).append(h)
    return tuple(tuple(g) for g in groups.values())


def emit_model(path, heads=1, pattern="mha", beta=1, *, name=None, description=None, **ratios):
    """Write the configuration as an ordinary model file and read it back.

    Parameters
    ----------
    path : str or Path
        Destination ``.toml`` file (overwritten).
    heads, pattern, beta, **ratios
        As :func:`attention_config` (``input_spectrum`` and
        ``input_position`` among the keywords).
    name, description : str, optional

    Returns
    -------
    Model
        The file as loaded by :func:`freeprob.load_model`.
    """
    cfg = attention_config(heads, pattern, beta, **ratios)
    check_regime(cfg.score_beta, name=cfg.score_beta_name)
    path = Path(path)
    if path.suffix != ".toml":
        raise DomainError(f"a model file must end in .toml, got {path}")
    path.write_text(model_text(cfg, name, description))
    return load_model(path)
