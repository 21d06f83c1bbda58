"""A per-target overlay and a nested job (``gpuc.lookup``-style), from one rule set.

* ``fast_exp(x)``: ``llvm.exp.f64`` on the host (CPU code and the grid emulation), libdevice's
  ``__nv_exp`` on PTX (NVPTX has no ``llvm.exp``): the lowering asks the job's target.
* ``twice(f, x)``: ``f(f(x))`` where ``f`` is compiled as a nested job of its own (a deferred call behind
  the ``__overlay_twice`` marker), lowered at ``ad`` before Enzyme differentiates, so ``autodiff`` of code
  that calls ``twice`` sees two ordinary calls.

In CPython both are what they say, so compiled results can be checked against them.
"""

from __future__ import annotations

import math

import attrs

import gpucompiler.plugin as gp
from gpucompiler import types as T
from gpucompiler.errors import TypeInferenceError
from gpucompiler.interpreter import RuleSet
from gpucompiler.interpreter.deferred import DeferredMeta, deferred_call, is_function
from gpucompiler.llvm import Builder

MARKER = "__overlay_twice"
rules = RuleSet("overlay")


def fast_exp(x):
    """``math.exp(x)``; in compiled code the target's exponential."""
    return math.exp(x)


def twice(f, x):
    """``f(f(x))``; in compiled code ``f`` is a nested job called twice."""
    return f(f(x))


@rules.define(fast_exp, T.float64, restype=T.float64, pure=False)
def _fast_exp(cg, args, argtypes, restype):
    if cg.target.is_gpu:
        return cg.call_extern("__nv_exp", restype, args)
    return cg.call_intrinsic("llvm.exp", restype, args)


@attrs.frozen
class TwiceMeta(DeferredMeta):
    """A nested job of ``twice`` (its fields are part of the job id)."""


@rules.handler
def _twice(interp, fn, args):
    if fn is not twice:
        return None
    if len(args) != 2 or not is_function(args[0]):
        raise TypeInferenceError("twice needs a Python function and one argument: twice(f, x)")
    return deferred_call(interp, TwiceMeta(), args[0].value, args[1:], marker=MARKER)


class OverlayPlugin(gp.Plugin):
    name, version = "overlay", "1"
    rules = rules
    markers = (MARKER,)

    @gp.callback("ad", markers=(MARKER,), before="enzyme")
    def lower_twice(self, module):
        model = module.model
        marker = model.functions.get(MARKER)
        if marker is None:
            return
        for use in list(marker.uses):
            call = use.user
            f, *args = call.args  # args: the error slot when f takes one, then x
            b = Builder()
            b.position_before(call)
            once = b.call(f, args)
            again = b.call(f, [*args[:-1], once])
            call.replace_all_uses_with(again)
            call.erase()
        model.remove_function(marker)
