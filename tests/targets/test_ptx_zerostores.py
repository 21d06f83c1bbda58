"""Zero stores that wait for their load (``gpucompiler.targets.ptx_zerostores``).

Read from the PTX (assembled by ptxas): ``v = a[i]; a[i] = 0.0`` stores ``min(|v|, 0)``, computed from
the load, and nothing else changes; a kernel gradient clears its adjoints so. The stored zero itself,
marked ``gpu``, on a CUDA device: ``+0.0`` for infinities, NaN, ``-0.0`` and denormals, and the drained
values against NumPy.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from gpucompiler import device as gd, kernel, types as T
from gpucompiler.llvm import parse
from gpucompiler.targets.ptx import PTXTarget
from gpucompiler.targets.ptx_zerostores import order_zero_stores

F64 = T.ArrayType(T.float64, 1, "C")
F32 = T.ArrayType(T.float32, 1, "C")
_ZERO = re.compile(r"abs\.f(64|32)\s+t, (%\w+); min\.f\1 (%\w+), t, 0[df]0+;")


def drain(a, out):
    i = gd.grid(1)
    if i < a.shape[0]:
        out[i] = a[i]
        a[i] = 0.0


def clear_other(a, b):
    i = gd.grid(1)
    if i < a.shape[0]:
        b[i] = a[i] * 2.0
        a[i] = 1.0


def transform(x, y):
    i = gd.grid(1)
    if i < x.shape[0]:
        y[i] = math.sin(x[i]) * x[i]


def _ptx(fn, *types):
    return kernel(fn, target=PTXTarget()).inspect_asm(*types)


@pytest.mark.parametrize("types, bits", [((F64, F64), "64"), ((F32, F32), "32")])
def test_a_zero_store_after_a_load_of_its_address_depends_on_the_load(check_ptx, types, bits):
    ptx = _ptx(drain, *types)
    check_ptx(ptx)
    zero = _ZERO.search(ptx)
    assert zero is not None and zero.group(1) == bits, ptx
    loaded, stored = zero.group(2), zero.group(3)
    load = re.search(rf"ld\.global\.\S+\s+{re.escape(loaded)}, \[(%\w+)\]", ptx)
    assert load is not None, ptx
    assert re.search(rf"st\.global\.\S+\s+\[{re.escape(load.group(1))}\], {re.escape(stored)};", ptx), ptx


def test_other_stores_are_left_alone(check_ptx):
    ptx = _ptx(clear_other, F64, F64)
    check_ptx(ptx)
    assert _ZERO.search(ptx) is None
    assert re.search(r"st\.global\.b64\s+\[%\w+\], (4607182418800017408|0d3FF0000000000000);", ptx), ptx  # 1.0


_IR = """
define void @f(ptr %p, ptr %q) {
entry:
  %v = load double, ptr %p, align 8
  store double 0.000000e+00, ptr %p, align 8
  %w = load float, ptr %q, align 4
  store float 0.000000e+00, ptr %q, align 4
  %u = load double, ptr %q, align 8
  store double -0.000000e+00, ptr %q, align 8
  store volatile double 0.000000e+00, ptr %p, align 8
  store double 0.000000e+00, ptr %q, align 8
  br label %next
next:
  store double 0.000000e+00, ptr %p, align 8
  ret void
}
"""


def test_only_a_plus_zero_to_the_loaded_pointer_in_the_same_block_changes():
    module = parse(_IR)
    fn = module.functions["f"]
    assert order_zero_stores(fn) == 3  # the double at %p, the float at %q and the double at %q
    text = str(module)
    assert text.count("min.f64") == 2 and text.count("min.f32") == 1, text
    assert "store double -0.000000e+00" in text and "store volatile double 0.000000e+00" in text
    assert text.rstrip().splitlines()[-3].strip() == "store double 0.000000e+00, ptr %p, align 8"  # next block


def test_a_kernel_gradient_clears_each_adjoint_with_a_zero_computed_from_it(check_ptx):
    """The reverse of ``y[i] = ...`` reads ``dy[i]`` and clears it: the zero comes from the loaded value."""
    from enzyme_plugin.launches.gradients import gradient_kernel

    grad = gradient_kernel(kernel(transform, target=PTXTarget()), (True, True))
    ptx = grad.inspect_asm(F64, F64, F64, F64, target=PTXTarget())
    check_ptx(ptx)
    assert _ZERO.search(ptx) is not None, ptx


# -- on a GPU ---------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_stored_zero_is_plus_zero_for_every_value(dtype):
    tiny = np.finfo(dtype).smallest_subnormal
    a = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, -3.5, 2.0, tiny, -tiny], dtype=dtype)
    src = a.copy()
    out = np.full_like(a, 7.0)
    kernel(drain)[1, 32](a, out)
    assert np.array_equal(out, src, equal_nan=True)
    assert np.all(a == 0.0) and not np.any(np.signbit(a))
