"""Choosing the GPU of a launch, as CuPy and Numba users do.

::

    k[grid, block, Device(1)](x, y)      # this launch on GPU 1
    with Device(1):                      # every launch of this thread (or task) inside, as cupy.cuda.Device
        k[grid, block](x, y)
    select_device(1)                     # from now on in this thread, as numba.cuda.select_device

With no device chosen, a launch runs in the thread's current CUDA context
(device 0's primary context when there is none), as before. A chosen device
runs in its primary context (the one CuPy, PyTorch and Numba use), made
current for the launch: a kernel's module is loaded once per device (the
runtime keys loaded modules by context). An array argument whose memory is on
another GPU than the launch's is a :class:`~gpucompiler.errors.DeviceMismatchError`
naming both (its device comes from its ``__cuda_array_interface__`` pointer,
asked of the driver). The choice is a context variable: each thread and
asyncio task has its own, and the CPU grid emulation (``k[grid, block, "cpu"]``)
ignores it, so the same code runs without a GPU.
"""

from __future__ import annotations

import contextvars

import attrs

from ..errors import LaunchError

_CURRENT: contextvars.ContextVar[Device | None] = contextvars.ContextVar("gpuc_device", default=None)
#: the tokens of the ``with Device(...)`` blocks entered in this thread or task, innermost last (one
#: Device object may be entered by several threads at once: its blocks are not kept on the object)
_ENTERED: contextvars.ContextVar[tuple[contextvars.Token, ...]] = contextvars.ContextVar("gpuc_device_blocks",
                                                                                       default=())


def _ordinal(_device, _attribute, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise LaunchError(f"a device is a CUDA device ordinal, an int >= 0, got {value!r}")


@attrs.frozen(repr=False)
class Device:
    """GPU number ``id`` (the CUDA device ordinal); a context manager choosing it for the launches inside."""

    id: int = attrs.field(validator=_ordinal)

    def __enter__(self) -> Device:
        _ENTERED.set((*_ENTERED.get(), _CURRENT.set(self)))
        return self

    def __exit__(self, *exc) -> None:
        *outer, token = _ENTERED.get()
        _ENTERED.set(tuple(outer))
        _CURRENT.reset(token)

    def __repr__(self) -> str:
        return f"<Device cuda:{self.id}>"


def as_device(value) -> Device:
    """``value`` (a :class:`Device` or an int ordinal) as a :class:`Device`."""
    return value if isinstance(value, Device) else Device(value)


def select_device(value) -> Device:
    """Choose ``value`` (a :class:`Device` or an ordinal) for this thread's (or task's) later launches."""
    device = as_device(value)
    _CURRENT.set(device)
    return device


def current_device() -> Device | None:
    """The device chosen for this thread's launches, or None (the current CUDA context's)."""
    return _CURRENT.get()


chosen_device = _CURRENT.get
""":func:`current_device` without its call (a launch asks it each time)."""


def chosen(device: Device | None) -> contextvars.Token | None:
    """Make ``device`` (when not None) the chosen one; the token to :func:`restore` it with."""
    return None if device is None else _CURRENT.set(device)


def restore(token: contextvars.Token | None) -> None:
    if token is not None:
        _CURRENT.reset(token)


__all__ = ["Device", "as_device", "chosen", "current_device", "restore", "select_device"]
