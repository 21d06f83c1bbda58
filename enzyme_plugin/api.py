"""The user-facing API: ``autodiff(mode, f, *args)``, modes and activities (Enzyme.jl's conventions).

In compiled code (``@jit(plugins=("enzyme",))``, ``@kernel(plugins=("enzyme",))``)
a call ``autodiff(Reverse, f, Active(x), Duplicated(a, da), Const(n))`` becomes
a nested compile job of ``f`` that the AD stage differentiates
(:mod:`enzyme_plugin.rules`, :mod:`enzyme_plugin.plugin`). From plain Python
the same call compiles a small entry function for the CPU and runs it.

Conventions (as in Enzyme.jl):

* ``Reverse``: returns a tuple with the derivative of every ``Active``
  argument, in argument order; a floating-point result of ``f`` is seeded
  with 1.0. ``Duplicated(a, da)`` *adds* the gradient with respect to ``a``
  into ``da``.
* ``Forward``: ``Duplicated(x, dx)`` gives the tangent ``dx`` of ``x``;
  returns ``(df,)``, the tangent of ``f``'s floating-point result (``()``
  when ``f`` returns nothing); tangents of arrays ``f`` writes land in their
  shadows.
* ``ReverseWithPrimal``: ``((derivatives...), primal)``; ``ForwardWithPrimal``:
  ``(df, primal)`` (``(primal,)`` when ``f`` returns nothing), as Enzyme.jl.
  From plain Python the primal is a separate compiled call of ``f`` on
  copies of its array arguments, before the derivative's call; in compiled
  code the derivative returns it (``enzyme_primal_return``, ``f`` returning a float).
* ``Const(v)`` (and any argument given without an activity) is not
  differentiated; ``DuplicatedNoNeed`` is ``Duplicated`` whose primal
  writes are not needed afterwards.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import linecache
import sys
import types as pytypes

import attrs

from gpucompiler import jit, settings
from gpucompiler.kernel import Kernel, Launch
from gpucompiler.errors import (PLUGIN_ATTRIBUTE, ArgumentBindingError, ArgumentTypeError, GPUCompilerError,
                               for_user)


class Activity(enum.Enum):
    """How ``autodiff`` treats an argument (Enzyme's annotations); the value is the code the
    marker call carries to the AD stage (:mod:`enzyme_plugin.rules.lowering`)."""

    CONST = 0
    ACTIVE = 1
    DUP = 2
    DUPNONEED = 3
    TAPE = 4
    """The split-mode tape holder: internal, never a user's annotation."""
    WIDTH = 5
    """The batch width of a call with ``BatchDuplicated`` arguments: internal, never a user's annotation."""
    RUNTIME_ACTIVITY = 6
    """A call in a mode with runtime activity (:func:`set_runtime_activity`): internal."""
    PRIMAL_RETURN = 7
    """A call of a ``...WithPrimal`` mode in compiled code (the primal result returned too): internal."""

    @property
    def duplicated(self) -> bool:
        """A value with a shadow (``Duplicated``, ``DuplicatedNoNeed``)."""
        return self in (Activity.DUP, Activity.DUPNONEED)

    @property
    def marker(self) -> str:
        """The name of Enzyme's marker global for this activity (``enzyme_dup``, ...)."""
        return _MARKERS[self]


_MARKERS = {Activity.CONST: "enzyme_const", Activity.ACTIVE: "enzyme_out", Activity.DUP: "enzyme_dup",
            Activity.DUPNONEED: "enzyme_dupnoneed", Activity.TAPE: "enzyme_tape", Activity.WIDTH: "enzyme_width",
            Activity.RUNTIME_ACTIVITY: "enzyme_runtime_activity", Activity.PRIMAL_RETURN: "enzyme_primal_return"}


class Mode(enum.Enum):
    """An AD mode; use the names :data:`Reverse`, :data:`Forward` & co. The value is the mode's
    name (part of a nested job's identity); :attr:`code` is what the marker call carries."""

    Reverse = "Reverse"
    Forward = "Forward"
    ReverseWithPrimal = "ReverseWithPrimal"
    ForwardWithPrimal = "ForwardWithPrimal"
    ReverseSplit = "ReverseSplit"
    Augment = "Augment"
    """The forward half of split mode (emitted only by :mod:`enzyme_plugin.split`)."""
    SplitReverse = "SplitReverse"
    """The reverse half of split mode (emitted only by :mod:`enzyme_plugin.split`)."""

    def __repr__(self) -> str:
        return self.name

    @property
    def code(self) -> int:
        """The mode's code in the marker call (:mod:`enzyme_plugin.rules.lowering`); only the modes
        a marker call can carry have one."""
        return _MODE_CODES[self]

    @property
    def is_split_half(self) -> bool:
        """One half of split mode (:data:`Augment`, :data:`SplitReverse`): the tape holder comes first."""
        return self in (Mode.Augment, Mode.SplitReverse)

    @staticmethod
    def of_code(code: int) -> Mode:
        """The mode a marker call's code stands for (``ValueError`` if none)."""
        for mode, c in _MODE_CODES.items():
            if c == code:
                return mode
        raise ValueError(f"unknown mode code {code}")


_MODE_CODES = {Mode.Reverse: 0, Mode.Forward: 1, Mode.Augment: 2, Mode.SplitReverse: 3}

Reverse = Mode.Reverse
"""Reverse mode: derivatives of ``Active`` scalars returned, gradients added into shadows."""
Forward = Mode.Forward
"""Forward mode: tangents in, the tangent of the result out."""
ReverseWithPrimal = Mode.ReverseWithPrimal
"""As :data:`Reverse`, returning ``(derivatives, primal)``."""
ForwardWithPrimal = Mode.ForwardWithPrimal
"""As :data:`Forward`, returning ``(df, primal)``."""
WITH_PRIMAL = {ReverseWithPrimal: Reverse, ForwardWithPrimal: Forward}
ReverseSplit = Mode.ReverseSplit
"""Split reverse mode: see :func:`enzyme_plugin.split.autodiff_thunk`."""


@attrs.frozen
class RuntimeActivity:
    """A mode with Enzyme's runtime activity (made by :func:`set_runtime_activity`)."""

    mode: Mode

    def __repr__(self) -> str:
        return f"set_runtime_activity({self.mode!r})"


_RUNTIME = {m: RuntimeActivity(m) for m in (Reverse, Forward, ReverseWithPrimal, ForwardWithPrimal)}
"""One object per mode with runtime activity (compiled code compares constant modes by identity)."""


def set_runtime_activity(mode, on: bool = True):
    """``mode`` with Enzyme's runtime activity: an active value stored into memory that has no shadow (a
    ``Const`` array, or memory derived from one) loses its derivative there, instead of raising ``ADError``.

    As in Enzyme.jl, the derivatives that flow through such memory are dropped: use it when that memory
    is meant to be constant (a scratch buffer the result does not depend on through its contents)."""
    base, _ = mode_options(mode)
    if base not in _RUNTIME:
        raise ArgumentTypeError("mode", type(mode), function="set_runtime_activity", hint="pass Reverse or Forward")
    return _RUNTIME[base] if on else base


def mode_options(mode) -> tuple:
    """``(mode, runtime activity)`` of a mode or of a mode with options."""
    return (mode.mode, True) if isinstance(mode, RuntimeActivity) else (mode, False)


class Annotation:
    """Base class of activities: a primal value and, for duplicated ones, its shadow."""

    __slots__ = ("val",)
    kind: Activity

    def __init__(self, val):
        self.val = val

    def values(self) -> tuple:
        return (self.val,)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self.values()))})"


