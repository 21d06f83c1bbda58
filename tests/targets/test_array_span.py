"""``ptx_blocksums.array_span``: the bytes an array argument's elements occupy, compiled for the host and run
against NumPy's own account of them (``np.byte_bounds``) over views with every kind of stride: the plain
adds of ``ptx_ownelements`` and ``ptx_neighbouradds`` are safe only if no span is ever too small."""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numpy as np
import pytest

from gpucompiler.llvm import Builder, Function, parse
from gpucompiler.llvm.binding import initialize_native
from gpucompiler.targets.ptx_blocksums import array_span

DECLARE = """
define i64 @lo(ptr %p) {
entry:
  %a = load { ptr, [2 x i64], [2 x i64] }, ptr %p
  ret i64 0
}
define i64 @hi(ptr %p) {
entry:
  %a = load { ptr, [2 x i64], [2 x i64] }, ptr %p
  ret i64 0
}
"""


@pytest.fixture(scope="module")
def span():
    """``span(view) -> (lo, hi)`` computed by ``array_span``'s IR on the host."""
    model = parse(DECLARE)
    for name, k in (("lo", 0), ("hi", 1)):
        fn: Function = model.functions[name]
        load, ret = fn.blocks[0].instructions
        b = Builder()
        b.position_before(ret)
        ret.set_operand(0, array_span(b, load)[k])  # pyright: ignore[reportArgumentType]  (an argument's value)
    initialize_native()
    mod = llvm.parse_assembly(f'target triple = "{llvm.get_process_triple()}"\n' + str(model))
    mod.verify()
    engine = llvm.create_mcjit_compiler(mod, llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine())
    engine.finalize_object()

    class View(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("shape", ctypes.c_int64 * 2), ("strides", ctypes.c_int64 * 2)]

    lo, hi = (ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.POINTER(View))(engine.get_function_address(n))
              for n in ("lo", "hi"))

    def run(a: np.ndarray) -> tuple[int, int]:
        shape, strides = (a.shape + (1, 1))[:2], (a.strides + (0, 0))[:2]  # a 1-D view as 2-D, the extra extent 1
        v = View(a.ctypes.data, (ctypes.c_int64 * 2)(*shape), (ctypes.c_int64 * 2)(*strides))
        return lo(ctypes.byref(v)), hi(ctypes.byref(v))

    run.engine = engine  # (kept alive with the function)
    return run


BASE = np.arange(4096, dtype=np.float64).reshape(64, 64)
VIEWS = {
    "whole": BASE, "row": BASE[3], "column": BASE[:, 5], "reversed rows": BASE[::-1], "reversed both": BASE[::-3, ::-2],
    "strided": BASE[1::4, 2::3], "transposed": BASE.T, "one element": BASE[7:8, 9:10], "empty": BASE[5:5],
    "broadcast": np.broadcast_to(BASE[0, :1], (8, 8)), "complex": np.zeros((5, 6), np.complex128)[::2, ::-1],
    "bytes": np.zeros(100, np.int8)[::7],
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_the_span_holds_every_element_and_is_tight(span, name):
    view = VIEWS[name]
    lo, hi = span(view)
    if view.size:
        bounds = getattr(np, "byte_bounds", None) or np.lib.array_utils.byte_bounds  # (NumPy 2 moved it)
        first, last = bounds(view)  # NumPy's: the lowest byte and one past the highest
        assert lo <= first and last <= hi, (lo, hi, first, last)
        assert first - lo == 0 and hi - last <= 16 - view.itemsize, (lo, hi, first, last)  # 16: the largest element
    else:  # no element: any span around the data pointer will do
        assert lo <= view.ctypes.data < hi
