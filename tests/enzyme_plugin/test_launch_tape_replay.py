"""A recording that repeats the last one launch for launch is recorded by the tape's native recorder
(``enzyme_plugin.launches.replay``): each launch goes through its fixed entry without a Python frame of the
tape's, and the records are appended at the recording's end. On the fake driver of
tests/kernels/test_cuda_launch.py over the fake ``cupy``: the parameter bytes are the Python launch's, the
results and gradients NumPy's, and every way a recording can stop repeating the last one (another value,
another array object, a launch more or less, an exception, a gradient registered since, a second recording
without a reset) takes the Python recorder from that launch on, with the replayed launches' records kept."""

from __future__ import annotations

import gc
import os
import sys
import weakref

import numpy as np
import pytest

from enzyme_plugin import LaunchTape, register_gradient
from enzyme_plugin.launches import replay
from enzyme_plugin.launches.tape import NATIVE_AFTER, NATIVE_WAIT
from gpucompiler import device as gd
from gpucompiler.cache import later
from gpucompiler.errors import LaunchError
from gpucompiler.kernel import Kernel, recording_launches
from gpucompiler.runtime import launch_entry

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime"))
import fake_cupy  # pyright: ignore[reportMissingImports]
from test_cuda_launch import FakeDriver  # pyright: ignore[reportMissingImports]

pytestmark = pytest.mark.skipif(not launch_entry.supported(), reason="native launch entries need CPython 3.11 "
                                "or later (PyObject_Vectorcall exported)")


@pytest.fixture
def fake(monkeypatch):
    driver = FakeDriver()
    with fake_cupy.on_driver(monkeypatch, driver) as module:
        yield module, driver


def _affine(x, y, a):
    i = gd.grid(1)
    if i < x.shape[0]:
        y[i] = a * x[i] * x[i]


def _total(y, w, out):
    i = gd.grid(1)
    if i < y.shape[0]:
        gd.atomic_add(out, 0, w[0] * y[i])


def _cube(x, z):
    i = gd.grid(1)
    if i < x.shape[0]:
        z[i] = x[i] * x[i] * x[i]


def _affine_grad(x, y, a, dx, dy, da):  # a hand-written gradient of _affine that scales by 10: told apart
    i = gd.grid(1)
    if i < x.shape[0]:
        dx[i] += 10.0 * 2.0 * a * x[i] * dy[i]


class Program:
    """``y = a·x²`` then ``out += w0·Σy`` on the fake CuPy, recorded round after round on one tape."""

    def __init__(self, cp, driver, n: int = 64):
        self.cp, self.driver, self.n = cp, driver, n
        self.affine, self.total, self.cube = Kernel(_affine), Kernel(_total), Kernel(_cube)
        self.xh = np.linspace(0.1, 1.2, n)
        self.x, self.y, self.z = cp.asarray(self.xh), cp.zeros(n), cp.zeros(n)
        self.w, self.out = cp.asarray([0.75]), cp.zeros(1)
        self.tape = LaunchTape(graphs=False)
        self.a = 1.5

    def round_(self, a=None, y=None, extra=False, only_first=False, raise_after_first=False) -> None:
        """One recording and its backward, the results and gradients checked against NumPy's."""
        cp, tape = self.cp, self.tape
        a = self.a if a is None else a
        y = self.y if y is None else y
        y[...] = 0.0
        self.out[...] = 0.0
        tape.reset()
        at, natives = len(self.driver.params), self.driver.native_launches
        try:
            with tape:
                self.affine[2, 32](self.x, y, a)
                if raise_after_first:
                    raise KeyError("the program's own error")
                if not only_first:
                    self.total[2, 32](y, self.w, self.out)
                if extra:
                    self.cube[2, 32](self.x, self.z)
                self.recorded = (self.driver.native_launches - natives, self.driver.params[at:])
        except KeyError:
            assert len(tape.records) == 1  # the launch made before the error is the tape's
            return
        xh, w0 = self.xh, 0.75
        np.testing.assert_allclose(y.get(), a * xh * xh, rtol=1e-15)
        if only_first:
            tape.backward(grads=[(y, cp.asarray(np.ones(self.n)))])
            np.testing.assert_allclose(tape.gradient(self.x).get(), 2 * a * xh, rtol=1e-14)
            return
        np.testing.assert_allclose(self.out.get(), [w0 * np.sum(a * xh * xh)], rtol=1e-12)
        tape.backward(loss=self.out)
        np.testing.assert_allclose(tape.gradient(self.x).get(), 2 * a * xh * w0, rtol=1e-14)
        np.testing.assert_allclose(tape.gradient(self.w).get(), [np.sum(a * xh * xh)], rtol=1e-12)


def until_replayed(p: Program) -> int:
    """Rounds until a whole recording was the native recorder's (waiting now and then for the compiles of the
    entries and of the recorder); the number of rounds."""
    for count in range(1, 8 * NATIVE_WAIT):
        p.round_()
        if p.tape._replayed:
            return count
        if count % NATIVE_AFTER == 0:
            later.wait()
    raise AssertionError(f"no native replay after {8 * NATIVE_WAIT} rounds")


