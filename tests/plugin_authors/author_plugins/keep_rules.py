"""Keep rule functions out of line across AD: every function named ``rule_*`` is ``noinline`` from
``pre_ad`` (before the optimiser could inline it) until ``post_ad``, so the engine differentiates a call
of it (a rule a plugin might give a custom derivative); ``ad.late`` (after Enzyme's engine) records
which kept functions the differentiated module still calls, and ``report(job, state)`` hands that over."""

from __future__ import annotations

import gpucompiler.plugin as gp


def _is_rule(name: str) -> bool:
    return ".rule_" in name


class KeepRules(gp.Plugin):
    name, version = "keep_rules", "1"

    def new_state(self, job):
        return {"kept": [], "called_after_ad": []}

    @gp.callback("pre_ad")
    def keep(self, module, state):
        for fn in module.model.functions.values():
            if not fn.is_declaration and _is_rule(fn.name) and not fn.has_attribute("noinline"):
                fn.remove_attribute("alwaysinline")
                fn.add_attribute("noinline")
                state["kept"].append(fn.name)

    @gp.callback("ad.late", after="enzyme")
    def check(self, module, state):
        model = module.model
        state["called_after_ad"] = sorted(
            n for n in state["kept"] if n in model.functions and model.functions[n].uses)

    @gp.callback("post_ad")
    def release(self, module, state):
        model = module.model
        for name in state["kept"]:
            fn = model.functions.get(name)
            if fn is not None:
                fn.remove_attribute("noinline")

    def report(self, job, state):
        return dict(state) if state["kept"] else None
