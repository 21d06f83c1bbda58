"""Nested data-dependent loops in kernel gradients without a per-thread heap tape.

A search loop (no store, no active value: a binary search, a linear scan with ``break``) is not reversed
and not taped: the reverse sweep passes it from its exit to its preheader, and what the code after it
uses is read back once per execution. What must be taped (a ``while`` computing active values, the
frames of a ``for`` over a variable-length list) is carved from the call's tape arena, an ``alloca``
(a GPU's local memory, reserved once per launch), and reaches the device heap only past it.

Each kernel: the gradient on the CPU grid emulation against central differences of the loss run by
CPython, ``malloc`` never called during the launches (a counting heap), and the kernel's LLVM IR for
PTX parsed back: no ``malloc`` in a block on a cycle of the CFG.
"""

from __future__ import annotations

import ctypes
import math
import re

import llvmlite.binding as llvm
import numpy as np
import pytest

from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from enzyme_plugin.options import EnzymeOptions
from gpucompiler import device as gd
from gpucompiler import kernel
from gpucompiler import types as T
from test_device_heap_launches import _CountingHeap

P = ("enzyme",)
A = T.ArrayType(T.float64, 1, "C")
IA = T.ArrayType(T.int64, 1, "C")
GRID = 16  # points of each row of ``grid``


def xs_lookup(x, grid, offs, cols, e, i):
    """A cross-section lookup: per entry of the thread's list, a binary search in the entry's row of the
    energy grid, then an interpolation between the two values around ``e[i]``."""
    s = 0.0
    for j in range(offs[i], offs[i + 1]):
        row = cols[j] * GRID
        lo = row
        hi = row + GRID - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if grid[mid] <= e[i]:
                lo = mid
            else:
                hi = mid
        f = (e[i] - grid[lo]) / (grid[lo + 1] - grid[lo])
        s += x[lo] + f * (x[lo + 1] - x[lo])
    return s * x[i % x.shape[0]]


def k_xs_lookup(x, dx, grid, offs, cols, e):
    i = gd.grid(1)
    if i < e.shape[0]:
        autodiff(Reverse, xs_lookup, Duplicated(x, dx), Const(grid), Const(offs), Const(cols), Const(e), Const(i))


def scan_then_pass(x, grid, offs, cols, e, i):
    """A linear scan that leaves with ``break`` (two exits), an active value carried past it unchanged."""
    s = 0.0
    for j in range(offs[i], offs[i + 1]):
        row = cols[j] * GRID
        v = x[row] * 2.0
        t = row
        for q in range(row, row + GRID - 1):
            t = q
            if grid[q + 1] > e[i]:
                break
        s += v * x[t + 1] + math.sin(x[t])
    return s


def k_scan_then_pass(x, dx, grid, offs, cols, e):
    i = gd.grid(1)
    if i < e.shape[0]:
        autodiff(Reverse, scan_then_pass, Duplicated(x, dx), Const(grid), Const(offs), Const(cols), Const(e),
                 Const(i))


def data_while(x, grid, offs, cols, e, i):
    """Per entry a ``while`` of data-dependent trip count over active values (taped, in the arena)."""
    s = 0.0
    for j in range(offs[i], offs[i + 1]):
        v = x[cols[j] * GRID]
        t = 0
        while v < 3.0 and t < 40:
            v = v * 1.25 + 0.05 * x[(cols[j] + t) % x.shape[0]]
            t += 1
        s += v * e[i]
    return s


def k_data_while(x, dx, grid, offs, cols, e):
    i = gd.grid(1)
    if i < e.shape[0]:
        autodiff(Reverse, data_while, Duplicated(x, dx), Const(grid), Const(offs), Const(cols), Const(e), Const(i))


def three_deep(x, grid, offs, cols, e, i):
    """A list, the list of each entry, a binary search per entry of that: three nested data-dependent loops."""
    s = 0.0
    for j in range(offs[i], offs[i + 1]):
        c = cols[j]
        for k in range(offs[c], offs[c + 1]):
            row = cols[k] * GRID
            lo = row
            hi = row + GRID - 1
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if grid[mid] <= e[c]:
                    lo = mid
                else:
                    hi = mid
            s += x[lo] * x[c * GRID] + math.cos(x[lo + 1])
    return s


def k_three_deep(x, dx, grid, offs, cols, e):
    i = gd.grid(1)
    if i < e.shape[0]:
        autodiff(Reverse, three_deep, Duplicated(x, dx), Const(grid), Const(offs), Const(cols), Const(e), Const(i))


