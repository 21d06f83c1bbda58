"""Per-kind accessors and Builder methods used by the AD engine."""

from __future__ import annotations

from gpucompiler.llvm import Builder, const_int, constant, parse, types as T
from gpucompiler.llvm.binding import parse_ir

SRC = """
define double @f(ptr %p, i32 %k, <2 x double> %v) {
entry:
  %a = alloca [4 x double], align 16
  %g = getelementptr inbounds double, ptr %p, i64 1
  %x = load double, ptr %g, align 8
  store double %x, ptr %a, align 16
  ret double %x
}
"""


def test_accessors():
    f = parse(SRC).functions["f"]
    a, g, x, st, _ = f.entry.instructions
    assert a.allocated_type is T.array(4, T.double) and a.alignment == 16
    assert g.source_element_type is T.double and [i.value for i in g.indices] == [1]
    assert g.pointer_operand is f.args[0]
    assert x.pointer_operand is g and x.alignment == 8
    assert st.value_operand is x and st.pointer_operand is a
    assert a.pointer_operand is None and x.source_element_type is None


def test_builder_aggregates_vectors_switch_phi():
    m = parse(SRC)
    f = m.functions["f"]
    x, r = f.entry.instructions[2], f.entry.instructions[-1]
    b = Builder()
    other, last = f.append_block("other"), f.append_block("last")
    b.position_before(r)
    sw = b.switch(f.args[1], last, [(const_int(T.i32, 1), other)])
    r.erase()
    assert sw.successors == [last, other]
    b.position_at_end(other)
    b.br(last)
    b.position_at_end(last)
    ph = b.phi(T.double, name="ph")
    ph.add_incoming(x, f.entry)
    ph.add_incoming(constant(T.double, "1.0"), other)
    assert [blk for _, blk in ph.incoming] == [f.entry, other]
    e = b.extractelement(f.args[2], const_int(T.i32, 0))
    v2 = b.insertelement(f.args[2], ph, const_int(T.i32, 1))
    sh = b.shufflevector(v2, v2, constant(T.vector(2, T.i32), "<i32 1, i32 0>"))
    e2 = b.extractelement(sh, const_int(T.i32, 1))
    agg = b.insertvalue(constant(T.struct([T.double, T.double]), "undef"), e, 0)
    agg = b.insertvalue(agg, e2, 1)
    ev = b.extractvalue(agg, 1)
    assert ev.type is T.double and sh.type is T.vector(2, T.double)
    b.ret(ev)
    text = str(m)
    parse_ir(text)
    assert "switch i32 %k, label %last [ i32 1, label %other ]" in text
    assert "phi double [ %x, %entry ], [ 1.0, %other ]" in text
