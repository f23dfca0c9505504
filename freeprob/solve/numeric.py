"""Numeric form of a fully substituted :class:`DysonSystem`.

The one crossing from exact sympy numbers to floating point: to complex128
arrays for the vectorized path, or to numbers of a given mpmath context for
the high-precision path. Both evaluate the same map

    Phi(g) = read( (Lambda(z, eps) - B - eta(g))^{-1} )

and its Jacobian ``dPhi = read(F (d eta) F)``.
"""

import copy
import threading
from dataclasses import dataclass

import mpmath
import numpy as np
import sympy

from .._errors import ConvergenceError, DomainError
from .._precision import flint_precision, to_mpc

__all__ = ["FastSystem", "MPSystem", "NumericSystems", "fast_system", "mp_system"]



def _check_numeric(system):
    if system.symbols:
        names = ", ".join(map(str, system.symbols))
        raise DomainError(f"the system still depends on {names}: give values for these ratios or parameters")


def _complex(c):
    c = sympy.sympify(c)
    v = complex(c.evalf(20))
    return v


@dataclass(frozen=True)
class _Space:
    k: int
    u: np.ndarray  # bool mask of u rows
    b: np.ndarray  # (k, k) complex
    eta_map: tuple  # (used unknowns, flat positions, matrix): -eta_flat[pos] = g[:, used] @ matrix
    ti: np.ndarray
    tj: np.ndarray
    tk: np.ndarray
    tc: np.ndarray
    rk: np.ndarray  # unknowns read in this space
    rp: np.ndarray
    rq: np.ndarray
    base: np.ndarray  # -B flattened
    zdiag: np.ndarray  # flat positions of the diagonal entries of the u rows (z goes there)
    ediag: np.ndarray  # flat positions of the other diagonal entries (i eps goes there)


