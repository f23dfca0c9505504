"""Head-allocation sweeps: how the attention law moves with the number of heads, or with the width.

A sweep is a list of configurations that differ in one thing only:

* over heads: ``H`` in powers of two up to :data:`MAX_HEADS`, at a fixed
  total width ``W``;
* over widths: the total width ``W`` at a fixed ``H``.

The allocation of the total width is the realistic one, ``d_h = d_v = W/H``
(default ``W = 1/2``); with ``d_v`` fixed only the query/key width is
allocated (``d_h = W/H``), with ``d_h`` fixed only the value width
(``d_v = W/H``). The output width ``d_out``, the sequence ratio ``l``, the
inverse temperature ``beta`` and the sharing pattern are the same in every
row. A ``gqa:G`` row whose ``H`` is not divisible by ``G`` is skipped and
listed in :attr:`SweepResult.skipped` (a sweep where every row is skipped is
refused).

Per configuration the sweep asks :func:`~freeprob.attention.attention_law`
for what it offers and nothing else, so a faster law makes a faster sweep:

* the support edges: :meth:`SpectralLaw.support_fast` (double precision,
  given to :data:`EDGE_DIGITS` digits), or with ``dps`` the verified edges of
  :meth:`SpectralLaw.support` (Dyson route, ``dps`` digits);
* the moments ``m_1..m_k``: :meth:`SpectralLaw.moments` (verified, ``dps``
  or 15 digits);
* the density at the points ``at``: :meth:`SpectralLaw.density_fast`
  (:data:`FAST_DIGITS` digits), or with ``dps`` :meth:`SpectralLaw.density`;
* the atom at 0: its mass ``1 - min(l, d_out, H d_v)/l`` from the generic
  rank (:func:`~freeprob.attention.check.rank_atom`);
* the density on the common grid: :meth:`SpectralLaw.density_fast`.

The common grid and the distance
--------------------------------
Once the edges of every row are known, the grid is fixed: ``grid`` points

    x_i = X u_i^2,   u_i = (i - 1/2)/grid,   i = 1..grid,

with ``X`` 1.02 times the largest upper edge of the sweep, and each law is
evaluated on it (a second task per configuration: the law objects stay in
the process that made them). The points crowd quadratically towards 0,
where these laws have a hard edge: with ``d_out <= H d_v`` the density of
the continuous part diverges like ``x^(-1/2)`` there, so a uniform grid
misses a mass of order ``sqrt(X/grid)`` near 0, and a largest pointwise
difference measures only how close the first grid point is to 0.

The distance between two rows ``a`` and ``b`` is the L1 distance of the
densities ``rho_a``, ``rho_b`` of their continuous parts,

    L1(a, b) = int_0^X |rho_a(x) - rho_b(x)| dx
             = int_0^1 |rho_a - rho_b|(X u^2) 2 X u du
            ~= sum_i |rho_a(x_i) - rho_b(x_i)| 2 X u_i / grid ,

the midpoint rule in ``u = sqrt(x/X)``, in which an ``x^(-1/2)`` edge at 0
becomes a bounded integrand (measured: 4 to 5 digits at ``grid = 400``, where the
trapezoid rule on a uniform grid of the same size is 35% low). Atoms are not
part of it (each row reports its atom at 0); ``L1`` is at most 2. Every row
carries its distance to the row before it (:attr:`SweepRow.to_previous`)
and to the first row (:attr:`SweepRow.to_first`). A grid point where the
double-precision solve could not be verified is NaN, and so is then the
distance (never a silently smaller number).

Where the work runs
-------------------
The laws are not picklable, so a task receives an
:class:`~freeprob.attention.AttentionConfig` and returns plain numbers
(decimal strings and floats): :func:`summarize_config` and
:func:`tabulate_config`. They run in local processes
(:class:`concurrent.futures.ProcessPoolExecutor`, ``workers`` of them,
default one per configuration up to the number of cores; ``workers=1`` runs
them here, in this process), or on a Dask cluster when ``scheduler`` is the
address of its scheduler (``dask.distributed``, the optional ``cluster``
extra; its workers need freeprob installed). ``progress`` is called after
each finished configuration of each stage.

Local processes start by the platform's default method (``fork`` on Linux
up to Python 3.13; ``spawn`` or ``forkserver`` elsewhere, where a script
that calls :func:`sweep` must guard its top level with ``if __name__ ==
"__main__":``, as for any process pool).
"""

import math
import os
import time
import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import sympy

