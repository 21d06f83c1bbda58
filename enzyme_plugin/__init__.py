"""Enzyme-style automatic differentiation on LLVM IR, as a gpucompiler plugin.

``autodiff(Reverse, f, Active(x), Duplicated(a, da))`` differentiates ``f``
from plain Python, inside ``@jit(plugins=("enzyme",))`` functions and inside
``@kernel(plugins=("enzyme",))`` GPU kernels (docs/autodiff.md).
``autodiff_thunk(ReverseSplit, f, ...)`` splits reverse mode into a forward
and a reverse pass sharing a tape (thunks made in Python, called from Python, @jit functions and kernels). ``gradient``, ``jacobian`` and ``hvp`` are conveniences over it
(:mod:`enzyme_plugin.derivatives`). ``custom_rule`` gives
a function its own derivative. ``LaunchTape`` differentiates host code that launches kernels
(:mod:`enzyme_plugin.launches`). ``differentiate(ir_text)``
is the engine on any LLVM IR that calls ``__enzyme_autodiff`` /
``__enzyme_fwddiff`` (docs/enzyme.md).
"""

from typing import TYPE_CHECKING

from gpucompiler import lazy

from .ad.errors import ADError
from .activities import Active, BatchDuplicated, BatchDuplicatedNoNeed, Const, Duplicated, DuplicatedNoNeed
from .dispatch import autodiff
from .modes import Forward, ForwardWithPrimal, Mode, Reverse, ReverseSplit, ReverseWithPrimal, set_runtime_activity

if TYPE_CHECKING:
    from .ad.c_interface import differentiate
    from .language.custom import CustomRuleError, custom_rule
    from .derivatives import gradient, hvp, jacobian
    from .options import EnzymeOptions
    from .launches import KernelGradientError, LaunchTape, LaunchTapeError, register_gradient
    from .split import Tape, TapeError, autodiff_thunk

#: names loaded on first use, measured import-time savings (``python -X importtime``): the modules
#: of the conveniences, split mode and launch tapes import NumPy (about 35 ms), the AD engine's twenty modules
#: are needed only once something is differentiated, the interpreter rules (with the compiler they
#: need, ~100 ms) once something is compiled or a custom rule declared
_LAZY = {"EnzymeOptions": ".options", "CustomRuleError": ".language.custom", "custom_rule": ".language.custom",
         "gradient": ".derivatives", "hvp": ".derivatives", "jacobian": ".derivatives", "Tape": ".split",
         "TapeError": ".split", "autodiff_thunk": ".split", "KernelGradientError": ".launches",
         "LaunchTape": ".launches", "LaunchTapeError": ".launches", "register_gradient": ".launches",
         "differentiate": ".ad.c_interface"}
__getattr__, __dir__ = lazy.attach(__name__, _LAZY, globals())

__version__ = "0.1.0"
__all__ = ["ADError", "Active", "BatchDuplicated", "BatchDuplicatedNoNeed", "Const", "Duplicated", "DuplicatedNoNeed", "Forward", "ForwardWithPrimal", "Mode",
           "Reverse", "ReverseSplit", "ReverseWithPrimal", "Tape", "TapeError", "autodiff", "autodiff_thunk",
           "CustomRuleError", "custom_rule", "differentiate", "gradient", "hvp", "jacobian", "KernelGradientError", "LaunchTape",
           "LaunchTapeError", "register_gradient", "set_runtime_activity", "EnzymeOptions"]
