"""LLVM pass pipelines by name (``opt -passes=`` syntax) at the optimisation extension points, checked
before they run, against ``opt-19`` where it is installed."""

from __future__ import annotations

import shutil
import subprocess

import llvmlite.binding as llvm
import pytest

import gpucompiler.plugin as gp
from gpucompiler.errors import ConfigError
from gpucompiler.module import IRModule
from gpucompiler.pipeline import compile
from gpucompiler.stages.passes import PASSES, Pipeline, run_pipeline

from .conftest import make_job

IR = """\
define internal i32 @unused(i32 %x) {
  ret i32 %x
}
define i32 @f(i32 %a, i32 %b) {
entry:
  %p = alloca i32
  store i32 %a, ptr %p
  %x = load i32, ptr %p
  %s = add i32 %x, 0
  %t = mul i32 %s, %b
  ret i32 %t
}
"""
PIPELINE = "function(sroa,instcombine),globaldce"


def shape(text: str) -> dict[str, list[str]]:
    """Function name -> opcodes, read back through LLVM."""
    ref = llvm.parse_assembly(text)
    return {f.name: [i.opcode for b in f.blocks for i in b.instructions] for f in ref.functions if not f.is_declaration}


@pytest.mark.parametrize(("text", "steps"), [
    ("sroa", ("sroa",)),
    (PIPELINE, ("sroa", "instcombine", "globaldce")),
    ("module(function(sroa, simplifycfg), globaldce)", ("sroa", "simplifycfg", "globaldce")),
    ("default<O2>,instcombine", (2, "instcombine")),
])
def test_pipelines_parse_and_flatten(text, steps):
    assert Pipeline.parse(text).steps == steps


@pytest.mark.parametrize(("text", "column", "what"), [
    ("sroa,frobnicate", 6, "unknown pass 'frobnicate'"),
    ("loop-unroll<O3>", 1, "pass parameters are not supported"),
    ("sroa,,dce", 6, "a pass name expected"),
    ("function(sroa", 14, "ends early"),
    ("sroa)", 5, "unbalanced"),
    ("sroa(dce)", 5, r"only function\(\.\.\.\) and module\(\.\.\.\)"),
    ("sroa dce", 6, "a comma or a parenthesis expected"),
    ("", 1, "ends early"),
    ("default<O7>", 1, "unknown pass"),
])
def test_malformed_pipelines_are_config_errors_with_the_column(text, column, what):
    with pytest.raises(ConfigError, match=rf"at column {column}: .*{what}"):
        Pipeline.parse(text)


def test_every_named_pass_runs_through_llvmlite():
    job = make_job(IR, "f", opt_level=2)
    for name in PASSES:
        module = IRModule(IR)
        run_pipeline(job, module, name)  # the method exists and the module still verifies
        assert "f" in shape(str(module.ref))


@pytest.mark.parametrize("point", ["optimize.early", "optimize.late", "optimize.last"])
def test_a_plugin_runs_a_pipeline_at_an_extension_point(register, point):
    class Passes(gp.Plugin):
        name, version = "passes_" + point.split(".")[1], "1"

        @gp.callback(point)
        def run(self, job, module):
            run_pipeline(job, module, PIPELINE)

    register(Passes)
    plain = shape(compile(make_job(IR, "f", opt_level=0)).artifacts["llvm"])
    assert plain["f"][:3] == ["alloca", "store", "load"] and "unused" in plain
    out = shape(compile(make_job(IR, "f", opt_level=0, plugins=(Passes.name,))).artifacts["llvm"])
    assert out == {"f": ["mul", "ret"]}  # sroa and instcombine ran, globaldce deleted @unused


@pytest.mark.skipif(shutil.which("opt-19") is None, reason="opt-19 is not installed")
@pytest.mark.parametrize("text", [PIPELINE, "sroa,simplifycfg", "mem2reg,instcombine,dce", "default<O2>"])
def test_the_result_matches_llvms_opt(text):
    module = IRModule(IR)
    run_pipeline(make_job(IR, "f", opt_level=2), module, text)
    theirs = subprocess.run(["opt-19", "-S", f"-passes={text}"], input=IR, capture_output=True, text=True,
                            check=True).stdout
    assert shape(str(module.ref)) == shape(theirs)