class FastSystem:
    """complex128 arrays of a Dyson system, for many points at once."""

    def __init__(self, system):
        _check_numeric(system)
        self.system = system
        r = system.n_unknowns
        self.r = r
        spaces = []
        for k, u, b, terms, reads in system.block_data(_complex):
            u = np.array(u, bool)
            b = np.array(b, dtype=complex).reshape(k, k)
            ti = np.array([t[0] for t in terms], int)
            tj = np.array([t[1] for t in terms], int)
            tk = np.array([t[2] for t in terms], int)
            tc = np.array([t[3] for t in terms], complex)
            # -eta at the few positions it touches: g[:, used] @ emap -> (P, len(pos))
            pos = sorted({i * k + j for i, j, _, _ in terms})
            used = sorted({kk for _, _, kk, _ in terms})
            emap = np.zeros((len(used), len(pos)), complex)
            for i, j, kk, c in terms:
                emap[used.index(kk), pos.index(i * k + j)] -= c
            diag = np.arange(k) * (k + 1)
            spaces.append(
                _Space(
                    k, u, b, (np.array(used, int), np.array(pos, int), emap), ti, tj, tk, tc,
                    np.array([x[0] for x in reads], int),
                    np.array([x[1] for x in reads], int),
                    np.array([x[2] for x in reads], int),
                    -b.reshape(-1),
                    diag[u],
                    diag[~u],
                )
            )
        self.spaces = spaces
        self.outputs = tuple(system.u)
        self._fuse()

    def _fuse(self):
        """Index arrays over all spaces at once: the matrices of all spaces side by side in one flat
        row per point (spaces of one size adjacent, so that each size is inverted in one batched call),
        and the reads, outputs and Jacobian products as positions in it. A system of many small spaces
        (one per head group) then costs a few array operations per evaluation, not a few per space."""
        r = self.r
        order = sorted(range(len(self.spaces)), key=lambda s: self.spaces[s].k)
        off = {}
        at = 0
        groups = []
        for s in order:
            k = self.spaces[s].k
            off[s] = at
            if groups and groups[-1][0] == k:
                groups[-1][2] += 1
            else:
                groups.append([k, at, 1])
            at += k * k
        self._total = at
        self._groups = [(k, start, count) for k, start, count in groups]
        self._off = off
        base = np.zeros(at, complex)
        zpos, epos, eta = [], [], {}
        read_k, read_pos = [], []
        left, right, coef, target = [], [], [], []
        for s, sp in enumerate(self.spaces):
            k, o = sp.k, off[s]
            base[o:o + k * k] = sp.base
            zpos.extend(o + sp.zdiag)
            epos.extend(o + sp.ediag)
            for i, j, kk, c in zip(sp.ti, sp.tj, sp.tk, sp.tc):
                eta[(int(kk), o + i * k + j)] = eta.get((int(kk), o + i * k + j), 0) - c
            read_k.extend(sp.rk)
            read_pos.extend(o + sp.rp * k + sp.rq)
            for a, p, q in zip(sp.rk, sp.rp, sp.rq):
                left.extend(o + p * k + sp.ti)
                right.extend(o + sp.tj * k + q)
                coef.extend(sp.tc)
                target.extend(a * r + sp.tk)
        self._base = base
        self._zpos = np.array(zpos, int)
        self._epos = np.array(epos, int)
        # -eta as a sparse sum, c g[kk] into position q, summed per position: no
        # matrix product (a product of this size is threaded by BLAS, and stalls
        # when the machine is busy)
        items = sorted(((q, kk), c) for (kk, q), c in eta.items())
        qs = np.array([q for (q, _), _ in items], int)
        pos, starts = np.unique(qs, return_index=True)
        self._eta = (np.array([kk for (_, kk), _ in items], int), np.array([c for _, c in items], complex), pos,
                     starts)
        self._read_k = np.array(read_k, int)
        self._read_pos = np.array(read_pos, int)
        self._out_pos = np.array([off[s] + i * self.spaces[s].k + i for s, i in self.outputs], int)
        target = np.array(target, int)
        srt = np.argsort(target, kind="stable")
        targets, starts = np.unique(target[srt], return_index=True)
        self._pairs = (np.array(left, int)[srt], np.array(right, int)[srt], np.array(coef, complex)[srt],
                       targets, starts)

    def _flat_inverses(self, g, z, eps):
        """All ``F_s`` for all points, side by side: (P, sum of k^2) in the fused layout."""
        P = g.shape[0]
        a = np.broadcast_to(self._base, (P, self._total)).copy()
        kk, cc, pos, starts = self._eta
        if len(pos):
            a[:, pos] += np.add.reduceat(g[:, kk] * cc, starts, axis=1)
        a[:, self._zpos] += z[:, None]
        a[:, self._epos] += (1j * eps)[:, None]
        out = np.empty_like(a)
        for k, start, count in self._groups:
            end = start + count * k * k
            out[:, start:end] = _inv(a[:, start:end].reshape(P * count, k, k)).reshape(P, count * k * k)
        return out

    def inverses(self, g, z, eps):
        """Per space, ``F_s = (Lambda - B - eta(g))^{-1}`` for all points: list of (P, k, k)."""
        flat = self._flat_inverses(g, z, eps)
        P = g.shape[0]
        return [flat[:, self._off[s]:self._off[s] + sp.k * sp.k].reshape(P, sp.k, sp.k)
                for s, sp in enumerate(self.spaces)]

    def phi(self, g, z, eps, jacobian=False):
        """``Phi(g)`` (P, r), the outputs (P, n_u) and optionally ``dPhi`` (P, r, r).

        The Jacobian entry of an unknown ``a`` read at ``F[p, q]`` with respect
        to an unknown ``b`` is ``sum_t c_t F[p, i_t] F[j_t, q]`` over the terms
        ``t = (i_t, j_t, b, c_t)`` of ``eta`` in the same space; the products are
        formed for all (read, term) pairs at once and summed per unknown.

        Overflow gives inf or NaN entries, without a warning: every caller
        checks the residual, and a non-finite one is a failed point.
        """
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return self._phi(g, z, eps, jacobian)

    def _phi(self, g, z, eps, jacobian):
        f = self._flat_inverses(g, z, eps)
        P = g.shape[0]
        phi = np.zeros((P, self.r), complex)
        phi[:, self._read_k] = f[:, self._read_pos]
        jac = None
        if jacobian:
            jac = np.zeros((P, self.r * self.r), complex)
            left, right, coef, targets, starts = self._pairs
            if len(left):
                # every (read, term) product of every space at once, summed per Jacobian entry
                contrib = f[:, left] * f[:, right] * coef
                jac[:, targets] = np.add.reduceat(contrib, starts, axis=1)
            jac = jac.reshape(P, self.r, self.r)
        outs = f[:, self._out_pos]
        return phi, outs, jac


