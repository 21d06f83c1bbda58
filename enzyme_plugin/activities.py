"""Activities (Enzyme's annotations of ``autodiff``'s arguments): ``Const``, ``Active``, ``Duplicated`` and
their batch and mixed forms, and the code each one's marker carries to the AD stage."""

from __future__ import annotations

import enum

from gpucompiler.errors import PLUGIN_ATTRIBUTE, ArgumentTypeError

from .locations import caller_location
from .values import shape


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


def mixed(a: Annotation) -> Annotation:
    """A ``Duplicated`` tuple or record as a mixed one (:attr:`Activity.MIXED`), member by member."""
    if not (a.kind.duplicated and shape(a.val) is not None):
        return a
    if isinstance(a, BatchDuplicated):
        return BatchMixedDuplicated(a.val, a.dval)
    return MixedDuplicated(a.val, a.dval) if isinstance(a, Duplicated) else a


setattr(Annotation, PLUGIN_ATTRIBUTE, "enzyme")  # activities made in compiled code enable the plugin

__all__ = ["ACTIVITIES", "Active", "Activity", "Annotation", "BatchDuplicated", "BatchDuplicatedNoNeed",
           "BatchMixedDuplicated", "Const", "Duplicated", "DuplicatedNoNeed", "MixedDuplicated", "mixed"]
