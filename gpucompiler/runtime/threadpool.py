"""The process's worker pool for parallel regions (``prange`` loops, ``parallel_for``/``parallel_reduce``).

Generated code runs a region by calling the function whose address is in the
slot named :data:`POOL_SYMBOL` (reached by name, so the IR holds no address;
whichever of this module and the language's
:func:`~gpucompiler.language.python.parallel.pool_slot` loads first registers
it, the other finds it) as ``run(chunk, ctxs, stride, count)``: ``chunk`` is
called once for each ``ctxs + k * stride``, ``0 <= k < count``, and ``run``
returns when every call has returned. Until the first region the slot holds
a ctypes function that compiles the pool (:data:`POOL_IR`, LLVM IR through
the CPU loader at ``-O0``, about 10 ms once per process) and puts its
``gpuc_pool_run`` in the slot.

``gpuc_pool_run``:

* the calling thread runs chunk 0, then it and the workers claim the
  other chunks one at a time (a compare-and-swap of a word holding the
  region's generation and the next chunk), so a chunk no worker has
  started yet (a worker asleep, or waiting for a CPU) is run by the caller
  instead of waited for; which thread runs a chunk changes no result (each
  chunk has its own record, combined in chunk order);
* a region of ``count`` chunks has ``count - 1`` workers, started at the
  first region that needs them and kept for the life of the process
  (detached POSIX threads named :data:`THREAD_NAME`, every signal blocked,
  so they never hold up the exit); when no worker can be started the
  calling thread runs every chunk;
* a region is published by one atomic store of a word holding a generation
  and the number of chunks; idle workers spin on it for :data:`SPIN`
  pauses (:data:`THROTTLED` when the region had more threads than the
  process has CPUs), then sleep on a condition variable that the next region
  broadcasts only when somebody sleeps; the caller waits for the chunks the
  same way (a count the workers decrement);
* a region inside a region (a ``prange`` in a function called from a
  ``prange`` body, on a worker or on the calling thread: a thread-specific
  key says so) runs its chunks serially, in chunk order, on its thread;
* regions entered from several threads at once take turns (one mutex per
  pool): each runs on every worker, none waits on another's chunks;
* a forked child forgets the pool (``os.register_at_fork``: CPython runs
  it in the child of ``os.fork``, of ``multiprocessing`` and of any C
  ``fork`` followed by ``PyOS_AfterFork_Child``): its first region starts
  new workers;
* a worker attaches itself to the interpreter once, at its start
  (``PyGILState_Ensure``, then ``PyEval_SaveThread``): chunks run without
  the GIL, and one that fails or touches Python objects takes it through
  that thread state (the chunk trampoline fetches its exception). After
  the interpreter's finalization no region starts (no Python code runs),
  so the workers, asleep, never touch it again.
"""
# llvmlite ships no type information: its members are untyped
# pyright: reportUnknownMemberType=false, reportUnknownArgumentType=false, reportMissingTypeStubs=false

from __future__ import annotations

import ctypes
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

import llvmlite.binding as llvm

POOL_SYMBOL = "gpuc_parallel_pool"
"""the slot's name (the language's ``POOL_SYMBOL``: this module loads without the language's rules)"""
RUN = "gpuc_pool_run"
"""the pool's entry point, ``void(ptr chunk, ptr ctxs, i64 stride, i64 count)``"""
INIT = "gpuc_pool_init"
"""called once after loading with the CPUs the process may use: makes the thread-specific key (0: done)"""
FORGET = "gpuc_pool_forget"
"""run in a forked child (``os.register_at_fork``): the parent's pool is dropped, the next region makes one"""
THREAD_NAME = "gpuc-pool"
"""the workers' name (``/proc/self/task/*/comm``, ``top -H``)"""
SPIN = 4096
"""pauses an idle worker (or a caller waiting for its chunks) spins before it sleeps"""
THROTTLED = 64
"""the same when the last region had more threads than the process has CPUs (spinning would take the
CPU from a thread that has a chunk to run)"""
COUNT_BITS = 13
"""the low bits of the published word that hold the chunk count (regions have at most 4096)"""

