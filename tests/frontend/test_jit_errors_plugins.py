"""@jit behaviour: dispatch cache, world age, inspection, determinism, typed errors, plugins."""

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpucompiler
import gpucompiler.plugin as gp
from gpucompiler import jit, types as T
from gpucompiler.core import CompilerConfig
from gpucompiler.errors import (ArgumentTypeError, RuleConflictError, TypeInferenceError,
                                UnsupportedError)
from gpucompiler.source.spec import FunctionSpec
from gpucompiler.interpreter import Float, RuleSet
from gpucompiler.core import CompilerJob
from gpucompiler.targets import NativeTarget, PTXTarget

LIMIT = 10


def _helper(x):
    return x + LIMIT


def uses_global(x):
    return _helper(x) * 2


def test_dispatch_cache_per_types():
    f = jit(lambda_free_add)
    assert f(1, 2) == 3 and f(1.5, 2) == 3.5 and f(True, True) == 2
    assert len(f._entries) == 3
    f(4, 5)
    assert len(f._entries) == 3


def lambda_free_add(a, b):
    return a + b


def test_rebound_global_recompiles():
    global LIMIT, _helper
    f = jit(uses_global)
    assert f(1) == 22
    LIMIT = 100
    try:
        assert f(1) == 202
        old = _helper
        _helper = _replacement
        assert f(1) == 6
    finally:
        LIMIT, _helper = 10, old
    assert f(1) == 22


def _replacement(x):
    return x + 2


def test_inspect():
    f = jit(uses_global)
    text = f.inspect_ir(T.int64)
    assert "function uses_global(x::int64) :: int64" in text and "_helper" in text
    assert "define" in f.inspect_llvm(T.int64)
    assert "ret" in f.inspect_asm(T.int64)


def test_byte_identical_ir_in_two_processes():
    here = __file__.rsplit("/", 1)[0]
    code = textwrap.dedent("""
        import sys; sys.path.insert(0, HERE)
        import frontend_corpus as C
        from gpucompiler import types as T
        from gpucompiler.core import CompilerConfig, FrontendOptions
        from gpucompiler.source.spec import FunctionSpec
        from gpucompiler.identity import job_key
        from gpucompiler.core import CompilerJob
        from gpucompiler.targets import NativeTarget
        job = CompilerJob(FunctionSpec(C.count_primes, (T.int64, T.int64)),
                          CompilerConfig(NativeTarget(), frontend=FrontendOptions(python_abi=True)))
        print(job_key(job))
        print(job.source.generate_ir(job))
    """).replace("HERE", repr(here))
    outs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    assert outs[0] == outs[1] and "define" in outs[0]


def bad_list(x):
    y = {x, 1}
    return y


def bad_union(x):
    if x > 0:
        y = 1
    else:
        y = (1, 2)
    return y


def bad_call(x):
    return x + (1, 2)


def test_unsupported_error_has_location():
    with pytest.raises(UnsupportedError) as info:
        jit(bad_list)(1)
    assert info.value.construct == "Set" and info.value.line == bad_list.__code__.co_firstlineno + 1
    assert __file__ in str(info.value) and "hint" in str(info.value)


def test_union_error_shows_both_types():
    with pytest.raises(TypeInferenceError) as info:
        jit(bad_union)(1)
    assert T.int64 in info.value.types and T.TupleType((T.int64, T.int64)) in info.value.types
    assert info.value.filename == __file__


def test_no_implementation_names_types_and_line():
    with pytest.raises(TypeInferenceError) as info:
        jit(bad_call)(1)
    assert "int64" in str(info.value) and info.value.line == bad_call.__code__.co_firstlineno + 1


def test_argument_type_error_names_parameter():
    with pytest.raises(ArgumentTypeError) as info:
        jit(lambda_free_add)(1, "x")
    assert info.value.parameter == "b"


def test_python_errors_raised():
    with pytest.raises(ZeroDivisionError):
        jit(lambda_free_div)(1, 0)


def lambda_free_div(a, b):
    return a // b


# -- plugins -----------------------------------------------------------------
def fma3(a, b, c):
    """A new intrinsic; the plugin gives it meaning, CPython runs this body."""
    return a * b + c


_plugin = RuleSet("test_fma_plugin")


