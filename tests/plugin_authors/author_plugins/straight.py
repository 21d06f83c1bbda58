"""Straight-through estimators through the Enzyme plugin's public contract: every function named
``ste_*`` (a rounding, a quantiser: AD gives it a zero derivative) is differentiated as the identity
of its float argument. At ``pre_ad``, gated on Enzyme's markers (modules without AD are left alone),
the plugin builds a forward rule ``(..., x, dx) -> dx`` and a reverse rule ``(..., x, dret) -> dret``
with the IR model's Builder and registers them with ``enzyme_plugin.contract.register_rule``: no
Enzyme-private name, no rename. The rules assume one float argument: for a ``ste_*`` function of two,
the contract refuses the reverse rule (``RuleSignatureError``, reported as this plugin's
``PluginError``)."""

from __future__ import annotations

import gpucompiler.plugin as gp
from enzyme_plugin.contract import AD_MARKERS, register_rule
from gpucompiler.llvm import Builder, Function, types as T


def _rules(model, fn: Function) -> tuple[Function, Function]:
    """``forward`` (each float parameter followed by its tangent) returning the first tangent, and
    ``reverse`` (the parameters, then ``dret``) returning ``dret`` as the float argument's adjoint."""
    params = fn.function_type.params
    fwd_params = [t for p in params for t in ((p, p) if p.is_float else (p,))]
    forward = model.add_function(Function(f"{fn.name}.ste.forward", T.function(fn.return_type, fwd_params),
                                          prefix="internal"))
    first = next(i for i, p in enumerate(params) if p.is_float)
    Builder(forward.append_block("entry")).ret(forward.args[first + 1])
    reverse = model.add_function(Function(f"{fn.name}.ste.reverse", T.function(fn.return_type, [*params, fn.return_type]),
                                          prefix="internal"))
    Builder(reverse.append_block("entry")).ret(reverse.args[-1])
    return forward, reverse


class StraightThrough(gp.Plugin):
    name, version = "straight", "1"

    @gp.callback("pre_ad", markers=AD_MARKERS)
    def register(self, module):
        model = module.model
        for fn in [f for n, f in model.functions.items() if ".ste_" in n and not f.is_declaration]:
            forward, reverse = _rules(model, fn)
            register_rule(model, fn, forward=forward, reverse=reverse)
