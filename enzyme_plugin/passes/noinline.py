"""Functions with custom derivative rules stay out of line until AD has seen their calls.

Before optimisation (``link_deferred``), every function named first in an
``__enzyme_register_gradient_*`` / ``__enzyme_register_derivative_*`` global
gets ``noinline`` and the string attribute ``"gpuc.enzyme.noinline"`` recording
that the plugin added it. After AD (``post_ad``) both are removed again (a
``noinline`` the function had before is kept) and the registration globals,
which only the engine reads, are dropped.
"""

from __future__ import annotations

from gpucompiler.llvm import Function

RECORD = "gpuc.enzyme.noinline"
REGISTER = "__enzyme_register_"


def rule_functions(model) -> list[Function]:
    """The functions that have a registered custom rule."""
    out = []
    for g in model.globals.values():
        if REGISTER in g.name and g.initializer is not None:
            fns = [o for o in getattr(g.initializer, "operands", ()) if isinstance(o, Function)]
            if fns and fns[0] not in out:
                out.append(fns[0])
    return out


def mark(model) -> int:
    """``noinline`` on every custom-rule function that lacks it; returns how many were marked."""
    n = 0
    for fn in rule_functions(model):
        if fn.has_attribute("noinline"):
            continue
        fn.remove_attribute("alwaysinline")
        fn.add_attribute("noinline")
        fn.add_attribute(f'"{RECORD}"')
        n += 1
    return n


def restore(model) -> int:
    """Undo :func:`mark` and drop the registration globals; returns how many functions were restored."""
    n = 0
    for fn in model.functions.values():
        if fn.has_attribute(RECORD):
            fn.remove_attribute("noinline")
            fn.remove_attribute(RECORD)
            fn.attribute_groups = [g for g in fn.attribute_groups if g.attrs]
            n += 1
    if n:
        model.attribute_groups = [g for g in model.attribute_groups if g.attrs]
    helpers = []
    for g in [g for name, g in model.globals.items() if REGISTER in name]:
        if not g.uses:
            init = g.initializer
            helpers += [o for o in getattr(init, "operands", ())[1:] if isinstance(o, Function)]
            model.remove_global(g)
            if init is not None:
                init.drop_operands()  # the rules' uses by the array go with it
    for fn in helpers:  # the rules' own functions, unused once the engine has called them in
        if fn.module is model and not fn.uses and "internal" in fn.prefix.split():
            model.remove_function(fn)
    return n
