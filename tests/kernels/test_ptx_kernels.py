"""Every kernel of the corpus compiles to PTX that ptxas accepts; PTX properties by parsing."""

import re

import numpy as np
import pytest

from gpucompiler.targets import PTXTarget
from kernel_corpus import CASES, sum_shared, saxpy


@pytest.mark.parametrize("cap", [(9, 0), (8, 0)])
@pytest.mark.parametrize("name", sorted(CASES))
def test_corpus_ptx_accepted_by_ptxas(name, cap, check_ptx):
    k, _grid, _block, make, _check = CASES[name]
    ptx = k.inspect_asm(*make(np.random.default_rng(0)), target=PTXTarget(capability=cap))
    assert re.search(rf"^\.visible \.entry {k.symbol}\(", ptx, re.M)
    assert re.search(rf"^\.target sm_{cap[0]}{cap[1]}$", ptx, re.M)
    check_ptx(ptx, arch=f"sm_{cap[0]}{cap[1]}")


def test_array_parameters_have_the_launch_layout():
    ptx = saxpy.inspect_asm(1.0, np.zeros(3, np.float32), np.zeros(3, np.float32), np.zeros(3, np.float32))
    params = re.findall(r"\.param (.*?)saxpy_param_(\d)(\[\d+\])?", ptx)
    # scalar double, then three {ptr, shape[1], strides[1]} structs of 24 bytes
    assert params[0][0].strip() == ".f64"
    assert [p[2] for p in params[1:]] == ["[24]"] * 3


def test_shared_memory_and_barrier_in_ptx():
    ptx = sum_shared.inspect_asm(np.zeros(3), np.zeros(1))
    assert re.search(r"\.shared \.align 16 \.b8 \S+\[512\]", ptx)  # 64 float64
    assert "bar.sync" in ptx
    assert re.search(r"atom(\.global)?\.add\.f64", ptx)


def test_math_is_libdevice_inlined_or_defined(check_ptx):
    from kernel_corpus import math_f

    ptx = math_f.inspect_asm(np.zeros(3, np.float32), np.zeros(3, np.float32))
    called = set(re.findall(r"call\.uni \(?[^,]*,?\s*(\w+),", ptx))
    defined = set(re.findall(r"^\.func\s+(?:\([^)]*\)\s*)?(\w+)\(", ptx, re.M))
    assert called <= defined  # only libdevice internals, all defined in the module
    assert "__nv_" not in ptx and ".extern" not in ptx
    check_ptx(ptx)
