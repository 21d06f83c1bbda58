"""Unit tests of the mutable IR model: parse/print, mutation, builder, clone, errors."""

from __future__ import annotations

import llvmlite.binding as llvm
import pytest

from gpucompiler.errors import IRParseError, UnsupportedIRError
from gpucompiler.llvm import Builder, Function, parse, types as T
from gpucompiler.llvm.binding import initialize

SRC = """
@g = global i32 7, align 4
@tab = constant [2 x ptr] [ptr @g, ptr getelementptr inbounds (i8, ptr @g, i64 4)]

define i32 @f(i32 %a, i32 %b) {
entry:
  %s = add nsw i32 %a, %b
  %c = icmp sgt i32 %s, 0
  br i1 %c, label %pos, label %done

pos:
  %0 = mul i32 %s, 2
  br label %done

done:
  %r = phi i32 [ %s, %entry ], [ %0, %pos ]
  %v = load i32, ptr @g, align 4
  %t = add i32 %r, %v
  ret i32 %t
}

declare void @sink(i32)
"""


def llvm_text(text: str) -> str:
    initialize()
    ref = llvm.parse_assembly(text, context=llvm.create_context())
    ref.verify()
    return str(ref)


def roundtrip(text: str) -> str:
    """Our print of LLVM's print of ``text``; asserts LLVM sees the same module."""
    want = llvm_text(text)
    ours = str(parse(want))
    assert llvm_text(ours) == llvm_text(want)
    return ours


def test_roundtrip_and_structure():
    m = parse(llvm_text(SRC))
    f = m.functions["f"]
    assert [b.name for b in f.blocks] == ["entry", "pos", "done"]
    add = f.entry.instructions[0]
    assert (add.opcode, add.flags, add.type) == ("add", ("nsw",), T.i32)
    assert add.operands == f.args
    cmp = f.entry.instructions[1]
    assert cmp.predicate == "sgt" and cmp.type is T.i1
    done = f.blocks[2]
    assert {b.name for b in done.predecessors} == {"entry", "pos"}
    assert f.entry.successors == [f.blocks[1], done]
    phi = done.instructions[0]
    assert [(v.name, b.name) for v, b in phi.incoming] == [("s", "entry"), ("", "pos")]
    assert m.globals["g"].initializer.value == 7
    assert m.functions["sink"].is_declaration
    roundtrip(SRC)


def test_replace_all_uses_and_erase_renumbers():
    m = parse(llvm_text(SRC))
    f = m.functions["f"]
    s = f.entry.instructions[0]
    assert len(s.uses) == 3
    s.replace_all_uses_with(f.args[0])
    assert not s.uses and len(f.args[0].uses) == 4
    s.erase()
    pos = f.blocks[1]
    mul = pos.instructions[0]
    with pytest.raises(ValueError):
        mul.erase()
    text = llvm_text(str(m))
    assert "add nsw" not in text and "icmp sgt i32 %a, 0" in text


def test_builder_inserts_and_output_verifies():
    m = parse(llvm_text(SRC))
    f = m.functions["f"]
    ret = f.blocks[2].instructions[-1]
    b = Builder()
    b.position_before(ret)
    x = b.mul(ret.operands[0], f.args[1], flags=("nuw",))  # unnamed: numbered on print
    b.call(m.functions["sink"], [x])
    ret.set_operand(0, x)
    text = llvm_text(str(m))
    assert "mul nuw i32 %t, %b" in text and "call void @sink(i32 %1)" in text and "ret i32 %1" in text


def test_build_function_from_scratch():
    m = parse(llvm_text(SRC))
    fn = m.add_function(Function("sq", T.function(T.double, [T.double]), arg_names=["x"]))
    b = Builder(fn.append_block("entry"))
    y = b.fmul(fn.args[0], fn.args[0], name="y", flags=("fast",))
    b.ret(y)
    expect = "define double @sq(double %x) {\nentry:\n  %y = fmul fast double %x, %x\n  ret double %y\n}"
    assert expect in llvm_text(str(m))


def test_clone_and_remove_function():
    m = parse(llvm_text(SRC))
    g = m.functions["f"].clone("f2")
    assert g.blocks[0].instructions[0].operands == g.args
    assert m.functions["f"].blocks[0].instructions[0].operands == m.functions["f"].args
    text = llvm_text(str(m))
    assert "define i32 @f2(i32 %a, i32 %b)" in text
    m.remove_function(m.functions["sink"])
    with pytest.raises(ValueError):
        m.remove_global(m.globals["g"])  # still used
    assert "@sink" not in llvm_text(str(m))


def test_rename_global_updates_constants_and_uses():
    m = parse(llvm_text(SRC))
    m.globals["g"].name = "renamed"
    text = llvm_text(str(m))
    assert "getelementptr inbounds (i8, ptr @renamed, i64 4)" in text
    assert "load i32, ptr @renamed" in text


def test_attributes_get_set():
    m = parse(llvm_text("define void @k() #0 {\n  ret void\n}\nattributes #0 = { nounwind \"k\"=\"v\" }\n"))
    k = m.functions["k"]
    assert k.has_attribute("nounwind") and k.has_attribute("k")
    k.add_attribute("noinline")
    k.remove_attribute("nounwind")
    text = llvm_text(str(m))
    assert "noinline" in text and "nounwind" not in text and '"k"="v"' in text


def test_malformed_text_has_line():
    with pytest.raises(IRParseError) as e:
        parse("define i32 @f(i32 %a) {\n  %x = add i32 %a, %nope\n  ret i32 %x\n}\n")
    assert e.value.line == 2 and "%nope" in str(e.value)
    with pytest.raises(UnsupportedIRError) as e:
        parse("uselistorder ptr @f, { 1, 0 }\n")
    assert e.value.line == 1


def test_instruction_accessors_read_volatile_atomic_indices_and_attributes():
    m = parse("""define void @f(ptr %p, {ptr, i64} %s) {
entry:
  %a = load volatile i32, ptr %p
  %b = load atomic i32, ptr %p seq_cst, align 4
  %c = load i32, ptr %p
  %e = extractvalue {ptr, i64} %s, 1
  %o = or disjoint i32 %a, %c
  call void @g(ptr sret({i64}) %p)
  call void @g(ptr %p)
  ret void
}
declare void @g(ptr)
""")
    a, b, c, e, o, sret_call, plain_call, _ = m.functions["f"].blocks[0].instructions
    assert [i.is_volatile for i in (a, b, c)] == [True, False, False]
    assert [i.is_atomic for i in (a, b, c)] == [False, True, False]
    assert e.aggregate_indices == (1,) and c.aggregate_indices == ()
    assert "disjoint" in o.flags
    assert sret_call.has_attribute("sret") and not plain_call.has_attribute("sret")