def pair_energy(px, py, pz, noffs, nbr, i):
    """A neighbour-list loop in 3-D: the neighbour's address (list entry, index wrap, offset, cast) is
    rebuilt in the reverse sweep, not taped: 16 neighbours' frames fit the default 1 KiB arena."""
    s = 0.0
    for k in range(noffs[i], noffs[i + 1]):
        j = nbr[k]
        dx = px[i] - px[j]
        dy = py[i] - py[j]
        dz = pz[i] - pz[j]
        r2 = dx * dx + dy * dy + dz * dz
        s += math.exp(-r2) / (r2 + 0.1)
    return s


def k_pair_energy(px, dpx, py, dpy, pz, dpz, noffs, nbr):
    i = gd.grid(1)
    if i < noffs.shape[0] - 1:
        autodiff(Reverse, pair_energy, Duplicated(px, dpx), Duplicated(py, dpy), Duplicated(pz, dpz), Const(noffs),
                 Const(nbr), Const(i))


def test_sixteen_neighbours_fit_the_arena(counting_heap):
    n, m = 40, 16
    rng = np.random.default_rng(5)
    pos = [rng.uniform(0.0, 2.0, n) for _ in range(3)]
    noffs = np.arange(0, n * m + 1, m, dtype=np.int64)
    nbr = ((np.repeat(np.arange(n), m) + rng.integers(1, n, n * m)) % n).astype(np.int64)

    def total(p):
        return sum(pair_energy(*p, noffs, nbr, i) for i in range(n))

    grads = [np.zeros(n) for _ in range(3)]
    kernel(k_pair_energy, plugins=P, boundscheck=False)[2, 32, "cpu"](
        pos[0], grads[0], pos[1], grads[1], pos[2], grads[2], noffs, nbr)
    h = 1e-6
    for c in range(3):
        for j in range(n):
            up, dn = [p.copy() for p in pos], [p.copy() for p in pos]
            up[c][j] += h
            dn[c][j] -= h
            assert abs(grads[c][j] - (total(up) - total(dn)) / (2 * h)) < 1e-6, (c, j)
    assert counting_heap.mallocs == 0


def warm_search(x, grid, offs, cols, e, i):
    """A search that starts where the previous entry's search ended (``lo`` carried by the outer loop), and
    a search whose body holds a second, linear, search: loops inside a search loop are left out with it."""
    s = 0.0
    lo = 0
    for j in range(offs[i], offs[i + 1]):
        key = e[(i + j) % e.shape[0]]
        hi = GRID - 1
        if grid[lo] > key:
            lo = 0
        while hi - lo > 1:
            mid = (lo + hi) // 2
            q = mid
            while q > lo + 1 and grid[q - 1] > key:
                q -= 1
            if grid[q] <= key:
                lo = q
            else:
                hi = q
        row = cols[j] * GRID
        s += x[row + lo] * x[row + lo + 1] - math.sin(x[row + hi])
    return s


def k_warm_search(x, dx, grid, offs, cols, e):
    i = gd.grid(1)
    if i < e.shape[0]:
        autodiff(Reverse, warm_search, Duplicated(x, dx), Const(grid), Const(offs), Const(cols), Const(e),
                 Const(i))


KERNELS = {"xs_lookup": (xs_lookup, k_xs_lookup), "scan_then_pass": (scan_then_pass, k_scan_then_pass),
           "data_while": (data_while, k_data_while), "three_deep": (three_deep, k_three_deep),
           "warm_search": (warm_search, k_warm_search)}


def _problem(n: int, rows: int, seed: int, maxlen: int = 4):
    rng = np.random.default_rng(seed)
    grid = np.sort(rng.uniform(0.0, 1.0, (rows, GRID)), axis=1)
    grid[:, 0], grid[:, -1] = 0.0, 1.0
    x = rng.uniform(0.5, 1.5, rows * GRID)
    lens = rng.integers(0, maxlen + 1, n)
    offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    cols = rng.integers(0, min(n, rows), int(offs[-1])).astype(np.int64)
    e = rng.uniform(0.01, 0.99, n)
    return x, grid.ravel(), offs, cols, e


def _finite_differences(loss, x, args, n):
    def total(v):
        return sum(loss(v, *args, i) for i in range(n))

    fd, h = np.zeros_like(x), 1e-6
    for j in range(x.shape[0]):
        d = np.zeros_like(x)
        d[j] = h
        fd[j] = (total(x + d) - total(x - d)) / (2 * h)
    return fd


@pytest.fixture
def counting_heap():
    heap = _CountingHeap()
    heap.install(heap._malloc, heap._free)
    try:
        yield heap
    finally:
        heap.install(ctypes.cast(heap.libc.malloc, ctypes.c_void_p), ctypes.cast(heap.libc.free, ctypes.c_void_p))


