"""Runtime helpers the derivatives call, defined as LLVM IR text appended to
the module (internal, always inlined): the tape stack and memcpy adjoints."""

from __future__ import annotations

import re

from gpucompiler.llvm import types as T
from gpucompiler.runtime.device_heap import FLAG as DEVICE_HEAP_FLAG

PREFIX = "__gpuc_ad_"
"""Names of the helpers: ``PREFIX + key``."""

TAPE_INLINE = 40
"""Bytes of caller memory (``enzyme_allocated``) from which a device's split-mode tape lives in it: the
header ``{ptr base, i64 sp, i64 cap, ptr fixed}`` (32 bytes) and the first block of the stack after it
(``fixed``: that block, which growth copies from but never frees)."""

#: the helper that stops a thread whose tape allocation failed (see ``out_of_heap`` below)
OUT_OF_HEAP = PREFIX + "out_of_heap"


def _trap_if_null(value: str, next_label: str, release: str = "") -> str:
    """IR lines (braces doubled, for ``str.format``) that stop the thread when allocation ``value``
    failed, after ``release`` (IR giving back the block the tape held): the tape never writes
    through null, on the CPU or on a device heap."""
    return (f"  %lost = icmp eq ptr {value}, null\n"
            f"  br i1 %lost, label %oom, label %{next_label}, "
            "!prof !{{!\"branch_weights\", i32 1, i32 2000}}\n"
            f"oom:\n{release}  call void @{OUT_OF_HEAP}()\n  unreachable\n")


def _copy_words(dst: str, src: str, nbytes: str, at: str) -> str:
    """IR lines copying ``nbytes`` from ``src`` to ``dst`` eight bytes at a time, from block ``at`` to a new
    block ``copied``. Tape blocks are 8-aligned and frames and pushes are whole 8-byte slots, so
    ``nbytes`` is a multiple of 8; ``llvm.memcpy`` of a size known only at run time becomes a byte loop on
    NVPTX whatever alignment it states."""
    return (f"  %cpn = lshr i64 {nbytes}, 3 ; copy {dst} {src} {nbytes}\n"
            "  %cpnone = icmp eq i64 %cpn, 0\n"
            "  br i1 %cpnone, label %copied, label %cpword\n"
            "cpword:\n"
            f"  %cpi = phi i64 [ 0, %{at} ], [ %cpi1, %cpword ]\n"
            f"  %cps = getelementptr inbounds i64, ptr {src}, i64 %cpi\n"
            "  %cpv = load i64, ptr %cps, align 8\n"
            f"  %cpd = getelementptr inbounds i64, ptr {dst}, i64 %cpi\n"
            "  store i64 %cpv, ptr %cpd, align 8\n"
            "  %cpi1 = add i64 %cpi, 1\n"
            "  %cpmore = icmp ult i64 %cpi1, %cpn\n"
            "  br i1 %cpmore, label %cpword, label %copied\n"
            "copied:\n")


#: a copy :func:`_copy_words` emits: its arguments (the next level of nested AD reads them back)
_WORD_COPY = re.compile(r"  %cpn = lshr i64 (\S+), 3 ; copy (\S+) (\S+) \S+\n.*?\ncopied:\n", re.S)


def _as_memcpy(text: str) -> str:
    """``text`` with each copy of :func:`_copy_words` as one ``llvm.memcpy``: what a derivative that is
    differentiated again holds (its rule types the bytes by the memory's; a loop of integer loads and
    stores of doubles would hide their derivatives)."""
    return _WORD_COPY.sub(lambda m: f"  call void @llvm.memcpy.p0.p0.i64(ptr align 8 {m[2]}, ptr align 8 {m[3]}, "
                                    f"i64 {m[1]}, i1 false)\n  br label %copied\ncopied:\n", text)


#: ``a OP b`` on sizes, trapping on unsigned overflow (OP: umul or uadd)
_CHECKED_SIZE = """
define internal i64 @{name}(i64 %a, i64 %b) alwaysinline {{
entry:
  %r = call {{ i64, i1 }} @llvm.OP.with.overflow.i64(i64 %a, i64 %b)
  %o = extractvalue {{ i64, i1 }} %r, 1
  br i1 %o, label %trap, label %ok, !prof !{{!"branch_weights", i32 1, i32 2000}}
trap:
  call void @llvm.trap()
  unreachable
ok:
  %v = extractvalue {{ i64, i1 }} %r, 0
  ret i64 %v
}}
"""

