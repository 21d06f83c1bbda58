"""The native launch entry (gpucompiler/runtime/launch_entry.py): a launch object launched many times with one
signature gets a compiled ``__call__`` that checks, packs and calls ``cuLaunchKernel`` through the driver's C
function (here the fake driver of tests/kernels/test_cuda_launch.py, through a ctypes callback that runs each
launch in the CPU grid emulation, on the fake CuPy arrays of fake_cupy.py).

Every launch is compared with the Python launch of the same arguments (``Launch.__call__`` of the class: the
path the entry falls back to): the same parameter bytes, grid, block and stream reach the driver, and the
kernels' results are NumPy's. Every guard of the Python launch is tripped once the entry is made."""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import threading
import types

import numpy as np
import pytest

from gpucompiler import device as gd
from gpucompiler.errors import ArgumentBindingError, CudaError
from gpucompiler.cache import later
from gpucompiler.kernel import NATIVE_AFTER, NATIVE_WAIT, Kernel, Launch, recording_launches
from gpucompiler.runtime import cuda, launch_entry
from gpucompiler.runtime.cpu import CPULibrary, LinkError
from gpucompiler.runtime.devices import Device

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))
sys.path.insert(0, os.path.dirname(__file__))
import fake_cupy
from test_cuda_launch import _LAUNCH_KERNEL, FakeDriver  # pyright: ignore[reportMissingImports]

#: an interpreter that cannot run native launch entries (CPython 3.10) keeps every launch on the Python launch
pytestmark = pytest.mark.skipif(not launch_entry.supported(), reason="native launch entries need CPython 3.11 "
                                "or later (PyObject_Vectorcall exported)")


@pytest.fixture
def fake(monkeypatch):
    driver = FakeDriver()
    with fake_cupy.on_driver(monkeypatch, driver) as module:
        yield module, driver


def native(launch) -> bool:
    """Whether ``launch`` has a native entry as its ``__call__``."""
    return type(launch) is not Launch and type(type(launch).__dict__["__call__"]).__name__ == "builtin_function_or_method"


def warm(launch, *args) -> int:
    """Launch until the entry is made (NATIVE_AFTER launches through the bound launch, then, where its plan is
    new, until an ask after its compile on a thread of its own ended); the number of launches made."""
    for count in range(1, 8 * NATIVE_WAIT):
        launch(*args)
        if native(launch):
            return count
        if count % NATIVE_AFTER == 0:
            later.wait()
    raise AssertionError(f"no native entry after {8 * NATIVE_WAIT} launches")


def _scale1(x, a):
    i = gd.grid(1)
    if i < x.shape[0]:
        x[i] = x[i] * a + i


def _scale2(x, a):
    i = gd.grid(1)
    if i < x.shape[0]:
        for j in range(x.shape[1]):
            x[i, j] = x[i, j] * a + j


def _scale3(x, a):
    i = gd.grid(1)
    if i < x.shape[0]:
        for j in range(x.shape[1]):
            for k in range(x.shape[2]):
                x[i, j, k] = x[i, j, k] * a + j - k


def _scalars(out, a, b, c, d, e):
    if gd.grid(1) == 0:
        out[0] = a
        out[1] = b
        out[2] = d + e
        if c:
            out[3] = 1.0
        else:
            out[3] = -1.0


def _count(out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] += 1


def _axpy6(a, x, y, out, n, flag):
    i = gd.grid(1)
    if i < n:
        out[i] = a * x[i] + y[i]
        if flag:
            out[i] += 1.0


def scale1():  # each test its own kernel objects: no launch object made in another test (on another driver)
    return Kernel(_scale1)


def scalars():
    return Kernel(_scalars)


def count():
    return Kernel(_count)


def axpy6():
    return Kernel(_axpy6)


def _expected_scale(host: np.ndarray, a) -> np.ndarray:
    """One launch of ``_scale<ndim>``, the kernel's operations in its order (``x * a + j - k`` is
    ``(x * a + j) - k``: values grow with the launches, where another order rounds differently)."""
    idx = np.indices(host.shape).astype(host.dtype)
    scaled = host * host.dtype.type(a)
    if host.ndim == 1:
        return scaled + idx[0]
    if host.ndim == 2:
        return scaled + idx[1]
    return (scaled + idx[1]) - idx[2]


