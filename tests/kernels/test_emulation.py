"""The kernels of kernel_corpus run through the CPU grid emulation, checked against NumPy."""

import pytest

from kernel_corpus import CASES, run_case


@pytest.mark.parametrize("name", sorted(CASES))
def test_emulated_kernel_matches_numpy(name):
    run_case(name, "cpu")
