"""The serialisable-IR validator and the cache's refusal to keep IR that is not."""

from __future__ import annotations

import llvmlite.binding as llvm
import pytest

from gpucompiler.cache import Cache, DiskTier, check_serialisable, serialisation_errors
from gpucompiler.core import CompilerConfig
from gpucompiler.errors import CacheWarning, UnserialisableIRError
from gpucompiler.llvm.binding import ADDRESSES
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
    monkeypatch.setattr(ModuleFacts, "of",
                        classmethod(lambda cls, ref, text=None: walks.append(ref) or walk(ref, text)))
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


BOTH = """
@table = global ptr inttoptr (i64 94558800000000 to ptr)
@name = constant [25 x i8] c"inttoptr (i64 123 to ptr)"
declare double @pyobj_0x7f3a12c04d10(double)
define double @h(double %x) {
  %p = load ptr, ptr @table
  %y = call double @pyobj_0x7f3a12c04d10(double %x)
  ret double %y
}
"""


def test_the_serialisable_check_on_validated_facts_neither_prints_nor_walks_the_module(monkeypatch):
    # the loader defines the address-named symbol: the module validates, and its facts hold all the cache asks
    config = CompilerConfig(NativeTarget(), params={"loader_symbols": ("pyobj_0x7f3a12c04d10",)})
    result = compile_job(CompilerJob(LLVMSource(BOTH, "h"), config))
    assert result.facts is not None
    expected = serialisation_errors(result.artifacts["llvm"])  # read afresh from the text
    assert [k for k, _ in expected] == ["POINTER_CONSTANT", "PROCESS_SYMBOL"]
    assert "@table" in expected[0][1] and "@pyobj_0x7f3a12c04d10" in expected[1][1]

    def refused(*args, **kwargs):
        raise AssertionError("the serialisable check asked LLVM for the module again")

    for owner, attr in ((llvm.ModuleRef, "__str__"), (llvm.ValueRef, "__str__"),
                        (llvm.ModuleRef, "functions"), (llvm.ModuleRef, "global_variables")):
        monkeypatch.setattr(owner, attr, property(refused) if attr != "__str__" else refused)
    assert serialisation_errors(result.module, result.facts) == expected


def test_a_string_that_reads_like_a_constant_address_is_no_pointer_constant():
    text = """@msg = constant [27 x i8] c"inttoptr (i64 4096 to ptr)\\00"
define ptr @f() {
  ret ptr @msg
}
"""
    assert serialisation_errors(text) == []


def test_names_the_module_binds_to_addresses_are_no_process_symbols():
    text = f"""declare double @__gpuc_addr_140737488355328(double)
define double @f(double %x) {{
  %y = call double @__gpuc_addr_140737488355328(double %x)
  ret double %y
}}
!{ADDRESSES} = !{{!0}}
!0 = !{{!"__gpuc_addr_140737488355328", i64 140737488355328}}
"""
    assert serialisation_errors(text) == []
    assert kinds(text.split(f"!{ADDRESSES}")[0]) == ["PROCESS_SYMBOL"]


SIN_LOOP = """
declare double @llvm.sin.f64(double)

define void @sins(ptr noalias %x, ptr noalias %y, i64 %n) {
entry:
  %none = icmp sle i64 %n, 0
  br i1 %none, label %exit, label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %p = getelementptr double, ptr %x, i64 %i
  %v = load double, ptr %p
  %s = call double @llvm.sin.f64(double %v)
  %q = getelementptr double, ptr %y, i64 %i
  store double %s, ptr %q
  %i1 = add i64 %i, 1
  %c = icmp slt i64 %i1, %n
  br i1 %c, label %loop, label %exit
exit:
  ret void
}
"""


def test_a_cached_compile_prints_its_final_module_once(cache_env, monkeypatch):
    # validation's facts, the llvm artifact and the serialisable check share one print of the final module
    from gpucompiler.stages import validate as validate_stage

    prints: list[str] = []
    validating = []
    printed = llvm.ModuleRef.__str__
    monkeypatch.setattr(llvm.ModuleRef, "__str__",
                        lambda self: (text := printed(self), validating and prints.append(text))[0])
    validate = validate_stage.validate
    monkeypatch.setattr(validate_stage, "validate", lambda ctx: (validating.append(1), validate(ctx))[1])
    cache = Cache(DiskTier(cache_env), compiler=compile_job)
    res = cache.compile(CompilerJob(LLVMSource(SIN_LOOP, "sins"), CompilerConfig(NativeTarget())), ("llvm", "obj"))
    assert res.origin == "compiled" and cache.stats["uncacheable"] == 0 and any(cache_env.rglob("*"))
    assert prints == [res.artifacts["llvm"]]