def _array(cp, case: str):
    base = np.arange(1.0, 1 + 6 * 4 * 5)
    return {
        "1d": lambda: cp.asarray(np.arange(40.0)),
        "1d f32": lambda: cp.asarray(np.arange(40.0, dtype=np.float32)),
        "1d i64": lambda: cp.asarray(np.arange(40)),
        "1d strided": lambda: cp.asarray(base.copy())[::3],
        "2d": lambda: cp.asarray(base.reshape(12, 10).copy()),
        "2d transposed": lambda: cp.asarray(base.reshape(10, 12).copy()).reshape(10, 12)[:, ::2],
        "3d": lambda: cp.asarray(base.reshape(6, 4, 5).copy()),
        "3d strided": lambda: cp.asarray(base.reshape(6, 4, 5).copy())[::2, :, 1:],
    }[case]()


SCALES = [(_scale1, "1d", 1.5, 1, 64), (_scale1, "1d f32", np.float32(0.5), 2, 32), (_scale1, "1d i64", 3, 1, 64),
          (_scale1, "1d strided", 2.0, (1, 1, 1), (64, 1, 1)), (_scale1, "1d", np.float64(-1.0), 4, 16),
          (_scale2, "2d", 0.25, 1, 32), (_scale2, "2d transposed", 2.0, 2, 8),
          (_scale3, "3d", 1.0, 1, 8), (_scale3, "3d strided", -2.0, (1, 1), (8, 1))]


@pytest.mark.parametrize("fn,case,a,grid,block", SCALES)
def test_native_launches_pass_the_python_launchs_bytes_and_give_numpys_results(fake, fn, case, a, grid, block):
    cp, driver = fake
    x = _array(cp, case)
    launch = Kernel(fn)[grid, block]
    expected = x.get()
    for _ in range(warm(launch, x, a)):
        expected = _expected_scale(expected, a)
    np.testing.assert_array_equal(x.get(), expected)
    before = driver.native_launches
    launch(x, a)
    assert driver.native_launches == before + 1  # through the entry
    native_bytes, native_call = driver.params[-1], driver.calls[-1]
    Launch.__call__(launch, x, a)  # the Python launch of the same arguments
    assert driver.native_launches == before + 1
    assert driver.params[-1] == native_bytes and driver.calls[-1] == native_call
    np.testing.assert_array_equal(x.get(), _expected_scale(_expected_scale(expected, a), a))


@pytest.mark.parametrize("a,b,c,d,e", [
    (1.5, 7, True, np.float32(2.5), np.int32(-3)), (-0.0, -(2**63), False, np.float64(1e300), np.int64(2**62)),
    (float("inf"), 2**63 - 1, np.bool_(True), np.float32(-1.0), np.int64(-5)),
    (np.float32(3.25), np.int32(9), np.bool_(False), np.float64(-2.0), 11)])
def test_scalars_of_every_type_reach_the_kernel_as_the_python_launch_packs_them(fake, a, b, c, d, e):
    cp, driver = fake
    out = cp.zeros(4)
    launch = scalars()[1, 1]
    warm(launch, out, a, b, c, d, e)
    before = driver.native_launches
    out.fill(0)
    launch(out, a, b, c, d, e)
    assert driver.native_launches == before + 1
    native_bytes = driver.params[-1]
    Launch.__call__(launch, out, a, b, c, d, e)
    assert driver.params[-1] == native_bytes
    # the kernel's own conversions, as the emulation computes them for these argument types
    assert out.get()[3] == (1.0 if c else -1.0) and out.get()[0] == np.float64(a)


def test_six_arguments_on_several_grids_and_given_streams(fake):
    cp, driver = fake
    n = 100
    x, y = cp.asarray(np.arange(n, dtype=np.float64)), cp.asarray(np.ones(n))
    for grid, block, stream in ((4, 32, None), ((2, 1, 1), 64, 5), (1, 128, 0), (8, (16, 1, 1), 99)):
        out = cp.zeros(n)
        launch = axpy6()[grid, block] if stream is None else axpy6()[grid, block, stream]
        warm(launch, 2.0, x, y, out, n, False)
        before = driver.native_launches
        launch(3.0, x, y, out, n, True)  # another flag and scalar: the same signature
        assert driver.native_launches == before + 1
        np.testing.assert_array_equal(out.get(), 3.0 * np.arange(n) + 2.0)
        assert driver.calls[-1][3] == (stream or 0)
        native_call, native_bytes = driver.calls[-1], driver.params[-1]
        Launch.__call__(launch, 3.0, x, y, out, n, True)
        assert driver.calls[-1] == native_call and driver.params[-1] == native_bytes


