"""Causal (masked) softmax attention: the Cesaro mean, the real masked softmax and its Gaussian-equivalent surrogate.

Under the causal mask query ``i`` attends to keys ``j <= i`` only:

    A_ij = exp(beta S_ij) / sum_{k <= i} exp(beta S_ik)   (j <= i),   A_ij = 0 (j > i).

Given ``q_i`` the scores ``S_i1, ..., S_ii`` are exchangeable, so the mean of
``A`` is exactly the Cesaro averaging matrix ``M_ij = 1[j <= i]/i``
(:func:`cesaro_mean`). The objects sampled here (one head, the sizes and
variances of :func:`freeprob.attention.sample_attention`) are

* ``"centred"``: ``Y = sqrt(l) (A - M) V W``, the analogue of the non-causal
  centred output;
* ``"uncentred"``: ``sqrt(l) A V W`` (the Cesaro mean kept);
* ``"linear"``: the Gaussian-equivalent surrogate of ``"centred"``, row ``i``
  of ``sqrt(l)(A - M)`` replaced by ``(sqrt(l)/i)(g_ij - gbar_i) 1[j <= i]``
  with ``g = beta S + c Z``, ``c^2 = exp(beta^2) - 1 - beta^2``, ``Z`` iid
  ``N(0, 1)`` and ``gbar_i`` the mean of ``g_i1..g_ii``.

Each is returned as the squared singular values over its ``l`` rows; with
``skip = k`` the first ``k`` rows (the first tokens) are dropped as well
(keys ``"centred-tail"``, ...). Why these objects and what their laws are:
docs/causal.md; the law of the tail is :func:`~freeprob.attention.causal_attention_law`.
"""

import math
import numbers

import numpy as np

from .._errors import DomainError
from .config import positive_int
from .softmax import softmax_gaussian_equivalent

__all__ = ["CAUSAL_OBJECTS", "causal_softmax", "cesaro_mean", "sample_bytes", "sample_causal"]

#: The objects :func:`sample_causal` can return.
CAUSAL_OBJECTS = ("centred", "uncentred", "linear")


def _beta_float(beta):
    """A finite real inverse temperature as a float (DomainError otherwise)."""
    if isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not math.isfinite(beta):
        raise DomainError(f"beta must be a finite real number, got {beta!r}")
    return float(beta)


def cesaro_mean(l):
    """The Cesaro averaging matrix ``M_ij = 1[j <= i]/i`` (``l x l``), the exact mean of causal softmax.

    Its Gram matrix is ``M M^T = [1/max(i, k)]``; its trace is the harmonic
    number ``H_l``, so almost all of its singular values tend to 0
    (docs/causal.md, section 2).

    Examples
    --------
    >>> m = cesaro_mean(3)
    >>> print(np.round(m @ m.T * 6).astype(int))
    [[6 3 2]
     [3 3 2]
     [2 2 2]]
    """
    l = positive_int("l", l)
    return np.tril(np.ones((l, l))) / np.arange(1, l + 1)[:, None]


def causal_softmax(scores, beta):
    """Row-wise softmax of ``beta * scores`` over ``j <= i`` (zero above the diagonal), in place.

    Stable for large ``beta``: each row's maximum over its unmasked entries is
    subtracted before ``exp``.

    Examples
    --------
    >>> a = causal_softmax(np.zeros((3, 3)), 1.0)
    >>> print(np.round(a * 6).astype(int))
    [[6 0 0]
     [3 3 0]
     [2 2 2]]
    """
    l = scores.shape[0]
    if scores.shape != (l, l):
        raise DomainError(f"causal softmax needs square scores (l x l), got shape {scores.shape}")
    upper = np.triu_indices(l, 1)
    scores *= beta
    scores[upper] = -np.inf
    scores -= scores.max(axis=1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=1, keepdims=True)
    return scores


def _linear_mix(scores, beta, rng):
    """``sqrt(l)/i (g_ij - gbar_i) 1[j <= i]``, ``g = beta S + c Z``: the surrogate of ``sqrt(l)(A - M)``."""
    l = scores.shape[0]
    mu1, c = softmax_gaussian_equivalent(beta)
    g = mu1 * scores + c * rng.standard_normal((l, l))
    g = np.tril(g)
    counts = np.arange(1, l + 1)[:, None]
    g -= g.sum(axis=1, keepdims=True) / counts
    g = np.tril(g)
    g *= math.sqrt(l) / counts
    return g


def _spectrum(y, rows):
    sv2 = np.linalg.svd(y, compute_uv=False) ** 2
    if sv2.size < rows:
        sv2 = np.concatenate([sv2, np.zeros(rows - sv2.size)])
    return np.sort(sv2)


