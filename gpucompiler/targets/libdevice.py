"""Linking NVIDIA's libdevice: only the ``__nv_*`` functions a module uses.

The library's bitcode is read once per process. For each distinct set of
needed functions, libdevice is parsed (the first time, the parse that read its
function names), everything but that set internalised
and dropped by global DCE, and the pruned bitcode cached: later modules
needing the same functions parse a few kilobytes instead of the whole
library. (Parsing the bitcode again is faster than cloning a parsed module,
measured with LLVM 22: ~50 ms against ~70 ms.) After linking, the caller
internalises the linked functions so they vanish once inlined.

libdevice branches on ``__nvvm_reflect("__CUDA_FTZ")`` and
``("__CUDA_ARCH")``; LLVM's NVVMReflect pass (run by the NVPTX pipeline and
code generator) folds those from the ``nvvm-reflect-ftz`` module flag and
the target's ``sm_XY``.

The first parse starts on a thread when a compile first names a libdevice
function (:func:`libdevice_name`: the code generator's math call, the AD
engine's derivative) or, where a core is free for it, infers a math call
(:mod:`.ptx_overlays`), into an LLVM context of its own and outside llvmlite's
process-wide lock (:func:`~gpucompiler.llvm.binding.parse_bitcode_apart`), so
that it overlaps the rest of the compile, LLVM's work included, instead of
adding ~30 ms to the ``finish`` stage. Before the module's last optimisation
the target names what it will link (:func:`prune_ahead`): that parse is pruned
to those functions on a thread while the optimisation and the ``finish``
stage's own passes run. The pruned bitcode is parsed into the global context,
where the module is.
"""

from __future__ import annotations

import _thread
import atexit
import functools
import os
from collections.abc import Iterable
from typing import NamedTuple

import llvmlite.binding as llvm

from ..core.mathfns import MathFunction, math_function
from ..errors import ToolNotFoundError
from ..llvm.binding import parse_bitcode_apart
from .libdevicefile import bitcode as _bitcode, libdevice_digest as libdevice_digest

PREFIX = "__nv_"
#: math intrinsics the NVPTX back end lowers itself (the rest call libdevice)
NATIVE_INTRINSICS = frozenset({"llvm.sqrt", "llvm.fabs", "llvm.floor", "llvm.ceil", "llvm.trunc", "llvm.fma",
                               "llvm.fmuladd", "llvm.minnum", "llvm.maxnum", "llvm.copysign"})


def libdevice_name(fn: MathFunction, float32: bool) -> str:
    """libdevice's name of a math function: ``__nv_sin``, ``__nv_sinf``; the first call starts
    parsing the library (:func:`prefetch`)."""
    prefetch()
    return PREFIX + fn.name(float32)


def libm_name(name: str) -> str | None:
    """The C math name of libdevice function ``name`` (``__nv_sinf`` -> ``sinf``); None for other names."""
    if not name.startswith(PREFIX):
        return None
    base = name[len(PREFIX):]
    return base if math_function(base) is not None else None


def device_name(name: str) -> str | None:
    """libdevice's function for a C math name (``cos``) or a math intrinsic NVPTX does not lower
    (``llvm.exp.f64``); None for any other name."""
    fn = math_function(name)
    if fn is None:
        return None
    if name.startswith("llvm."):
        stem, _, suffix = name.rpartition(".")
        return None if stem in NATIVE_INTRINSICS else libdevice_name(fn, suffix == "f32")
    return PREFIX + name


class _Defined(NamedTuple):
    """What a parse of libdevice defines, listed once (each value's name is a call into LLVM)."""

    functions: list[tuple[llvm.ValueRef, str]]
    variables: list[tuple[llvm.ValueRef, str]]


class _Spare(NamedTuple):
    """A parse of libdevice kept for the link that needs it."""

    bitcode: bytes
    """the library's bytes it was parsed from"""
    lib: llvm.ModuleRef
    defined: _Defined | None
    """what ``lib`` defines, once listed"""
    covers: frozenset[str] | None
    """None: the whole library; else the functions ``lib`` was pruned to ahead (:func:`prune_ahead`)"""
    apart: bool
    """whether ``lib`` has an LLVM context of its own (:func:`prefetch`'s parse), not the global one"""


_SPARE: list[_Spare] = []
"""The parse :func:`prefetch`'s thread or :func:`libdevice_functions` made, with the bitcode it read and what it
defines once listed: the first pruning takes it instead of parsing the library again (a cold GPU compile parsed
it twice, ~25 ms each here, ~50 on a slower host) or listing its 580 values again (~2.5 ms); or that parse
pruned ahead (:func:`prune_ahead`)."""