def test_a_repeated_recording_is_replayed_with_the_python_launchs_bytes_and_records(fake):
    cp, driver = fake
    p = Program(cp, driver)
    p.round_()
    first_params, first_records = p.recorded[1], list(p.tape.records)
    assert p.recorded[0] == 0  # the first recording: the Python launch
    until_replayed(p)
    for _ in range(5):
        p.round_()
        assert p.tape._replayed and p.recorded[0] == 2
        assert p.recorded[1] == first_params  # byte for byte the Python launch's
        assert [r.launch for r in p.tape.records] == [r.launch for r in first_records]
        assert [r.args for r in p.tape.records] == [r.args for r in first_records]


@pytest.mark.parametrize("change", ["value", "object", "extra", "only first", "error"])
def test_a_recording_that_stops_repeating_keeps_the_replayed_records_and_records_the_rest(fake, change):
    """Each change once, then the unchanged program again: every round's results and gradients NumPy's (the
    replay comes back once a whole recording repeated through fixed entries again)."""
    cp, driver = fake
    p = Program(cp, driver)
    until_replayed(p)
    if change == "value":
        p.round_(a=-0.25)
    elif change == "object":
        p.round_(y=cp.zeros(p.n))
    elif change == "extra":
        p.round_(extra=True)
        assert len(p.tape.records) == 3 and p.tape.knows(p.z)
    elif change == "only first":
        p.round_(only_first=True)
        assert len(p.tape.records) == 1
    else:
        p.round_(raise_after_first=True)
    assert not p.tape._replayed
    until_replayed(p)
    p.round_()
    assert p.tape._replayed


def test_a_gradient_registered_after_the_replay_was_made_is_used(fake):
    cp, driver = fake
    p = Program(cp, driver)
    until_replayed(p)
    register_gradient(p.affine, _affine_grad)
    p.y[...] = 0.0
    p.out[...] = 0.0
    p.tape.reset()
    with p.tape:
        p.affine[2, 32](p.x, p.y, p.a)
        p.total[2, 32](p.y, p.w, p.out)
    assert not p.tape._replayed
    p.tape.backward(loss=p.out)
    np.testing.assert_allclose(p.tape.gradient(p.x).get(), 10.0 * 2 * p.a * p.xh * 0.75, rtol=1e-14)


def test_reading_the_tape_inside_a_replayed_recording_sees_its_launches(fake):
    cp, driver = fake
    p = Program(cp, driver)
    until_replayed(p)
    p.y[...] = 0.0
    p.out[...] = 0.0
    p.tape.reset()
    with p.tape:
        p.affine[2, 32](p.x, p.y, p.a)
        assert p.tape.knows(p.y) and not p.tape.knows(p.w)
        p.total[2, 32](p.y, p.w, p.out)
        assert p.tape.knows(p.w) and len(p.tape.records) == 2
    p.tape.backward(loss=p.out)
    np.testing.assert_allclose(p.tape.gradient(p.x).get(), 2 * p.a * p.xh * 0.75, rtol=1e-14)


def test_a_second_recording_without_reset_and_a_nested_one_are_not_replayed(fake):
    cp, driver = fake
    p = Program(cp, driver)
    until_replayed(p)
    p.round_()
    with p.tape:  # no reset: the records add up, as without a replay
        p.affine[2, 32](p.x, p.y, p.a)
    assert len(p.tape.records) == 3 and not p.tape._replayed
    p.tape.reset()
    with recording_launches(lambda launch, args: None), pytest.raises(LaunchError, match="already being recorded"), \
            p.tape:
        pass
    p.round_()
    until_replayed(p)


def test_a_dropped_tape_is_freed_at_once(fake):
    """The native recorder reaches the tape through a weak reference: no cycle keeps a tape and its shadows
    alive until the collector runs."""
    cp, driver = fake
    p = Program(cp, driver)
    until_replayed(p)
    assert p.tape._replay is not None
    ref = weakref.ref(p.tape)
    gc.disable()
    try:
        p.tape = None
        assert ref() is None
    finally:
        gc.enable()


def test_two_tapes_replay_the_same_program_apart(fake):
    cp, driver = fake
    p, q = Program(cp, driver), Program(cp, driver)
    q.affine, q.total, q.cube = p.affine, p.total, p.cube  # the same launch objects, other arrays
    until_replayed(p)
    until_replayed(q)
    for a in (0.5, None, 2.0, None, None):  # p's changes, each checked; q's unchanged rounds replayed
        p.round_(a=a)
        q.round_()
        assert q.tape._replayed


@pytest.mark.parametrize("seed", range(3))
def test_random_changes_between_replayed_rounds(fake, seed):
    """Rounds of the program with a random change or none; every round checked against NumPy, and some
    recordings replayed whole."""
    cp, driver = fake
    rng = np.random.default_rng(seed)
    p = Program(cp, driver)
    until_replayed(p)
    replayed = 0
    changes = ["none"] * 50 + ["value", "object", "extra", "only first", "error"]  # (a replay needs a stable
    for r in range(300):  # stretch: after a change, its launches repeat NATIVE_AFTER times before their entries)
        change = changes[int(rng.integers(len(changes)))]
        if change == "value":
            p.a = float(rng.normal())
        p.round_(y=cp.zeros(p.n) if change == "object" else None, extra=change == "extra",
                 only_first=change == "only first", raise_after_first=change == "error")
        replayed += p.tape._replayed
        if r % NATIVE_AFTER == NATIVE_AFTER - 1:
            later.wait()
    assert replayed >= 10


def test_the_recorder_code_parses_and_names_its_words():
    from llvmlite import binding as llvm

    text = replay.emit_replay("f")
    llvm.parse_assembly(text).verify()
    assert "PyDict_GetItem" in text and "PyObject_Vectorcall" in text
