"""Sampling an expression at finite size (rank 3): the Monte-Carlo side of every check.

The expression tree is sampled at finite size: every dimension ``s`` becomes
``round(rho_s N)`` rows, every leaf one seeded draw (a matrix occurring
several times is drawn once), every scalar evaluated with the actual sizes,
so the user's own scale factors are what is tested. An entrywise function
(:class:`~freeprob.expr.entrywise.Entrywise`) is evaluated for real: its
function is applied to every entry of its sampled argument (the nonlinear
model itself, not its Gaussian equivalent), and a kernel matrix
(:class:`~freeprob.expr.kernel.Kernel`) then has its diagonal set to 0; a
softmax node (:class:`~freeprob.expr.softmax.Softmax`) is the real row-wise
softmax ``A`` of its sampled argument, centred and scaled, ``sqrt(n) (A - 1
1^T/n)`` (not its Gaussian equivalent). An
inverse (:class:`~freeprob.expr.tree.Inverse`) is the numpy inverse of its
sampled argument; a singular sample is a :class:`~freeprob.DomainError`. A deterministic matrix is
the diagonal matrix of its spectrum's values, each on the coordinates ``i`` whose midpoint
``(i + 1/2)/size`` falls in its cell (the order given), except on a space where a deterministic matrix
sits inside the argument of an entrywise function or a softmax: there every deterministic matrix
of the space is ``O diag(values) O^T`` with one Haar ``O`` per space and sample, the generic
position the Gaussian equivalent assumes (:mod:`freeprob.expr.generic`); a Gaussian with a variance profile
has entry ``(i, j)`` of variance ``variance * profile((i + 1/2)/rows, (j + 1/2)/cols)``
(docs/blocks.md). A law is read by duck type:
``expr``, ``law`` (the kind), ``ratios`` and ``params``.
"""

import math

import numpy as np
import sympy

from .._errors import DomainError
from ..expr.entrywise import Entrywise, check_generic_position, generic_spaces
from ..expr.kernel import Kernel
from ..expr.profiles import C, ProfileTable, R
from ..expr.softmax import Softmax
from ..expr.tree import Inverse, Matrix, Product, Scaled, Sum, Transpose

__all__ = ["MAX_SAMPLE_BYTES", "centred_softmax", "check_sample_size", "deterministic_diagonal", "entrywise_function",
           "generator", "generic_spaces", "haar_matrix", "profile_values", "sample_bytes",
           "sample_matrix", "sample_spectrum", "sizes_for", "spawn_generators"]

#: Most memory one sample may hold (bytes of its matrices, see :func:`sample_bytes`): 10 GiB.
MAX_SAMPLE_BYTES = 10 * 2 ** 30


def _seed(seed, what):
    """``seed`` if numpy can seed from it (None, an int >= 0, a SeedSequence or a Generator), else DomainError."""
    if seed is None or isinstance(seed, (np.random.SeedSequence, np.random.Generator)):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise DomainError(f"{what} must be a non-negative integer (or None), got {seed!r}")
    return int(seed)


def generator(seed, what="seed"):
    """A numpy Generator from ``seed`` (None, an int >= 0, a SeedSequence or a Generator); DomainError otherwise.

    Examples
    --------
    >>> int(generator(0).integers(10)) == int(generator(0).integers(10))
    True
    >>> generator(-1)
    Traceback (most recent call last):
    ...
    freeprob._errors.DomainError: seed must be a non-negative integer (or None), got -1
    """
    return np.random.default_rng(_seed(seed, what))


def spawn_generators(seed, count):
    """``(seed_sequence, [count independent generators])`` from an int, None or a SeedSequence.

    Examples
    --------
    >>> seq, rngs = spawn_generators(0, 2)
    >>> len(rngs), seq.entropy
    (2, 0)
    """
    seed = _seed(seed, "seed")
    if isinstance(seed, np.random.Generator):
        raise DomainError("seed: give an integer or a SeedSequence to spawn independent generators, not a Generator")
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return seq, [np.random.default_rng(s) for s in seq.spawn(count)]


