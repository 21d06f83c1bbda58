"""A GPU launch that repeats the launch at its place in the last recording (``enzyme_plugin.launches.tape.Repeat``:
the same launch, argument objects and signature values, every launch before it a repeat too) takes the plan,
stream, library and copies chosen then. Each test changes one thing a repeat depends on between rounds and checks
the gradient against the analytic one: a launch before it on other arrays (the copies a later launch needs), a
new view object over the same memory, a buffer moved under the same object (the overlap check), a gradient
registered since, CuPy's current stream. A fake ``cupy`` over the fake driver, which runs every launch through
the CPU grid emulation."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import launch_programs as P
from enzyme_plugin import LaunchTape, LaunchTapeError, register_gradient
from enzyme_plugin.launches.gradients import GRADIENT_ATTRIBUTE

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime"))
import fake_cupy  # pyright: ignore[reportMissingImports]
from test_cuda_launch import FakeDriver  # pyright: ignore[reportMissingImports]

#: the kernels, as Kernel objects to the type checker too (it reads launch_programs' decorator as a function)
square, zero_out, clip_late = (getattr(P, name) for name in ("square", "zero_out", "clip_late"))


@pytest.fixture
def fake(monkeypatch):
    driver = FakeDriver()
    with fake_cupy.on_driver(monkeypatch, driver) as module:
        yield module, driver


def _square_then_zero(tape, cp, first, zeroed, y):
    """``y = first²``, then ``zeroed`` set to 0; the gradient of ``sum(y)``."""
    tape.reset()
    with tape:
        square[2, 32, None](first, y)
        zero_out[2, 32, None](zeroed)
    tape.backward(grads=[(y, cp.asarray(np.ones(64)))])


def test_a_repeated_round_reuses_its_choices_and_keeps_the_gradient(fake):
    cp, _ = fake
    xh = np.linspace(0.1, 1.2, 64)
    x, z, y = cp.asarray(xh), cp.zeros(64), cp.zeros(64)
    tape, before = LaunchTape(graphs=False), []
    for r in range(4):
        z[...] = 1.0
        _square_then_zero(tape, cp, x, z, y)
        np.testing.assert_allclose(tape.gradient(x).get(), 2 * xh, rtol=1e-15)
        assert not np.any(tape.gradient(z).get())
        if r:  # the same Repeat objects as the round before: nothing worked out again
            assert len(tape._repeats) == 2 and all(m is b for m, b in zip(tape._repeats, before))
        before = list(tape._repeats)
        assert [r.snapshots for r in tape.records] == [[], []]  # z is not read by an earlier launch: no copy


def test_a_launch_before_on_other_arrays_ends_the_repeats(fake):
    """Round 1 zeroes ``z``, which no launch before took: no copy. Round 2 squares ``z`` first (another
    launch at place 1): the same zeroing launch on the same ``z`` now needs ``z``'s copy, or the square's gradient
    reads the zeros (``2 z`` expected)."""
    cp, _ = fake
    xh, zh = np.linspace(0.1, 1.2, 64), np.linspace(-1.0, 0.5, 64)
    x, z, y = cp.asarray(xh), cp.asarray(zh), cp.zeros(64)
    tape = LaunchTape(graphs=False)
    _square_then_zero(tape, cp, x, z, y)
    z[...] = cp.asarray(zh)
    _square_then_zero(tape, cp, z, z, y)
    np.testing.assert_allclose(tape.gradient(z).get(), 2 * zh, rtol=1e-15)
    np.testing.assert_allclose(y.get(), zh * zh, rtol=1e-15)
    assert [len(r.snapshots) for r in tape.records] == [0, 1]


def test_a_new_view_object_over_the_same_memory_is_not_a_repeat(fake):
    """``x[:]`` has ``x``'s pointer, shape and strides (the same signature values) but is another object: the
    arrays taken are the view's, so the zeroing launch after it (not a repeat) copies it."""
    cp, _ = fake
    xh = np.linspace(0.1, 1.2, 64)
    x, y = cp.asarray(xh), cp.zeros(64)
    tape = LaunchTape(graphs=False)
    for _ in range(2):
        tape.reset()
        with tape:
            square[2, 32, None](x, y)
        tape.backward(grads=[(y, cp.asarray(np.ones(64)))])
    view = x[:]
    _square_then_zero(tape, cp, view, view, y)
    np.testing.assert_allclose(tape.gradient(view).get(), 2 * xh, rtol=1e-15)
    assert not np.any(x.get())


def test_a_buffer_moved_under_the_same_object_is_checked_for_overlaps_again(fake):
    """An array object whose memory changes between rounds (an ``__cuda_array_interface__`` producer may;
    here the fake's view moved in place) has other signature values: not a repeat, and its overlap is found."""
    cp, _ = fake
    base = cp.asarray(np.linspace(0.1, 1.2, 128))
    a, b = base[:64], base[64:]
    tape = LaunchTape(graphs=False)
    for _ in range(2):
        tape.reset()
        with tape:
            square[2, 32, None](a, b)
    moved = base[32:96]
    fake_cupy._view(a, moved.host, moved.data)
    tape.reset()
    with pytest.raises(LaunchTapeError, match="overlap in memory"), tape:
        square[2, 32, None](a, b)


def test_a_gradient_registered_between_rounds_is_not_a_repeat(fake):
    """A hand-written gradient takes copies of every array the kernel writes and replaces the generated one."""
    cp, _ = fake
    xh = np.linspace(-2.0, 2.0, 32)
    x, y = cp.asarray(xh), cp.zeros(32)
    tape = LaunchTape(graphs=False)
    try:
        for r in range(4):
            if r == 2:
                register_gradient(clip_late, P.clip_straight_through)
            tape.reset()
            with tape:
                clip_late[1, 32, None](x, y)
            tape.backward(grads=[(y, cp.asarray(np.ones(32)))])
            expected = np.ones(32) if r >= 2 else (np.abs(xh) < 1.0).astype(float)
            np.testing.assert_array_equal(tape.gradient(x).get(), expected)
            assert len(tape.records[0].snapshots) == (1 if r >= 2 else 0)
            assert (tape.records[0].hand is not None) == (r >= 2)
    finally:
        delattr(clip_late, GRADIENT_ATTRIBUTE)