@pytest.mark.parametrize("ptr_function", [False, True])
def test_cupys_current_stream_is_followed(fake, monkeypatch, ptr_function):
    """Through ``get_current_stream().ptr``, or ``cupy.cuda.stream.get_current_stream_ptr()`` where it exists."""
    cp, driver = fake
    if ptr_function:
        monkeypatch.setattr(cp.cuda, "stream", types.SimpleNamespace(
            get_current_stream_ptr=lambda: cp.cuda.get_current_stream().ptr), raising=False)
    out = cp.zeros(8)
    launch = count()[1, 8]
    warmed = warm(launch, out)
    for ptr, handle in ((77, 77), (1, 0), (2, 2), (0, 0)):
        with cp.cuda.Stream(ptr=ptr):
            before = driver.native_launches
            launch(out)
            assert driver.native_launches == before + 1 and driver.calls[-1][3] == handle
            Launch.__call__(launch, out)
            assert driver.calls[-1][3] == handle
    np.testing.assert_array_equal(out.get(), np.full(8, warmed + 8))


def test_a_new_buffer_of_the_same_layout_is_launched_on(fake):
    cp, driver = fake
    launch = count()[1, 8]
    warm(launch, cp.zeros(8))
    for _ in range(3):
        out = cp.zeros(8)
        before = driver.native_launches
        launch(out)
        assert driver.native_launches == before + 1
        np.testing.assert_array_equal(out.get(), np.ones(8))


SCALE = 2.0


def _global_scale(x):
    i = gd.grid(1)
    if i < x.shape[0]:
        x[i] = SCALE


def test_a_rebound_global_recompiles(fake):
    global SCALE
    cp, driver = fake
    k = Kernel(_global_scale)
    x = cp.zeros(4)
    launch = k[1, 4]
    warm(launch, x)
    assert (x.get() == 2.0).all()
    try:
        SCALE = 5.0
        launch(x)
        np.testing.assert_array_equal(x.get(), np.full(4, 5.0))
        assert len(driver.modules) == 2  # compiled again
        before = driver.native_launches
        for _ in range(NATIVE_WAIT + 1):  # a new entry over the new code, at the next ask
            launch(x)
        assert driver.native_launches > before
        before = driver.native_launches
        SCALE = 7.0
        launch(x)  # a miss: the Python launch compiles and launches
        np.testing.assert_array_equal(x.get(), np.full(4, 7.0))
        assert driver.native_launches == before and len(driver.modules) == 3
    finally:
        SCALE = 2.0


def test_another_global_of_the_module_changing_keeps_the_entry(fake):
    global OTHER
    cp, driver = fake
    k = Kernel(_global_scale)
    x = cp.zeros(4)
    launch = k[1, 4]
    warm(launch, x)
    OTHER = object()  # the module's dict changes (its version tag moves), SCALE stays
    before = driver.native_launches
    launch(x)
    assert driver.native_launches == before + 1 and len(driver.modules) == 1


OTHER = None


def test_an_active_recorder_records_instead_of_launching(fake):
    cp, driver = fake
    out = cp.zeros(8)
    launch = count()[1, 8]
    warm(launch, out)
    recorded = []
    launches = len(driver.params)
    with recording_launches(lambda launch, args: recorded.append((launch, args))):
        launch(out)
    assert recorded == [(launch, (out,))] and len(driver.params) == launches


def test_the_entry_hands_a_recorded_launch_to_the_recorder_itself(fake):
    """While a recorder is active, the entry calls it (no frame of the Python launch between them) with the
    launch object and the arguments as a tuple, returns what it returns, passes on what it raises, and keeps
    no reference to the arguments, the launch or the recorder."""
    cp, driver = fake
    launch = Kernel(_scale1)[1, 8]
    x = cp.asarray(np.ones(8))
    warm(launch, x, 1.0)
    callers, calls = [], []

    def record(launch, args):
        callers.append(sys._getframe(1).f_code.co_name)
        calls.append((launch, args))
        if args[1] == 0.0:
            raise KeyError("refused")
        return len(calls)

    launches, watched = len(driver.params), [x, launch, record]
    before = [sys.getrefcount(o) for o in watched]
    with recording_launches(record):
        results = [launch(x, float(k + 1)) for k in range(500)]
        with pytest.raises(KeyError, match="refused"):
            launch(x, 0.0)
    assert results == list(range(1, 501)) and len(driver.params) == launches
    # the caller of each: this test's frame (or its list comprehension's, before Python 3.12), not Launch.__call__
    assert set(callers) <= {"<listcomp>", "test_the_entry_hands_a_recorded_launch_to_the_recorder_itself"}
    assert all(got is launch and type(args) is tuple and args[0] is x for got, args in calls)
    assert [args[1] for _, args in calls] == [float(k + 1) for k in range(500)] + [0.0]
    calls.clear()
    callers.clear()
    gc.collect()
    assert [sys.getrefcount(o) for o in watched] == before


