"""No marker of Enzyme's C interface survives differentiation: a call of an ``__enzyme_*`` function the
engine does not implement is an :class:`ADError` naming the marker and its C line (debug info), never
a call of an undefined symbol that jumps to address 0 when the program runs."""

from __future__ import annotations

import re

from gpucompiler.llvm import Function, Module, parse

from .errors import unsupported

#: a function name that is a marker of Enzyme's C interface (C++-mangled names contain it too)
_MARKER_NAME = re.compile(r'@"?([\w.$]*__enzyme_[\w.$]*)"?\(')

#: what to do instead, for the markers of Enzyme's tests the engine does not implement
_ADVICE = {
    "__enzyme_virtualreverse": "it is implemented for a function of the module whose arguments and result "
                               "are floats; for another argument (a vtable, a function taking pointers) make "
                               "the pair {augmented forward, reverse} of wrappers calling "
                               "__enzyme_augmentfwd/__enzyme_reverse",
    "__enzyme_shadow": "shadow lookups of globals by marker call are not implemented: pass the shadow "
                       "explicitly (enzyme_dup, value, shadow)",
    "__enzyme_set_fixed_point": "fixed-point iteration markers are not implemented: differentiate the loop "
                                "as it is (every iteration is taped)",
    "__enzyme_fixed_point": "fixed-point iteration markers are not implemented: differentiate the loop "
                            "as it is (every iteration is taped)",
    "__enzyme_checkpoint": "the checkpointing interface (enzyme/checkpoint.h) is not implemented: the "
                           "engine tapes or recomputes by itself",
}
_IMPLEMENTED = ("__enzyme_autodiff", "__enzyme_fwddiff", "__enzyme_augmentfwd", "__enzyme_reverse")


def _is_implemented(name: str) -> bool:
    return any(m in name for m in _IMPLEMENTED)


def _advice(name: str) -> str:
    for marker, text in _ADVICE.items():
        if marker in name:
            return text
    return ("it is not a marker the engine implements (" + ", ".join(f"{m}*" for m in _IMPLEMENTED) + ")")


def refuse_unknown(text: str) -> None:
    """Raise ADError for the first call of an ``__enzyme_*`` function the engine does not implement in
    LLVM IR ``text`` (a text scan first: most modules have none)."""
    if not any(not _is_implemented(n) for n in _MARKER_NAME.findall(text)):
        return
    _refuse_calls(parse(text), implemented_too=False)


def check_output(text: str) -> str:
    """``text`` (a differentiated module) without an unused ``__enzyme_*`` declaration; a call of one that
    is left (an implemented marker the engine did not replace included) is an ADError."""
    if not _MARKER_NAME.search(text):
        return text
    module = parse(text)
    _refuse_calls(module, implemented_too=True)
    for fn in [f for f in module.functions.values() if "__enzyme_" in f.name and f.is_declaration]:
        if fn.users:  # its address taken: a null pointer where the program uses it
            raise unsupported(f"@{fn.name}, a marker of Enzyme's C interface, is used as a value (not called): "
                              f"the engine replaces only calls of markers", None, fn)
        module.remove_function(fn)
    return str(module)


def _refuse_calls(module: Module, implemented_too: bool) -> None:
    for fn in module.functions.values():
        for inst in fn.instructions():
            if inst.opcode not in ("call", "invoke"):
                continue
            callee = inst.callee
            name = callee.name if isinstance(callee, Function) else ""
            if "__enzyme_" not in name:
                continue
            if not _is_implemented(name):
                raise unsupported(f"@{name}: a marker of Enzyme's C interface the engine does not implement; "
                                  f"{_advice(name)}", inst, fn)
            if implemented_too:
                raise unsupported(f"@{name}: a marker call was left in the differentiated module (an AD engine "
                                  f"bug: please report it with the input)", inst, fn)
