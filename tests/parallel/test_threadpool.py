"""The worker pool of parallel regions: started once, reused, safe across threads, nesting, fork and errors.

Workers are the process's threads named ``gpuc-pool`` (``/proc/self/task/*/comm``). Tests that count
them exactly, or fork, run in a fresh interpreter (with a timeout: a hang fails instead of blocking).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
import threading

import llvmlite.binding as llvm
import numpy as np
import pytest

from gpucompiler import jit, prange, types as T

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc/self/task")


def _isum(a, k):
    s = 0
    for i in prange(a.shape[0]):
        s += a[i] * k
    return s


def _scaled(a, out, k):
    for i in prange(a.shape[0]):
        out[i] = a[i] * k + 1.0


def _row_sums(a, out):
    for i in prange(a.shape[0]):
        out[i] = _row_total(a, i)


def _row_total(a, i):
    t = 0.0
    for j in prange(a.shape[1]):
        t += a[i, j]
    return t


def _inverse_sum(a):
    s = 0.0
    for i in prange(a.shape[0]):
        s += 1.0 / a[i]
    return s


def _run(script: str, threads: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "GPUC_NUM_THREADS": str(threads)}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, capture_output=True,
                          text=True, timeout=240)


_PRELUDE = """
    import os
    import numpy as np
    from gpucompiler import jit, prange
    from gpucompiler.runtime import threadpool

    def pool():
        found = set()
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/comm") as f:
                    if f.read().strip() == threadpool.THREAD_NAME:
                        found.add(tid)
            except FileNotFoundError:
                pass
        return found

    @jit(parallel=True)
    def isum(a, k):
        s = 0
        for i in prange(a.shape[0]):
            s += a[i] * k
        return s