_PAUSE = {"x86_64": ("llvm.x86.sse2.pause", ""), "aarch64": ("llvm.aarch64.hint", "i32 1"),
          "arm64": ("llvm.aarch64.hint", "i32 1")}
"""each processor's spin-wait hint: an intrinsic and its arguments"""
_RUN_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
_CHUNK_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_log = logging.getLogger(__name__)


def _slot() -> ctypes.c_void_p:
    """The slot named :data:`POOL_SYMBOL`, registered here if the language did not register it first."""
    address = llvm.address_of_symbol(POOL_SYMBOL)
    if address is None:
        _SLOTS.append((ctypes.c_void_p * 1)())
        address = ctypes.addressof(_SLOTS[-1])
        llvm.add_symbol(POOL_SYMBOL, address)
    return ctypes.c_void_p.from_address(address)


_SLOTS: list = []  # the slot this module made, kept alive

# The pool, 768 bytes: workers (0, under the region lock), the published word (64), chunk/ctxs/stride (72,
# 80, 88), the spin limit (96), chunks left (128), the claim word (136), sleeping workers (192), caller asleep (200), the region lock (256), the
# sleep mutex (384), the wake (512) and done (640) condition variables (128 bytes each: any libc's fit).
POOL_IR = r"""
@current = internal global ptr null, align 8
@create_lock = internal global [128 x i8] zeroinitializer, align 16
@key = internal global i32 0, align 4
@cpus = internal global i64 1, align 8
@name = internal constant [NAME_SIZE x i8] c"THREADNAME\00"

declare i32 @pthread_mutex_init(ptr, ptr)
declare i32 @pthread_mutex_lock(ptr)
declare i32 @pthread_mutex_unlock(ptr)
declare i32 @pthread_cond_init(ptr, ptr)
declare i32 @pthread_cond_wait(ptr, ptr)
declare i32 @pthread_cond_broadcast(ptr)
declare i32 @pthread_cond_signal(ptr)
declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i32 @pthread_detach(i64)
declare i32 @pthread_key_create(ptr, ptr)
declare ptr @pthread_getspecific(i32)
declare i32 @pthread_setspecific(i32, ptr)
declare i32 @pthread_sigmask(i32, ptr, ptr)
declare i32 @pthread_setname_np(i64, ptr)
declare i32 @sigfillset(ptr)
declare ptr @calloc(i64, i64)
declare void @free(ptr)
declare i32 @PyGILState_Ensure()
declare ptr @PyEval_SaveThread()
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
PAUSE_DECLARATION

define internal void @pause() alwaysinline {
PAUSE_CALL
  ret void
}

; chunks from <= k < to, one after another, on this thread
define internal void @serial(ptr %fn, ptr %ctxs, i64 %stride, i64 %from, i64 %to) {
entry:
  br label %head
head:
  %k = phi i64 [ %from, %entry ], [ %k1, %body ]
  %more = icmp slt i64 %k, %to
  br i1 %more, label %body, label %done
body:
  %off = mul i64 %k, %stride
  %ctx = getelementptr i8, ptr %ctxs, i64 %off
  call void %fn(ptr %ctx)
  %k1 = add i64 %k, 1
  br label %head
done:
  ret void
}

; a forked child: no worker of the parent's pool exists there, and its locks may be held
define void @gpuc_pool_forget() {
  store ptr null, ptr @current, align 8
  call void @llvm.memset.p0.i64(ptr @create_lock, i8 0, i64 128, i1 false)
  ret void
}

define i32 @gpuc_pool_init(i64 %cpus) {
  store i64 %cpus, ptr @cpus, align 8
  %rc = call i32 @pthread_key_create(ptr @key, ptr null)
  ret i32 %rc
}

define internal ptr @create() {
entry:
  call i32 @pthread_mutex_lock(ptr @create_lock)
  %p0 = load atomic ptr, ptr @current acquire, align 8
  %have = icmp ne ptr %p0, null
  br i1 %have, label %out, label %make
make:
  %p = call ptr @calloc(i64 1, i64 768)
  %ok = icmp ne ptr %p, null
  br i1 %ok, label %init, label %out
init:
  %rl = getelementptr i8, ptr %p, i64 256
  %m = getelementptr i8, ptr %p, i64 384
  %wake = getelementptr i8, ptr %p, i64 512
  %done = getelementptr i8, ptr %p, i64 640
  call i32 @pthread_mutex_init(ptr %rl, ptr null)
  call i32 @pthread_mutex_init(ptr %m, ptr null)
  call i32 @pthread_cond_init(ptr %wake, ptr null)
  call i32 @pthread_cond_init(ptr %done, ptr null)
  store atomic ptr %p, ptr @current release, align 8
  br label %out
out:
  %r = phi ptr [ %p0, %entry ], [ null, %make ], [ %p, %init ]
  call i32 @pthread_mutex_unlock(ptr @create_lock)
  ret ptr %r
}

; run chunks of generation gen (of count) until none is left to claim: each claim is one compare-and-swap of
; the claim word (the generation and the next chunk), so a thread that wakes late, or that belongs to a
; region already finished, claims nothing; the last chunk to finish wakes a caller asleep
define internal void @take(ptr %p, i64 %gen, i64 %count) {
entry:
  %claimp = getelementptr i8, ptr %p, i64 136
  %fnp = getelementptr i8, ptr %p, i64 72
  %ctxsp = getelementptr i8, ptr %p, i64 80
  %stridep = getelementptr i8, ptr %p, i64 88
  %remp = getelementptr i8, ptr %p, i64 128
  %waitp = getelementptr i8, ptr %p, i64 200
  %m = getelementptr i8, ptr %p, i64 384
  %done = getelementptr i8, ptr %p, i64 640
  br label %claim
claim:
  %c = load atomic i64, ptr %claimp monotonic, align 8
  %cgen = lshr i64 %c, BITS
  %current = icmp eq i64 %cgen, %gen
  %k = and i64 %c, MASK
  %more = icmp slt i64 %k, %count
  %open = and i1 %current, %more
  br i1 %open, label %try, label %out
try:
  %c1 = add i64 %c, 1
  %pair = cmpxchg ptr %claimp, i64 %c, i64 %c1 acq_rel monotonic, align 8
  %won = extractvalue { i64, i1 } %pair, 1
  br i1 %won, label %run, label %claim
run:
  %fn = load ptr, ptr %fnp, align 8
  %ctxs = load ptr, ptr %ctxsp, align 8
  %stride = load i64, ptr %stridep, align 8
  %off = mul i64 %k, %stride
  %ctx = getelementptr i8, ptr %ctxs, i64 %off
  call void %fn(ptr %ctx)
  %old = atomicrmw sub ptr %remp, i64 1 seq_cst
  %last = icmp eq i64 %old, 1
  br i1 %last, label %last_one, label %claim
last_one:
  %waiting = load atomic i64, ptr %waitp seq_cst, align 8
  %asleep = icmp ne i64 %waiting, 0
  br i1 %asleep, label %signal, label %claim
signal:
  call i32 @pthread_mutex_lock(ptr %m)
  call i32 @pthread_cond_signal(ptr %done)
  call i32 @pthread_mutex_unlock(ptr %m)
  br label %claim
out:
  ret void
}

; a worker of pool p; seen: the published word when it was started
define internal ptr @worker(ptr %arg) {
entry:
  %p = load ptr, ptr %arg, align 8
  %sp = getelementptr i8, ptr %arg, i64 8
  %seen0 = load i64, ptr %sp, align 8
  call void @free(ptr %arg)
  %key = load i32, ptr @key, align 4
  call i32 @pthread_setspecific(i32 %key, ptr %p)
  call i32 @PyGILState_Ensure()
  call ptr @PyEval_SaveThread()
  %wordp = getelementptr i8, ptr %p, i64 64
  %spinp = getelementptr i8, ptr %p, i64 96
  %sleepp = getelementptr i8, ptr %p, i64 192
  %m = getelementptr i8, ptr %p, i64 384
  %wake = getelementptr i8, ptr %p, i64 512
  br label %wait
wait:
  %seen = phi i64 [ %seen0, %entry ], [ %w, %after ]
  %limit = load atomic i64, ptr %spinp monotonic, align 8
  br label %spin
spin:
  %n = phi i64 [ 0, %wait ], [ %n1, %again ]
  %w1 = load atomic i64, ptr %wordp acquire, align 8
  %same = icmp eq i64 %w1, %seen
  br i1 %same, label %idle, label %got
idle:
  %short = icmp ult i64 %n, %limit
  br i1 %short, label %again, label %sleep
again:
  call void @pause()
  %n1 = add i64 %n, 1
  br label %spin
sleep:
  call i32 @pthread_mutex_lock(ptr %m)
  atomicrmw add ptr %sleepp, i64 1 seq_cst
  br label %check
check:
  %w2 = load atomic i64, ptr %wordp seq_cst, align 8
  %same2 = icmp eq i64 %w2, %seen
  br i1 %same2, label %block, label %woke
block:
  call i32 @pthread_cond_wait(ptr %wake, ptr %m)
  br label %check
woke:
  atomicrmw sub ptr %sleepp, i64 1 seq_cst
  call i32 @pthread_mutex_unlock(ptr %m)
  br label %got
got:
  %w = phi i64 [ %w1, %spin ], [ %w2, %woke ]
  %gen = lshr i64 %w, BITS
  %count = and i64 %w, MASK
  call void @take(ptr %p, i64 %gen, i64 %count)
  br label %after
after:
  br label %wait
}

; start a worker (every signal blocked in it; detached); false when no thread can be had
define internal i1 @spawn(ptr %p, i64 %seen) {
entry:
  %set = alloca [256 x i8], align 16
  %old = alloca [256 x i8], align 16
  %tid = alloca i64, align 8
  %arg = call ptr @calloc(i64 2, i64 8)
  %ok = icmp ne ptr %arg, null
  br i1 %ok, label %start, label %fail
start:
  store ptr %p, ptr %arg, align 8
  %sp = getelementptr i8, ptr %arg, i64 8
  store i64 %seen, ptr %sp, align 8
  call i32 @sigfillset(ptr %set)
  call i32 @pthread_sigmask(i32 2, ptr %set, ptr %old)
  %rc = call i32 @pthread_create(ptr %tid, ptr null, ptr @worker, ptr %arg)
  call i32 @pthread_sigmask(i32 2, ptr %old, ptr null)
  %made = icmp eq i32 %rc, 0
  br i1 %made, label %detach, label %undo
detach:
  %t = load i64, ptr %tid, align 8
  call i32 @pthread_setname_np(i64 %t, ptr @name)
  call i32 @pthread_detach(i64 %t)
  ret i1 true
undo:
  call void @free(ptr %arg)
  br label %fail
fail:
  ret i1 false
}

define void @gpuc_pool_run(ptr %fn, ptr %ctxs, i64 %stride, i64 %count) {
entry:
  %key = load i32, ptr @key, align 4
  %few = icmp sle i64 %count, 1
  br i1 %few, label %alone, label %nested_check
nested_check:
  %inside = call ptr @pthread_getspecific(i32 %key)
  %nested = icmp ne ptr %inside, null
  br i1 %nested, label %alone, label %find
alone:
  call void @serial(ptr %fn, ptr %ctxs, i64 %stride, i64 0, i64 %count)
  ret void
find:
  %p0 = load atomic ptr, ptr @current acquire, align 8
  %has = icmp ne ptr %p0, null
  br i1 %has, label %have, label %make
make:
  %p1 = call ptr @create()
  %made = icmp ne ptr %p1, null
  br i1 %made, label %have, label %alone
have:
  %p = phi ptr [ %p0, %find ], [ %p1, %make ]
  %rl = getelementptr i8, ptr %p, i64 256
  %m = getelementptr i8, ptr %p, i64 384
  %wake = getelementptr i8, ptr %p, i64 512
  %done = getelementptr i8, ptr %p, i64 640
  %wordp = getelementptr i8, ptr %p, i64 64
  %remp = getelementptr i8, ptr %p, i64 128
  %sleepp = getelementptr i8, ptr %p, i64 192
  %waitp = getelementptr i8, ptr %p, i64 200
  call i32 @pthread_mutex_lock(ptr %rl)
  call i32 @pthread_setspecific(i32 %key, ptr %p)
  %seen = load atomic i64, ptr %wordp monotonic, align 8
  %need = sub i64 %count, 1
  br label %grow
grow:
  %workers = load i64, ptr %p, align 8
  %lacking = icmp slt i64 %workers, %need
  br i1 %lacking, label %spawn, label %go
spawn:
  %next = add i64 %workers, 1
  %started = call i1 @spawn(ptr %p, i64 %seen)
  br i1 %started, label %spawned, label %go
spawned:
  store i64 %next, ptr %p, align 8
  br label %grow
go:
  %have_w = load i64, ptr %p, align 8
  %par = icmp sgt i64 %have_w, 0
  %cpus = load i64, ptr @cpus, align 8
  %crowded = icmp sgt i64 %count, %cpus
  %limit = select i1 %crowded, i64 THROTTLED, i64 SPIN
  br i1 %par, label %publish, label %own_all
own_all:
  call void @serial(ptr %fn, ptr %ctxs, i64 %stride, i64 0, i64 %count)
  br label %finish
publish:
  %spinp = getelementptr i8, ptr %p, i64 96
  store atomic i64 %limit, ptr %spinp monotonic, align 8
  %fnp = getelementptr i8, ptr %p, i64 72
  store ptr %fn, ptr %fnp, align 8
  %ctxsp = getelementptr i8, ptr %p, i64 80
  store ptr %ctxs, ptr %ctxsp, align 8
  %stridep = getelementptr i8, ptr %p, i64 88
  store i64 %stride, ptr %stridep, align 8
  %rem = sub i64 %count, 1
  store atomic i64 %rem, ptr %remp monotonic, align 8
  %gen = lshr i64 %seen, BITS
  %gen1 = add i64 %gen, 1
  %high = shl i64 %gen1, BITS
  %claim1 = or i64 %high, 1
  %claimp = getelementptr i8, ptr %p, i64 136
  store atomic i64 %claim1, ptr %claimp monotonic, align 8
  %word = or i64 %high, %count
  store atomic i64 %word, ptr %wordp seq_cst, align 8
  %sleepers = load atomic i64, ptr %sleepp seq_cst, align 8
  %anyone = icmp ne i64 %sleepers, 0
  br i1 %anyone, label %rouse, label %own
rouse:
  call i32 @pthread_mutex_lock(ptr %m)
  call i32 @pthread_cond_broadcast(ptr %wake)
  call i32 @pthread_mutex_unlock(ptr %m)
  br label %own
own:
  call void %fn(ptr %ctxs)
  call void @take(ptr %p, i64 %gen1, i64 %count)
  br label %join
join:
  %n = phi i64 [ 0, %own ], [ %n1, %again ]
  %left = load atomic i64, ptr %remp acquire, align 8
  %all = icmp eq i64 %left, 0
  br i1 %all, label %finish, label %idle
idle:
  %short = icmp ult i64 %n, %limit
  br i1 %short, label %again, label %sleep
again:
  call void @pause()
  %n1 = add i64 %n, 1
  br label %join
sleep:
  call i32 @pthread_mutex_lock(ptr %m)
  store atomic i64 1, ptr %waitp seq_cst, align 8
  br label %check
check:
  %left2 = load atomic i64, ptr %remp seq_cst, align 8
  %all2 = icmp eq i64 %left2, 0
  br i1 %all2, label %woke, label %block
block:
  call i32 @pthread_cond_wait(ptr %done, ptr %m)
  br label %check
woke:
  store atomic i64 0, ptr %waitp seq_cst, align 8
  call i32 @pthread_mutex_unlock(ptr %m)
  br label %finish
finish:
  call i32 @pthread_setspecific(i32 %key, ptr null)
  call i32 @pthread_mutex_unlock(ptr %rl)
  ret void
}
"""