def sizes_for(law, n):
    """Integer sizes ``{dimension: round(ratio * n)}`` (at least 1)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise DomainError(f"the Monte-Carlo size must be a positive integer, got {n}")
    return {s: max(1, int(round(float(r) * n))) for s, r in law.ratios.items()}


def sample_bytes(law, n):
    """Bytes of the float64 matrices one sample at size ``n`` holds at once (an upper bound).

    :func:`sample_matrix` keeps every leaf (once per name) and the value of
    every node of the expression until the sample is done; transposes are
    views. A model file can describe thousands of heads in a few lines, so
    this is checked before anything is drawn.

    Examples
    --------
    >>> import freeprob as fp
    >>> sample_bytes(fp.law_of(fp.find_model("marchenko-pastur")), 1000)   # X (500 x 1000) and X X^T/n
    8000000
    """
    sizes = sizes_for(law, n)
    names, nodes, total = set(), set(), 0
    stack = [law.expr]
    while stack:
        node = stack.pop()
        stack.extend(node.children() + node.real_children())
        if isinstance(node, Transpose):
            continue
        if isinstance(node, Matrix):
            if node.name in names:
                continue
            names.add(node.name)
        elif id(node) in nodes:
            continue
        else:
            nodes.add(id(node))
        rows, cols = node.shape
        total += 8 * sizes[rows] * sizes[cols]
    return total


def check_sample_size(law, n):
    """Refuse (DomainError) a size ``n`` whose sample would need more than :data:`MAX_SAMPLE_BYTES`."""
    need = sample_bytes(law, n)
    if need > MAX_SAMPLE_BYTES:
        fits = max(1, int(n * (MAX_SAMPLE_BYTES / need) ** 0.5))
        raise DomainError(
            f"a sample of {getattr(law, 'name', None) or 'this model'} at size n = {n} would hold about "
            f"{need / 2 ** 30:.1f} GiB of matrices, more than the limit of {MAX_SAMPLE_BYTES / 2 ** 30:.0f} GiB; "
            f"use n <= {fits}"
        )


def _scalar(c, values):
    v = sympy.sympify(c).subs(values)
    if not v.is_number:
        raise DomainError(f"cannot evaluate the scalar {c}: give values for {sorted(map(str, v.free_symbols))}")
    return float(v)


#: Functions numpy lacks, for the numeric form of an entrywise function (elementwise, double precision).
_NUMPY_EXTRA = {"erf": np.vectorize(math.erf, otypes=[float]), "erfc": np.vectorize(math.erfc, otypes=[float])}


def entrywise_function(node, values):
    """The numpy function of an entrywise node's ``f`` at the parameter ``values``.

    Made by :func:`sympy.lambdify` of the node's sympy expression (built by
    the whitelisted grammar, never from a user string), with its parameters
    substituted.

    Examples
    --------
    >>> import freeprob as fp, sympy
    >>> a, b = fp.dims("a b")
    >>> node = fp.entrywise("Max(x, 0) - 1/sqrt(2*pi)", fp.gaussian("X", (a, b)))
    >>> entrywise_function(node, {})(np.array([-1.0, 2.0])).round(6)
    array([-0.398942,  1.601058])
    """
    f = node.f.subs(values)
    extra = f.free_symbols - {node.x}
    if extra:
        raise DomainError(f"cannot evaluate {node.name}({node.x}) = {node.f}: give values for "
                          f"{sorted(map(str, extra))}")
    g = sympy.lambdify(node.x, f, modules=[_NUMPY_EXTRA, "numpy"])
    return lambda m: np.broadcast_to(np.asarray(g(m), dtype=float), np.shape(m)).copy()


def centred_softmax(m):
    """``sqrt(n) (A - 1 1^T/n)`` for ``A`` the row-wise softmax of the ``k x n`` array ``m``.

    Examples
    --------
    >>> a = centred_softmax(np.array([[0.0, np.log(3.0)]]))   # A = [1/4, 3/4]
    >>> a.round(6).tolist(), bool(abs(a.sum()) < 1e-15)
    ([[-0.353553, 0.353553]], True)
    """
    n = m.shape[1]
    e = np.exp(m - m.max(axis=1, keepdims=True))
    return math.sqrt(n) * (e / e.sum(axis=1, keepdims=True) - 1.0 / n)


def sample_matrix(law, n, rng=None):
    """One sample of the expression of ``law`` at size ``n`` (numpy array).

    Raises
    ------
    DomainError
        When the sample would hold more than :data:`MAX_SAMPLE_BYTES`
        (:func:`check_sample_size`), before anything is drawn.
    """
    check_sample_size(law, n)
    rng = generator(rng, "rng")
    sizes = sizes_for(law, n)
    values = dict(law.params)
    values.update({s: sympy.Integer(k) for s, k in sizes.items()})
    leaves = {}
    check_generic_position(law.expr)
    generic = generic_spaces(law.expr)
    rotations = {}

    def leaf(node):
        if node.name in leaves:
            return leaves[node.name]
        a, b = sizes[node.shape[0]], sizes[node.shape[1]]
        if node.kind == "identity":
            m = np.eye(a)
        elif node.kind == "deterministic" and node.shape[0] in generic:
            if node.shape[0] not in rotations:
                rotations[node.shape[0]] = haar_matrix(rng, a)
            o = rotations[node.shape[0]]
            m = (o * deterministic_diagonal(node, a)) @ o.T
        elif node.kind == "deterministic":
            m = np.diag(deterministic_diagonal(node, a))
        elif node.kind == "haar":
            m = haar_matrix(rng, a)
        else:
            sd = np.sqrt(_scalar(node.variance, values))
            if node.kind == "gaussian":
                m = sd * rng.standard_normal((a, b))
                if node.profile is not None:
                    m *= np.sqrt(profile_values(node, a, b))
            else:
                g = rng.standard_normal((a, a))
                m = sd * (g + g.T) / np.sqrt(2.0)
        leaves[node.name] = m
        return m

    cache = {}

    def ev(node):
        if node in cache:
            return cache[node]
        if isinstance(node, Matrix):
            out = leaf(node)
        elif isinstance(node, Softmax):  # before Sum: the real softmax, not the equivalent
            out = centred_softmax(ev(node.argument))
        elif isinstance(node, Entrywise):  # before Sum: the real function, not the equivalent
            out = entrywise_function(node, values)(ev(node.argument))
            if isinstance(node, Kernel):
                np.fill_diagonal(out, 0.0)
        elif isinstance(node, Scaled):
            out = _scalar(node.coeff, values) * ev(node.arg)
        elif isinstance(node, Transpose):
            out = ev(node.arg).T
        elif isinstance(node, Inverse):
            out = _inverse(node, ev(node.arg))
        elif isinstance(node, Sum):
            out = sum(ev(t) for t in node.terms)
        elif isinstance(node, Product):
            mats = [ev(f) for f in node.factors]
            out = np.linalg.multi_dot(mats) if len(mats) > 2 else mats[0] @ mats[1]
        else:
            raise TypeError(node)
        cache[node] = out
        return out

    return ev(law.expr)


def haar_matrix(rng, size):
    """A Haar-distributed orthogonal ``size x size`` matrix: Q of the QR of a Gaussian, columns signed by R's diagonal."""
    q, r = np.linalg.qr(rng.standard_normal((size, size)))
    return q * np.where(np.diag(r) < 0, -1.0, 1.0)


