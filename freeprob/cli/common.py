"""What every subcommand shares: the model argument, ``--set``, argument types, output checks, number printing."""

import argparse
import math
import os
import sys
from pathlib import Path

from .. import FreeProbError, find_model
from .._precision import mp_to_str

__all__ = [
    "MAX_DPS",
    "MAX_GRID",
    "MAX_MOMENTS",
    "check_output_paths",
    "grid_spec",
    "integer_in",
    "json_default",
    "write_csv",
    "model_of",
    "number_text",
    "parse_sets",
    "plot_formats",
    "point_list",
]


def parse_sets(items):
    """``["p=1/2", ...]`` -> ``{"p": "1/2"}``; values are read later by the model's one number reader."""
    out = {}
    for item in items or []:
        if "=" not in item:
            raise FreeProbError(f"--set expects NAME=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def model_of(args):
    """The model named by ``args.model`` with the ``--set`` overrides applied."""
    model = find_model(args.model)
    overrides = parse_sets(getattr(args, "set", None))
    return model.with_values(overrides) if overrides else model


def json_default(x):
    """JSON for a value ``json`` does not know: a float when it has one (``"inf"``/``"nan"`` as text), else text."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    return v if math.isfinite(v) else str(v)


def write_csv(path, rows, columns):
    """Write the grid ``rows`` (dicts of strings) to ``path`` as CSV with the given ``columns``."""
    with open(path, "w") as fh:
        fh.write(",".join(columns) + "\n")
        for r in rows:
            fh.write(",".join(r[c] for c in columns) + "\n")


def number_text(x, dps):
    """Decimal string of a real number with ``dps`` significant digits."""
    return mp_to_str(x, dps)


# -- argument types: refused by argparse with a clean message, before any work --

#: Largest number of digits the command line computes with.
MAX_DPS = 2000
#: Largest grid the command line tabulates.
MAX_GRID = 100000
#: Most moments the command line computes (``law --moments``, ``moments -k``).
MAX_MOMENTS = 200  # the engine's own limit too (freeprob.law.MAX_MOMENTS)


def integer_in(lo, hi, what):
    """An argparse type: an integer in ``[lo, hi]``."""

    def read(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be an integer, got {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{what} must be between {lo} and {hi}, got {value}")
        return value

    read.__name__ = what  # argparse names the type in its messages
    return read


def point_list(text):
    """An argparse type for ``--at``: at least one comma-separated point (read later, exactly)."""
    tokens = [t.strip() for t in text.split(",")]
    if not any(tokens):
        raise argparse.ArgumentTypeError("--at needs at least one point, e.g. --at 0.5,1,2")
    if not all(tokens):
        raise argparse.ArgumentTypeError(f"--at has an empty point in {text!r}")
    return text


def grid_spec(text):
    """An argparse type for ``--grid A:B:N``: finite ``A < B`` and ``2 <= N <= MAX_GRID``."""
    parts = text.split(":")
    try:
        a, b, n = float(parts[0]), float(parts[1]), int(parts[2])
        if len(parts) != 3:
            raise ValueError
    except (ValueError, IndexError):
        raise argparse.ArgumentTypeError(f"--grid expects A:B:N (numbers A < B, an integer N), got {text!r}") from None
    if not (math.isfinite(a) and math.isfinite(b)) or not a < b:
        raise argparse.ArgumentTypeError(f"--grid needs finite A < B, got {text!r}")
    if not 2 <= n <= MAX_GRID:
        raise argparse.ArgumentTypeError(f"--grid needs 2 <= N <= {MAX_GRID} points, got {n}")
    return text


def check_output_paths(args):
    """Refuse an output file that cannot be written, before any computation.

    Looks at ``--plot``, ``--csv`` and ``--emit``; a plot's format must be one
    matplotlib writes.
    """
    for option in ("plot", "csv", "emit"):
        value = getattr(args, option, None)
        if not value:
            continue
        path = Path(value)
        flag = f"--{option}"
        if path.is_dir():
            raise FreeProbError(f"{flag} {value}: is a directory; give a file name")
        parent = path.parent if str(path.parent) else Path(".")
        if not parent.is_dir():
            raise FreeProbError(f"{flag} {value}: the folder {parent} does not exist")
        if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            raise FreeProbError(f"{flag} {value}: not writable")
        if option == "plot":
            formats = plot_formats()
            suffix = path.suffix.lstrip(".").lower()
            if suffix not in formats:
                raise FreeProbError(f"--plot {value}: unknown picture format {path.suffix or '(none)'}; "
                                    f"use one of {', '.join('.' + f for f in sorted(formats))}")


def plot_formats():
    """File formats matplotlib writes (png, pdf, svg, ...)."""
    from matplotlib.figure import Figure

    return set(Figure().canvas.get_supported_filetypes())


def progress_bar(enabled, desc, total=None, unit="step"):
    """``(tick, close)`` of a tqdm bar on standard error, or no-ops when not ``enabled``.

    Commands enable it when standard error is a terminal and ``--json`` is not
    given: output meant for a machine, a file or a pipe carries no progress.
    ``tick(label="")`` advances the bar by one and shows ``label``.
    """
    if not enabled:
        return (lambda label="": None), (lambda: None)
    from tqdm import tqdm

    bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True, mininterval=0.2)

    def tick(label=""):
        if label:
            bar.set_postfix_str(label, refresh=False)
        bar.update(1)

    return tick, bar.close


def wants_progress(args):
    """Progress is shown on a terminal, never with ``--json``."""
    return not getattr(args, "json", False) and sys.stderr.isatty()
