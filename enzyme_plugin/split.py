"""Split reverse mode from plain Python: ``fwd, rev = autodiff_thunk(ReverseSplit, f, activities...)``.

As Enzyme.jl's ``autodiff_thunk(ReverseSplitWithPrimal, ...)``::

    fwd, rev = autodiff_thunk(ReverseSplit, f, Active, Duplicated, Const)
    tape, y = fwd(Active(x), Duplicated(a, da), Const(n))      # augmented forward: y == f(x, a, n)
    (dx,) = rev(Active(x), Duplicated(a, da), Const(n), 1.0, tape)   # reverse: seed dy = 1.0

``fwd`` runs the augmented forward sweep (``__enzyme_augmentfwd``) and
returns a :class:`Tape` and the primal result of ``f`` (``None`` when ``f``
returns nothing). ``rev`` runs the reverse sweep (``__enzyme_reverse``) from
that tape with the adjoint ``seed`` of the result (``None`` when ``f``
returns nothing): gradients are added into the ``Duplicated`` shadows and
the derivatives of the ``Active`` arguments are returned, as
``autodiff(Reverse, ...)`` does. Between the two, the primal arrays must not
change (Enzyme's rule); the shadows may.

One compiled entry holds both halves, so that they share one derivative and
one tape layout. ``f`` is wrapped as ``W(out, args...)`` writing its result
into ``out[0]`` (and 1.0 into ``out[1]``): the primal comes back through ``out`` and the seed goes in
through ``out``'s shadow. The engine's tape lives behind a pointer that the
augmented sweep stores into a small holder array; the reverse sweep frees it.
A tape is consumed by its first ``rev``: a second use raises
:class:`TapeError`. A tape never reversed is freed by its finaliser, which
runs the reverse sweep with a zero seed into scratch shadows.
Thunks made here are called inside ``@jit`` functions and kernels too, the tape an ``int64``
handle there (:mod:`enzyme_plugin.language.thunks`).
"""

from __future__ import annotations

import functools
import linecache
import weakref

import numpy as np

from gpucompiler import jit
from gpucompiler.reference import function, function_reference
from gpucompiler.errors import (PLUGIN_ATTRIBUTE, ArgumentBindingError, ArgumentTypeError, GPUCompilerError,
                               TypeInferenceError)

from .activities import ACTIVITIES, Active, Annotation, Const, Duplicated, DuplicatedNoNeed
from .calls import Call, marked
from .compiled import autodiff_deferred, check_arguments, checked_function
from .locations import user_errors
from .modes import Mode, Reverse, ReverseSplit
from .splitting import PRIMAL_FILE, Thunk, primal_wrapper


class TapeError(GPUCompilerError, ValueError):
    """A split-mode tape used twice, or given to the reverse pass of another function or activity list."""


class Tape:
    """The record of one augmented forward pass; consumed (and freed) by the first reverse pass."""

    __slots__ = ("_thunk", "_holder", "_out", "_dout", "_result", "_used", "_finalizer", "__weakref__")

    def __init__(self, thunk, holder, out, dout, result, flat):
        self._thunk, self._holder, self._out, self._dout, self._result = thunk, holder, out, dout, result
        self._used = False
        scratch = _scratch(thunk.kinds, flat)
        self._finalizer = weakref.finalize(self, _release, thunk.entry, holder, scratch)

    @property
    def used(self) -> bool:
        """Whether the reverse pass has consumed this tape."""
        return self._used

    def __repr__(self) -> str:
        return f"<Tape of {self._thunk.f.__qualname__}{' (used)' if self._used else ''}>"


def _scratch(kinds, flat) -> list:
    """Arguments for the releasing reverse sweep: the primals, fresh zero shadows, a zero seed."""
    out, k = [np.zeros(2), np.zeros(2)], 0
    for kind in kinds:
        if issubclass(ACTIVITIES[kind], Duplicated):
            out += [flat[k], np.zeros_like(flat[k + 1])]
            k += 2
        else:
            out.append(flat[k])
            k += 1
    return out