def deterministic_diagonal(node, size):
    """The diagonal of a deterministic matrix at ``size``: value ``a_k`` where ``(i + 1/2)/size`` is in cell ``k``.

    >>> import freeprob as fp
    >>> p = fp.dims("p")
    >>> deterministic_diagonal(fp.deterministic("D", (p, p), {1: "1/4", 4: "3/4"}), 4)
    array([1., 4., 4., 4.])
    """
    mids = (np.arange(size) + 0.5) / size
    out = np.empty(size)
    lo = 0.0
    for k, (a, w) in enumerate(node.spectrum):
        hi = 1.0 if k == len(node.spectrum) - 1 else lo + float(w)
        out[(mids >= lo) & (mids < hi) if k < len(node.spectrum) - 1 else mids >= lo] = float(a)
        lo = hi
    return out


def profile_values(node, rows, cols):
    """The profile of a Gaussian at the midpoints ``((i + 1/2)/rows, (j + 1/2)/cols)`` (a ``rows x cols`` array)."""
    r = ((np.arange(rows) + 0.5) / rows)[:, None]
    c = ((np.arange(cols) + 0.5) / cols)[None, :]
    if isinstance(node.profile, ProfileTable):
        f = node.profile.at
    else:
        f = sympy.lambdify((R, C), node.profile, modules=[{"Heaviside": lambda x, h0=0.5: np.heaviside(x, h0)}, "numpy"])
    out = np.broadcast_to(np.asarray(f(r, c), dtype=float), (rows, cols))
    if np.any(out < 0):
        raise DomainError(f"the profile {node.profile} of {node.name} is negative at some entries")
    return out


def _inverse(node, m):
    """The numpy inverse of the sample ``m`` of ``node``'s argument (DomainError when it is singular)."""
    try:
        out = np.linalg.inv(m)
    except np.linalg.LinAlgError:
        out = None
    if out is None or not np.all(np.isfinite(out)) or np.linalg.cond(m) > 1e12:
        raise DomainError(f"the sampled argument of {node} is singular (condition number "
                          f"{np.linalg.cond(m):.3g}); its spectrum reaches 0 at this size")
    return out


def sample_spectrum(law, n, rng=None):
    """Eigenvalues (symmetric law) or squared singular values (over the rows) of one sample, sorted."""
    m = sample_matrix(law, n, rng)
    if law.law == "eigenvalues":
        s = np.linalg.eigvalsh((m + m.T) / 2)
    else:
        s = np.linalg.svd(m, compute_uv=False) ** 2
        if len(s) < m.shape[0]:
            s = np.concatenate([np.zeros(m.shape[0] - len(s)), s])
    # rank deficiency gives exact zeros in exact arithmetic; rounding leaves values
    # of order 1e-13 ||H||, which are set back to 0 so that atoms at 0 compare exactly
    scale = float(np.max(np.abs(s))) if s.size else 0.0
    s = np.where(np.abs(s) <= 1e-9 * scale, 0.0, s)
    return np.sort(s)