class Const(Annotation):
    """Not differentiated."""

    __slots__ = ()
    kind = Activity.CONST


class Active(Annotation):
    """An active scalar (reverse mode): its derivative is returned."""

    __slots__ = ()
    kind = Activity.ACTIVE


class Duplicated(Annotation):
    """A value and its shadow: the gradient is added into the shadow (reverse) or it is the tangent (forward)."""

    __slots__ = ("dval",)
    kind = Activity.DUP

    def __init__(self, val, dval):
        self.val, self.dval = val, dval

    def values(self) -> tuple:
        return (self.val, self.dval)


class DuplicatedNoNeed(Duplicated):
    """As :class:`Duplicated`; the primal results written through the value are not needed."""

    __slots__ = ()
    kind = Activity.DUPNONEED


class BatchDuplicated(Annotation):
    """A value and ``N`` shadows (Enzyme's vector mode of width ``N``): one derivative sweep carries all
    ``N`` tangents (forward) or cotangents (reverse). ``BatchDuplicated(x, (dx1, dx2, dx3))``."""

    __slots__ = ("dval",)
    kind = Activity.DUP

    def __init__(self, val, dval):
        if not isinstance(dval, tuple) or not dval:
            raise ArgumentTypeError("dval", type(dval), function=type(self).__name__,
                                    hint="pass the shadows as a non-empty tuple: BatchDuplicated(x, (dx1, dx2))")
        self.val, self.dval = val, dval

    @property
    def width(self) -> int:
        """How many shadows (the batch width)."""
        return len(self.dval)

    def values(self) -> tuple:
        return (self.val, *self.dval)


