"""Shifts follow Python on 64-bit wrapped integers: any count, a negative count is a ValueError."""

import pytest

from gpucompiler import jit


def shl(a, b):
    return a << b


def shr(a, b):
    return a >> b


def wrap64(v):
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


@pytest.mark.parametrize("a", [0, 1, 5, -7, 2**62, -(2**63)])
@pytest.mark.parametrize("b", [0, 1, 3, 62, 63, 64, 70, 1000])
def test_shifts_match_python(a, b):
    assert jit(shl)(a, b) == wrap64(a << b)
    assert jit(shr)(a, b) == a >> b


@pytest.mark.parametrize("fn", [shl, shr])
def test_negative_count_raises_like_python(fn):
    with pytest.raises(ValueError, match="negative shift count"):
        fn(1, -1)
    with pytest.raises(ValueError, match="negative shift count"):
        jit(fn)(1, -1)
