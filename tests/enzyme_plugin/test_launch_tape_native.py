"""A recorded GPU launch that repeats the last recording's (``enzyme_plugin.launches.tape.Repeat``) and copies
nothing launches through a native entry of its own once it repeated often enough (``Repeat.native``: the CUDA
runtime's fixed entry, which launches only on the signature values it was made for). On the fake driver of
tests/kernels/test_cuda_launch.py, whose C ``cuLaunchKernel`` counts the native launches and runs each one in
the CPU grid emulation, over the fake ``cupy``: the parameter bytes are the Python launch's, the results and
gradients NumPy's, and every change a repeat depends on (an array moved or reshaped under the same object,
CuPy's current stream, a rebound global, a chosen device, another thread) takes the Python path."""

from __future__ import annotations

import os
import sys
import threading

import numpy as np
import pytest

from enzyme_plugin import LaunchTape, LaunchTapeError
from gpucompiler import device as gd
from gpucompiler.cache import later
from enzyme_plugin.launches.tape import NATIVE_AFTER, NATIVE_WAIT
from gpucompiler.kernel import Kernel
from gpucompiler.runtime import launch_entry
from gpucompiler.runtime.devices import Device

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime"))
import fake_cupy  # pyright: ignore[reportMissingImports]
from test_cuda_launch import FakeDriver  # pyright: ignore[reportMissingImports]

#: an interpreter that cannot run native launch entries (CPython 3.10) keeps every launch on the Python launch
pytestmark = pytest.mark.skipif(not launch_entry.supported(), reason="native launch entries need CPython 3.11 "
                                "or later (PyObject_Vectorcall exported)")


@pytest.fixture
def fake(monkeypatch):
    driver = FakeDriver()
    with fake_cupy.on_driver(monkeypatch, driver) as module:
        yield module, driver


def _affine(x, y, a, n, flag):
    i = gd.grid(1)
    if i < x.shape[0]:
        v = a * x[i] * x[i] + n
        if flag:
            v = v + 1.0
        y[i] = v


def _total(y, w, out):
    i = gd.grid(1)
    if i < y.shape[0]:
        gd.atomic_add(out, 0, w[0] * y[i])


def _square(x, y):
    i = gd.grid(1)
    if i < x.shape[0]:
        y[i] = x[i] * x[i]


SCALE = 2.0


def _scaled_square(x, y):
    i = gd.grid(1)
    if i < x.shape[0]:
        y[i] = SCALE * x[i] * x[i]


def _accumulate(x, y):  # reads y too: copied before each launch, so never a native repeat
    i = gd.grid(1)
    if i < x.shape[0]:
        y[i] = y[i] + x[i] * x[i]


def until_native(tape: LaunchTape, round_) -> int:
    """Record rounds until every launch of the tape's recording repeats through a native entry (the asks wait
    for the entries' compiles now and then); the number of rounds."""
    for count in range(1, 8 * NATIVE_WAIT):
        round_()
        if tape._repeats and all(m is not None and m.native is not None for m in tape._repeats):
            return count
        if count % NATIVE_AFTER == 0:
            later.wait()
    raise AssertionError(f"no native repeats after {8 * NATIVE_WAIT} rounds")


@pytest.mark.parametrize("a,n,flag", [(1.5, 3, True), (-0.5, -(2**40), False), (float("-0"), 2**62, True)])
def test_repeats_launch_natively_with_the_python_launchs_bytes_and_the_gradient(fake, a, n, flag):
    cp, driver = fake
    affine, total = Kernel(_affine), Kernel(_total)
    xh, wh = np.linspace(0.1, 1.2, 64), np.array([0.75])
    x, y, w, out = cp.asarray(xh), cp.zeros(64), cp.asarray(wh), cp.zeros(1)
    tape = LaunchTape(graphs=False)
    recorded = []  # per round: (native launches made while recording, the parameter bytes of the two launches)

    def round_():
        out[...] = 0.0
        tape.reset()
        at, before = len(driver.params), driver.native_launches
        with tape:
            affine[2, 32](x, y, a, n, flag)
            total[2, 32](y, w, out)
        recorded.append((driver.native_launches - before, driver.params[at:]))
        tape.backward(loss=out)

    until_native(tape, round_)
    for _ in range(3):
        round_()
        assert recorded[-1][0] == 2  # both recorded launches through the tape's entries
        assert recorded[-1][1] == recorded[0][1]  # byte for byte the first round's (the Python launch's)
        expected = a * xh * xh + float(n) + (1.0 if flag else 0.0)
        np.testing.assert_allclose(y.get(), expected, rtol=1e-15)
        np.testing.assert_allclose(out.get(), [np.sum(wh[0] * expected)], rtol=1e-12)
        np.testing.assert_allclose(tape.gradient(x).get(), 2 * a * xh * wh[0], rtol=1e-15)
        np.testing.assert_allclose(tape.gradient(w).get(), [np.sum(expected)], rtol=1e-12)
    assert recorded[0][0] == 0  # the first round: the Python launch


