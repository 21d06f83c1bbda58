"""Abstract interpretation (type inference) and its extension points.

The names load their modules on first use (:mod:`gpucompiler.lazy`): the lattice and the
rule registry are imported without the inference engine. The rules of the language itself
(Python, ``math``, NumPy) are :mod:`gpucompiler.language`'s, which registers them.
"""

from typing import TYPE_CHECKING

from ..lazy import attach

if TYPE_CHECKING:
    from .deferred import (JOB_GLOBAL_PREFIX, LOOKUP, DeferredCall, DeferredJob, DeferredMeta, borrowed,
                           deferred_call, is_function, nested_interpreter)
    from .infer import Frame, Interpreter, spec_argtypes
    from .lattice import BOTTOM, AbstractValue, Const, pyobj, widen
    from .lowering import (ArgTypes, Args, CallResult, CodeGen, Handler, InlinePolicy, Interp, Lowering, ModuleGen,
                           Specialization)
    from .rules import Any_, Bool, Complex, Constant, Float, Int, Number, Numeric, RULE_SETS, RuleSet, register

_LAZY = {"borrowed": ".deferred", "JOB_GLOBAL_PREFIX": ".deferred", "LOOKUP": ".deferred",
         "DeferredCall": ".deferred", "DeferredJob": ".deferred", "DeferredMeta": ".deferred",
         "deferred_call": ".deferred", "is_function": ".deferred", "nested_interpreter": ".deferred",
         "Frame": ".infer", "Interpreter": ".infer", "spec_argtypes": ".infer", "BOTTOM": ".lattice",
         "Const": ".lattice", "pyobj": ".lattice", "widen": ".lattice", "AbstractValue": ".lattice",
         "ArgTypes": ".lowering", "Args": ".lowering", "CallResult": ".lowering", "CodeGen": ".lowering",
         "Handler": ".lowering", "InlinePolicy": ".lowering", "Interp": ".lowering", "Lowering": ".lowering",
         "ModuleGen": ".lowering", "Specialization": ".lowering", "Any_": ".rules", "Bool": ".rules", "Complex": ".rules", "Constant": ".rules", "Float": ".rules", "Int": ".rules",
         "Number": ".rules", "Numeric": ".rules", "RULE_SETS": ".rules", "RuleSet": ".rules", "register": ".rules"}
__getattr__, __dir__ = attach(__name__, _LAZY, globals())

__all__ = ["Interpreter", "Frame", "BOTTOM", "Const", "CallResult", "RuleSet", "register",
           "RULE_SETS", "Any_", "Bool", "Complex", "Constant", "Float", "Int", "Number", "Numeric", "pyobj", "widen",
           "spec_argtypes", "DeferredCall", "DeferredJob", "DeferredMeta", "JOB_GLOBAL_PREFIX", "LOOKUP",
           "deferred_call", "is_function", "nested_interpreter", "borrowed", "AbstractValue", "ArgTypes", "Args",
           "CodeGen", "Handler", "InlinePolicy", "Interp", "Lowering", "ModuleGen", "Specialization"]
