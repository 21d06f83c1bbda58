"""The job ids a module looks up (``link_deferred.lookups``): read from LLVM's text without a parse where
every mention of ``@gpuc.lookup`` is a call on a job's constant, from the model otherwise, the same ids in
the same order either way."""

from __future__ import annotations

import random

import pytest

from gpucompiler.errors import CompileError
from gpucompiler.llvm.binding import parse_ir
from gpucompiler.module import IRModule
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
