"""Kernels whose ``autodiff`` tape grows on the device heap (heap_kernels.py: per thread a ``for`` over a
variable-length list, a binary-search ``while`` inside recording a value per step, gathers after it),
launched many times: every launch's gradient is NumPy's, every block the tape ``malloc``s is freed
(the grid emulation, with counting ``malloc``/``free``), an allocation that fails stops the thread
through the module's heap flag (PTX) instead of a trap that would lose the context, and on a GPU
(``-m gpu``) 20 launches at 2^18 threads, then a heap exhausted on purpose: DeviceHeapError, and the
context still runs kernels afterwards."""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys

import llvmlite.binding as llvm
import numpy as np
import pytest

import heap_kernels as H
from gpucompiler import kernel
from gpucompiler import types as T
from gpucompiler.runtime.device_heap import FLAG

P = ("enzyme",)
A = T.ArrayType(T.float64, 1, "C")
IA = T.ArrayType(T.int64, 1, "C")
HERE = os.path.dirname(os.path.abspath(__file__))


class _CountingHeap:
    """``malloc``/``free`` for JIT-compiled code that count and check what they are given: each block
    is followed by :attr:`PAD` canary bytes, checked when it is freed (a write past the block's end),
    and a free of a block it never handed out is recorded, not passed on (registered with LLVM's
    symbol table for the modules loaded while it is installed; libc's again afterwards)."""

    PAD = 256

    MALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t)
    FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

    def __init__(self):
        self.libc = ctypes.CDLL(None)
        self.libc.malloc.restype, self.libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
        self.libc.free.argtypes = [ctypes.c_void_p]
        self.live: dict[int, int] = {}
        self.mallocs = self.frees = 0
        self.foreign: list[int] = []  # frees of blocks this heap never handed out
        self.overruns = 0  # blocks whose canary was overwritten
        self._malloc, self._free = self.MALLOC(self.malloc), self.FREE(self.free)

    def malloc(self, n):
        p = self.libc.malloc(n + self.PAD)
        self.mallocs += 1
        self.live[p] = n
        ctypes.memset(p + n, 0xAB, self.PAD)
        return p

    def free(self, p):
        if p is None:
            return
        self.frees += 1
        n = self.live.pop(p, None)
        if n is None:
            self.foreign.append(p)
            return  # never hand libc a pointer it did not make
        self.overruns += ctypes.string_at(p + n, self.PAD) != b"\xab" * self.PAD
        self.libc.free(p)

    def install(self, malloc, free):
        llvm.add_symbol("malloc", ctypes.cast(malloc, ctypes.c_void_p).value)
        llvm.add_symbol("free", ctypes.cast(free, ctypes.c_void_p).value)


@pytest.fixture
def counting_heap():
    heap = _CountingHeap()
    heap.install(heap._malloc, heap._free)
    try:
        yield heap
    finally:
        heap.install(ctypes.cast(heap.libc.malloc, ctypes.c_void_p), ctypes.cast(heap.libc.free, ctypes.c_void_p))


def test_repeated_launches_in_the_emulation_free_every_block(counting_heap):
    """30 launches of a fresh kernel (compiled while the counting heap is installed): each gradient is
    NumPy's, and after each launch every malloc'd tape block was freed once."""
    x, vals, knots, offs, cols = H.problem(160, seed=3)
    want_dx, want_dvals = H.search_reference(x, vals, knots, offs, cols)
    k = kernel(H.k_search_grad, plugins=P)
    for launch in range(30):
        dx, dvals = np.zeros_like(x), np.zeros_like(vals)
        k[5, 32, "cpu"](x, dx, vals, dvals, knots, offs, cols)
        np.testing.assert_allclose(dx, want_dx, rtol=1e-12, atol=1e-12, err_msg=f"launch {launch}")
        np.testing.assert_allclose(dvals, want_dvals, rtol=1e-12, atol=1e-12, err_msg=f"launch {launch}")
        assert counting_heap.live == {} and counting_heap.foreign == [], f"launch {launch}"
        assert counting_heap.overruns == 0, f"launch {launch}"
    # the lists' binary searches outgrow the inline segment: the tape really used the heap
    assert counting_heap.mallocs >= 30 * 100 and counting_heap.frees == counting_heap.mallocs


def test_early_exit_from_the_list_frees_the_tape(counting_heap):
    """spin_loss leaves its list with ``break`` after a while loop that grew its array on the heap."""
    n = 48
    x = np.linspace(0.5e5, 2.5e5, n)  # the first entries loop, later ones break at once
    offs = np.arange(0, 2 * n + 1, 2, dtype=np.int64)
    cols = (np.arange(2 * n, dtype=np.int64) * 7) % n
    k = kernel(H.k_spin_grad, plugins=P)
    for _ in range(3):
        dx = np.zeros_like(x)
        k[2, 32, "cpu"](x, dx, offs, cols)
        assert counting_heap.live == {} and counting_heap.foreign == []
    assert counting_heap.mallocs > 0