"""


def test_ten_thousand_regions_reuse_the_workers_started_by_the_first():
    result = _run(_PRELUDE + """
    a = np.arange(1, 1001, dtype=np.int64)
    assert not pool() and not threadpool.started()
    assert isum(a, 1) == int(a.sum())
    first = pool()
    assert len(first) == 3, first          # chunk 0 runs on the caller: 4 threads, 3 workers
    for k in range(10_000):
        got = isum(a[k % 7:], k)
        assert got == int(a[k % 7:].sum()) * k, (k, got)
    assert pool() == first                 # the same threads, none started or lost
    print("ok")
    """, threads=4)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_a_forked_child_starts_its_own_workers_and_gets_right_results():
    result = _run(_PRELUDE + """
    a = np.arange(1, 5001, dtype=np.int64)
    assert isum(a, 2) == 2 * int(a.sum())
    parent = pool()
    assert len(parent) == 2
    pid = os.fork()
    if pid == 0:
        try:
            ok = all(isum(a[k:], 3) == 3 * int(a[k:].sum()) for k in range(200))
            child = pool()
            os._exit(0 if ok and len(child) == 2 and not child & parent else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    assert isum(a, 5) == 5 * int(a.sum()) and pool() == parent
    print("ok")
    """, threads=3)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_the_interpreter_exits_while_daemon_threads_are_inside_regions():
    result = _run(_PRELUDE + """
    import threading, time

    @jit(parallel=True)
    def inverse(a):
        s = 0.0
        for i in prange(a.shape[0]):
            s += 1.0 / a[i]
        return s

    a = np.arange(1.0, 1_000_001.0)
    b = a.copy()
    b[-1] = 0.0
    assert isum(np.arange(10), 1) == 45 and inverse(a) > 0.0

    def loop():
        while True:
            inverse(a)
            try:
                inverse(b)  # a worker's chunk fails: it takes the GIL while the interpreter may be finalizing
            except ZeroDivisionError:
                pass

    for _ in range(2):
        threading.Thread(target=loop, daemon=True).start()
    time.sleep(0.3)
    print("ok")
    """, threads=3)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_one_thread_runs_every_region_on_the_caller():
    result = _run(_PRELUDE + """
    a = np.arange(1, 1001, dtype=np.int64)
    for k in range(100):
        assert isum(a, k) == k * int(a.sum())
    assert not pool() and not threadpool.started()
    print("ok")
    """, threads=1)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_regions_from_several_python_threads_at_once_all_finish_right(monkeypatch):
    a = np.arange(1, 2001, dtype=np.int64)
    x = np.random.default_rng(0).random(3000)
    monkeypatch.setenv("GPUC_NUM_THREADS", "3")  # read when a function compiles: at its first call
    isum, scaled = jit(parallel=True)(_isum), jit(parallel=True)(_scaled)
    isum(a, 0)
    scaled(x, np.empty_like(x), 0.0)
    monkeypatch.setenv("GPUC_NUM_THREADS", "4")
    isum4 = jit(parallel=True)(_isum)
    isum4(a, 0)
    failures: list[str] = []

    def work(t: int):
        out = np.empty_like(x)
        for k in range(300):
            f = isum if (t + k) % 2 else isum4
            if f(a, k) != k * int(a.sum()):
                failures.append(f"thread {t}: sum at k={k}")
            scaled(x, out, float(k))
            if not np.array_equal(out, x * float(k) + 1.0):
                failures.append(f"thread {t}: writes at k={k}")

    workers = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert not any(w.is_alive() for w in workers), "a region never finished"
    assert failures == []


def test_a_region_inside_a_region_runs_serially_on_its_thread(monkeypatch):
    monkeypatch.setenv("GPUC_NUM_THREADS", "3")
    rows = jit(parallel=True)(_row_sums)
    a = np.random.default_rng(1).random((50, 33))
    sums: list = []

    def work():
        for _ in range(200):
            out = np.zeros(50)
            rows(a, out)
            sums.append(out)

    runner = threading.Thread(target=work, daemon=True)
    runner.start()
    runner.join(timeout=120)
    assert not runner.is_alive(), "a nested region never finished"
    assert len(sums) == 200
    for out in sums:
        np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-12)


def test_errors_in_worker_chunks_surface_and_the_pool_stays_usable(monkeypatch):
    monkeypatch.setenv("GPUC_NUM_THREADS", "4")
    inverse = jit(parallel=True)(_inverse_sum)
    good = np.arange(1.0, 101.0)
    want = float(np.sum(1.0 / good))
    for k in (99, 60, 30, 0):  # the zero in the last chunk, the third, the second, the first
        bad = good.copy()
        bad[k] = 0.0
        for _ in range(50):
            with pytest.raises(ZeroDivisionError):
                inverse(bad)
            assert inverse(good) == pytest.approx(want, rel=1e-12)


def test_the_generated_code_calls_the_pool_not_pthread_create():
    vector = T.ArrayType(T.float64, 1)
    text = jit(parallel=True)(_scaled).inspect_llvm(vector, vector, T.float64)
    assert "@gpuc_parallel_pool" in text and "pthread_create" not in text and "pthread_join" not in text


@pytest.mark.slow
@pytest.mark.parametrize("threads", [2, 5, 8])
def test_sweep_of_sizes_threads_nesting_errors_and_callers(monkeypatch, threads):
    monkeypatch.setenv("GPUC_NUM_THREADS", str(threads))
    isum, rows, inverse = (jit(parallel=True)(f) for f in (_isum, _row_sums, _inverse_sum))
    rng = np.random.default_rng(threads)
    failures: list[str] = []

    def work(t: int):
        for k in range(150):
            n = int(rng.integers(0, 3 * threads + 40)) if k % 3 else k
            a = np.arange(n, dtype=np.int64)
            if isum(a, k + t) != (k + t) * int(a.sum()):
                failures.append(f"isum n={n}")
            m = np.random.default_rng(k).random((n % 9 + 1, n % 7 + 1))
            out = np.zeros(m.shape[0])
            rows(m, out)
            if not np.allclose(out, m.sum(axis=1), rtol=1e-12):
                failures.append(f"rows {m.shape}")
            x = np.arange(1.0, n + 2.0)
            x[(k * 7) % x.shape[0]] = 0.0
            try:
                inverse(x)
                failures.append(f"no ZeroDivisionError n={n}")
            except ZeroDivisionError:
                pass

    callers = [threading.Thread(target=work, args=(t,), daemon=True) for t in range(3)]
    for c in callers:
        c.start()
    for c in callers:
        c.join(timeout=300)
    assert not any(c.is_alive() for c in callers), "a region never finished"
    assert failures == []


def test_an_empty_slot_runs_the_chunks_serially_on_the_caller(monkeypatch):
    # what the generated code does when the pool cannot be made (the slot is emptied)
    monkeypatch.setenv("GPUC_NUM_THREADS", "3")
    isum, inverse = jit(parallel=True)(_isum), jit(parallel=True)(_inverse_sum)
    a = np.arange(1, 1001, dtype=np.int64)
    assert isum(a, 1) == int(a.sum())
    slot = ctypes.c_void_p.from_address(llvm.address_of_symbol("gpuc_parallel_pool"))
    saved = slot.value
    try:
        slot.value = None
        for k in range(20):
            assert isum(a[k:], k) == k * int(a[k:].sum())
        with pytest.raises(ZeroDivisionError):
            inverse(np.array([1.0, 2.0, 0.0, 4.0]))
    finally:
        slot.value = saved
    assert isum(a, 2) == 2 * int(a.sum())
