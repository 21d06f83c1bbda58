"""A managed array's release is one call of the module's ``gpuc.array.decref`` at each place codegen gives a
reference back, not the release's body there (the stages before the optimiser parse and print less IR);
every pipeline inlines it: the programs run as CPython runs them, at every opt level, and free what they
allocate."""

import ctypes
import math

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler.language.numpy.arraymem import DECREF

N = 1 << 14  # 128 KiB of float64 per array: a leak of one array per call is megabytes


def exits(n, k):
    a = np.ones(n)
    b = np.full(n, 2.0)
    if k == 0:
        return a[0]
    c = a + b
    if k == 1:
        return c[1] + b[0]
    d = np.zeros(n)
    for i in range(n):
        d[i] = c[i] * i
    if k == 2:
        return d[n - 1]
    return d[3] + c[0]


def _heap_in_use() -> int:
    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in
                    ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                     "keepcost")]
    fn = getattr(ctypes.CDLL(None), "mallinfo2", None)
    if fn is None:
        pytest.skip("glibc's mallinfo2 is needed to measure the C heap")
    fn.restype = MallInfo2
    info = fn()
    return info.uordblks + info.hblkhd


@pytest.mark.parametrize("opt_level", [0, 2])
def test_releases_call_one_body_and_free_everything(opt_level, tmp_path, monkeypatch):
    monkeypatch.setenv("GPUC_DUMP_DIR", str(tmp_path))
    f = jit(exits, opt_level=opt_level)
    for k in range(4):
        assert f(N, k) == exits(N, k)
    irgen = [p for p in tmp_path.iterdir() if p.name.endswith(".irgen.after.ll")]
    assert len(irgen) == 1
    text = irgen[0].read_text()
    assert text.count("call void @free(") == 2  # the two frees of the one body
    assert text.count(f'call void @"{DECREF}"(') + text.count(f"call void @{DECREF}(") >= 6
    final = next(p for p in tmp_path.iterdir() if p.name.endswith(".emit.after.ll")).read_text()
    assert f"@{DECREF}(" not in final and f'@"{DECREF}"(' not in final  # inlined, the body dropped
    for k in range(4):
        f(N, k)
    before = _heap_in_use()
    for _ in range(50):
        for k in range(4):
            f(N, k)
    assert _heap_in_use() - before < N * 8  # less than one array: nothing leaks
    assert math.isclose(f(N, 3), 3.0 * 3 + 3.0)