def test_a_chosen_device_takes_the_python_launch(fake):
    cp, driver = fake
    out = cp.zeros(8)
    launch = count()[1, 8]
    warmed = warm(launch, out)
    before = driver.native_launches
    with Device(0):
        launch(out)
    assert driver.native_launches == before
    np.testing.assert_array_equal(out.get(), np.full(8, warmed + 1))


def test_other_shapes_dtypes_and_strides_launch_right(fake):
    cp = fake[0]
    launch = scale1()[4, 32]
    warm(launch, cp.zeros(64), 1.0)
    for make in (lambda: cp.asarray(np.arange(33.0)), lambda: cp.asarray(np.arange(64, dtype=np.float32)),
                 lambda: cp.asarray(np.arange(128.0))[::2], lambda: cp.asarray(np.arange(64))):
        x = make()
        expected = _expected_scale(x.get(), 2)
        launch(x, 2)
        np.testing.assert_array_equal(x.get(), expected)


def test_wrong_count_and_out_of_range_scalars_are_the_python_launchs_typed_errors(fake):
    cp, driver = fake
    out = cp.zeros(4)
    launch = scalars()[1, 1]
    args = (out, 1.0, 2, True, np.float32(1.0), np.int32(1))
    warm(launch, *args)
    with pytest.raises(ArgumentBindingError):
        launch(out, 1.0)
    with pytest.raises(ArgumentBindingError):
        launch(*args, 3)
    launches = len(driver.params)
    with pytest.raises(OverflowError) as native_error:  # the Python launch's error (runtime/params.py)
        launch(out, 1.0, 2**63, True, np.float32(1.0), np.int32(1))
    with pytest.raises(OverflowError) as python_error:
        Launch.__call__(launch, out, 1.0, 2**63, True, np.float32(1.0), np.int32(1))
    assert str(native_error.value) == str(python_error.value) and len(driver.params) == launches
    with pytest.raises(ArgumentBindingError, match="unexpected keyword argument 'keyword'"):
        launch(out, 1.0, 2, True, np.float32(1.0), np.int32(1), keyword=1)
    out.fill(0)
    launch(out, 1.5, 2, c=False, d=np.float32(1.0), e=np.int32(2))  # keywords: the Python launch binds them
    np.testing.assert_array_equal(out.get(), [1.5, 2.0, 3.0, -1.0])


def test_a_context_error_asks_again_and_launches_once(fake, monkeypatch):
    cp, driver = fake
    out = cp.zeros(8)
    launch = count()[1, 8]
    warmed = warm(launch, out)
    refused = []
    original = driver.cuLaunchKernel

    def once(*args):
        if not refused:
            refused.append(args)
            return (201,)  # CUDA_ERROR_INVALID_CONTEXT: nothing ran
        return original(*args)

    monkeypatch.setattr(driver, "cuLaunchKernel", once)
    before = driver.native_launches
    launch(out)
    assert refused and driver.native_launches == before + 1
    np.testing.assert_array_equal(out.get(), np.full(8, warmed + 1))  # one launch, not two
    for _ in range(4 * NATIVE_AFTER):  # the entry was dropped; a new one is made
        launch(out)
    assert native(launch) and driver.native_launches > before + 1


def test_another_driver_error_is_a_typed_error(fake, monkeypatch):
    cp, driver = fake
    out = cp.zeros(8)
    launch = count()[1, 8]
    warm(launch, out)
    monkeypatch.setattr(driver, "cuLaunchKernel", lambda *args: (1,))
    before = driver.native_launches
    with pytest.raises(CudaError) as info:
        launch(out)
    assert info.value.name == "CUDA_ERROR_INVALID_VALUE" and info.value.call == "cuLaunchKernel"
    assert driver.native_launches == before + 1  # raised from the entry's launch, not a second one
    assert info.value.__traceback__ is not None and info.value.__cause__ is None


def test_threads_launching_concurrently(fake):
    cp, driver = fake
    n, rounds = 64, 3 * NATIVE_AFTER
    warm(count()[2, 32], cp.zeros(n))  # the plan compiled: the launch below gets its entry at its first ask
    k = count()
    k[(2, 1, 1), 32](cp.zeros(n))  # its code loaded once (the fake driver finds a function loaded twice once)
    outs = [cp.zeros(n) for _ in range(4)]
    launch = k[2, 32]
    errors = []

    def work(out):
        try:
            for _ in range(rounds):
                launch(out)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(out,)) for out in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and driver.native_launches > 0
    for out in outs:
        np.testing.assert_array_equal(out.get(), np.full(n, float(rounds)))


