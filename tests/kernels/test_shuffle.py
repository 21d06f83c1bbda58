"""``gd.shfl_down``: warp reductions in the CPU grid emulation, its PTX, and its errors."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gpucompiler import device as gd, kernel, types as T
from gpucompiler.errors import EmulationError, TypeInferenceError


@kernel
def warp_sum(x, out):
    i = gd.grid(1)
    v = x[0] * 0
    if i < x.shape[0]:
        v = x[i]
    off = 16
    while off > 0:
        v += gd.shfl_down(v, off)
        off //= 2
    if gd.threadIdx.x % 32 == 0:
        gd.atomic_add(out, 0, v)


@kernel
def shifted(x, out, delta):
    i = gd.grid(1)
    out[i] = gd.shfl_down(x[i], delta)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32])
def test_warp_reduction_in_the_emulation(dtype):
    rng = np.random.default_rng(1)
    x = (rng.random(200) * 1000).astype(dtype)
    if dtype == np.int64:
        x += np.int64(3) << 40  # both 32-bit halves matter
    out = np.zeros(1, dtype)
    warp_sum[4, 64, "cpu"](x, out)
    if dtype == np.float32:
        assert abs(out[0] - x.astype(np.float64).sum()) < 1e-3 * x.sum()
    else:
        assert out[0] == pytest.approx(x.sum(), rel=1e-12)


def test_lanes_past_the_warp_keep_their_own_value():
    x = np.arange(64, dtype=np.float64) * 1.5
    out = np.zeros(64)
    shifted[1, 64, "cpu"](x, out, 5)
    lane = np.arange(64) % 32
    np.testing.assert_array_equal(out, np.where(lane + 5 < 32, np.roll(x, -5), x))


def test_a_partial_warp_is_an_emulation_error_not_a_stale_value():
    x, out = np.arange(48.0), np.zeros(48)
    with pytest.raises(EmulationError, match="did not take part"):
        shifted[1, 48, "cpu"](x, out, 1)


def test_ptx_uses_shfl_sync_down(check_ptx):
    A = T.ArrayType(T.float64, 1, "C")
    ptx = warp_sum.inspect_asm(A, A)
    check_ptx(ptx)
    assert len(re.findall(r"shfl\.sync\.down\.b32", ptx)) >= 2  # a float64 is two 32-bit halves
    A32 = T.ArrayType(T.float32, 1, "C")
    assert "shfl.sync.down.b32" in shifted.inspect_asm(A32, A32, T.int64)


def test_shuffle_type_errors():
    @kernel
    def bad(x, out):
        out[0] = gd.shfl_down(x[0], 1.5)

    with pytest.raises(TypeInferenceError, match="delta must be an integer"):
        bad.inspect_asm(T.ArrayType(T.float64, 1, "C"), T.ArrayType(T.float64, 1, "C"))
    with pytest.raises(TypeInferenceError, match="shuffles int32"):
        shifted.inspect_asm(T.ArrayType(T.boolean, 1, "C"), T.ArrayType(T.boolean, 1, "C"), T.int64)