class BatchDuplicatedNoNeed(BatchDuplicated):
    """As :class:`BatchDuplicated`; the primal results written through the value are not needed."""

    __slots__ = ()
    kind = Activity.DUPNONEED


ACTIVITIES = {cls.__name__: cls for cls in (Const, Active, Duplicated, DuplicatedNoNeed, BatchDuplicated,
                                            BatchDuplicatedNoNeed)}


_NOT_THE_USER = ("enzyme_plugin", "gpucompiler", "torch", "jax", "jaxlib")
"""Packages whose frames stand between the user's call and an error (the autograd and JAX machinery too)."""


def caller_location() -> tuple[str, int, int] | None:
    """``(file, line, 0)`` of the innermost frame outside the compiler and this plugin: the user's call."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in _NOT_THE_USER:
        frame = frame.f_back
    return (frame.f_code.co_filename, frame.f_lineno, 0) if frame is not None else None


def user_errors(fn):
    """Raise the compiler's typed errors from ``fn`` with the caller's frame on top (the internal chain
    kept when ``GPUC_DEBUG_TRACEBACKS`` is set)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except GPUCompilerError as exc:
            raise for_user(exc, settings.debug_tracebacks())
    return wrapper


@user_errors
def autodiff(mode: Mode, f, *args):
    """Differentiate ``f`` at ``args`` in ``mode`` (see the module docstring for the conventions).

    Example::

        def f(x, a):
            return x * a[0] * a[0]

        a, da = np.array([3.0]), np.zeros(1)
        (dx,) = autodiff(Reverse, f, Active(2.0), Duplicated(a, da))   # dx == 9.0, da == [12.0]
    """
    mode, runtime_activity = mode_options(mode)
    if not isinstance(mode, Mode) or mode not in (Reverse, Forward, *WITH_PRIMAL):
        raise ArgumentTypeError("mode", type(mode), function="autodiff",
                                hint="pass Reverse, Forward, ReverseWithPrimal or ForwardWithPrimal "
                                     "(split mode: autodiff_thunk(ReverseSplit, ...))")
    if isinstance(f, (Kernel, Launch)):
        k = f.kernel if isinstance(f, Launch) else f
        raise ArgumentTypeError("f", f"the kernel {k.py_func.__qualname__}", caller_location(), "autodiff",
                                hint="a kernel is differentiated through its launches: record them with "
                                     "`with LaunchTape() as tape:` and call tape.backward() (docs/autodiff.md, "
                                     "'Programs that launch kernels'), or differentiate the kernel's body in a "
                                     "kernel: autodiff(Reverse, body, ...) inside a @kernel")
    if not isinstance(f, pytypes.FunctionType):
        raise ArgumentTypeError("f", type(f), function="autodiff", hint="pass a Python function")
    ann = tuple(a if isinstance(a, Annotation) else Const(a) for a in args)
    _check_arguments(f, ann)
    if _names_device_space(f):
        from .launches import programs  # import time: NumPy and the launch tape, only for device programs

        if programs.has_device_sites(f):
            return programs.autodiff_program(WITH_PRIMAL.get(mode, mode), runtime_activity, mode in WITH_PRIMAL,
                                             f, ann)
    primal = None
    if mode in WITH_PRIMAL:
        mode = WITH_PRIMAL[mode]
        primal = (primal_value(f, ann),)
    entry = _entry(set_runtime_activity(mode, runtime_activity), f, tuple((type(a).__name__, tuple(_spec(v) for v in a.values())) for a in ann))
    flat = [leaf for a in ann for v in a.values() for leaf in _leaves(v)]
    derivs = entry(*flat)
    if mode is Reverse:
        derivs = _as_records(derivs, ann)
    if primal is None:
        return derivs
    return (derivs, *primal) if mode is Reverse else (*derivs, *primal)


