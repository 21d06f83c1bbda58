"""The user-facing API: ``autodiff(mode, f, *args)``, modes and activities (Enzyme.jl's conventions).

In compiled code (``@jit(plugins=("enzyme",))``, ``@kernel(plugins=("enzyme",))``)
a call ``autodiff(Reverse, f, Active(x), Duplicated(a, da), Const(n))`` becomes
a nested compile job of ``f`` that the AD stage differentiates
(:mod:`enzyme_plugin.language`, :mod:`enzyme_plugin.plugin`). From plain Python
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
* Tuples, ``NamedTuple`` and dataclass records are one argument, their shadow
  a value of the same structure; from Python a duplicated record has Enzyme's
  mixed activity (:attr:`Activity.MIXED`): the derivatives of its float fields
  are added into a dataclass shadow. Complex arrays take complex shadows
  (``d/dRe + i d/dIm``). ``seed=`` gives a tuple result one cotangent per element.
* Errors name the user's line of the call (:func:`at_call`).
"""

from __future__ import annotations

import enum
import functools
import linecache
import sys
import types as pytypes

import attrs

from gpucompiler import jit, settings
from gpucompiler.arguments import cell_filled
from gpucompiler.kernel import Kernel, Launch
from gpucompiler.errors import (PLUGIN_ATTRIBUTE, ArgumentBindingError, ArgumentTypeError, GPUCompilerError,
                               SourceError, for_user)

from .values import (add_into, copied, holds_array, init_less_dataclass, is_float, leaves, member_paths, nesting, plain,
                     record_like, shape, shown, writable_floats)


class Activity(enum.Enum):
    """How ``autodiff`` treats an argument (Enzyme's annotations); the value is the code the
    marker call carries to the AD stage (:mod:`enzyme_plugin.language.lowering`)."""

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
    MIXED = 8
    """A duplicated tuple or record member by member (Enzyme's mixed activity): arrays duplicated, float scalars
    active in reverse mode (their derivatives returned) and duplicated in forward mode, integers constant.
    Internal: :func:`autodiff` called from Python passes every duplicated tuple or record so."""

    @property
    def duplicated(self) -> bool:
        """A value with a shadow (``Duplicated``, ``DuplicatedNoNeed``, a mixed record)."""
        return self in (Activity.DUP, Activity.DUPNONEED, Activity.MIXED)

    @property
    def marker(self) -> str:
        """The name of Enzyme's marker global for this activity (``enzyme_dup``, ...)."""
        return _MARKERS[self]


_MARKERS = {Activity.CONST: "enzyme_const", Activity.ACTIVE: "enzyme_out", Activity.DUP: "enzyme_dup",
            Activity.DUPNONEED: "enzyme_dupnoneed", Activity.TAPE: "enzyme_tape", Activity.WIDTH: "enzyme_width",
            Activity.RUNTIME_ACTIVITY: "enzyme_runtime_activity", Activity.PRIMAL_RETURN: "enzyme_primal_return",
            Activity.MIXED: "enzyme_mixed"}


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
        """The mode's code in the marker call (:mod:`enzyme_plugin.language.lowering`); only the modes
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
        raise ArgumentTypeError("mode", repr(mode), caller_location(), "set_runtime_activity",
                                hint="pass Reverse, Forward, ReverseWithPrimal or ForwardWithPrimal")
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
            raise ArgumentTypeError("dval", repr(dval) if isinstance(dval, tuple) else type(dval).__name__,
                                    caller_location(), type(self).__name__,
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


class MixedDuplicated(Duplicated):
    """A duplicated tuple or record with mixed activity (:attr:`Activity.MIXED`): internal, made by
    :func:`autodiff` from a ``Duplicated`` tuple or record."""

    __slots__ = ()
    kind = Activity.MIXED


class BatchMixedDuplicated(BatchDuplicated):
    """:class:`MixedDuplicated` with ``N`` shadows: internal, made by :func:`autodiff` from a ``BatchDuplicated``."""

    __slots__ = ()
    kind = Activity.MIXED


ACTIVITIES = {cls.__name__: cls for cls in (Const, Active, Duplicated, DuplicatedNoNeed, BatchDuplicated,
                                            BatchDuplicatedNoNeed, MixedDuplicated, BatchMixedDuplicated)}


_NOT_THE_USER = ("enzyme_plugin", "gpucompiler", "torch", "jax", "jaxlib")
"""Packages whose frames stand between the user's call and an error (the autograd and JAX machinery too)."""


