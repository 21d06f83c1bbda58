"""The AD tape's ``malloc``/``free`` on AMD GPUs: a bump allocator in a heap the runtime hands over.

ROCm's own device ``malloc`` (ockl's ``__ockl_dm_alloc``) needs inline
assembly that llvmlite's AMDGPU object writer cannot assemble, so a kernel
whose AD tape grows at run time gets this instead: ``malloc(n)`` takes
``n`` bytes (rounded up to 16) from :data:`HEAP` = ``{i64 base, i64 size,
i64 used}`` with one atomic add and returns null when the heap is spent (the
tape then stops the thread: a trap, reported by the runtime); ``free`` gives
nothing back: the runtime (:mod:`gpucompiler.runtime.hip`) resets ``used``
before each launch, so a launch's tapes live as long as the launch. Only a
module whose every ``malloc``/``free`` is the AD tape's gets them; other
allocation stays a validation error.
"""

from __future__ import annotations

HEAP = "gpuc_amdgpu_heap"
"""The global ``{i64 base, i64 size, i64 used}`` (global memory) the runtime fills before a launch."""
ALIGN = 16

HEAP_IR = f"""
@{HEAP} = addrspace(1) externally_initialized global {{ i64, i64, i64 }} zeroinitializer, align 8

define ptr @malloc(i64 %n) {{
entry:
  %huge = icmp ugt i64 %n, {(1 << 62)}
  br i1 %huge, label %spent, label %take

take:
  %rounded = add i64 %n, {ALIGN - 1}
  %bytes = and i64 %rounded, -{ALIGN}
  %usedp = getelementptr inbounds {{ i64, i64, i64 }}, ptr addrspace(1) @{HEAP}, i64 0, i32 2
  %old = atomicrmw add ptr addrspace(1) %usedp, i64 %bytes syncscope("agent") monotonic, align 8
  %end = add i64 %old, %bytes
  %sizep = getelementptr inbounds {{ i64, i64, i64 }}, ptr addrspace(1) @{HEAP}, i64 0, i32 1
  %size = load i64, ptr addrspace(1) %sizep, align 8
  %fits = icmp ule i64 %end, %size
  br i1 %fits, label %ok, label %spent

ok:
  %base = load i64, ptr addrspace(1) @{HEAP}, align 8
  %address = add i64 %base, %old
  %p = inttoptr i64 %address to ptr
  ret ptr %p

spent:
  ret ptr null
}}

define void @free(ptr %p) {{
  ret void
}}
"""
"""The allocator's IR (the target's triple and data layout are prepended)."""
