"""Shared fixtures: no test may leave the global mpmath precision changed."""

import mpmath
import pytest


@pytest.fixture(autouse=True)
def _global_precision_untouched():
    before = (mpmath.mp.dps, mpmath.mp.prec)
    yield
    after = (mpmath.mp.dps, mpmath.mp.prec)
    if after != before:
        mpmath.mp.dps = before[0]  # restore for the next test, then fail this one
        pytest.fail(f"the global mpmath precision was changed from {before} to {after}")