class ndarray:  # named as CuPy's, in a module named cupy: another type all the same
    """An impostor: CuPy's attributes, another type."""

    def __init__(self, real):
        self.real = real
        self.data, self.shape, self.strides, self.dtype = real.data, real.shape, real.strides, real.dtype

    @property
    def __cuda_array_interface__(self):
        return self.real.__cuda_array_interface__


ndarray.__module__ = "cupy"


def test_an_impostor_and_a_subclass_of_cupys_array_take_the_python_launch(fake):
    cp, driver = fake
    launch = count()[1, 8]
    warm(launch, cp.zeros(8))

    class Sub(cp.ndarray):
        __slots__ = ()

    real = cp.zeros(8)
    sub = Sub.__new__(Sub)
    fake_cupy._view(sub, real.host, real.data)
    before = driver.native_launches
    for x in (ndarray(real), sub):
        launch(x)
    assert driver.native_launches == before
    np.testing.assert_array_equal(real.get(), np.full(8, 2.0))


def test_a_bool_where_an_int_was_and_numpy_scalars_where_python_ones_were(fake):
    """``True`` is an ``int`` to Python, ``np.float64`` a ``float``: neither is the type the entry was made for."""
    cp, driver = fake
    for made, given in ((1, True), (2.0, np.float64(0.5)), (2.0, np.float32(0.5)), (np.int64(1), 1)):
        launch = scale1()[1, 8]
        x = cp.zeros(8)
        warm(launch, x, made)
        before = driver.native_launches
        x.fill(1.0)
        launch(x, given)
        assert driver.native_launches == before
        np.testing.assert_array_equal(x.get(), _expected_scale(np.ones(8), given))


def test_two_launch_objects_of_one_configuration_each_keep_their_entry(fake):
    cp, driver = fake
    k = count()
    first, second = k[1, 8], k[(1, 1, 1), (8, 1, 1)]
    assert first is not second
    out = cp.zeros(8)
    warmed = warm(first, out) + warm(second, out)
    before = driver.native_launches
    for _ in range(3):
        first(out)
        second(out)
    assert driver.native_launches == before + 6
    np.testing.assert_array_equal(out.get(), np.full(8, warmed + 6))


def test_other_lengths_and_strides_of_the_signatures_layout_stay_native(fake):
    """The entry takes any shape and strides whose contiguity is the signature's (a dimension of extent 1 has
    any stride, as the Python launch's ``is_contiguous`` says), and passes them as the Python launch does."""
    cp, driver = fake
    launch = Kernel(_scale2)[2, 16]
    warm(launch, cp.asarray(np.ones((12, 10))), 1.0)
    host = np.arange(1.0, 41.0)
    odd = cp.ndarray((5, 1), float, memptr=cp.asarray(host).data, strides=(8, 999))
    for x, goes_native in ((cp.asarray(np.ones((3, 7))), True), (cp.asarray(host[:20].reshape(20, 1)), True),
                           (cp.asarray(np.ones((1, 30))), True), (odd, True),
                           (cp.asarray(host.reshape(4, 10))[:, ::2], False), (cp.asarray(host.reshape(10, 4)).reshape(4, 10), True)):
        expected = _expected_scale(x.get(), 2.0)
        before = driver.native_launches
        launch(x, 2.0)
        assert driver.native_launches == before + goes_native
        np.testing.assert_array_equal(x.get(), expected)
        launched = driver.params[-1], driver.calls[-1]
        Launch.__call__(launch, x, 2.0)
        assert (driver.params[-1], driver.calls[-1]) == launched


