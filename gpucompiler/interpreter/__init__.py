"""Abstract interpretation (type inference) and its extension points."""

from .builtins.arraymem import borrowed
from .deferred import (JOB_GLOBAL_PREFIX, LOOKUP, DeferredCall, DeferredJob, DeferredMeta, deferred_call,
                       is_function, nested_interpreter)
from .infer import Frame, Interpreter, spec_argtypes
from .lattice import BOTTOM, Const, pyobj, widen
from .rules import (Any_, Bool, CallResult, Complex, Constant, Float, Int, Number, Numeric, RULE_SETS, RuleSet,
                    register)

__all__ = ["Interpreter", "Frame", "BOTTOM", "Const", "CallResult", "RuleSet", "register",
           "RULE_SETS", "Any_", "Bool", "Complex", "Constant", "Float", "Int", "Number", "Numeric", "pyobj", "widen",
           "spec_argtypes", "DeferredCall", "DeferredJob", "DeferredMeta", "JOB_GLOBAL_PREFIX", "LOOKUP",
           "deferred_call", "is_function", "nested_interpreter", "borrowed"]
