"""Atomic adds into a thread's own element become plain adds (``gpucompiler.targets.ptx_ownelements``).

Which adds get a plain path is read from the PTX (assembled by ptxas): every access of the array at
``a[grid(1)]`` or, in a grid-stride loop, ``a[grid(1) + k * gridsize(1)]``, nothing called that could touch
memory; the others keep their atomics. On a CUDA device
(marked ``gpu``) the sums against NumPy where the run-time check must keep the atomics: blocks of two
rows whose threads share ``grid(1)``, and two arrays over the same buffer.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gpucompiler import device as gd, kernel
from gpucompiler.llvm import parse
from gpucompiler.targets.ptx import PTXTarget
from gpucompiler.targets.ptx_ownelements import own_element_adds

F64 = np.zeros(4)


def own(x, dx, v):
    i = gd.grid(1)
    if i < x.shape[0]:
        gd.atomic_add(dx, i, x[i] * 2.0)
        gd.atomic_add(dx, i, v[i])


def neighbour(x, dx):
    i = gd.grid(1)
    if i < x.shape[0] - 1:
        gd.atomic_add(dx, i, x[i])
        gd.atomic_add(dx, i + 1, x[i])


def reads_another_element(x, dx):
    i = gd.grid(1)
    if 0 < i < x.shape[0]:
        gd.atomic_add(dx, i, dx[i - 1] * x[i])


def grid_stride(x, dx):
    i = gd.grid(1)
    step = gd.gridsize(1)
    while i < x.shape[0]:
        gd.atomic_add(dx, i, x[i] * 2.0)
        i += step


def one_address(x, out):
    i = gd.grid(1)
    if i < x.shape[0]:
        gd.atomic_add(out, 0, x[i])


def two_own(x, da, db):
    i = gd.grid(1)
    if i < x.shape[0]:
        gd.atomic_add(da, i, x[i])
        gd.atomic_add(db, i, 1.0)


def summed_then_own(x, dx, dw):
    i = gd.grid(1)
    if i < x.shape[0]:
        gd.atomic_add(dw, 0, x[i])      # summed per block, added at the block's end
        gd.atomic_add(dx, i, 2.0 * x[i])


def _ptx(fn, *args, **target):
    return kernel(fn, target=PTXTarget(**target)).inspect_asm(*args)


def _plain_adds(ptx: str) -> int:
    """Stores of ``old + v`` where ``old`` was loaded from the stored address (volatile: early in the block,
    ``ptx_ownelements.early_load``): the plain path."""
    loaded = {reg: at for reg, at in re.findall(r"ld\.(?:volatile\.)?global\.b64\s+(%\w+), \[(%\w+)\];", ptx)}
    sums = {out: (a, b) for out, a, b in re.findall(r"add\.rn\.f64\s+(%\w+), (%\w+|0d\w+), (%\w+|0d\w+);", ptx)}
    return sum(1 for at, v in re.findall(r"st\.global\.b64\s+\[(%\w+)\], (%\w+);", ptx)
               if any(loaded.get(r) == at for r in sums.get(v, ())))


def _global_atoms(ptx: str) -> int:
    return len(re.findall(r"^\s*(?:atom|red)\.global\.add", ptx, re.M))


def test_adds_into_the_threads_own_element_get_a_plain_path(check_ptx):
    ptx = _ptx(own, F64, F64, F64)
    check_ptx(ptx)
    assert _plain_adds(ptx) == 2, ptx
    assert "%nctaid.y" in ptx and "%ntid.z" in ptx  # the one-dimensional launch, checked at the kernel's start
    assert _global_atoms(ptx) >= 2  # the atomic path stays, for other launches


@pytest.mark.parametrize("fn, args", [(neighbour, (F64, F64)), (reads_another_element, (F64, F64)),
                                      (one_address, (F64, F64))])
def test_arrays_touched_elsewhere_keep_their_atomics(check_ptx, fn, args):
    ptx = _ptx(fn, *args)
    check_ptx(ptx)
    assert _plain_adds(ptx) == 0 and "%nctaid.y" not in ptx, ptx


def test_no_plain_path_without_aggregation(check_ptx):
    ptx = _ptx(own, F64, F64, F64, aggregate_atomics=False)
    check_ptx(ptx)
    assert _plain_adds(ptx) == 0 and _global_atoms(ptx) == 2


def test_other_written_arrays_are_checked_to_lie_elsewhere(check_ptx):
    ptx = _ptx(two_own, F64, F64, F64)
    check_ptx(ptx)
    assert _plain_adds(ptx) == 2
    assert len(re.findall(r"setp\.(?:le|ge|lt|gt)\.s64", ptx)) >= 2  # da's span against db's and back


def test_a_block_summed_address_counts_as_written(check_ptx):
    """dw[0]'s block sum reaches memory at the block's end: dx's plain path is checked to lie clear of dw."""
    ptx = _ptx(summed_then_own, F64, F64, F64)
    check_ptx(ptx)
    assert "blocksum" in ptx and _plain_adds(ptx) == 1
    assert len(re.findall(r"setp\.(?:le|ge|lt|gt)\.s64", ptx)) >= 2