def _register(rules):
    class _Plugin(gp.Plugin):
        name, version = rules.name, "1.0"

    _Plugin.rules = rules
    gp.register(_Plugin, replace=True)


_register(_plugin)


@_plugin.define(fma3, Float, Float, Float, restype=lambda a, b, c: T.float64)
def _fma3(cg, args, argtypes, restype):
    return cg.call_intrinsic("llvm.fma", restype, args)


def uses_fma(x):
    return fma3(x, 2.0, 1.0)


def uses_sin(x):
    return math.sin(x) + fma3(x, x, x)


def test_plugin_intrinsic_only_when_enabled():
    with_plugin = jit(uses_fma, plugins=("test_fma_plugin",))
    assert with_plugin(3.0) == 7.0
    assert "llvm.fma" in with_plugin.inspect_llvm(T.float64) or "fma" in with_plugin.inspect_asm(T.float64)
    plain = jit(uses_fma)
    assert plain(3.0) == 7.0  # compiled from fma3's Python body instead
    assert "llvm.fma" not in FunctionSpec(uses_fma, (T.float64,)).generate_ir(
        CompilerJob(FunctionSpec(uses_fma, (T.float64,)), CompilerConfig(NativeTarget())))


def test_two_plugins_claiming_the_same_function():
    other = RuleSet("test_fma_plugin_2")
    _register(other)
    other.define(fma3, Float, Float, Float, restype=T.float64)(_fma3)
    with pytest.raises(RuleConflictError) as info:
        jit(uses_fma, plugins=("test_fma_plugin", "test_fma_plugin_2"))(1.0)
    assert set(info.value.claimants) == {"test_fma_plugin", "test_fma_plugin_2"}


def test_ptx_overlay_uses_libdevice_names():
    spec = FunctionSpec(uses_sin, (T.float64,))
    ptx = spec.generate_ir(CompilerJob(spec, CompilerConfig(PTXTarget())))
    cpu = spec.generate_ir(CompilerJob(spec, CompilerConfig(NativeTarget())))
    assert "@\"__nv_sin\"" in ptx and "llvm.sin.f64" in cpu and "__nv_sin" not in cpu


def test_exports():
    assert gpucompiler.jit is jit and gpucompiler.types.float64 == T.float64


def test_array_types_key_dispatch():
    f = jit(lambda_free_first)
    assert f(np.arange(3.0)) == 0.0 and f(np.arange(3, dtype=np.int32)) == 0
    assert len(f._entries) == 2


def lambda_free_first(a):
    return a[0]


def uses_in(x, a):
    return x in a  # membership line


@pytest.mark.parametrize("fn,construct,marker", [(uses_in, "contains", "membership line")])
def test_unsupported_operators_name_the_line(fn, construct, marker):
    import inspect

    lines, start = inspect.getsourcelines(fn)
    line = start + next(k for k, text in enumerate(lines) if marker in text)
    args = (1.0, np.ones((2, 2)))  # `in` of a 1-d array, a tuple, a list or a dict compiles; of a matrix not yet
    with pytest.raises(TypeInferenceError) as info:
        jit(fn)(*args)
    assert construct in str(info.value) and f":{line}" in str(info.value)


def _add(a, b):
    return a + b


def _returns_str(a):
    return "abc"


def _identity(a):
    return a


def test_integer_arguments_out_of_range_raise_overflow():
    add = jit(_add)
    assert add(2**62, 1) == 2**62 + 1
    with pytest.raises(OverflowError, match="does not fit in int64"):
        add(2**64 + 5, 1)
    with pytest.raises(OverflowError):
        add(1, -(2**63) - 1)


def test_returning_a_python_object_is_a_typed_error_not_none():
    from gpucompiler.errors import TypeInferenceError

    with pytest.raises(TypeInferenceError, match="returns a value of type"):
        jit(_returns_str)(1)


@pytest.mark.parametrize("value,shown", [([[1, 2], [3]], "list of list"), ("text", "str"),
                                         (np.zeros(3, dtype=np.float16), "ndarray of dtype float16")])
def test_argument_type_errors_name_the_python_type(value, shown):
    from gpucompiler.errors import ArgumentTypeError

    with pytest.raises(ArgumentTypeError, match=shown):
        jit(_identity)(value)
