"""The stages around AD mean what they say: ``pre_ad`` before anything changes what AD sees, ``ad.late``
between the engines and re-optimisation, callbacks gated on the job's facts (markers seen so far, not
declarations the optimiser may delete), and callbacks ordered around another plugin's."""

from __future__ import annotations

import math
from typing import ClassVar

import pytest

import gpucompiler.plugin as gp
from enzyme_plugin import Active, Reverse, autodiff
from gpucompiler import jit
from gpucompiler import types as T
from gpucompiler.errors import ConfigError
from gpucompiler.interface import STAGE_NAMES, STAGES
from gpucompiler.llvm import parse
from gpucompiler.pipeline import compile

from .conftest import make_job


def test_the_stage_order_around_ad():
    assert STAGE_NAMES == ("irgen", "post_irgen", "link_deferred", "pre_ad", "optimize", "ad", "post_ad",
                           "finish", "validate", "emit")
    assert dict((s.name, s.hooks) for s in STAGES)["ad"] == ("ad", "ad.late")


HELPER_IR = """\
define internal i32 @helper(i32 %x) {
  %y = mul i32 %x, 3
  ret i32 %y
}
define i32 @f(i32 %x) {
  %y = call i32 @helper(i32 %x)
  %z = add i32 %y, 1
  ret i32 %z
}
"""


def calls_in(module_text: str, function: str) -> list[str]:
    fn = parse(module_text).functions[function]
    return [i.callee.name for i in fn.instructions() if i.opcode == "call"]


@pytest.mark.parametrize("opt", [1, 2, 3])
def test_pre_ad_sees_the_module_before_the_optimiser_and_can_protect_a_call(register, opt):
    seen: list = []

    class Protect(gp.Plugin):
        name, version = "protect", "1"

        @gp.callback("pre_ad")
        def keep(self, module):
            seen.append(calls_in(module.text, "f"))
            module.ref.get_function("helper").add_function_attribute("noinline")

    register(Protect)
    result = compile(make_job(HELPER_IR, "f", plugins=("protect",), opt_level=opt))
    assert seen == [["helper"]]  # not inlined yet
    assert calls_in(result.artifacts["llvm"], "f") == ["helper"]  # still a call after O<n>
    assert compile(make_job(HELPER_IR, "f", opt_level=opt)).artifacts["llvm"].count("call") == 0  # else inlined


def cube_sin(x):
    return x * x * x + math.sin(x)


def grad(x):
    return autodiff(Reverse, cube_sin, Active(x))[0]


class Watch(gp.Plugin):
    """Records the module at ``ad.late`` and each ``post_ad`` gated on Enzyme's marker."""

    name, version = "watch_ad", "1"
    log: ClassVar[dict] = {}

    @gp.callback("ad.late", after="enzyme", order=-100)  # after= wins over order=
    def differentiated(self, module):
        model = module.model
        marker = model.functions.get("__enzyme_autodiff")
        Watch.log["ad.late"] = (0 if marker is None else len(marker.uses),
                                sum(1 for f in model.functions.values() for _ in f.instructions()))

    @gp.callback("post_ad", markers=("__enzyme_autodiff",))
    def after(self, job, module):
        Watch.log.setdefault("post_ad", []).append(job.config.opt_level)
        Watch.log["final"] = sum(len(list(b.instructions)) for f in module.ref.functions for b in f.blocks)


@pytest.mark.parametrize("opt", [0, 1, 2, 3])
def test_ad_late_runs_after_the_engine_before_reoptimisation_and_post_ad_runs_at_every_level(register, opt):
    register(Watch)
    f = jit(grad, plugins=("enzyme", "watch_ad"), opt_level=opt)
    assert f(0.7) == pytest.approx(3 * 0.49 + math.cos(0.7), rel=1e-14)
    Watch.log = {}
    f.inspect_llvm(T.float64)  # a compile of its own: the log is this one's
    uses, instructions = Watch.log["ad.late"]
    assert uses == 0  # the engine replaced every marker call
    assert Watch.log["post_ad"] == [opt]  # O1+ deleted the dead declaration; the fact stays
    if opt > 0:
        assert Watch.log["final"] < instructions  # optimised again after ad.late


# -- ordering around another plugin's callbacks ---------------------------------------------
def ordered(log, name, point="ad", **kw):
    class P(gp.Plugin):
        @gp.callback(point, **kw)
        def run(self):
            log.append(name)

    P.name, P.version = name, "1"
    return P


def test_before_and_after_win_over_order_and_name(register):
    log: list = []
    register(ordered(log, "aa", after="zz"))
    register(ordered(log, "mm", order=5, before="aa"))
    register(ordered(log, "zz"))
    compile(make_job(plugins=("aa", "mm", "zz")))
    assert log == ["zz", "mm", "aa"]  # mm before aa, aa after zz; zz first by order and name otherwise


def test_constraints_on_plugins_not_enabled_are_ignored(register):
    log: list = []
    register(ordered(log, "solo", after="enzyme"))
    compile(make_job(plugins=("solo",)))
    assert log == ["solo"]


def test_a_cycle_of_constraints_is_a_config_error(register):
    log: list = []
    register(ordered(log, "c1", after="c2"))
    register(ordered(log, "c2", after="c1"))
    with pytest.raises(ConfigError, match=r"cycle.*c1\.run.*c2\.run"):
        compile(make_job(plugins=("c1", "c2")))
