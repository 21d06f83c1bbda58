"""The rule sets of the Enzyme plugin and the marker call its rules leave for the pipeline half."""

from __future__ import annotations

from gpucompiler.interpreter import RuleSet

MARKER = "gpuc.enzyme.autodiff"
"""The marker call the interpreter leaves for the pipeline half."""
SPLIT_ONLY_FROM_PYTHON = ("split mode is made in Python: FWD, REV = autodiff_thunk(ReverseSplit, f, ...) at "
                          "module level; @jit functions and kernels call FWD and REV (docs/autodiff.md)")

rules = RuleSet("enzyme")
"""Rules of every job that enables the ``enzyme`` plugin."""
nested_rules = RuleSet("enzyme.nested")
"""Rules of the differentiated (nested) jobs only: custom derivative rules keep their functions out of line."""

__all__ = ["MARKER", "SPLIT_ONLY_FROM_PYTHON", "nested_rules", "rules"]
