"""The kernels of kernel_corpus run through the CPU grid emulation, checked against NumPy."""

import numpy as np
import pytest

from gpucompiler import device as gd, kernel
from kernel_corpus import CASES, run_case


@pytest.mark.parametrize("name", sorted(CASES))
def test_emulated_kernel_matches_numpy(name):
    run_case(name, "cpu")


@kernel
def _histogram_unsigned(idx, hist, total):
    i = gd.grid(1)
    if i < idx.shape[0]:
        gd.atomic_add(hist, idx[i] % 7, 1)
        gd.atomic_add(total, idx[i] % 3, 1.0)


def test_unsigned_indices_in_atomics_and_stores():
    """A uint32 index (``idx[i] % 7``) in atomics: NumPy's counts (it was a TypeInferenceError)."""
    idx = np.arange(50, dtype=np.uint32) * 5
    hist, total = np.zeros(7, np.int64), np.zeros(3)
    _histogram_unsigned[2, 32, "cpu"](idx, hist, total)
    np.testing.assert_array_equal(hist, np.bincount(idx % 7, minlength=7))
    np.testing.assert_array_equal(total, np.bincount(idx % 3, minlength=3))
