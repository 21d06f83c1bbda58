"""A recording that repeats the last one launch by launch takes its records and shadows again
(``enzyme_plugin.launches.tape``: ``Repeat.record``, ``LaunchTape._settle``): a repeat makes no shadow, the
recording's end gives the float arrays theirs, the last recording's all at once when every launch repeated
it. Each test changes one thing that reuse depends on between rounds and checks the result against NumPy:
a gradient the caller kept, a gradient registered after a launch was recorded and removed again, a shorter
recording, a launch after the repeats that writes an array they took, shadows asked for inside the
recording. A fake ``cupy`` over the fake driver, which runs every launch through the CPU grid emulation."""

from __future__ import annotations

import operator
import os
import random
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

XH = np.linspace(0.1, 1.2, 64)


@pytest.fixture
def fake(monkeypatch):
    driver = FakeDriver()
    with fake_cupy.on_driver(monkeypatch, driver) as module:
        yield module


def _squares(tape, cp, *pairs):
    """One round: ``y = x²`` for each ``(x, y)``, then the gradient of the sum of the ``y``s."""
    tape.reset()
    with tape:
        for x, y in pairs:
            square[2, 32, None](x, y)
    tape.backward(grads=[(y, cp.asarray(np.ones(64))) for _, y in pairs])


def test_a_gradient_the_caller_kept_is_not_taken_by_the_next_round(fake):
    """A round that repeats the last one whole takes its shadows again, also one ``gradient`` handed out that
    nobody holds any more; one the caller still holds keeps its values, and the next round's gradient, of new
    values of ``x``, is another array."""
    cp = fake
    x, y = cp.asarray(XH), cp.zeros(64)
    tape = LaunchTape(graphs=False)
    _squares(tape, cp, (x, y))
    _squares(tape, cp, (x, y))
    generation = tape._generation
    _squares(tape, cp, (x, y))  # nothing handed out: the same shadows, nothing made anew
    assert tape._generation == generation
    np.testing.assert_allclose(tape.gradient(x).get(), 2 * XH, rtol=1e-15)  # handed out, not kept
    _squares(tape, cp, (x, y))
    assert tape._generation == generation
    kept = tape.gradient(x)
    x[...] = cp.asarray(3 * XH)
    _squares(tape, cp, (x, y))
    np.testing.assert_allclose(kept.get(), 2 * XH, rtol=1e-15)
    np.testing.assert_allclose(tape.gradient(x).get(), 6 * XH, rtol=1e-15)
    assert tape.gradient(x) is not kept


def test_a_gradient_registered_after_the_recording_and_removed_again_leaves_the_generated_one(fake):
    """Round 3's launch repeats round 2's and takes its record; a gradient registered before round 3's backward
    replaces the generated one in that record; removed again, round 4 (a repeat again) reverses by the
    generated gradient, not by the record the hand-written one changed. The adjoint of ``x`` that record handed
    to the hand-written gradient, kept by the caller, keeps its values."""
    cp = fake
    xh = np.linspace(-2.0, 2.0, 32)
    x, y = cp.asarray(xh), cp.zeros(32)
    tape = LaunchTape(graphs=False)
    clipped = (np.abs(xh) < 1.0).astype(float)
    try:
        for r in range(4):
            tape.reset()
            with tape:
                clip_late[1, 32, None](x, y)
            if r == 2:
                register_gradient(clip_late, P.clip_straight_through)
            tape.backward(grads=[(y, cp.asarray(np.ones(32)))])
            if r == 2:  # the adjoint of x, handed out by the record (x, y, dx, dy): not by gradient()
                delattr(clip_late, GRADIENT_ATTRIBUTE)
                handed = tape.records[0].reverse_args
                assert handed is not None
                kept = handed[2]
                del handed
                np.testing.assert_array_equal(kept.get(), np.ones(32))
            else:
                np.testing.assert_array_equal(tape.gradient(x).get(), clipped)
            assert (tape.records[0].hand is not None) == (r == 2)
        np.testing.assert_array_equal(kept.get(), np.ones(32))
    finally:
        if GRADIENT_ATTRIBUTE in clip_late.__dict__:
            delattr(clip_late, GRADIENT_ATTRIBUTE)


def test_a_shorter_recording_has_the_shadows_of_its_own_arrays_only(fake):
    """Round 3 makes the first launch of rounds 1-2 only: ``z`` and ``u`` were not taken, so they have no
    shadow (an array no launch took is an error, not the last round's gradient)."""
    cp = fake
    x, y, z, u = cp.asarray(XH), cp.zeros(64), cp.asarray(XH + 1), cp.zeros(64)
    tape = LaunchTape(graphs=False)
    for _ in range(2):
        _squares(tape, cp, (x, y), (z, u))
    _squares(tape, cp, (x, y))
    assert tape.knows(x) and not tape.knows(z) and not tape.knows(u)
    np.testing.assert_allclose(tape.gradient(x).get(), 2 * XH, rtol=1e-15)
    with pytest.raises(LaunchTapeError, match="no recorded launch took"):
        tape.gradient(z)


