"""Model files of causal attention: a named model, given by its widths and parameters instead of an expression.

::

    name = "attention-causal"
    law = "squared-singular-values"
    model = "causal-attention"          # a named model: no expression, no [matrices]

    [indices]
    H = 1                               # independent heads (the mha pattern); default 1

    [dimensions]                        # ratios to the length l (l may be left out: 1)
    l = 1
    d_h = "1/2"
    d_v = "1/2"
    d_out = "1/2"

    [parameters]
    beta = 1
    skip = "1/10"                       # the fraction of first tokens left out; default 1/10

The masked score product ``1[j <= i] (Q K^T)_ij`` of causal attention is not
a polynomial in independent Gaussian matrices, the algebra an ``expression``
describes, so the model is named rather than written out; its law is
:class:`freeprob.CausalLaw` (``freeprob.causal_law_of(model)``), solved by
its own cell equation (docs/causal.md, section 6). The values are read
exactly and checked for sign here; their ranges (``beta``, the widths,
``skip``'s denominator, ``H``) are checked where the law is built.
"""

from collections.abc import Mapping

import sympy

from .._errors import DomainError, ModelFileError
from .._numbers import read_number
from .model import Model, toml_string

__all__ = ["CAUSAL_EXPRESSION", "CausalModel", "DEFAULT_SKIP", "MAX_HEADS", "MODEL_KINDS", "causal_model_text",
           "parse_causal_model"]

#: The named models a model file may give as ``model = ...``.
MODEL_KINDS = ("causal-attention",)
#: The default fraction of first tokens left out.
DEFAULT_SKIP = sympy.Rational(1, 10)
#: Most independent heads of the causal law (its cost does not grow with them; the bound keeps inputs sane).
MAX_HEADS = 1024

#: What a causal-attention model describes (its ``expression`` in listings and plot titles; not parsed).
CAUSAL_EXPRESSION = ("sum_h sqrt(l) (A_h - M) V_h W_h over the rows i > skip l, A_h the causal softmax of "
                     "beta Q_h K_h^T / sqrt(d_h), M its mean")

_KEYS = ("name", "description", "law", "model", "indices", "dimensions", "parameters")
_EXPRESSION_KEYS = ("expression", "matrices", "functions", "define")
_WIDTHS = ("d_h", "d_v", "d_out")
_DEFAULTS = {"l": sympy.Integer(1), "skip": DEFAULT_SKIP}


class CausalModel(Model):
    """A causal-attention model file: the widths (ratios ``l``, ``d_h``, ``d_v``, ``d_out``), the parameters
    ``beta`` and ``skip``, and the number of heads ``indices["H"]``; ``expr`` is ``None``.

    ``with_values`` replaces them as for any model, ``H`` included (the
    cost of the causal law does not grow with the number of heads).
    """

    __slots__ = ()
    kind = "causal-attention"

    @property
    def heads(self):
        """The number of independent heads."""
        return self.indices["H"]

    def with_values(self, overrides):
        """A copy with some widths, parameters or the number of heads ``H`` replaced (``{name: value}``)."""
        if not isinstance(overrides, Mapping):
            return super().with_values(overrides)  # the base class refuses a non-mapping with its message
        rest = dict(overrides)
        known = {str(k) for k in list(self.ratios) + list(self.params)} | {"H"}
        for key in rest:
            if key not in known:
                raise DomainError(f"--set {key}: model {self.name} has no width, parameter or index {key} (known: "
                                  f"{', '.join(sorted(known))})")
        heads = self.heads
        if "H" in rest:
            heads = _heads(rest.pop("H"), "--set H")
        copy = super().with_values(rest) if rest else self
        source = f"{self.source} with {', '.join(f'{k} = {v}' for k, v in overrides.items())} set"
        return CausalModel(copy.name, copy.description, copy.law_kind, copy.expression, None, copy.ratios,
                           copy.params, source, {"H": heads})


def _fail(where, key, message):
    raise ModelFileError(f"{where}: [{key}] {message}")


def _heads(value, what):
    """The number of heads from a file's integer or a ``--set`` string, read by the one number reader."""
    message = f"{what}: the number of heads must be an integer between 1 and {MAX_HEADS}"
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise DomainError(f"{message}, got {value!r}")
    n = read_number(value, what=what)
    if not n.is_Integer:
        raise DomainError(f"{message}, got {value!r}")
    if not 1 <= n <= MAX_HEADS:
        shown = n if abs(n) < 10 ** 30 else f"an integer of about {int(int(abs(n)).bit_length() * 0.30103) + 1} digits"
        raise DomainError(f"{message}, got {shown}")
    return int(n)


def _value(where, key, value, positive):
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        _fail(where, key, f"must be a number or a string such as \"1/2\", got {value!r}")
    try:
        v = read_number(value, what=f"{where}: [{key}]")
    except DomainError as exc:
        raise ModelFileError(str(exc)) from None
    if positive and not v > 0:
        raise DomainError(f"{where}: [{key}] must be positive, got {value!r}")
    return v