#: the tape stack ``{ptr base, i64 sp, i64 cap}``: reserve ``%n`` bytes, growing the block (to twice its
#: capacity, at least what is needed plus ``{reserve}`` bytes) by
#: ``{grow}`` (IR from ``%b``, the old base, and ``%nc``, the new capacity, to label ``grown``
#: with the new base in ``%nb``); braces doubled twice: formatted once here, once with the name
_PUSH = """
define internal ptr @{{name}}(ptr %t, i64 %n) alwaysinline {{{{
entry:
  %spp = getelementptr inbounds i8, ptr %t, i64 8
  %capp = getelementptr inbounds i8, ptr %t, i64 16
  %sp = load i64, ptr %spp, align 8
  %cap = load i64, ptr %capp, align 8
  %nsp = add i64 %sp, %n
  %full = icmp ugt i64 %nsp, %cap
  br i1 %full, label %grow, label %ok, !prof !{{{{!"branch_weights", i32 1, i32 2000}}}}
grow:
  %c2 = shl i64 %cap, 1
  %c3 = add i64 %nsp, {reserve}
  %big = icmp ugt i64 %c2, %c3
  %nc = select i1 %big, i64 %c2, i64 %c3
  %b = load ptr, ptr %t, align 8
{grow}grown:
  store ptr %nb, ptr %t, align 8
  store i64 %nc, ptr %capp, align 8
  br label %ok
ok:
  %base = load ptr, ptr %t, align 8
  store i64 %nsp, ptr %spp, align 8
  %w = getelementptr inbounds i8, ptr %base, i64 %sp
  ret ptr %w
}}}}
"""

#: host growth: realloc (which the engine differentiates again in higher-order AD)
_GROW_REALLOC = ("  %nb = call ptr @realloc(ptr %b, i64 %nc), !gpuc.ad.tape !{{}}\n"
                 + _trap_if_null("%nb", "grown"))

#: device growth (CUDA has no realloc): malloc + copy + free of the old block, unless the old block is the
#: caller's memory the tape started in (the header's fourth word, :data:`TAPE_INLINE`)
_GROW_COPY = ("  %nb = call ptr @malloc(i64 %nc), !gpuc.ad.tape !{{}}\n"
              + _trap_if_null("%nb", "copy", "  %ofixedp = getelementptr inbounds i8, ptr %t, i64 24\n"
                              "  %ofixed = load ptr, ptr %ofixedp, align 8\n"
                              "  %oheld = icmp ne ptr %b, %ofixed\n"
                              "  %ofree = select i1 %oheld, ptr %b, ptr null\n"
                              "  call void @free(ptr %ofree), !gpuc.ad.tape !{{}}\n")
              + "copy:\n"
              + _copy_words("%nb", "%b", "%sp", "copy")
              + "  %fixedp = getelementptr inbounds i8, ptr %t, i64 24\n"
              "  %fixed = load ptr, ptr %fixedp, align 8\n"
              "  %some = icmp ne ptr %b, null\n"
              "  %lent = icmp ne ptr %b, %fixed\n"
              "  %had = and i1 %some, %lent\n"
              "  br i1 %had, label %release, label %grown\n"
              "release:\n"
              "  call void @free(ptr %b), !gpuc.ad.tape !{{}}\n"
              "  br label %grown\n")

#: a loop cache array ``{ptr base, i64 capacity (frames), ptr inline}``: room for frame ``%k``,
#: growing by ``{grow}`` (IR from ``%nc`` frames of ``%bytes``, to label ``grown`` with the new base
#: in ``%nb``); braces doubled twice, as in :data:`_PUSH`
_LOOP_GROW = """
define internal ptr @{{name}}(ptr %t, i64 %k, i64 %frame) alwaysinline {{{{
entry:
  %capp = getelementptr inbounds i8, ptr %t, i64 8
  %cap = load i64, ptr %capp, align 8
  %full = icmp uge i64 %k, %cap
  br i1 %full, label %grow, label %ok, !prof !{{{{!"branch_weights", i32 1, i32 2000}}}}
grow:
  %c2 = shl i64 %cap, 1
  %nc = add i64 %c2, 16
  %bytes = mul i64 %nc, %frame
{grow}grown:
  store ptr %nb, ptr %t, align 8
  store i64 %nc, ptr %capp, align 8
  br label %ok
ok:
  %base = load ptr, ptr %t, align 8
  ret ptr %base
}}}}
"""