@pytest.mark.parametrize("reshape", ["shorter", "strided"])
def test_an_array_reshaped_under_the_same_object_is_recorded_again_not_launched_by_the_entry(fake, reshape):
    """The same array object with another length (same pointer: only the entry's comparison of the values
    sees it) or strides (another contiguity): a new record and plan, the gradient of the new layout."""
    cp, driver = fake
    square = Kernel(_square)
    xh = np.linspace(0.1, 1.2, 64)
    x, y = cp.asarray(xh), cp.zeros(64)
    tape = LaunchTape(graphs=False)

    def round_():
        tape.reset()
        with tape:
            square[2, 32](x, y)
        tape.backward(grads=[(y, cp.asarray(np.ones(64)))])

    until_native(tape, round_)
    repeat, before = tape._repeats[0], driver.native_launches
    view = x.host[:32] if reshape == "shorter" else x.host[::2]
    fake_cupy._view(x, view, x.data)
    y[...] = 0.0
    tape.reset()
    with tape:
        square[2, 32](x, y)
    assert driver.native_launches == before and tape._repeats[0] is not repeat
    np.testing.assert_array_equal(y.get()[:32], view * view)
    assert not np.any(y.get()[32:])
    tape.backward(grads=[(y, cp.asarray(np.ones(64)))])
    np.testing.assert_allclose(tape.gradient(x).get(), 2 * view, rtol=1e-15)


@pytest.mark.parametrize("other", ["view", "scalar"])
def test_another_object_of_the_same_values_is_recorded_as_itself(fake, other):
    """A view of the same memory, layout and dtype, or an equal float of another object: the same parameter bytes,
    but the record is of the objects launched (the shadow is the view's, the record holds the new float)."""
    cp, driver = fake
    affine = Kernel(_affine)
    xh = np.linspace(0.1, 1.2, 64)
    x, y, a = cp.asarray(xh), cp.zeros(64), 1.5

    tape = LaunchTape(graphs=False)

    def round_(x, a) -> int:
        """The native launches made while recording."""
        tape.reset()
        before = driver.native_launches
        with tape:
            affine[2, 32](x, y, a, 2, False)
        made = driver.native_launches - before
        tape.backward(grads=[(y, cp.asarray(np.ones(64)))])
        return made

    until_native(tape, lambda: round_(x, a))
    assert round_(x, a) == 1
    x2, a2 = (x[:], a) if other == "view" else (x, float(repr(a)))
    assert x2 is not x or a2 is not a
    assert round_(x2, a2) == 0
    assert tape.records[0].args[0] is x2 and tape.records[0].args[2] is a2
    np.testing.assert_allclose(tape.gradient(x2).get(), 2 * a * xh, rtol=1e-15)


def test_an_array_moved_under_the_same_object_is_checked_for_overlaps_again(fake):
    """Its memory moved into the other argument's: the entry sees another pointer, the Python path the overlap."""
    cp, driver = fake
    square = Kernel(_square)
    base = cp.asarray(np.linspace(0.1, 1.2, 128))
    a, b = base[:64], base[64:]
    tape = LaunchTape(graphs=False)

    def round_():
        tape.reset()
        with tape:
            square[2, 32](a, b)

    until_native(tape, round_)
    before = driver.native_launches
    moved = base[32:96]
    fake_cupy._view(a, moved.host, moved.data)
    tape.reset()
    with pytest.raises(LaunchTapeError, match="overlap in memory"), tape:
        square[2, 32](a, b)
    assert driver.native_launches == before


def test_another_current_stream_is_recorded_again_on_that_stream(fake):
    cp, driver = fake
    square = Kernel(_square)
    x, y = cp.asarray(np.linspace(0.1, 1.2, 64)), cp.zeros(64)
    tape = LaunchTape(graphs=False)

    def round_():
        tape.reset()
        with tape:
            square[2, 32](x, y)

    until_native(tape, round_)
    assert tape.records[0].stream == 0
    before = driver.native_launches
    with cp.cuda.Stream(ptr=77):
        round_()
    assert driver.native_launches == before
    assert tape.records[0].stream == 77 and driver.calls[-1][3] == 77