def sample_bytes(l, d_h, d_v, d_out):
    """Bytes of the arrays one head of :func:`sample_causal` holds at once (float64): ``Q``, ``K``, ``V``, ``W``,
    ``V W``, the output, and about five ``l x l`` arrays (scores, weights, their centring and the surrogate)."""
    return 8 * (2 * l * d_h + l * d_v + d_v * d_out + 2 * l * d_out + 5 * l * l)


def sample_causal(l, d_h, d_v, d_out, beta, *, objects=CAUSAL_OBJECTS, skip=0, rng=None, full=True, heads=1):
    """Squared singular values of one sample of each requested causal-attention object (one head).

    ``Q, K`` (``l x d_h``) have iid ``N(0, 1)`` entries, ``S = Q K^T/sqrt(d_h)``,
    ``V`` (``l x d_v``) iid ``N(0, 1/l)``, ``W`` (``d_v x d_out``) iid
    ``N(0, 1/d_v)``: the distribution of :func:`~freeprob.attention.sample_attention`
    with one head. All objects share ``Q, K, V, W`` (the ``"linear"`` one
    draws its own ``Z``), so their differences have small variance.

    Parameters
    ----------
    l, d_h, d_v, d_out : int
        Sizes.
    beta : float
        Inverse temperature.
    objects : sequence of str, optional
        Among :data:`CAUSAL_OBJECTS` (module docstring).
    skip : int, optional
        When positive, also return each object with its first ``skip`` rows
        dropped, under the key ``"<object>-tail"`` (``l - skip`` values).
    rng : None, int or numpy.random.Generator, optional
    full : bool, optional
        With ``False`` (and ``skip > 0``) only the ``"-tail"`` spectra are
        computed (one singular value decomposition per object instead of two).
    heads : int, optional
        Independent heads summed, ``sum_h (...)_h V_h W_h`` with ``W_h`` of
        variance ``1/(heads d_v)`` (the ``mha`` pattern; default 1).

    Returns
    -------
    dict
        ``{key: ascending squared singular values}``, structural zeros included.

    Examples
    --------
    >>> out = sample_causal(40, 20, 20, 20, 1.0, objects=("centred", "linear"), skip=4, rng=0)
    >>> sorted(out), out["centred"].shape, out["linear-tail"].shape
    (['centred', 'centred-tail', 'linear', 'linear-tail'], (40,), (36,))
    """
    l = positive_int("l", l)
    d_h = positive_int("d_h", d_h)
    d_v = positive_int("d_v", d_v)
    d_out = positive_int("d_out", d_out)
    beta = _beta_float(beta)
    objects = tuple(objects)
    unknown = [o for o in objects if o not in CAUSAL_OBJECTS]
    if unknown or not objects:
        raise DomainError(f"objects must be a non-empty subset of {CAUSAL_OBJECTS}, got {objects!r}")
    if isinstance(skip, bool) or not isinstance(skip, int) or not 0 <= skip < l:
        raise DomainError(f"skip must be an integer with 0 <= skip < l = {l}, got {skip!r}")
    heads = positive_int("heads", heads)
    if full is not True and full is not False:
        raise DomainError(f"full must be True or False, got {full!r}")
    if not full and not skip:
        raise DomainError("full=False keeps only the tail spectra: give skip > 0")
    rng = np.random.default_rng(rng)
    outputs = {}
    for _ in range(heads):
        q = rng.standard_normal((l, d_h))
        k = rng.standard_normal((l, d_h))
        vw = (rng.standard_normal((l, d_v)) / math.sqrt(l)) @ (rng.standard_normal((d_v, d_out))
                                                               / math.sqrt(heads * d_v))
        scores = q @ k.T
        scores /= math.sqrt(d_h)
        mixes = {}
        if "linear" in objects:
            mixes["linear"] = _linear_mix(scores, beta, rng)
        if "centred" in objects or "uncentred" in objects:
            a = causal_softmax(scores, beta)
            a *= math.sqrt(l)
            if "uncentred" in objects:
                mixes["uncentred"] = a.copy() if "centred" in objects else a
            if "centred" in objects:
                a -= math.sqrt(l) * cesaro_mean(l)
                mixes["centred"] = a
        for name in objects:
            y = mixes[name] @ vw
            outputs[name] = y if name not in outputs else outputs[name] + y
    out = {}
    for name in objects:
        y = outputs[name]
        if full:
            out[name] = _spectrum(y, l)
        if skip:
            out[f"{name}-tail"] = _spectrum(y[skip:], l - skip)
    return out