_LOOP_GROW_REALLOC = ("  %b = load ptr, ptr %t, align 8\n"
                      "  %nb = call ptr @realloc(ptr %b, i64 %bytes), !gpuc.ad.tape !{{}}\n"
                      + _trap_if_null("%nb", "grown"))

_LOOP_GROW_COPY = ("  %nb = call ptr @malloc(i64 %bytes), !gpuc.ad.tape !{{}}\n"
                   + _trap_if_null("%nb", "copy", "  %ob = load ptr, ptr %t, align 8\n"
                                   "  %oinlp = getelementptr inbounds i8, ptr %t, i64 16\n"
                                   "  %oinl = load ptr, ptr %oinlp, align 8\n"
                                   "  %oheld = icmp ne ptr %ob, %oinl\n"
                                   "  %ofree = select i1 %oheld, ptr %ob, ptr null\n"
                                   "  call void @free(ptr %ofree), !gpuc.ad.tape !{{}}\n")
                   + "copy:\n"
                   "  %b = load ptr, ptr %t, align 8\n"
                   "  %used = mul i64 %cap, %frame\n"
                   + _copy_words("%nb", "%b", "%used", "copy")
                   + "  %inlp = getelementptr inbounds i8, ptr %t, i64 16\n"
                   "  %inl = load ptr, ptr %inlp, align 8\n"
                   "  %heap = icmp ne ptr %b, %inl\n"
                   "  br i1 %heap, label %release, label %grown\n"
                   "release:\n"
                   "  call void @free(ptr %b), !gpuc.ad.tape !{{}}\n"
                   "  br label %grown\n")