def test_launches_and_misses_hold_no_reference(fake):
    """Every object the entries read (the array, its dtype, shape, strides, data, the stream, the scalars) has
    the references it had before a thousand rounds of native launches and of each kind of miss, once the
    entries of the three signatures were made."""
    cp, driver = fake
    launch = Kernel(_scale2)[1, 8]
    x = cp.asarray(np.ones((4, 8)))
    strided = cp.asarray(np.ones((4, 16)))[:, ::2]  # another contiguity: its tuples read, then a miss
    other = cp.asarray(np.ones((4, 8), np.float32))  # another dtype: a miss

    def rounds(count: int) -> None:
        for _ in range(count):
            launch(x, 1.0)
            launch(strided, 1.0)
            launch(other, 1.0)
            with pytest.raises(ArgumentBindingError):
                launch(x)
        with pytest.raises(OverflowError):  # not an int64: a miss, the Python launch raises
            launch(x, 2**70)

    rounds(3000)
    assert len(launch._entries) == 3  # one per signature, each falling back to the one before
    watched = [x, x.dtype, x.shape, x.strides, x.data, strided, strided.shape, strided.strides, other,
               other.dtype, cp.cuda.get_current_stream(), np.float64, 1.0]
    gc.collect()  # the cycles of earlier tests' entries hold dtypes too: gone before counting
    before = [sys.getrefcount(o) for o in watched]
    natives = driver.native_launches
    rounds(1000)
    assert driver.native_launches == natives + 3000
    gc.collect()
    assert [sys.getrefcount(o) for o in watched] == before


def test_numpy_arrays_on_a_native_launch_are_still_copied_in_and_out(fake):
    cp, driver = fake
    launch = Kernel(_scale1)[1, 64]
    warm(launch, cp.zeros(40), 1.0)
    host = np.arange(40.0)
    launch(host, 2.0)
    np.testing.assert_array_equal(host, 2.0 * np.arange(40.0) + np.arange(40.0))
    assert driver.memory == {}


def test_a_rebound_closure_variable_recompiles(fake):
    cp, driver = fake
    factor = 2.0

    def _fill(x):
        i = gd.grid(1)
        if i < x.shape[0]:
            x[i] = factor

    launch = Kernel(_fill)[1, 4]
    x = cp.zeros(4)
    warm(launch, x)
    assert (x.get() == 2.0).all()
    factor = 3.0
    launch(x)
    np.testing.assert_array_equal(x.get(), np.full(4, factor))
    assert len(driver.modules) == 2  # compiled again for the cell's new value


def test_run_launches_natively_while_launches_are_recorded(fake):
    cp, driver = fake
    out = cp.zeros(8)
    launch = count()[1, 8]
    warmed = warm(launch, out)
    recorded = []
    before = driver.native_launches
    with recording_launches(lambda launch, args: recorded.append(args)):
        launch(out)  # recorded
        launch.run(out)  # launched now
    assert recorded == [(out,)] and driver.native_launches == before + 1
    np.testing.assert_array_equal(out.get(), np.full(8, warmed + 1))


def _k1(a):
    gd.grid(1)


def _k2(a, b):
    gd.grid(1)


def _k3(a, b, c):
    gd.grid(1)


def _k4(a, b, c, d):
    gd.grid(1)


def _k5(a, b, c, d, e):
    gd.grid(1)


def _k6(a, b, c, d, e, f):
    gd.grid(1)


ARITIES = (_k1, _k2, _k3, _k4, _k5, _k6)
DTYPES = (np.float64, np.float32, np.int64, np.int32)
SCALARS = (lambda r: float(r.normal()), lambda r: int(r.integers(-2**62, 2**62)), lambda r: bool(r.integers(2)),
           lambda r: np.float64(r.normal()), lambda r: np.float32(r.normal()), lambda r: np.int64(r.integers(-9, 9)),
           lambda r: np.int32(r.integers(-9, 9)), lambda r: np.bool_(r.integers(2)))


def _random_array(cp, rng, dtype, ndim: int, strided: bool, length: int):
    shape = tuple(int(rng.integers(1, 5)) for _ in range(ndim - 1)) + (length,)
    full = cp.asarray(np.arange(int(np.prod(shape)) * (2 if strided else 1)).astype(dtype).reshape(
        *shape[:-1], length * (2 if strided else 1)))
    return full[..., ::2] if strided else full


def _key(args) -> tuple:
    sig = cuda.signature(args)
    assert sig is not None
    return sig[0]


def _random_case(cp, rng) -> tuple:
    """A launch object of a random kernel signature (1-6 arguments: scalars of each type, CuPy arrays of 1-3
    dimensions, four dtypes, strided or not), grid, block and stream, and ``values(length)``: random arguments
    of that signature (its arrays of that last extent)."""
    n = int(rng.integers(1, 7))
    plan = []
    for _ in range(n):
        if rng.random() < 0.5:
            plan.append(("scalar", int(rng.integers(len(SCALARS)))))
        else:
            plan.append(("array", DTYPES[int(rng.integers(4))], int(rng.integers(1, 4)), bool(rng.integers(2))))

    def values(length: int) -> tuple:
        return tuple(SCALARS[p[1]](rng) if p[0] == "scalar" else _random_array(cp, rng, p[1], p[2], p[3], length)
                     for p in plan)

    grid = tuple(int(rng.integers(1, 4)) for _ in range(int(rng.integers(1, 4))))
    block = int(rng.choice([1, 32, 64, 256]))
    stream = [None, 0, 7][int(rng.integers(3))]
    kernel = Kernel(ARITIES[n - 1])
    return (kernel[grid, block] if stream is None else kernel[grid, block, stream]), values