def test_a_global_rebound_while_recording_recompiles_the_kernel_and_its_gradient(fake):
    global SCALE
    cp, driver = fake
    scaled = Kernel(_scaled_square)
    xh = np.linspace(0.1, 1.2, 64)
    x, y = cp.asarray(xh), cp.zeros(64)
    tape = LaunchTape(graphs=False)

    def round_(scale=None) -> int:
        """The native launches made while recording."""
        global SCALE
        tape.reset()
        before = driver.native_launches
        with tape:
            if scale is not None:
                SCALE = scale
            scaled[2, 32](x, y)
        made = driver.native_launches - before
        tape.backward(grads=[(y, cp.asarray(np.ones(64)))])
        return made

    try:
        until_native(tape, round_)
        modules = len(driver.modules)
        assert round_(3.0) == 0 and len(driver.modules) > modules  # compiled again
        np.testing.assert_allclose(y.get(), 3.0 * xh * xh, rtol=1e-15)
        np.testing.assert_allclose(tape.gradient(x).get(), 6.0 * xh, rtol=1e-15)
    finally:
        SCALE = 2.0


def test_a_chosen_device_or_another_thread_takes_the_python_path(fake):
    cp, driver = fake
    square = Kernel(_square)
    xh = np.linspace(0.1, 1.2, 64)
    x, y = cp.asarray(xh), cp.zeros(64)
    tape = LaunchTape(graphs=False)
    natives: list = []  # per round: the native launches made while recording, or the error raised

    def round_():
        try:
            y[...] = 0.0
            tape.reset()
            before = driver.native_launches
            with tape:
                square[2, 32](x, y)
            natives.append(driver.native_launches - before)
            tape.backward(grads=[(y, cp.asarray(np.ones(64)))])
            np.testing.assert_allclose(y.get(), xh * xh, rtol=1e-15)
            np.testing.assert_allclose(tape.gradient(x).get(), 2 * xh, rtol=1e-15)
        except Exception as exc:  # (raised again in the test's thread)
            natives.append(exc)

    until_native(tape, round_)
    with Device(0):
        round_()
    thread = threading.Thread(target=round_)
    thread.start()
    thread.join()
    round_()
    assert natives[-3:] == [0, 0, 1]  # the chosen device's round and the other thread's: the Python path


def test_a_launch_that_copies_an_array_stays_on_the_python_path(fake):
    """Its record takes the copy made before it each round: no record to take again, no entry asked for."""
    cp, driver = fake
    acc = Kernel(_accumulate)
    xh = np.linspace(0.1, 1.2, 64)
    x, y = cp.asarray(xh), cp.zeros(64)
    tape = LaunchTape(graphs=False)
    for r in range(3 * NATIVE_AFTER):
        y[...] = 1.0
        tape.reset()
        with tape:
            acc[2, 32](x, y)
        np.testing.assert_allclose(y.get(), 1.0 + xh * xh, rtol=1e-15)
        if r % NATIVE_AFTER == 0:
            later.wait()
    tape.backward(grads=[(y, cp.asarray(np.ones(64)))])
    np.testing.assert_allclose(tape.gradient(x).get(), 2 * xh, rtol=1e-15)
    assert tape._repeats[0] is not None and tape._repeats[0].native is None and driver.native_launches == 0


def test_a_launch_object_with_an_entry_of_its_own_is_recorded_and_launched_once(fake):
    """Launched directly often enough, the launch object's ``__call__`` is its own native entry: while a tape
    records, that entry hands the call to the tape, whose own entry launches it, once."""
    cp, driver = fake
    square = Kernel(_square)
    xh = np.linspace(0.1, 1.2, 64)
    x, y = cp.asarray(xh), cp.zeros(64)
    launch = square[2, 32]
    tape = LaunchTape(graphs=False)

    def round_():
        launch(x, y)  # directly
        tape.reset()
        with tape:
            launch(x, y)

    def own_entry() -> bool:
        return type(type(launch).__dict__["__call__"]).__name__ == "builtin_function_or_method"

    for count in range(1, 8 * NATIVE_WAIT):
        until_native(tape, round_)
        if own_entry():
            break
        if count % NATIVE_AFTER == 0:
            later.wait()
    assert own_entry()
    launches, before = len(driver.params), driver.native_launches
    y[...] = 0.0
    tape.reset()
    with tape:
        launch(x, y)
    assert len(driver.params) == launches + 1 and driver.native_launches == before + 1
    tape.backward(grads=[(y, cp.asarray(np.ones(64)))])
    np.testing.assert_allclose(y.get(), xh * xh, rtol=1e-15)
    np.testing.assert_allclose(tape.gradient(x).get(), 2 * xh, rtol=1e-15)


