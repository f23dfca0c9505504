"""The description of a model read from a model file: a frozen value, no law (``freeprob.law_of`` builds that)."""

from collections.abc import Mapping
from types import MappingProxyType

from .._errors import DomainError
from .._numbers import read_number

__all__ = ["Model", "toml_string"]


class Model:
    """A model read from a file: expression, law kind, ratios and parameters.

    A frozen description (``ratios``, ``params`` and ``indices`` are
    read-only mappings); :func:`freeprob.law_of` builds its
    :class:`~freeprob.SpectralLaw`. ``expr`` is the expanded expression
    (sums over indices written out); ``expression`` the text of the file;
    ``indices`` the integer constants of ``[indices]`` (``{name: int}``).
    """

    __slots__ = ("name", "description", "law_kind", "expression", "expr", "ratios", "params", "source", "indices")
    #: What describes the model: an expression of the engine (a named model such as
    #: :class:`~freeprob.expr.causal_model.CausalModel` says which).
    kind = "expression"

    def __init__(self, name, description, law, expression, expr, ratios, params, source=None, indices=None):
        init = object.__setattr__
        init(self, "name", name)
        init(self, "description", description)
        init(self, "law_kind", law)
        init(self, "expression", expression)
        init(self, "expr", expr)
        init(self, "ratios", MappingProxyType(dict(ratios)))
        init(self, "params", MappingProxyType(dict(params)))
        init(self, "source", source)
        init(self, "indices", MappingProxyType(dict(indices or {})))

    def __setattr__(self, name, value):
        raise AttributeError(f"a Model is immutable (cannot set {name!r}); use with_values for a changed copy")

    def __delattr__(self, name):
        raise AttributeError(f"a Model is immutable (cannot delete {name!r})")

    def with_values(self, overrides):
        """A copy with some dimensions or parameters replaced (``{name: value}``)."""
        if not isinstance(overrides, Mapping):
            raise DomainError(f"with_values expects a mapping {{name: value}}, got {overrides!r}")
        ratios = dict(self.ratios)
        params = dict(self.params)
        by_name = {str(k): k for k in list(ratios) + list(params)}
        for key, value in overrides.items():
            if key in self.indices:
                raise DomainError(f"--set {key}: {key} is an index range of model {self.name} (it fixes the number of "
                                  f"terms of its sums); change it under [indices] in the model file")
            if key not in by_name:
                known = ", ".join(sorted(by_name)) or "none"
                raise DomainError(f"--set {key}: model {self.name} has no dimension or parameter {key} (known: {known})")
            sym = by_name[key]
            v = read_number(value, what=f"--set {key}")
            if sym in ratios:
                if not v.is_number or not v > 0:
                    raise DomainError(f"--set {key}={value}: a ratio must be a positive number")
                ratios[sym] = v
            else:
                params[sym] = v
        return type(self)(self.name, self.description, self.law_kind, self.expression, self.expr, ratios, params,
                          self.source, self.indices)


def toml_string(text):
    """``text`` as a TOML basic string, for the names and descriptions a model file is written with.

    Raises :class:`~freeprob.DomainError` for quotes, backslashes and control characters (a newline among
    them), which the file could not carry as written: the name or description is refused before the file is
    written, not read back broken.

    >>> toml_string("attention-mha-h2")
    '"attention-mha-h2"'
    """
    text = str(text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (a byte that was not UTF-8 on the command line)
        raise DomainError(f"cannot write {text!r} as a TOML string (not valid UTF-8 text); choose another "
                          f"name") from None
    if any(ch in text for ch in '"\\') or any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise DomainError(f"cannot write {text!r} as a TOML string (quotes, backslashes or control characters such "
                          f"as a newline); choose a name without them")
    return f'"{text}"'

