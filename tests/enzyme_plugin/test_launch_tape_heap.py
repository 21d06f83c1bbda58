"""A split launch tape whose augmented kernel grows its per-thread tapes onto the heap (a ``while`` of
data-dependent length per list entry, heap_kernels.spin_loss): on the CPU grid emulation its gradient is
the combined-mode gradient kernel's; on a GPU (``gpu``, in a child process with a 64 MiB device heap) the
launch does not wait for the device, the end of the recording raises DeviceHeapError naming the kernel and
the recorded launch, backward() refuses the incomplete tapes, and after reset() the same tape gives exact
gradients (the context still usable)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from enzyme_plugin import LaunchTape
from gpucompiler import device as gd
from gpucompiler import kernel
from gpucompiler.kernel import CPU

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "enzyme"))
import heap_kernels as H  # noqa: E402
import launch_programs as P  # noqa: E402


@kernel
def spin_total(x, out, offs, cols):
    i = gd.grid(1)
    if i < x.shape[0]:
        out[i] = H.spin_loss(x, offs, cols, i)


def _lists(n: int):
    offs = np.arange(n + 1, dtype=np.int64)   # one entry per thread: its right neighbour
    return offs, (np.arange(n, dtype=np.int64) + 1) % n


def test_split_tape_that_grows_on_the_heap_gives_the_combined_gradient_on_the_emulation():
    n = 8
    x, (offs, cols) = np.linspace(0.3, 0.9, n), _lists(n)
    out = np.zeros(n)
    with LaunchTape(split=True) as tape:
        spin_total[1, n, CPU](x, out, offs, cols)
    assert np.allclose(out, [H.spin_loss(x, offs, cols, i) for i in range(n)], rtol=1e-13)
    tape.backward(grads=[(out, np.ones(n))])
    dx = np.zeros(n)
    kernel(H.k_spin_grad, plugins=("enzyme",))[1, n, CPU](x, dx, offs, cols)
    assert np.any(dx != 0) and np.allclose(tape.gradient(x), dx, rtol=1e-12)


_GPU_CHILD = """
import sys
import cupy as cp
import numpy as np
sys.path[:0] = [{here!r}]
import launch_programs as P
import test_launch_tape_heap as M
from enzyme_plugin import LaunchTape, LaunchTapeError
from gpucompiler.errors import DeviceHeapError
n = 4096
x, out = cp.full(n, 0.01), cp.zeros(n)
offs, cols = (cp.asarray(a) for a in M._lists(n))
tape = LaunchTape(split=True)
try:
    with tape:
        M.spin_total[n // 128, 128](x, out, offs, cols)
        print("launched")
except DeviceHeapError as exc:
    print("DeviceHeapError:", exc)
try:
    tape.backward(grads=[(out, cp.ones(n))])
except LaunchTapeError as exc:
    print("LaunchTapeError:", exc)
tape.reset()
xs = np.linspace(0.1, 1.2, 1000)
dx, y, o, dw = cp.asarray(xs), cp.zeros(1000), cp.zeros(1), cp.asarray([3.0])
with tape:
    P.program(dx, y, dw, o, 8, 128, None)
tape.backward(loss=o)
print("after", float(cp.abs(tape.gradient(dx) - cp.asarray(3.0 * np.cos(xs * xs) * 2 * xs)).max()))
"""


@pytest.mark.gpu
def test_split_tape_out_of_device_heap_is_reported_at_the_end_of_the_recording_on_the_gpu():
    pytest.importorskip("cupy")
    proc = subprocess.run([sys.executable, "-c", _GPU_CHILD.format(here=HERE)], capture_output=True, text=True,
                          env={**os.environ, "GPUC_DEVICE_HEAP": "64M"}, timeout=600)
    out = proc.stdout
    assert proc.returncode == 0, (out, proc.stderr)
    lines = [line for line in out.splitlines() if not line.startswith(" ")]  # (an error's hint is indented)
    assert lines[0] == "launched" and lines[1].startswith("DeviceHeapError:"), out
    assert "spin_total (recorded launch 1)" in lines[1] and "still usable" in lines[1], out
    assert lines[2].startswith("LaunchTapeError:") and "ran out of device heap" in lines[2], out
    assert lines[3].startswith("after ") and float(lines[3].split()[1]) < 1e-12, out


def test_a_tape_leaves_no_launch_label_behind_for_the_threads_later_launches():
    # the label a heap error names ("gradient of recorded launch 1") stayed set after an emulated backward, and
    # a later, unrelated deferred launch of the thread was reported under it
    from gpucompiler.runtime import device_heap

    x, w = np.linspace(0.1, 1.2, 64), np.array([3.0])
    y, out = np.zeros(64), np.zeros(1)
    with LaunchTape() as tape:
        P.program(x, y, w, out, 2, 32, "cpu")
    tape.backward(loss=out)
    assert device_heap.PENDING.where is None
    try:
        with LaunchTape():
            P.program(x, y, w, out, 2, 32, "cpu")
            raise KeyError("the user's own error")
    except KeyError:
        pass
    assert device_heap.PENDING.where is None