from .._errors import (
    ClusterError,
    ConvergenceError,
    DomainError,
    FreeProbError,
    MissingDependencyError,
    RegimeWarning,
    ShapeError,
)
from .._numbers import read_number
from .._precision import mp_to_str
from .check import rank_atom
from .config import DEFAULT_WIDTH, AttentionConfig, attention_config, groups_divide, positive_int
from .model import attention_law
from .plots import plot_sweep
from .regime import check_regime

__all__ = [
    "CONNECT_TIMEOUT",
    "DEFAULT_GRID",
    "DEFAULT_HEADS",
    "EDGE_DIGITS",
    "FAST_DIGITS",
    "MAX_HEADS",
    "MAX_SWEEP_MOMENTS",
    "SweepPlan",
    "SweepResult",
    "SweepRow",
    "common_grid",
    "head_counts",
    "l1_distance",
    "plan_sweep",
    "summarize_config",
    "sweep",
    "tabulate_config",
]

#: Largest head count of a sweep; head counts are powers of two up to it.
MAX_HEADS = 128
#: Head counts swept by default.
DEFAULT_HEADS = (1, 2, 4, 8)
#: Points of the common density grid by default.
DEFAULT_GRID = 400
#: Largest grid of a sweep (the command line's limit).
MAX_GRID = 100000
#: Largest number of moments per row.
MAX_SWEEP_MOMENTS = 12
#: Digits given for double-precision support edges (``support_fast``: about 1e-7 of the support's width).
EDGE_DIGITS = 6
#: Digits given for a double-precision density (``density_fast``: 1e-12 relative to max(1, |G|) inside the support).
FAST_DIGITS = 12
#: Seconds allowed to connect to a Dask scheduler.
CONNECT_TIMEOUT = 10
#: The common grid reaches this factor times the largest upper edge.
GRID_MARGIN = 1.02


def common_grid(top, n):
    """The common grid ``x_i = X u_i^2``, ``u_i = (i - 1/2)/n``, ``X = GRID_MARGIN * top`` (module docstring).

    Examples
    --------
    >>> common_grid(1 / 1.02, 2)
    array([0.0625, 0.5625])
    """
    u = (np.arange(1, n + 1) - 0.5) / n
    return GRID_MARGIN * top * u * u


def l1_distance(a, b, xs):
    """``int |rho_a - rho_b| dx`` by the midpoint rule in ``u = sqrt(x/X)`` on :func:`common_grid` ``xs``.

    Parameters
    ----------
    a, b : sequence of float
        Two densities on ``xs``.
    xs : numpy.ndarray
        A grid made by :func:`common_grid`.

    Returns
    -------
    float
        NaN when a density value is NaN.

    Examples
    --------
    >>> xs = common_grid(1 / 1.02, 1000)              # X = 1
    >>> round(l1_distance(xs ** -0.5, 0 * xs, xs), 6) # int_0^1 x^(-1/2) dx = 2
    2.0
    """
    diff = np.abs(np.asarray(a, float) - np.asarray(b, float))
    if not np.all(np.isfinite(diff)):
        return math.nan
    n = len(xs)
    top = xs[-1] / ((n - 0.5) / n) ** 2
    u = (np.arange(1, n + 1) - 0.5) / n
    return float(np.sum(diff * 2 * top * u) / n)


def head_counts(value):
    """Head counts of a sweep: powers of two from 1 to :data:`MAX_HEADS`, each once.

    Parameters
    ----------
    value : int, str or sequence of int
        ``4``, ``"1,2,4,8"``, ``"1:128"`` (every power of two from 1 to
        128) or ``(1, 2, 4)``.

    Returns
    -------
    tuple of int
        In the order given.

    Raises
    ------
    DomainError
        Anything else, with the reason.

    Examples
    --------
    >>> head_counts("1:16"), head_counts("8,2"), head_counts(4)
    ((1, 2, 4, 8, 16), (8, 2), (4,))
    >>> head_counts("3")
    Traceback (most recent call last):
    ...
    freeprob._errors.DomainError: heads: H = 3 is not a power of two; a sweep takes H in 1, 2, 4, ..., 128
    """
    allowed = f"1, 2, 4, ..., {MAX_HEADS}"
    if isinstance(value, str):
        text = value.strip()
        if ":" in text:
            lo, _, hi = text.partition(":")
            ends = _integers([lo, hi], text)
            for end in ends:
                _check_head(end, allowed)
            if ends[0] > ends[1]:
                raise DomainError(f"heads: {text!r} is empty (the first end is above the last)")
            return tuple(2 ** k for k in range(ends[0].bit_length() - 1, ends[1].bit_length()))
        items = text.split(",")
        if not text or not all(t.strip() for t in items):
            raise DomainError(f"heads: expected comma-separated head counts or A:B, got {value!r}")
        counts = _integers(items, text)
    elif isinstance(value, (list, tuple)):
        counts = list(value)
    else:
        counts = [value]
    if not counts:
        raise DomainError("heads: give at least one head count")
    out = []
    for h in counts:
        if isinstance(h, bool) or not isinstance(h, (int, np.integer)):
            raise DomainError(f"heads: head counts must be integers, got {h!r}")
        _check_head(int(h), allowed)
        if int(h) in out:
            raise DomainError(f"heads: H = {h} is given twice")
        out.append(int(h))
    return tuple(out)


