"""Shared helpers of the benchmarks: timing (ratios are what is reported) and the engine's built-in models."""

import os
import time

import freeprob as fp


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


def engine_models():
    """The built-in models the engine reduces to a SpectralLaw: not a continuous variance profile (a
    ProfileLaw, bench_profile.py) and not the named causal-attention model (a CausalLaw, bench_causal.py)."""
    out = []
    for name in fp.builtin_models():
        model = fp.find_model(name)
        if model.kind == "expression" and not fp.has_continuous_profile(model.expr):
            out.append(name)
    return out
