"""mock_autodiff in @jit code: deferred jobs compiled, linked and lowered; results against CPython."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import llvmlite.binding as llvm
import pytest

import deferred_funcs as F
from deferred_helpers import after_irgen, callees, defined_and_declared, linked_ir
from gpucompiler import CompilerConfig, CompilerJob, LLVMSource, NativeTarget, jit
from gpucompiler.targets import PTXTarget
from gpucompiler import types as T
from gpucompiler.errors import CompileError, TypeInferenceError
from gpucompiler.graphs import find_cycle
from gpucompiler.source.spec import FunctionSpec
from gpucompiler.llvm import parse
from gpucompiler.stages import link_deferred

PLUGINS = ("mock_enzyme",)
M = F.__name__
XS = (0.0, 1.5, -3.25, 7.0)


def compiled(fn):
    return jit(fn, plugins=PLUGINS)


def deferred_functions(ir: str) -> list[str]:
    defined, _ = defined_and_declared(ir)
    return sorted(n for n in defined if ".deferred." in n)


def job_of(fn, *argtypes, target=None):
    return CompilerJob(FunctionSpec(fn, argtypes), CompilerConfig(target or NativeTarget(), plugins=PLUGINS))


@pytest.mark.parametrize("fn, args", [
    (F.uses_square_twice, [(x, y) for x in XS for y in XS[:2]]),
    (F.calls_poly, [(x, n) for x in XS for n in (0, 1, 4)]),
    (F.int_result, [(n,) for n in (0, 1, 10, 100)]),
    (F.outer, [(x,) for x in XS]),
])
def test_results_equal_calling_f_directly(fn, args):
    f = compiled(fn)
    for a in args:
        assert f(*a) == fn(*a), a


def test_final_ir_has_no_lookup_and_no_marker():
    f = compiled(F.outer)
    ir = f.inspect_llvm(T.float64)
    defined, declared = defined_and_declared(ir)
    assert not {"gpuc.lookup", "__autodiff"} & (defined | declared)
    assert not [g for g in parse(ir).globals if g.startswith("gpuc.job.")]


def test_post_irgen_shows_lookup_and_marker():
    ir = compiled(F.calls_poly).inspect_llvm(T.float64, T.int64, stage="post_irgen")
    model = parse(ir)
    lookup_calls = [u.user for u in model.functions["gpuc.lookup"].uses]
    marker_calls = [u.user for u in model.functions["__autodiff"].uses]
    assert len(lookup_calls) == len(marker_calls) == 1
    (job_const,) = [g for g in model.globals if g.startswith("gpuc.job.")]
    assert lookup_calls[0].operands[1].name == job_const
    marker = marker_calls[0]
    assert marker.operands[1] is lookup_calls[0]  # __autodiff(ptr %deferred, ptr %slot, double %x, i64 %n)
    assert [str(o.type) for o in marker.operands[1:]] == ["ptr", "ptr", "double", "i64"]
    assert marker.operands[2].opcode == "alloca"  # the job's error slot (it takes one: @jit code stops)
    job_id = job_const[len("gpuc.job."):]
    assert len(job_id) == 64 and int(job_id, 16) >= 0


def test_inspect_after_link_deferred_shows_the_nested_function():
    ir = compiled(F.calls_poly).inspect_llvm(T.float64, T.int64, stage="link_deferred")
    (nested,) = deferred_functions(ir)
    assert nested.startswith("deferred_funcs.poly.deferred.")
    model = parse(ir)
    (marker,) = [u.user for u in model.functions["__autodiff"].uses]
    assert marker.operands[1] is model.functions[nested]
    assert "gpuc.lookup" not in model.functions


def test_nested_job_defers_again():
    ir = linked_ir(job_of(F.outer, T.float64))
    names = deferred_functions(ir)
    assert [n.split(".deferred.")[0] for n in names] == [M + ".inner", M + ".middle", M + ".square"]
    middle = next(n for n in names if n.startswith(M + ".middle"))
    model = parse(ir)
    passed = [u.user.operands[1].name for u in model.functions["__autodiff"].uses
              if u.user.function.name == middle]
    assert sorted(p.split(".deferred.")[0] for p in passed) == [M + ".inner", M + ".square"]


def test_identical_nested_jobs_compiled_once(monkeypatch):
    generated = []
    original = link_deferred.generate
    monkeypatch.setattr(link_deferred, "generate", lambda ctx, job: generated.append(job.name) or original(ctx, job))
    ir = linked_ir(job_of(F.uses_square_twice, T.float64, T.float64))
    assert len(generated) == 1 and deferred_functions(ir) == generated
    f = compiled(F.uses_square_twice)
    assert f(3.0, 4.0) == F.uses_square_twice(3.0, 4.0) == 34.0


def test_cycle_of_deferred_jobs_terminates():
    ctx = after_irgen(job_of(F.parity, T.int64))
    graph, modules = link_deferred.job_graph(ctx)
    assert len(modules) == 2
    cycle = find_cycle(graph.edges, "root")
    assert {graph.jobs[a].name.split(".deferred.")[0] for a in cycle} == {M + ".even", M + ".odd"}
    f = compiled(F.parity)
    assert [f(n) for n in range(9)] == [F.parity(n) for n in range(9)] == [1, 0] * 4 + [1]


def test_meta_rules_apply_only_inside_the_nested_job():
    f = compiled(F.probe_both)
    # inside mock_autodiff in_autodiff() is True (x + 1); in the parent and in CPython it is False
    assert [f(x) for x in XS] == [(x + 1.0) * 10.0 + x for x in XS]
    assert F.probe(2.0) == 2.0 and compiled(F.probe)(2.0) == 2.0 and jit(F.probe)(2.0) == 2.0


def test_ptx_nested_job_has_target_and_plugin_rules():
    """Double extension: the PTX overlay and the plugin's nested rules in one nested job."""
    ir = linked_ir(job_of(F.kernel_like, T.float64, target=PTXTarget()))
    (nested,) = deferred_functions(ir)
    assert callees(ir, nested) == ["__nv_sin"]  # PTX overlay kept
    text = str(llvm.parse_assembly(ir).get_function(nested))
    assert "2.000000e+00" in text and "3.000000e+00" not in text  # in_autodiff() is True: nested rules
    parent = "deferred_funcs.kernel_like"
    assert "__nv_sin" in callees(ir, parent) and "__autodiff" in callees(ir, parent)


