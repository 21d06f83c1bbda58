"""Module-level NumPy arrays, tuples and lists read by ``@jit`` functions are frozen as constants.

Rebinding the global recompiles (the world-age check); writing a frozen
array is a typed error at compile time.
"""

import numpy as np
import pytest

from gpucompiler import device as gd, jit, kernel, types as T
from gpucompiler.errors import ReadOnlyArrayError

WEIGHTS = np.arange(12.0).reshape(3, 4)[:, ::2]  # a strided view: frozen C-contiguous
COEFFS = [1.0, 2.0, 3.5]
TABLE = (np.array([1, -2, 3], np.int8), 7, [[1, 2], [3, 4]])
SMALL = np.array([250, 3, 9], np.uint8)


def weighted(i):
    s = 0.0
    for k in range(WEIGHTS.shape[0]):
        s += WEIGHTS[k, i] * COEFFS[k]
    for v in TABLE[0]:
        s += v
    for row in TABLE[2]:
        s += row[0] * 10 + row[1]
    return s + TABLE[1] + len(COEFFS) + SMALL[0] + SMALL[1]


def test_global_arrays_tuples_and_lists_are_read_as_constants():
    f = jit(weighted)
    assert [f(i) for i in range(2)] == [weighted(i) for i in range(2)]
    assert "gpuc.frozen." in f.inspect_llvm(T.int64)


def test_rebinding_a_global_array_recompiles():
    global WEIGHTS
    f = jit(weighted)
    before = f(1)
    saved = WEIGHTS
    try:
        WEIGHTS = saved * 2
        assert f(1) == weighted(1) != before
    finally:
        WEIGHTS = saved
    assert f(1) == before


def write_global(v):
    WEIGHTS[0, 0] = v


def test_writing_a_frozen_global_array_is_a_typed_error():
    with pytest.raises(ReadOnlyArrayError, match="frozen") as info:
        jit(write_global)(1.0)
    assert isinstance(info.value, ValueError) and "argument" in info.value.hint


@kernel
def add_frozen(out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = WEIGHTS[i % 3, i % 2] + COEFFS[i % 3]


def test_frozen_globals_in_kernels_run_on_the_emulation_and_compile_to_ptx(check_ptx):
    out = np.zeros(10)
    add_frozen[1, 16, "cpu"](out)
    want = [WEIGHTS[i % 3, i % 2] + COEFFS[i % 3] for i in range(10)]
    np.testing.assert_array_equal(out, want)
    check_ptx(add_frozen.inspect_asm(np.zeros(10)))


@pytest.mark.gpu
def test_frozen_globals_in_a_kernel_on_the_gpu():
    out = np.zeros(10)
    add_frozen[1, 16](out)
    np.testing.assert_array_equal(out, [WEIGHTS[i % 3, i % 2] + COEFFS[i % 3] for i in range(10)])