_KERNEL_IR = """
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare void @opaque(ptr)

define void @k({ ptr, [1 x i64], [1 x i64] } %a, { ptr, [1 x i64], [1 x i64] } %b) {
entry:
  %c = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %n = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %cw = zext i32 %c to i64
  %nw = zext i32 %n to i64
  %tw = zext i32 %t to i64
  %m = mul i64 %nw, %cw
  %g = add i64 %tw, %m
  %off = shl i64 %g, 3
  %pa = extractvalue { ptr, [1 x i64], [1 x i64] } %a, 0
  %p = getelementptr i8, ptr %pa, i64 %off
  %r = atomicrmw fadd ptr %p, double 1.0 monotonic, align 8
  ret void
}
"""


def test_the_plain_add_reads_its_element_early_but_after_the_thread_wrote_it():
    """The old value is loaded (volatile) early in the add's block, its address computed first, or right
    after the thread's last access of the array before the add: here a store of 0.5 into the element."""
    module = parse(_KERNEL_IR)
    assert own_element_adds(module, module.functions["k"]) == 1
    entry = module.functions["k"].blocks[0].instructions
    load = next(i for i in entry if i.opcode == "load")
    assert load.is_volatile and load.operands[0].name == "p"
    text = _KERNEL_IR.replace("  %r = atomicrmw", "  store double 0.5, ptr %p, align 8\n  %r = atomicrmw")
    module = parse(text)
    assert own_element_adds(module, module.functions["k"]) == 1
    entry = module.functions["k"].blocks[0].instructions
    store, load = (next(i for i in entry if i.opcode == op) for op in ("store", "load"))
    assert entry.index(store) + 1 == entry.index(load) and load.operands[0] is store.operands[1]


@pytest.mark.parametrize("old, new, plain", [
    ("", "", 1),  # ntid * ctaid + tid, operands in another order than the code generator's
    ("%off = shl i64 %g, 3", "%off = mul i64 %g, 16", 1),  # every other element: still the thread's own
    ("%g = add i64 %tw, %m", "%g = add i64 %m, 1", 0),  # not the thread's index
    ("%off = shl i64 %g, 3", "%off = shl i64 %g, 2", 0),  # 4-byte steps, 8-byte adds: neighbours overlap
    ("  ret void", "  call void @opaque(ptr %pa)\n  ret void", 0),  # a call that may touch the array
    ("  ret void", "  %q = inttoptr i64 4096 to ptr\n  store double 0.0, ptr %q\n  ret void", 0),  # a wild store
    ("monotonic", "seq_cst", 0),  # an ordering the thread's own adds could not keep for others
    ("  ret void", "  %u = fadd double %r, 1.0\n  ret void", 0),  # the old value used
    ("  ret void", "  %pb = extractvalue { ptr, [1 x i64], [1 x i64] } %b, 0\n  %w = getelementptr i8, ptr %pb, "
                   "i64 8\n  store double 2.0, ptr %w\n  ret void", 1),  # b written: checked to lie apart
])
def test_which_adds_get_a_plain_path(old, new, plain):
    module = parse(_KERNEL_IR.replace(old, new) if old else _KERNEL_IR)
    assert own_element_adds(module, module.functions["k"]) == plain
    text = str(module)
    assert len(re.findall(r"load (?:volatile )?double, ptr %p", text)) == plain and "atomicrmw fadd ptr %p" in text
    if plain and "%b, 0" in new:  # a's span against b's: both arrays' shapes read in the flag
        assert text.count("extractvalue { ptr, [1 x i64], [1 x i64] } %b, 1, 0") == 1


_STRIDE_IR = """
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()

define void @k({ ptr, [1 x i64], [1 x i64] } %a, i64 %len) {
entry:
  %c = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %n = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %nc = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
  %cw = zext i32 %c to i64
  %nw = zext i32 %n to i64
  %tw = zext i32 %t to i64
  %ncw = zext i32 %nc to i64
  %m = mul i64 %cw, %nw
  %g = add i64 %m, %tw
  %N = mul i64 %ncw, %nw
  %pa = extractvalue { ptr, [1 x i64], [1 x i64] } %a, 0
  %start = add i64 %g, 0
  br label %loop
loop:
  %i = phi i64 [ %start, %entry ], [ %i.next, %loop ]
  %neg = icmp slt i64 %i, 0
  %wrap = select i1 %neg, i64 %len, i64 0
  %j = add i64 %wrap, %i
  %off = shl i64 %j, 3
  %p = getelementptr i8, ptr %pa, i64 %off
  %r = atomicrmw fadd ptr %p, double 1.0 monotonic, align 8
  %i2 = add i64 %i, %N
  %off2 = shl i64 %i2, 3
  %p2 = getelementptr i8, ptr %pa, i64 %off2
  %r2 = atomicrmw fadd ptr %p2, double 2.0 monotonic, align 8
  %step = shl i64 %N, 1
  %i.next = add i64 %i, %step
  %more = icmp slt i64 %i.next, %len
  br i1 %more, label %loop, label %done
done:
  ret void
}
"""


