"""The one table of math functions: its records, the language compiled from it, each target's naming of it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler.core.mathfns import BY_LIBM, MATH_FUNCTIONS, MathError, math_function
from gpucompiler.errors import ToolNotFoundError
from gpucompiler.targets import NativeTarget, PTXTarget
from gpucompiler.targets.libdevice import libdevice_functions, libdevice_name

LANGUAGE = [f for f in MATH_FUNCTIONS if f.python is not None and hasattr(math, f.python)]
#: arguments inside every function's domain (asin, atanh: below 1; acosh takes 1 + x; two-argument ones add a second)
POINTS = (0.3, 0.75, 0.9)


def test_one_record_per_function_with_real_names():
    assert len(BY_LIBM) == len(MATH_FUNCTIONS)
    for f in MATH_FUNCTIONS:
        assert f.arity in (1, 2, 3)
        assert f.intrinsic is None or f.intrinsic.startswith("llvm.")
        assert f.python is None or f.python in dir(math) or f.python in ("exp2", "cbrt")  # 3.11's
        assert f.numpy is None or isinstance(getattr(np, f.numpy), np.ufunc)
        assert f.rounds == (f.python in ("floor", "ceil", "trunc"))


def test_lookup_by_c_name_float32_name_and_intrinsic():
    assert math_function("sinf") is math_function("sin") is BY_LIBM["sin"]
    assert math_function("llvm.exp.f32") is BY_LIBM["exp"]
    assert math_function("llvm.minnum.f64") is BY_LIBM["fmin"]
    assert math_function("llvm.tan.f64") is BY_LIBM["tan"]  # an intrinsic LLVM added under the C name
    assert math_function("llvm.sin.v2f64") is None and math_function("printf") is None


@pytest.mark.parametrize("fn", [f for f in LANGUAGE if not f.rounds], ids=lambda f: f.libm)
def test_the_language_computes_every_function_of_the_table_as_cpython(fn):
    py = getattr(math, fn.python)
    compiled = jit({1: lambda x: py(x), 2: lambda x, y: py(x, y)}[fn.arity])
    for x in POINTS:
        args = (x,) if fn.arity == 1 else (x, 1.0 - x / 2)
        if fn.libm == "acosh":
            args = (1.0 + x,)
        assert compiled(*args) == pytest.approx(py(*args), rel=1e-15, abs=1e-300)


@pytest.mark.parametrize("fn", [f for f in LANGUAGE if f.error is not MathError.NEVER and f.arity == 1
                                and not f.rounds], ids=lambda f: f.libm)
def test_the_error_class_of_the_table_is_cpythons(fn):
    py = getattr(math, fn.python)
    compiled = jit(lambda x: py(x))
    for x in (-1.5, 1e308, -1e308, 2.0):
        try:
            expected = py(x)
        except (ValueError, OverflowError) as exc:
            with pytest.raises(type(exc)):
                compiled(x)
        else:
            assert compiled(x) == pytest.approx(expected, rel=1e-15)


def test_ptx_names_libdevice_functions_from_the_table():
    ptx = PTXTarget()
    assert ptx.math_to_device("cos") == "__nv_cos" and ptx.math_to_device("cosf") == "__nv_cosf"
    assert ptx.math_to_device("llvm.exp.f64") == "__nv_exp" and ptx.math_to_device("llvm.exp.f32") == "__nv_expf"
    assert ptx.math_to_device("llvm.tan.f64") == "__nv_tan"
    for native in ("llvm.sqrt.f64", "llvm.fabs.f32", "llvm.fma.f64", "llvm.minnum.f64", "llvm.copysign.f64"):
        assert ptx.math_to_device(native) is None  # NVPTX lowers these itself
    assert ptx.math_to_device("llvm.powi.f64.i32") is None and ptx.math_to_device("malloc") is None
    assert ptx.math_from_device("__nv_sinf") == "sinf" and ptx.math_from_device("__nv_erfc") == "erfc"
    assert ptx.math_from_device("__nv_nope") is None and ptx.math_from_device("sin") is None
    assert ptx.inactive_intrinsic("llvm.nvvm.read.ptx.sreg.tid.x") and not ptx.inactive_intrinsic("sin")
    assert ptx.barrier_intrinsic("llvm.nvvm.barrier.cta.sync.aligned.all")


def test_the_host_has_no_device_library():
    host = NativeTarget()
    assert all(host.math_to_device(n) is None for n in ("cos", "llvm.exp.f64"))
    assert host.math_from_device("__nv_sin") is None and not host.inactive_intrinsic("pthread_getspecific")


def test_every_libdevice_name_of_the_table_is_defined_by_libdevice():
    try:
        defined = libdevice_functions()
    except ToolNotFoundError as exc:  # no CUDA toolkit here
        pytest.skip(f"libdevice not found: {exc}")
    missing = [libdevice_name(f, single) for f in MATH_FUNCTIONS for single in (False, True)
               if libdevice_name(f, single) not in defined]
    assert missing == []