SHIFT = 0.0


def _shifted_affine(x, y, a, n):
    i = gd.grid(1)
    if i < x.shape[0]:
        y[i] = a * x[i] * x[i] + n + SHIFT


@pytest.mark.parametrize("seed", range(4))
def test_random_rounds_with_random_changes_keep_every_result_and_gradient(fake, seed):
    """Rounds of a two-launch program on one tape, each after a random change or none: a scalar argument of
    another value or another object of the same value, an array moved to other memory or shortened under the
    same object, another array object, CuPy's current stream, the global the kernel reads. Every round's
    results and gradients are NumPy's, whichever path each launch took; the unchanged rounds go native."""
    global SHIFT
    cp, driver = fake
    driver.cuCtxSynchronize = lambda: (0,)  # (backward waits where a launch went to another stream than CuPy's)
    rng = np.random.default_rng(seed)
    affine, total = Kernel(_shifted_affine), Kernel(_total)
    n = 64
    state = {"a": 1.5, "n": 3, "x": cp.asarray(np.linspace(0.1, 1.2, n)), "y": cp.zeros(n), "w": cp.asarray([0.75]),
             "stream": 0}
    out = cp.zeros(1)
    tape = LaunchTape(graphs=False)
    natives = 0
    changes = ["none"] * 6 + ["a", "a object", "x moved", "x shorter", "y object", "stream", "global"]
    try:
        warm = None  # the rounds until the first native launch: unchanged ones (the entry's code compiles on a
        for r in range(400):  # thread; a fresh process makes its first entry later than one that made others)
            if warm is None and natives:
                warm = r
            if warm is not None and r >= warm + 110:
                break
            change = changes[int(rng.integers(len(changes)))] if warm is not None else "none"
            if change == "a":
                state["a"] = float(rng.normal())
            elif change == "a object":
                state["a"] = float(repr(state["a"]))  # equal, another object
            elif change == "x moved":
                x = state["x"]
                moved = cp.asarray(np.concatenate([np.zeros(3), x.get()]))[3:]
                fake_cupy._view(x, moved.host, moved.data)
                state["keep"] = moved  # (its memory stays alive)
            elif change == "x shorter" and state["x"].shape[0] > 8:
                x = state["x"]
                fake_cupy._view(x, x.host[:-int(rng.integers(1, 5))], x.data)
            elif change == "y object":
                state["y"] = cp.zeros(n)
            elif change == "stream":
                state["stream"] = [0, 5, 77][int(rng.integers(3))]
            elif change == "global":
                SHIFT = float(rng.integers(-3, 4))
            x, y, w, a, k = state["x"], state["y"], state["w"], state["a"], state["n"]
            y[...] = 0.0
            out[...] = 0.0
            tape.reset()
            before = driver.native_launches
            with cp.cuda.Stream(ptr=state["stream"]), tape:
                affine[2, 32](x, y, a, k)
                total[2, 32](y, w, out)
            natives += driver.native_launches - before
            assert [rec.stream for rec in tape.records] == [state["stream"]] * 2
            assert [call[3] for call in driver.calls[-2:]] == [state["stream"]] * 2
            xh, m = x.get(), x.shape[0]
            expected = np.zeros(n)
            expected[:m] = a * xh * xh + k + SHIFT
            np.testing.assert_allclose(y.get(), expected, rtol=1e-14, atol=1e-14)
            np.testing.assert_allclose(out.get(), [0.75 * np.sum(expected)], rtol=1e-12)
            tape.backward(loss=out)
            np.testing.assert_allclose(tape.gradient(x).get(), 2 * a * xh * 0.75, rtol=1e-14, atol=1e-14)
            np.testing.assert_allclose(tape.gradient(w).get(), [np.sum(expected)], rtol=1e-12)
            if r % NATIVE_AFTER == NATIVE_AFTER - 1:
                later.wait()
    finally:
        SHIFT = 0.0
    assert warm is not None and r == warm + 110  # the unchanged rounds went native, then 110 random ones ran