#: name -> (function type, body text with {name})
HELPERS = {
    "push": (T.function(T.ptr(), [T.ptr(), T.i64]), _PUSH.format(grow=_GROW_REALLOC, reserve=4096)),
    # a device has a tape per thread (the kernels' split halves keep one per thread between launches): a
    # first block of what the push needs plus 64 bytes, not 4 KiB (2^24 threads would need 64 GiB of heap)
    "push_device": (T.function(T.ptr(), [T.ptr(), T.i64]), _PUSH.format(grow=_GROW_COPY, reserve=64)),
    "pop": (T.function(T.ptr(), [T.ptr(), T.i64]), """
define internal ptr @{name}(ptr %t, i64 %n) alwaysinline {{
entry:
  %spp = getelementptr inbounds i8, ptr %t, i64 8
  %sp = load i64, ptr %spp, align 8
  %nsp = sub i64 %sp, %n
  store i64 %nsp, ptr %spp, align 8
  %base = load ptr, ptr %t, align 8
  %w = getelementptr inbounds i8, ptr %base, i64 %nsp
  ret ptr %w
}}
"""),
    # loop cache arrays ``{ptr base, i64 capacity (frames), ptr inline}``, indexed by the loop's
    # iteration counter: on the host grown by realloc (the inline segment unused), on a device by
    # malloc + copy + free of the old block unless it is the inline segment (an alloca); the engine's
    # calls to malloc/free carry !gpuc.ad.tape, which the GPU validator accepts
    "loop_grow": (T.function(T.ptr(), [T.ptr(), T.i64, T.i64]), _LOOP_GROW.format(grow=_LOOP_GROW_REALLOC)),
    "loop_grow_device": (T.function(T.ptr(), [T.ptr(), T.i64, T.i64]), _LOOP_GROW.format(grow=_LOOP_GROW_COPY)),
    # the end of a grown loop array: freed unless it is still the inline segment
    "loop_free": (T.function(T.void, [T.ptr(), T.ptr()]), """
define internal void @{name}(ptr %p, ptr %inline) alwaysinline {{
entry:
  %heap = icmp ne ptr %p, %inline
  br i1 %heap, label %release, label %done
release:
  call void @free(ptr %p), !gpuc.ad.tape !{{}}
  br label %done
done:
  ret void
}}
"""),
    # a derivative's tape arena on a device (combined mode): an ``alloca`` of the call (local memory, which
    # the driver reserves once per launch) bumped by ``{ptr top, ptr end, ptr start}``; a block that does not
    # fit comes from the heap (tape_alloc); giving back a block of the arena is nothing (it ends with the call)
    "arena_alloc": (T.function(T.ptr(), [T.ptr(), T.i64]), """
define internal ptr @{name}(ptr %a, i64 %n) alwaysinline {{
entry:
  %top = load ptr, ptr %a, align 8
  %endp = getelementptr inbounds i8, ptr %a, i64 8
  %end = load ptr, ptr %endp, align 8
  %n15 = add i64 %n, 15
  %n16 = and i64 %n15, -16
  %ti = ptrtoint ptr %top to i64
  %ei = ptrtoint ptr %end to i64
  %room = sub i64 %ei, %ti
  %small = icmp uge i64 %n15, %n
  %fits0 = icmp ule i64 %n16, %room
  %fits = and i1 %small, %fits0
  br i1 %fits, label %take, label %heap, !prof !{{!"branch_weights", i32 2000, i32 1}}
take:
  %next = getelementptr inbounds i8, ptr %top, i64 %n16
  store ptr %next, ptr %a, align 8
  ret ptr %top
heap:
  %p = call ptr @__gpuc_ad_arena_spill(i64 %n)
  ret ptr %p
}}
"""),
    # past the arena: a heap block, taken and given back out of line (cold: the loops keep no malloc/free)
    "arena_spill": (T.function(T.ptr(), [T.i64]), """
define internal ptr @{name}(i64 %n) noinline cold {{
entry:
  %p = call ptr @__gpuc_ad_tape_alloc(i64 %n)
  ret ptr %p
}}
"""),
    "arena_free": (T.function(T.void, [T.ptr(), T.ptr()]), """
define internal void @{name}(ptr %a, ptr %p) alwaysinline {{
entry:
  %endp = getelementptr inbounds i8, ptr %a, i64 8
  %end = load ptr, ptr %endp, align 8
  %startp = getelementptr inbounds i8, ptr %a, i64 16
  %start = load ptr, ptr %startp, align 8
  %pi = ptrtoint ptr %p to i64
  %si = ptrtoint ptr %start to i64
  %ei = ptrtoint ptr %end to i64
  %above = icmp uge i64 %pi, %si
  %below = icmp ult i64 %pi, %ei
  %own = and i1 %above, %below
  %none = icmp eq ptr %p, null
  %keep = or i1 %own, %none
  br i1 %keep, label %done, label %release
release:
  call void @__gpuc_ad_arena_release(ptr %p)
  br label %done
done:
  ret void
}}
"""),
    "arena_release": (T.function(T.void, [T.ptr()]), """
define internal void @{name}(ptr %p) noinline cold {{
entry:
  call void @__gpuc_ad_tape_free(ptr %p)
  ret void
}}
"""),
    # a loop cache array (see loop_grow) growing inside the arena: to twice its frames plus 4, in place when
    # it is the arena's last block and the arena has room, else a new block from arena_alloc, the frames so
    # far copied and the old block given back (nothing when it is the arena's)
    "loop_grow_arena": (T.function(T.ptr(), [T.ptr(), T.i64, T.i64, T.ptr()]), """
define internal ptr @{name}(ptr %t, i64 %k, i64 %frame, ptr %a) alwaysinline {{
entry:
  %capp = getelementptr inbounds i8, ptr %t, i64 8
  %cap = load i64, ptr %capp, align 8
  %full = icmp uge i64 %k, %cap
  br i1 %full, label %grow, label %ok, !prof !{{!"branch_weights", i32 1, i32 2000}}
grow:
  %b = load ptr, ptr %t, align 8
  %c2 = shl i64 %cap, 1
  %nc = add i64 %c2, 4
  %bytes = mul i64 %nc, %frame
  %used = mul i64 %cap, %frame
  %top = load ptr, ptr %a, align 8
  %u15 = add i64 %used, 15
  %u16 = and i64 %u15, -16
  %bi = ptrtoint ptr %b to i64
  %bend = add i64 %bi, %u16
  %ti = ptrtoint ptr %top to i64
  %attop = icmp eq i64 %bend, %ti
  %some = icmp ne ptr %b, null
  %last = and i1 %attop, %some
  br i1 %last, label %extend, label %fresh
extend:
  %endp = getelementptr inbounds i8, ptr %a, i64 8
  %end = load ptr, ptr %endp, align 8
  %ei = ptrtoint ptr %end to i64
  %n15 = add i64 %bytes, 15
  %n16 = and i64 %n15, -16
  %room = sub i64 %ei, %bi
  %fits = icmp ule i64 %n16, %room
  br i1 %fits, label %bump, label %fresh
bump:
  %nend = getelementptr inbounds i8, ptr %b, i64 %n16
  store ptr %nend, ptr %a, align 8
  br label %grown
fresh:
  %nb1 = call ptr @__gpuc_ad_arena_alloc(ptr %a, i64 %bytes)
""" + _copy_words("%nb1", "%b", "%used", "fresh") + """  call void @__gpuc_ad_arena_free(ptr %a, ptr %b)
  br label %grown
grown:
  %nb = phi ptr [ %b, %bump ], [ %nb1, %copied ]
  store ptr %nb, ptr %t, align 8
  store i64 %nc, ptr %capp, align 8
  br label %ok
ok:
  %base = load ptr, ptr %t, align 8
  ret ptr %base
}}
"""),
    "tape_alloc": (T.function(T.ptr(), [T.i64]), """
define internal ptr @{name}(i64 %n) alwaysinline {{
entry:
  %p = call ptr @malloc(i64 %n), !gpuc.ad.tape !{{}}
"""+_trap_if_null("%p", "ok")+"""ok:
  ret ptr %p
}}
"""),
    "tape_free": (T.function(T.void, [T.ptr()]), """
define internal void @{name}(ptr %p) alwaysinline {{
entry:
  call void @free(ptr %p), !gpuc.ad.tape !{{}}
  ret void
}}
"""),
    "trip_check": (T.function(T.void, [T.i64, T.i64]), """
define internal void @{name}(i64 %k, i64 %trip) alwaysinline {{
entry:
  %bad = icmp uge i64 %k, %trip
  br i1 %bad, label %trap, label %ok, !prof !{{!"branch_weights", i32 1, i32 2000}}
trap:
  call void @llvm.trap()
  unreachable
ok:
  ret void
}}
"""),
    # split mode on a device with the tape in the caller's memory (``enzyme_allocated, n``, ``enzyme_tape, h``):
    # n >= TAPE_INLINE bytes hold the header and the first block of the stack (no malloc until it is full);
    # fewer hold the address of a header on the heap, as Enzyme's 8-byte convention
    "tape_open": (T.function(T.ptr(), [T.ptr(), T.i64]), ("""
define internal ptr @{name}(ptr %h, i64 %n) alwaysinline {{
entry:
  %inl = icmp uge i64 %n, TAPE_INLINE
  br i1 %inl, label %inline, label %heap
inline:
  %data = getelementptr inbounds i8, ptr %h, i64 32
  %cap = sub i64 %n, 32
  store ptr %data, ptr %h, align 8
  %spp = getelementptr inbounds i8, ptr %h, i64 8
  store i64 0, ptr %spp, align 8
  %capp = getelementptr inbounds i8, ptr %h, i64 16
  store i64 %cap, ptr %capp, align 8
  %fixedp = getelementptr inbounds i8, ptr %h, i64 24
  store ptr %data, ptr %fixedp, align 8
  ret ptr %h
heap:
  %t = call ptr @malloc(i64 32), !gpuc.ad.tape !{{}}
"""+_trap_if_null("%t", "ok")+"""ok:
  store {{ ptr, i64, i64, ptr }} zeroinitializer, ptr %t, align 8
  store ptr %t, ptr %h, align 8
  ret ptr %t
}}
""").replace("TAPE_INLINE", str(TAPE_INLINE))),
    "tape_header": (T.function(T.ptr(), [T.ptr(), T.i64]), """
define internal ptr @{name}(ptr %h, i64 %n) alwaysinline {{
entry:
  %inl = icmp uge i64 %n, TAPE_INLINE
  %p = load ptr, ptr %h, align 8
  %t = select i1 %inl, ptr %h, ptr %p
  ret ptr %t
}}
""".replace("TAPE_INLINE", str(TAPE_INLINE))),
    "tape_close": (T.function(T.void, [T.ptr(), T.i64]), """
define internal void @{name}(ptr %h, i64 %n) alwaysinline {{
entry:
  %inl = icmp uge i64 %n, TAPE_INLINE
  br i1 %inl, label %inline, label %heap
inline:
  %b = load ptr, ptr %h, align 8
  %fixedp = getelementptr inbounds i8, ptr %h, i64 24
  %fixed = load ptr, ptr %fixedp, align 8
  %grew = icmp ne ptr %b, %fixed
  br i1 %grew, label %release, label %done
release:
  call void @free(ptr %b), !gpuc.ad.tape !{{}}
  br label %done
heap:
  %t = load ptr, ptr %h, align 8
  %tb = load ptr, ptr %t, align 8
  call void @free(ptr %tb), !gpuc.ad.tape !{{}}
  call void @free(ptr %t), !gpuc.ad.tape !{{}}
  br label %done
done:
  ret void
}}
""".replace("TAPE_INLINE", str(TAPE_INLINE))),
    # a call through a function pointer differentiated as a call of %want (.allocators) reached another
    # function: the program stops with the note naming the call
    "check_callee": (T.function(T.void, [T.ptr(), T.ptr(), T.ptr()]), """
define internal void @{name}(ptr %f, ptr %want, ptr %note) {{
entry:
  %ok = icmp eq ptr %f, %want
  br i1 %ok, label %done, label %stop, !prof !{{!"branch_weights", i32 2000, i32 1}}
stop:
  %n = call i64 @strlen(ptr %note)
  %w = call i64 @write(i32 2, ptr %note, i64 %n)
  call void @abort()
  unreachable
done:
  ret void
}}
"""),
    # a tape allocation failed: the thread stops. On the host and in the grid emulation by a trap; on a
    # device whose target names a thread exit (``EngineOptions.thread_exit``, replacing THREAD_EXIT) the
    # thread sets the module's flag and exits, so that the context survives and the runtime raises
    # DeviceHeapError after the launch (a trap would lose the context). Never inlined: the path is cold
    "out_of_heap": (T.function(T.void, []), """
define internal void @{name}() noinline cold {{
entry:
  call void @llvm.trap()
  unreachable
}}
"""),
    "out_of_heap_exit": (T.function(T.void, []), """
define internal void @{name}() noinline cold {{
entry:
  store volatile i32 1, ptr addrspace(1) @""" + DEVICE_HEAP_FLAG + """, align 4
  call void @THREAD_EXIT()
  unreachable
}}
"""),
    # sizes of nest arrays (products of trip counts and frame sizes): an overflow traps
    "size_mul": (T.function(T.i64, [T.i64, T.i64]), _CHECKED_SIZE.replace("OP", "umul")),
    "size_add": (T.function(T.i64, [T.i64, T.i64]), _CHECKED_SIZE.replace("OP", "uadd")),
    "free": (T.function(T.void, [T.ptr()]), """
define internal void @{name}(ptr %t) alwaysinline {{
entry:
  %b = load ptr, ptr %t, align 8
  call void @free(ptr %b), !gpuc.ad.tape !{{}}
  ret void
}}
"""),
}