def _integers(items, text):
    try:
        return [int(t.strip()) for t in items]
    except ValueError:
        raise DomainError(f"heads: expected integers, got {text!r}") from None


def _check_head(h, allowed):
    if h < 1 or h > MAX_HEADS:
        raise DomainError(f"heads: H = {h} is out of range; a sweep takes H in {allowed}")
    if h & (h - 1):
        raise DomainError(f"heads: H = {h} is not a power of two; a sweep takes H in {allowed}")


def _widths(value):
    """Total widths: positive exact numbers, each once (a str may hold several, comma-separated)."""
    if isinstance(value, str):
        items = value.split(",")
        if not all(t.strip() for t in items):
            raise DomainError(f"width: expected comma-separated positive numbers, got {value!r}")
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        items = [value]
    if not items:
        raise DomainError("width: give at least one total width")
    out = []
    for item in items:
        w = read_number(item.strip() if isinstance(item, str) else item, what="width", positive=True)
        if w in out:
            raise DomainError(f"width: W = {w} is given twice")
        out.append(w)
    return tuple(out)


def _points(at):
    """``(labels, exact values)`` of the density points (a str may hold several, comma-separated)."""
    if at is None:
        return (), ()
    if isinstance(at, str):
        items = [t.strip() for t in at.split(",")]
        if not all(items):
            raise DomainError(f"at: expected comma-separated points, got {at!r}")
    elif isinstance(at, (list, tuple)):
        items = list(at)
    else:
        items = [at]
    labels, values = [], []
    for item in items:
        label = item.strip() if isinstance(item, str) else str(item)
        values.append(read_number(label if isinstance(item, str) else item, what=f"at {label}"))
        labels.append(label)
    return tuple(labels), tuple(values)


@dataclass(frozen=True)
class SweepPlan:
    """The configurations of a sweep, decided before any law is made (:func:`plan_sweep`).

    Attributes
    ----------
    over : str
        ``"heads"`` or ``"width"``: what changes from row to row.
    configs : tuple of AttentionConfig
    widths : tuple of sympy.Expr
        The total width ``W`` of each configuration.
    skipped : tuple of str
        One line per configuration left out (``gqa:G`` with ``G`` not dividing ``H``).
    allocation : str
        How ``W`` is allocated, e.g. ``"d_h = d_v = W/H"``.
    """

    over: str
    configs: tuple
    widths: tuple
    skipped: tuple
    allocation: str


