"""``@kernel``: GPU kernels written in Python, launched as ``k[grid, block](*args)``.

::

    from gpucompiler import kernel, device as gd

    @kernel
    def saxpy(a, x, y):
        i = gd.grid(1)
        if i < y.shape[0]:
            y[i] = a * x[i] + y[i]

    saxpy[blocks, 256](2.0, x, y)            # the kernel's target (default: the GPU's), the arrays' stream
    saxpy[blocks, 256, stream](2.0, x, y)    # a stream of its runtime (CuPy, PyTorch, int handle...)
    saxpy[blocks, 256, target](2.0, x, y)    # another target object (parse_target("ptx:sm_80")...)
    saxpy[blocks, 256, "cpu"](2.0, x, y)     # CPU grid emulation on NumPy arrays

``@kernel(target=...)`` names the target a kernel compiles for; by default
it is the registered target that says ``kernel_default`` (NVIDIA PTX). The
launch goes through that target's runtime (:mod:`gpucompiler.runtime.launchers`).

``grid`` and ``block`` are an int or a tuple of up to three ints. Every
argument-type combination is specialised once; the same checks run for both
devices (a kernel returns nothing and does not recurse; calls to anything
without a GPU implementation fail type inference with the offending line),
so a kernel that runs in the emulation also compiles for the GPU.
"""

from __future__ import annotations

import contextvars
import functools
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from . import types as T
from .arguments import Binder
from .core import CompilerConfig, CompilerJob, FrontendOptions, Target, plugin_options
from .errors import (ConfigError, ErrorKind, ErrorModel, GPUCompilerError, KernelError, LaunchError, PluginRequiredError,
                     error_model_option, for_user)
from .interpreter.lattice import widen
from .reference import function, reduce_wrapper
from .runtime.arguments import argument_type, kernel_argument
from .runtime.devices import Device, chosen, restore
from .settings import debug_tracebacks

if TYPE_CHECKING:
    from .cache.report import CompileReport
    from .runtime.launchers import Runtime
    from .source.spec import FunctionSpec

# The compiler (the kernel language's rules, frontend, interpreter, code generation, the cache and
# LLVM) is imported at the first compile, in the methods that compile: decorating costs only this
# module's imports.

NATIVE_AFTER = 16
"""Bound launches of one launch object before its runtime is asked for a native entry (see :class:`Launch`);
each later ask waits twice as long as the one before, up to :data:`NATIVE_WAIT` launches."""
NATIVE_WAIT = 1024
"""The most bound launches between two asks for a native entry (a launch whose signature changed since gets
one within as many launches; a signature no entry takes costs an ask per as many)."""
NATIVE_CHAIN = 4
"""The most native entries of one launch object, each the fallback of the next one made (launches alternating
between signatures stay native); the next one starts a new chain."""

CPU = "cpu"
"""The device spelling of the CPU grid emulation: ``k[grid, block, "cpu"]``."""

_RECORDER: contextvars.ContextVar[Callable[[Launch, tuple], None] | None] = contextvars.ContextVar(
    "gpuc_launch_recorder", default=None)
"""The launch recorder of this thread or task (a context variable: each thread and asyncio task sees its own)."""


def start_recording(record: Callable[[Launch, tuple], None]) -> contextvars.Token:
    """Make ``record`` this thread's (or task's) launch recorder, as :class:`recording_launches` does; the
    token is :func:`stop_recording`'s. (A launch tape starts one per recording: two calls, no object.)"""
    if _RECORDER.get() is not None:
        raise LaunchError("launches are already being recorded (a launch tape inside another one): "
                          "record one program at a time")
    return _RECORDER.set(record)


stop_recording: Callable[[contextvars.Token], None] = _RECORDER.reset
"""End the recording :func:`start_recording` started with the token given (the context variable's own
``reset``: no Python frame)."""

current_recorder: Callable[[], Callable[[Launch, tuple], None] | None] = _RECORDER.get
"""This thread's (or task's) launch recorder, or None (the context variable's own ``get``)."""