def _inv(a):
    """Batched inverse; singular points give NaN instead of failing the batch."""
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        out = np.full_like(a, np.nan)
        for i in range(a.shape[0]):
            try:
                out[i] = np.linalg.inv(a[i])
            except np.linalg.LinAlgError:
                pass
        return out


def fast_system(system):
    """The :class:`FastSystem` of a fully substituted Dyson system."""
    return FastSystem(system)


class MPSystem:
    """A Dyson system at the precision of an mpmath context, for one point at a time.

    The linear algebra (the inverses of the blocks, and the ``r x r`` system of
    a Newton step, :meth:`newton_step`) runs in python-flint's ``acb_mat``
    (ball arithmetic in C, far faster than mpmath matrices) at the context's
    precision plus 20 bits, entered through
    :func:`~freeprob._precision.flint_precision` (flint's precision is
    process-wide: a lock holds it); numbers cross back to the mpmath context
    as the balls' midpoints. A block that is singular within the working
    precision raises :class:`~freeprob.ConvergenceError`.
    """

    def __init__(self, system, ctx):
        import flint

        _check_numeric(system)
        self.system = system
        self.ctx = ctx
        self.r = system.n_unknowns
        self.bits = ctx.prec
        self.prec = ctx.prec + 20
        self.spaces = []
        balls = {}  # a coefficient repeats across blocks (0 and 1 most of all): each is converted once

        def ball(c):
            if c not in balls:
                balls[c] = flint.acb(to_mpc(ctx, c))
            return balls[c]

        with flint_precision(self.prec):
            for k, u, b, terms, reads in system.block_data(ball):
                self.spaces.append((k, u, [[-x for x in row] for row in b], terms, reads))
        self.outputs = tuple(system.u)

    def in_context(self, ctx):
        """The same system for another context of the same precision (the balls are shared, not rebuilt)."""
        if ctx.prec != self.bits:
            raise ValueError(f"context precision {ctx.prec} bits differs from the system's {self.bits}")
        out = copy.copy(self)
        out.ctx = ctx
        return out

    def _mpc(self, x):
        return self.ctx.make_mpc((x.real.mid()._mpf_, x.imag.mid()._mpf_))

    def _evaluate(self, g, z, eps, jacobian):
        """``(gb, phi, fs, jac)`` as flint balls: the unknowns, ``Phi(g)``, the
        inverses per space and the Jacobian's rows (or None). The caller holds
        :func:`~freeprob._precision.flint_precision` at ``self.prec``."""
        import flint

        r = self.r
        gb = [flint.acb(self.ctx.mpc(x)) for x in g]
        zb = flint.acb(self.ctx.mpc(z))
        eb = flint.acb(0, flint.arb(self.ctx.mpf(eps)))
        zero = flint.acb(0)
        phi = [zero] * r
        jac = [[zero] * r for _ in range(r)] if jacobian else None
        fs = []
        for k, u, base, terms, reads in self.spaces:
            a = flint.acb_mat(base)
            for i in range(k):
                a[i, i] += zb if u[i] else eb
            for i, j, kk, c in terms:
                a[i, j] -= c * gb[kk]
            try:
                f = a.inv()
            except ZeroDivisionError:
                raise ConvergenceError(
                    f"the Dyson matrix is singular within {self.ctx.dps} digits at z = {self.ctx.nstr(z, 15)}",
                    point=z,
                ) from None
            fs.append(f)
            for kk, p, q in reads:
                phi[kk] = f[p, q]
            if jacobian:
                for kk, p, q in reads:
                    row = jac[kk]
                    for i, j, k2, c in terms:
                        row[k2] += c * f[p, i] * f[j, q]
        return gb, phi, fs, jac

    def phi(self, g, z, eps, jacobian=False):
        """``Phi(g)``, outputs and optionally the Jacobian, as lists of mpc."""
        with flint_precision(self.prec):
            _, phi, fs, jac = self._evaluate(g, z, eps, jacobian)
            outs = [self._mpc(fs[s][i, i]) for s, i in self.outputs]
            phi = [self._mpc(x) for x in phi]
            if jacobian:
                jac = [[self._mpc(x) for x in row] for row in jac]
        return phi, outs, jac

    def phi_and_jv(self, g, z, eps, v):
        """``Phi(g)`` and the Jacobian applied to ``v``, ``dPhi v``, as lists of mpc.

        The product is formed in flint (``acb_mat``), so the ``r x r`` Jacobian
        never crosses to mpmath numbers (the fold residual of an edge needs only
        ``dPhi v``).
        """
        import flint

        with flint_precision(self.prec):
            _, phi, _, jac = self._evaluate(g, z, eps, True)
            vb = flint.acb_mat([[flint.acb(self.ctx.mpc(x))] for x in v])
            jv = flint.acb_mat(jac) * vb
            return [self._mpc(x) for x in phi], [self._mpc(jv[k, 0]) for k in range(self.r)]

    def residual(self, g, phi):
        """``max |g - Phi(g)| / max(1, max |g|)``, the measure Newton's method is stopped on (an mpf)."""
        ctx = self.ctx
        gnorm = max([abs(x) for x in g] + [ctx.mpf(1)])
        return max([abs(a - b) for a, b in zip(g, phi)] + [ctx.mpf(0)]) / gnorm

    def newton_step(self, g, z, eps, tol=None):
        """One Newton step on ``g = Phi(g)``: ``(phi, outputs, residual, delta)``.

        ``delta`` solves ``(I - dPhi) delta = g - Phi(g)`` (the next iterate is
        ``g - delta``). The ``r x r`` system is solved by flint's
        ``acb_mat.solve`` (LU on the balls' midpoints, ``algorithm="approx"``:
        a Newton step needs no error bound, the residual of the next iterate
        is what is checked) at the working precision, and crosses back as
        midpoints. ``delta`` is None when ``residual < tol`` (no step needed)
        or when ``I - dPhi`` is singular at the working precision.

        Parameters
        ----------
        g : list of mpc
        z : mpc
        eps : mpf
        tol : mpf, optional

        Returns
        -------
        phi, outputs : list of mpc
        residual : mpf
            :meth:`residual` of ``g``.
        delta : list of mpc or None
        """
        import flint

        r = self.r
        with flint_precision(self.prec):
            gb, phi_b, fs, jac = self._evaluate(g, z, eps, True)
            outs = [self._mpc(fs[s][i, i]) for s, i in self.outputs]
            phi = [self._mpc(x) for x in phi_b]
            res = self.residual(g, phi)
            if tol is not None and res < tol:
                return phi, outs, res, None
            one = flint.acb(1)
            a = flint.acb_mat([[(one if i == j else 0) - jac[i][j] for j in range(r)] for i in range(r)])
            b = flint.acb_mat([[gb[k] - phi_b[k]] for k in range(r)])
            try:
                x = a.solve(b, algorithm="approx")
            except ZeroDivisionError:
                return phi, outs, res, None
            delta = [self._mpc(x[k, 0]) for k in range(r)]
        return phi, outs, res, delta


