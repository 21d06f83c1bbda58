"""Numba's ``@jit`` options: nogil, fastmath, error_model, cache, eager signatures; wrong values refused."""

from __future__ import annotations

import functools
import math
import threading

import numpy as np
import pytest

from gpucompiler import jit, kernel, types as T
from gpucompiler.core import JitOptions
from gpucompiler.errors import ArgumentTypeError, ConfigError, ErrorModel, UnsupportedError
from gpucompiler.signatures import Signature, accepts, parse_signature

F64_1D = T.ArrayType(T.float64, 1)


def _total(a, n):
    s = 0.0
    for i in range(n):
        s += a[i]
    return s


def test_nogil_releases_the_gil_around_the_call_and_still_raises():
    f = jit(nogil=True)(_total)
    llvm = f.inspect_llvm(F64_1D, T.int64)
    for wrapper in (".pywrap", ".pyentry"):  # the ctypes wrapper and the fast entry
        assert wrapper in llvm
        body = llvm[llvm.index("define", llvm.index(wrapper) - 200):]
        body = body[:body.index("\n}\n")]
        assert "PyEval_SaveThread" in body and "PyEval_RestoreThread" in body, wrapper
    assert "PyEval_SaveThread" not in jit(_total).inspect_llvm(F64_1D, T.int64)
    a = np.arange(10.0)
    assert f(a, 10) == 45.0
    with pytest.raises(IndexError, match="index 10 is out of bounds"):
        f(a, 11)


def test_nogil_calls_from_threads_give_the_same_results():
    f = jit(nogil=True)(_total)
    a = np.random.default_rng(0).random(100_000)
    want = f(a, a.shape[0])
    out = []
    ts = [threading.Thread(target=lambda: out.extend(f(a, a.shape[0]) for _ in range(10))) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert out == [want] * 30


def test_fastmath_puts_fast_flags_on_float_instructions():
    def poly(x):
        return math.sqrt(x * x + 1.0) / (x + 2.0)

    fast = jit(fastmath=True)(poly)
    text = fast.inspect_llvm(T.float64, stage="post_irgen")
    assert "fmul fast double" in text and "fdiv fast double" in text
    assert "fmul fast" not in jit(poly).inspect_llvm(T.float64, stage="post_irgen")
    assert fast(3.0) == pytest.approx(poly(3.0), rel=1e-12)


@pytest.mark.parametrize("model", ["numpy", ErrorModel.NUMPY])
def test_error_model_numpy_gives_ieee_results(model):
    def inv(x):
        return 1.0 / x

    assert jit(error_model=model)(inv)(0.0) == math.inf
    with pytest.raises(ZeroDivisionError):
        jit(error_model="python")(inv)(0.0)


def test_cache_false_writes_nothing_to_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUC_CACHE_DIR", str(tmp_path / "cache"))

    def add3(x):
        return x + 3

    assert jit(cache=False)(add3)(4) == 7
    assert not any(p.is_file() for p in (tmp_path / "cache").rglob("*"))
    assert jit(cache=True)(add3)(4) == 7
    assert any(p.is_file() for p in (tmp_path / "cache").rglob("*"))


def test_a_signature_string_compiles_eagerly_and_converts_arguments():
    f = jit("float64(float64[:], int64)")(_total)
    assert len(f._entries) == 1  # compiled at decoration
    a = np.arange(6.0)
    assert f(a, 4) == 6.0
    assert f(a[::2], True) == 0.0  # a strided array fits float64[:]; bool converts to int64
    with pytest.raises(ArgumentTypeError, match="compiled for") as info:
        f(np.arange(6, dtype=np.int64), 4)
    assert info.value.parameter == "a"  # the argument no signature takes (it read "(all)")


@pytest.mark.parametrize("obj", [int, len, functools.partial(max, 1), np.add])
def test_only_python_functions_compile(obj):
    """A class, a builtin, a partial or a ufunc was an AttributeError ('__code__') from the compiler."""
    for decorate in (jit, kernel):
        with pytest.raises(UnsupportedError, match="only Python functions"):
            decorate(obj)


def test_signature_lists_and_objects():
    def twice(x):
        return x * 2

    f = jit(["int64(int64)", Signature((T.float64,), T.float64)])(twice)
    assert f(21) == 42 and isinstance(f(21), int)
    assert f(1.5) == 3.0


def test_parse_signature_reads_numba_spellings():
    sig = parse_signature("f8(f8[:, ::1], i4, b1)")
    assert sig == Signature((T.ArrayType(T.float64, 2, "C"), T.int32, T.boolean), T.float64)
    assert parse_signature("(float32[:])") == Signature((T.ArrayType(T.float32, 1, "A"),))
    assert accepts(T.float64, T.int64) and not accepts(T.int64, T.float64)
    assert accepts(T.ArrayType(T.float64, 1, "A"), T.ArrayType(T.float64, 1, "C"))
    assert not accepts(T.ArrayType(T.float64, 1, "C"), T.ArrayType(T.float64, 1, "A"))


@pytest.mark.parametrize("sig, words", [
    ("float64(float64[:]", "malformed signature"),
    ("float64(quad)", "unknown type 'quad'"),
    ("float64(float64[1:])", "one ':' per axis"),
    ("float64(float64[:])", "1 argument types for 2 parameters"),
    ("int64(float64[:], int64)", "declares the result int64"),
])
def test_bad_signatures_raise_config_errors(sig, words):
    with pytest.raises(ConfigError, match=words):
        jit(sig)(_total)


@pytest.mark.parametrize("options, words", [
    ({"paralel": True}, "unknown jit option 'paralel'"),
    ({"parallel": "yes"}, "parallel must be True or False"),
    ({"nogil": 1}, "nogil must be True or False"),
    ({"fastmath": None}, "fastmath must be True or False"),
    ({"cache": "off"}, "cache must be True or False"),
    ({"error_model": "ieee"}, "error_model must be"),
    ({"opt_level": 7}, "opt_level must be"),
])
def test_wrong_option_values_raise_config_errors_at_the_decorator(options, words):
    with pytest.raises(ConfigError, match=words):
        jit(**options)(_total)


def test_options_enter_the_job_key():
    keys = {JitOptions(**o).frontend(2) for o in ({}, {"parallel": True}, {"nogil": True}, {"fastmath": True})}
    assert len(keys) == 4
    assert JitOptions().frontend(8).parallel_threads == 0  # threads only with parallel=True


def test_signatures_with_numpy_dtype_names_and_safe_casts():
    assert parse_signature("c16(u1[:], int8)") == Signature((T.ArrayType(T.uint8, 1, "A"), T.int8), T.complex128)
    assert accepts(T.int64, T.boolean) and accepts(T.complex128, T.float64)
    assert not accepts(T.int64, T.uint64) and not accepts(T.int32, T.int64)
