"""The serialisable-IR validator and the cache's refusal to keep IR that is not."""

from __future__ import annotations

import pytest

from gpucompiler.cache import Cache, DiskTier, check_serialisable, serialisation_errors
from gpucompiler.core import CompilerConfig
from gpucompiler.errors import CacheWarning, UnserialisableIRError
from gpucompiler.core import CompilerJob, LLVMSource
from gpucompiler.pipeline import compile as compile_job
from gpucompiler.targets import NativeTarget
from tests.cache import jobs

BAKED = """
define i64 @f() {
  %p = inttoptr i64 140737488355328 to i64*
  %v = load i64, i64* %p
  ret i64 %v
}
"""
GLOBAL = """
@table = global i8* inttoptr (i64 94558800000000 to i8*)
define i8* @g() {
  %v = load i8*, i8** @table
  ret i8* %v
}
"""
SYMBOL = """
declare double @pyobj_0x7f3a12c04d10(double)
define double @h(double %x) {
  %y = call double @pyobj_0x7f3a12c04d10(double %x)
  ret double %y
}
"""


def kinds(text):
    return sorted(k for k, _ in serialisation_errors(text))


def test_clean_ir_with_named_externals_passes():
    assert serialisation_errors(jobs.KERNEL_IR) == []
    check_serialisable(jobs.KERNEL_IR)


@pytest.mark.parametrize("text,expected", [(BAKED, ["POINTER_CONSTANT"]), (GLOBAL, ["POINTER_CONSTANT"]),
                                           (SYMBOL, ["PROCESS_SYMBOL"])])
def test_runtime_pointers_and_process_symbols_are_named(text, expected):
    assert kinds(text) == expected
    with pytest.raises(UnserialisableIRError) as info:
        check_serialisable(text, "job")
    assert info.value.errors[0][0] == expected[0]


def test_cache_compiles_but_does_not_keep_unserialisable_ir(cache_env):
    job = CompilerJob(LLVMSource(GLOBAL, "g"), CompilerConfig(NativeTarget(), validate=False))
    cache = Cache(DiskTier(cache_env), compiler=compile_job)
    with pytest.warns(CacheWarning, match="not serialisable"):
        res = cache.compile(job, ("llvm",))
    assert res.origin == "compiled" and cache.stats["uncacheable"] == 1
    assert DiskTier(cache_env).files() == [] and len(cache.memory) == 0


def _scaled_sum(n, x):
    s = 0.0
    for i in range(n):
        s += x * i
    return s


@pytest.mark.parametrize("cache_setting", ["off", "disk"])
def test_a_compile_walks_its_module_once_for_validation_and_the_serialisable_check(
        cache_setting, cache_env, monkeypatch):
    from gpucompiler import jit
    from gpucompiler.core.facts import ModuleFacts

    if cache_setting == "off":
        monkeypatch.setenv("GPUC_CACHE", "off")
    walks = []
    walk = ModuleFacts.of
    monkeypatch.setattr(ModuleFacts, "of", classmethod(lambda cls, ref: walks.append(ref) or walk(ref)))
    f = jit(_scaled_sum)
    assert f(5, 1.5) == _scaled_sum(5, 1.5) == 15.0
    assert len(walks) == 1
    if cache_setting == "disk":  # the entry was judged serialisable on the validated facts and kept
        assert any(cache_env.rglob("*"))


def test_the_serialisable_check_walks_a_module_compiled_without_validation():
    config = CompilerConfig(NativeTarget(), validate=False)
    result = compile_job(CompilerJob(LLVMSource(BAKED, "f"), config))
    assert result.facts is None
    assert [k for k, _ in serialisation_errors(result.module, result.facts)] == ["POINTER_CONSTANT"]
