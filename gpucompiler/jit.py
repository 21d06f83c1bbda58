"""``@jit``: compile a Python function on its first call per argument types, run it on the CPU.

Each combination of argument types compiles once (through the pipeline,
then loaded by the CPU runtime) into a ctypes callable and, where the
types allow, a compiled CPython entry (:mod:`.runtime.pyentry`): after a
call the dispatcher's own class has that entry as ``__call__``, so the next
call with the same types runs compiled code from the interpreter's call to
the boxed result, and any other call comes back to :meth:`Dispatcher.__call__`.
Like Julia's world age, every global the compiled code read is checked at
each call (in the entry, by version words): a rebound global recompiles
(the job key changes only when the value does, so rebinding to an equal
value reuses the code).
Compiles go through the cache's two-level key (docs/cache.md): when the
index entry's dependency record still holds, neither the key nor the return
type needs type inference, and the checked live reads are the world-age deps.

A first compile may be tiered (docs/user_guide.md, "Tiered first compiles"): when
no cache tier holds the full level's code, a function with a loop first runs code
compiled at :data:`QUICK_LEVEL` while a thread compiles the full level, which then
replaces it; the quick code has no CPython call entry (its calls go through the
dispatcher and ctypes), and stays loaded (never freed), so a call still running it
finishes.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import gc
import logging
import opcode
import os
import re
import sys
import threading
import time
import _thread
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from pathlib import Path

import attrs

from . import types as T
from .arguments import Binder, arguments
from .core import CompilerConfig, CompilerJob, JitOptions
from .errors import (ArgumentTypeError, ConfigError, GPUCompilerError, PluginRequiredError, TypeInferenceError,
                     UnknownStageError, for_user)
from .interpreter.lattice import widen
from .interface import STAGE_INDEX, STAGE_NAMES
from .reference import function, reduce_wrapper
from .runtime import owned
from .settings import CompileSettings, ParallelSettings, TierSettings, debug_tracebacks
from .signatures import Signature, accepts, parse_signature

if TYPE_CHECKING:
    from .cache.report import CompileReport
    from .runtime.pyentry import Dtypes
    from .source.spec import FunctionSpec

# The compiler (frontend, interpreter, code generation, the cache and LLVM) is imported at the
# first compile, in the methods that compile: decorating costs only this module's imports.

_CTYPES = {T.boolean: ctypes.c_bool, T.int8: ctypes.c_int8, T.int16: ctypes.c_int16, T.int32: ctypes.c_int32,
           T.int64: ctypes.c_int64, T.uint8: ctypes.c_uint8, T.uint16: ctypes.c_uint16, T.uint32: ctypes.c_uint32,
           T.uint64: ctypes.c_uint64, T.float32: ctypes.c_float, T.float64: ctypes.c_double,
           T.complex64: ctypes.py_object, T.complex128: ctypes.py_object}  # complex: unboxed by the wrapper
_FAST = {int: T.int64, float: T.float64, bool: T.boolean, complex: T.complex128}
#: integer parameters are range-checked before the call: ctypes would wrap a Python int silently
_INT_RANGES = {T.int32: (-(1 << 31), (1 << 31) - 1), T.int64: (-(1 << 63), (1 << 63) - 1)}
_LOADED: dict = {}  # cache key -> (library, address): shared by every dispatcher
_BY_REPR = {repr(t): t for t in (*_CTYPES, T.none)}  # return types a dependency record can name
#: the optimisation level of a tiered first compile's quick code: at O0 the first call of a loop
#: function waits about half as long as at O1 or O2 (docs/benchmarks.md, "Tiered first compiles")
QUICK_LEVEL = 0
#: ``@jit`` compiles (and the inspection methods' inference and compiles) run one at a time in a process,
#: the callers' and the tier-up threads'; a fork waits for the one under way, so that a child never
#: inherits the lock held
_COMPILING = threading.RLock()
os.register_at_fork(before=_COMPILING.acquire, after_in_parent=_COMPILING.release,
                    after_in_child=_COMPILING.release)
log = logging.getLogger("gpucompiler.jit")
#: a function whose object code, made at :data:`QUICK_LEVEL` in a background thread while the quick code's IR is
#: generated, sets up LLVM's code generator of that level's target machine (its subtarget: ~1 ms at the machine's
#: first object in a process, on the main thread otherwise)
_WARM_IR = "define i64 @gpuc.warm(i64 %a) {\n  %b = add i64 %a, 1\n  ret i64 %b\n}\n"
_warmed: dict[Any, Any] = {}  # target -> a lock its warm-up thread holds until done


def _warm_code_generator(target) -> None:
    """Start making a small object at :data:`QUICK_LEVEL` with ``target``'s machine in a background thread,
    once per target and process. llvmlite runs one LLVM call at a time, so the stages' calls wait for the
    thread's rather than share the machine with it (a machine the stages make while the thread makes its own
    replaces it in the targets' memo: the same code, only the set-up is lost); a fork or the interpreter's exit
    waits for the thread too."""
    if target in _warmed:
        return
    import llvmlite.binding as llvm  # import time: llvmlite's library, on this thread (the stages need it next)

    done = _thread.allocate_lock()
    done.acquire()
    try:
        _thread.start_new_thread(_warm, (target, llvm.parse_assembly, done))
    except RuntimeError:  # no thread to be had: the quick compile sets it up itself
        return
    _warmed[target] = done


def _warm(target, parse, done) -> None:
    try:
        target.target_machine(QUICK_LEVEL).emit_object(parse(_WARM_IR))
    except Exception:  # a machine that cannot emit fails the quick compile itself, with its error
        pass
    finally:
        done.release()


def _wait_warm() -> None:
    for done in list(_warmed.values()):
        done.acquire()
        done.release()


os.register_at_fork(before=_wait_warm)
atexit.register(_wait_warm)

#: cyclic garbage collection waits while a ``@jit`` compile runs, as in ``pipeline.compile``, and for a tiered
#: first compile until its tier-up ends (the function compiled at both levels): what they build lives until
#: then, and the collector's passes would only rescan it (a pass of its second generation costs 1 ms, which
#: fell in the quick code's compile or not by the allocations before it). ``[holders, resume]``: the compiles
#: and tier-ups holding the pause, and whether the collector ran when the first began.
_collector = [0, False]
_collector_lock = threading.Lock()


def _hold_collector() -> None:
    with _collector_lock:
        if _collector[0] == 0:
            _collector[1] = gc.isenabled()
            gc.disable()
        _collector[0] += 1


def _release_collector() -> None:
    """The last holder resumes the collector if it ran before (a caller's own pause is kept)."""
    with _collector_lock:
        _collector[0] -= 1
        if _collector[0] == 0 and _collector[1]:
            gc.enable()


def _collector_in_child() -> None:
    """A fork's child has no tier-up thread to release the pause: it resumes as the last holder would (with a
    new lock: a tier-up may have held the parent's at the fork)."""
    global _collector_lock
    _collector_lock = threading.Lock()
    if _collector[0] and _collector[1]:
        gc.enable()
    _collector[0] = 0


os.register_at_fork(after_in_child=_collector_in_child)


class _NotCached(Exception):
    """The full level's code is in no cache tier (the probe of a tiered first compile)."""


def _not_cached(job, kinds):
    raise _NotCached(job.name)


#: the jumps of a loop's back edge (CPython 3.11's ``*JUMP_BACKWARD*``, older versions' ``JUMP_ABSOLUTE``)
_BACKWARD = frozenset(code for name, code in opcode.opmap.items() if "BACKWARD" in name or name == "JUMP_ABSOLUTE")


def _has_loop(code) -> bool:
    """Whether ``code`` (or a code object nested in it) jumps backwards: a ``for`` or ``while`` loop."""
    raw = code.co_code
    return (any(raw[k] in _BACKWARD for k in range(0, len(raw), 2))
            or any(_has_loop(c) for c in code.co_consts if isinstance(c, type(code))))


#: a tiered first compile pays when the first call is short (the quick code runs loops ~10x slower): every
#: array argument has at most this many elements, every integer argument (often a loop's bound) at most
#: this magnitude
SMALL_CALL = 1 << 12


def _small(value) -> bool:
    """Whether ``value`` is a small argument (:data:`SMALL_CALL`): arrays by their size, integers by their
    magnitude, tuples and lists item by item; floats and anything else are small."""
    if isinstance(value, int) and not isinstance(value, bool):
        return abs(value) <= SMALL_CALL
    if isinstance(value, (tuple, list)):
        return len(value) <= SMALL_CALL and all(_small(v) for v in value)
    dtype, size = getattr(value, "dtype", None), getattr(value, "size", None)
    if getattr(value, "ndim", None) == 0 and getattr(dtype, "kind", "") in "iu":  # a NumPy integer
        return abs(int(value)) <= SMALL_CALL
    return not isinstance(size, int) or size <= SMALL_CALL


def _recorded_array(text: str) -> T.Type | None:
    """An array of scalars named by its ``repr`` (``array(float64, 1d, C, managed)``: every field of
    :class:`~gpucompiler.types.ArrayType`), rebuilt only when its ``repr`` is ``text`` again."""
    parts = text[6:-1].split(", ")
    dtype = _BY_REPR.get(parts[0])
    if len(parts) < 3 or not isinstance(dtype, T.Scalar) or not parts[1][:-1].isdigit():
        return None
    rebuilt = T.ArrayType(dtype, int(parts[1][:-1]), parts[2], readonly="readonly" in parts[3:],
                          managed="managed" in parts[3:])
    return rebuilt if repr(rebuilt) == text else None


def _recorded_restype(text: str | None) -> T.Type | None:
    """The return type a verified dependency record names by its ``repr``: a scalar, none, an array or a
    typed list of scalars or a tuple (nested) of those, rebuilt only when its ``repr`` is ``text`` again; None
    for any other (inferred: records box with their full type)."""
    if text is not None and text.startswith("array(") and text.endswith(")"):
        return _recorded_array(text)
    if text is not None and text.startswith("list(") and text.endswith(")"):  # a typed list of scalars
        item = _BY_REPR.get(text[5:-1])
        rebuilt = T.ListType(item) if isinstance(item, T.Scalar) else None
        return rebuilt if rebuilt is not None and repr(rebuilt) == text else None
    if text is None or text in _BY_REPR or not (text.startswith("tuple(") and text.endswith(")")):
        return None if text is None else _BY_REPR.get(text)
    items, depth, start = [], 0, 6
    for k, ch in enumerate(text[6:-1], 6):
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            items.append(text[start:k].strip())
            start = k + 1
    if text[start:-1].strip():
        items.append(text[start:-1].strip())
    types = [_recorded_restype(i) for i in items]
    if any(t is None for t in types):
        return None
    rebuilt = T.TupleType(tuple(types))
    return rebuilt if repr(rebuilt) == text else None


def _ctype(t) -> Any:
    if isinstance(t, (T.ArrayType, T.StructArrayType, T.TupleType, T.RecordType, T.ListType, T.DictType)):
        return ctypes.py_object
    return _CTYPES.get(t)


def _holds_array(t) -> bool:
    if isinstance(t, T.TupleType):
        return any(_holds_array(it) for it in t.items)
    return isinstance(t, T.ArrayType)


def deps_valid(deps) -> bool:
    """Whether the globals a specialization read still hold (:func:`gpucompiler.source.spec.deps_valid`,
    loaded by the compile that recorded them)."""
    from .source.spec import deps_valid as still_valid

    return still_valid(deps)


class _Entry:
    __slots__ = ("call", "deps", "spec", "job", "fast", "guard", "dtypes", "full", "tier_up")

    def __init__(self, call, deps, spec, job, fast=None, guard=None):
        self.call, self.deps, self.spec, self.job = call, deps, spec, job
        #: the builtin function of the compiled entry (None: calls stay on ``call``), and its globals' guard
        self.fast, self.guard = fast, guard
        #: the structured dtypes the entry takes by address (None: no structured argument)
        self.dtypes: Dtypes | None = None
        #: quick code only: the full level's entry once it replaced this one, and the thread compiling it
        self.full: _Entry | None = None
        self.tier_up: threading.Thread | None = None


#: Numba's options that have no counterpart here, and why
_NO_COUNTERPART = {
    "locals": "types are inferred from the arguments; convert a value in the function instead "
              "(float(x), np.float32(x))",
    "looplift": "there is no object mode to lift loops out of: the whole function compiles",
    "no_cpython_wrapper": "every compiled function keeps its Python entry",
    "no_cfunc_wrapper": "there are no cfunc wrappers",
    "debug": "set GPUC_DEBUG_TRACEBACKS=1 for the compiler's tracebacks; no debug info is emitted",
    "target_backend": "@jit compiles for the host CPU; use @kernel for GPUs",
    "pipeline_class": "the pipeline is extended through plugins (docs/plugins.md)",
    "no_rewrites": "there are no Numba rewrite passes to turn off",
    "_nrt": "allocation is always available",
    "forceinline": "write inline='always'",
}
_INLINE = ("never", "always")


def _tier_option(options: dict) -> bool:
    """Pop ``tier`` (``@jit(tier=False)``: no quick code first) from ``options``; not a bool is a ConfigError."""
    tier = options.pop("tier", True)
    if not isinstance(tier, bool):
        raise ConfigError(f"jit option tier must be True or False, got {tier!r}")
    return tier


def numba_options(options: dict) -> tuple[dict, str]:
    """``options`` without Numba's spellings that are not :class:`~gpucompiler.core.JitOptions`
    fields, and the ``inline`` policy: ``nopython=True`` (the only mode) is dropped, object mode
    (``nopython=False``, ``forceobj=True``) and an option with no counterpart are ConfigErrors."""
    options = dict(options)
    nopython, forceobj = options.pop("nopython", True), options.pop("forceobj", False)
    if nopython is not True or forceobj is not False:
        raise ConfigError("object mode does not exist here: every @jit function compiles whole to machine code "
                          "(nopython=True); remove nopython=False / forceobj=True and call Python-only code "
                          "outside the compiled function")
    inline = options.pop("inline", "never")
    if inline not in _INLINE:
        raise ConfigError(f"inline must be 'never' or 'always', got {inline!r} (a cost-model function has no "
                          "counterpart: LLVM decides for 'never')")
    for name, why in _NO_COUNTERPART.items():
        if name in options:
            raise ConfigError(f"Numba's jit option {name!r} has no counterpart here: {why}")
    return options, inline


class Dispatcher:
    """A jit-compiled function; call it like the Python function."""

    def __init__(self, fn, *, signatures: tuple[Signature, ...] = (), **options):
        self.py_func = fn
        self.last_compile: CompileReport | None = None
        """The last compile's report (:class:`~gpucompiler.cache.report.CompileReport`): cache tier,
        stage times, IR sizes; None before the first."""
        self._keywords = dict(options, signatures=tuple(signatures))  # to rebuild it where it is unpickled
        options = dict(options)
        self.tier = _tier_option(options)
        """whether a first compile may run quick code first (docs/user_guide.md, "Tiered first compiles")"""
        options, self.inline = numba_options(options)
        if self.inline == "always":  # the callers' code inlines this function (codegen/module.py)
            from .codegen.module import ALWAYS_INLINE

            ALWAYS_INLINE.add(fn)
        self.options = JitOptions.from_keywords(options)
        self.opt_level, self.plugins = self.options.opt_level, self.options.plugins
        self.boundscheck, self.error_model = self.options.boundscheck, self.options.error_model
        self.declared = tuple(signatures)
        """the signatures compiled eagerly; when given, calls must fit one of them (Numba's rule)"""
        self._entries: dict = {}
        self._swap = threading.Lock()  # a tier-up's swap and the class's entry, one at a time
        self._bind = Binder(fn)
        functools.update_wrapper(self, fn)
        # a class of its own: its ``__call__`` becomes the compiled entry of the last call's types
        cls = type(self)
        self._fallback = cls.__call__.__get__(self, cls)  # what the entry calls on a miss
        own: Any = type(cls.__name__, (cls,), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
        self.__class__ = own
        for sig in self.declared:
            self._compile_signature(sig)

    def __call__(self, *args, **kwargs) -> Any:
        """The Python dispatcher: what a call runs before its first compile, and on a miss of the entry."""
        bind = self._bind
        try:
            if kwargs or len(args) != bind.positional:
                args = bind.bind(args, kwargs)
            try:
                key = tuple([_FAST[type(a)] for a in args])
            except KeyError:  # arrays, NumPy scalars, array-likes (viewed as arrays), or refused
                key, args = arguments(args, bind.names, self.py_func.__qualname__)
            entry = self._entries.get(key)
            if entry is None and self.declared:
                entry = self._fitting(key)
            if entry is None or (entry.deps and not deps_valid(entry.deps)):
                from .cache import later

                with later.held():  # the cache's work for later processes starts on its thread once this returns
                    return self._call(self._compile(key, args), args)
        except GPUCompilerError as exc:  # the caller's frame on top, not the compiler's
            raise for_user(exc, debug_tracebacks())
        return self._call(entry, args)

    def _call(self, entry: _Entry, args: tuple) -> Any:
        """Install ``entry`` (:meth:`_install`) and call it."""
        if entry.tier_up is None:
            self._install(entry, args)
        else:  # quick code: not installed after its tier-up's swap
            with self._swap:
                entry = entry.full or entry
                self._install(entry, args)
        return entry.call(*args)

    def _install(self, entry: _Entry, args: tuple = ()) -> None:
        """Make ``entry``'s compiled entry the class's ``__call__`` (or, without one, this dispatcher);
        the dtypes of the structured arrays among ``args`` (a call typed to it) are what it takes next."""
        cls = type(self)
        if entry.fast is not None:  # the next call with these types runs the compiled entry
            if entry.guard is not None:
                entry.guard.refresh()  # the reads were just checked one by one
            if entry.dtypes is not None and args:
                entry.dtypes.take(args)
            if cls.__dict__.get("__call__") is not entry.fast:
                cls.__call__ = entry.fast
        elif "__call__" in cls.__dict__:  # no entry for these types: calls come here first
            try:
                del cls.__call__
            except AttributeError:  # another thread was first
                pass

    def _compile_signature(self, sig: Signature) -> None:
        """Eager compilation: ``sig``'s argument types now; its result type, when given, must be the one
        inferred."""
        name = self.py_func.__qualname__
        if len(sig.args) != len(self._bind.names):
            raise ConfigError(f"signature {sig} of {name} has {len(sig.args)} argument types for "
                              f"{len(self._bind.names)} parameters")
        try:
            entry = self._compile(sig.args)
        except GPUCompilerError as exc:
            raise for_user(exc, debug_tracebacks())
        from .targets.native import NativeTarget

        frame = entry.spec.infer(NativeTarget(), self.plugins, True)[1]
        rt = widen(frame.rettype)
        if sig.restype is not None and rt != sig.restype:
            raise ConfigError(f"signature {sig} of {name} declares the result {sig.restype!r} but the function "
                              f"returns {rt}; declare that type or convert the result in the function")

    def result_type(self, *argtypes) -> T.Type:
        """The type a call with ``argtypes`` returns, inferred (nothing is compiled)."""
        from .targets.native import NativeTarget

        try:
            with _COMPILING:
                return widen(self._spec(argtypes).infer(NativeTarget(), self.plugins, True)[1].rettype)
        except GPUCompilerError as exc:
            raise for_user(exc, debug_tracebacks())

    def _fitting(self, key) -> _Entry | None:
        """The entry of the first signature ``key``'s argument types convert to safely, remembered for
        ``key``; none is a TypeError naming the signatures (no compilation beyond them, as in Numba)."""
        for sig in self.declared:
            if len(sig.args) == len(key) and all(accepts(p, a) for p, a in zip(sig.args, key)):
                entry = self._entries.get(sig.args)
                if entry is not None:
                    self._entries[key] = entry
                    return entry
        names = self._bind.names
        # the first argument no signature takes at its place, else the combination
        k = next((k for k, a in enumerate(key) if not any(len(s.args) == len(key) and accepts(s.args[k], a)
                                                          for s in self.declared)), None)
        param, shown = ((names[k], repr(key[k])) if k is not None and k < len(names)
                        else (", ".join(names), "(" + ", ".join(map(repr, key)) + ")"))
        raise ArgumentTypeError(param, shown, function=self.py_func.__qualname__,
                                hint="the function was compiled for " + "; ".join(map(str, self.declared))
                                + ": pass arguments of those types, or add the signature")

    def _describe(self, value) -> str:
        dtype = getattr(value, "dtype", None)
        return f"{type(value).__name__} of dtype {dtype}" if dtype is not None else type(value).__name__

    # -- compilation --------------------------------------------------------
    def _spec(self, argtypes, args=()) -> FunctionSpec:
        from .source.spec import FunctionSpec

        for k, (name, t) in enumerate(zip(self._bind.names, argtypes)):
            if t is None or _ctype(t) is None:
                shown = self._describe(args[k]) if t is None and k < len(args) else t
                raise ArgumentTypeError(name, shown, function=self.py_func.__qualname__,
                                        hint="pass bool, int, float or a NumPy array of those dtypes")
        return FunctionSpec(self.py_func, argtypes)

    def _job(self, argtypes, args=()) -> CompilerJob:
        return CompilerJob(self._spec(argtypes, args), self._config())

    def _config(self) -> CompilerConfig:
        from .targets.native import NativeTarget

        threads = ParallelSettings.from_env().threads if self.options.parallel else 0
        return CompilerConfig(NativeTarget(), frontend=self.options.frontend(threads),
                              opt_level=self.opt_level, plugins=self.plugins,
                              params={o.plugin: o for o in self.options.options})

    def _compile(self, argtypes, args=()) -> _Entry:
        """Compile for ``argtypes``; a call of an object a plugin owns (``autodiff``: enzyme) enables that
        plugin for this function (its jobs and cache keys name it) and compiles again."""
        while True:
            try:
                return self._compile_once(argtypes, args)
            except PluginRequiredError as exc:
                if exc.plugin in self.plugins:
                    raise
                self.plugins = tuple(sorted({*self.plugins, exc.plugin}))

    def _compile_once(self, argtypes, args=()) -> _Entry:
        from . import identity as _keys

        spec = self._spec(argtypes, args)
        job = CompilerJob(spec, self._config())
        _keys.machine(job.config.target)  # the host machine (part of the key): its memo, else asked of LLVM
        from .cache.default import default_cache, memory_cache

        cache = default_cache() if self.options.cache else memory_cache()  # GPUC_CACHE_*, GPUC_SERVICE_URL
        with _COMPILING:
            _hold_collector()
            handed = False
            try:
                entry = self._tiered(spec, job, argtypes, cache, all(_small(a) for a in args))
                self._entries[argtypes] = entry
                if entry.tier_up is not None:
                    entry.tier_up.start()  # the tier-up releases the collector when it ends
                    handed = True
                return entry
            finally:
                if not handed:
                    _release_collector()

    def _compiled(self, spec: FunctionSpec, job: CompilerJob, argtypes, cache,
                  compiler=None) -> tuple[_Entry, Any]:
        """The entry of ``job``'s code and the ``CachedResult``: from a cache tier, else compiled (by
        ``compiler`` when given); this dispatcher's :attr:`last_compile` reports it."""
        from .cache.report import report

        # through the cache's index key: on a hit in a fresh process no type inference runs
        start = time.perf_counter()
        result = cache.compile(job, ("obj",), compiler=compiler, check=self._before_compile)
        self.last_compile = report(result, time.perf_counter() - start, job.config.plugins)
        return self._entry(result, spec, job, argtypes), result

    def _before_compile(self, job) -> None:
        """A miss (never a hit, which loads its entry's shared object without LLVM): the LLJIT that loads the
        compiled code (its shared object, if any, is linked after the call: ``cache/later.py``) is made in the
        background (LLVM runs without the GIL) while the compile starts."""
        from .runtime import lljit

        lljit.prepare()

    def _tiered(self, spec: FunctionSpec, job: CompilerJob, argtypes, cache, small: bool) -> _Entry:
        """The entry of ``job``'s code, or, when a tiered first compile pays and is safe, of quick code
        (:data:`QUICK_LEVEL`) with a thread (not started) to compile the full level. It pays when the
        function loops, the first call's arguments are ``small`` (:func:`_small`) and no cache tier
        holds the full level's code; it is safe when both levels give
        the same bits: no fast-math, no plugin (AD differentiates the full level's IR only), no call
        of a math function that the full level may vectorize with libmvec."""
        from .targets import libmvec

        config = job.config
        if not (self.tier and small and not self.declared and config.opt_level > QUICK_LEVEL and not config.plugins
                and not config.frontend.fastmath and _has_loop(self.py_func.__code__)
                and TierSettings.from_env().enabled):
            return self._compiled(spec, job, argtypes, cache)[0]
        try:
            return self._compiled(spec, job, argtypes, cache, compiler=_not_cached)[0]  # the full level, cached
        except _NotCached:
            pass
        maths = libmvec.scalar_names()  # after the probe: a hit loads no math table
        if not maths.isdisjoint(self.py_func.__code__.co_names):
            return self._compiled(spec, job, argtypes, cache)[0]
        _warm_code_generator(config.target)  # while the quick code's IR is generated
        quick_spec = spec.without_call_entry()  # calls go through the dispatcher until the tier-up
        try:
            quick_job = CompilerJob(quick_spec, attrs.evolve(config, opt_level=QUICK_LEVEL))
            quick, result = self._compiled(quick_spec, quick_job, argtypes, cache)
        except GPUCompilerError:  # the full level's compile says what is wrong, if anything
            return self._compiled(spec, job, argtypes, cache)[0]
        symbols = result.meta.get("symbols")
        called = {row[0] for row in symbols} if symbols else set(result.module.function_names())
        if not maths.isdisjoint(called):  # a callee's math call: the full level's bits may differ
            return self._compiled(spec, job, argtypes, cache)[0]
        quick.tier_up = threading.Thread(target=self._tier_up, args=(quick, spec, argtypes, cache),
                                         name=f"tier-up {self.py_func.__qualname__}")
        return quick

    def _tier_up(self, quick: _Entry, spec: FunctionSpec, argtypes, cache) -> None:
        """The tier-up thread: compile the full level of ``spec`` (``quick``'s function, with the CPython call
        entry), then swap it in atomically (the quick code stays loaded: a call running it finishes). A failure
        keeps the quick code, which gives the same results, and is logged."""
        try:
            with _COMPILING:
                full = self._compiled(spec, CompilerJob(spec, self._config()), argtypes, cache)[0]
                with self._swap:
                    quick.full = full
                    replaced = False
                    for key, entry in list(self._entries.items()):
                        if entry is quick:
                            self._entries[key] = full
                            replaced = True
                    # the quick code has no call entry: the full level's takes the next call when the quick
                    # code is still this function's (no rebound global recompiled it meanwhile), its reads
                    # still hold (checked one by one, as a call checks them before it installs an entry: the
                    # full level was compiled from the quick compile's inference) and no other specialization's
                    # entry is installed; other types miss to the dispatcher
                    if replaced and "__call__" not in type(self).__dict__ and deps_valid(full.deps):
                        self._install(full)
        except Exception as exc:  # the quick code stays: the same results, slower
            log.warning("%s: the full optimisation level did not compile (%s: %s); the quick code stays",
                        self.py_func.__qualname__, type(exc).__name__, exc)
        finally:
            _release_collector()  # held since the quick compile began

    def wait_tier_up(self, timeout: float | None = None) -> bool:
        """Wait for the tier-ups under way; True when every specialization runs its full level's code."""
        for entry in list(self._entries.values()):
            if entry.tier_up is not None:
                entry.tier_up.join(timeout)
        return all(e.tier_up is None or e.full is not None for e in self._entries.values())

    def _entry(self, result, spec: FunctionSpec, job: CompilerJob, argtypes) -> _Entry:
        """The callable of ``result``'s code (loaded once per process, never unloaded): its entry's shared
        object through the dynamic loader, without LLVM, else its object code through the LLJIT."""
        from .runtime import shared_object
        from .runtime.pyentry import Dtypes, FastEntry, Guard, numpy_words
        from .targets.native import NativeTarget

        loaded = _LOADED.get(result.key)
        if loaded is None:
            shared, symbols = result.artifacts.get(shared_object.KIND), result.meta.get("symbols")
            lib: Any = None
            if isinstance(shared, bytes) and symbols:
                lib = shared_object.load(shared, symbols, spec.entry)
            if lib is None:
                from .runtime.cpu import CPULibrary

                lib = CPULibrary.from_cached(result)
            loaded = _LOADED[result.key] = (lib, lib.address(spec.entry + ".pywrap"))
        lib, address = loaded
        rt = _recorded_restype(spec.verified_restype(job))  # a hit through the index: no inference
        if rt is None:
            _, frame = spec.infer(NativeTarget(), self.plugins, True)
            rt = frame.rettype.type if hasattr(frame.rettype, "type") else frame.rettype
        if rt != T.none and _ctype(rt) is None:
            raise TypeInferenceError(f"{self.py_func.__qualname__} returns a value of type {rt}, which compiled "
                                     "code cannot hand back to Python", (rt,), function=self.py_func.__qualname__,
                                     hint="return bool, int, float, a tuple of those, an array, a list or a dict")
        restype = _ctype(rt) if rt != T.none else None
        native = ctypes.PYFUNCTYPE(restype, *[_ctype(t) for t in argtypes])(address)
        native._library = lib  # pyright: ignore[reportAttributeAccessIssue]  (keeps the code loaded)
        call: Callable[..., Any] = native
        ints = [(k, *_INT_RANGES[t]) for k, t in enumerate(argtypes) if t in _INT_RANGES]
        if ints:

            def guarded(*a, _call=native, _ints=ints, _name=self.py_func.__qualname__):
                for k, lo, hi in _ints:
                    if not lo <= a[k] <= hi:
                        raise OverflowError(f"argument {k + 1} of {_name} ({a[k]}) does not fit in "
                                            f"{argtypes[k]}")
                return _call(*a)

            call = guarded
        if owned.converted(rt):  # NumPy arrays of the returned memory and records (runtime/owned.py)
            box = owned.boxer(rt, self.py_func.__globals__)

            def arrays(*a, _call=call, _box=box):
                return _box(_call(*a), a)

            call = arrays
        deps = tuple(spec.dependencies(NativeTarget(), self.plugins, True))
        entry = _Entry(call, deps, spec, job)
        # a call binds positionally in the entry: not for functions with keyword-only parameters
        positional = self._bind.positional == len(argtypes)
        if positional and spec.entry + ".pyentry" in lib.names and FastEntry.available(argtypes, rt):
            guard = Guard.of(deps)
            if guard is not None:
                ndarray = getattr(sys.modules.get("numpy"), "ndarray", None)
                numpy = numpy_words() if _holds_array(rt) else None
                entry.dtypes = Dtypes.of(argtypes)
                entry.fast = FastEntry(lib.address(spec.entry + ".pyentry"), self.py_func.__name__,
                                       self._fallback, guard, ndarray, numpy, entry.dtypes).function
                entry.guard = guard
        return entry

    def _types(self, argtypes):
        return tuple(argtypes)

    # -- inspection ---------------------------------------------------------
    @property
    def signatures(self) -> list[tuple]:
        """The argument types compiled so far, one tuple per specialization (Numba's
        ``dispatcher.signatures``); each is accepted by the ``inspect_*`` methods."""
        return [key for key, entry in self._entries.items() if entry.spec.argtypes == key]

    def _argtypes(self, args) -> tuple:
        """Argument types from what the ``inspect_*`` methods are given, as Numba users give it:
        frontend types, one tuple of them (an item of :attr:`signatures`), a signature (string or
        :class:`~gpucompiler.signatures.Signature`), Python or NumPy scalar classes, or example values."""
        if len(args) == 1 and isinstance(args[0], (tuple, str, Signature)):
            one = args[0]
            return parse_signature(one).args if isinstance(one, (str, Signature)) else self._argtypes(one)
        out = []
        for k, a in enumerate(args):
            if isinstance(a, T.Type):
                out.append(a)
            elif isinstance(a, type) and a in _FAST:
                out.append(_FAST[a])
            elif isinstance(a, type):  # a NumPy scalar class (np.float32)
                out.append(T.typeof(a(0)))
            else:
                names = self._bind.names
                out.append(arguments((a,), (names[k] if k < len(names) else f"#{k}",),
                                     self.py_func.__qualname__)[0][0])
        return tuple(out)

    def _each(self, args, show: Callable[[tuple], str], signature=None) -> Any:
        """``show`` of the given types (or Numba's ``signature=`` keyword), or with neither a dict of
        every compiled signature's."""
        if signature is not None:
            args = (*args, signature)
        if not args:
            return {sig: show(sig) for sig in self.signatures}
        return show(self._argtypes(args))

    def inspect_ir(self, *argtypes, signature=None) -> Any:
        """The typed SSA IR of the specialization for ``argtypes`` and of its callees; with no
        arguments a dict ``signature -> IR`` of every compiled one."""
        return self._each(argtypes, self._typed_ir, signature)

    def _typed_ir(self, argtypes) -> str:
        from .frontend.printer import format_function
        from .source.spec import FunctionSpec
        from .targets.native import NativeTarget

        with _COMPILING:
            interp, frame = FunctionSpec(self.py_func, argtypes).infer(NativeTarget(), self.plugins, True)
        frames = [frame] + [f for f in interp.done.values() if f is not frame]
        out = []
        for f in frames:
            sig = ", ".join(f"{a.name}::{t!r}" for a, t in zip(f.ir.args, f.argtypes))
            out.append(format_function(f.ir, f.typeof, f"function {f.ir.name}({sig}) :: {f.rettype!r}"))
        return "\n\n".join(out)

    def inspect_types(self, *argtypes, file=None, signature=None) -> None:
        """Print the typed IR (Numba's ``inspect_types``): of the given types, or of every compiled
        signature, each under its signature; to ``file`` (default ``sys.stdout``)."""
        if signature is not None:
            argtypes = (*argtypes, signature)
        shown = {self._argtypes(argtypes): self._typed_ir(self._argtypes(argtypes))} if argtypes else \
            self.inspect_ir()
        for sig, text in shown.items():
            print(f"{self.py_func.__qualname__} {sig}\n{'-' * 60}\n{text}\n", file=file or sys.stdout)

    def _emit(self, kind, argtypes) -> str:
        from . import pipeline

        with _COMPILING:
            text = pipeline.compile(self._job(tuple(argtypes)), emit=(kind,)).artifacts[kind]
        assert isinstance(text, str), f"{kind} is text"
        return text

    def inspect_llvm(self, *argtypes, stage: str | None = None, signature=None) -> Any:
        """The optimised LLVM IR for ``argtypes`` (types, a signature or example values); with no
        arguments a dict ``signature -> IR`` of every compiled signature (Numba's form); with
        ``stage``, the module after that stage.

        ``stage="post_irgen"`` shows the module as plugins first see it, with
        its marker calls and ``gpuc.lookup`` of deferred jobs still in place.
        """
        if signature is not None:
            argtypes = (*argtypes, signature)
        if stage is None:
            return self._each(argtypes, lambda sig: self._emit("llvm", sig))
        import tempfile  # import time: with shutil, random, bz2 and lzma ~3 ms of import gpucompiler

        if stage not in STAGE_INDEX:
            raise UnknownStageError(stage, STAGE_NAMES)
        from . import pipeline

        job = self._job(self._argtypes(argtypes))
        with tempfile.TemporaryDirectory() as tmp:
            with _COMPILING:
                pipeline.compile(job, emit=(), settings=CompileSettings(dump_dir=Path(tmp)))
            name = re.sub(r"[^\w.-]", "_", job.name)
            return (Path(tmp) / f"{name}.{STAGE_INDEX[stage]:02d}.{stage}.after.ll").read_text()

    def inspect_asm(self, *argtypes, signature=None) -> Any:
        """The host assembly for ``argtypes``; with no arguments a dict ``signature -> assembly``."""
        return self._each(argtypes, lambda sig: self._emit("asm", sig), signature)

    def __reduce__(self) -> tuple:
        """Pickled by reference (:mod:`gpucompiler.reference`): the receiving process finds its compiles in
        the cache tiers, not in the pickle."""
        return reduce_wrapper(self, _rebuild, self._keywords, "@jit function")

    def __repr__(self) -> str:
        return f"<jit {self.py_func.__qualname__}>"


def _rebuild(ref: tuple, keywords: dict) -> Dispatcher:
    """A pickled dispatcher of a closure (or of a function its module names otherwise), rebuilt."""
    return Dispatcher(function(ref), **keywords)


def jit(fn=None, **options) -> Any:
    """Decorator: ``@jit``, ``@jit(parallel=True, fastmath=True, ...)`` or ``@jit("float64(float64[:])")``.

    Options (:class:`~gpucompiler.core.JitOptions`, Numba's meaning):
    ``opt_level``, ``plugins``, ``boundscheck`` (array indices are checked,
    ``IndexError`` as in NumPy; default on), ``error_model`` (``"python"``:
    math errors raise CPython's exceptions; ``"numpy"``: IEEE results),
    ``parallel`` (``prange`` loops on threads), ``nogil``, ``fastmath``,
    ``cache`` (on-disk cache tiers; default on), ``tier`` (quick code first
    while the full level compiles, docs/user_guide.md; default on), ``inline`` (``"never"``:
    LLVM decides; ``"always"``: calls from compiled code are inlined) and
    ``nopython=True`` (the only mode: ``nopython=False``/``forceobj=True``
    and Numba's options with no counterpart are ConfigErrors saying so).
    A signature string, a
    :class:`~gpucompiler.signatures.Signature` or a list of them as the first
    argument compiles at once and limits calls to those types. All are part
    of the job key; a wrong name or value raises ConfigError.
    """
    signatures = ()
    if isinstance(fn, (str, Signature, list, tuple)):
        signatures = tuple(parse_signature(s) for s in (fn if isinstance(fn, (list, tuple)) else [fn]))
        fn = None
    checked = dict(options)
    _tier_option(checked)
    JitOptions.from_keywords(numba_options(checked)[0])  # a wrong option fails at the decorator
    if fn is None:
        return lambda f: Dispatcher(f, signatures=signatures, **options)
    return Dispatcher(fn, signatures=signatures, **options)


def njit(fn=None, **options) -> Any:
    """Numba's ``njit``: :func:`jit` (every function compiles without object mode)."""
    return jit(fn, **options)