def plan_sweep(heads=DEFAULT_HEADS, pattern="mha", beta=1, *, width=DEFAULT_WIDTH, l=1, d_h=None, d_v=None,
               d_out=DEFAULT_WIDTH, input_spectrum=None, input_position="generic"):
    """The configurations of a sweep (see the module docstring), every input checked.

    Parameters
    ----------
    heads : int, str or sequence of int
        Head counts (:func:`head_counts`).
    pattern : str
        One sharing pattern for every row: ``mha``, ``mqa``, ``gqa:G``,
        ``shared-v``, ``tied-kv``.
    beta : real
        Inverse temperature.
    width : real, str or sequence
        Total width(s) ``W``. At most one of ``heads`` and ``width`` may hold
        several values.
    l, d_out : real, optional
        Sequence and output ratios (default ``1`` and ``1/2``).
    d_h, d_v : real, optional
        Fix one per-head width; the other is ``W/H``. Default: both ``W/H``.
    input_spectrum, input_position : optional
        Real inputs, the same in every row: the spectrum of the token
        covariance ``X X^T`` (``"1/4:1/2,7/4:1/2"`` or value -> weight) and
        where its eigenvectors lie, as
        :func:`~freeprob.attention.attention_config` (docs/attention.md,
        "Real inputs"). Default: orthonormal inputs.

    Returns
    -------
    SweepPlan

    Raises
    ------
    DomainError
        Bad head counts or widths, both swept at once, both ``d_h`` and
        ``d_v`` fixed, every row skipped, and every error of
        :func:`~freeprob.attention.attention_config` (a bad input spectrum).
    EquivalenceError
        ``input_position="diagonal"`` with a spectrum of several values.
    ShapeError
        ``tied-kv`` with ``d_h`` or ``d_v`` fixed (it needs ``d_v = d_h``).
    RegimeError
        ``tied-qk``.

    Warns
    -----
    RegimeWarning
        Once, for a score scale ``|beta m1(Sigma)| > 2`` (``|beta| > 2`` on
        orthonormal inputs; :func:`~freeprob.attention.check_regime`).

    Examples
    --------
    >>> plan = plan_sweep("1:8", "gqa:2")
    >>> plan.over, [c.heads for c in plan.configs], [str(c.d_h) for c in plan.configs]
    ('heads', [2, 4, 8], ['1/4', '1/8', '1/16'])
    >>> plan.skipped
    ('H = 1, gqa:2: skipped (1 head cannot be split into 2 equal groups)',)
    """
    hs = head_counts(heads)
    ws = _widths(width)
    if len(hs) > 1 and len(ws) > 1:
        raise DomainError(f"sweep one thing at a time: several head counts ({', '.join(map(str, hs))}) and "
                          f"several widths ({', '.join(map(str, ws))}) were given")
    if d_h is not None and d_v is not None:
        raise DomainError("give at most one of d_h and d_v: the other one is allocated as W/H "
                          "(with neither, d_h = d_v = W/H)")
    name = pattern.strip().lower() if isinstance(pattern, str) else pattern
    fixed_h = None if d_h is None else read_number(d_h, what="d_h", positive=True)
    fixed_v = None if d_v is None else read_number(d_v, what="d_v", positive=True)
    if name == "tied-kv" and (fixed_h is not None or fixed_v is not None):
        raise ShapeError("pattern 'tied-kv' sets V_h = K_h/sqrt(l), so d_v = d_h: fix neither d_h nor d_v "
                         "(both are W/H)")
    if fixed_v is not None:
        allocation = f"d_h = W/H, d_v = {fixed_v}"
    elif fixed_h is not None:
        allocation = f"d_v = W/H, d_h = {fixed_h}"
    else:
        allocation = "d_h = d_v = W/H"
    configs, widths, skipped = [], [], []
    for h in hs:
        for w in ws:
            if not groups_divide(h, pattern):
                skipped.append(f"H = {h}, {name}: skipped ({h} head{'s' if h > 1 else ''} cannot be split into "
                               f"{name[4:]} equal groups)")
                continue
            share = w / h
            cfg = attention_config(h, pattern, beta, l=l, d_h=share if fixed_h is None else fixed_h,
                                   d_v=share if fixed_v is None else fixed_v, d_out=d_out,
                                   input_spectrum=input_spectrum, input_position=input_position)
            configs.append(cfg)
            widths.append(w)
    if not configs:
        raise DomainError(f"pattern {pattern!r}: no head count of the sweep ({', '.join(map(str, hs))}) can be "
                          f"split into equal groups; choose H divisible by G")
    check_regime(configs[0].score_beta, name=configs[0].score_beta_name)
    over = "width" if len(ws) > 1 else "heads"
    return SweepPlan(over, tuple(configs), tuple(widths), tuple(skipped), allocation)


# -- the tasks: a configuration in, plain numbers out ----------------------------------------------


def _law(cfg):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RegimeWarning)  # the plan warned once already
        return attention_law(cfg.heads, cfg.spec, cfg.beta, l=cfg.l, d_h=cfg.d_h, d_v=cfg.d_v, d_out=cfg.d_out,
                             input_spectrum=cfg.input_spectrum, input_position=cfg.input_position)


def _decimal(x, digits):
    """A real float or mpf as a decimal string of ``digits`` significant digits (``"NaN"`` for NaN)."""
    if isinstance(x, float) and not math.isfinite(x):
        return "NaN"
    return mp_to_str(x, digits)


