"""The user-facing API: ``autodiff(mode, f, *args)``, modes and activities (Enzyme.jl's conventions).

A facade: the modes are :mod:`enzyme_plugin.modes`, the activities :mod:`enzyme_plugin.activities`,
``autodiff`` :mod:`enzyme_plugin.dispatch` (through :mod:`enzyme_plugin.compiled`), split mode
:mod:`enzyme_plugin.split` (loaded on first use: it loads NumPy), the location of errors
:mod:`enzyme_plugin.locations`.

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
* Errors name the user's line of the call (:func:`enzyme_plugin.locations.at_call`).
"""


from __future__ import annotations

from typing import TYPE_CHECKING

from gpucompiler import lazy

from .activities import (ACTIVITIES, Active, Activity, Annotation, BatchDuplicated, BatchDuplicatedNoNeed, Const,
                         Duplicated, DuplicatedNoNeed)
from .dispatch import autodiff
from .locations import caller_location
from .modes import (WITH_PRIMAL, Forward, ForwardWithPrimal, Mode, Reverse, ReverseSplit, ReverseWithPrimal,
                    RuntimeActivity, mode_options, set_runtime_activity)

if TYPE_CHECKING:
    from .split import autodiff_thunk

_LAZY = {"autodiff_thunk": ".split"}
__getattr__, __dir__ = lazy.attach(__name__.rpartition(".")[0], _LAZY, globals())  # relative to the package

__all__ = ["ACTIVITIES", "Activity", "Mode", "Reverse", "Forward", "ReverseWithPrimal", "ForwardWithPrimal", "ReverseSplit",
           "WITH_PRIMAL", "Annotation", "Const", "Active", "Duplicated", "DuplicatedNoNeed", "BatchDuplicated",
           "BatchDuplicatedNoNeed", "autodiff", "autodiff_thunk", "caller_location", "set_runtime_activity",
           "RuntimeActivity", "mode_options"]
