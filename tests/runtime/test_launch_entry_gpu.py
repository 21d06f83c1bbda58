"""On a real GPU with CuPy (marker ``gpu``): the native launch entry (gpucompiler/runtime/launch_entry.py) calls
libcuda's ``cuLaunchKernel`` and gives the Python launch's results: one-array and several-argument kernels, arrays
of other lengths, CuPy's current stream, a thread that is not the entry's. Each case runs in a subprocess: a
wrong launch there cannot break the context of the other tests."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu

SCRIPT = r'''
import threading
import numpy as np
import cupy as cp
from gpucompiler import device as gd
from gpucompiler.cache import later
from gpucompiler.kernel import Kernel, Launch


def _add(x, a):
    i = gd.grid(1)
    if i < x.shape[0]:
        x[i] = x[i] + a


def _axpy(a, x, y, out, n):
    i = gd.grid(1)
    if i < n:
        out[i] = a * x[i] + y[i]


def until_native(launch, *args):
    for count in range(1, 20000):
        launch(*args)
        if type(launch) is not Launch:
            return count
        if count % 16 == 0:
            later.wait()
    raise AssertionError("no native entry")


add, axpy = Kernel(_add), Kernel(_axpy)
x = cp.zeros(64)
launch = add[1, 64]
made = until_native(launch, x, 1.0)
for _ in range(100):
    launch(x, 0.5)  # native
assert np.array_equal(cp.asnumpy(x), np.full(64, made + 50.0)), cp.asnumpy(x)

y = cp.arange(37, dtype=cp.float64)  # another length of the same layout
launch(y, 2.0)
assert np.array_equal(cp.asnumpy(y), np.arange(37.0) + 2.0)

stream = cp.cuda.Stream(non_blocking=True)
with stream:
    z = cp.arange(1 << 20, dtype=cp.float64)  # queued on the stream, before the launch there
    big = add[(1 << 20) // 256, 256]
    until_native(big, z, 0.0)
    big(z, 3.0)
stream.synchronize()
assert np.array_equal(cp.asnumpy(z), np.arange(1 << 20) + 3.0)

n = 1000
a, b, out = cp.arange(n, dtype=cp.float64), cp.ones(n), cp.zeros(n)
six = axpy[(n + 127) // 128, 128]
until_native(six, 2.0, a, b, out, n)
six(3.0, a, b, out, n)
assert np.array_equal(cp.asnumpy(out), 3.0 * np.arange(n) + 1.0)

seen = {}


def worker():
    try:
        launch(x, 1.0)  # not the entry's thread: the Python launch
        cp.cuda.Device().synchronize()
        seen["ok"] = True
    except Exception as exc:
        seen["error"] = repr(exc)


t = threading.Thread(target=worker)
t.start()
t.join()
launch(x, 1.0)
assert seen == {"ok": True}, seen
assert np.array_equal(cp.asnumpy(x), np.full(64, made + 52.0)), cp.asnumpy(x)
print("OK")
'''


def test_native_launches_on_cupy_arrays_give_the_python_launchs_results():
    pytest.importorskip("cupy")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("OK"), done.stdout + done.stderr