def pool_ir(arch: str) -> str:
    """:data:`POOL_IR` for a processor ``arch`` (its spin-wait hint; none where it has no known one)."""
    hint = _PAUSE.get(arch)
    call, declaration = ("", "") if hint is None else (
        f"  call void @{hint[0]}({hint[1]})", f"declare void @{hint[0]}({hint[1].split()[0] if hint[1] else ''})")
    return (POOL_IR.replace("PAUSE_CALL", call).replace("PAUSE_DECLARATION", declaration)
            .replace("THREADNAME", THREAD_NAME).replace("NAME_SIZE", str(len(THREAD_NAME) + 1))
            .replace("THROTTLED", str(THROTTLED)).replace("SPIN", str(SPIN))
            .replace("MASK", str((1 << COUNT_BITS) - 1)).replace("BITS", str(COUNT_BITS)))


class _Pool:
    """The compiled pool of this process (its library kept for the life of the process)."""

    def __init__(self, load: Callable[..., Any]):
        self.load = load
        self.lock = threading.Lock()
        self.library: Any = None
        self.run: Any = None
        os.register_at_fork(after_in_child=self._fresh_lock)

    def _fresh_lock(self) -> None:
        """A forked child's lock: another thread of the parent may have held it, compiling."""
        self.lock = threading.Lock()

    def entry(self) -> Any:
        """``gpuc_pool_run`` as a ctypes function, compiled and put in the slot at the first call; None
        when it cannot be made (the slot is then emptied: the chunks run serially)."""
        with self.lock:
            if self.run is None and self.library is None:
                try:
                    # -O0: code generation of this hand-written SSA takes a quarter of -O2's time, on the
                    # path of the first parallel loop of every process (the hot loops are a load and a pause)
                    library = self.load(pool_ir(llvm.get_process_triple().split("-")[0]), opt_level=0)
                    if library.function(INIT, ctypes.c_int32, ctypes.c_int64)(_cpus()) != 0:
                        raise OSError("pthread_key_create failed")
                except Exception:
                    _log.warning("parallel regions run serially: the worker pool could not be made",
                                 exc_info=True)
                    self.library = False
                    _slot().value = None
                    return None
                self.library = library
                os.register_at_fork(after_in_child=library.function(FORGET, None))
                self.run = library.function(RUN, None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                            ctypes.c_int64)
                _slot().value = library.address(RUN)
            return self.run