def _names_device_space(f) -> bool:
    """Cheap test before :func:`enzyme_plugin.launches.programs.has_device_sites`: ``f`` names
    ``parallel_reduce`` or ``parallel_for`` (or an alias of them) and passes a keyword ``space``."""
    code = f.__code__
    if not any(isinstance(c, tuple) and "space" in c for c in code.co_consts):
        return False
    named = {"parallel_reduce", "parallel_for"}
    values = [f.__globals__.get(n) for n in code.co_names]
    values += [c.cell_contents for c in f.__closure__ or () if _filled(c)]
    return bool(named & {*code.co_names, *code.co_freevars}) or any(
        getattr(v, "__name__", None) in named and getattr(v, "__module__", None) == "gpucompiler.parallel"
        for v in values)


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def _spec(v):
    """The nesting of a tuple argument (None for a leaf): how the entry rebuilds it from its leaves."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        raise ArgumentTypeError("args", f"a dataclass ({type(v).__name__})", function="autodiff",
                                hint="compiled code reads records as tuples: pass a tuple or a NamedTuple of "
                                     "floats and arrays and index it (p[0])")
    return tuple(_spec(x) for x in v) if isinstance(v, tuple) else None


def _leaves(v) -> list:
    return [y for x in v for y in _leaves(x)] if isinstance(v, tuple) else [v]


def _rebuilt(spec, names) -> str:
    """Source text of a value of nesting ``spec`` from the parameter names ``names`` (an iterator)."""
    if spec is None:
        return next(names)
    return "(" + "".join(_rebuilt(s, names) + ", " for s in spec) + ")"


def _as_records(derivs, ann):
    """The derivatives of ``Active`` NamedTuples as NamedTuples of their type (per lane in a batch)."""
    actives = [a.val for a in ann if isinstance(a, Active)]
    width = max((a.width for a in ann if isinstance(a, BatchDuplicated)), default=1)

    def record(v, d):
        if isinstance(v, tuple) and hasattr(type(v), "_fields"):
            return type(v)(*(record(x, y) for x, y in zip(v, d)))
        if isinstance(v, tuple):
            return tuple(record(x, y) for x, y in zip(v, d))
        return d
    return tuple(record(v, d) if width == 1 else tuple(record(v, lane) for lane in d)
                 for v, d in zip(actives, derivs))


def _check_arguments(f, ann) -> None:
    """One activity per parameter of ``f``, shadows of their values' dtype and rank (the shape is
    checked by the compiled entry, as in compiled code)."""
    code = f.__code__
    names = code.co_varnames[:code.co_argcount]
    if len(ann) != len(names) and not (code.co_kwonlyargcount or code.co_flags & 0x0C):
        what = (f"takes {len(names)} arguments, got {len(ann)}" if len(ann) > len(names) else
                "is missing the argument(s) " + ", ".join(repr(n) for n in names[len(ann):]))
        raise ArgumentBindingError(f"autodiff: {f.__qualname__}({', '.join(names)}) {what}",
                                   (code.co_filename, code.co_firstlineno, 0), f.__qualname__,
                                   "pass one activity (Active, Duplicated, Const) per parameter")
    widths = {a.width for a in ann if isinstance(a, BatchDuplicated)}
    if len(widths) > 1 or (widths and any(isinstance(a, Duplicated) for a in ann)):
        raise ArgumentTypeError("args", "BatchDuplicated arguments of widths " + ", ".join(map(str, sorted(widths)))
                                + (" and Duplicated ones" if any(isinstance(a, Duplicated) for a in ann) else ""),
                                function=f.__qualname__,
                                hint="give every BatchDuplicated argument the same number of shadows; a Duplicated "
                                     "argument of a batch is a BatchDuplicated with one shadow repeated")
    for name, a in zip(names, ann):
        pairs = ([(a.val, a.dval)] if isinstance(a, Duplicated) else
                 [(a.val, d) for d in a.dval] if isinstance(a, BatchDuplicated) else [])
        pairs = [(x, y) for v, dv in pairs for x, y in zip(_leaves(v), _leaves(dv))
                 if _spec(v) == _spec(dv)] if all(_spec(v) == _spec(dv) for v, dv in pairs) else pairs
        for v, dv in pairs:
            same = (type(v) is type(dv) and getattr(v, "dtype", None) == getattr(dv, "dtype", None)
                    and getattr(v, "ndim", None) == getattr(dv, "ndim", None))
            if not same:
                shown = (f"{type(dv).__name__} of dtype {getattr(dv, 'dtype', '-')}, {getattr(dv, 'ndim', 0)}-d "
                         f"(the value: {type(v).__name__} of dtype {getattr(v, 'dtype', '-')}, "
                         f"{getattr(v, 'ndim', 0)}-d)")
                raise ArgumentTypeError(name, f"a {type(a).__name__} shadow " + shown, function=f.__qualname__,
                                        hint="allocate the shadow like the value (np.zeros_like)")


def primal_value(f, ann):
    """``f`` at the primal values, compiled; arrays are copied so that ``f``'s writes happen once."""
    import numpy as np

    vals = [np.array(v) if isinstance(v, np.ndarray) else v for a in ann for v in _leaves(a.val)]
    return _entry(None, f, tuple(("", (_spec(a.val),)) for a in ann))(*vals)


