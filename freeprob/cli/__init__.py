"""The ``freeprob`` command line (rank 6): it uses only the public names of freeprob."""

from .engine import build_parser, main

__all__ = ["build_parser", "main"]
