"""A plugin's marker functions (its ``markers`` hook) are gone after its stages: ``autodiff`` links at
every opt level (O0 kept a dead ``__enzyme_autodiff`` declaration: an unresolved symbol at load), and a
marker a plugin leaves behind is a PluginError naming the plugin, not a link error."""

from __future__ import annotations

import math

import pytest

import gpucompiler.plugin as gp
from enzyme_plugin import Active, Reverse, autodiff
from gpucompiler import jit
from gpucompiler import types as T
from gpucompiler.errors import PluginError
from gpucompiler.llvm import Builder, constant, parse
from gpucompiler.llvm import types as LT
from gpucompiler.pipeline import compile

from .conftest import make_job


def cube_sin(x):
    return x * x * x + math.sin(x)


def grad(x):
    return autodiff(Reverse, cube_sin, Active(x))[0]


@pytest.mark.parametrize("opt", [0, 1, 2, 3])
def test_autodiff_links_at_every_opt_level(opt):
    f = jit(grad, plugins=("enzyme",), opt_level=opt)
    for x in (0.7, -2.0):
        assert f(x) == pytest.approx(3 * x * x + math.cos(x), rel=1e-14)
    final = parse(f.inspect_llvm(T.float64))
    assert not {"__enzyme_autodiff", "__enzyme_fwddiff", "gpuc.enzyme.autodiff"} & set(final.functions)


MARKED_IR = """\
declare i32 @__lowered_later(i32)
define i32 @f(i32 %x) {
  %y = call i32 @__lowered_later(i32 %x)
  ret i32 %y
}
"""


class Forgetful(gp.Plugin):
    """Declares a marker and never lowers it."""

    name, version = "forgetful", "1"
    markers = ("__lowered_later",)


class Careful(Forgetful):
    """Lowers its marker at ``ad``: ``__lowered_later(x)`` becomes ``x + 1``."""

    name = "careful"

    @gp.callback("ad", markers=("__lowered_later",))
    def lower(self, module):
        model = module.model
        marker = model.functions["__lowered_later"]
        for use in list(marker.uses):
            call = use.user
            b = Builder()
            b.position_before(call)
            call.replace_all_uses_with(b.add(call.args[0], constant(LT.i32, "1")))
            call.erase()
        model.remove_function(marker)


def test_a_marker_left_behind_names_the_plugin(register):
    register(Forgetful)
    with pytest.raises(PluginError) as err:
        compile(make_job(MARKED_IR, "f", plugins=("forgetful",)))
    assert err.value.plugin == "forgetful" and err.value.stage == "validate"
    assert "@__lowered_later (1 use)" in str(err.value) and "must lower every marker call" in str(err.value)


def test_a_dead_marker_declaration_is_left_behind_too(register):
    register(Forgetful)
    ir = "declare i32 @__lowered_later(i32)\ndefine i32 @f(i32 %x) {\n  ret i32 %x\n}\n"
    with pytest.raises(PluginError, match=r"@__lowered_later \(0 uses\)"):
        compile(make_job(ir, "f", plugins=("forgetful",), opt_level=0))  # O1+ deletes unused declarations


def test_markers_of_disabled_plugins_are_not_checked(register):
    register(Forgetful)
    ir = "declare i32 @__lowered_later(i32)\ndefine i32 @f(i32 %x) {\n  ret i32 %x\n}\n"
    assert "@f" in compile(make_job(ir, "f")).artifacts["llvm"]


@pytest.mark.parametrize("opt", [0, 1, 2, 3])
def test_a_plugin_that_lowers_its_marker_passes(register, opt):
    register(Careful)
    result = compile(make_job(MARKED_IR, "f", plugins=("careful",), opt_level=opt), emit=("llvm",))
    model = parse(result.artifacts["llvm"])
    assert "__lowered_later" not in model.functions
    (op,) = [i for i in model.functions["f"].instructions() if i.opcode not in ("ret",)]
    assert op.opcode == "add" and op.operands[0] is model.functions["f"].args[0] and op.operands[1].text == "1"