@pytest.mark.parametrize("boundscheck", [False, True])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_gradient_matches_finite_differences_without_a_malloc(counting_heap, name, boundscheck):
    """Without bounds checks (as on a GPU) no launch calls malloc. With them (the emulation's default)
    each check's exit leaves the nest, whose loops are then not counted: their tape is a stack, which
    still starts on the heap; the gradient is the same."""
    loss, grad = KERNELS[name]
    n = 40
    x, grid, offs, cols, e = _problem(n, rows=12, seed=7, maxlen=3)
    want = _finite_differences(loss, x, (grid, offs, cols, e), n)
    k = kernel(grad, plugins=P, boundscheck=boundscheck)
    for launch in range(3):
        dx = np.zeros_like(x)
        k[2, 32, "cpu"](x, dx, grid, offs, cols, e)
        np.testing.assert_allclose(dx, want, rtol=1e-6, atol=1e-6, err_msg=f"launch {launch}")
    assert counting_heap.live == {} and counting_heap.foreign == [] and counting_heap.overruns == 0
    if not boundscheck:
        assert counting_heap.mallocs == 0


def test_a_tape_past_the_arena_reaches_the_heap_and_is_freed(counting_heap):
    """Lists long enough that the while's frames outgrow the arena: the heap takes the rest, every block
    is given back, and the gradient is still the finite differences'."""
    n = 8
    x, grid, offs, cols, e = _problem(n, rows=8, seed=3, maxlen=40)
    x *= 0.02  # each while runs about 20 times
    want = _finite_differences(data_while, x, (grid, offs, cols, e), n)
    dx = np.zeros_like(x)
    kernel(k_data_while, plugins=P)[1, 32, "cpu"](x, dx, grid, offs, cols, e)
    np.testing.assert_allclose(dx, want, rtol=1e-6, atol=1e-6)
    assert counting_heap.mallocs > 0 and counting_heap.live == {} and counting_heap.foreign == []
    assert counting_heap.overruns == 0


@pytest.mark.parametrize("arena", [0, 1 << 16])
def test_the_arena_is_the_bound_the_kernel_gives(counting_heap, arena):
    """``EnzymeOptions(tape_arena=...)``: 0 sends every loop tape to the heap (a block per list and per
    while), 64 KiB holds the long lists' tapes that outgrow the default 1 KiB; the gradient is the same."""
    n = 8
    x, grid, offs, cols, e = _problem(n, rows=8, seed=3, maxlen=40)
    x *= 0.02
    want = _finite_differences(data_while, x, (grid, offs, cols, e), n)
    k = kernel(k_data_while, plugins=P, boundscheck=False, options=EnzymeOptions(tape_arena=arena))
    dx = np.zeros_like(x)
    k[1, 32, "cpu"](x, dx, grid, offs, cols, e)
    np.testing.assert_allclose(dx, want, rtol=1e-6, atol=1e-6)
    assert (counting_heap.mallocs > int(np.count_nonzero(np.diff(offs)))) == (arena == 0)
    assert counting_heap.live == {} and counting_heap.overruns == 0


def _blocks_on_cycles(fn) -> dict:
    """``{block label: [instruction text]}`` of the blocks of ``fn`` (parsed IR, printed back by LLVM, which
    numbers unnamed blocks) that lie on a cycle of its CFG (successors: the labels its terminator names)."""
    succ, body, label = {}, {}, None
    for line in str(fn).splitlines()[1:]:
        m = re.match(r"^([\w.$-]+):", line)
        if m:
            label = m.group(1)
            succ[label], body[label] = [], []
        elif label is not None and line.strip() and line.strip() != "}":
            body[label].append(line)
            succ[label] += re.findall(r"label %([\w.$-]+)", line)
    on_cycle = {}
    for start in succ:
        seen, stack = set(), list(succ[start])
        while stack:
            b = stack.pop()
            if b == start:
                on_cycle[start] = body[start]
                break
            if b not in seen:
                seen.add(b)
                stack.extend(succ.get(b, []))
    return on_cycle


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_no_malloc_on_a_cycle_of_the_ptx_kernel(name):
    _, grad = KERNELS[name]
    ir = kernel(grad, plugins=P).inspect_llvm(A, A, A, IA, IA, A)
    mod = llvm.parse_assembly(ir)
    fn = mod.get_function(grad.__name__)
    looped = _blocks_on_cycles(fn)
    assert looped, "the kernel has loops"
    for block, insts in looped.items():
        assert not any("@malloc(" in i for i in insts), f"malloc in loop block {block}"
        assert not any("@free(" in i for i in insts), f"free in loop block {block}"
    # past the arena, a heap block comes from an out-of-line cold helper
    spill = mod.get_function("__gpuc_ad_arena_spill") if "__gpuc_ad_arena_spill" in ir else None
    if spill is not None:
        assert "cold" in str(spill).split("{")[0] and "noinline" in str(spill).split("{")[0]



