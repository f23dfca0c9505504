"""Monte-Carlo sampler of real multi-head softmax attention and of its Gaussian equivalent.

The law reported is that of the squared singular values, over the ``l`` rows,
of the centered multi-head attention output

    Y = sum_h sqrt(l) (A_h - 1 1^T / l) V_h W_h ,

with, for each head ``h``,

* ``Q_h, K_h`` (``l x d_h``) with iid ``N(0, 1)`` entries,
* ``S_h = Q_h K_h^T / sqrt(d_h)`` and ``A_h = softmax(beta S_h)`` row-wise,
* ``V_h`` (``l x d_v``) with iid ``N(0, 1/l)`` entries,
* ``W_h`` (``d_v x d_out``) with iid ``N(0, 1/(H d_v))`` entries,

independent across heads unless a sharing pattern ties them (docs/math.md
section 6). This is the setting of inputs ``X`` (``l x d``, ``d >= l``) with
orthonormal rows and Gaussian weights ``W^Q, W^K`` (``d x d_h``, variance 1),
``W^V`` (``d x d_v``, variance ``1/l``): ``Q = X W^Q`` is then exactly an
iid Gaussian matrix, since its rows have covariance ``X X^T = I``. The sampler
draws the Gaussian matrices directly; ``inputs="orthonormal"`` builds ``X``
and the weights instead, which gives the same distribution.

The Gaussian-equivalent (linear) surrogate replaces ``sqrt(l)(A_h - 1 1^T/l)``
by ``(mu1 S_h + c Z_h) / sqrt(l)`` with ``Z_h`` (``l x l``) iid ``N(0, 1)``,
independent across heads, where ``mu1 = beta`` and
``c^2 = exp(beta^2) - 1 - beta^2`` are the Hermite coefficients of the
normalized exponential ``exp(beta x - beta^2/2)``, derived by
:func:`freeprob.attention.softmax_coefficients`.
"""

import math
import numbers

import numpy as np
import sympy

from .._errors import DomainError, RegimeError, ShapeError
from ..montecarlo.sample import haar_matrix
from .config import INPUT_POSITIONS, head_plan, input_spectrum_value, read_input_spectrum, split_pattern
from .equivalence import softmax_coefficients

__all__ = ["attention_sizes", "config_sizes", "real_inputs", "sample_attention", "sample_config",
           "softmax_gaussian_equivalent"]


_TIED_QK_MESSAGE = (
    "pattern 'tied-qk' (Q_h = K_h, symmetric scores) is outside the regime of Gaussian "
    "equivalence: the diagonal of Q Q^T / sqrt(d_h) grows like sqrt(d_h), softmax saturates "
    "on it and the linear model (beta S + c Z)/sqrt(l) no longer describes the law. "
    "Pass allow_outside_regime=True to sample it anyway (to show the failure)."
)


def softmax_gaussian_equivalent(beta):
    """``(mu1, c)`` of the normalized exponential at inverse temperature ``beta``, in double precision.

    Evaluates the symbolic coefficients of ``f(x) = exp(beta x - beta^2/2)``
    (``mu1 = beta``, ``c^2 = exp(beta^2) - 1 - beta^2``, derived by
    integration in :func:`freeprob.attention.softmax_coefficients`) at the
    exact binary value of ``beta``, then rounds to float.

    Parameters
    ----------
    beta : float
        Inverse temperature.

    Returns
    -------
    mu1, c : float

    Examples
    --------
    >>> mu1, c = softmax_gaussian_equivalent(1.0)
    >>> print(f"{mu1:.12f} {c:.12f}")
    1.000000000000 0.847515090402
    """
    beta = _check_beta(beta)
    sym, mu1, c = softmax_coefficients()
    c2 = c ** 2
    exact = sympy.Rational(beta)
    mu1_value = float(sympy.N(mu1.xreplace({sym: exact}), 20))
    c2_value = float(sympy.N(c2.xreplace({sym: exact}), 20))
    return mu1_value, math.sqrt(c2_value)