_pool: _Pool | None = None


def _cpus() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _first_region(chunk: int, ctxs: int, stride: int, count: int) -> None:
    """The slot's first value: compile the pool, then run this region through it (serially, on this
    thread, when the pool cannot be made)."""
    run = None if _pool is None else _pool.entry()
    if run is None:
        fn = _CHUNK_TYPE(chunk)
        for k in range(count):
            fn(ctxs + k * stride)
        return
    run(chunk, ctxs, stride, count)


_FIRST = _RUN_TYPE(_first_region)


def install(load: Callable[..., Any]) -> None:
    """Fill the slot: the first region compiles the pool with ``load(ir_text, opt_level=0)`` (a
    :class:`~gpucompiler.runtime.cpu.CPULibrary` maker). Idempotent."""
    global _pool
    if _pool is None:
        _pool = _Pool(load)
        _slot().value = ctypes.cast(_FIRST, ctypes.c_void_p).value


def started() -> bool:
    """Whether this process compiled its pool (a region ran on threads)."""
    return _pool is not None and _pool.run is not None


__all__ = ["COUNT_BITS", "FORGET", "INIT", "POOL_IR", "POOL_SYMBOL", "RUN", "SPIN", "THREAD_NAME", "THROTTLED",
           "install", "pool_ir", "started"]
