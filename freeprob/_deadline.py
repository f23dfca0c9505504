"""A hard wall-clock limit for one long exact computation.

Elimination spends its time inside single calls to compiled code (a
resultant in python-flint, a factorization in sympy), where a cooperative
budget check or a signal cannot interrupt it: one step alone took 260 s on a
two-head attention model with a 30 s budget. :func:`call_with_deadline` runs
the computation in a forked child process and kills it at the deadline; the
result comes back pickled. Where ``fork`` is not available the computation
runs in this process and only its own cooperative budget applies.
"""

import multiprocessing
import pickle
import warnings

__all__ = ["call_with_deadline"]


def _child(conn, fn, args, kwargs):
    try:
        result = ("ok", fn(*args, **kwargs))
    except BaseException as exc:  # noqa: BLE001 - every failure is reported to the parent
        result = ("error", exc)
    try:
        conn.send_bytes(pickle.dumps(result))
    except Exception as exc:  # an unpicklable result or exception
        conn.send_bytes(pickle.dumps(("error", RuntimeError(f"{type(exc).__name__}: {exc}"))))
    finally:
        conn.close()


def call_with_deadline(fn, args=(), kwargs=None, seconds=None, on_timeout=None):
    """``fn(*args, **kwargs)``, stopped after ``seconds`` of wall-clock time.

    Parameters
    ----------
    fn : callable
        Its result must be picklable.
    seconds : float or None
        None: call ``fn`` directly.
    on_timeout : callable
        ``on_timeout(seconds)`` returns the exception raised at the deadline.

    Examples
    --------
    >>> call_with_deadline(pow, (2, 10), seconds=30)
    1024
    >>> import time
    >>> call_with_deadline(time.sleep, (60,), seconds=0.5, on_timeout=lambda s: TimeoutError(f"over {s} s"))
    Traceback (most recent call last):
    ...
    TimeoutError: over 0.5 s
    """
    kwargs = kwargs or {}
    if seconds is None or "fork" not in multiprocessing.get_all_start_methods():
        return fn(*args, **kwargs)
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    with warnings.catch_warnings():
        # Python >= 3.12 warns that forking a threaded process may deadlock; the
        # child only runs exact (sympy / flint) code and is killed at the deadline
        warnings.simplefilter("ignore", DeprecationWarning)
        proc = ctx.Process(target=_child, args=(send, fn, args, kwargs), daemon=True)
        proc.start()
    send.close()
    try:
        if not recv.poll(seconds):
            proc.kill()
            raise on_timeout(seconds)
        try:
            status, value = pickle.loads(recv.recv_bytes())
        except EOFError:  # the child died without a word (killed, out of memory)
            raise RuntimeError(f"the computation in a child process ended with exit code {proc.exitcode}") from None
    finally:
        recv.close()
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join()
    if status == "error":
        raise value
    return value