@functools.lru_cache(maxsize=256)
def _entry(mode, f, kinds: tuple[tuple[str, tuple], ...]):
    """A jit-compiled entry ``(flattened values) -> autodiff(mode, f, activities...)`` (``mode`` None:
    ``f(values...)``, the primal); ``kinds``: per argument, the activity's class name and the nesting
    (:func:`_spec`) of each value it holds: tuples are passed as their leaves and rebuilt."""
    params, wrapped, k = [], [], 0
    for kind, specs in kinds:
        n = sum(len(_leaves(_example(s))) for s in specs)
        names = [f"a{k + i}" for i in range(n)]
        k += n
        params += names
        it = iter(names)
        vals = [_rebuilt(spec, it) for spec in specs]
        if not kind:
            wrapped.append(vals[0])
        elif issubclass(ACTIVITIES[kind], BatchDuplicated):
            wrapped.append(f"{kind}({vals[0]}, ({', '.join(vals[1:])},))")
        else:
            wrapped.append(f"{kind}({', '.join(vals)})")
    call = "F(" if mode is None else "autodiff(MODE, F, "
    src = (f"def autodiff_entry({', '.join(params)}):\n"
           f"    return {call}{', '.join(wrapped)})\n")
    shown = " ".join(kind if len(specs) <= 2 else f"{kind}{len(specs) - 1}" for kind, specs in kinds)
    filename = f"<enzyme_plugin.autodiff {mode!r} {f.__module__}.{f.__qualname__} {shown}>"
    # source for the frontend; no mtime (None), so linecache.checkcache keeps the entry
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)  # pyright: ignore[reportArgumentType]
    namespace = {"autodiff": autodiff, "MODE": mode, "F": f, **ACTIVITIES}
    exec(compile(src, filename, "exec"), namespace)
    return jit(namespace["autodiff_entry"], plugins=("enzyme",))


def _example(spec):
    """A value of nesting ``spec`` (its leaves counted by :func:`_leaves`)."""
    return None if spec is None else tuple(_example(s) for s in spec)


def autodiff_thunk(mode: Mode, f, *activities):
    """Split mode: ``fwd, rev = autodiff_thunk(ReverseSplit, f, Active, Duplicated, ...)``, made in Python; the
    thunks are called from Python, ``@jit`` functions and kernels (:mod:`enzyme_plugin.rules.thunks`)."""
    from .split import autodiff_thunk as thunk

    return thunk(mode, f, *activities)


# calls of these in @jit functions and kernels enable the plugin (gpucompiler.errors.PluginRequiredError)
for _owned in (Annotation, autodiff, autodiff_thunk, set_runtime_activity):
    setattr(_owned, PLUGIN_ATTRIBUTE, "enzyme")

__all__ = ["Mode", "Reverse", "Forward", "ReverseWithPrimal", "ForwardWithPrimal", "ReverseSplit", "Annotation", "Const", "Active", "Duplicated",
           "DuplicatedNoNeed", "BatchDuplicated", "BatchDuplicatedNoNeed", "autodiff", "autodiff_thunk",
           "caller_location", "set_runtime_activity", "RuntimeActivity", "mode_options"]
