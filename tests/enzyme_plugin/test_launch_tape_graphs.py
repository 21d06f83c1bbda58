"""A repeated backward of a launch tape replayed as one CUDA graph (``enzyme_plugin.launches.graphs``), on the
device: each round's gradient against the analytic one and against the same rounds launched one by one, when
the arrays' contents change between rounds, when new arrays take the launches, when a gradient is registered
between two backwards, with adjoints given as arrays, and a gradient kernel that allocates on the device heap
(never a graph: its exhaustion flags are read after each backward)."""

from __future__ import annotations

import numpy as np
import pytest

import launch_programs as P
from enzyme_plugin import LaunchTape, register_gradient
from enzyme_plugin.launches.gradients import GRADIENT_ATTRIBUTE

pytestmark = pytest.mark.gpu

N, GRID, BLOCK = 1000, 8, 128


@pytest.fixture
def cp():
    return pytest.importorskip("cupy")


def expected(x, w):
    return w[0] * np.cos(x * x) * 2 * x, np.sum(np.sin(x * x))


def round_of(tape, dx, dw, y, out, cp):
    out[...] = 0.0
    tape.reset()
    with tape:
        P.program(dx, y, dw, out, GRID, BLOCK, None)
    tape.backward(loss=out)
    return cp.asnumpy(tape.gradient(dx)), float(tape.gradient(dw)[0]), cp.asnumpy(y), float(out[0])


def test_rounds_replay_one_graph_with_each_rounds_values(cp):
    rng = np.random.default_rng(1)
    w = np.array([3.0])
    dx, dw, y, out = cp.zeros(N), cp.asarray(w), cp.zeros(N), cp.zeros(1)
    graphed, eager = LaunchTape(), LaunchTape(graphs=False)
    for r in range(6):
        x = rng.uniform(-1.5, 1.5, N)
        dx[...] = cp.asarray(x)                       # new contents, the same memory: the same key
        got = round_of(graphed, dx, dw, y, out, cp)
        ref = round_of(eager, dx, dw, y, out, cp)
        gx, gw = expected(x, w)
        assert np.allclose(got[0], gx, rtol=1e-12) and np.isclose(got[1], gw, rtol=1e-12)
        assert np.array_equal(got[0], ref[0]) and np.isclose(got[1], ref[1], rtol=1e-13)  # (atomics' order)
        assert np.allclose(got[2], np.sin(x * x), rtol=1e-14) and np.isclose(got[3], 3.0 * gw, rtol=1e-12)
        # round 1 makes the shadows, round 2 reuses them (zeroed in backward: its key is seen), round 3 captures
        assert (graphed._graph.graph is not None) == (r >= 2)
    assert eager._graph.graph is None


def test_new_arrays_change_the_key_and_are_differentiated_right(cp):
    w = np.array([0.5])
    tape = LaunchTape()
    for r in range(5):
        x = np.linspace(0.1 + r, 1.2 + r, N)
        dx, dw, y, out = cp.asarray(x), cp.asarray(w), cp.zeros(N), cp.zeros(1)  # new memory each round
        keep = (dx, y, out)  # held: the next round's arrays cannot take their addresses
        gx, gw = expected(x, w)
        got = round_of(tape, dx, dw, y, out, cp)
        assert np.allclose(got[0], gx, rtol=1e-12) and np.isclose(got[1], gw, rtol=1e-12), r
        del keep


def test_a_gradient_registered_between_two_backwards_is_launched(cp):
    x = np.linspace(-2.0, 2.0, 256)
    dx, y = cp.asarray(x), cp.zeros(256)
    tape = LaunchTape()
    try:
        for _ in range(3):  # the generated gradient of clip_late, captured and replayed
            tape.reset()
            with tape:
                P.clip_late[2, 128, None](dx, y)
            tape.backward(grads=[(y, cp.ones(256))])
        assert tape._graph.graph is not None
        assert np.array_equal(cp.asnumpy(tape.gradient(dx)), (np.abs(x) < 1.0).astype(float))
        register_gradient(P.clip_late, P.clip_straight_through)
        tape.zero()
        tape.backward(grads=[(y, cp.ones(256))])   # the same recording: now the hand-written gradient
        assert np.array_equal(cp.asnumpy(tape.gradient(dx)), np.ones(256))
    finally:
        vars(P.clip_late).pop(GRADIENT_ATTRIBUTE, None)


def test_array_adjoints_are_read_at_each_replay(cp):
    x = np.linspace(0.1, 1.0, 256)
    dx, y = cp.asarray(x), cp.zeros(256)
    dy = cp.zeros(256)
    tape = LaunchTape()
    for r in range(4):
        dy[...] = float(r + 1)                       # the adjoint's contents change; its memory does not
        tape.reset()
        with tape:
            P.square[2, 128, None](dx, y)
        tape.backward(grads=[(y, dy)])
        assert np.allclose(cp.asnumpy(tape.gradient(dx)), 2 * x * (r + 1), rtol=1e-14)
    assert tape._graph.graph is not None


def test_a_gradient_kernel_on_the_device_heap_is_never_a_graph(cp):
    x = np.linspace(0.5, 1.5, 256)
    dx, y = cp.asarray(x), cp.zeros(256)
    steps = 80  # more iterations than the tape's inline segment holds: the gradient kernel uses the heap
    tape = LaunchTape()
    for _ in range(3):
        tape.reset()
        with tape:
            P.power_steps[2, 128, None](dx, y, steps)
        tape.backward(grads=[(y, cp.ones(256))])
        acc, d = np.ones_like(x), np.zeros_like(x)
        for _ in range(steps):
            acc, d = acc * x + 0.5, d * x + acc
        assert np.allclose(cp.asnumpy(tape.gradient(dx)), d, rtol=1e-11)
    assert tape._graph.graph is None
