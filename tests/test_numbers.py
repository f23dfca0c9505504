"""The one reader of user numbers: exact values, whitelisted grammar, bounded work."""

import math
from decimal import Decimal
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy

from freeprob import DomainError
from freeprob._numbers import parse_scalar, read_number, read_scalar


@pytest.mark.parametrize("value, expected", [
    (1, sympy.Integer(1)),
    (0.1, sympy.Rational(1, 10)),
    ("0.1", sympy.Rational(1, 10)),
    ("0.12345678901234567890123", sympy.Rational("0.12345678901234567890123")),  # beyond a float's digits
    ("1e-3", sympy.Rational(1, 1000)),
    ("1/3", sympy.Rational(1, 3)),
    ("sqrt(2)/4", sympy.sqrt(2) / 4),
    ("2^3", sympy.Integer(8)),
    ("-pi", -sympy.pi),
    (Fraction(2, 3), sympy.Rational(2, 3)),
    (Decimal("0.25"), sympy.Rational(1, 4)),
    (np.float64(0.5), sympy.Rational(1, 2)),
    (np.int64(7), sympy.Integer(7)),
    (mpmath.mpf(0.75), sympy.Rational(3, 4)),
    (mpmath.mpf(-0.75), sympy.Rational(-3, 4)),  # mpf.man is unsigned: the sign was lost once
    (mpmath.mpf(-3) / 2 ** 100, sympy.Rational(-3, 2 ** 100)),
    (sympy.Float("0.5"), sympy.Rational(1, 2)),
])
def test_exact_values(value, expected):
    assert read_number(value, what="v") == expected


def test_complex_only_when_asked():
    assert read_number(mpmath.mpc(-1.5, -2), what="z", real=False) == sympy.Rational(-3, 2) - 2 * sympy.I
    assert read_number("0.5+1e-3j", what="z", real=False) == sympy.Rational(1, 2) + sympy.I / 1000
    assert read_number(1 + 2j, what="z", real=False) == 1 + 2 * sympy.I
    for value in ("1+2j", 1 + 2j, "I"):
        with pytest.raises(DomainError, match="^z: "):
            read_number(value, what="z")


@pytest.mark.parametrize("value, piece", [
    (float("nan"), "finite"), (math.inf, "finite"), ("nan", "'nan'"), ("oo", "'oo'"), ("", "empty"),
    ("1/0", "division by zero"), (True, "True"), (None, "None"), ([1], "list"),
    ("p", "'p'"), ("1 +", "cannot read"), ("x.real", "attribute"), ("a[0]", "indexing"),
    ("lambda: 1", "lambda"), ("1 < 2", "comparison"), ("f(1)", "'f'"), ("exp", "must be called"),
    ("'abc'", "'abc'"), ("sqrt(1, 2)", "one argument"), ("Max(1)", "two or more"),
])
def test_refusals_name_the_piece(value, piece):
    with pytest.raises(DomainError) as info:
        read_number(value, what="--set p")
    message = str(info.value)
    assert message.startswith("--set p: ") and piece in message


def test_positive():
    assert read_number("1/2", what="ratio", positive=True) == sympy.Rational(1, 2)
    with pytest.raises(DomainError, match="positive"):
        read_number("-1/2", what="ratio", positive=True)


@pytest.mark.parametrize("text", ["2**10**10**10", "9**9**9", "10**(10**6)", "1e999999999", "(1/3)**10**7"])
def test_huge_exact_powers_refused_up_front(text):
    with pytest.raises(DomainError, match="too large|exponent"):
        parse_scalar(text, what="v")


def test_limits_of_size_and_depth():
    with pytest.raises(DomainError, match="longer than"):
        parse_scalar("1+" * 6000 + "1", what="v")
    with pytest.raises(DomainError, match="nested") as info:
        parse_scalar("(" * 2000 + "1" + ")" * 2000, what="v")
    assert len(str(info.value)) < 200  # the message quotes a cut text
    with pytest.raises(DomainError, match="nested too deeply"):
        parse_scalar("-" * 5000 + "1", what="v")
    # a long but flat sum is fine
    assert parse_scalar("+".join(["1"] * 2000), what="v") == 2000


def test_symbols_only_where_allowed():
    p = sympy.Symbol("p", positive=True)
    assert parse_scalar("p/2", {"p": p}, what="v") == p / 2
    beta = read_scalar("beta**2/2", what="scale")
    assert beta.free_symbols == {sympy.Symbol("beta", real=True)}
    with pytest.raises(DomainError, match="'Integer'"):
        read_scalar("Integer", what="scale")


@pytest.mark.parametrize("text", ["sin(exp(exp(20)))", "cos(10**20)", "sin(exp(exp(exp(10))))"])
def test_periodic_function_of_a_huge_argument_is_refused_at_once(text):
    """sin of a number needs it modulo 2 pi, as many digits as it has: the evaluation of sin(exp(exp(20)))
    never ends, so the reader refuses it (every later comparison of the value would hang)."""
    with pytest.raises(DomainError, match="modulo 2 pi"):
        read_number(text, what="x")


def test_periodic_function_of_a_moderate_argument_is_exact():
    assert read_number("sin(pi/6)", what="x") == sympy.Rational(1, 2)
    assert read_number("cos(10**14)", what="x") == sympy.cos(10 ** 14)
