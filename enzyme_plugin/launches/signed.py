"""A recorded GPU launch's arguments read once, by the CUDA runtime's signature of them.

A launch tape on a GPU needs each argument's frontend type (for its plan),
each array's bytes (for the overlap check) and the stream the arrays'
producers name, and the kernel's launch needs the argument signature and the
flat parameter values: :func:`gpucompiler.runtime.cuda.signature` reads all
of them at once (a CuPy array by its attributes, another array by one read of
its ``__cuda_array_interface__``). The types, and where each array's pointer,
shape and strides sit among the values, are worked out once per signature
key (:func:`typed`); :class:`SignedLaunch` hands the signature to the
kernel's bound launch, which reads nothing again.
"""

from __future__ import annotations

from collections.abc import Callable

from gpucompiler import types as T
from gpucompiler.kernel import Kernel, Launch
from gpucompiler.runtime import cuda, launchers
from gpucompiler.runtime.arguments import SCALAR_TYPES, TYPESTR

_TYPED: dict = {}
"""signature key -> ``(argument types, array slots)`` (see :func:`typed`)"""


def typed(key: tuple) -> tuple[tuple, tuple] | None:
    """``(argument types, slots)`` of the arguments of signature ``key``: per argument None (a scalar) or
    ``(index of its pointer among the values, ndim, itemsize)``; None when an argument takes the general
    path (a NumPy scalar, a zero-dimensional array: its error)."""
    hit = _TYPED.get(key)
    if hit is not None:
        return hit
    types, slots, at = [], [], 0
    for item in key:
        if type(item) is tuple:  # an array: (typestr, ndim, contiguous, read-only)
            typestr, ndim, contiguous, readonly = item
            dtype = TYPESTR[typestr]
            if ndim == 0:
                return None
            types.append(T.ArrayType(dtype, ndim, "C" if contiguous else "A", readonly))
            slots.append((at, ndim, dtype.itemsize))
            at += 1 + 2 * ndim
            continue
        t = SCALAR_TYPES.get(item)
        if t is None:
            return None
        types.append(t)
        slots.append(None)
        at += 1
    hit = (tuple(types), tuple(slots))
    if len(_TYPED) < 4096:
        _TYPED[key] = hit
    return hit


def spans(values: list, slots: tuple) -> list:
    """Each argument's bytes ``(start, end)`` from the signature's values (None: a scalar); an empty array's
    span is empty."""
    out: list = []
    for slot in slots:
        if slot is None:
            out.append(None)
            continue
        at, ndim, itemsize = slot
        start = values[at]
        if ndim == 1:
            n, s = values[at + 1], values[at + 2]
            out.append((start, start) if n == 0 else (start, start + (n - 1) * s + itemsize) if s >= 0
                       else (start + (n - 1) * s, start + itemsize))
            continue
        lo, hi = 0, itemsize
        for n, s in zip(values[at + 1:at + 1 + ndim], values[at + 1 + ndim:at + 1 + 2 * ndim]):
            if n == 0:
                lo = hi = 0
                break
            if s < 0:
                lo += (n - 1) * s
            else:
                hi += (n - 1) * s
        out.append((start + lo, start + hi))
    return out


def overlapping(values: list, slots: tuple, pairs: tuple) -> list[tuple[int, int]]:
    """The ``pairs`` of arguments whose bytes overlap (empty arrays overlap nothing), by the signature's values."""
    found = spans(values, slots)
    out = []
    for i, j in pairs:
        a, b = found[i], found[j]
        if a[0] < b[1] and b[0] < a[1] and a[0] != a[1] and b[0] != b[1]:
            out.append((i, j))
    return out


class SignedLaunch:
    """``launch(args, sig=None)``: a kernel launched on one configuration, ``sig`` the arguments'
    :func:`~gpucompiler.runtime.cuda.signature` when the caller read it. The first launch goes the kernel's
    own way (which binds its runtime: a global rebound later makes that forget what it loaded); later ones
    with a signature, on the CUDA runtime, without a chosen device and on a stream given as None or a handle,
    go to the runtime's bound launch of the configuration with the signature (nothing read twice)."""

    __slots__ = ("run", "bound", "kernel", "launch")

    def __init__(self, k: Kernel, launch: Launch):
        where = launch.device if launch.device is not None else launch.stream
        self.run = k[launch.grid, launch.block, where].run
        self.kernel, self.launch = k, launch
        self.bound: Callable[[tuple, tuple], None] | None = None

    def __call__(self, args: tuple, sig: tuple | None = None) -> None:
        bound = self.bound
        if bound is not None and sig is not None:
            bound(args, sig)
            return
        self.run(*args)
        launch = self.launch
        if bound is None and launch.device is None and type(launch.stream) in (int, type(None)):
            runtime = launchers.runtime_for(self.kernel.target)
            if isinstance(runtime, cuda.CudaRuntime):
                self.bound = runtime.bind(self.kernel, launch.grid, launch.block, launch.stream)


__all__ = ["SignedLaunch", "overlapping", "spans", "typed"]
