"""Launches that add into one array atomically (a loss summed over the steps of a program) are recorded
without a copy of that array, unless the gradient of an earlier launch reads it (``LaunchTape._kept``):
``backward`` keeps the array's final value aside anyway. The gradients against the exact ones on the CPU grid
emulation; a gradient registered after the recording, which may read what the tape did not keep, is refused
before anything runs."""

from __future__ import annotations

import numpy as np
import pytest

from enzyme_plugin import LaunchTape, LaunchTapeError, register_gradient
from enzyme_plugin.launches.gradients import GRADIENT_ATTRIBUTE
from gpucompiler import device as gd
from gpucompiler import kernel

N, BLOCK = 48, 16
W0 = 0.75


@kernel
def energy(y, w, out):
    i = gd.grid(1)
    if i < y.shape[0]:
        gd.atomic_add(out, 0, w[0] * y[i] * y[i])


@kernel
def read_out(out, x2, z):
    i = gd.grid(1)
    if i < z.shape[0]:
        z[i] = out[0] * x2[i]


def launch(k, *args) -> None:
    k[(N + BLOCK - 1) // BLOCK, BLOCK, "cpu"](*args)


def arrays(seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 1.5, N), rng.uniform(-1.0, 1.0, N), np.array([W0]), np.zeros(1)


def test_launches_adding_into_one_array_copy_nothing_and_give_the_exact_gradient():
    y1, y2, w, out = arrays()
    tape = LaunchTape()
    with tape:
        launch(energy, y1, w, out)
        launch(energy, y2, w, out)
    e = W0 * (y1 @ y1 + y2 @ y2)
    assert [r.snapshots for r in tape.records] == [[], []]
    np.testing.assert_allclose(out, [e], rtol=1e-13)
    tape.backward(loss=out)
    np.testing.assert_allclose(tape.gradient(y1), 2 * W0 * y1, rtol=1e-14)
    np.testing.assert_allclose(tape.gradient(y2), 2 * W0 * y2, rtol=1e-14)
    np.testing.assert_allclose(tape.gradient(w), [y1 @ y1 + y2 @ y2], rtol=1e-13)
    np.testing.assert_allclose(out, [e], rtol=1e-13)  # its value after the launches again


def test_an_array_a_gradient_reads_is_copied_before_a_later_launch_adds_into_it():
    """``read_out`` reads ``out`` between the two adds: its gradient needs ``out`` as it was then (``dx2 =
    dz·out``), so the second add copies it first."""
    y1, y2, w, out = arrays(1)
    x2, z = np.linspace(-1.0, 2.0, N), np.zeros(N)
    tape = LaunchTape()
    with tape:
        launch(energy, y1, w, out)
        launch(read_out, out, x2, z)
        launch(energy, y2, w, out)
    assert [len(r.snapshots) for r in tape.records] == [0, 0, 1]
    e1, e2 = W0 * (y1 @ y1), W0 * (y2 @ y2)
    np.testing.assert_allclose(z, e1 * x2, rtol=1e-13)
    tape.backward(grads=[(z, np.ones(N)), (out, 1.0)])  # loss: sum(z) + out
    np.testing.assert_allclose(tape.gradient(x2), np.full(N, e1), rtol=1e-13)
    np.testing.assert_allclose(tape.gradient(y1), (x2.sum() + 1.0) * 2 * W0 * y1, rtol=1e-12)
    np.testing.assert_allclose(tape.gradient(y2), 2 * W0 * y2, rtol=1e-13)
    np.testing.assert_allclose(out, [e1 + e2], rtol=1e-13)


def _energy_grad(y, w, out, dy, dw, dout):  # the exact gradient, times 2: told apart from the generated one
    i = gd.grid(1)
    if i < y.shape[0]:
        dy[i] += 2.0 * 2.0 * w[0] * y[i] * dout[0]


def test_a_gradient_registered_after_the_recording_is_refused_where_the_tape_kept_nothing():
    @kernel
    def own_energy(y, w, out):
        i = gd.grid(1)
        if i < y.shape[0]:
            gd.atomic_add(out, 0, w[0] * y[i] * y[i])

    y1, y2, w, out = arrays(2)
    tape = LaunchTape()
    with tape:
        launch(own_energy, y1, w, out)
        launch(own_energy, y2, w, out)
    before = out.copy()
    register_gradient(own_energy, _energy_grad)
    try:
        with pytest.raises(LaunchTapeError, match="registered after its launch was recorded") as info:
            tape.backward(loss=out)
        assert "record again" in info.value.hint
        np.testing.assert_array_equal(out, before)  # nothing ran
        np.testing.assert_array_equal(tape.gradient(y1), np.zeros(N))
        tape.reset()  # recorded again with the gradient registered: the hand-written one, its copies kept
        out[0] = 0.0
        with tape:
            launch(own_energy, y1, w, out)
            launch(own_energy, y2, w, out)
        assert [len(r.snapshots) for r in tape.records] == [1, 1]
        tape.backward(loss=out)
        np.testing.assert_allclose(tape.gradient(y1), 2 * 2 * W0 * y1, rtol=1e-14)
    finally:
        delattr(own_energy, GRADIENT_ATTRIBUTE)
