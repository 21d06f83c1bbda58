"""The job ids a module looks up (``link_deferred.lookups``): read from LLVM's text without a parse where
every mention of ``@gpuc.lookup`` is a call on a job's constant, from the model otherwise, the same ids in
the same order either way."""

from __future__ import annotations

import random

import pytest

import deferred_funcs as F
from deferred_helpers import linked_ir
from gpucompiler import CompilerConfig, CompilerJob, NativeTarget, types as T
from gpucompiler.errors import CompileError
from gpucompiler.llvm.binding import parse_ir
from gpucompiler.module import IRModule
from gpucompiler.source.spec import FunctionSpec
from gpucompiler.stages import link_deferred

IDS = ["a1", "0f", "b2c3"]


def _module(calls: list[str], extra: str = "") -> str:
    """A module whose functions look up ``calls`` (job ids; each function two of them at most)."""
    consts = "".join(f'@gpuc.job.{i} = linkonce_odr constant [{len(i) + 1} x i8] c"{i}\\00"\n' for i in IDS)
    bodies = []
    for k in range(0, len(calls), 2):
        lines = [f"  %p{j} = call ptr @gpuc.lookup(ptr @gpuc.job.{i})" for j, i in enumerate(calls[k:k + 2])]
        bodies.append(f"define ptr @f{k}() {{\nentry:\n" + "\n".join(lines) + "\n  ret ptr %p0\n}\n")
    return consts + "\n".join(bodies) + extra + "\ndeclare ptr @gpuc.lookup(ptr)\n"


