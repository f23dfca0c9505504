"""What every subcommand shares: the model argument, ``--set`` and number printing."""

from .. import FreeProbError
from .._precision import mp_to_str
from .. import find_model

__all__ = ["model_of", "number_text", "parse_sets"]


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


def number_text(x, dps):
    """Decimal string of a real number with ``dps`` significant digits."""
    return mp_to_str(x, dps)