@pytest.mark.parametrize("seed", range(24))
def test_random_signatures_pass_the_python_launchs_bytes(fake, seed):
    """A random kernel signature (1-6 arguments: scalars of each type, CuPy arrays of 1-3 dimensions, four
    dtypes, strided or not), grid, block and stream: after the entry is made, launches on new values of the same
    kinds (other scalars, arrays of other lengths) reach the driver through the entry with the Python launch's
    bytes, grid, block and stream (those of another signature through the Python launch)."""
    cp, driver = fake
    rng = np.random.default_rng(seed)
    launch, values = _random_case(cp, rng)
    first = values(5)
    warm(launch, *first)
    key = _key(first)
    for length in (3, 8, 1):  # 1: a strided array whose last extent is 1 is contiguous, another signature
        args = values(length)
        before = driver.native_launches
        launch(*args)
        assert driver.native_launches == before + (_key(args) == key)
        launched = driver.params[-1], driver.calls[-1]
        Launch.__call__(launch, *args)
        assert (driver.params[-1], driver.calls[-1]) == launched


def _missed(*args) -> str:
    return "missed"


def fixed_entry(launch, args):
    """A fixed entry (a launch tape's, :meth:`cuda.BoundLaunch.native` without a recorder) of ``launch``'s bound
    launch for ``args``, once its code compiled; its misses return ``"missed"``."""
    for _ in range(100):
        entry = cuda.CUDA.native(launch._bound[1], args, _missed, None)
        if entry is not None:
            return entry
        later.wait()
    raise AssertionError("no fixed entry")


def _other(value, rng):
    """Another scalar of ``value``'s type (its bits differ)."""
    if type(value) in (bool, np.bool_):
        return type(value)(not value)
    for _ in range(100):
        other = type(value)(value + type(value)(rng.integers(1, 9)))
        if np.asarray(other).tobytes() != np.asarray(value).tobytes():
            return other
    raise AssertionError(f"no other value than {value!r}")


@pytest.mark.parametrize("seed", range(16))
def test_random_fixed_entries_launch_only_on_their_own_values(fake, seed):
    """A fixed entry made on random arguments launches those objects with the Python launch's bytes, grid, block
    and stream, also while a launch recorder is active (its caller is the recorder); any one argument replaced by
    another of the same kind (another array of the same layout, another scalar value), by another object of the
    same values (a view of the same memory, an equal float), or an array reshaped under the same object is a
    miss that launches nothing."""
    cp, driver = fake
    rng = np.random.default_rng(1000 + seed)
    launch, values = _random_case(cp, rng)
    args = values(5)
    warm(launch, *args)
    entry = fixed_entry(launch, args)
    before, launches = driver.native_launches, len(driver.params)
    with recording_launches(lambda launch, args: pytest.fail("a fixed entry's call was recorded")):
        assert entry(*args) is None
    assert driver.native_launches == before + 1
    launched = driver.params[-1], driver.calls[-1]
    Launch.__call__(launch, *args)
    assert (driver.params[-1], driver.calls[-1]) == launched
    others = values(5)
    launches = len(driver.params)
    for k, a in enumerate(args):
        other = others[k] if isinstance(a, fake_cupy.ndarray) else _other(a, rng)
        assert entry(*args[:k], other, *args[k + 1:]) == "missed"
        # another object of the same values: a view of the same memory, or an equal float
        same = fake_cupy.wrap(a.host) if isinstance(a, fake_cupy.ndarray) else float(repr(a)) \
            if type(a) is float else None
        if same is not None:
            assert same is not a and entry(*args[:k], same, *args[k + 1:]) == "missed"
        if isinstance(a, fake_cupy.ndarray) and a.shape[-1] > 1:
            host, data = a.host, a.data
            fake_cupy._view(a, host[..., :-1], data)  # the same object and pointer, shorter
            try:
                assert entry(*args) == "missed"
            finally:
                fake_cupy._view(a, host, data)
    assert len(driver.params) == launches
    assert entry(*args) is None and driver.params[-1] == launched[0]


