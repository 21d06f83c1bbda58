"""The compiled entry of warm ``@jit`` calls: what it accepts, what it hands to the Python dispatcher.

After a call, the jitted object's class calls the specialization's builtin
entry directly; every other call (other types, keywords, subclasses, an
``int`` past int64, a rebound global) must still give Python's answer.
References: CPython and NumPy on the same arguments.
"""

from __future__ import annotations

import sys
import threading
import types

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler.errors import ArgumentBindingError, ArgumentTypeError
from gpucompiler.runtime import pyentry

jit_module = sys.modules["gpucompiler.jit"]  # the module (the package's ``jit`` is the decorator)

SCALE = 2.0


def _add(a, b):
    return a + b


def _scaled(x):
    return x * SCALE


def _dot(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * y[i]
    return s


def _fill(out, v):
    for i in range(out.shape[0]):
        out[i] = v
    return out.shape[0]


def _div(a, b):
    return a // b


def _pair(a, b):
    return a - b, a * b, a > b


def _fast(f):
    """The builtin the next call runs, if any."""
    return type(f).__dict__.get("__call__")


@pytest.fixture(autouse=True)
def _cache_off(monkeypatch):
    monkeypatch.setenv("GPUC_CACHE", "off")


def test_a_warm_call_runs_the_builtin_entry_and_other_types_still_dispatch():
    add = jit(_add)
    assert add(1, 2) == 3
    assert isinstance(_fast(add), types.BuiltinFunctionType)
    for a, b in [(1, 2), (1.5, 2), (1, 2.5), (True, False), (True, 2), (-7, 3), (1, 2)]:
        got = add(a, b)
        assert got == _add(a, b) and type(got) is type(_add(a, b)), (a, b)
    with pytest.raises(ArgumentTypeError):
        add("a", 1)
    assert add(40, 2) == 42
    assert add(1 + 2j, 0.5 - 1j) == 1.5 + 1j and add(1 + 2j, 0.5 - 1j) == 1.5 + 1j
    assert isinstance(_fast(add), types.BuiltinFunctionType) and add(40, 2) == 42


def test_ints_at_the_int64_boundary_pass_and_past_it_raise_overflow():
    add = jit(_add)
    lo, hi = -(1 << 63), (1 << 63) - 1
    assert add(hi, 0) == hi and add(lo, 0) == lo
    for bad in (hi + 1, lo - 1, 1 << 100):
        with pytest.raises(OverflowError, match="does not fit in int64"):
            add(bad, 0)
    assert add(hi - 1, 1) == hi  # the entry works again after the miss


def test_keyword_arguments_bind_as_in_python():
    add = jit(_add)
    assert add(1, 2) == 3
    assert add(a=3, b=4) == 7 and add(5, b=6) == 11 and add(b=1, a=10) == 11
    with pytest.raises(ArgumentBindingError):
        add(1, c=2)
    with pytest.raises(ArgumentBindingError):
        add(1)
    with pytest.raises(ArgumentBindingError):
        add(1, 2, 3)


def _kwonly(a, *, b=3):
    return a * b


def test_keyword_only_parameters_are_never_bound_positionally():
    f = jit(_kwonly)
    assert f(2) == 6 and f(2, b=5) == 10 and f(2) == 6
    with pytest.raises(ArgumentBindingError):
        f(2, 5)


def test_arrays_that_change_layout_dtype_or_writeability_between_calls():
    dot = jit(_dot)
    rng = np.random.default_rng(1)
    x, y = rng.random(9), rng.random(9)
    readonly = x.copy()
    readonly.flags.writeable = False
    cases = [(x, y), (x[::2], y[::2]), (x.astype(np.float32), y), (readonly, y), (x, y),
             (x.astype(np.int64), y.astype(np.int64)), (x.astype(np.longlong), y), (x, y)]
    for a, b in cases:
        assert dot(a, b) == pytest.approx(float(np.dot(a.astype(np.float64), b)), rel=1e-6)
    fill = jit(_fill)
    out = np.zeros(4)
    assert fill(out, 3.0) == 4 and (out == 3.0).all()
    frozen = np.zeros(4)
    frozen.flags.writeable = False
    with pytest.raises(Exception) as info:  # the error a read-only array gets on the Python dispatcher
        fill(frozen, 1.0)
    assert not isinstance(info.value, SystemError) and (frozen == 0).all()
    strided = np.zeros(8)
    assert fill(strided[::2], 5.0) == 4 and strided.tolist() == [5.0, 0.0] * 4


def test_ndarray_subclasses_and_numpy_scalars_take_the_dispatcher_and_agree_with_numpy():
    class Tagged(np.ndarray):
        pass

    dot = jit(_dot)
    x = np.arange(6.0)
    assert dot(x, x) == float(x @ x)
    t = x.view(Tagged)
    assert dot(t, t) == float(x @ x) and dot(x, x) == float(x @ x)
    add = jit(_add)
    assert add(1.0, 2.0) == 3.0
    assert add(np.float64(1.25), 2.0) == 3.25
    assert add(np.int32(3), np.int32(4)) == 7 and add(np.float32(0.5), 1.0) == 1.5
    with pytest.raises(ArgumentTypeError):
        dot(np.zeros(3, dtype=np.float16), x)  # a dtype compiled code has no type for, refused as before


def test_errors_raised_by_compiled_code_surface_from_the_entry_as_from_the_ctypes_path(monkeypatch):
    div = jit(_div)
    assert div(7, 2) == 3
    assert _fast(div) is not None
    with pytest.raises(ZeroDivisionError) as fast:
        div(1, 0)
    monkeypatch.setattr(pyentry.FastEntry, "available", staticmethod(lambda argtypes, rettype=None: False))
    slow = jit(_div)
    with pytest.raises(ZeroDivisionError) as ctypes_path:
        slow(1, 0)
    assert _fast(slow) is None and str(fast.value) == str(ctypes_path.value)
    assert div(-7, 2) == -4


def test_tuples_and_none_are_boxed_like_python():
    pair = jit(_pair)
    assert pair(5, 3) == _pair(5, 3) and pair(2.5, 4.0) == _pair(2.5, 4.0)
    fill = jit(_fill)
    assert fill(np.zeros(3), 1.0) == 3


def test_rebinding_a_global_recompiles_and_an_unrelated_global_does_not_break_the_entry():
    global SCALE
    scaled = jit(_scaled)
    old = SCALE
    try:
        assert scaled(3.0) == 6.0 and scaled(3.0) == 6.0
        SCALE = 5.0
        assert scaled(3.0) == 15.0
        globals()["_unrelated"] = object()  # the dict's version tag changes, the global read does not
        assert scaled(3.0) == 15.0
        assert _fast(scaled) is not None and scaled(3.0) == 15.0
        SCALE = 0.5
        assert scaled(3.0) == 1.5
    finally:
        SCALE = old


def test_a_change_to_another_global_is_checked_in_compiled_code(monkeypatch):
    scaled = jit(_scaled)
    assert scaled(3.0) == 6.0
    checks: list = []
    real = jit_module.deps_valid
    monkeypatch.setattr(jit_module, "deps_valid", lambda deps: checks.append(1) or real(deps))
    for k in range(50):  # as a loop at module level rebinds its variable
        globals()["_counter"] = k
        assert scaled(3.0) == 6.0
    assert checks == []  # never handed to the Python dispatcher
    monkeypatch.setitem(globals(), "SCALE", 4.0)
    assert scaled(3.0) == 12.0 and checks == [1]


def test_rebinding_a_closure_cell_recompiles():
    def make():
        k = 2.0

        def f(x):
            return x * k

        def set_k(v):
            nonlocal k
            k = v

        return f, set_k

    f, set_k = make()
    jf = jit(f)
    assert jf(3.0) == 6.0 and jf(3.0) == 6.0
    set_k(7.0)
    assert jf(3.0) == 21.0 and jf(3.0) == 21.0


def test_many_threads_calling_with_different_types_at_once():
    add, dot = jit(_add), jit(_dot)
    x = np.arange(16.0)
    add(1, 2), add(1.0, 2.0), add(np.int32(1), np.int32(2)), dot(x, x)  # compiled before the threads start
    errors: list = []

    def work(k):
        try:
            for i in range(2000):
                if k % 4 == 1:  # a specialization without an entry (NumPy scalars) between the others
                    assert add(np.int32(i), np.int32(k)) == i + k
                elif k % 2:
                    assert add(i, k) == i + k
                else:
                    assert add(i * 0.5, 1.0) == i * 0.5 + 1.0
                assert dot(x, x) == 1240.0
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_without_the_expected_object_layouts_calls_stay_on_the_ctypes_path(monkeypatch):
    monkeypatch.setattr(pyentry.FastEntry, "available", staticmethod(lambda argtypes, rettype=None: False))
    add = jit(_add)
    assert add(1, 2) == 3 and add(1, 2) == 3 and add(0.5, 2) == 2.5
    assert _fast(add) is None


def test_this_interpreter_has_the_layouts_the_entries_read():
    assert pyentry.layout_ok()


def _defined(ir: str, name: str) -> str:
    """The body of function ``@name`` (printed plain or quoted) in ``ir``, after its ``define`` line."""
    start = next(ir.index(f) for f in (f"@{name}(", f'@"{name}"(') if f in ir)
    return ir[ir.index("\n", start):ir.index("\n}\n", start)]


def test_an_entry_with_a_loop_is_called_by_its_wrappers_and_a_loopless_one_inlined():
    from gpucompiler import types as T

    dot, add = jit(_dot), jit(_add)
    x, y = np.arange(5.0), np.arange(5.0) + 1.5
    assert dot(x, y) == _dot(x, y) and add(2, 3) == 5
    entry = f"{__name__}._dot"
    ir = dot.inspect_llvm(T.typeof(x), T.typeof(y))
    assert "fadd" in _defined(ir, entry)
    for wrapper in (entry + ".pyentry", entry + ".pywrap"):  # the loop once, in the entry, called
        body = _defined(ir, wrapper)
        assert f"@{entry}(" in body or f'@"{entry}"(' in body
        assert "fadd" not in body
    ir = add.inspect_llvm(T.int64, T.int64)
    body = _defined(ir, f"{__name__}._add.pyentry")
    assert f"{__name__}._add(" not in body and "add i64" in body  # inlined: no call, the addition here


def test_an_entry_that_read_no_global_checks_an_empty_guard_without_a_loop():
    from gpucompiler import types as T

    add, scaled = jit(_add), jit(_scaled)
    ir = add.inspect_llvm(T.float64, T.float64, stage="irgen")
    assert "guard.none" in ir and "guard.head" not in ir
    assert "guard.head" in scaled.inspect_llvm(T.float64, stage="irgen")  # SCALE is read: its guard loops
    assert add(1.5, 2.0) == 3.5 and add(1.5, 2.0) == 3.5 and _fast(add) is not None
    assert scaled(1.5) == 3.0 and scaled(1.5) == 3.0 and _fast(scaled) is not None


def test_a_keyword_call_after_a_warm_call_hands_the_very_objects_to_the_dispatcher():
    fill, add = jit(_fill), jit(_add)
    out = np.zeros(4)
    assert fill(out, 1.0) == 4 and _fast(fill) is not None
    assert fill(v=2.5, out=out) == 4 and list(out) == [2.5] * 4  # the array itself, filled in place
    assert add(1, 2) == 3 and add(b=-(2 ** 63), a=7) == 7 - 2 ** 63
    with pytest.raises(OverflowError):  # past int64, by keyword as by position
        add(b=2 ** 70, a=1)
    with pytest.raises(ArgumentBindingError):
        add(1, 2, **{"c": 3})
    with pytest.raises(ArgumentTypeError):
        fill(out=out, v="x")
