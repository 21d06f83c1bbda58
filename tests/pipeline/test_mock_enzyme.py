"""The mock Enzyme plugin end to end: marker calls rewritten through the Python model, then run."""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import pytest

from gpucompiler.pipeline import compile

from .conftest import make_job

_model = pytest.importorskip("gpucompiler.llvm")
if not (hasattr(_model, "parse") and hasattr(_model, "Builder")):
    pytest.skip("the Python IR model (gpucompiler.llvm.parse, Builder) is not available", allow_module_level=True)

AD_IR = """\
declare double @__autodiff(ptr, ...)

define double @square(double %x) {
  %y = fmul double %x, %x
  ret double %y
}

define double @caller(double %x) {
  %r = call double (ptr, ...) @__autodiff(ptr @square, double %x)
  %s = fadd double %r, 1.0
  ret double %s
}
"""


def calls(ir: str, function: str) -> list[str]:
    ref = llvm.parse_assembly(ir)
    return [str(i).split("@")[1].split("(")[0] for b in ref.get_function(function).blocks
            for i in b.instructions if i.opcode == "call"]


def test_marker_call_becomes_a_call_of_the_function():
    result = compile(make_job(AD_IR, "caller", opt_level=0, plugins=("mock_enzyme",)))
    ir = result.artifacts["llvm"]
    names = {f.name for f in llvm.parse_assembly(ir).functions}
    assert "__autodiff" not in names and {"square", "caller"} <= names
    assert calls(ir, "caller") == ["square"]


def test_without_the_plugin_the_marker_stays_and_validation_refuses():
    from gpucompiler.errors import InvalidIRError

    with pytest.raises(InvalidIRError, match="__autodiff"):
        compile(make_job(AD_IR, "caller"))


def test_rewritten_code_runs_on_the_cpu():
    from gpucompiler.runtime import CPULibrary

    result = compile(make_job(AD_IR, "caller", plugins=("mock_enzyme",)), emit=("llvm", "obj"))
    lib = CPULibrary.from_result(result)
    caller = lib.function("caller", ctypes.c_double, ctypes.c_double)
    assert [caller(x) for x in (0.0, 1.5, -3.0)] == [1.0, 3.25, 10.0]