set_recorder: Callable[[Callable[[Launch, tuple], None]], contextvars.Token] = _RECORDER.set
""":func:`start_recording` without its check, for a caller that found :func:`current_recorder` None (the
context variable's own ``set``: no Python frame)."""


class recording_launches:  # (named as the function it replaces: ``with recording_launches(record):``)
    """While active, a launch ``k[grid, block](*args)`` calls ``record(launch, bound_args)`` *instead of*
    running; ``record`` runs it with :meth:`Launch.run`. One recorder at a time: the AD plugin's launch tape
    (``enzyme_plugin.LaunchTape``) is one. A native launch entry hands its call to ``record`` itself."""

    __slots__ = ("record", "token")

    def __init__(self, record: Callable[[Launch, tuple], None]):
        self.record = record
        self.token: contextvars.Token | None = None

    def __enter__(self) -> None:
        self.token = start_recording(self.record)

    def __exit__(self, *exc) -> None:
        token, self.token = self.token, None
        if token is not None:
            stop_recording(token)

#: NVIDIA's largest grid and block per axis (x, y, z): the CPU grid emulation keeps them too, so a launch
#: it runs also runs on a GPU (and a mistyped 2**40 blocks is an error, not an endless emulation)
_MAX_DIMS = {"grid": (2**31 - 1, 65535, 65535), "block": (1024, 1024, 64)}


def _exact(dims) -> bool:
    """Whether launch dimensions are an int or a tuple of ints (not a bool or a float equal to one)."""
    return type(dims) is int or (type(dims) is tuple and all(type(d) is int for d in dims))


def normalize_dims(value, what: str) -> tuple[int, int, int]:
    """``int | tuple`` of up to 3 positive ints -> ``(x, y, z)``, each within NVIDIA's limit for ``what``."""
    if type(value) is int and 1 <= value <= _MAX_DIMS[what][0]:  # the common spelling, checked at once
        return value, 1, 1
    dims = (value,) if isinstance(value, int) else tuple(value) if isinstance(value, (tuple, list)) else None
    if (dims is None or not 1 <= len(dims) <= 3
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in dims)):
        raise LaunchError(f"{what} must be a positive int or a tuple of 1 to 3 positive ints, got {value!r}")
    padded = (*dims, 1, 1)[:3]
    for axis, d, most in zip("xyz", padded, _MAX_DIMS[what]):
        if d > most:
            raise LaunchError(f"{what}.{axis} is at most {most} (as on NVIDIA GPUs), got {d}")
    return padded[0], padded[1], padded[2]


# -- source-level checks (same for every device) ----------------------------------------
def check_kernel(spec: FunctionSpec, target: Target, plugins=()) -> None:
    """Kernel rules on the typed IR (``target``'s rules): no return value, no recursion."""
    from .frontend.ir import Return

    _, frame = spec.infer(target.for_inference(), tuple(plugins))
    name = frame.ir.name
    if widen(frame.rettype) != T.none:
        loc = next((frame.where(bl.term) for bl in frame.ir.blocks
                    if isinstance(bl.term, Return) and frame.executable(bl)
                    and widen(frame.typeof(bl.term.value)) != T.none), (frame.ir.filename, frame.ir.line, 0))
        raise KernelError(ErrorKind.RETURN_VALUE, f"a kernel returns nothing, this one returns "
                                          f"{widen(frame.rettype)!r}", loc, name,
                          "write results into an array argument")
    _check_recursion(frame)


def _check_recursion(entry) -> None:
    state: dict = {}  # frame -> 1 on the path, 2 done

    def visit(frame):
        state[frame] = 1
        for inst, res in frame.calls.items():
            callee = res.callee
            if callee is None:
                continue
            if state.get(callee) == 1:
                raise KernelError(ErrorKind.RECURSION, f"{callee.ir.name} is called recursively",
                                  frame.where(inst), frame.ir.name,
                                  "GPU kernels cannot recurse: rewrite the recursion as a loop")
            if callee not in state:
                visit(callee)
        state[frame] = 2

    visit(entry)


def kernel_symbol(fn) -> str:
    """The kernel's name in the compiled code: the function's name with non-identifier characters replaced."""
    return re.sub(r"\W", "_", fn.__name__)


