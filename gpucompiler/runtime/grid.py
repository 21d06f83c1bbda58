"""CPU grid emulation: run a kernel over its whole grid on the host, faithfully.

The kernel is compiled once per argument types for the native target with
the ``gpuc_grid`` plugin, whose rules lower the device intrinsics for the
host (:mod:`gpucompiler.device`): a thread's indices are read from its
*context* (``pthread_getspecific(gpuc_emu_key)``, an array of ``int64``),
shared arrays are module globals (one block runs at a time), atomics are
LLVM atomics, and ``syncthreads()`` calls ``gpuc_emu_barrier``. A compiled
driver, ``gpuc_emu_run(ctx, params)``, loops over a range of blocks and over
a strided range of threads, calling the kernel with the arguments read from
``params`` (a ``void*`` per argument, the layout ``cuLaunchKernel`` takes).

* **Without barriers**, one driver call runs every thread of every block in
  order on the calling thread: each block's threads run one after another,
  which is one legal schedule of the GPU.
* **With barriers**, every thread of a block is an OS thread (the GIL is
  released while compiled code runs) and ``syncthreads`` is a real barrier:
  a thread that returned no longer takes part; threads of one block that
  wait at *different* ``syncthreads`` calls raise :class:`EmulationError`
  after the launch instead of producing a result. Blocks run one at a time.
* ``shfl_down`` is an exchange between two block-wide barriers: each thread
  publishes its value, then reads the one of lane ``lane + delta`` of its
  warp (its own past the warp's end). A source lane that did not take part
  (it returned, waits elsewhere, or lies past the block's last thread) is an
  :class:`EmulationError`, never a stale value. Kernels that shuffle run in
  the threaded mode.

Linux/glibc only (``pthread_getspecific``). Indices are checked unless the
kernel has ``boundscheck=False`` (the emulation is for debugging; on the GPU
checks are off unless asked for): a bad index calls ``gpuc_emu_index_error``,
the thread's kernel returns at once (its functions have a status), the driver
stops, and the launch raises ``IndexError`` with NumPy's message and the
kernel's ``file:line``. Unchecked, a bad index may crash the process.
"""

from __future__ import annotations

import builtins
import ctypes
import importlib
import functools
import threading
import time
from typing import Any

import attrs
from llvmlite import ir

import llvmlite.binding as llvm

from .. import types as T
from ..cache.report import report
from ..cache.default import compile_cached
from ..codegen.lltypes import has_value, ll
from ..core import CompilerConfig, CompilerJob, FrontendOptions
from ..device import GridEmulationPlugin
from ..errors import EmulationError, LaunchError
from ..interpreter.lattice import widen
from ..targets import NativeTarget
from .cpu import CPULibrary, SymbolTable
from .params import array_param, param_array, scalar_param

PLUGIN = GridEmulationPlugin.name
# context fields (int64): tid xyz, ctaid xyz, ntid xyz, nctaid xyz, first thread, thread step,
# first block, end block
_TID, _CTAID, _NTID, _NCTAID, _T0, _TSTEP, _B0, _B1 = 0, 3, 6, 9, 12, 13, 14, 15
_CTX_FIELDS = 16
_I64, _I32, _I8, _PTR = ir.IntType(64), ir.IntType(32), ir.IntType(8), ir.PointerType()


@attrs.frozen
class EmulationSource:
    """A kernel specialisation plus the driver ``gpuc_emu_run``, as a job source."""

    spec: Any

    @property
    def entry(self) -> str:
        return self.spec.entry

    def _where(self) -> list:
        """The kernel's file and first line: bounds-check messages name lines (code digests leave them out)."""
        code = self.spec.fn.__code__
        return [code.co_filename, code.co_firstlineno]

    def fingerprint(self, job=None) -> Any:
        return {"grid_emulation": 1, "kernel": self.spec.fingerprint(job), "where": self._where()}

    def fingerprint_for(self, job) -> Any:
        return self.fingerprint(job)

    # the two-level key of the kernel's spec (docs/cache.md), under the emulation's settings
    def index_fingerprint(self) -> Any:
        return {"grid_emulation": 1, "kernel": self.spec.index_fingerprint(), "where": self._where()}

    def dependency_record(self, job) -> dict | None:
        return self.spec.dependency_record(job)

    def verify_record(self, job, record) -> Any:
        fingerprint = self.spec.verify_record(job, record)
        return None if fingerprint is None else {"grid_emulation": 1, "kernel": fingerprint, "where": self._where()}

    def discard_verified(self, job) -> None:
        self.spec.discard_verified(job)

    def generate_ir(self, job) -> str:
        # import time: the code generator and with it the interpreter and the frontend (~10 ms), for a
        # compile: a launch served from the cache loads none of them
        from ..codegen import ErrorPolicy, ModuleCodegen

        interp, frame = self.spec.infer(job.target, job.config.plugins, False)
        checked = job.config.frontend.boundscheck
        # errors stop the thread (a status) also without bounds checks: unbound names...
        mod = ModuleCodegen(self.spec.entry, interp, status=True, boundscheck=checked,
                            on_error=ErrorPolicy.EMULATION)
        entry = mod.emit(frame, self.spec.entry)
        _emit_driver(mod, frame, entry)
        return mod.text()


