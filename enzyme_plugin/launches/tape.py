"""``LaunchTape``: reverse-mode AD of a host program that launches kernels (NVIDIA Warp's ``wp.Tape``).

::

    tape = LaunchTape()
    with tape:                                  # launches are recorded (and run)
        square[blocks, 256, "cpu"](x, y)
        total[blocks, 256, "cpu"](y, loss)
    tape.backward(loss)                         # gradient kernels, in reverse launch order
    tape.gradient(x)                            # d loss / d x

Every float array a recorded launch takes gets a shadow (its gradient),
made like the array by the array's library and kept by the tape; the seeds
of ``backward`` are added into them, and each launch's gradient kernel adds
into the shadows of its inputs. The arrays a kernel writes (read from its
typed IR, :mod:`.writes`) are copied before its launch; ``backward`` puts
them back as it walks the launches in reverse, so each gradient kernel sees
the memory its kernel saw, also when later launches overwrote it. After
``backward`` the arrays hold their values from the end of the recording.

With ``LaunchTape(split=True)`` each launch runs the augmented forward sweep
of its kernel instead (Enzyme's split mode): every thread keeps what its
reverse sweep needs on the device heap (the CPU heap in the grid emulation),
and ``backward`` launches the reverse sweeps from those tapes, without
running the kernels' forward sweeps again. A split tape is consumed by its
``backward`` (each reverse sweep frees its thread's tape: repeated
record-and-backward rounds do not grow the heap); :meth:`reset` frees the
tapes of launches never reversed. A split tape dropped before either keeps
its tapes on the heap until the process ends (freeing them means launching
the reverse sweeps, which a garbage collector's finalizer must not do): a
``ResourceWarning`` says so.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from gpucompiler import types as T
from gpucompiler.errors import GPUCompilerError, LaunchError, SourceError, for_user
from gpucompiler.interpreter import widen
from gpucompiler.kernel import CPU, Kernel, Launch, recording_launches
from gpucompiler.runtime import cuda as cuda_runtime
from gpucompiler import settings
from gpucompiler.targets import PTXTarget

from ..api import caller_location
from .arrays import ArrayOps, ops_of
from .gradients import differentiable, gradient_kernel, registered_gradient, split_kernel
from .writes import written_parameters


class LaunchTapeError(SourceError, ValueError):
    """A launch tape used out of order: a split tape reversed twice, a gradient of an array it never saw,
    arrays that overlap in memory. Located at the user's call."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message, caller_location(), "", hint)


@attrs.define(eq=False)
class LaunchRecord:
    """One recorded launch: the kernel with its configuration, the bound arguments, the copies of the
    arrays it writes (taken before it ran) and, in split mode, its per-thread tape holders."""

    launch: Launch
    args: tuple
    dup: tuple[bool, ...]
    """per parameter: a float array with a shadow"""
    snapshots: list[tuple[int, Any]]
    """(parameter index, copy before the launch)"""
    ops: ArrayOps
    holders: Any = None
    """split mode: one int64 per thread, the address of its tape"""

    @property
    def on_cpu(self) -> bool:
        return self.launch.stream == CPU


@functools.lru_cache(maxsize=512)
def _written(k: Kernel, argtypes: tuple) -> frozenset[int]:
    def infer():
        return k.specialization(argtypes).infer(PTXTarget(), k.plugins)[1]
    return written_parameters(k._enabling_plugins(infer))


def _span(a) -> tuple[int, int] | None:
    """The bytes an array covers, ``(start, end)``; None for scalars."""
    iface = getattr(a, "__cuda_array_interface__", None)
    if iface is None:
        iface = getattr(a, "__array_interface__", None)
    if iface is None or not isinstance(iface.get("data"), (tuple, list)):
        return None
    start, itemsize = iface["data"][0], np.dtype(iface["typestr"]).itemsize
    shape, strides = iface["shape"], iface.get("strides")
    if strides is None:
        return start, start + itemsize * int(np.prod(shape))
    lo = start + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = start + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + itemsize
    return lo, hi