# -- the kernel object ---------------------------------------------------------------
class Kernel:
    """A ``@kernel`` function: index it with a launch configuration to call it."""

    def __init__(self, fn, *, opt_level: int = 3, fastmath: bool = False, maxregs: int | None = None,
                 plugins=(), boundscheck: bool | None = None,
                 error_model: ErrorModel = ErrorModel.NUMPY, target: Target | None = None, options=()):
        if error_model_option(error_model) is not ErrorModel.NUMPY:
            raise ConfigError("kernels cannot raise Python exceptions: their math gives IEEE results "
                              "(error_model=ErrorModel.NUMPY); check inputs before the launch")
        self.bind = Binder(fn)
        self.py_func = fn
        self.last_compile: CompileReport | None = None
        """The last compile's report (:class:`~gpucompiler.cache.report.CompileReport`): cache tier,
        stage times, IR sizes; None before the first."""
        #: None: the default of each device (on in the CPU grid emulation, off on the GPU as in CUDA C)
        self.boundscheck = None if boundscheck is None else bool(boundscheck)
        self.plugins = tuple(sorted(set(plugins)))
        #: plugins' typed options (``PluginOptions``), part of every job key
        self.options = plugin_options(options)
        if target is not None and not isinstance(target, Target):
            raise ConfigError(f"kernel target must be a Target object (e.g. parse_target('ptx:sm_80')), "
                              f"got {target!r}")
        self.opt_level, self.fastmath, self.maxregs = opt_level, fastmath, maxregs
        #: the target named by ``kernel(target=...)``; None: the default kernel target
        self.requested_target = target
        self._target: Target | None = None
        self.symbol = kernel_symbol(fn)
        self._specs: dict = {}
        self._checked: set = set()
        self._compiled: dict = {}   # (argtypes, target) -> (artifact, job)
        self._on: dict = {}         # target -> this kernel compiled for that target (a launch naming it)
        self._runtime: Runtime | None = None  # the runtime that launched it (forgets its code on a rebind)
        self._emulated: dict = {}
        self._deps: list = []       # every global read by any specialisation (world age)
        self._deps_current: Callable[[list], bool] = _no_deps  # checks _deps (set with the first ones)
        self._epoch = 0             # counts the times a rebound global made it forget its code
        self._launches: dict = {}   # configuration -> Launch (ints, tuples, None/int/str streams only)
        self._runs: dict = {}       # (grid, block, stream handle, no stream given) -> the runtime's launch
        functools.update_wrapper(self, fn)

    def __call__(self, *args):
        raise LaunchError(f"launch kernel {self.py_func.__qualname__} with a configuration: "
                          f"{self.py_func.__name__}[grid, block](...) or [grid, block, stream]")

    def __getitem__(self, config) -> Launch:
        try:
            hit = self._launches.get(config)
        except TypeError:  # unhashable (a list): not cached
            hit = None
        # a hit's dimensions are ints, as the configuration's must be: True or 1.0 equal 1 but are refused
        if hit is not None and (type(config[0]) is int or _exact(config[0])) \
                and (type(config[1]) is int or _exact(config[1])):
            return hit
        if not isinstance(config, tuple) or len(config) not in (2, 3):
            raise LaunchError(f"launch configuration must be [grid, block] or [grid, block, stream, target "
                              f"or 'cpu'], got {config!r}")
        stream = config[2] if len(config) == 3 else None
        k, device = self, None
        if isinstance(stream, Target):  # a target, its runtime's default stream
            k, stream = self.on(stream), None
        elif isinstance(stream, Device):  # a device, its default stream
            device, stream = stream, None
        launch = Launch(k, normalize_dims(config[0], "grid"), normalize_dims(config[1], "block"), stream, device)
        # cache configurations of plain values only: a stream object is not kept alive here
        if (stream is None or type(stream) in (int, str) or k is not self or device is not None) \
                and len(self._launches) < 256:
            try:
                self._launches[config] = launch
            except TypeError:
                pass
        return launch

    # -- the target ------------------------------------------------------------------
    @property
    def target(self) -> Target:
        """The target this kernel compiles for: ``kernel(target=...)``, else the default kernel target,
        with the kernel's ``fastmath`` and ``maxregs`` (a launch's runtime may specialise it for its
        device: the GPU's compute capability)."""
        target = self._target
        if target is None:
            from .targets import default_kernel_target

            base = self.requested_target if self.requested_target is not None else default_kernel_target()
            target = self._target = base.for_kernel(self.fastmath, self.maxregs)
        return target

    def on(self, target: Target) -> Kernel:
        """This kernel compiled for ``target`` (same function and options): ``k[grid, block, target]``."""
        if target == self.requested_target:
            return self
        k = self._on.get(target)
        if k is None:
            k = self._on[target] = Kernel(self.py_func, opt_level=self.opt_level, fastmath=self.fastmath,
                                          maxregs=self.maxregs, plugins=self.plugins,
                                          boundscheck=self.boundscheck, target=target, options=self.options)
        return k

    # -- specialisation ------------------------------------------------------------
    def argument_types(self, args) -> tuple:
        """The types of bound positional arguments (see :meth:`Launch.__call__` for the binding)."""
        names = self.bind.names
        if len(args) != len(names):
            self.bind.bind(args, {})  # raises the binding error
        return tuple(argument_type(a, n, self.py_func.__qualname__) for a, n in zip(args, names))

    def host_arguments(self, args) -> tuple[tuple, tuple]:
        """``(types, values)`` of bound arguments in host memory: array-likes viewed as NumPy arrays."""
        names, name = self.bind.names, self.py_func.__qualname__
        typed = [(argument_type(a, n, name), a) if hasattr(a, "__cuda_array_interface__")
                 else kernel_argument(a, n, name)
                 for a, n in zip(args, names)]
        return tuple(t for t, _ in typed), tuple(v for _, v in typed)

    def _spec(self, argtypes) -> FunctionSpec:
        """The (not yet checked) :class:`FunctionSpec` of ``argtypes``: one per signature."""
        spec = self._specs.get(argtypes)
        if spec is None:
            from . import device  # noqa: F401  (the kernel language's rules, registered by its import)
            from .source.spec import FunctionSpec

            spec = self._specs[argtypes] = FunctionSpec(self.py_func, argtypes)
        return spec

    def specialization(self, argtypes) -> FunctionSpec:
        """The checked :class:`FunctionSpec` for ``argtypes`` (types of :mod:`gpucompiler.types`)."""
        spec = self._spec(argtypes)
        if argtypes not in self._checked:
            check_kernel(spec, self.target, self.plugins)
            self._checked.add(argtypes)
        return spec

    def _checker(self, argtypes) -> Callable[[CompilerJob], None]:
        """The kernel rules for ``argtypes``, as the cache runs them before it compiles a job (a hit was
        checked when it was compiled: the rules' outcome is decided by what the key covers)."""
        def check(_job: CompilerJob) -> None:
            self.specialization(argtypes)
        return check

    def refresh(self) -> None:
        """World age: when a global any compiled specialisation read was rebound, forget them all
        (compiled code, emulation, what the runtime loaded), so the next launch compiles against the new value."""
        if self._deps and not self._deps_current(self._deps):
            self._epoch += 1  # first: a launch of another thread that finds the reads cleared sees it moved
            self._specs.clear()
            self._checked.clear()
            self._compiled.clear()
            self._emulated.clear()
            self._deps.clear()
            self._runs.clear()
            if self._runtime is not None:
                self._runtime.forget(self)

    @property
    def world_age(self) -> int:
        """How many times :meth:`refresh` forgot this kernel's code for a rebound global: what a caller worked
        out from the code once (a launch tape's plan) holds while this stays the same."""
        return self._epoch

    def _record_deps(self, deps) -> None:
        """Add a specialisation's global reads to those :meth:`refresh` checks."""
        from .source.spec import deps_valid  # loaded by the compile that recorded the reads

        self._deps_current = deps_valid
        self._deps.extend(deps)

    def job(self, argtypes, target: Target | None = None, *, checked: bool = True) -> CompilerJob:
        """The :class:`~gpucompiler.core.CompilerJob` of ``argtypes`` for ``target`` (default: the kernel's)
        (``checked=False``: the kernel rules are left to the compile)."""
        argtypes = tuple(argtypes)
        target = self.target if target is None else target
        return CompilerJob(self.specialization(argtypes) if checked else self._spec(argtypes),
                           CompilerConfig(target, kernel=True, name=self.symbol, opt_level=self.opt_level,
                                          plugins=self.plugins, frontend=self._frontend(),
                                          params={o.plugin: o for o in self.options}))

    def _frontend(self) -> FrontendOptions:
        """Frontend options: ``boundscheck`` only when on (a bad index traps: a launch error)."""
        return FrontendOptions(boundscheck=self.boundscheck is True)

    def compile(self, argtypes, target: Target | None = None):
        """``(code, job)`` for ``argtypes`` and ``target`` (default: the kernel's): the artifact its runtime
        loads (:attr:`Target.launch_artifact <gpucompiler.core.Target.launch_artifact>`: PTX text for PTX).

        Through the compile cache (memory, disk, shared tiers, service) with the
        two-level key of Python sources: a fresh process finds a cached kernel,
        nested ``autodiff`` jobs included, without running the frontend or the
        interpreter; the kernel rules run only before a compile.
        """
        target = self.target if target is None else target
        key = (tuple(argtypes), target)
        hit = self._compiled.get(key)
        if hit is None:
            return self._enabling_plugins(lambda: self._compile(key, target))
        return hit

    def _compile(self, key, target: Target):
        from .cache.report import report
        from .cache.default import compile_cached

        hit = self._compiled.get(key)
        if hit is None:
            argtypes = key[0]
            job = self.job(argtypes, target, checked=False)
            kind = target.launch_artifact
            start = time.perf_counter()
            result = compile_cached(job, (kind,), check=self._checker(argtypes))
            self.last_compile = report(result, time.perf_counter() - start, job.config.plugins)
            self._record_deps(self._spec(argtypes).dependencies(job.target, job.config.plugins))
            hit = self._compiled[key] = (result.artifacts[kind], job)
        return hit

    def inspect_asm(self, *argtypes, target: Target | None = None) -> str:
        """The assembly (PTX for PTX) of the specialisation for ``argtypes`` (types, or example arguments)
        on ``target`` (default: the kernel's)."""
        from . import pipeline

        target = self.target if target is None else target
        if target.launch_artifact == "asm":
            text = self.compile(self._types(argtypes), target)[0]
        else:
            text = pipeline.compile(self.job(self._types(argtypes), target), ("asm",)).artifacts["asm"]
        assert isinstance(text, str)
        return text

    def inspect_llvm(self, *argtypes, target: Target | None = None) -> str:
        """The final LLVM IR of the specialisation for ``argtypes`` on ``target`` (default: the kernel's)."""
        from . import pipeline

        text = pipeline.compile(self.job(self._types(argtypes), target), ("llvm",)).artifacts["llvm"]
        assert isinstance(text, str)
        return text

    def _types(self, argtypes) -> tuple:
        if all(isinstance(t, T.Type) for t in argtypes):
            return tuple(argtypes)
        return self.argument_types(argtypes)

    def emulated(self, argtypes):
        """The CPU grid emulation of ``argtypes`` (compiled once, through the cache)."""
        em = self._emulated.get(argtypes)
        if em is None:
            return self._enabling_plugins(lambda: self._emulate(argtypes))
        return em

    def _emulate(self, argtypes):
        from .runtime.grid import EmulatedKernel

        em = self._emulated.get(argtypes)
        if em is None:
            em = EmulatedKernel(self._spec(argtypes), self.opt_level, self.plugins, self.boundscheck is not False,
                                check=self._checker(argtypes), options=self.options)
            self._record_deps(em.deps)
            self._emulated[argtypes] = em
            self.last_compile = em.compile_report
        return em

    def _enabling_plugins(self, make):
        """``make()``; when the kernel calls an object a plugin owns (``autodiff``: enzyme), that plugin
        is enabled for this kernel (its jobs and cache keys name it) and ``make()`` runs again."""
        while True:
            try:
                return make()
            except PluginRequiredError as exc:
                if exc.plugin in self.plugins:
                    raise
                self.plugins = tuple(sorted({*self.plugins, exc.plugin}))

    def __reduce__(self) -> tuple:
        """Pickled by reference (:mod:`gpucompiler.reference`), as a ``@jit`` function: the receiving process
        finds its compiles in the cache tiers, not in the pickle."""
        keywords = {"opt_level": self.opt_level, "fastmath": self.fastmath, "maxregs": self.maxregs,
                    "plugins": self.plugins, "boundscheck": self.boundscheck, "target": self.requested_target,
                    "options": self.options}
        return reduce_wrapper(self, _rebuild, keywords, "kernel")

    def __repr__(self) -> str:
        return f"<kernel {self.py_func.__qualname__}>"


