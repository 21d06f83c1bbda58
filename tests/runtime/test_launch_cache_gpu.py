"""On a real GPU (marker ``gpu``): a launch that reuses its launcher and the thread's context without asking
the driver stays right when the current context changes under it (a thread with none current, a context
another library created and made current). Each case runs in a subprocess: were the driver to run a
function of another context instead of refusing it, the broken context would not reach other tests."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

PRELUDE = r'''
import threading
import numpy as np
from gpucompiler import device as gd
from gpucompiler.kernel import Kernel
from gpucompiler.runtime import cuda


def _scale(x, factor):
    i = gd.grid(1)
    if i < x.shape[0]:
        x[i] = x[i] * factor


scale = Kernel(_scale)
d = cuda.initialised()


class Memory:
    """float64 device memory of the current context, described by __cuda_array_interface__."""

    def __init__(self, host):
        self.n, self.nbytes = host.size, host.nbytes
        self.ptr = int(cuda.check(d.cuMemAlloc(host.nbytes), "cuMemAlloc"))
        cuda.check(d.cuMemcpyHtoD(self.ptr, host.ctypes.data, host.nbytes), "cuMemcpyHtoD")
        self.__cuda_array_interface__ = {"shape": host.shape, "typestr": "<f8", "strides": None,
                                         "data": (self.ptr, False), "version": 3}

    def get(self):
        out = np.empty(self.n)
        cuda.check(d.cuCtxSynchronize(), "cuCtxSynchronize")
        cuda.check(d.cuMemcpyDtoH(out.ctypes.data, self.ptr, self.nbytes), "cuMemcpyDtoH")
        return out


cuda.current_context()  # the primary context, current in this thread
x = Memory(np.arange(64.0))
launch = scale[1, 64]
launch(x, 2.0)
launch(x, 2.0)
'''

THREAD = PRELUDE + r'''
seen = {}


def worker():
    try:
        launch(x, 3.0)  # no context current in this thread: refused, then the primary one made current
        seen["ok"] = True
    except Exception as exc:
        seen["error"] = repr(exc)


t = threading.Thread(target=worker)
t.start()
t.join()
launch(x, 0.5)
assert seen == {"ok": True}, seen
np.testing.assert_array_equal(x.get(), 6.0 * np.arange(64.0))
print("OK")
'''

CREATED = PRELUDE + r'''
dev = cuda.check(d.cuDeviceGet(0), "cuDeviceGet")
try:
    ctx = cuda.check(d.cuCtxCreate(0, dev), "cuCtxCreate")  # made current (pushed)
except TypeError:  # cuda-bindings 13: cuCtxCreate(params, flags, dev)
    ctx = cuda.check(d.cuCtxCreate(None, 0, dev), "cuCtxCreate")
y = Memory(np.arange(64.0))  # memory of the new context
launch(y, 3.0)
np.testing.assert_array_equal(y.get(), 3.0 * np.arange(64.0))
cuda.check(d.cuCtxPopCurrent(), "cuCtxPopCurrent")
launch(x, 0.5)  # the primary context again
np.testing.assert_array_equal(x.get(), 2.0 * np.arange(64.0))
cuda.check(d.cuCtxDestroy(ctx), "cuCtxDestroy")
print("OK")
'''


@pytest.mark.parametrize("script", [THREAD, CREATED], ids=["thread_without_context", "created_context"])
def test_cached_launch_follows_the_current_context(script):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("OK"), done.stdout + done.stderr


def test_launch_without_a_stream_runs_on_cupys_current_stream():
    """Inside ``with cupy.cuda.Stream(non_blocking=True)``, a launch without a stream runs on that stream,
    after the CuPy work queued there (the arrays name it in ``__cuda_array_interface__``)."""
    cp = pytest.importorskip("cupy")
    from gpucompiler import device as gd
    from gpucompiler.kernel import Kernel

    def _add_one(x):
        i = gd.grid(1)
        if i < x.shape[0]:
            x[i] = x[i] + 1.0

    add_one = Kernel(_add_one)
    n = 1 << 24
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        if cp.zeros(1).__cuda_array_interface__.get("stream") != stream.ptr:
            pytest.skip("this CuPy exports __cuda_array_interface__ without its stream (version 2)")
        for _ in range(3):
            x = cp.arange(n, dtype=cp.float64) * 2.0  # queued on the stream
            add_one[(n + 255) // 256, 256](x)
    stream.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(x), 2.0 * np.arange(n) + 1.0)