_pending: list[_thread.LockType] = []
"""The lock a :func:`prefetch` thread releases when done (empty when none was started)."""
_pending_ahead: list[_thread.LockType] = []
"""The lock the thread of :func:`prune_ahead` releases when done (empty when none was started)."""


def prefetch() -> None:
    """Parse libdevice into :data:`_SPARE` on a thread, once per process.

    A failure (no libdevice, a bad file) is left to the parse that needs the library, which raises it
    typed. (``_thread`` directly, as :mod:`gpucompiler.runtime.lljit` does: ``threading``'s start-up
    handshake costs a good part of what little Python work the thread does.)
    """
    if _pending or libdevice_functions.cache_info().currsize:
        return
    running = _thread.allocate_lock()
    running.acquire()
    _start(_parse_spare, _pending, running)
    if _pending:  # until the thread runs: it would wait for Python's lock while the compile goes on (~5 ms)
        running.acquire()


def _start(work, pending: list[_thread.LockType], *args) -> None:
    """``work(*args, done)`` on a new thread, its lock ``done`` noted in ``pending``; nothing without a thread
    (the compile then does the work itself)."""
    done = _thread.allocate_lock()
    done.acquire()
    try:
        _thread.start_new_thread(work, (*args, done))
    except RuntimeError:
        return
    pending.append(done)


def _parse_spare(running: _thread.LockType, done: _thread.LockType) -> None:
    try:
        try:
            bitcode = _bitcode()
        finally:
            running.release()
        _SPARE.append(_Spare(bitcode, parse_bitcode_apart(bitcode), None, None, True))
    except BaseException:  # raised again, typed, by the parse that needs the library
        pass
    finally:
        done.release()


def prune_ahead(names: Iterable[str]) -> None:
    """Drop from the parse :func:`prefetch` made, on a thread, the functions a link will not ask for: the
    libdevice functions among ``names`` stay, with what they call.

    Once per process, when that parse is over (else the link prunes it: waiting for it here would take
    the compile's passes until the link off the parse's time): its values are listed and internalised
    here (~3 ms), then global DCE drops the other ~570 functions and frees them (~6 ms here) on a
    thread, in one call outside llvmlite's lock (the parse has an LLVM context of its own:
    :func:`~gpucompiler.llvm.binding.parse_bitcode_apart`), while the compile goes on. (A thread that
    made many calls into LLVM would wait for Python's lock between them while the compile runs Python:
    the compile's own calls into LLVM release it and take it back, each time before a waiting thread.)
    A link that needs a subset of these functions prunes that parse further (the same module as pruning
    the whole library to them); one that needs others parses the library again.
    """
    wanted = frozenset(n for n in names if n.startswith(PREFIX))
    if not wanted or not _pending or _pending_ahead or not _finished(_pending) or not _CLAIM.acquire(False):
        return
    try:
        if not _pending_ahead:  # (one compile of the process, whichever thread runs it)
            _prune_whole(wanted)
    finally:
        _CLAIM.release()


_CLAIM = _thread.allocate_lock()
"""Held by the compile that prunes ahead (:func:`prune_ahead`) while it takes the parse."""


def _prune_whole(wanted: frozenset[str]) -> None:
    """:func:`prune_ahead` with the parse of :func:`prefetch`'s thread: never another (the thread's pass takes
    no lock: only a parse of its own context may be handed to it)."""
    if not any(spare.covers is None for spare in _SPARE):  # (no parse: no library, or a bad file)
        return
    covers = wanted & libdevice_functions()  # (lists the parse once, kept for the link's own calls)
    bitcode = _bitcode()
    whole = next((spare for spare in _SPARE if spare.covers is None and spare.bitcode == bitcode), None)
    if not covers or whole is None or not whole.apart:
        return
    try:
        _SPARE.remove(whole)
    except ValueError:  # another compile's link took it
        return
    _internalise_others(whole.defined or _defined(whole.lib), covers)
    pm, pb = _global_dce()
    spare, running = whole._replace(defined=None, covers=covers), _thread.allocate_lock()
    running.acquire()
    _start(_drop_dead, _pending_ahead, spare, pm, pb, running)
    if _pending_ahead:  # until the thread runs, which would wait for Python's lock while the compile goes on
        running.acquire()
    else:  # no thread: the link prunes it
        _SPARE.append(spare)


def _drop_dead(spare: _Spare, pm, pb, running: _thread.LockType, done: _thread.LockType) -> None:
    try:
        running.release()
        # (``_cfn``: the ctypes function under llvmlite's locking wrapper)
        llvm.ffi.lib.LLVMPY_RunNewModulePassManager._cfn(pm, spare.lib, pb)  # pyright: ignore[reportPrivateUsage]
        _SPARE.append(spare)
    except BaseException:  # the link parses the library again
        pass
    finally:
        done.release()