def summarize_config(cfg, points=(), moments=4, dps=None):
    """One row's law summary: support edges, moments, density at points (a task; plain numbers out).

    Parameters
    ----------
    cfg : AttentionConfig
    points : sequence of exact real numbers
    moments : int
        Number of moments ``m_1..m_k``.
    dps : int or None
        None: double-precision edges and densities; else verified to ``dps`` digits.

    Returns
    -------
    dict
        ``support`` (list of ``[lo, hi]`` decimal strings), ``moments``
        (decimal strings), ``density`` (decimal strings, ``"NaN"`` where the
        double-precision solve was not verified), ``seconds`` (float).
    """
    t = time.perf_counter()
    law = _law(cfg)
    if dps is None:
        support = [[_decimal(float(a), EDGE_DIGITS), _decimal(float(b), EDGE_DIGITS)] for a, b in law.support_fast()]
        dens = law.density_fast(np.array([float(x) for x in points], float)) if points else []
        density = [_decimal(float(d), FAST_DIGITS) for d in dens]
    else:
        support = [[_decimal(a, dps), _decimal(b, dps)] for a, b in law.support(dps=dps, method="dyson")]
        density = [_decimal(law.density(x, dps=dps), dps) for x in points]
    digits = dps or 15
    ms = [_decimal(m, digits) for m in law.moments(moments, dps=digits)] if moments else []
    return {"support": support, "moments": ms, "density": density, "seconds": time.perf_counter() - t}


def tabulate_config(cfg, xs):
    """A law's double-precision density on the grid ``xs`` (a task): ``(densities, seconds)``, plain floats."""
    t = time.perf_counter()
    dens = _law(cfg).density_fast(np.asarray(xs, float))
    return tuple(float(d) for d in dens), time.perf_counter() - t


# -- where the tasks run ---------------------------------------------------------------------------


def _connect(address):
    """``(client, as_completed)`` of dask.distributed, connected to the scheduler at ``address``."""
    try:
        from distributed import Client, as_completed as completed
    except ImportError:
        raise MissingDependencyError(
            "running on a Dask cluster (scheduler=..., --scheduler) needs dask.distributed, which is not "
            "installed; install it with: pip install 'freeprob[cluster]' (or pip install 'dask[distributed]')"
        ) from None
    try:
        return Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False), completed
    except (OSError, ValueError, TimeoutError) as exc:
        raise ClusterError(f"cannot reach the Dask scheduler at {address!r} within {CONNECT_TIMEOUT} s: "
                           f"{exc}") from None


@contextmanager
def _runner(workers, scheduler):
    """A function ``run(task, argument_tuples)`` yielding ``(index, result())`` as tasks finish.

    ``result()`` returns the task's value or raises its error.
    """
    if scheduler is not None:
        client, dask_completed = _connect(scheduler)

        def run(task, items):
            futures = [client.submit(task, *args, pure=False) for args in items]
            index = {f.key: i for i, f in enumerate(futures)}
            try:
                for fut in dask_completed(futures, loop=client.loop):
                    yield index[fut.key], fut.result
            finally:
                client.cancel([f for f in futures if not f.done()])

        try:
            yield run
        finally:
            client.close()
    elif workers == 1:
        def run(task, items):
            for i, args in enumerate(items):
                yield i, lambda: task(*args)

        yield run
    else:
        pool = ProcessPoolExecutor(max_workers=workers)

        def run(task, items):
            futures = {pool.submit(task, *args): i for i, args in enumerate(items)}
            for fut in as_completed(futures):
                yield futures[fut], fut.result

        try:
            yield run
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _stage(run, task, items, labels, name, progress):
    """Run one task per configuration; results in order. An error names its configuration."""
    out = [None] * len(items)
    done = 0
    for i, result in run(task, items):
        try:
            out[i] = result()
        except FreeProbError as exc:
            exc.args = (f"{labels[i]}: {exc}",)
            raise
        done += 1
        if progress is not None:
            progress(name, done, len(items), labels[i])
    return out


# -- the result ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepRow:
    """One configuration of a sweep and its law's numbers.

    Attributes
    ----------
    config : AttentionConfig
    width : sympy.Expr
        Total width ``W`` (see :class:`SweepPlan`).
    atom : float
        Mass of the atom at 0 (0 when there is none).
    support : tuple of (str, str)
        Support intervals, decimal strings (``SweepResult.digits["support"]`` digits).
    moments : tuple of str
        ``m_1..m_k``, decimal strings.
    density : tuple of str
        Density at ``SweepResult.points``, decimal strings.
    curve : tuple of float
        Density on ``SweepResult.xs``.
    to_previous : float or None
        L1 distance to the row before (None for the first row); module docstring.
    to_first : float
        L1 distance to the first row.
    seconds : float
        Time of this row's tasks (in their worker).
    """

    config: AttentionConfig
    width: sympy.Expr
    atom: float
    support: tuple
    moments: tuple
    density: tuple
    curve: tuple = field(repr=False)
    to_previous: float | None
    to_first: float
    seconds: float

    @property
    def heads(self):
        """``H`` of the row."""
        return self.config.heads

    def label(self, over):
        """``H = 4`` or ``W = 1/2``: the value that the sweep changes."""
        return f"H = {self.heads}" if over == "heads" else f"W = {self.width}"


