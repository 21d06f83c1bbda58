"""The AD modes (Enzyme.jl's names): ``Reverse``, ``Forward``, their ``...WithPrimal`` forms, split mode's
halves, and a mode with runtime activity (:func:`set_runtime_activity`)."""

from __future__ import annotations

import enum

import attrs

from gpucompiler.errors import PLUGIN_ATTRIBUTE, ArgumentTypeError

from .locations import caller_location


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
"""Each mode that returns the primal too -> the mode of its derivatives."""
ReverseSplit = Mode.ReverseSplit
"""Split reverse mode: see :func:`enzyme_plugin.split.autodiff_thunk`."""
SPLIT_MODES = (Mode.Augment, Mode.SplitReverse)
"""The two halves of split mode, for compiled callers that keep the tape themselves (launch tapes:
``autodiff(half, f, holder, activities...)`` with an int64 holder array of one element)."""


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


setattr(set_runtime_activity, PLUGIN_ATTRIBUTE, "enzyme")  # a call in compiled code enables the plugin

__all__ = ["Forward", "ForwardWithPrimal", "Mode", "Reverse", "ReverseSplit", "ReverseWithPrimal", "RuntimeActivity",
           "SPLIT_MODES", "WITH_PRIMAL", "mode_options", "set_runtime_activity"]
