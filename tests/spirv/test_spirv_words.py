"""Memory kept as 32-bit words (``targets/spirv/logical.py``: the tape heap and the tape's byte arrays):
values of every width stored into one byte array and read back, run on the CPU before and after the
rebuild (the rebuilt accesses are plain loads and stores of an ``i32`` array there), on random inputs.
Then the closed world of pointers kept in memory (``targets/spirv/heap.py``): the heap's are offsets,
a storage buffer's is refused."""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numpy as np
import pytest

from gpucompiler.llvm import parse
from gpucompiler.llvm.binding import initialize_native
from gpucompiler.targets.spirv.heap import Heap, binding
from gpucompiler.targets.spirv.logical import to_logical
from gpucompiler.targets.spirv.lower import _roots

#: a double, a flag, a byte, a half word and a word side by side, an i64 with one byte and one half
#: word overwritten inside it, then every value read back at its width (and two bytes read as one i16)
SOURCE = """
define i64 @f(double %d, i8 %c, i16 %h, i32 %w, i1 %flag, i64 %q) {
entry:
  %a = alloca [24 x i8], align 16
  store double %d, ptr %a, align 8
  %p8 = getelementptr i8, ptr %a, i64 8
  store i1 %flag, ptr %p8, align 1
  %p9 = getelementptr i8, ptr %a, i64 9
  store i8 %c, ptr %p9, align 1
  %p10 = getelementptr i8, ptr %a, i64 10
  store i16 %h, ptr %p10, align 2
  %p12 = getelementptr i8, ptr %a, i64 12
  store i32 %w, ptr %p12, align 4
  %p16 = getelementptr i8, ptr %a, i64 16
  store i64 %q, ptr %p16, align 8
  %p19 = getelementptr i8, ptr %a, i64 19
  store i8 %c, ptr %p19, align 1
  %p22 = getelementptr i8, ptr %a, i64 22
  store i16 %h, ptr %p22, align 2
  %rd = load double, ptr %a, align 8
  %bd = bitcast double %rd to i64
  %rf = load i1, ptr %p8, align 1
  %bf = zext i1 %rf to i64
  %rch = load i16, ptr %p9, align 1
  %bch = zext i16 %rch to i64
  %rw = load i32, ptr %p12, align 4
  %bw = zext i32 %rw to i64
  %rq = load i64, ptr %p16, align 8
  %s1 = shl i64 %bf, 1
  %s2 = mul i64 %bch, 1000003
  %s3 = mul i64 %bw, 998244353
  %s4 = mul i64 %rq, 3
  %x1 = xor i64 %bd, %s1
  %x2 = xor i64 %x1, %s2
  %x3 = xor i64 %x2, %s3
  %x4 = xor i64 %x3, %s4
  ret i64 %x4
}
"""


def compiled(text: str):
    initialize_native()
    mod = llvm.parse_assembly(f'target triple = "{llvm.get_process_triple()}"\n' + text)
    mod.verify()
    tm = llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine()
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    fn = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_double, ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32,
                          ctypes.c_bool, ctypes.c_uint64)(engine.get_function_address("f"))
    return fn, engine


@pytest.fixture(scope="module")
def both():
    model = parse(SOURCE)
    entry = model.functions["f"]
    assert to_logical(entry, _roots(model, entry, -1, None)) == []
    text = str(model)
    assert "[6 x i32]" in text and "[24 x i8]" not in text  # the byte array became words
    return compiled(SOURCE), compiled(text)


def test_values_of_every_width_in_one_byte_array_read_back_alike(both):
    (before, _), (after, _) = both
    rng = np.random.default_rng(7)
    for _ in range(200):
        args = (float(rng.normal()) * 10.0 ** int(rng.integers(-30, 30)), int(rng.integers(0, 256)),
                int(rng.integers(0, 1 << 16)), int(rng.integers(0, 1 << 32)), bool(rng.integers(0, 2)),
                int(rng.integers(0, 1 << 63)) * 2 + int(rng.integers(0, 2)))
        assert after(*args) == before(*args), args


# -- the closed world of pointers kept in memory -----------------------------------------------------
KEEPS = """
declare ptr addrspace(11) @gpuc.spirv.buffer(i32)
declare ptr @gpuc.spirv.malloc(i64)

define void @f(i64 %n) {
entry:
  %b = call ptr addrspace(11) @gpuc.spirv.buffer(i32 0)
  %data = addrspacecast ptr addrspace(11) %b to ptr
  %block = call ptr @gpuc.spirv.malloc(i64 64)
  %next = call ptr @gpuc.spirv.malloc(i64 %n)
  store ptr KEPT, ptr %block, align 8
  %back = load ptr, ptr %block, align 8
  %slot = getelementptr i8, ptr %back, i64 8
  store double 1.0, ptr %slot, align 8
  ret void
}
"""


def lowered(kept: str) -> list[str]:
    model = parse(KEEPS.replace("KEPT", kept))
    entry = model.functions["f"]
    tape = Heap(model, entry, arrays=1)
    problems = tape.lower() + to_logical(entry, _roots(model, entry, binding(1), tape))
    if not problems:
        text = str(model)
        llvm.parse_assembly(text).verify()
        assert "store ptr" not in text and "load ptr" not in text and "ptrtoint" not in text
    return problems


def test_a_heap_pointer_kept_in_memory_is_its_offset():
    assert lowered("%next") == []


def test_a_storage_buffer_pointer_kept_in_memory_is_refused():
    problems = lowered("%data")
    assert len(problems) == 1 and "stored to memory" in problems[0] and "storage buffer 0" in problems[0]