def test_a_fixed_entry_launches_only_on_its_stream(fake):
    """Made while CuPy's current stream is the legacy default one (named 1, or 0): launches there, misses on
    another stream."""
    cp, driver = fake
    out = cp.zeros(8)
    launch = count()[1, 8]
    warm(launch, out)
    entry = fixed_entry(launch, (out,))
    for ptr, result in ((0, None), (1, None), (77, "missed"), (2, "missed")):
        with cp.cuda.Stream(ptr=ptr):
            before = driver.native_launches
            assert entry(out) == result
            assert driver.native_launches == before + (result is None)
    assert driver.calls[-1][3] == 0


def test_an_entry_nobody_holds_is_invalidated_and_left_out_of_the_next_ask(fake):
    """A fixed entry dropped by its holder (a launch tape's repeat that is not repeated any more) hands later
    calls to its fallback and leaves the launcher's list of entries at the next ask: the list does not grow."""
    cp, _ = fake
    out = cp.zeros(8)
    launch = count()[1, 8]
    warm(launch, out)
    assert launch._bound is not None
    bound = launch._bound[1].__self__
    entry = fixed_entry(launch, (out,))
    words = entry.__self__[1]
    assert launch_entry.is_valid(words)
    del entry
    gc.collect()
    assert not launch_entry.is_valid(words)
    for _ in range(6):
        entry = fixed_entry(launch, (out,))
        del entry
    assert len(bound.entries) <= 2 and sum(launch_entry.is_valid(w) for _, w in bound.entries) == 1  # the launch's


class IntHandles(FakeDriver):
    """A driver binding as cuda-bindings is to the entry: no ``native_launch``, int function handles (``int()`` of
    a ``CUfunction``); its C ``cuLaunchKernel`` stands for libcuda's."""

    native_launch = None  # type: ignore[assignment]

    def cuModuleGetFunction(self, module, name):
        super().cuModuleGetFunction(module, name)
        return (0, 4096 + module)


def test_a_binding_without_its_own_c_function_launches_through_libcudas(fake, monkeypatch):
    cp, _ = fake
    driver = IntHandles()
    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    monkeypatch.setattr(cuda, "_state", {"init": False})
    calls = []

    def launch_kernel(fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        calls.append(fn)
        return int(driver.cuLaunchKernel(fn, gx, gy, gz, bx, by, bz, shared, stream or 0, params, extra)[0])

    c_launch = _LAUNCH_KERNEL(launch_kernel)
    monkeypatch.setattr(launch_entry, "libcuda_launch", lambda: ctypes.cast(c_launch, ctypes.c_void_p).value)
    out = cp.zeros(8)
    launch = count()[1, 8]
    warmed = warm(launch, out)
    launch(out)
    assert calls == [4097]
    np.testing.assert_array_equal(out.get(), np.full(8, warmed + 1))


def test_no_c_function_or_no_int_handle_keeps_the_python_launch(fake, monkeypatch):
    cp, driver = fake
    monkeypatch.setattr(driver, "native_launch", None)
    monkeypatch.setattr(launch_entry, "libcuda_launch", lambda: None)  # no libcuda here
    out = cp.zeros(8)
    launch = count()[1, 8]
    for _ in range(4 * NATIVE_AFTER):
        launch(out)
    assert type(launch) is Launch
    monkeypatch.setattr(launch_entry, "libcuda_launch", lambda: 1)  # an address, but the fake's handles are tuples
    launch = count()[1, 8]
    for _ in range(4 * NATIVE_AFTER):
        launch(out)
    assert type(launch) is Launch
    np.testing.assert_array_equal(out.get(), np.full(8, 8.0 * NATIVE_AFTER))


def test_an_entry_llvm_cannot_make_warns_and_keeps_the_python_launch(fake, monkeypatch):
    cp, _ = fake

    def fails(*args, **kwargs):
        raise LinkError("unresolved external symbol(s) PyContextVar_Get")

    monkeypatch.setattr(CPULibrary, "from_ir", fails)
    monkeypatch.setattr(launch_entry, "_compiles", {})  # every plan compiles again (and fails)
    out = cp.zeros(3)
    launch = count()[1, 3]
    with pytest.warns(RuntimeWarning, match="no native launch entry"):
        for _ in range(NATIVE_AFTER + 1):  # the first ask (the first launch binds, uncounted) starts the compile
            launch(out)
        later.wait()
        for _ in range(2 * NATIVE_AFTER):  # the next one finds it failed
            launch(out)
    assert type(launch) is Launch
    np.testing.assert_array_equal(out.get(), np.full(3, 3.0 * NATIVE_AFTER + 1))