def _no_deps(_deps: list) -> bool:
    """No global read recorded yet: nothing to check."""
    return True


def _rebuild(ref: tuple, keywords: dict) -> Kernel:
    """A pickled kernel of a closure (or of a function its module names otherwise, or ``k.on(target)``)."""
    return Kernel(function(ref), **keywords)


class Launch:
    """A kernel with its grid, block and stream (or GPU: ``device``, a
    :class:`~gpucompiler.runtime.devices.Device`); call it with the arguments.

    The first launch binds the configuration to its runtime (:func:`~gpucompiler.runtime.launchers.bound_launch`);
    a later one with positional arguments only, no device given, no recorder and no global rebound since
    (world age) calls that bound launch directly. After ``NATIVE_AFTER`` of these, the runtime may give a
    native entry doing the same checks and launch in compiled code (``native(run, args, fallback,
    recorder, launch)``: the CUDA runtime's, :mod:`gpucompiler.runtime.launch_entry`): it becomes this object's
    ``__call__`` (the object's class is replaced by a subclass made for it), and calls it cannot take go
    to the entry made before it (another signature's), at last to this class's ``__call__``: at most
    ``NATIVE_CHAIN`` entries. Each later ask waits twice as long, at most ``NATIVE_WAIT`` launches.
    """

    __slots__ = ("kernel", "grid", "block", "stream", "device", "_bound", "_nargs", "_hits", "_every",
                 "_entries")

    def __init__(self, kernel: Kernel, grid, block, stream, device: Device | None = None):
        self.kernel, self.grid, self.block, self.stream, self.device = kernel, grid, block, stream, device
        #: (the kernel's epoch, the runtime's launch), bound on the first launch through a runtime: a rebound
        #: global moves the epoch (one tuple: a thread sees the launch with the epoch it was bound in)
        self._bound: tuple[int, Callable[[tuple], None]] | None = None
        self._nargs = kernel.bind.positional
        #: bound launches left before the runtime is asked for a native entry, and the wait after that ask
        self._hits = self._every = NATIVE_AFTER
        #: the native entries of this object, the newest first (each one's misses call the next one)
        self._entries: tuple = ()

    def __call__(self, *args, **kwargs) -> None:
        record = _RECORDER.get()
        if record is not None and not kwargs and len(args) == self._nargs:  # a launch tape records and launches it
            try:
                return record(self, args)
            except GPUCompilerError as exc:  # the caller's frame on top, not the recorder's
                raise for_user(exc, debug_tracebacks())
        bound = self._bound
        if bound is not None and not kwargs and len(args) == self._nargs and self.device is None \
                and record is None:
            k = self.kernel
            deps = k._deps
            if bound[0] == k._epoch and (not deps or k._deps_current(deps)):
                try:
                    bound[1](args)
                except GPUCompilerError as exc:  # the caller's frame on top, not the compiler's
                    raise for_user(exc, debug_tracebacks())
                self._hits -= 1
                if not self._hits:
                    self._native(bound[1], args)
                return None
        try:
            return self._call(args, kwargs)
        except GPUCompilerError as exc:  # the caller's frame on top: this one, no frame of the compiler's
            raise for_user(exc, debug_tracebacks())

    def _native(self, run, args) -> None:
        """Ask the runtime for a native entry of ``run`` (launches like ``args``); where it gives one, make it
        this object's ``__call__``, its misses calling the entry before it or :meth:`__call__` of this class."""
        self._every = min(2 * self._every, NATIVE_WAIT)
        self._hits = self._every
        native = getattr(self.kernel._runtime, "native", None)
        chain = self._entries if len(self._entries) < NATIVE_CHAIN else ()
        fallback = chain[0] if chain else functools.partial(Launch.__call__, self)
        entry = None if native is None else native(run, args, fallback, _RECORDER, self)
        if entry is not None:
            self._entries = (entry, *chain)
            cls = type("Launch", (Launch,), {"__slots__": (), "__call__": entry, "__module__": __name__,
                                             "__qualname__": "Launch"})
            object.__setattr__(self, "__class__", cls)

    def _call(self, args, kwargs) -> None:
        record = _RECORDER.get()
        if record is not None:
            bind = self.kernel.bind
            return record(self, tuple(args if not kwargs and len(args) == bind.positional
                                      else bind.bind(args, kwargs)))
        device = self.device
        token = None if device is None else chosen(device)  # the runtime launches on the chosen device
        try:
            return self._first(args, kwargs)
        finally:
            if token is not None:
                restore(token)

    def run(self, *args, **kwargs) -> None:
        """Launch now, also while launches are recorded (:func:`recording_launches`)."""
        token = _RECORDER.set(None)
        try:
            return self(*args, **kwargs)
        finally:
            _RECORDER.reset(token)

    def _first(self, args, kwargs) -> None:
        k = self.kernel
        bind = k.bind
        if kwargs or len(args) != bind.positional:
            args = bind.bind(args, kwargs)
        k.refresh()
        bound = self._bound
        if bound is not None and bound[0] == k._epoch:
            return bound[1](args)
        if isinstance(self.stream, str):
            if self.stream != CPU:
                raise LaunchError(f"unknown device {self.stream!r}; use {CPU!r} for the CPU grid emulation, "
                                  "a target object or a stream")
            types, values = k.host_arguments(args)
            return k.emulated(types).launch(self.grid, self.block, values)
        from .runtime.launchers import bound_launch, runtime_for  # a runtime loads its bindings at the first launch

        runtime = runtime_for(k.target)
        if self.device is not None and not getattr(runtime, "chooses_devices", False):
            raise LaunchError(f"{k.py_func.__qualname__}[..., {self.device!r}]: the runtime of "
                              f"{k.target!r} does not choose GPUs by number; launch without a device")
        k._runtime = runtime
        key = (self.grid, self.block, runtime.stream_handle(self.stream), self.stream is None)
        run = k._runs.get(key)
        if run is None:  # one per stream handle: a launch on a stream object (a new Launch each time) finds it
            run = bound_launch(runtime, k, self.grid, self.block, self.stream)
            if len(k._runs) < 256:
                k._runs[key] = run
        self._bound = (k._epoch, run)
        return run(args)


def kernel(fn=None, **options):
    """Decorator: ``@kernel`` or ``@kernel(opt_level=3, fastmath=True, maxregs=64, plugins=("name",),
    target=parse_target("ptx:sm_80"), options=EnzymeOptions(...))`` (``options``: plugins' typed
    :class:`~gpucompiler.core.PluginOptions`, part of the job key).

    ``boundscheck=True`` checks every array index: on the GPU a bad index
    traps (``llvm.trap``; the launch reports a CUDA error), under the CPU
    grid emulation the launch raises ``IndexError`` with the kernel's
    ``file:line``. By default checks are on in the emulation (it is for
    debugging) and off on the GPU; ``boundscheck=False`` turns them off in both.
    """
    if fn is None:
        return lambda f: Kernel(f, **options)
    return Kernel(fn, **options)


__all__ = ["CPU", "Kernel", "Launch", "kernel", "recording_launches", "start_recording", "stop_recording",
           "current_recorder", "set_recorder", "check_kernel", "kernel_symbol", "normalize_dims"]