class _Loop:
    """``for i in range(start, stop, step)`` in IR, the counter in an alloca."""

    def __init__(self, b: ir.IRBuilder, fn, start, stop, step, name):
        self.b, self.stop, self.step = b, stop, step
        self.var = b.alloca(_I64, name=name)
        b.store(start, self.var)
        self.head, self.body = fn.append_basic_block(name + ".head"), fn.append_basic_block(name + ".body")
        self.exit = fn.append_basic_block(name + ".exit")
        b.branch(self.head)
        b.position_at_end(self.head)
        self.i = b.load(self.var)
        b.cbranch(b.icmp_signed("<", self.i, stop), self.body, self.exit)
        b.position_at_end(self.body)

    def close(self):
        self.b.store(self.b.add(self.i, self.step), self.var)
        self.b.branch(self.head)
        self.b.position_at_end(self.exit)


def _emit_driver(mod, frame, entry) -> None:
    fn = ir.Function(mod.module, ir.FunctionType(ir.VoidType(), [_PTR, _PTR]), name="gpuc_emu_run")
    ctx, params = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    field = lambda k: b.gep(ctx, [ir.Constant(_I64, k)], source_etype=_I64)  # noqa: E731
    get = lambda k: b.load(field(k), typ=_I64)  # noqa: E731
    key = b.load(mod.extern_global("gpuc_emu_key"), typ=_I32)
    b.call(mod.declare("pthread_setspecific", _I32, [_I32, _PTR]), [key, ctx])
    args = []
    for k, t in enumerate(widen(t) for t in frame.argtypes):
        if not has_value(t):
            continue
        p = b.load(b.gep(params, [ir.Constant(_I64, k)], source_etype=_PTR), typ=_PTR)
        args.append(b.trunc(b.load(p, typ=_I8), ir.IntType(1)) if t == T.boolean else b.load(p, typ=ll(t)))
    bdim = [get(_NTID + k) for k in range(3)]
    gdim = [get(_NCTAID + k) for k in range(3)]
    nthreads = b.mul(b.mul(bdim[0], bdim[1]), bdim[2])
    blocks = _Loop(b, fn, get(_B0), get(_B1), ir.Constant(_I64, 1), "block")
    _store_split(b, field, _CTAID, blocks.i, gdim)
    threads = _Loop(b, fn, get(_T0), nthreads, get(_TSTEP), "thread")
    _store_split(b, field, _TID, threads.i, bdim)
    out = b.call(entry, args)
    if mod.status:  # a failed index check: stop the launch (the error is recorded)
        with b.if_then(out, likely=False):
            b.ret_void()
    threads.close()
    blocks.close()
    b.ret_void()


def _store_split(b, field, base, linear, dims) -> None:
    """Store the x/y/z of ``linear`` (x fastest) over ``dims`` into fields ``base..base+2``."""
    x = b.srem(linear, dims[0])
    rest = b.sdiv(linear, dims[0])
    b.store(x, field(base))
    b.store(b.srem(rest, dims[1]), field(base + 1))
    b.store(b.sdiv(rest, dims[1]), field(base + 2))


# -- process-wide runtime symbols -----------------------------------------------------
_local = threading.local()


class _Block:
    """Barrier state of one block in flight (barrier mode)."""

    def __init__(self, n: int):
        self.cond = threading.Condition()
        self.reset(n)
        self.error: str | None = None

    def reset(self, n: int) -> None:
        self.alive, self.arrived, self.generation, self.site = n, 0, 0, None
        self.nthreads = n
        self.slots: dict = {}  # thread -> (generation, bits) published for a shuffle

    def shuffle_down(self, site: int, tid: int, bits: int, delta: int) -> int:
        """Exchange ``bits`` with the warp: the value of thread ``tid + delta`` of the same warp."""
        with self.cond:
            gen = self.generation
            self.slots[tid] = (gen, bits)
        self.arrive(site)
        lane = tid % 32
        out = bits
        if delta >= 0 and lane + delta < 32:
            src = tid + delta
            got = self.slots.get(src)
            if got is None or got[0] != gen:
                with self.cond:
                    if self.error is None:
                        self.error = (f"shfl_down: thread {tid} reads lane {src % 32} of its warp, which "
                                      f"did not take part in the shuffle (returned, waited elsewhere or "
                                      f"lies past the block's {self.nthreads} threads); on a GPU this is "
                                      "undefined behaviour")
            else:
                out = got[1]
        self.arrive(site)
        return out

    def arrive(self, site: int) -> None:
        with self.cond:
            if self.arrived == 0:
                self.site = site
            elif site != self.site and self.error is None:
                self.error = (f"threads of one block wait at different syncthreads()/shfl_down() calls "
                              f"(barrier #{self.site} and #{site}); on a GPU this is undefined behaviour")
            self.arrived += 1
            if self.arrived >= self.alive:
                self._release()
            else:
                gen = self.generation
                while self.generation == gen:
                    self.cond.wait()

    def leave(self) -> None:
        """The calling thread returned from the kernel: it no longer takes part in barriers."""
        with self.cond:
            self.alive -= 1
            if self.arrived and self.arrived >= self.alive:
                self._release()

    def _release(self) -> None:
        self.arrived, self.site = 0, None
        self.generation += 1
        self.cond.notify_all()