@dataclass(frozen=True)
class SweepResult:
    """The result of :func:`sweep`: rows in the order swept; :meth:`table`, :meth:`as_dict`, :meth:`plot`.

    Attributes
    ----------
    over : str
        ``"heads"`` or ``"width"``.
    pattern : str
    allocation : str
        e.g. ``"d_h = d_v = W/H"``.
    beta, l, d_out : sympy.Expr
    points : tuple of str
        The density points as given.
    dps : int or None
        None: double-precision edges and point densities.
    digits : Mapping
        Digits of ``support``, ``moments`` and ``density`` strings.
    rows : tuple of SweepRow
    skipped : tuple of str
    grid_end : float
        ``X``, the end of the common grid.
    xs : tuple of float
        The common grid (:func:`common_grid`).
    timings : Mapping
        Wall-clock seconds: ``laws``, ``grid``, ``total``; ``runner``: where the tasks ran.
    """

    over: str
    pattern: str
    allocation: str
    beta: sympy.Expr
    l: sympy.Expr
    d_out: sympy.Expr
    points: tuple
    dps: int | None
    digits: Mapping
    rows: tuple
    skipped: tuple
    grid_end: float
    xs: tuple = field(repr=False)
    timings: Mapping = field(default_factory=dict)

    @property
    def input_spectrum(self):
        """The token-covariance spectrum of every row as ``VALUE:WEIGHT,...`` (None for orthonormal inputs)."""
        return self.rows[0].config.input_text

    @property
    def input_position(self):
        """``"generic"`` or ``"diagonal"``: where the eigenvectors of the token covariance lie."""
        return self.rows[0].config.input_position

    def setting(self):
        """One line: what is swept, over what, and what is fixed (the inputs too, when real)."""
        fixed = f"beta = {self.beta}, l = {self.l}, d_out = {self.d_out} (ratios)"
        if self.input_spectrum is not None:
            fixed += f"; real inputs, token covariance {self.input_spectrum} ({self.input_position})"
        if self.over == "heads":
            return (f"{self.pattern}, H over {', '.join(str(r.heads) for r in self.rows)} at total width "
                    f"W = {self.rows[0].width} ({self.allocation}); {fixed}")
        return (f"{self.pattern}, total width W over {', '.join(str(r.width) for r in self.rows)} at "
                f"H = {self.rows[0].heads} ({self.allocation}); {fixed}")

    def table(self):
        """The table printed by ``freeprob attention sweep``, with a legend of its columns."""
        header = ["H", "W", "d_h", "d_v", "atom@0", "support"]
        header += [f"m{k + 1}" for k in range(len(self.rows[0].moments))]
        header += [f"rho({x})" for x in self.points]
        header += ["L1 prev", "L1 first"]
        body = []
        for r in self.rows:
            cells = [str(r.heads), str(r.width), str(r.config.d_h), str(r.config.d_v), f"{r.atom:.6g}",
                     " u ".join(f"[{_short(a)}, {_short(b)}]" for a, b in r.support)]
            cells += [_short(m, 7) for m in r.moments]
            cells += [_short(d, 6) for d in r.density]
            for dist in (r.to_previous, r.to_first):
                cells.append("-" if dist is None else f"{dist:.3e}")
            body.append(cells)
        widths = [max(len(row[k]) for row in [header] + body) for k in range(len(header))]
        lines = [f"Sweep: {self.setting()}", ""]
        for row in [header] + body:
            lines.append("  ".join(c.rjust(w) if k != 5 else c.ljust(w) for k, (c, w) in enumerate(zip(row, widths))))
        edges = (f"verified to {self.dps} digits" if self.dps else
                 f"double precision, {self.digits['support']} digits")
        dens = f"verified to {self.dps} digits" if self.dps else f"double precision, {self.digits['density']} digits"
        n = len(self.xs)
        lines += ["", f"support: edges {edges}; m_k: moments ({self.digits['moments']} digits verified, shown to 7); "
                      f"rho(x): density of the continuous part ({dens}; shown to 6)",
                  f"L1 prev/first: int_0^X |rho_a - rho_b| dx to the row above / the first row (atoms left out; "
                  f"midpoint rule in sqrt(x/X) on the common grid of {n} points, X = {self.grid_end:.6g})"]
        for line in self.skipped:
            lines.append(line)
        t = self.timings
        lines.append(f"time: {t.get('total', 0):.1f} s ({t.get('runner', '?')}); laws {t.get('laws', 0):.1f} s, "
                     f"grid {t.get('grid', 0):.1f} s; per row " +
                     ", ".join(f"{r.seconds:.1f}" for r in self.rows) + " s")
        return "\n".join(lines)

    def as_dict(self):
        """JSON-ready dictionary: numbers of the law as decimal strings, times as floats (the curves left out)."""
        return {
            "over": self.over,
            "pattern": self.pattern,
            "allocation": self.allocation,
            "beta": str(self.beta),
            "l": str(self.l),
            "d_out": str(self.d_out),
            "input_spectrum": self.input_spectrum,
            "input_position": self.input_position,
            "dps": self.dps,
            "digits": dict(self.digits),
            "points": list(self.points),
            "grid": {"points": len(self.xs), "end": _g(self.grid_end),
                     "rule": "x_i = end * ((i - 1/2)/points)^2, i = 1..points"},
            "distance": "l1 = int_0^end |rho_a - rho_b| dx (continuous parts), midpoint rule in sqrt(x/end)",
            "rows": [
                {"heads": r.heads, "width": str(r.width), "d_h": str(r.config.d_h), "d_v": str(r.config.d_v),
                 "atom_at_0": _g(r.atom), "support": [list(ab) for ab in r.support], "moments": list(r.moments),
                 "density": [{"x": x, "density": d} for x, d in zip(self.points, r.density)],
                 "l1_to_previous": None if r.to_previous is None else _g(r.to_previous),
                 "l1_to_first": _g(r.to_first), "seconds": r.seconds}
                for r in self.rows
            ],
            "skipped": list(self.skipped),
            "timings": dict(self.timings),
        }

    def curves(self):
        """``(xs, [(row, density), ...])`` as numpy arrays, for plots."""
        return np.array(self.xs), [(r, np.array(r.curve)) for r in self.rows]

    def plot(self, path):
        """Write the densities overlaid, colored by ``H`` or ``W`` (:func:`freeprob.attention.plots.plot_sweep`)."""
        return plot_sweep(self, path)