def _release(entry, holder, scratch) -> None:
    """Free a tape that no reverse pass consumed: the engine's reverse sweep frees it, seeded with zero."""
    entry(1, holder, *scratch)


def _check(what: str, f, kinds: tuple, args) -> list:
    if len(args) != len(kinds):
        raise ArgumentBindingError(f"{what}: expected {len(kinds)} argument(s) ({', '.join(kinds)}), got {len(args)}",
                                   function=what, hint="pass one activity per argument, as the thunk was made")
    ann = []
    for k, (kind, a) in enumerate(zip(kinds, args)):
        cls = ACTIVITIES[kind]
        if not isinstance(a, Annotation):
            if cls is not Const:
                raise ArgumentTypeError(f"argument {k}", type(a).__name__, function=what, hint=f"pass {kind}(...)")
            a = Const(a)
        if type(a) is not cls:
            raise ArgumentTypeError(f"argument {k}", type(a).__name__, function=what,
                                    hint=f"the thunk was made for {kind} here")
        ann.append(a)
    check_arguments(f, tuple(ann), Reverse)
    return [v for a in ann for v in a.values()]


class ForwardThunk(Thunk):
    """``fwd(args...) -> (tape, result)``: the augmented forward pass; called in compiled code too
    (:mod:`enzyme_plugin.language.thunks`)."""

    __slots__ = ()

    def __reduce__(self) -> tuple:
        """Pickled by reference (:mod:`gpucompiler.reference`): ``f``'s place and the activities; the receiving
        process makes the thunks again, their compiled entry from the cache tiers."""
        return _forward_thunk, (function_reference(self.f, "autodiff_thunk function"), self.kinds)

    def __call__(self, *args):
        flat = _check("forward thunk", self.f, self.kinds, args)
        holder, out, dout = np.zeros(1, dtype=np.int64), np.zeros(2), np.zeros(2)
        try:
            self.entry(0, holder, out, dout, *flat)
        except TypeInferenceError as exc:
            if not (exc.filename or "").startswith(PRIMAL_FILE):
                raise
            raise TypeInferenceError(f"split mode: {self.f.__qualname__} must return a float or nothing "
                                     f"({exc.message})", function="forward thunk",
                                     hint="a function returning a tuple: autodiff(Reverse, f, ..., seed=(...)) "
                                          "gives each element its cotangent") from None
        result = float(out[0]) if out[1] == 1.0 else None
        return Tape(self, holder, out, dout, result, flat), result

    __call__ = user_errors(__call__, "forward thunk")


class ReverseThunk(Thunk):
    """``rev(args..., seed, tape) -> derivatives of the Active arguments``: the reverse pass."""

    __slots__ = ("fwd",)
    forward = False

    def __call__(self, *args):
        if len(args) < 2:
            raise ArgumentBindingError("reverse thunk: expected the arguments, the seed and the tape",
                                       function="reverse thunk", hint="rev(activities..., seed, tape)")
        *args, seed, tape = args
        if not isinstance(tape, Tape):
            raise ArgumentTypeError("tape", type(tape), function="reverse thunk",
                                    hint="pass the tape returned by the forward thunk")
        if tape._thunk is not self.fwd:
            raise TapeError("reverse thunk: this tape was recorded by the forward pass of another thunk")
        if tape._used:
            raise TapeError("reverse thunk: this tape was already used by a reverse pass (a tape is consumed once)")
        flat = _check("reverse thunk", self.f, self.kinds, args)
        if tape._result is None:
            if seed is not None:
                raise ArgumentTypeError("seed", type(seed), function="reverse thunk",
                                        hint="f returns nothing: pass None as the seed")
            seed = 0.0
        elif not isinstance(seed, (int, float, np.floating, np.integer)) or isinstance(seed, bool):
            raise ArgumentTypeError("seed", type(seed), function="reverse thunk",
                                    hint="pass the adjoint of f's result, a float (1.0 for the gradient)")
        tape._used = True
        tape._finalizer.detach()  # this reverse sweep frees the engine's tape
        tape._dout[0] = float(seed)
        return self.entry(1, tape._holder, tape._out, tape._dout, *flat)

    __call__ = user_errors(__call__, "reverse thunk")

    def __reduce__(self) -> tuple:
        """Pickled as the reverse half of its forward thunk (pickled with it once: a pair stays a pair)."""
        return _reverse_thunk, (self.fwd,)