def _barrier(site: int) -> None:
    block = getattr(_local, "block", None)
    if block is None:  # not inside a barrier-mode launch: nothing to wait for
        return
    block.arrive(site)


def _shuffle(site: int, bits: int, delta: int) -> int:
    block = getattr(_local, "block", None)
    if block is None:  # cannot happen: kernels that shuffle run in the threaded mode
        return bits
    return block.shuffle_down(site, _local.tid, bits, delta)


_BARRIER_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_int64)
_SHUFFLE_TYPE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
_INDEX_ERROR_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_char_p)
_VALUE_ERROR_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_char_p)
_RAISE_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_char_p)
_errors: list[tuple[type, str]] = []  # written by the running launch only: launches hold _LAUNCH_LOCK
#: one emulated launch at a time in the process: shared arrays are module globals and the index-error
#: channel above is process-wide, so two kernels running at once could see each other's errors
_LAUNCH_LOCK = threading.Lock()


def _index_error(index: int, axis: int, size: int, where: bytes) -> None:
    """A bounds-checked kernel indexed out of bounds: record NumPy's message and the kernel's
    ``file:line`` (the first one wins)."""
    if not _errors:
        _errors.append((IndexError, f"index {index} is out of bounds for axis {axis} with size {size} "
                                    f"at {where.decode(errors='replace')}"))


def _value_error(message: bytes) -> None:
    """A kernel's run-time check failed (``FunctionCodegen.check_value``): record its message."""
    if not _errors:
        _errors.append((ValueError, message.decode(errors="replace")))


def _raise(exc_name: bytes, message: bytes) -> None:
    """A kernel raised the built-in exception ``exc_name(message)`` (``FunctionCodegen.check``,
    ``raise_now``): record it."""
    if not _errors:
        module, _, name = exc_name.decode().rpartition(":")  # module:qualname of a class not built in
        exc = getattr(builtins, name, None) if not module else _imported(module, name)
        _errors.append((exc if isinstance(exc, type) and issubclass(exc, BaseException) else RuntimeError,
                        message.decode(errors="replace")))


def _imported(module: str, qualname: str):
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj


def _raise_error() -> None:
    if _errors:
        exc, message = _errors.pop()
        _errors.clear()
        raise exc(message)


#: the names :func:`emulation_runtime` gives the loader: the job says so (param ``loader_symbols``),
#: so that its code validates where it is compiled (a compile service) as where it is loaded
LOADER_SYMBOLS = ("gpuc_emu_barrier", "gpuc_emu_index_error", "gpuc_emu_key", "gpuc_emu_raise", "gpuc_emu_shfl",
                  "gpuc_emu_value_error")


@functools.cache
def emulation_runtime():
    """Create the pthread key and the barrier callback; register their names with LLVM."""
    libc = ctypes.CDLL(None)
    key = ctypes.c_uint(0)
    if libc.pthread_key_create(ctypes.byref(key), None) != 0:
        raise EmulationError("pthread_key_create failed: the CPU grid emulation needs POSIX threads")
    callback = _BARRIER_TYPE(_barrier)
    shuffle = _SHUFFLE_TYPE(_shuffle)
    index_error = _INDEX_ERROR_TYPE(_index_error)
    value_error = _VALUE_ERROR_TYPE(_value_error)
    raise_ = _RAISE_TYPE(_raise)
    llvm.add_symbol("gpuc_emu_raise", ctypes.cast(raise_, ctypes.c_void_p).value)
    llvm.add_symbol("gpuc_emu_index_error", ctypes.cast(index_error, ctypes.c_void_p).value)
    llvm.add_symbol("gpuc_emu_value_error", ctypes.cast(value_error, ctypes.c_void_p).value)
    llvm.add_symbol("gpuc_emu_key", ctypes.addressof(key))
    llvm.add_symbol("gpuc_emu_barrier", ctypes.cast(callback, ctypes.c_void_p).value)
    llvm.add_symbol("gpuc_emu_shfl", ctypes.cast(shuffle, ctypes.c_void_p).value)
    return key, callback, shuffle, index_error, value_error, raise_


