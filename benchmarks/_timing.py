"""Shared timing helper of the benchmarks (ratios are what is reported)."""

import os
import time


def best_of(fn, repeat=3):
    """The shortest of ``repeat`` wall-clock times of ``fn()``, in seconds."""
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def load_text():
    """The machine's load averages (1, 5, 15 minutes), printed next to the figures: other
    processes on the same cores slow both sides of a ratio, but not always alike."""
    try:
        return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"
