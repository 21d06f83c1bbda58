"""ModuleFacts read from the printed module agree with a walk of every instruction through llvmlite.

The reference below asks LLVM about each instruction and operand (what
validation did before it read the text); the corpora and the edge cases
where text could mislead a scan (strings, inline assembly, quoted names,
vector casts, debug records) must give the same facts.
"""

from __future__ import annotations

import re
from pathlib import Path

import llvmlite.binding as llvm
import pytest

from gpucompiler.core import CompilerConfig
from gpucompiler.errors import InvalidIRError
from gpucompiler.core import CompilerJob, LLVMSource
from gpucompiler.llvm.binding import address_bindings, parse_ir
from gpucompiler.pipeline import compile
from gpucompiler.targets import PTXTarget
from gpucompiler.core.facts import TAPE_FUNCTIONS, TAPE_METADATA, ModuleFacts

TESTS = Path(__file__).resolve().parent.parent
CORPORA = sorted([*TESTS.glob("llvm/corpus/*.ll"), *TESTS.glob("enzyme/fixtures/*.ll")])
_CONSTANTS = (llvm.ValueKind.constant_expr, llvm.ValueKind.constant_array, llvm.ValueKind.constant_struct,
              llvm.ValueKind.constant_vector)
_GLOBAL = re.compile(r'@("[^"]*"|[-\w$.]+)')
_GLOBAL_INTTOPTR = re.compile(r"inttoptr\s*\(\s*i\d+\s+(-?\d+)")


def _uses(op, declared: set[str]) -> list[str]:
    """Declared globals ``op`` uses: itself, or those its constant's own text names."""
    kind = op.value_kind
    if kind in (llvm.ValueKind.function, llvm.ValueKind.global_variable):
        return [op.name] if op.name in declared else []
    if kind in _CONSTANTS:
        return [n for n in (m.group(1).strip('"') for m in _GLOBAL.finditer(str(op))) if n in declared]
    return []


def reference_facts(ref) -> ModuleFacts:
    """The facts from llvmlite's instruction and operand objects (every function named)."""
    facts = ModuleFacts()
    declared = {g.name for g in (*ref.functions, *ref.global_variables) if g.is_declaration}
    facts.declarations = [g.name for g in (*ref.functions, *ref.global_variables) if g.is_declaration]
    facts.global_pointer_constants = [(gv.name, str(gv).strip()) for gv in ref.global_variables
                                      if not gv.is_declaration and _GLOBAL_INTTOPTR.search(str(gv))]
    facts.addresses = address_bindings(str(ref))
    for fn in ref.functions:
        if fn.is_declaration:
            continue
        facts.calls[fn.name] = set()
        for block in fn.blocks:
            for inst in block.instructions:
                text = str(inst).strip()
                operands = list(inst.operands)
                if inst.opcode == "alloca" and operands and not operands[0].is_constant:
                    facts.dynamic_allocas.append((fn.name, text))
                constant_address = inst.opcode == "inttoptr" and operands[0].is_constant
                callee = None
                if (inst.opcode in ("call", "invoke", "callbr") and operands
                        and operands[-1].value_kind == llvm.ValueKind.function):
                    callee = operands[-1].name
                    if callee in TAPE_FUNCTIONS and TAPE_METADATA in text:
                        facts.tape_allocations.append((fn.name, callee))
                        operands = operands[:-1]
                for op in operands:
                    constant_address |= op.value_kind in _CONSTANTS and "inttoptr (" in str(op)
                    for name in _uses(op, declared):
                        users = facts.external_uses.setdefault(name, [])
                        if fn.name not in users:
                            users.append(fn.name)
                if constant_address:
                    facts.pointer_constants.append((fn.name, text))
                if callee:
                    facts.calls[fn.name].add(callee)
    for caller, callees in facts.calls.items():
        facts.calls[caller] = {c for c in callees if c in facts.calls}
    return facts


def _named(text: str) -> bool:
    return not re.search(r"^define [^@]*@\d+\(", text, re.M)


@pytest.mark.parametrize("path", CORPORA, ids=[p.name for p in CORPORA])
def test_facts_from_the_text_equal_the_instruction_walk_on_the_corpora(path):
    text = path.read_text()
    if not _named(text):
        pytest.skip("unnamed functions: the walk has no name for them (the next test)")
    ref = parse_ir(text)
    assert ModuleFacts.of(ref) == reference_facts(ref)