class LaunchTape:
    """Records kernel launches and replays their gradient kernels in reverse (see the module docstring)."""

    def __init__(self, split: bool = False):
        self.split = bool(split)
        self.records: list[LaunchRecord] = []
        self._shadows: dict[int, tuple[Any, Any]] = {}  # id(array) -> (array, shadow); the array kept alive
        self._recording = None

    # -- recording -------------------------------------------------------------
    def __enter__(self) -> LaunchTape:
        if self._recording is not None:
            raise LaunchTapeError("this tape is already recording")
        self._recording = recording_launches(self._record)
        self._recording.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        rec, self._recording = self._recording, None
        if rec is not None:
            rec.__exit__(*exc)

    def _record(self, launch: Launch, args: tuple) -> None:
        try:
            self._record_launch(launch, args)
        except GPUCompilerError as exc:
            raise for_user(exc, settings.debug_tracebacks())

    def _record_launch(self, launch: Launch, args: tuple) -> None:
        k = launch.kernel
        argtypes = k.host_arguments(args)[0] if launch.stream == CPU else k.argument_types(args)
        if launch.stream != CPU and isinstance(launch.stream, str):
            raise LaunchError(f"unknown device {launch.stream!r}; use {CPU!r} for the CPU grid emulation "
                              "or a CUDA stream")
        dup = differentiable(argtypes)
        self._check_overlaps(k, args, argtypes)
        arrays = [a for a, t in zip(args, argtypes) if isinstance(widen(t), T.ArrayType)]
        ops = ops_of(arrays[0], "array argument") if arrays else ArrayOps()
        written = _written(k, tuple(argtypes))
        for j in written:
            ops_of(args[j], k.py_func.__code__.co_varnames[j])
        self._sync(launch)
        snapshots = [(j, ops_of(args[j]).copy(args[j])) for j in sorted(written)]
        self._sync(launch)
        record = LaunchRecord(launch, tuple(args), dup, snapshots, ops)
        with_shadows = self._with_shadows(record)  # every float array gets its shadow now
        if self.split and any(dup) and registered_gradient(k) is None:
            g, b = launch.grid, launch.block
            record.holders = ops.int64_zeros(g[0] * g[1] * g[2] * b[0] * b[1] * b[2], arrays[0])
            split_kernel(k, dup)[g, b, launch.stream].run(0, record.holders, *with_shadows)
        else:
            launch.run(*args)
        self.records.append(record)

    @staticmethod
    def _sync(launch: Launch) -> None:
        """Copies run on the array library's stream, launches on theirs: on a GPU, wait between them."""
        if launch.stream != CPU:
            cuda_runtime.synchronize()

    @staticmethod
    def _check_overlaps(k: Kernel, args, argtypes) -> None:
        """Two different array objects over the same memory would get two shadows: a wrong gradient."""
        spans = [(j, _span(a)) for j, (a, t) in enumerate(zip(args, argtypes)) if isinstance(widen(t), T.ArrayType)]
        names = k.py_func.__code__.co_varnames
        for m, (i, si) in enumerate(spans):
            for j, sj in spans[m + 1:]:
                if si and sj and args[i] is not args[j] and si[0] < sj[1] and sj[0] < si[1]:
                    raise LaunchTapeError(f"{k.py_func.__qualname__}: the arrays {names[i]!r} and {names[j]!r} "
                                          "overlap in memory: a recorded launch takes each array once (or the "
                                          "same object twice), not two views of one buffer")

    # -- shadows ---------------------------------------------------------------
    def gradient(self, a):
        """The shadow of array ``a``: the gradient accumulated into it (zeros until ``backward``)."""
        hit = self._shadows.get(id(a))
        if hit is None:
            raise LaunchTapeError(f"this tape has no gradient for the {type(a).__name__} given: it was not an "
                                  "argument of a recorded launch (pass the same array object)")
        return hit[1]

    def knows(self, a) -> bool:
        """Whether a recorded launch took ``a`` (as a float array: it has a shadow)."""
        return id(a) in self._shadows

    def _shadow(self, a):
        hit = self._shadows.get(id(a))
        if hit is None:
            hit = self._shadows[id(a)] = (a, ops_of(a).zeros_like(a))
        return hit[1]

    def _with_shadows(self, record: LaunchRecord) -> list:
        out = []
        for a, d in zip(record.args, record.dup):
            out += [a, self._shadow(a)] if d else [a]
        return out

    def zero(self) -> None:
        """Zero every shadow (before another ``backward`` of the same recording)."""
        for a, s in self._shadows.values():
            ops_of(a).assign(s, 0)

    # -- replay ----------------------------------------------------------------
    def backward(self, loss=None, grads=()) -> None:
        """Add the seeds into the shadows, then launch the gradient of every recorded launch, last first.

        ``loss``: a one-element array, seeded with 1; ``grads``: ``(array, its adjoint)`` pairs (NumPy
        arrays are not hashable: a dict only for array types that are, such as PyTorch tensors)."""
        try:
            pairs = list(grads.items()) if isinstance(grads, Mapping) else [tuple(p) for p in grads]
            self._backward(pairs, loss, scratch=False)
        except GPUCompilerError as exc:
            raise for_user(exc, settings.debug_tracebacks())

    def _backward(self, grads: list, loss, scratch: bool) -> None:
        if self._recording is not None:
            raise LaunchTapeError("backward() inside the tape's `with` block: leave it first")
        if self.split and any(r.holders is None and self._needs_tape(r) for r in self.records):
            raise LaunchTapeError("this split tape was already reversed (a split tape is consumed by its "
                                  "backward): record the launches again")
        shadows = self._scratch() if scratch else None
        for a, g in grads:
            ops_of(a).add_into(self._known_shadow(a), g)
        if loss is not None:
            ops_of(loss).add_into(self._known_shadow(loss), 1.0)
        finals = self._final_values()
        for record in reversed(self.records):  # before each: the memory as the launch left it
            if record.holders is None:  # the gradient kernel reads the memory the launch read
                self._restore(record)
            self._reverse(record, shadows)
            self._restore(record)  # the memory as the launch found it: as the launch before left it
        for a, value in finals:
            ops_of(a).assign(a, value)

    def _known_shadow(self, a):
        if id(a) not in self._shadows:
            raise LaunchTapeError(f"backward: a seed for a {type(a).__name__} that no recorded launch took "
                                  "(pass the same array object the kernels were launched on)")
        return self._shadows[id(a)][1]

    def _needs_tape(self, record: LaunchRecord) -> bool:
        return any(record.dup) and registered_gradient(record.launch.kernel) is None

    def _final_values(self) -> list:
        seen: dict[int, Any] = {}
        for r in self.records:
            for j, _ in r.snapshots:
                a = r.args[j]
                if id(a) not in seen:
                    self._sync(r.launch)
                    seen[id(a)] = (a, ops_of(a).copy(a))
        return list(seen.values())

    def _restore(self, record: LaunchRecord) -> None:
        self._sync(record.launch)
        for j, value in record.snapshots:
            ops_of(record.args[j]).assign(record.args[j], value)
        self._sync(record.launch)

    def _scratch(self) -> dict[int, Any]:
        return {key: ops_of(a).zeros_like(a) for key, (a, _) in self._shadows.items()}

    def _reverse(self, record: LaunchRecord, scratch: dict | None) -> None:
        if not any(record.dup):
            return
        launch, k = record.launch, record.launch.kernel
        shadow = (lambda a: scratch[id(a)]) if scratch is not None else self._shadow
        hand = registered_gradient(k)
        g, b, s = launch.grid, launch.block, launch.stream
        if hand is not None:
            adjoints = [shadow(a) if d else a for a, d in zip(record.args, record.dup)]
            hand[g, b, s].run(*record.args, *adjoints)
            return
        with_shadows = []
        for a, d in zip(record.args, record.dup):
            with_shadows += [a, shadow(a)] if d else [a]
        if record.holders is not None:
            holders, record.holders = record.holders, None  # the reverse sweep frees the tapes
            split_kernel(k, record.dup)[g, b, s].run(1, holders, *with_shadows)
        else:
            gradient_kernel(k, record.dup)[g, b, s].run(*with_shadows)

    def reset(self) -> None:
        """Forget the recording and the shadows; in split mode first free the tapes of launches not yet
        reversed (their reverse sweeps run into scratch shadows)."""
        if self.split and any(r.holders is not None for r in self.records):
            self._backward([], None, scratch=True)
        self.records.clear()
        self._shadows.clear()

    def __del__(self) -> None:
        unfreed = sum(1 for r in getattr(self, "records", ()) if r.holders is not None)
        if unfreed:
            warnings.warn(f"a split LaunchTape dropped with the per-thread tapes of {unfreed} launch(es) never "
                          "reversed: they stay on the heap; call backward() or reset() before dropping it",
                          ResourceWarning, stacklevel=2)

    def __repr__(self) -> str:
        return f"<LaunchTape{' (split)' if self.split else ''} of {len(self.records)} launch(es)>"


__all__ = ["LaunchTape", "LaunchTapeError", "LaunchRecord"]