@pytest.mark.parametrize("name", ["two_level", "while_then_loop"])
def test_nested_data_dependent_loops_free_their_tapes_and_match_finite_differences(counting_heap, name):
    """Two nested lists, and a ``while`` setting the next loop's trip count: 5 launches, every block
    freed and none overrun, the gradient against central differences of the loss run by CPython."""
    loss, grad = getattr(H, f"{name}_loss"), getattr(H, f"k_{name}_grad")
    x, _, _, offs, cols = H.problem(40, seed=2, maxlen=5)

    def total(v):
        return sum(loss(v, offs, cols, i) for i in range(v.shape[0]))

    fd, h = np.zeros_like(x), 1e-6
    for j in range(x.shape[0]):
        e = np.zeros_like(x)
        e[j] = h
        fd[j] = (total(x + e) - total(x - e)) / (2 * h)
    k = kernel(grad, plugins=P)
    for launch in range(5):
        dx = np.zeros_like(x)
        k[2, 32, "cpu"](x, dx, offs, cols)
        np.testing.assert_allclose(dx, fd, rtol=1e-6, atol=1e-6, err_msg=f"launch {launch}")
        assert counting_heap.live == {} and counting_heap.foreign == [] and counting_heap.overruns == 0
    # two_level's arrays outgrow the call's tape arena (EngineOptions.tape_arena) and reach the heap;
    # while_then_loop's tape fits in it: no malloc at all
    assert (counting_heap.mallocs > 0) == (name == "two_level")


def _functions(ir: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in re.finditer(r"^define [^@]*@([\w.$]+)\([^\n]*\{\n(.*?)^\}", ir,
                                                        re.M | re.S)}


def test_a_failed_device_malloc_sets_the_flag_and_exits_instead_of_trapping():
    """In the PTX module every tape malloc is checked for null; the failure path calls the out-of-heap
    helper, which sets the flag the runtime reads and ends the thread (a trap would lose the context)."""
    ir = kernel(H.k_search_grad, plugins=P).inspect_llvm(A, A, A, A, A, IA, IA)
    assert re.search(rf"^@{FLAG} = addrspace\(1\) externally_initialized global i32 0", ir, re.M)
    fns = _functions(ir)
    stop = next(name for name in fns if name.endswith("out_of_heap"))
    assert f"store volatile i32 1, ptr addrspace(1) @{FLAG}" in fns[stop]
    assert "call void @llvm.nvvm.exit()" in fns[stop] and "llvm.trap" not in fns[stop]
    # the kernel and the out-of-line helper that takes heap blocks past the tape arena
    body = "\n".join(text for name, text in fns.items() if name != stop)
    mallocs = re.findall(r"(%[\w.]+) = (?:tail )?call (?:noalias )?ptr @malloc\(", body)
    assert mallocs, "the kernel's tape allocates"
    for p in mallocs:
        assert re.search(rf"icmp (?:eq|ne) ptr {re.escape(p)}, null", body), f"{p} is used unchecked"
    assert re.search(rf"call (?:fastcc )?void @{stop}\(\)", body)


_GPU_CHILD = """
import sys
import numpy as np
sys.path.insert(0, {here!r})
import heap_kernels as H
from gpucompiler import kernel
from gpucompiler.errors import DeviceHeapError
n = 4096
x = np.full(n, 0.01)
offs = np.arange(n + 1, dtype=np.int64)
cols = np.arange(n, dtype=np.int64)
try:
    kernel(H.k_spin_grad, plugins=("enzyme",))[n // 128, 128](x, np.zeros(n), offs, cols)
except DeviceHeapError as exc:
    print("DeviceHeapError:", exc)
x, vals, knots, offs, cols = H.problem(4096, seed=5)
want = H.search_reference(x, vals, knots, offs, cols)
for launch in range(3):
    dx, dvals = np.zeros_like(x), np.zeros_like(vals)
    kernel(H.k_search_grad, plugins=("enzyme",))[16, 256](x, dx, vals, dvals, knots, offs, cols)
    print("after", launch, float(np.abs(dx - want[0]).max()), float(np.abs(dvals - want[1]).max()))
"""


@pytest.mark.gpu
def test_exhausted_heap_is_a_heap_error_and_the_context_still_runs_kernels():
    """4096 threads each needing megabytes of tape on a 64 MiB heap: the threads stop, DeviceHeapError
    says so, and the same process then launches a heap-using kernel three times with exact gradients
    (in a child process: the heap's size is fixed at the first such launch)."""
    proc = subprocess.run([sys.executable, "-c", _GPU_CHILD.format(here=HERE)], capture_output=True, text=True,
                          env={**os.environ, "GPUC_DEVICE_HEAP": "64M"}, timeout=600)
    out = proc.stdout
    assert proc.returncode == 0, (out, proc.stderr)
    assert "DeviceHeapError:" in out and "still usable" in out, out
    errors = [line.split()[2:] for line in out.splitlines() if line.startswith("after ")]
    assert len(errors) == 3 and all(float(e) < 1e-9 for pair in errors for e in pair), out


@pytest.mark.gpu
def test_twenty_launches_at_2_18_threads_each_give_the_gradient():
    """The tape of every thread is malloc'd, grown and freed on the device heap in every launch; 20
    launches in a row (an illegal address or a lost context on a later launch would show here)."""
    n = 1 << 18
    x, vals, knots, offs, cols = H.problem(n, seed=11, maxlen=4)
    want_dx, want_dvals = H.search_reference(x, vals, knots, offs, cols)
    k = kernel(H.k_search_grad, plugins=P)
    scale = 1.0 + np.abs(want_dvals).max()
    for launch in range(20):
        dx, dvals = np.zeros_like(x), np.zeros_like(vals)
        k[n // 256, 256](x, dx, vals, dvals, knots, offs, cols)
        np.testing.assert_allclose(dx, want_dx, rtol=1e-10, atol=1e-12, err_msg=f"launch {launch}")
        np.testing.assert_allclose(dvals / scale, want_dvals / scale, rtol=0, atol=1e-12, err_msg=f"launch {launch}")