def test_a_launch_after_the_repeats_copies_an_array_they_took(fake):
    """Round 3 repeats round 2's square of ``x``, then zeroes ``x`` (a launch the last round did not make): the
    repeat took ``x``, so the zeroing copies it first and the square's gradient reads its values, not zeros."""
    cp = fake
    x, y = cp.asarray(XH), cp.zeros(64)
    tape = LaunchTape(graphs=False)
    for _ in range(2):
        _squares(tape, cp, (x, y))
    tape.reset()
    with tape:
        square[2, 32, None](x, y)
        zero_out[2, 32, None](x)
    tape.backward(grads=[(y, cp.asarray(np.ones(64)))])
    assert [len(r.snapshots) for r in tape.records] == [0, 1]
    np.testing.assert_allclose(tape.gradient(x).get(), 2 * XH, rtol=1e-15)
    assert not np.any(x.get())


def test_shadows_asked_for_inside_the_recording_are_the_repeated_launches(fake):
    """Inside the ``with`` block, after each repeated launch, ``gradient`` and ``knows`` see its arrays (zeros
    until ``backward``), and the shadow handed out there is the one ``backward`` adds into."""
    cp = fake
    x, y, z, u = cp.asarray(XH), cp.zeros(64), cp.asarray(XH + 1), cp.zeros(64)
    tape = LaunchTape(graphs=False)
    for _ in range(2):
        _squares(tape, cp, (x, y), (z, u))
    tape.reset()
    with tape:
        square[2, 32, None](x, y)
        inside = tape.gradient(x)
        assert not np.any(inside.get())
        square[2, 32, None](z, u)
        assert tape.knows(z) and tape.knows(u)
    tape.backward(grads=[(y, cp.asarray(np.ones(64))), (u, cp.asarray(np.ones(64)))])
    assert tape.gradient(x) is inside
    np.testing.assert_allclose(inside.get(), 2 * XH, rtol=1e-15)
    np.testing.assert_allclose(tape.gradient(z).get(), 2 * (XH + 1), rtol=1e-15)


def _menu(rng, n: int) -> tuple:
    """A random launch over arrays ``0..n-1`` of the pool: ``(kernel name, argument indices or scalars)``."""
    i, j = rng.sample(range(n), 2)
    return rng.choice((("square", (i, j)), ("sin", (i,)), ("zero", (i,)), ("axpy", (rng.choice((0.5, 2.0)), i, j))))


def _mutated(rng, program: list, n: int) -> list:
    """The last round's program again (half the time), or one changed: a launch dropped, added or replaced."""
    how = rng.random()
    if how < 0.5:
        return program
    if how < 0.65 and len(program) > 1:
        return program[:-1]
    if how < 0.8 and len(program) < 4:
        return [*program, _menu(rng, n)]
    changed = list(program)
    changed[rng.randrange(len(changed))] = _menu(rng, n)
    return changed


def _run(tape, program: list, pool: list, init: list, cp, read: bool = True) -> dict:
    """One round on ``tape``: the pool set to ``init``, the launches recorded, the gradient of the sum of the last
    launch's output; the arrays the tape knows, the gradient of each (``read``; else none is handed out), and
    every array's values after ``backward``."""
    kernels = {"square": square, "sin": P.sin_in_place, "zero": zero_out, "axpy": P.axpy}
    for a, v in zip(pool, init):
        a[...] = cp.asarray(v)
    tape.reset()
    with tape:
        for name, args in program:
            kernels[name][2, 32, None](*(pool[a] if type(a) is int else a for a in args))
    name, args = program[-1]
    out = pool[args[-1]]
    tape.backward(grads=[(out, cp.asarray(np.ones(64)))])
    known = [k for k, a in enumerate(pool) if tape.knows(a)]
    grads = {k: tape.gradient(pool[k]).get() for k in known} if read else {}
    return {"known": known, "grads": grads, "values": [a.get() for a in pool]}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_rounds_give_what_a_new_tape_gives(fake, seed):
    """Differential: rounds of random programs (most repeating the last one, others one launch dropped, added or
    replaced; now and then a view object standing for an array), each recorded on one tape used again and on a
    new tape: the same gradients (read in most rounds), the same final values, the same arrays known; a
    gradient kept from an earlier round keeps its values. Most rounds repeat the last one whole."""
    cp = fake
    rng = random.Random(seed)
    n = 4
    init = [np.linspace(0.1 * (k + 1), 1.0 + k, 64) for k in range(n)]
    base = [cp.asarray(v) for v in init]
    tape = LaunchTape(graphs=False)
    program = [_menu(rng, n)]
    kept: list = []
    repeated = 0
    for r in range(60):
        program = _mutated(rng, program, n)
        pool = [a[:] if rng.random() < 0.1 else a for a in base]
        values = [v * (1 + 0.05 * r) for v in init]  # other values each round: other gradients
        last = list(tape._repeats)
        got = _run(tape, program, pool, values, cp, read=rng.random() < 0.6)
        repeated += len(last) == len(tape._repeats) and all(map(operator.is_, last, tape._repeats))
        want = _run(LaunchTape(graphs=False), program, pool, values, cp)
        assert got["known"] == want["known"], program
        for k, g in got["grads"].items():
            np.testing.assert_array_equal(g, want["grads"][k], err_msg=str(program))
        for a, b in zip(got["values"], want["values"]):
            np.testing.assert_array_equal(a, b, err_msg=str(program))
        for shadow, values in kept:
            np.testing.assert_array_equal(shadow.get(), values)
        if rng.random() < 0.5 and got["grads"]:
            k = rng.choice(list(got["grads"]))
            kept.append((tape.gradient(pool[k]), got["grads"][k]))
        if kept and rng.random() < 0.2:
            kept.pop(0)
    assert repeated >= 10