@pytest.fixture
def no_parse(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the module was parsed")

    monkeypatch.setattr(link_deferred.ir_model, "parse", refuse)


def test_lookups_of_llvms_module_are_read_from_its_text(no_parse):
    module = IRModule(ref=parse_ir(_module(["0f", "a1", "0f", "b2c3"])))
    assert link_deferred.lookups(module) == ["0f", "a1", "b2c3"]


@pytest.mark.parametrize("seed", range(20))
def test_the_text_and_the_model_give_the_same_ids_in_the_same_order(seed):
    rng = random.Random(seed)
    calls = [rng.choice(IDS) for _ in range(rng.randrange(1, 9))]
    text = str(parse_ir(_module(calls)))
    assert link_deferred.lookups(IRModule(ref=parse_ir(text))) == list(dict.fromkeys(calls))
    assert link_deferred.lookups(IRModule(text=text)) == list(dict.fromkeys(calls))  # the model's answer


def test_a_lookup_on_something_else_than_a_jobs_constant_is_still_refused():
    extra = "define ptr @g(ptr %q) {\nentry:\n  %r = call ptr @gpuc.lookup(ptr %q)\n  ret ptr %r\n}\n"
    module = IRModule(ref=parse_ir(_module(["a1"], extra)))
    with pytest.raises(CompileError, match="must take a"):
        link_deferred.lookups(module)


def test_a_lookup_whose_address_is_taken_is_read_from_the_model():
    extra = "@keep = global ptr @gpuc.lookup\n"
    module = IRModule(ref=parse_ir(_module(["a1", "0f"], extra)))
    with pytest.raises(CompileError, match="a constant"):
        link_deferred.lookups(module)


# -- the lookups replaced: on LLVM's text where it shows them plainly, on the model otherwise ---------

NESTED = "".join(f"define internal double @job_{i}(double %x) {{\nentry:\n  ret double %x\n}}\n" for i in IDS)
NAMES = {i: f"job_{i}" for i in IDS}


def _replaced(text: str, monkeypatch, by_text: bool) -> str:
    """``text``'s module after ``replace_lookups``, as LLVM reads it, on the text's way or the model's."""
    if not by_text:
        monkeypatch.setattr(link_deferred, "_replaced_in_text", lambda text, names: None)
    module = IRModule(ref=parse_ir(text))
    link_deferred.replace_lookups(module, NAMES)
    monkeypatch.undo()
    return str(parse_ir(module.text))


LOOP = NESTED + """
define ptr @loop(i64 %n) {
entry:
  br label %head
head:
  %p = phi ptr [ null, %entry ], [ %f, %body ]
  %i = phi i64 [ 0, %entry ], [ %j, %body ]
  %done = icmp eq i64 %i, %n
  br i1 %done, label %exit, label %body
body:
  %f = call ptr @gpuc.lookup(ptr @gpuc.job.a1)
  %g = call ptr @gpuc.lookup(ptr @gpuc.job.0f)
  call void asm sideeffect "nop ; %f %g", ""()
  %j = add i64 %i, 1
  br label %head
exit:
  ret ptr %p
}

define ptr @other() {
entry:
  %f = call ptr @gpuc.lookup(ptr @gpuc.job.b2c3)
  %f1 = getelementptr i8, ptr %f, i64 1
  ret ptr %f1
}

@keep = global ptr @gpuc.job.0f
"""


@pytest.mark.parametrize("seed", range(12))
def test_the_text_and_the_model_replace_the_lookups_alike(seed, monkeypatch):
    rng = random.Random(seed)
    text = NESTED + _module([rng.choice(IDS) for _ in range(rng.randrange(1, 9))])
    printed = str(parse_ir(text))
    assert link_deferred._replaced_in_text(printed, NAMES) is not None
    assert _replaced(printed, monkeypatch, True) == _replaced(printed, monkeypatch, False)


def test_a_result_used_before_its_call_in_a_loop_is_replaced_and_strings_are_left_alone(monkeypatch):
    consts = "".join(f'@gpuc.job.{i} = linkonce_odr constant [{len(i) + 1} x i8] c"{i}\\00"\n' for i in IDS)
    printed = str(parse_ir(consts + LOOP + "declare ptr @gpuc.lookup(ptr)\n"))
    edited = link_deferred._replaced_in_text(printed, NAMES)
    assert edited is not None
    assert "phi ptr [ null, %entry ], [ @job_a1, %body ]" in edited and '"nop ; %f %g"' in edited
    assert "getelementptr i8, ptr @job_b2c3, i64 1" in edited and "%f1" in edited
    assert "@gpuc.job.0f = " in edited and "@gpuc.job.a1 = " not in edited  # still named by @keep
    assert _replaced(printed, monkeypatch, True) == _replaced(printed, monkeypatch, False)


def test_an_unnamed_result_is_replaced_on_the_model():
    text = str(parse_ir(NESTED + _module(["a1"]).replace("%p0", "%0").replace("ret ptr %0", "ret ptr %0")))
    assert "%0 = call ptr @gpuc.lookup" in text
    assert link_deferred._replaced_in_text(text, NAMES) is None
    module = IRModule(ref=parse_ir(text))
    link_deferred.replace_lookups(module, NAMES)
    assert "gpuc.lookup" not in module.text and "ret ptr @job_a1" in module.text


@pytest.mark.parametrize("name", ["outer", "uses_square_twice", "calls_poly", "parity"])
def test_a_compiled_programs_lookups_are_replaced_on_its_text_as_on_its_model(name, monkeypatch):
    fn = getattr(F, name)
    argtypes = (T.int64,) if name == "parity" else (T.float64, T.int64) if name == "calls_poly" else \
        (T.float64, T.float64) if name == "uses_square_twice" else (T.float64,)
    job = CompilerJob(FunctionSpec(fn, argtypes), CompilerConfig(NativeTarget(), plugins=("mock_enzyme",)))
    real, edited = link_deferred._replaced_in_text, []

    def spy(text, names):
        out = real(text, names)
        edited.append(out is not None)
        return out

    monkeypatch.setattr(link_deferred, "_replaced_in_text", spy)
    by_text = str(parse_ir(linked_ir(job)))
    assert edited == [True]
    monkeypatch.setattr(link_deferred, "_replaced_in_text", lambda text, names: None)
    assert by_text == str(parse_ir(linked_ir(job)))