def _finished(pending: list[_thread.LockType]) -> bool:
    """Whether the threads of ``pending`` have finished; a thread done with LLVM gets Python's lock in the
    millisecond given to it here (while the compile runs, it waits up to the interpreter's switch interval)."""
    for done in pending:
        if not done.acquire(timeout=0.001):
            return False
        done.release()
    return True


def _wait() -> None:
    """Until the threads of :func:`prefetch` and :func:`prune_ahead`, where started, have finished."""
    for done in (*_pending, *_pending_ahead):
        done.acquire()
        done.release()


# a fork while the thread is inside LLVM would leave the child's llvmlite lock held, and an exit would
# tear LLVM down under it: both wait for it
os.register_at_fork(before=_wait)
atexit.register(_wait)


def _parsed(names: frozenset[str] | None = None) -> tuple[llvm.ModuleRef, _Defined]:
    """libdevice parsed, and what it defines: the spare parse when it is of the bitcode in use (and, for
    ``names``, holds them: the whole library, or one pruned ahead to more), else a new one."""
    _wait()
    bitcode = _bitcode()
    for spare in list(_SPARE):
        # (a thread's read may be another bytes object of the same file)
        if spare.bitcode == bitcode and (spare.covers is None or (names is not None and names <= spare.covers)):
            _SPARE.remove(spare)
            return spare.lib, _defined(spare.lib) if spare.defined is None else spare.defined
    lib = llvm.parse_bitcode(bitcode)
    return lib, _defined(lib)


def _defined(lib: llvm.ModuleRef) -> _Defined:
    """``(value, name)`` of each function, then of each global variable, that ``lib`` defines."""
    return _Defined([(f, f.name) for f in lib.functions if not f.is_declaration],
                    [(g, g.name) for g in lib.global_variables if not g.is_declaration])


@functools.cache
def libdevice_functions() -> frozenset[str]:
    """Names of the functions libdevice defines (listed from the spare parse, kept for the link)."""
    _wait()
    bitcode = _bitcode()
    for k, spare in enumerate(_SPARE):
        if spare.covers is None and spare.bitcode == bitcode:
            defined = spare.defined
            if defined is None:
                defined = _defined(spare.lib)
                _SPARE[k] = spare._replace(defined=defined)
            return frozenset(name for _, name in defined.functions)
    lib = llvm.parse_bitcode(bitcode)
    defined = _defined(lib)
    _SPARE.append(_Spare(bitcode, lib, defined, None, False))
    return frozenset(name for _, name in defined.functions)


def _internalise_others(defined: _Defined, names: frozenset[str]) -> None:
    """Internal linkage for every function and variable of ``defined`` but ``names`` (global DCE drops those
    nothing of ``names`` uses)."""
    for value, name in (*defined.functions, *defined.variables):
        if name not in names:
            value.linkage = "internal"


def _global_dce() -> tuple[llvm.ModulePassManager, llvm.PassBuilder]:
    pm = llvm.create_new_module_pass_manager()
    pm.add_global_dead_code_eliminate_pass()
    return pm, llvm.create_pass_builder(None, llvm.create_pipeline_tuning_options(0))


@functools.cache
def _pruned(names: frozenset[str], triple: str, data_layout: str) -> bytes:
    lib, defined = _parsed(names)
    lib.triple, lib.data_layout = triple, data_layout
    _internalise_others(defined, names)
    pm, pb = _global_dce()
    pm.run(lib, pb)
    return lib.as_bitcode()


def needed(ref: llvm.ModuleRef) -> frozenset[str]:
    """The libdevice functions ``ref`` declares without defining."""
    return frozenset(f.name for f in ref.functions if f.is_declaration and f.name.startswith(PREFIX))


def link_libdevice(ref: llvm.ModuleRef) -> list[str]:
    """Link the libdevice functions ``ref`` declares into it; returns their names.

    Raises :class:`ToolNotFoundError` when libdevice is missing (only then
    looked for: a module without ``__nv_*`` calls never needs it).
    """
    names = needed(ref)
    if not names:
        return []
    try:
        known = libdevice_functions()
    except ToolNotFoundError as exc:
        raise ToolNotFoundError(
            f"the module calls {', '.join(sorted(names))} from libdevice, which was not found: {exc}"
        ) from None
    present = names & known
    if present:
        ref.link_in(llvm.parse_bitcode(_pruned(frozenset(present), ref.triple, ref.data_layout)))
    return sorted(present)
