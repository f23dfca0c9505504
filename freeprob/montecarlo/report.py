"""Text cells of the Monte-Carlo reports (``freeprob check``, ``freeprob attention check``).

A fixed-width column printed with ``f"{x:>12.6g}"`` touches the column before
it as soon as the number needs all twelve characters (``-1.88452e+44``), and
the table no longer reads. :func:`cell` keeps one space in front of every
value, whatever its length.
"""

__all__ = ["cell"]


def cell(value, spec, width):
    """``value`` formatted by ``spec``, right-aligned in ``width`` and never touching the column before it.

    Examples
    --------
    >>> cell(1.5, ".3g", 6)
    '   1.5'
    >>> cell(-1.8845222804e44, ".6g", 12)
    ' -1.88452e+44'
    """
    return " " + f"{value:{spec}}".rjust(width - 1)
