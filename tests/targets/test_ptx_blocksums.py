"""Atomic adds to one address summed per block (``gpucompiler.targets.ptx_blocksums``).

Which kernels get a block's sum is read from their PTX (assembled by ptxas): one address every thread
computes alike, nothing the thread runs afterwards reading or storing memory that address could be; the
others keep the warp's sum. The sums themselves, marked ``gpu``, on a CUDA device (``scripts/gpu_check.sh``)
against NumPy and against the same kernels compiled without aggregation: partial last blocks, 2-D blocks,
early returns, integer counts.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpucompiler import device as gd, kernel
from gpucompiler.targets.ptx import PTXTarget


def one_address(x, out):
    i = gd.grid(1)
    if i < x.shape[0]:
        gd.atomic_add(out, 0, x[i] * x[i])


def early_return(x, out):
    i = gd.grid(1)
    if i >= x.shape[0]:
        return
    if x[i] < 0.0:
        return
    gd.atomic_add(out, 1, x[i])


def count_and_sum(x, count, total):
    i = gd.grid(1)
    if i < x.shape[0]:
        v = x[i]
        if v > 0.5:
            gd.atomic_add(count, 0, 1)
            gd.atomic_add(total, 0, v)


def grid_2d(a, out):
    i, j = gd.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        gd.atomic_add(out, 0, a[i, j])


def two_addresses(x, out):
    i = gd.grid(1)
    if i < x.shape[0]:
        gd.atomic_add(out, i % 2, x[i])


def read_after(x, out, y):
    i = gd.grid(1)
    if i < x.shape[0]:
        gd.atomic_add(out, 0, x[i])
        y[i] = out[0]


def store_after(x, out):
    i = gd.grid(1)
    if i < x.shape[0]:
        gd.atomic_add(out, 0, x[i])
        out[1] = x[i]


def with_a_barrier(x, out):
    i = gd.grid(1)
    if i >= x.shape[0]:
        return                          # before the others' syncthreads: the exit's barrier would pair with it
    s = gd.shared_array(32, np.float64)
    s[gd.threadIdx.x % 32] = x[i]
    gd.syncthreads()
    gd.atomic_add(out, 0, s[0])


def reads_itself_in_a_loop(x, out, steps):
    i = gd.grid(1)
    if i < x.shape[0]:
        for k in range(steps):
            gd.atomic_add(out, 0, out[0] * k + x[i])  # (out[1] would be read once, before the loop)


def other_arrays_after(x, out, y):
    i = gd.grid(1)
    if i < x.shape[0]:
        gd.atomic_add(out, 0, x[i])
        y[i] = 2.0 * x[i]               # x and y could be out's memory: checked when the kernel starts


F64 = np.zeros(4)
I64 = np.zeros(4, dtype=np.int64)


def _ptx(fn, *args, **target):
    return kernel(fn, target=PTXTarget(**target)).inspect_asm(*args)


def _atoms(ptx: str) -> tuple[int, int]:
    lines = [ln.strip() for ln in ptx.splitlines()]
    return (sum(ln.startswith(("atom.shared", "red.shared")) for ln in lines),
            sum(ln.startswith(("atom.global", "red.global")) for ln in lines))


@pytest.mark.parametrize("fn, args", [(one_address, (F64, F64)), (early_return, (F64, F64)),
                                      (grid_2d, (np.zeros((4, 4)), F64))])
def test_one_address_sums_per_block(check_ptx, fn, args):
    ptx = _ptx(fn, *args)
    check_ptx(ptx)
    assert "gpuc_$_blocksum_$_0" in ptx and "barrier.sync" in ptx and "bar.sync" in ptx
    assert _atoms(ptx) == (1, 1)  # the warp's sum into the block's slot; thread 0 adds the block's sum


def test_an_integer_count_and_a_float_sum_get_a_slot_each(check_ptx):
    ptx = _ptx(count_and_sum, F64, I64, F64)
    check_ptx(ptx)
    assert "gpuc_$_blocksum_$_1" in ptx and _atoms(ptx) == (2, 2)
    assert "atom.shared.add.u64" in ptx or "red.shared.add.u64" in ptx


@pytest.mark.parametrize("fn, args", [(two_addresses, (F64, F64)), (read_after, (F64, F64, F64)),
                                      (store_after, (F64, F64)), (reads_itself_in_a_loop, (F64, F64, 3)),
                                      (with_a_barrier, (F64, F64))],
                         ids=["address-per-thread", "read-after", "store-after", "loop-reads-again", "own-barrier"])
def test_kernels_that_could_see_the_delay_keep_the_warp_sum(check_ptx, fn, args):
    ptx = _ptx(fn, *args)
    check_ptx(ptx)
    assert "blocksum" not in ptx and "barrier.sync" not in ptx
    shared, glob = _atoms(ptx)
    assert shared == 0 and glob >= 1


def test_other_arrays_used_after_the_add_are_checked_to_lie_elsewhere_at_run_time(check_ptx):
    ptx = _ptx(other_arrays_after, F64, F64, F64)
    check_ptx(ptx)
    lines = [ln.strip() for ln in ptx.splitlines()]
    assert "gpuc_$_blocksum_$_0" in ptx and "barrier.sync" in ptx
    assert sum(ln.startswith(("atom.add.f64", "red.add.f64")) for ln in lines) == 1  # the slot, or out[0]: chosen
    assert sum(ln.startswith(("atom.global", "red.global")) for ln in lines) == 1      # the block's sum, when clear


def test_not_below_sm_70_nor_without_aggregation(check_ptx):
    ptx = _ptx(one_address, F64, F64, capability=(6, 1), ptx_version=70)  # (no non-aligned barrier there)
    assert ".target sm_61" in ptx and "blocksum" not in ptx and "barrier.sync" not in ptx and "shfl.sync" in ptx
    ptx = _ptx(one_address, F64, F64, aggregate_atomics=False)
    check_ptx(ptx)
    assert "blocksum" not in ptx and "barrier.sync" not in ptx and "shfl.sync" not in ptx


# -- on a GPU ---------------------------------------------------------------------------------------------
def _both(fn, grid, block, *args):
    """``fn`` launched as compiled (block sums) and without aggregation, on copies of ``args``."""
    outs = []
    for target in (PTXTarget(), PTXTarget(aggregate_atomics=False)):
        copies = [a.copy() for a in args]
        kernel(fn, target=target)[grid, block](*copies)
        outs.append(copies)
    return outs


@pytest.mark.gpu
@pytest.mark.parametrize("n, block", [(1000, 256), (1 << 16, 128), (33, 64), (4096 * 3 + 7, 1024)])
def test_block_sums_on_the_device_match_numpy(n, block):
    rng = np.random.default_rng(n)
    x = rng.uniform(-1.0, 1.0, n)
    grid = (n + block - 1) // block
    (got, ref) = _both(one_address, grid, block, x, np.zeros(1))
    assert np.isclose(got[1][0], np.sum(x * x), rtol=1e-12) and np.isclose(got[1][0], ref[1][0], rtol=1e-12)
    (got, _) = _both(early_return, grid, block, x, np.zeros(2))
    assert got[1][0] == 0.0 and np.isclose(got[1][1], np.sum(x[x >= 0.0]), rtol=1e-12)
    (got, _) = _both(count_and_sum, grid, block, x, np.zeros(1, dtype=np.int64), np.zeros(1))
    assert got[1][0] == np.count_nonzero(x > 0.5) and np.isclose(got[2][0], np.sum(x[x > 0.5]), rtol=1e-12)
    (got, _) = _both(other_arrays_after, grid, block, x, np.zeros(1), np.zeros(n))
    assert np.isclose(got[1][0], np.sum(x), rtol=1e-12) and np.array_equal(got[2], 2.0 * x)


@pytest.mark.gpu
def test_arrays_over_the_added_address_take_the_per_warp_path():
    cp = pytest.importorskip("cupy")
    n = 1000
    x = cp.asarray(np.linspace(0.0, 1.0, n))
    buf = cp.zeros(n + 1)
    out, y = buf[0:1], buf[1:]          # y's span starts next to out[0]: not clear of it
    kernel(other_arrays_after)[4, 256](x, out, y)
    assert np.isclose(float(out[0]), float(x.sum()), rtol=1e-12)
    assert np.array_equal(cp.asnumpy(y), 2.0 * cp.asnumpy(x))
    out2, y2 = cp.zeros(1), cp.zeros(n)  # apart: the block's sum
    kernel(other_arrays_after)[4, 256](x, out2, y2)
    assert np.isclose(float(out2[0]), float(x.sum()), rtol=1e-12) and np.array_equal(cp.asnumpy(y2), cp.asnumpy(y))


@pytest.mark.gpu
def test_two_dimensional_blocks_on_the_device():
    a = np.random.default_rng(2).uniform(0.0, 1.0, (300, 77))
    (got, _) = _both(grid_2d, (19, 5), (16, 16), a, np.zeros(1))
    assert np.isclose(got[1][0], a.sum(), rtol=1e-12)
