"""A compile leaves the cyclic collector (almost) nothing of its IR: the Python IR models it parsed are
dropped (``Module.drop``) and llvmlite's module of the IR generation released once its text is taken
(``ModuleCodegen.text``), so reference counting frees them instead of the collector's pass that runs when
the compile's pause of the collector ends."""

from __future__ import annotations

import gc
import math

import numpy as np
import pytest
from llvmlite import ir

from enzyme_plugin import Active, Const, Reverse, autodiff
from gpucompiler import device as gd, jit, kernel
from gpucompiler.codegen.module import ModuleCodegen


def found_by_the_collector(call) -> list:
    """What the collector finds unreachable after ``call()`` (the collector running as usual)."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        call()
        gc.collect()
        found = list(gc.garbage)
        gc.garbage.clear()
    finally:
        gc.set_debug(0)
    return found


def of_llvmlite_ir(objects: list) -> list:
    return [o for o in objects if type(o).__module__.startswith("llvmlite.ir")]


def _poly_released(x, n):
    acc = 0.0
    for i in range(n):
        acc = acc * x + math.sin(i * x)
    return acc


def _poly_kept(x, n):  # a function of its own: the first test's compile is in the memory cache
    acc = 0.0
    for i in range(n):
        acc = acc * x + math.sin(i * x)
    return acc


def _loss(w, xs, n):
    acc = 0.0
    for i in range(n):
        r = w * xs[i] - 1.0
        acc += r * r
    return acc


def _grad(w, xs, n):
    return autodiff(Reverse, _loss, Active(w), Const(xs), Const(n))[0]


def _scaled(a, out, s):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = s * a[i] + math.cos(a[i])


def _reference_poly(x, n):
    acc = 0.0
    for i in range(n):
        acc = acc * x + math.sin(i * x)
    return acc


@pytest.mark.parametrize("released", [True, False], ids=["released", "kept"])
def test_a_compile_leaves_no_llvmlite_ir_for_the_collector(monkeypatch, released: bool):
    if not released:  # what the test tells apart: the same compile with the module kept as it was made
        monkeypatch.setattr("gpucompiler.codegen.module.release", lambda module: None)
    f = jit(_poly_released if released else _poly_kept, cache=False)
    out: list = []
    found = of_llvmlite_ir(found_by_the_collector(lambda: out.append(f(0.75, 9))))
    assert out == [pytest.approx(_reference_poly(0.75, 9), rel=1e-12)]
    assert (found == []) == released, len(found)


def test_a_gradient_compile_leaves_no_llvmlite_ir_for_the_collector():
    xs = np.linspace(0.5, 1.5, 6)
    out: list = []
    found = found_by_the_collector(lambda: out.append(jit(_grad, plugins=("enzyme",), cache=False)(0.5, xs, 6)))
    assert out == [pytest.approx(float(np.sum(2 * (0.5 * xs - 1.0) * xs)), rel=1e-12)]
    assert of_llvmlite_ir(found) == []
    assert not [o for o in found if type(o).__module__.startswith("gpucompiler.llvm") and type(o).__name__ == "Use"]


def test_a_released_module_printed_first_and_unusable_after():
    mod = ModuleCodegen.__new__(ModuleCodegen)
    mod.module = ir.Module(name="m")
    fn = ir.Function(mod.module, ir.FunctionType(ir.DoubleType(), [ir.DoubleType()]), name="twice")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(b.fadd(fn.args[0], fn.args[0]))
    printed = str(mod.module)
    assert mod.text() == printed
    with pytest.raises(AttributeError):
        str(mod.module)


def test_a_kernels_emulated_compile_leaves_no_llvmlite_ir_for_the_collector():
    a, out = np.linspace(-1.0, 1.0, 16), np.zeros(16)
    k = kernel(_scaled)
    found = of_llvmlite_ir(found_by_the_collector(lambda: k[2, 8, "cpu"](a, out, 3.0)))  # pyright: ignore[reportIndexIssue]
    np.testing.assert_allclose(out, 3.0 * a + np.cos(a), rtol=1e-14)
    assert found == []
