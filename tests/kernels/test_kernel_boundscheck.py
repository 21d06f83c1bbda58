"""``@kernel(boundscheck=True)``: IndexError under the CPU grid emulation, ``llvm.trap`` on the GPU."""

import numpy as np
import pytest

from gpucompiler import device as gd, kernel, types as T


def _copy_shifted(a, out, k):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = a[i + k]


def _write_2d(a, i, j):
    t = gd.grid(1)
    if t == 0:
        a[i, j] = 1.0


def _at(fn, offset: int) -> str:
    """`` at file:line (in fn)``: where the emulation says the bad index was (``offset`` lines into ``fn``)."""
    return f" at {fn.__code__.co_filename}:{fn.__code__.co_firstlineno + offset} (in {fn.__qualname__})"


def test_emulation_read_out_of_bounds_raises_numpys_index_error():
    k = kernel(_copy_shifted, boundscheck=True)
    a, out = np.arange(8.0), np.zeros(8)
    k[1, 8, "cpu"](a, out, 0)
    np.testing.assert_array_equal(out, a)
    with pytest.raises(IndexError) as info:
        k[1, 8, "cpu"](a, np.zeros(8), 1)
    with pytest.raises(IndexError) as ref:
        a[8]
    assert str(info.value) == str(ref.value) + _at(_copy_shifted, 3)
    with pytest.raises(IndexError, match="index -9 is out of bounds for axis 0 with size 8"):
        k[1, 8, "cpu"](a, np.zeros(8), -9)
    k[1, 8, "cpu"](a, out, -8)  # negative indices wrap as in NumPy
    np.testing.assert_array_equal(out, a)


@pytest.mark.parametrize("i,j", [(3, 0), (0, 4), (-4, 0), (0, -5)])
def test_emulation_write_2d(i, j):
    k = kernel(_write_2d, boundscheck=True)
    a = np.zeros((3, 4))
    with pytest.raises(IndexError) as ref:
        a.copy()[i, j] = 1.0
    with pytest.raises(IndexError) as info:
        k[1, 4, "cpu"](a, i, j)
    assert str(info.value) == str(ref.value) + _at(_write_2d, 3)
    assert not a.any()
    k[1, 4, "cpu"](a, -1, -1)
    assert a[2, 3] == 1.0 and a.sum() == 1.0


def test_emulation_checks_bounds_by_default_with_the_kernels_line():
    a = np.zeros((3, 4))
    with pytest.raises(IndexError) as info:
        kernel(_write_2d)[1, 4, "cpu"](a, 3, 0)
    assert str(info.value) == "index 3 is out of bounds for axis 0 with size 3" + _at(_write_2d, 3)
    assert not a.any()
    kernel(_write_2d, boundscheck=False)[1, 4, "cpu"](a, 1, 2)  # in bounds: unchecked code runs as well
    assert a[1, 2] == 1.0 and a.sum() == 1.0


def test_unchecked_by_default_and_trap_on_the_gpu():
    A = T.ArrayType(T.float64, 1, "C")
    plain = kernel(_copy_shifted).inspect_llvm(A, A, T.int64)
    checked = kernel(_copy_shifted, boundscheck=True).inspect_llvm(A, A, T.int64)
    assert "llvm.trap" not in plain and "llvm.trap" in checked
    assert "trap;" in kernel(_copy_shifted, boundscheck=True).inspect_asm(A, A, T.int64)
