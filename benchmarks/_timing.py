"""Shared timing helper of the benchmarks (ratios are what is reported)."""

import time


def best_of(fn, repeat=3):
    """The shortest of ``repeat`` wall-clock times of ``fn()``, in seconds."""
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)