_MEMCPY_ADJ = """
define internal void @{name}(ptr %d, ptr %s, i64 %bytes) {{
entry:
  %n = udiv i64 %bytes, {size}
  %z = icmp eq i64 %n, 0
  br i1 %z, label %done, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %pd = getelementptr inbounds {ty}, ptr %d, i64 %i
  %ps = getelementptr inbounds {ty}, ptr %s, i64 %i
  %vd = load {ty}, ptr %pd
  %vs = load {ty}, ptr %ps
  %sum = fadd {ty} %vs, %vd
  store {ty} %sum, ptr %ps
  store {ty} 0.0, ptr %pd
  %i1 = add i64 %i, 1
  %c = icmp ult i64 %i1, %n
  br i1 %c, label %loop, label %done
done:
  ret void
}}
"""

#: :data:`HELPERS` for a derivative that is differentiated again (``EngineOptions.differentiated_again``)
HELPERS_AGAIN = {key: (fnty, _as_memcpy(text)) for key, (fnty, text) in HELPERS.items()}


def memcpy_adjoint(ty: T.Type):
    """(function type, text) of the memcpy adjoint for element ``ty``: ``s[i] += d[i]; d[i] = 0``."""
    size = {"double": 8, "float": 4}[str(ty)]
    return T.function(T.void, [T.ptr(), T.ptr(), T.i64]), _MEMCPY_ADJ.replace("{size}", str(size)).replace(
        "{ty}", str(ty))
