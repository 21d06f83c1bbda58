"""Abstract interpretation (type inference) and its extension points."""

from .infer import Frame, Interpreter
from .lattice import BOTTOM, Const
from .rules import (Any_, Bool, CallResult, Constant, Float, Int, Number, RULE_SETS, RuleSet,
                    register)

__all__ = ["Interpreter", "Frame", "BOTTOM", "Const", "CallResult", "RuleSet", "register",
           "RULE_SETS", "Any_", "Bool", "Constant", "Float", "Int", "Number"]
