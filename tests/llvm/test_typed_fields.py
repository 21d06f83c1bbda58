"""Typed instruction fields: filled when an instruction is parsed, built or copied, read without
looking at its spelling. The reference is LLVM's own reading of the same text (llvmlite)."""

from __future__ import annotations

import llvmlite.binding as llvm

from gpucompiler.llvm import Builder, Function, constant, parse, types as T
from gpucompiler.llvm.binding import initialize

SRC = """
%pair = type { double, i64 }

@g = global double 0.0, align 8

declare void @use(ptr sret(%pair) align 8, double noundef, metadata)
declare double @llvm.sin.f64(double)

define void @f(ptr %p, double %x, i64 %i, ptr %q) {
entry:
  %a = fadd fast double %x, 1.000000e+00
  %c = icmp samesign ult i64 %i, 10
  %d = fcmp nnan olt double %a, %x
  %e = getelementptr inbounds nuw %pair, ptr %p, i64 %i, i32 1
  %v = load volatile double, ptr %p, align 16
  store atomic double %v, ptr %q seq_cst, align 8
  %s = alloca [4 x double], align 32
  %r = atomicrmw volatile fadd ptr @g, double %a monotonic, align 8
  %agg = insertvalue %pair poison, double %a, 0
  %f = extractvalue %pair %agg, 0
  %t = tail call fast double @llvm.sin.f64(double %f)
  call void @use(ptr sret(%pair) align 8 %p, double noundef %t, metadata !"enzyme_dup")
  %o = or disjoint i64 %i, 1
  ret void
}
"""


def _instructions():
    initialize()
    text = str(llvm.parse_assembly(SRC, context=llvm.create_context()))  # LLVM's spelling of it
    f = parse(text).functions["f"]
    return {i.name or i.opcode + str(k): i for k, i in enumerate(f.blocks[0].instructions)}


def test_parsed_fields_match_the_spelling_llvm_printed():
    ins = _instructions()
    assert ins["a"].flags == ("fast",)
    assert (ins["c"].predicate, ins["c"].flags) == ("ult", ("samesign",))
    assert (ins["d"].predicate, ins["d"].flags) == ("olt", ("nnan",))
    e = ins["e"]
    assert e.flags == ("inbounds", "nuw") and str(e.source_element_type) == "%pair"
    assert [str(v.type) for v in e.indices] == ["i64", "i32"]
    v = ins["v"]
    assert v.is_volatile and not v.is_atomic and v.alignment == 16
    store = next(i for i in ins.values() if i.opcode == "store")
    assert store.is_atomic and not store.is_volatile and store.alignment == 8
    assert ins["s"].allocated_type == T.array(4, T.double) and ins["s"].alignment == 32
    r = ins["r"]
    assert (r.operation, r.is_volatile, r.alignment) == ("fadd", True, 8)
    assert ins["agg"].aggregate_indices == (0,) and ins["f"].aggregate_indices == (0,)
    assert "disjoint" in ins["o"].flags


def test_call_fields_name_callee_arguments_metadata_and_attributes():
    ins = _instructions()
    t = ins["t"]
    assert t.callee.name == "llvm.sin.f64" and t.args == [ins["f"]] and "tail" in t.flags
    use = next(i for i in ins.values() if i.opcode == "call" and i.callee.name == "use")
    assert [a.name for a in use.args] == ["p", "t"]
    assert use.call.metadata_args == ((2, '!"enzyme_dup"'),)
    assert use.has_attribute("sret") and use.has_attribute("noundef") and not use.has_attribute("byval")
    assert not ins["a"].has_attribute("fast") and ins["a"].call is None


def test_built_and_copied_instructions_read_like_their_parsed_text():
    m = parse(SRC.split("define void @f")[0])
    fn = m.add_function(Function("h", T.function(T.void, [T.ptr(), T.double, T.i64])))
    b = Builder(fn.append_block("entry"))
    p, x, n = fn.args
    built = [b.load(T.double, p, align=16), b.gep(T.double, p, [n], flags=("inbounds",)),
             b.alloca(T.i64, align=8), b.fcmp("olt", x, x),
             b.insertvalue(constant(T.struct((T.double,)), "poison"), x, 0),
             b.call(m.functions["llvm.sin.f64"], [x])]
    b.ret()
    again = parse(str(m)).functions["h"].blocks[0].instructions
    for inst, parsed in zip(built, again):
        for ref in (parsed, inst.detached_copy()):
            assert (inst.opcode, inst.flags, inst.predicate, inst.alignment, inst.element_type,
                    inst.aggregate_indices) == (ref.opcode, ref.flags, ref.predicate, ref.alignment,
                                                ref.element_type, ref.aggregate_indices)
    assert (built[5].call.callee_index, built[5].call.nargs) == (again[5].call.callee_index, again[5].call.nargs)
    assert (again[5].call.callee_index, again[5].call.nargs) == (0, 1)


def test_add_flags_updates_the_flags_field():
    m = parse("define double @k(double %x) {\n  %y = fmul double %x, %x\n  ret double %y\n}\n")
    y = m.functions["k"].blocks[0].instructions[0]
    y.add_flags("nnan", "ninf")
    assert y.flags == ("nnan", "ninf") and "fmul nnan ninf double" in str(m)


def test_set_operand_type_respells_the_pointer_type():
    m = parse("@g = global double 0.0\ndefine void @k(double %d) {\n"
              "  %r = atomicrmw fadd ptr @g, double %d monotonic, align 8\n  ret void\n}\n")
    r = m.functions["k"].blocks[0].instructions[0]
    r.set_operand_type(0, T.ptr(1))
    assert "atomicrmw fadd ptr addrspace(1) @g, double %d monotonic, align 8" in str(m)