def mp_system(system, ctx):
    """The :class:`MPSystem` of a fully substituted Dyson system in the context ``ctx``."""
    return MPSystem(system, ctx)


class NumericSystems:
    """The numeric forms of one fully substituted system, each built once.

    The :class:`FastSystem`, and one :class:`MPSystem` per working precision
    (the sympy -> ball crossing is the expensive part of a high-precision
    point). Safe to share between threads: construction is under a lock, and
    :meth:`mp` hands each caller the cached balls bound to the caller's own
    mpmath context (mpmath's linear algebra changes its context's precision
    while it runs, so a context is never shared).
    """

    def __init__(self, system):
        _check_numeric(system)
        self.system = system
        self._lock = threading.Lock()
        self._fast = None
        self._mp = {}

    @property
    def fast(self):
        """The :class:`FastSystem` (built on first use)."""
        with self._lock:
            if self._fast is None:
                self._fast = FastSystem(self.system)
            return self._fast

    def mp(self, ctx):
        """The :class:`MPSystem` at the precision of ``ctx``, bound to ``ctx``."""
        with self._lock:
            mpsys = self._mp.get(ctx.prec)
            if mpsys is None:
                # built in a private context of the same precision, never handed out
                own = mpmath.MPContext()
                own.prec = ctx.prec
                mpsys = self._mp[ctx.prec] = MPSystem(self.system, own)
        return mpsys.in_context(ctx)