def _table(where, data, key, allowed, required):
    table = data.get(key, {})
    if not isinstance(table, dict):
        _fail(where, key, f"must be a table of {', '.join(allowed)}")
    for name in table:
        if name not in allowed:
            _fail(where, f"{key}.{name}", f"a causal-attention model has no {name!r} here; its {key} are "
                                          f"{', '.join(allowed)}")
    for name in required:
        if name not in table:
            _fail(where, f"{key}.{name}", "missing")
    return table


def parse_causal_model(data, where="<model>"):
    """Build a :class:`CausalModel` from a parsed TOML table with ``model = "causal-attention"``."""
    if data["model"] not in MODEL_KINDS:
        _fail(where, "model", f"must be one of {', '.join(MODEL_KINDS)} (a named model), got {data['model']!r}; "
                              f"a model written as an expression has no model key")
    for key in data:
        if key in _EXPRESSION_KEYS:
            _fail(where, key, "a model = \"causal-attention\" file is given by its [dimensions], [parameters] and "
                              "[indices], not by an expression; drop this key (docs/model-files.md)")
        if key not in _KEYS:
            _fail(where, key, f"unknown key; a causal-attention model has the keys {', '.join(_KEYS)}")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        _fail(where, "name", "must be a non-empty string" if "name" in data else "missing")
    law = data.get("law")
    if law != "squared-singular-values":
        _fail(where, "law", f"a causal-attention model is the law of squared singular values; write "
                            f"law = \"squared-singular-values\", got {law!r}" if "law" in data else "missing")
    description = data.get("description", "")
    if not isinstance(description, str):
        _fail(where, "description", f"must be a string, got {description!r}")
    dims = _table(where, data, "dimensions", ("l",) + _WIDTHS, _WIDTHS)
    params = _table(where, data, "parameters", ("beta", "skip"), ("beta",))
    indices = _table(where, data, "indices", ("H",), ())
    ratios = {sympy.Symbol(k, positive=True): _value(where, f"dimensions.{k}", dims[k], True) if k in dims
              else _DEFAULTS[k] for k in ("l",) + _WIDTHS}
    values = {sympy.Symbol(k, real=True): _value(where, f"parameters.{k}", params[k], k == "skip") if k in params
              else _DEFAULTS[k] for k in ("beta", "skip")}
    try:
        heads = _heads(indices.get("H", 1), f"{where}: [indices.H]")
    except DomainError as exc:
        raise ModelFileError(str(exc)) from None
    return CausalModel(name, description, law, CAUSAL_EXPRESSION, None, ratios, values, where, {"H": heads})


def _toml_number(value, what):
    value = read_number(value, what=what)
    return str(value) if value.is_Integer else f'"{value}"'


def causal_model_text(beta, skip, d_h, d_v, d_out, heads=1, name=None, description=None):
    """The model file of a causal-attention model (exact values; widths as ratios to ``l = 1``).

    Every value is read by :func:`freeprob._numbers.read_number` (a string is a formula, never Python);
    ranges are checked when the file's law is built.

    >>> print(causal_model_text(1, sympy.Rational(1, 10), *[sympy.Rational(1, 2)] * 3).splitlines()[4])
    model = "causal-attention"
    """
    name = name or ("attention-causal" if heads == 1 else f"attention-causal-h{heads}")
    if description is None:
        description = (f"Gaussian equivalent of centred causal softmax attention (H independent heads, the mha "
                       f"pattern) without its first skip l tokens: squared singular values of {CAUSAL_EXPRESSION}; "
                       f"the cell equation of docs/causal.md, section 6, extrapolated in the number of cells "
                       f"(freeprob law, density, check)")
    lines = [
        "# Causal attention without its first tokens: a named model (docs/model-files.md, Causal attention).",
        "# Its masked score product 1[j <= i](Q K^T)_ij is not an expression of the engine; the law is",
        "# freeprob.CausalLaw, solved by its own cell equation (docs/causal.md, section 6).",
        f"name = {toml_string(name)}",
        'model = "causal-attention"',
        f"description = {toml_string(description)}",
        'law = "squared-singular-values"',
        "",
        "[indices]",
        f"H = {_heads(heads, 'heads')}  # independent heads (the mha pattern)",
        "",
        "[dimensions]  # ratios to the length l",
        "l = 1",
        f"d_h = {_toml_number(d_h, 'd_h')}",
        f"d_v = {_toml_number(d_v, 'd_v')}",
        f"d_out = {_toml_number(d_out, 'd_out')}",
        "",
        "[parameters]",
        f"beta = {_toml_number(beta, 'beta')}",
        f"skip = {_toml_number(skip, 'skip')}  # the fraction of first tokens left out",
    ]
    return "\n".join(lines) + "\n"