_REVERSE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""forward thunk made by unpickling -> its reverse thunk"""


def _forward_thunk(ref: tuple, kinds: tuple[str, ...]) -> ForwardThunk:
    fwd, rev = autodiff_thunk(ReverseSplit, function(ref), *(ACTIVITIES[k] for k in kinds))
    _REVERSE[fwd] = rev
    return fwd


def _reverse_thunk(fwd: ForwardThunk) -> ReverseThunk:
    return _REVERSE[fwd]


_SPLIT_ACTIVITIES = (Active, Const, Duplicated, DuplicatedNoNeed)


@marked(Call.AUTODIFF_THUNK)
@user_errors
def autodiff_thunk(mode: Mode, f, *activities):
    """``fwd, rev`` for split reverse mode (see the module docstring).

    ``activities`` are the activity classes (``Active``, ``Duplicated``,
    ``DuplicatedNoNeed``, ``Const``) or example values (a bare value is ``Const``), one per argument of ``f``.
    """
    if mode is not ReverseSplit:
        raise ArgumentTypeError("mode", mode, function="autodiff_thunk", hint="pass ReverseSplit")
    f = checked_function(f, "autodiff_thunk")
    kinds = []
    for k, a in enumerate(activities):
        cls = a if isinstance(a, type) else type(a) if isinstance(a, Annotation) else Const  # bare: Const
        if cls not in _SPLIT_ACTIVITIES:
            raise ArgumentTypeError(f"activity {k}", cls.__name__, function="autodiff_thunk",
                                    hint="pass Active, Duplicated, DuplicatedNoNeed or Const (split mode has no "
                                         "batches)")
        kinds.append(cls.__name__)
    kinds = tuple(kinds)
    entry = _entry(f, kinds)
    fwd = ForwardThunk(f, kinds, entry)
    rev = ReverseThunk(f, kinds, entry)
    rev.fwd = fwd
    return fwd, rev


@functools.lru_cache(maxsize=256)
def _entry(f, kinds: tuple[str, ...]):
    """``split_entry(op, holder, out, dout, flattened values...)``: op 0 augments, op 1 reverses."""
    params, wrapped, k = [], [], 0
    for kind in kinds:
        n = 2 if issubclass(ACTIVITIES[kind], Duplicated) else 1
        names = [f"a{k + i}" for i in range(n)]
        k += n
        params += names
        wrapped.append(f"{kind}({', '.join(names)})")
    acts = ", ".join(["Duplicated(out, dout)"] + wrapped)
    src = (f"def split_entry(op, holder, out, dout, {', '.join(params)}):\n"
           f"    if op == 0:\n"
           f"        return autodiff(AUGMENT, split_primal, holder, {acts})\n"
           f"    return autodiff(SPLIT_REVERSE, split_primal, holder, {acts})\n")
    filename = f"<enzyme_plugin.split {f.__module__}.{f.__qualname__} {' '.join(kinds)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)  # source for the frontend
    namespace = {"autodiff": autodiff_deferred, "AUGMENT": Mode.Augment, "SPLIT_REVERSE": Mode.SplitReverse,
                 "split_primal": primal_wrapper(f, len(kinds)), **ACTIVITIES}
    exec(compile(src, filename, "exec"), namespace)
    return jit(namespace["split_entry"], plugins=("enzyme",))


setattr(autodiff_thunk, PLUGIN_ATTRIBUTE, "enzyme")  # a call in compiled code enables the plugin (to refuse it)

__all__ = ["ReverseSplit", "autodiff_thunk", "Tape", "TapeError", "ForwardThunk", "ReverseThunk"]