def _rows(ref) -> list:
    return [[f.name, bool(f.is_declaration), f.linkage.name] for f in ref.functions]


class EmulatedKernel:
    """A kernel specialisation compiled for the host, runnable over a grid."""

    def __init__(self, spec, opt_level: int = 2, plugins=(), boundscheck: bool = False, check=None, options=()):
        """Compile through the cache (``check(job)`` runs before a compile, not on a hit);
        ``deps`` are the globals the code depends on (world age); ``options``: plugins' typed options."""
        emulation_runtime()
        self.spec = spec
        self.argtypes = tuple(widen(t) for t in spec.argtypes)
        job = CompilerJob(EmulationSource(spec), CompilerConfig(
            NativeTarget(), plugins=(PLUGIN, *plugins), opt_level=opt_level,
            params={"loader_symbols": LOADER_SYMBOLS, **{o.plugin: o for o in options}},
            frontend=FrontendOptions(boundscheck=boundscheck)))
        start = time.perf_counter()
        result = compile_cached(job, ("obj",), check=check)
        self.compile_report = report(result, time.perf_counter() - start, job.config.plugins)
        """Where the code came from and what its compile cost (``Kernel.last_compile``)."""
        symbols = SymbolTable(result.meta.get("symbols") or _rows(result.module.ref))
        self.uses_barrier = symbols.declares("gpuc_emu_barrier") or symbols.declares("gpuc_emu_shfl")
        self.library = CPULibrary.from_cached(result)
        self.origin = result.origin
        self.deps = tuple(spec.dependencies(job.target, job.config.plugins, False))
        self._run = self.library.function("gpuc_emu_run", None, ctypes.c_void_p, ctypes.c_void_p)

    def params(self, args):
        """``(void*[] array, buffers)`` for the arguments (NumPy arrays used in place)."""
        buffers = []
        for a, t in zip(args, self.argtypes):
            if isinstance(t, T.ArrayType):
                if hasattr(a, "__cuda_array_interface__") and not hasattr(a, "__array_interface__"):
                    raise LaunchError("the CPU grid emulation runs on host memory: pass NumPy arrays "
                                      f"(got {type(a).__name__} in device memory)")
                buffers.append(array_param(a.ctypes.data, a.shape, a.strides))
            else:
                buffers.append(scalar_param(a.item() if hasattr(a, "item") else a, t))
        return param_array(buffers), buffers

    def launch(self, grid, block, args) -> None:
        nthreads = block[0] * block[1] * block[2]
        if nthreads > 1024:
            raise LaunchError(f"a block has at most 1024 threads (as on NVIDIA GPUs), got {block}")
        array, keep = self.params(args)
        nblocks = grid[0] * grid[1] * grid[2]
        with _LAUNCH_LOCK:
            _errors.clear()
            if not self.uses_barrier:
                ctx = _context(grid, block, 0, 1, 0, nblocks)
                self._run(ctypes.addressof(ctx), ctypes.addressof(array))
            else:
                self._launch_threads(grid, block, nthreads, nblocks, array)
            _raise_error()
        del keep

    def _launch_threads(self, grid, block, nthreads, nblocks, array) -> None:
        state = _Block(nthreads)
        errors: list[str] = []

        def end_of_block():
            if state.error:
                errors.append(state.error)
            state.reset(nthreads)

        done = threading.Barrier(nthreads, action=end_of_block)

        def worker(t):
            _local.block, _local.tid = state, t
            ctx = _context(grid, block, t, nthreads, 0, 0)
            try:
                for blk in range(nblocks):
                    ctx[_B0], ctx[_B1] = blk, blk + 1
                    self._run(ctypes.addressof(ctx), ctypes.addressof(array))
                    state.leave()
                    done.wait()
                    if errors or _errors:
                        return
            finally:
                _local.block = None

        workers = [threading.Thread(target=worker, args=(t,), daemon=True) for t in range(nthreads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        if errors:
            raise EmulationError(errors[0])


def _context(grid, block, t0, tstep, b0, b1) -> ctypes.Array:
    ctx = (ctypes.c_int64 * _CTX_FIELDS)()
    ctx[_NTID:_NTID + 3] = list(block)
    ctx[_NCTAID:_NCTAID + 3] = list(grid)
    ctx[_T0], ctx[_TSTEP], ctx[_B0], ctx[_B1] = t0, tstep, b0, b1
    return ctx
