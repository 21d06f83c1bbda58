"""A kernel's device heap running out, reported without losing the CUDA context.

A tape that grows with device ``malloc`` (the AD tape of a loop whose trip count is known only as it
runs) stops a thread whose ``malloc`` returns null: it gives back the block it was growing, sets the
module's flag :data:`FLAG` (an ``i32`` in global memory) and exits (``exit``, not ``trap``: a trap
poisons the context, every later driver call fails). After each launch of a kernel whose module
defines the flag, the runtime waits for the launch, reads the flag and, when it is set, clears it and
raises :class:`~gpucompiler.errors.DeviceHeapError`; the context stays usable.
"""

from __future__ import annotations

import ctypes

from ..errors import DeviceHeapError

FLAG = "__gpuc_device_heap_exhausted"
"""The global a stopped thread sets (defined by the tape's helpers in the module that uses it)."""


def flag_address(d, module) -> int | None:
    """The device address of ``module``'s flag, or None when the module has none."""
    err, dptr, _ = d.cuModuleGetGlobal(module, FLAG.encode())
    return int(dptr) if int(err) == 0 else None


def raise_if_exhausted(d, hstream: int, flag: int) -> None:
    """Wait for stream ``hstream``; raise DeviceHeapError (clearing the flag) when a thread ran out of
    device heap. Driver errors are the caller's (``check``) to report."""
    err = d.cuStreamSynchronize(hstream)[0]
    if int(err):
        return  # the launch failed otherwise: the caller's next check names the error
    word = ctypes.c_int32(0)
    if int(d.cuMemcpyDtoH(ctypes.addressof(word), flag, 4)[0]) or word.value == 0:
        return
    d.cuMemsetD32(flag, 0, 1)
    err, heap = d.cuCtxGetLimit(d.CUlimit.CU_LIMIT_MALLOC_HEAP_SIZE)
    heap = int(heap) if int(err) == 0 else 0
    raise DeviceHeapError("GPUC_DEVICE_HEAP_EXHAUSTED",
                          f"a kernel's AD tape needed more device heap than the {heap} bytes it has: the "
                          f"threads that ran out stopped, so the gradient is incomplete. Set GPUC_DEVICE_HEAP "
                          f"to more (e.g. GPUC_DEVICE_HEAP={max(2 * heap, 1 << 30) >> 20}M) before the first "
                          "launch in a new process, or launch fewer threads at a time; the CUDA context is "
                          "still usable", "cuLaunchKernel")


__all__ = ["FLAG", "flag_address", "raise_if_exhausted"]