def _check_size(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise DomainError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _check_beta(beta):
    if isinstance(beta, bool) or not isinstance(beta, numbers.Real):
        raise DomainError(f"beta must be a real number, got {beta!r}")
    beta = float(beta)
    if not math.isfinite(beta):
        raise DomainError(f"beta must be finite, got {beta!r}")
    return beta


def _centered_softmax(scores, beta):
    """``sqrt(l) (softmax(beta S) - 1 1^T / l)`` row-wise, in place on ``scores``.

    Stable for large ``beta``: the row maximum is subtracted before ``exp``,
    so every exponent is ``<= 0`` and every row sum is ``>= 1``.
    """
    l = scores.shape[1]
    scores *= beta
    scores -= scores.max(axis=1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=1, keepdims=True)
    scores -= 1.0 / l
    scores *= math.sqrt(l)
    return scores


def sample_attention(l, heads, d_h, d_v, d_out, beta, pattern="mha", *, rng=None, linear=False,
                     inputs="gaussian", d_model=None, allow_outside_regime=False, input_spectrum=None,
                     input_position="generic"):
    """Squared singular values of one sample of centered multi-head softmax attention.

    Samples ``Y = sum_h sqrt(l) (A_h - 1 1^T/l) V_h W_h`` (see the module
    docstring for the exact distribution of every matrix) and returns the
    squared singular values of ``Y`` over its ``l`` rows.

    Parameters
    ----------
    l : int
        Sequence length (rows of ``Q_h, K_h, V_h`` and of ``Y``).
    heads : int
        Number of heads ``H``.
    d_h : int
        Query/key width per head.
    d_v : int
        Value width per head.
    d_out : int
        Output width (columns of ``W_h`` and ``Y``).
    beta : float
        Inverse temperature of the softmax.
    pattern : str, optional
        Sharing pattern: ``"mha"`` (independent heads, default), ``"mqa"``
        (one ``K`` for all heads), ``"gqa:G"`` (heads split into ``G``
        contiguous groups, one ``K`` and one ``V`` per group; ``H`` must be
        divisible by ``G``), ``"shared-v"`` (one ``V`` for all heads),
        ``"tied-kv"`` (``V_h = K_h / sqrt(l)``, needs ``d_v == d_h``),
        ``"tied-qk"`` (``Q_h = K_h``; outside the regime, see Raises).
        The output weights ``W_h`` are never shared. A value coupling may
        follow, ``"mha+kv-gaussian:1:1"``
        (:class:`~freeprob.attention.ValueCoupling`): the values are then
        ``V_h = a K_h M_h / sqrt(l) + b V'_h`` with ``V'_h`` the pattern's
        values and ``M_h`` the identity or a fresh Gaussian ``d_h x d_v``
        matrix of variance ``1/d_h`` per head.
    rng : None, int or numpy.random.Generator, optional
        Seed or generator, normalized by :func:`numpy.random.default_rng`.
    linear : bool, optional
        If True, sample the Gaussian-equivalent surrogate: ``sqrt(l)(A_h -
        1 1^T/l)`` is replaced by ``(mu1 S_h + c Z_h)/sqrt(l)``, ``Z_h``
        iid ``N(0, 1)`` (``l x l``), independent across heads, with ``mu1 =
        beta`` and ``c^2 = exp(beta^2) - 1 - beta^2``
        (:func:`softmax_gaussian_equivalent`).
    inputs : {"gaussian", "orthonormal"}, optional
        ``"gaussian"`` draws ``Q_h, K_h, V_h`` directly. ``"orthonormal"``
        draws inputs ``X`` (``l x d_model``) with orthonormal rows (QR of a
        Gaussian matrix) and Gaussian weights ``W^Q, W^K`` (``d_model x
        d_h``, variance 1) and ``W^V`` (``d_model x d_v``, variance ``1/l``),
        and sets ``Q_h = X W^Q_h``, ...: the same distribution.
    d_model : int, optional
        Input width for ``inputs="orthonormal"``; default ``l``; must be
        ``>= l``.
    allow_outside_regime : bool, optional
        Accept ``pattern="tied-qk"`` (Monte-Carlo outside the regime of
        validity, to show the failure of Gaussian equivalence).
    input_spectrum : dict or str, optional
        Real inputs: ``X`` (``l x l``) with token covariance ``X X^T =
        Sigma`` of this limiting spectrum (value -> weight, or
        ``"1/4:1/2,7/4:1/2"``; each value on the tokens whose midpoint
        ``(i + 1/2)/l`` falls in its cell), and ``Q_h = X G_Q^h``, ``K_h = X
        G_K^h``, ``V_h = X G_V^h`` with the Gaussian matrices above. The
        linear surrogate then uses ``c^2 = exp(s) - 1 - s`` at ``s = beta^2
        m1(Sigma)^2`` (docs/attention.md, "Real inputs").
    input_position : {"generic", "diagonal"}, optional
        ``"generic"``: ``X = O diag(sqrt(values)) O^T`` with one Haar ``O``
        per sample; ``"diagonal"``: ``X`` diagonal in the token basis (the
        case the law refuses; sampled to show the failure).

    Returns
    -------
    numpy.ndarray
        ``l`` squared singular values of ``Y``, sorted ascending; when
        ``d_out < l`` the ``l - d_out`` structural zeros are included.

    Raises
    ------
    DomainError
        For non-positive sizes, a non-finite ``beta``, an unknown pattern,
        ``gqa:G`` with ``H`` not divisible by ``G``.
    ShapeError
        For ``tied-kv`` or an identity coupling with ``d_v != d_h``, or
        ``d_model < l``.
    RegimeError
        For ``tied-qk`` unless ``allow_outside_regime=True``: the diagonal of
        ``Q Q^T/sqrt(d_h)`` grows like ``sqrt(d_h)`` and softmax saturates on
        it, so Gaussian equivalence fails.

    Notes
    -----
    Heads are computed one at a time and accumulated into ``Y``: memory is a
    few ``l x l`` and ``l x max(d_h, d_v, d_out)`` arrays (about 0.3 GB at
    ``l = 3000``), whatever ``H``.

    Examples
    --------
    >>> ev = sample_attention(60, 2, 30, 30, 30, 1.0, rng=0)
    >>> ev.shape, bool(ev[:30].max() == 0), bool(ev[30] > 0)
    ((60,), True, True)
    >>> lin = sample_attention(60, 2, 30, 30, 30, 1.0, rng=0, linear=True)
    >>> lin.shape
    (60,)
    """
    l = _check_size("l", l)
    heads = _check_size("heads", heads)
    d_h = _check_size("d_h", d_h)
    d_v = _check_size("d_v", d_v)
    d_out = _check_size("d_out", d_out)
    beta = _check_beta(beta)
    sharing, coupling = split_pattern(pattern)
    name, _, plan = head_plan(sharing, heads, allow_tied_qk=True)
    if name == "tied-qk" and not allow_outside_regime:
        raise RegimeError(_TIED_QK_MESSAGE)
    if name == "tied-kv" and d_v != d_h:
        raise ShapeError(f"pattern 'tied-kv' sets V_h = K_h/sqrt(l), so it needs d_v == d_h; got d_v={d_v}, d_h={d_h}")
    if coupling is not None and coupling.kind == "identity" and d_v != d_h:
        raise ShapeError(f"pattern {pattern!r}: the identity coupling V_h = a K_h/sqrt(l) + b V'_h needs d_v == d_h; "
                         f"got d_v={d_v}, d_h={d_h}")
    if inputs not in ("gaussian", "orthonormal"):
        raise DomainError(f"inputs must be 'gaussian' or 'orthonormal', got {inputs!r}")
    if inputs == "gaussian" and d_model is not None:
        raise DomainError("d_model is only used with inputs='orthonormal'")
    if input_position not in INPUT_POSITIONS:
        raise DomainError(f"input_position must be one of {', '.join(INPUT_POSITIONS)}, got {input_position!r}")
    spectrum = None if input_spectrum is None else read_input_spectrum(input_spectrum)
    if spectrum is not None and inputs != "gaussian":
        raise DomainError("input_spectrum gives the inputs X itself; it cannot be combined with inputs='orthonormal'")
    rng = np.random.default_rng(rng)

    if spectrum is not None:
        x_in = real_inputs(spectrum, l, input_position, rng)

        def draw(cols, scale):
            return x_in @ (rng.standard_normal((l, cols)) * scale)
    elif inputs == "orthonormal":
        d = l if d_model is None else _check_size("d_model", d_model)
        if d < l:
            raise ShapeError(f"inputs with orthonormal rows need d_model >= l; got d_model={d}, l={l}")
        basis, _ = np.linalg.qr(rng.standard_normal((d, l)))
        x_rows = basis.T  # l x d, orthonormal rows

        def draw(cols, scale):
            return x_rows @ (rng.standard_normal((d, cols)) * scale)
    else:
        def draw(cols, scale):
            return rng.standard_normal((l, cols)) * scale

    if linear:
        mu1, _ = softmax_gaussian_equivalent(beta)
        # the noise is that of the scores' entry variance s = beta^2 m1(Sigma)^2 (m1 = 1 for orthonormal inputs)
        m1 = 1.0 if spectrum is None else float(input_spectrum_value(spectrum)[0])
        _, c = softmax_gaussian_equivalent(beta * m1)
    cache = {}

    def shared(kind, index, cols, scale):
        """The matrix of ``kind`` for group ``index``; groups are contiguous, keep only the last."""
        held = cache.get(kind)
        if held is None or held[0] != index:
            cache[kind] = (index, draw(cols, scale))
        return cache[kind][1]

    w_scale = 1.0 / math.sqrt(heads * d_v)
    y = np.zeros((l, d_out))
    for qi, ki, vi in plan:
        keys = shared("K", ki, d_h, 1.0)
        queries = keys if qi == "tied" else draw(d_h, 1.0)
        scores = queries @ keys.T
        scores /= math.sqrt(d_h)
        if linear:
            mix = scores
            mix *= mu1
            mix += c * rng.standard_normal((l, l))
            mix /= math.sqrt(l)
        else:
            mix = _centered_softmax(scores, beta)
        if vi == "tied":
            values = keys / math.sqrt(l)
        elif coupling is None:
            values = shared("V", vi, d_v, 1.0 / math.sqrt(l))
        else:
            values = _coupled_values(coupling, keys, d_v, lambda: shared("V", vi, d_v, 1.0 / math.sqrt(l)), rng)
        w_out = rng.standard_normal((d_v, d_out)) * w_scale
        if d_v <= d_out:
            y += (mix @ values) @ w_out
        else:
            y += mix @ (values @ w_out)
        del scores, mix
    sv2 = np.linalg.svd(y, compute_uv=False) ** 2
    if sv2.size < l:
        sv2 = np.concatenate([sv2, np.zeros(l - sv2.size)])
    return np.sort(sv2)


def real_inputs(spectrum, l, position, rng):
    """Sampled real inputs ``X = Sigma^{1/2}`` (``l x l``), the token covariance ``X X^T`` of a given spectrum.

    Parameters
    ----------
    spectrum : tuple of (value, weight)
        From :func:`~freeprob.attention.read_input_spectrum`; value ``a_k``
        sits on the tokens whose midpoint ``(i + 1/2)/l`` falls in its cell
        (in the order given), as for every deterministic matrix
        (:func:`freeprob.montecarlo.sample.deterministic_diagonal`).
    l : int
    position : {"generic", "diagonal"}
        ``O diag(sqrt(values)) O^T`` with ``O`` Haar, or the diagonal.
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> from freeprob.attention import read_input_spectrum
    >>> x = real_inputs(read_input_spectrum("1/4:1/2,9/4:1/2"), 4, "diagonal", np.random.default_rng(0))
    >>> np.diag(x).tolist()
    [0.5, 0.5, 1.5, 1.5]
    """
    mids = (np.arange(l) + 0.5) / l
    root = np.empty(l)
    lo = 0.0
    for k, (a, w) in enumerate(spectrum):
        last = k == len(spectrum) - 1
        hi = 1.0 if last else lo + float(w)
        root[(mids >= lo) if last else ((mids >= lo) & (mids < hi))] = math.sqrt(float(a))
        lo = hi
    if position == "diagonal":
        return np.diag(root)
    o = haar_matrix(rng, l)
    return (o * root) @ o.T


def _coupled_values(coupling, keys, d_v, independent, rng):
    """``a K M / sqrt(l) + b V'`` of a :class:`~freeprob.attention.ValueCoupling` (a new array).

    ``M`` is the identity or, for a gaussian coupling, a fresh ``d_h x d_v``
    matrix of ``N(0, 1/d_h)`` entries (a weight: drawn directly, also for
    orthonormal inputs, where ``K M = X (W^K M)``); ``independent()`` draws or
    returns the pattern's value matrix ``V'`` and is called only when
    ``b != 0``.
    """
    l, d_h = keys.shape
    values = np.zeros((l, d_v))
    a, b = float(coupling.a), float(coupling.b)
    if a != 0:
        coupled = keys
        if coupling.kind == "gaussian":
            coupled = keys @ (rng.standard_normal((d_h, d_v)) / math.sqrt(d_h))
        values += (a / math.sqrt(l)) * coupled
    if b != 0:
        values += b * independent()
    return values


def attention_sizes(N, ratios):
    """Integer matrix sizes from a scale ``N`` and ratios.

    Parameters
    ----------
    N : int or float
        The scale; each size is ``round(N * ratio)``, at least 1.
    ratios : mapping
        Ratios for ``"l"``, ``"d_h"``, ``"d_v"``, ``"d_out"`` (all required)
        and optionally ``"d_model"``.

    Returns
    -------
    dict
        The same keys, with positive integer sizes.

    Raises
    ------
    DomainError
        For a missing or unknown key, or a non-positive ``N`` or ratio.

    Examples
    --------
    >>> attention_sizes(1000, {"l": 1, "d_h": 0.5, "d_v": 0.5, "d_out": 0.25})
    {'l': 1000, 'd_h': 500, 'd_v': 500, 'd_out': 250}
    """
    required = ("l", "d_h", "d_v", "d_out")
    allowed = required + ("d_model",)
    if isinstance(N, bool) or not isinstance(N, numbers.Real) or not (math.isfinite(N) and N > 0):
        raise DomainError(f"N must be a positive finite number, got {N!r}")
    unknown = [k for k in ratios if k not in allowed]
    if unknown:
        raise DomainError(f"unknown ratio names {unknown}; expected {allowed}")
    missing = [k for k in required if k not in ratios]
    if missing:
        raise DomainError(f"missing ratios {missing}; expected {required}")
    sizes = {}
    for key in allowed:
        if key not in ratios:
            continue
        r = ratios[key]
        if isinstance(r, bool) or not isinstance(r, numbers.Real) or not (math.isfinite(r) and r > 0):
            raise DomainError(f"ratio {key!r} must be a positive finite number, got {r!r}")
        sizes[key] = max(1, int(round(N * r)))
    return sizes


def config_sizes(cfg, n):
    """Integer sizes ``round(ratio * n)`` of a configuration at scale ``n`` (:func:`attention_sizes`).

    Examples
    --------
    >>> from freeprob.attention import attention_config
    >>> config_sizes(attention_config(2, "mqa", d_out="1/4"), 400)
    {'l': 400, 'd_h': 200, 'd_v': 200, 'd_out': 100}
    """
    return attention_sizes(n, {k: float(getattr(cfg, k)) for k in ("l", "d_h", "d_v", "d_out")})


def sample_config(cfg, n, rng=None, linear=False):
    """Squared singular values of one real-softmax (or ``linear``) sample of a configuration at scale ``n``.

    Parameters
    ----------
    cfg : AttentionConfig
    n : int or float
        The scale; sizes are :func:`config_sizes`.
    rng : None, int or numpy.random.Generator, optional
    linear : bool, optional
        Sample the Gaussian-equivalent surrogate instead (:func:`sample_attention`).

    Returns
    -------
    numpy.ndarray
    """
    s = config_sizes(cfg, n)
    return sample_attention(s["l"], cfg.heads, s["d_h"], s["d_v"], s["d_out"], float(cfg.beta),
                            pattern=cfg.spec, rng=rng, linear=linear, input_spectrum=cfg.input_spectrum,
                            input_position=cfg.input_position)
