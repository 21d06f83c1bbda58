"""A kernel's device heap running out, reported without losing the CUDA context.

A tape that grows with device ``malloc`` (the AD tape of a loop whose trip count is known only as it
runs) stops a thread whose ``malloc`` returns null: it gives back the block it was growing, sets the
module's flag :data:`FLAG` (an ``i32`` in global memory) and exits (``exit``, not ``trap``: a trap
poisons the context, every later driver call fails). The runtime reads the flag once the launch has
finished and, when it is set, clears it and raises :class:`~gpucompiler.errors.DeviceHeapError`; the
context stays usable.

When the flag is read: after each such launch (the runtime waits for it), unless the launching thread
defers the checks (:func:`deferring`, as a launch tape does while it records and while it replays
gradients). A deferred launch is noted (its flag, stream and a description) and read by
:func:`check_pending`, which the deferring code calls where it must know (a launch tape at the end of
its recording and of ``backward``), and which the runtime calls where the host waits anyway (its
``synchronize()``, a launch that copies results back to the host, a launch checked at once).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any

from ..errors import DeviceHeapError

FLAG = "__gpuc_device_heap_exhausted"
"""The global a stopped thread sets (defined by the tape's helpers in the module that uses it)."""

_NAMED = 4
"""launches a deferred check names per flag (the others are counted)"""


class Pending(threading.local):
    """Per thread: whether launches defer their checks, and the checks not yet made."""

    depth: int = 0
    """open :func:`deferring` blocks"""
    where: tuple[str, int] | None = None
    """what the next launch is for the caller (``("recorded launch", 3)``), named by an error"""

    def __init__(self):
        #: flag address -> (driver, (context, stream) launched on, launches named, launches in all)
        self.checks: dict[int, list] = {}


PENDING = Pending()


def flag_address(d, module) -> int | None:
    """The device address of ``module``'s flag, or None when the module has none."""
    err, dptr, _ = d.cuModuleGetGlobal(module, FLAG.encode())
    return int(dptr) if int(err) == 0 else None


class Deferring:
    """``with deferring():`` launches in this thread note their checks instead of waiting for the device;
    the caller reads them with :func:`check_pending` before anything depends on the launches having
    completed. (A class, not a generator: a launch tape enters it twice a round.)"""

    __slots__ = ()

    def __enter__(self) -> None:
        PENDING.depth += 1

    def __exit__(self, *exc) -> None:
        PENDING.depth -= 1


_DEFERRING = Deferring()


def deferring() -> Deferring:
    """The context in which launches defer their checks (:class:`Deferring`)."""
    return _DEFERRING


def after_launch(d, ctx: int, hstream: int, flag: int, kernel: str, check: Callable[[Any, str], Any]) -> None:
    """Called after a launch of ``kernel`` (its module's flag at ``flag``) on stream ``hstream`` of context
    ``ctx`` (current during the call): noted
    while the thread defers (:func:`deferring`), else checked now, after any checks still pending (a
    deferring block left by an exception before it read them). ``check``: as :func:`check_pending`'s."""
    pending = PENDING
    if not pending.depth:
        if pending.checks:
            check_pending(check)
        return raise_if_exhausted(d, hstream, flag, kernel)
    hit = pending.checks.get(flag)
    if hit is None:
        hit = pending.checks[flag] = [d, [], [], 0]
    if (ctx, hstream) not in hit[1]:
        hit[1].append((ctx, hstream))
    hit[3] += 1
    if len(hit[2]) < _NAMED:
        where = pending.where
        hit[2].append(kernel if where is None else f"{kernel} ({where[0]} {where[1]})")
    return None


def check_pending(check: Callable[[Any, str], Any]) -> None:
    """Wait for the streams of the deferred launches and read their flags (each stream and flag once);
    raise DeviceHeapError naming the launches of each flag that was set (cleared here). ``check``
    raises the driver's errors (``gpucompiler.runtime.cuda.check``)."""
    checks = PENDING.checks
    if not checks:
        return
    PENDING.checks = {}
    waited: set = set()
    for d, streams, _, _ in checks.values():
        for ctx, s in streams:
            if (id(d), ctx, s) not in waited:
                waited.add((id(d), ctx, s))
                _wait(d, ctx, s, check)
    stopped = []
    for flag, (d, _, named, count) in checks.items():
        word = ctypes.c_int32(0)
        check(d.cuMemcpyDtoH(ctypes.addressof(word), flag, 4), "cuMemcpyDtoH")
        if word.value:
            check(d.cuMemsetD32(flag, 0, 1), "cuMemsetD32")
            more = f" and {count - len(named)} more" if count > len(named) else ""
            stopped.append((d, f"{', '.join(named)}{more}"))
    if stopped:
        which = "; ".join(text for _, text in stopped)
        raise _exhausted(stopped[0][0], f"a thread of one of the launches {which} (launched without waiting "
                         "for them; a thread that runs out stops and leaves its results and its tape "
                         "incomplete)")


def _wait(d, ctx: int, hstream: int, check) -> None:
    """Wait for stream ``hstream`` of context ``ctx`` (pushed for the call when another one is current)."""
    pushed = bool(ctx) and int(check(d.cuCtxGetCurrent(), "cuCtxGetCurrent")) != ctx
    if pushed:
        check(d.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
    try:
        check(d.cuStreamSynchronize(hstream), "cuStreamSynchronize")
    finally:
        if pushed:
            check(d.cuCtxPopCurrent(), "cuCtxPopCurrent")


def raise_if_exhausted(d, hstream: int, flag: int, kernel: str = "") -> None:
    """Wait for stream ``hstream``; raise DeviceHeapError (clearing the flag) when a thread of the launch of
    ``kernel`` ran out of device heap. Driver errors are the caller's (``check``) to report."""
    err = d.cuStreamSynchronize(hstream)[0]
    if int(err):
        return  # the launch failed otherwise: the caller's next check names the error
    word = ctypes.c_int32(0)
    if int(d.cuMemcpyDtoH(ctypes.addressof(word), flag, 4)[0]) or word.value == 0:
        return
    d.cuMemsetD32(flag, 0, 1)
    raise _exhausted(d, f"a thread of the launch of {kernel or 'a kernel'} (it stopped: the gradient is "
                     "incomplete)")


def _exhausted(d, what: str) -> DeviceHeapError:
    err, heap = d.cuCtxGetLimit(d.CUlimit.CU_LIMIT_MALLOC_HEAP_SIZE)
    heap = int(heap) if int(err) == 0 else 0
    return DeviceHeapError("GPUC_DEVICE_HEAP_EXHAUSTED",
                           f"{what} needed more device heap for its AD tape than the {heap} bytes it has. Set "
                           f"GPUC_DEVICE_HEAP to more (e.g. GPUC_DEVICE_HEAP={max(2 * heap, 1 << 30) >> 20}M) "
                           "before the first launch in a new process, or launch fewer threads at a time; the "
                           "CUDA context is still usable", "cuLaunchKernel")


__all__ = ["FLAG", "PENDING", "Deferring", "Pending", "after_launch", "check_pending", "deferring", "flag_address",
           "raise_if_exhausted"]