def test_a_particles_own_adjoint_is_added_once_after_its_neighbour_loop():
    """pair_energy reads px[i], py[i], pz[i] on every iteration: their adjoints are summed in registers and
    added with one atomic each when the loop's reverse ends; three atomics per neighbour remain (was six)."""
    ir = kernel(k_pair_energy, plugins=P).inspect_llvm(A, A, A, A, A, A, IA, IA)
    looped = _blocks_on_cycles(llvm.parse_assembly(ir).get_function("k_pair_energy"))
    assert sum(i.count("atomicrmw fadd") for insts in looped.values() for i in insts) == 3
    assert ir.count("atomicrmw fadd") == 6


def stored_in_loop(x, y, i):
    """A loop that writes memory (y[i], read again each iteration): adjoints are added as they come."""
    for k in range(i % 4 + 1):
        y[i] = y[i] * 0.5 + x[i] * x[(i + k + 1) % x.shape[0]]
    return y[i] * x[i]


def k_stored_in_loop(x, dx, y, dy):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, stored_in_loop, Duplicated(x, dx), Duplicated(y, dy), Const(i))


def test_a_loop_that_stores_keeps_adding_adjoints_per_iteration():
    n = 24
    rng = np.random.default_rng(2)
    x, y0 = rng.uniform(0.5, 1.5, n), rng.uniform(-1.0, 1.0, n)

    def total(v):
        y = y0.copy()
        return sum(stored_in_loop(v, y, i) for i in range(n))

    dx, dy = np.zeros(n), np.zeros(n)
    kernel(k_stored_in_loop, plugins=P, boundscheck=False)[1, 32, "cpu"](x, dx, y0.copy(), dy)
    fd, h = np.zeros(n), 1e-6
    for j in range(n):
        d = np.zeros(n)
        d[j] = h
        fd[j] = (total(x + d) - total(x - d)) / (2 * h)
    np.testing.assert_allclose(dx, fd, rtol=1e-6, atol=1e-6)


def shared_weight(x, w, m, i):
    """Every thread reads the same ``w[0]`` on each of ``m[0]`` iterations: its adjoint is summed per thread
    over the loop, then over the warp (shuffles) before one atomic add per warp."""
    s = 0.0
    v = x[i]
    for k in range(m[0]):
        s += w[0] * v * (k + 1.0) + w[1] * math.sin(s)
    return s


def k_shared_weight(x, dx, w, dw, m):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, shared_weight, Duplicated(x, dx), Duplicated(w, dw), Const(m), Const(i))


def test_a_weight_every_thread_reads_in_a_loop_gets_one_warp_sum_after_it():
    n = 64
    rng = np.random.default_rng(4)
    x, w = rng.uniform(0.5, 1.5, n), np.array([0.7, -0.3])
    dx, dw = np.zeros(n), np.zeros(2)
    m = np.array([4], dtype=np.int64)
    kernel(k_shared_weight, plugins=P, boundscheck=False)[2, 32, "cpu"](x, dx, w, dw, m)
    h, fdx, fdw = 1e-6, np.zeros(n), np.zeros(2)

    def total(xv, wv):
        return sum(shared_weight(xv, wv, m, i) for i in range(n))

    for j in range(n):
        d = np.zeros(n)
        d[j] = h
        fdx[j] = (total(x + d, w) - total(x - d, w)) / (2 * h)
    for j in range(2):
        d = np.zeros(2)
        d[j] = h
        fdw[j] = (total(x, w + d) - total(x, w - d)) / (2 * h)
    np.testing.assert_allclose(dx, fdx, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(dw, fdw, rtol=1e-6, atol=1e-7)
    ir = kernel(k_shared_weight, plugins=P).inspect_llvm(A, A, A, A, IA)
    looped = _blocks_on_cycles(llvm.parse_assembly(ir).get_function("k_shared_weight"))
    on_cycles = "\n".join(i for insts in looped.values() for i in insts)
    assert looped and "atomicrmw" not in on_cycles and "shfl.sync" not in on_cycles  # (two a step before)
    assert "shfl.sync.bfly" in ir  # the warp's sums after the loop