EDGES = r"""
@msg = private constant [24 x i8] c"call @host(ptr @x) ; \22 \00"
@"quoted \22name\22" = external global i32
@ext = external global [4 x i32]
declare void @host(ptr)
declare void @"odd name\5C"(i64)
declare ptr @malloc(i64)
declare void @free(ptr)
declare i64 @llvm.ctpop.i64(i64)

define void @f(i64 %n, <2 x i64> %v, ptr %fp) {
entry:
  %s = alloca [4 x i8], align 1
  %d = alloca i32, i64 %n, align 4
  %c = alloca i32, i32 4
  %p = inttoptr <2 x i64> %v to <2 x ptr>
  %q = inttoptr i64 %n to ptr
  %k = inttoptr i64 4096 to ptr
  call void asm sideeffect "call @host(ptr inttoptr (i64 1 to ptr)) ; alloca i8, i64 %n", ""()
  call void @host(ptr @msg)
  call void @host(ptr @"quoted \22name\22")
  call void @host(ptr getelementptr (i8, ptr @ext, i64 4))
  call void @"odd name\5C"(i64 %n)
  call void %fp(ptr @host)
  %t = call ptr @malloc(i64 %n), !gpuc.ad.tape !0
  call void @free(ptr %t), !gpuc.ad.tape !0
  %u = call ptr @malloc(i64 %n)
  call void @host(ptr getelementptr (i8, ptr inttoptr (i64 64 to ptr), i64 8))
  call void @g()
  ret void
}

define void @g() {
  %x = call i64 @llvm.ctpop.i64(i64 3)
  ret void
}

!0 = !{}
"""


def test_facts_from_the_text_equal_the_instruction_walk_where_text_could_mislead():
    ref = parse_ir(EDGES)
    facts = ModuleFacts.of(ref)
    assert facts == reference_facts(ref)
    assert facts.dynamic_allocas == [("f", "%d = alloca i32, i64 %n, align 4")]
    assert [fn for fn, _ in facts.pointer_constants] == ["f", "f"]
    assert facts.pointer_constants[0][1] == "%k = inttoptr i64 4096 to ptr"
    assert "inttoptr (i64 64" in facts.pointer_constants[1][1]
    assert facts.tape_allocations == [("f", "malloc"), ("f", "free")]
    assert facts.external_uses == {"host": ["f"], 'quoted "name"': ["f"], "ext": ["f"], "odd name\\": ["f"],
                                   "malloc": ["f"], "llvm.ctpop.i64": ["g"]}
    assert facts.calls == {"f": {"g"}, "g": set()}


UNNAMED = """
define void @k() {
  call void @0()
  ret void
}
define internal void @0() noinline {
  call void @1()
  ret void
}
define internal void @1() noinline {
  ret void
}
"""


def test_unnamed_functions_are_known_by_their_numbers():
    facts = ModuleFacts.of(parse_ir(UNNAMED))
    assert facts.calls == {"k": {"0"}, "0": {"1"}, "1": set()}
    assert facts.recursion_errors() == []


def test_a_chain_of_unnamed_functions_is_no_recursion_on_the_gpu():
    # the walk through llvmlite named both '' and saw '' call '': a cycle, refused
    config = CompilerConfig(PTXTarget(), kernel=True, opt_level=0)
    text = compile(CompilerJob(LLVMSource(UNNAMED, "k"), config), ("llvm",)).artifacts["llvm"]
    assert isinstance(text, str) and "define ptx_kernel void @k()" in text


def test_a_recursive_pair_of_unnamed_functions_is_refused_on_the_gpu():
    ir = UNNAMED.replace("define internal void @1() noinline {\n  ret void",
                         "define internal void @1() noinline {\n  call void @0()\n  ret void")
    config = CompilerConfig(PTXTarget(), kernel=True, opt_level=0)
    with pytest.raises(InvalidIRError, match=r"cycle @0 -> @1 -> @0"):
        compile(CompilerJob(LLVMSource(ir, "k"), config), ("llvm",))