def test_rebinding_a_global_of_the_deferred_function_recompiles():
    f = compiled(F.uses_scaled)
    assert f(3.0) == 6.0
    F.SCALE = 5.0
    try:
        assert f(3.0) == 15.0
    finally:
        F.SCALE = 2.0
    assert f(3.0) == 6.0


def test_not_a_function_is_a_typed_error():
    with pytest.raises(TypeInferenceError, match="mock_autodiff needs a Python function"):
        compiled(F.not_a_function)(1.0)


def test_unknown_job_id_is_a_typed_error():
    job_id = "0" * 64
    ir = textwrap.dedent(f"""\
        @"gpuc.job.{job_id}" = linkonce_odr constant [65 x i8] c"{job_id}\\00"
        declare ptr @gpuc.lookup(ptr)
        define ptr @get() {{
          %p = call ptr @gpuc.lookup(ptr @"gpuc.job.{job_id}")
          ret ptr %p
        }}
        """)
    from gpucompiler.pipeline import compile

    with pytest.raises(CompileError, match=f"no deferred job with id {job_id}"):
        compile(CompilerJob(LLVMSource(ir, "get"), CompilerConfig(NativeTarget())))


def test_ir_and_job_ids_identical_in_two_processes():
    code = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})
        import deferred_funcs as F
        from gpucompiler import jit, types as T
        f = jit(F.outer, plugins=("mock_enzyme",))
        print(f.inspect_llvm(T.float64, stage="post_irgen"))
        print(f.inspect_llvm(T.float64, stage="link_deferred"))
    """)
    outs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    assert outs[0] == outs[1]
    assert outs[0].count("@gpuc.lookup(ptr @gpuc.job.") == 1 and ".deferred." in outs[0]


SAME_CODE = "def f(x):\n    return K * x * x\n"


def test_same_code_other_globals_are_different_jobs(tmp_path):
    """Deferred job ids cover what the nested function reads, not just its code and closure:
    two copies of one function over other globals must not share a job (one would be linked for both)."""
    from gpucompiler import jit
    from gpucompiler_plugins.mock_autodiff import mock_autodiff

    copies = []
    for i, k in enumerate((2.0, 3.0)):
        path = tmp_path / f"copy{i}.py"
        path.write_text(SAME_CODE)
        namespace = {"__name__": "copies", "K": k}
        exec(compile(SAME_CODE, str(path), "exec"), namespace)
        copies.append(namespace["f"])

    def both(x):
        return mock_autodiff(F2, x) + 10.0 * mock_autodiff(F3, x)  # noqa: F821 (bound below)

    both.__globals__.update(F2=copies[0], F3=copies[1], mock_autodiff=mock_autodiff)
    try:
        assert jit(plugins=("mock_enzyme",))(both)(1.5) == 2.0 * 1.5**2 + 10.0 * 3.0 * 1.5**2
    finally:
        for name in ("F2", "F3"):
            both.__globals__.pop(name, None)