def caller_location() -> tuple[str, int, int] | None:
    """``(file, line, 0)`` of the innermost frame outside the compiler and this plugin: the user's call."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in _NOT_THE_USER:
        frame = frame.f_back
    return (frame.f_code.co_filename, frame.f_lineno, 0) if frame is not None else None


def user_errors(fn, name: str = ""):
    """Raise the compiler's typed errors from ``fn`` with the caller's frame on top (the internal chain
    kept when ``GPUC_DEBUG_TRACEBACKS`` is set), naming the caller's line (:func:`at_call`) and the API
    ``name`` (default: ``fn``'s)."""
    api = name or fn.__name__

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        call = caller_location()
        try:
            return fn(*args, **kwargs)
        except GPUCompilerError as exc:
            raise for_user(at_call(exc, call, api), settings.debug_tracebacks())
    return wrapper


def at_call(exc: GPUCompilerError, call, api: str) -> GPUCompilerError:
    """``exc`` naming the user's call ``call`` (``(file, line, col)``) of ``api``: an error located nowhere or
    in generated code is located there; one located in the user's code (the differentiated function) says
    where ``api`` was called from too."""
    if call is None or getattr(exc, "_gpuc_called_at", False):
        return exc
    exc._gpuc_called_at = True  # pyright: ignore[reportAttributeAccessIssue]  (nested API calls add it once)
    filename = exc.filename if isinstance(exc, SourceError) else None
    if isinstance(exc, SourceError) and (filename is None or filename.startswith("<")):
        function = api if filename or exc.function in (_ENTRY, "") else exc.function
        SourceError.__init__(exc, exc.message, call, function, exc.hint)
    elif exc.args and isinstance(exc.args[0], str):
        exc.args = (f"{exc.args[0]}\n  in {api} called at {call[0]}:{call[1]}", *exc.args[1:])
    return exc


@user_errors
def autodiff(mode: Mode, f, *args, seed=None):
    """Differentiate ``f`` at ``args`` in ``mode`` (see the module docstring for the conventions).

    ``seed`` (reverse modes, from Python): the cotangent of ``f``'s result instead of 1.0, a float, or for
    a result that is a tuple or record of floats a value of its structure (one seed per element).

    Example::

        def f(x, a):
            return x * a[0] * a[0]

        a, da = np.array([3.0]), np.zeros(1)
        (dx,) = autodiff(Reverse, f, Active(2.0), Duplicated(a, da))   # dx == 9.0, da == [12.0]
    """
    return _autodiff(mode, f, args, seed)


def _autodiff(mode, f, args, seed=None):
    mode, runtime_activity = mode_options(mode)
    if not isinstance(mode, Mode) or mode not in (Reverse, Forward, *WITH_PRIMAL):
        raise ArgumentTypeError("mode", type(mode), function="autodiff",
                                hint="pass Reverse, Forward, ReverseWithPrimal or ForwardWithPrimal "
                                     "(split mode: autodiff_thunk(ReverseSplit, ...))")
    f, args = bound(f, args)
    f = checked_function(f, "autodiff")
    ann = tuple(a if isinstance(a, Annotation) else Const(a) for a in args)
    check_arguments(f, ann, WITH_PRIMAL.get(mode, mode))
    if _names_device_space(f):
        from .launches import programs  # import time: NumPy and the launch tape, only for device programs

        if programs.has_device_sites(f):
            return programs.autodiff_program(WITH_PRIMAL.get(mode, mode), runtime_activity, mode in WITH_PRIMAL,
                                             f, ann)
    primal = None
    if mode in WITH_PRIMAL:
        mode = WITH_PRIMAL[mode]
        primal = (primal_value(f, ann),)
    if seed is not None:
        f, ann = _seeded(mode, f, ann, seed, primal[0] if primal else primal_value(f, ann))
    ann = tuple(mixed(a) for a in ann)
    kinds = tuple((type(a).__name__, tuple(shape(v) for v in a.values())) for a in ann)
    entry = _entry(set_runtime_activity(mode, runtime_activity), f, kinds)
    derivs = entry(*(v for a in ann for v in a.values()))
    if mode is Reverse:
        derivs = _returned(derivs, ann)
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
    values += [c.cell_contents for c in f.__closure__ or () if cell_filled(c)]
    return bool(named & {*code.co_names, *code.co_freevars}) or any(
        getattr(v, "__name__", None) in named and getattr(v, "__module__", None) == "gpucompiler.parallel"
        for v in values)



def bound(f, args: tuple) -> tuple:
    """``(function, arguments)`` of a bound method (its object first) or a ``functools.partial`` without
    keywords (its arguments first): the bound values are constants (``Const``)."""
    while True:
        if isinstance(f, pytypes.MethodType):
            f, args = f.__func__, (f.__self__, *args)
        elif isinstance(f, functools.partial) and not f.keywords:
            f, args = f.func, (*f.args, *args)
        else:
            return f, args


def _seeded(mode, f, ann, seed, result) -> tuple:
    """``(g, activities)``: ``g`` the sum of ``f``'s result's float members times their seeds (passed as a
    ``Const`` tuple after ``f``'s arguments), whose reverse sweep seeds each member with its own seed."""
    if mode is not Reverse:
        raise ArgumentTypeError("seed", type(seed).__name__, function="autodiff",
                                hint="a seed is the cotangent of the result in reverse mode; forward mode takes "
                                     "tangents in Duplicated arguments")
    if nesting(seed) != nesting(result) or not all(is_float(x) or type(x) is int for x in leaves(seed)) or not all(
            map(is_float, leaves(result))):
        raise ArgumentTypeError("seed", f"{shown(seed)} for {f.__qualname__}'s result {shown(result)}",
                                function="autodiff", hint="give one float seed per float of the result, nested as "
                                                          "the result (a tuple for a tuple or record result)")
    return _seeding(f, len(ann), shape(result)), (*ann, Const(tuple(float(x) for x in leaves(seed))))


@functools.lru_cache(maxsize=256)
def _seeding(f, n: int, result):
    """The compilable ``g(x1, ..., xn, seeds) = sum(seeds[k] * (leaf k of f(x1, ..., xn)))`` (``result``: the
    nesting of ``f``'s result, :func:`shape`)."""
    params = ", ".join(f"x{k}" for k in range(n))
    paths = member_paths("r", result)
    src = (f"def seeded({params}{', ' if n else ''}seeds):\n    r = F({params})\n"
           f"    return {' + '.join(f'seeds[{k}] * {p}' for k, p in enumerate(paths))}\n")
    filename = f"<enzyme_plugin.autodiff seed {f.__module__}.{f.__qualname__}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)  # pyright: ignore[reportArgumentType]
    namespace = {"F": f}
    exec(compile(src, filename, "exec"), namespace)
    return namespace["seeded"]


def checked_function(f, api: str):
    """``f`` if it can be differentiated (a Python function), else a typed error that says what to pass."""
    if isinstance(f, (Kernel, Launch)):
        k = f.kernel if isinstance(f, Launch) else f
        raise ArgumentTypeError("f", f"the kernel {k.py_func.__qualname__}", function=api,
                                hint="a kernel is differentiated through its launches: record them with "
                                     "`with LaunchTape() as tape:` and call tape.backward() (docs/autodiff.md, "
                                     "'Programs that launch kernels'), or differentiate the kernel's body in a "
                                     "kernel: autodiff(Reverse, body, ...) inside a @kernel")
    if not isinstance(f, pytypes.FunctionType):
        raise ArgumentTypeError("f", type(f).__name__, function=api,
                                hint=_FUNCTION_HINT if api == "autodiff" else "pass a Python function or a lambda "
                                     "(autodiff also takes bound methods and functools.partial objects)")
    if f.__code__.co_flags & _GENERATOR_FLAGS:
        raise ArgumentTypeError("f", f"the generator function {f.__qualname__}", function=api,
                                hint="differentiate a function that returns its result")
    return f


_FUNCTION_HINT = ("pass a Python function (a lambda, a bound method or a functools.partial without keywords "
                  "of one too)")
_GENERATOR_FLAGS = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coroutine, async generator


def mixed(a: Annotation) -> Annotation:
    """A ``Duplicated`` tuple or record as a mixed one (:attr:`Activity.MIXED`), member by member."""
    if not (a.kind.duplicated and shape(a.val) is not None):
        return a
    if isinstance(a, BatchDuplicated):
        return BatchMixedDuplicated(a.val, a.dval)
    return MixedDuplicated(a.val, a.dval) if isinstance(a, Duplicated) else a


def _returned(derivs, ann):
    """The derivatives of the ``Active`` arguments (records of their type, per lane in a batch); those of the
    float members of mixed ones are added into their shadows."""
    batched = any(isinstance(a, BatchDuplicated) for a in ann)  # per lane, a batch of width 1 too
    out, it = [], iter(derivs)
    for a in ann:
        if isinstance(a, Active):
            d = next(it)
            out.append(tuple(record_like(a.val, lane) for lane in d) if batched else record_like(a.val, d))
        elif a.kind is Activity.MIXED:
            d = next(it)
            for shadow, lane in zip(a.values()[1:], d if batched else (d,)):
                add_into(shadow, iter(lane))
    return tuple(out)


def check_arguments(f, ann, mode) -> None:
    """One activity per parameter of ``f``; shadows of their values' structure, type, dtype and shape; in
    reverse mode the float scalars of a duplicated record in fields that can take their derivatives."""
    code = f.__code__
    names = code.co_varnames[:code.co_argcount]
    if len(ann) != len(names) and not (code.co_kwonlyargcount or code.co_flags & 0x0C):
        what = (f"takes {len(names)} arguments, got {len(ann)}" if len(ann) > len(names) else
                "is missing the argument(s) " + ", ".join(repr(n) for n in names[len(ann):]))
        raise ArgumentBindingError(f"autodiff: {f.__qualname__}({', '.join(names)}) {what} (defined at "
                                   f"{code.co_filename}:{code.co_firstlineno})", None, f.__qualname__,
                                   "pass one activity (Active, Duplicated, Const) per parameter")
    widths = {a.width for a in ann if isinstance(a, BatchDuplicated)}
    if len(widths) > 1 or (widths and any(isinstance(a, Duplicated) for a in ann)):
        raise ArgumentTypeError("args", "BatchDuplicated arguments of widths " + ", ".join(map(str, sorted(widths)))
                                + (" and Duplicated ones" if any(isinstance(a, Duplicated) for a in ann) else ""),
                                function=f.__qualname__,
                                hint="give every BatchDuplicated argument the same number of shadows; a Duplicated "
                                     "argument of a batch is a BatchDuplicated with one shadow repeated")
    for name, a in zip(names, ann):
        _check_annotation(f, name, a, mode)


def _check_annotation(f, name: str, a: Annotation, mode) -> None:
    if isinstance(a, Active) and holds_array(a.val):
        raise ArgumentTypeError(name, f"Active({shown(a.val)})", function=f.__qualname__,
                                hint="an array's derivative is accumulated into a shadow: pass "
                                     "Duplicated(a, np.zeros_like(a)); Active is for float scalars")
    for v in a.values():
        fields = init_less_dataclass(v)
        if fields:
            raise ArgumentTypeError(name, f"the dataclass {fields}, which has fields that are not set by its "
                                    "__init__ (init=False)", function=f.__qualname__,
                                    hint="give every field a place in __init__, or pass a NamedTuple")
    for shadow in a.values()[1:]:
        if shape(a.val) != shape(shadow):
            raise ArgumentTypeError(name, f"a {type(a).__name__} shadow of structure {shown(shadow)} (the value: "
                                    f"{shown(a.val)})", function=f.__qualname__,
                                    hint="give the shadow the value's structure: the same tuple or record class, "
                                         "field by field")
        for v, dv in zip(leaves(a.val), leaves(shadow)):
            if _double(v) and _double(dv):  # float, np.float64: both doubles
                continue
            same = (type(v) is type(dv) and getattr(v, "dtype", None) == getattr(dv, "dtype", None)
                    and getattr(v, "ndim", None) == getattr(dv, "ndim", None))
            if not same:
                raise ArgumentTypeError(name, f"a {type(a).__name__} shadow {shown(dv)} (the value: {shown(v)})",
                                        function=f.__qualname__,
                                        hint="allocate the shadow like the value (np.zeros_like)")
            if getattr(v, "shape", None) != getattr(dv, "shape", None):
                axis = next(k for k, (n, m) in enumerate(zip(v.shape, dv.shape)) if n != m)
                raise ShadowError(f"autodiff: the shadow of {f.__qualname__}'s argument {name!r} must have the "
                                       f"shape of its value: axis {axis} has {v.shape[axis]} elements in the value, "
                                       f"{dv.shape[axis]} in the shadow", function=f.__qualname__,
                                       hint="allocate the shadow like the value (np.zeros_like)")
            if _strides(v) != _strides(dv):
                axis = next(k for k, (n, m) in enumerate(zip(_strides(v), _strides(dv))) if n != m)
                raise ShadowError(f"autodiff: the shadow of {f.__qualname__}'s argument {name!r} must have the "
                                       f"strides of its value: axis {axis} steps {v.strides[axis]} bytes in the "
                                       f"value, {dv.strides[axis]} in the shadow", function=f.__qualname__,
                                       hint="the derivative code reads the shadow with the value's strides: for "
                                            "a strided view a pass np.ascontiguousarray(a) and np.zeros_like of it")
            np = sys.modules.get("numpy")  # loaded when an argument is a NumPy array
            if np is not None and isinstance(v, np.ndarray) and isinstance(dv, np.ndarray) and v.size and (
                    np.shares_memory(v, dv)):
                raise ShadowError(f"autodiff: the shadow of {f.__qualname__}'s argument {name!r} shares memory with "
                                  "its value", function=f.__qualname__,
                                  hint="the derivative code adds into the shadow while it reads the value: "
                                       "allocate the shadow apart (np.zeros_like)")
        if mode is Reverse and shape(a.val) is not None and not writable_floats(shadow):
            raise ArgumentTypeError(name, f"a {type(a).__name__} shadow {shown(shadow)} whose float scalars cannot "
                                    "receive their derivatives", function=f.__qualname__,
                                    hint="in reverse mode a record's float fields take their derivatives in a "
                                         "(non-frozen) dataclass shadow; in a tuple or NamedTuple pass them as "
                                         "Active arguments of their own, or hold them in arrays")


class ShadowError(SourceError, ValueError):
    """A shadow that does not fit its value: another shape or strides (the derivative code would read and write
    past it), or memory shared with it (the derivative code would add into the value it reads)."""


def _strides(a) -> tuple:
    """The strides of a NumPy array's axes that step (more than one element, none empty); ``()`` otherwise."""
    shape, strides = getattr(a, "shape", None), getattr(a, "strides", None)
    if shape is None or strides is None or 0 in shape:
        return ()
    return tuple(s if n > 1 else None for n, s in zip(shape, strides))


def primal_value(f, ann):
    """``f`` at the primal values, compiled; arrays are copied so that ``f``'s writes happen once."""
    vals = [copied(a.val) for a in ann]
    return _entry(None, f, tuple(("", (shape(a.val),)) for a in ann))(*vals)


_ENTRY = "autodiff_entry"
"""The name of the compiled entry :func:`autodiff` makes (an error there is located at the user's call)."""


@functools.lru_cache(maxsize=256)
def _entry(mode, f, kinds: tuple[tuple[str, tuple], ...]):
    """A jit-compiled entry ``(values) -> autodiff(mode, f, activities...)`` (``mode`` None: ``f(values...)``,
    the primal); ``kinds``: per argument, the activity's class name and the nesting (:func:`shape`) of each
    value it holds. Tuples and records are passed as they are; in reverse mode the derivatives of ``Active``
    records come back as plain tuples (:func:`plain`), rebuilt by :func:`_returned`."""
    params, wrapped, k = [], [], 0
    taken = {"autodiff", "MODE", "F", "r", *ACTIVITIES}
    given = f.__code__.co_varnames[:f.__code__.co_argcount]
    for j, (kind, specs) in enumerate(kinds):  # named after f's parameters, so that an error names them
        base = given[j] if j < len(given) else f"a{j}"
        names = [base if i == 0 else f"d{base}" if len(specs) == 2 else f"d{base}_{i}" for i in range(len(specs))]
        names = [n if n not in taken else f"a{k + i}" for i, n in enumerate(names)]
        taken.update(names)
        k += len(specs)
        params += names
        if not kind:
            wrapped.append(names[0])
        elif issubclass(ACTIVITIES[kind], BatchDuplicated):
            wrapped.append(f"{kind}({names[0]}, ({', '.join(names[1:])},))")
        else:
            wrapped.append(f"{kind}({', '.join(names)})")
    call = "F(" if mode is None else "autodiff(MODE, F, "
    body = f"    return {call}{', '.join(wrapped)})\n"
    base, _ = mode_options(mode)
    returned = [(kind, specs[0]) for kind, specs in kinds if kind in ("Active", "MixedDuplicated",
                                                                        "BatchMixedDuplicated")]
    if base is Reverse and returned:
        batched = [len(specs) - 1 for kind, specs in kinds if kind.startswith("Batch")]
        width = max(batched, default=1)
        parts = [(plain(f"r[{j}]", spec) if not batched else
                  "(" + "".join(plain(f"r[{j}][{lane}]", spec) + ", " for lane in range(width)) + ")")
                 if kind == "Active" else f"r[{j}]" for j, (kind, spec) in enumerate(returned)]
        body = f"    r = {call}{', '.join(wrapped)})\n    return ({''.join(p + ', ' for p in parts)})\n"
    src = f"def {_ENTRY}({', '.join(params)}):\n{body}"
    shown = " ".join(kind if len(specs) <= 2 else f"{kind}{len(specs) - 1}" for kind, specs in kinds)
    filename = f"<enzyme_plugin.autodiff {mode!r} {f.__module__}.{f.__qualname__} {shown}>"
    # source for the frontend; no mtime (None), so linecache.checkcache keeps the entry
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)  # pyright: ignore[reportArgumentType]
    namespace = {"autodiff": autodiff, "MODE": mode, "F": f, **ACTIVITIES}
    exec(compile(src, filename, "exec"), namespace)
    return jit(namespace[_ENTRY], plugins=("enzyme",))


def autodiff_thunk(mode: Mode, f, *activities):
    """Split mode: ``fwd, rev = autodiff_thunk(ReverseSplit, f, Active, Duplicated, ...)``, made in Python; the
    thunks are called from Python, ``@jit`` functions and kernels (:mod:`enzyme_plugin.language.thunks`)."""
    from .split import autodiff_thunk as thunk

    return thunk(mode, f, *activities)


# calls of these in @jit functions and kernels enable the plugin (gpucompiler.errors.PluginRequiredError)
for _owned in (Annotation, autodiff, autodiff_thunk, set_runtime_activity):
    setattr(_owned, PLUGIN_ATTRIBUTE, "enzyme")


def _double(x) -> bool:
    """A Python float or an ``np.float64`` (a ``float`` subclass): the same double either way."""
    return isinstance(x, float)


__all__ = ["Mode", "Reverse", "Forward", "ReverseWithPrimal", "ForwardWithPrimal", "ReverseSplit", "Annotation", "Const", "Active", "Duplicated",
           "DuplicatedNoNeed", "BatchDuplicated", "BatchDuplicatedNoNeed", "autodiff", "autodiff_thunk",
           "caller_location", "set_runtime_activity", "RuntimeActivity", "mode_options"]