@pytest.mark.parametrize("old, new, plain", [
    ("", "", 2),  # a grid-stride loop: i = G + 2N m, its accesses at i (through Python's wrap) and i + N
    ("%step = shl i64 %N, 1", "%step = add i64 %N, 1", 0),  # a stride that is not a multiple of the grid
    ("%i2 = add i64 %i, %N", "%i2 = add i64 %i, 1", 0),  # i + 1: the next thread's element
    ("%start = add i64 %g, 0", "%start = add i64 %len, 0", 0),  # not the thread's index
    ("%start = add i64 %g, 0", "%start = sub i64 %g, %N", 0),  # may be negative: the wrap adds the length
    ("%neg = icmp slt i64 %i, 0", "%neg = icmp slt i64 %g, 0", 0),  # a select that is not the index's wrap
    ("%N = mul i64 %ncw, %nw", "%N = mul i64 %ncw, %tw", 0),  # not the grid's size
    ("%i = phi i64 [ %start, %entry ], [ %i.next, %loop ]",
     "%i = phi i64 [ %i.next, %loop ], [ %start, %entry ]", 2),  # the loop's value spelled first
])
def test_grid_stride_indices_are_the_threads_own(old, new, plain):
    module = parse(_STRIDE_IR.replace(old, new) if old else _STRIDE_IR)
    assert own_element_adds(module, module.functions["k"]) == plain
    text = str(module)
    assert len(re.findall(r"load (?:volatile )?double, ptr %p", text)) == plain and "atomicrmw fadd ptr %p2" in text


# -- on a GPU ---------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("n", [1000, 1 << 16])
def test_own_element_adds_match_numpy(n):
    rng = np.random.default_rng(n)
    x, v = rng.uniform(-1.0, 1.0, n), rng.uniform(-1.0, 1.0, n)
    dx = rng.uniform(-1.0, 1.0, n)
    want = dx + 2.0 * x + v
    kernel(own)[(n + 127) // 128, 128](x, dx, v)
    np.testing.assert_allclose(dx, want, rtol=1e-15, atol=1e-15)


def test_a_grid_stride_loop_gets_a_plain_path(check_ptx):
    ptx = _ptx(grid_stride, F64, F64)
    check_ptx(ptx)
    assert _plain_adds(ptx) == 1 and "%nctaid.y" in ptx, ptx


@pytest.mark.gpu
@pytest.mark.parametrize("n, blocks, threads", [(1000, 2, 128), (1 << 20, 80, 256), (4099, 3, 96)])
def test_grid_stride_adds_match_numpy(n, blocks, threads):
    rng = np.random.default_rng(n)
    x, dx = rng.uniform(-1.0, 1.0, n), rng.uniform(-1.0, 1.0, n)
    want = dx + 2.0 * x
    kernel(grid_stride)[blocks, threads](x, dx)  # each thread adds into n / (blocks * threads) elements
    np.testing.assert_allclose(dx, want, rtol=1e-15, atol=1e-15)


@pytest.mark.gpu
def test_two_rows_of_threads_sharing_an_index_keep_their_atomics():
    n = 4096
    x, v = np.linspace(0.0, 1.0, n), np.ones(n)
    dx = np.zeros(n)
    kernel(own)[(n + 63) // 64, (64, 2)](x, dx, v)  # threads (i, 0) and (i, 1) add into dx[i]
    np.testing.assert_allclose(dx, 2.0 * (2.0 * x + v), rtol=1e-15)


@pytest.mark.gpu
def test_two_arrays_over_one_buffer_keep_their_atomics():
    cp = pytest.importorskip("cupy")
    n = 1 << 20
    x = cp.asarray(np.arange(n, dtype=np.float64))
    buf = cp.zeros(n + 1)
    kernel(two_own)[n // 256, 256](x, buf[:n], buf[1:])  # buf[k] gets x[k] from thread k, 1.0 from thread k - 1
    want = np.concatenate([np.arange(n, dtype=np.float64), [0.0]]) + np.concatenate([[0.0], np.ones(n)])
    np.testing.assert_array_equal(cp.asnumpy(buf), want)


@pytest.mark.gpu
def test_an_own_element_over_a_block_summed_address_keeps_its_atomic():
    cp = pytest.importorskip("cupy")
    n = 1 << 16
    x = cp.asarray(np.linspace(0.0, 1.0, n))
    buf = cp.zeros(n)
    kernel(summed_then_own)[n // 256, 256](x, buf, buf[:1])  # dw[0] is dx[0]
    want = 2.0 * np.linspace(0.0, 1.0, n)
    want[0] += float(x.sum())
    np.testing.assert_allclose(cp.asnumpy(buf), want, rtol=1e-12)