def _short(text, digits=6):
    """A decimal string shortened to ``digits`` significant digits for the table."""
    if text in ("NaN", "0"):
        return text
    return f"{float(text):.{digits}g}"


def _g(x):
    return "NaN" if not math.isfinite(x) else f"{x:.4g}"


# -- the sweep -------------------------------------------------------------------------------------


def sweep(heads=DEFAULT_HEADS, pattern="mha", beta=1, *, width=DEFAULT_WIDTH, l=1, d_h=None, d_v=None,
          d_out=DEFAULT_WIDTH, at=(), moments=4, grid=DEFAULT_GRID, dps=None, workers=None, scheduler=None,
          progress: Callable | None = None, input_spectrum=None, input_position="generic"):
    """Sweep the attention law over head counts at a fixed total width, or over widths at a fixed ``H``.

    Parameters
    ----------
    heads, pattern, beta, width, l, d_h, d_v, d_out
        The configurations, as :func:`plan_sweep` (``heads`` powers of two up
        to 128; ``d_h = d_v = W/H`` unless one of them is fixed).
    input_spectrum, input_position : optional
        Real inputs, the same in every row (:func:`plan_sweep`; docs/attention.md,
        "Real inputs"). Default: orthonormal inputs.
    at : real, str or sequence, optional
        Points where each row's density is given.
    moments : int, optional
        Moments per row, 0 to :data:`MAX_SWEEP_MOMENTS` (default 4).
    grid : int, optional
        Points of the common grid of the distances and the plot (default 400).
    dps : int, optional
        Verified digits of the edges and point densities (default: double
        precision); moments are verified to ``dps`` or 15 digits.
    workers : int, optional
        Local processes, at most one per configuration (default: as many as
        there are configurations, at most the number of cores); 1 runs every
        task in this process.
    scheduler : str, optional
        Address of a Dask scheduler (``"tcp://host:8786"``): the tasks run on
        its cluster instead (needs ``dask.distributed``: ``pip install
        'freeprob[cluster]'``; freeprob installed on the workers).
    progress : callable, optional
        ``progress(stage, done, total, label)`` after each finished
        configuration; ``stage`` is ``"laws"`` then ``"grid"``.

    Returns
    -------
    SweepResult

    Raises
    ------
    DomainError, ShapeError, RegimeError, EquivalenceError
        Bad input (:func:`plan_sweep`, points, ``moments``, ``grid``,
        ``workers``, the input spectrum or position), before any law is made.
    MissingDependencyError
        ``scheduler`` without dask.distributed installed.
    ClusterError
        A scheduler that cannot be reached.
    ConvergenceError
        A law that cannot be verified; the message names the configuration.

    Examples
    --------
    >>> res = sweep(heads=(1, 2), moments=1, grid=50, workers=1)
    >>> [(row.heads, str(row.config.d_h), row.moments[0]) for row in res.rows]  # m_1 = (d_out/l)(e - 1) for all H
    [(1, '1/2', '0.859140914229523'), (2, '1/4', '0.859140914229523')]
    >>> res.rows[1].to_previous > 0          # yet the law moves
    True
    """
    t0 = time.perf_counter()
    plan = plan_sweep(heads, pattern, beta, width=width, l=l, d_h=d_h, d_v=d_v, d_out=d_out,
                      input_spectrum=input_spectrum, input_position=input_position)
    labels_at, values_at = _points(at)
    moments = _count(moments, "moments", 0, MAX_SWEEP_MOMENTS)
    grid = _count(grid, "grid", 2, MAX_GRID)
    if dps is not None:
        dps = _count(dps, "dps", 1, 2000)
    if scheduler is not None and workers is not None:
        raise DomainError("workers= is for local processes; with a Dask scheduler its cluster decides")
    n = len(plan.configs)
    if scheduler is None:
        workers = min(n, os.cpu_count() or 1) if workers is None else min(n, positive_int("workers", workers))
        where = "this process" if workers == 1 else f"{workers} local processes"
    else:
        if not isinstance(scheduler, str) or not scheduler.strip():
            raise DomainError(f"scheduler must be the address of a Dask scheduler, got {scheduler!r}")
        where = f"Dask scheduler {scheduler}"
    labels = [_config_label(plan, k) for k in range(n)]
    timings = {"runner": where}
    with _runner(workers, scheduler) as run:
        t = time.perf_counter()
        summaries = _stage(run, summarize_config, [(c, values_at, moments, dps) for c in plan.configs], labels,
                           "laws", progress)
        timings["laws"] = time.perf_counter() - t
        ends = [float(s["support"][-1][1]) for s in summaries if s["support"]]
        if not ends:
            raise ConvergenceError("no configuration of the sweep has a continuous part: nothing to tabulate")
        top = max(ends)
        xs = common_grid(top, grid)
        t = time.perf_counter()
        tables = _stage(run, tabulate_config, [(c, xs) for c in plan.configs], labels, "grid", progress)
        timings["grid"] = time.perf_counter() - t
    rows = []
    for k, (cfg, w, s, (curve, seconds)) in enumerate(zip(plan.configs, plan.widths, summaries, tables)):
        atom = rank_atom(cfg)
        rows.append(SweepRow(
            cfg, w, atom[0][1] if atom else 0.0, tuple(tuple(ab) for ab in s["support"]), tuple(s["moments"]),
            tuple(s["density"]), curve, None if k == 0 else l1_distance(curve, tables[k - 1][0], xs),
            l1_distance(curve, tables[0][0], xs), s["seconds"] + seconds))
    timings["total"] = time.perf_counter() - t0
    first = plan.configs[0]
    digits = {"support": dps or EDGE_DIGITS, "moments": dps or 15, "density": dps or FAST_DIGITS}
    return SweepResult(plan.over, first.spec, plan.allocation, first.beta, first.l, first.d_out, labels_at, dps,
                       MappingProxyType(digits), tuple(rows), plan.skipped, GRID_MARGIN * top,
                       tuple(float(x) for x in xs), MappingProxyType(timings))


def _count(value, name, lo, hi):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
        raise DomainError(f"{name} must be an integer from {lo} to {hi}, got {value!r}")
    return int(value)


def _config_label(plan, k):
    c = plan.configs[k]
    return f"H = {c.heads}, W = {plan.widths[k]} (d_h = {c.d_h}, d_v = {c.d_v})"
