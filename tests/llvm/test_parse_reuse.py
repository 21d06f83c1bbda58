"""What the parser reuses across instructions and across parses gives the model a full parse gives.

An instruction is made from the shape of one spelled alike (the same tokens but for value names and
numbers) from the shape's first sighting; one spelled alike but for a number that is not an operand
(an alignment, an aggregate index) from a variant of that shape; a shape holding nothing of one module
is kept for every later parse of the process, and so is a literal aggregate type by its tokens.
Checked against the reference path (``reuse_shapes=False``, every instruction parsed in full), against
LLVM (the print parses back in llvmlite and is a fixed point of parse and print), on random C programs
compiled at -O0..-O3 and on each instruction kind, with malformed lines still raising typed errors at
their line.
"""

from __future__ import annotations

import shutil
import subprocess

import llvmlite.binding as llvm
import pytest

from gpucompiler.errors import IRParseError
from gpucompiler.llvm import Module, parse
from gpucompiler.llvm import parser_instructions as PI
from gpucompiler.llvm import parser_values as PV
from gpucompiler.llvm import types as T
from gpucompiler.llvm.binding import initialize
from gpucompiler.llvm.parser import Parser
from tests.enzyme import fuzz_c
from tests.llvm.test_parse_shapes import _assert_same_model


def _llvm_print(text: str) -> str:
    initialize()
    return str(llvm.parse_assembly(text, context=llvm.create_context()))


def _check_round_trip(text: str, what: str) -> Module:
    """``text`` parsed with every reuse agrees with the reference path, prints as LLVM reads it, and
    its print is a fixed point of parse and print."""
    m = parse(text)
    _assert_same_model(m, Parser(text, reuse_shapes=False).run(), what)
    printed = str(m)
    assert _llvm_print(printed) == _llvm_print(text), what
    assert str(parse(printed)) == printed, what
    return m


@pytest.fixture
def full_parses(monkeypatch) -> list:
    """Each instruction parsed in full (not made from a shape), in order."""
    seen: list = []
    parse_instruction = PI.InstructionParser._parse_instruction

    def counted(self, name):
        inst = parse_instruction(self, name)
        seen.append(inst)
        return inst

    monkeypatch.setattr(PI.InstructionParser, "_parse_instruction", counted)
    return seen


@pytest.fixture
def cold():
    """The process-wide tables empty for the test, and as they were after it."""
    shapes, types = dict(PI.SHAPES), dict(PV.AGGREGATE_TYPES)
    PI.SHAPES.clear()
    PV.AGGREGATE_TYPES.clear()
    yield PI
    PI.SHAPES.clear()
    PI.SHAPES.update(shapes)
    PV.AGGREGATE_TYPES.clear()
    PV.AGGREGATE_TYPES.update(types)


# -- random C programs through clang at every level -----------------------------------------------

def _c_modules(seeds: range) -> list[tuple[str, str]]:
    clang = fuzz_c.clang()
    if clang is None or shutil.which(clang) is None:
        pytest.skip("clang-19 not installed")
    out = []
    for seed in seeds:
        for level in fuzz_c.LEVELS:
            r = subprocess.run([clang, level, "-S", "-emit-llvm", "-x", "c", "-o", "-", "-"],
                               input=fuzz_c.program(seed), capture_output=True, text=True, check=True)
            out.append((f"seed {seed} {level}", _llvm_print(r.stdout)))
    return out


def test_random_c_programs_round_trip_with_shapes_shared_across_parses(cold):
    """24 random C programs at four levels, parsed one after the other in this process (each made from
    the shapes and types of the ones before): each agrees with the reference path and LLVM."""
    modules = _c_modules(range(24))
    assert len(modules) == 96
    for what, text in modules:
        _check_round_trip(text, what)
    assert cold.SHAPES, "no shape was shared"


def test_a_second_parse_makes_its_instructions_from_shared_shapes(cold, full_parses):
    """A module parsed again in the process is made from the shapes of its first parse, but for the
    instructions holding something of the module (an attribute group, a metadata node, a named struct
    type) or an operand spelled over several tokens (a constant expression)."""
    text = _c_modules(range(1))[2][1]  # -O2
    parse(text)
    first = len(full_parses)
    m = parse(text)
    again = full_parses[first:]
    n = sum(len(b.instructions) for f in m.functions.values() for b in f.blocks)
    assert n > 50 and first > 20
    assert len(again) < first / 4
    assert str(m) == str(Parser(text, reuse_shapes=False).run())


# -- the texts the AD path hands the parser ------------------------------------------------------

def test_the_ad_path_texts_round_trip_with_shapes_shared_across_parses(cold, monkeypatch):
    """The texts a nested gradient's compile parses (the deferred linking's and the marker lowering's:
    `@jit` IR with its aggregates, checks and location metadata), parsed again one after the other:
    each agrees with the reference path and LLVM, and the Hessian-vector product is right."""
    np = pytest.importorskip("numpy")
    from gpucompiler import jit
    from tests.enzyme_plugin import ho_funcs as F

    texts: list[str] = []
    init = Parser.__init__

    def saving(self, text, **kw):
        texts.append(text)
        init(self, text, **kw)

    monkeypatch.setattr(Parser, "__init__", saving)
    x, v, hv = np.linspace(-0.5, 1.3, 6), np.cos(np.arange(6.0)), np.zeros(6)
    jit(F.rosenbrock_hvp_fwd_rev, plugins=("enzyme",), cache=False)(x, v, np.zeros(6), hv, 6)
    np.testing.assert_allclose(hv, F.hess_rosenbrock(x) @ v, rtol=1e-12)
    monkeypatch.setattr(Parser, "__init__", init)
    assert len(texts) >= 2
    cold.SHAPES.clear()
    for k, text in enumerate(texts):
        _check_round_trip(text, f"AD path text {k}")


# -- each form, spelled twice (the second made from the first one's shape) -----------------------

FORMS = """
%T = type { i32, double }
@g = global [4 x i32] zeroinitializer, align 16
@s = private unnamed_addr constant [3 x i8] c"ab\\00", align 1

declare i32 @h(i32, ...)
declare void @llvm.memcpy.p0.p0.i64(ptr noalias nocapture writeonly, ptr noalias nocapture readonly, i64, i1 immarg)
declare i32 @__gxx_personality_v0(...)

define i32 @forms(i32 %a, i32 %b, double %x, ptr %p, <4 x float> %v, { i32, double } %s, i1 %c) personality ptr @__gxx_personality_v0 {
entry:
  %add0 = add nsw i32 %a, 7
  %add1 = add nsw i32 %b, 9
  %sh0 = shl nuw i32 %add0, 3
  %sh1 = shl nuw i32 %add1, 5
  %fa0 = fadd fast double %x, 1.000000e+00
  %fa1 = fadd fast double %fa0, 2.500000e+00
  %fn0 = fneg double %fa0
  %fn1 = fneg double %fa1
  %z0 = zext i32 %a to i64
  %z1 = zext i32 %b to i64
  %c0 = icmp slt i32 %a, %b
  %c1 = icmp slt i32 %b, 0
  %f0 = fcmp olt double %x, 0.000000e+00
  %f1 = fcmp olt double %fa0, %fa1
  %sel0 = select i1 %c0, i32 %a, i32 %b
  %sel1 = select i1 %c1, i32 %b, i32 3
  %l0 = load i32, ptr %p, align 4
  %l1 = load i32, ptr %p, align 8
  %l2 = load volatile i32, ptr %p, align 4
  store i32 %l0, ptr %p, align 4
  store i32 %l1, ptr %p, align 16
  %al0 = alloca %T, align 8
  %al1 = alloca %T, align 8
  %al2 = alloca [4 x i32], align 16
  %gp0 = getelementptr inbounds %T, ptr %al0, i64 0, i32 1
  %gp1 = getelementptr inbounds %T, ptr %al1, i64 0, i32 0
  %gp2 = getelementptr inbounds [4 x i32], ptr @g, i64 0, i64 2
  %gp3 = getelementptr inbounds [4 x i32], ptr @g, i64 0, i64 3
  %ev0 = extractvalue { i32, double } %s, 0
  %ev1 = extractvalue { i32, double } %s, 1
  %ev2 = extractvalue { i32, double } %s, 0
  %iv0 = insertvalue { i32, double } %s, i32 %a, 0
  %iv1 = insertvalue { i32, double } %iv0, double %x, 1
  %ee0 = extractelement <4 x float> %v, i64 0
  %ee1 = extractelement <4 x float> %v, i64 3
  %ie0 = insertelement <4 x float> %v, float %ee0, i64 1
  %ie1 = insertelement <4 x float> %ie0, float %ee1, i64 2
  %sv0 = shufflevector <4 x float> %v, <4 x float> %ie1, <4 x i32> <i32 0, i32 5, i32 2, i32 7>
  %sv1 = shufflevector <4 x float> %ie0, <4 x float> %v, <4 x i32> <i32 0, i32 5, i32 2, i32 7>
  %rmw0 = atomicrmw add ptr %p, i32 1 seq_cst, align 4
  %rmw1 = atomicrmw add ptr %p, i32 %a seq_cst, align 4
  %cx0 = cmpxchg ptr %p, i32 %a, i32 %b acq_rel monotonic, align 4
  %cx1 = cmpxchg ptr %p, i32 %b, i32 %a acq_rel monotonic, align 4
  fence seq_cst
  fence seq_cst
  %fr0 = freeze i32 %a
  %fr1 = freeze i32 %b
  %call0 = call i32 (i32, ...) @h(i32 noundef %a, i32 %b) #0
  %call1 = call i32 (i32, ...) @h(i32 noundef %b, i32 %a) #0
  %call2 = tail call i32 (i32, ...) @h(i32 %a, double %x), !dbg !2
  %call3 = tail call i32 (i32, ...) @h(i32 %b, double %fa0), !dbg !3
  call void @llvm.memcpy.p0.p0.i64(ptr align 4 %al2, ptr align 16 @g, i64 16, i1 false)
  call void @llvm.memcpy.p0.p0.i64(ptr align 4 %al2, ptr align 16 @g, i64 8, i1 false)
  %str0 = getelementptr inbounds [3 x i8], ptr @s, i64 0, i64 1
  %ptr0 = ptrtoint ptr %p to i64
  %ptr1 = ptrtoint ptr %str0 to i64
  %inv = invoke i32 (i32, ...) @h(i32 %a)
          to label %ok unwind label %lp

ok:
  switch i32 %inv, label %tail [
    i32 0, label %one
    i32 1, label %two
  ]

one:
  br i1 %c, label %tail, label %two, !prof !1

two:
  br i1 %c0, label %tail, label %one, !prof !1

lp:
  %lpad = landingpad { ptr, i32 }
          cleanup
  resume { ptr, i32 } %lpad

tail:
  %ph0 = phi i32 [ %add0, %ok ], [ %sh0, %one ], [ %sh1, %two ]
  %ph1 = phi i32 [ %add1, %ok ], [ %l0, %one ], [ %l1, %two ]
  %r = add i32 %ph0, %ph1
  ret i32 %r
}

attributes #0 = { nounwind }

!llvm.module.flags = !{!0}
!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = !{!"branch_weights", i32 1, i32 2000}
!2 = !{}
!3 = !{!"x"}
"""


def test_every_form_spelled_twice_agrees_with_the_reference_path(cold):
    _check_round_trip(FORMS, "forms")
    m = _check_round_trip(FORMS, "forms, second parse (shared shapes)")
    insts = {i.name: i for i in m.functions["forms"].instructions()}
    assert [insts[n].alignment for n in ("l0", "l1", "l2")] == [4, 8, 4]
    assert [insts[n].aggregate_indices for n in ("ev0", "ev1", "ev2")] == [(0,), (1,), (0,)]
    assert [str(insts[n].type) for n in ("ev0", "ev1", "ev2")] == ["i32", "double", "i32"]
    assert insts["gp0"].element_type is m.struct_types["T"]
    assert insts["call2"].metadata["dbg"] is not insts["call3"].metadata["dbg"]


def test_an_alignment_or_an_index_makes_a_variant_not_a_full_parse(cold, full_parses):
    """Loads alike but for their alignment and extractvalues alike but for their index: each spelling
    is parsed in full once, then made from its variant of the shape."""
    lines = []
    for k in range(12):
        lines.append(f"  %l{k} = load i32, ptr %p, align {(4, 8, 16)[k % 3]}")
        lines.append(f"  %e{k} = extractvalue {{ i32, double, i64 }} %s, {k % 3}")
    text = ("define void @f(ptr %p, { i32, double, i64 } %s) {\n" + "\n".join(lines) + "\n  ret void\n}\n")
    m = parse(text)
    assert [i.opcode for i in full_parses].count("load") == 3
    assert [i.opcode for i in full_parses].count("extractvalue") == 3
    insts = list(m.functions["f"].instructions())
    assert [i.alignment for i in insts if i.opcode == "load"] == [(4, 8, 16)[k % 3] for k in range(12)]
    assert [str(i.type) for i in insts if i.opcode == "extractvalue"] == [
        ("i32", "double", "i64")[k % 3] for k in range(12)]
    _check_round_trip(text, "variants")


def test_a_shape_with_a_named_struct_is_not_shared_with_another_module(cold):
    """Two modules spell the same lines with their own ``%T``: each instruction holds its module's type."""
    body = """define i32 @f(ptr %p) {
  %a = alloca %T, align 8
  %g = getelementptr inbounds %T, ptr %a, i64 0, i32 0
  %l = load i32, ptr %g, align 4
  ret i32 %l
}
"""
    one = parse("%T = type { i32, double }\n" + body)
    two = parse("%T = type { i32, i64, i8 }\n" + body)
    for m in (one, two):
        alloca, gep, _, _ = m.functions["f"].instructions()
        assert alloca.element_type is m.struct_types["T"]
        assert gep.element_type is m.struct_types["T"]
        _check_round_trip(str(m), "named struct")
    assert one.struct_types["T"] is not two.struct_types["T"]


def test_a_literal_aggregate_naming_a_struct_is_read_per_module(cold):
    body = "define {{ %T, i32 }} @f({{ %T, i32 }} %s) {{\n  ret {{ %T, i32 }} %s\n}}\n"
    one = parse("%T = type { i32 }\n" + body.format())
    two = parse("%T = type { double }\n" + body.format())
    t1, t2 = one.functions["f"].function_type.ret, two.functions["f"].function_type.ret
    assert t1 is not t2
    assert isinstance(t1, T.StructType) and isinstance(t2, T.StructType) and t1.elements and t2.elements
    assert t1.elements[0] is one.struct_types["T"] and t2.elements[0] is two.struct_types["T"]
    assert not any("%" in str(t) for t in PV.AGGREGATE_TYPES.values())


def test_literal_aggregate_types_come_from_the_shared_table(cold):
    text = "define void @f(ptr %p) {\n  %a = alloca { ptr, [2 x i64], <4 x float>, <{ i8, i16 }> }, align 8\n  ret void\n}\n"
    one, two = parse(text), parse(text)
    ta = next(iter(one.functions["f"].instructions())).element_type
    assert ta is next(iter(two.functions["f"].instructions())).element_type
    assert ta is T.struct([T.ptr(), T.array(2, T.i64), T.vector(4, T.float_), T.struct([T.i8, T.i16], packed=True)])
    assert PV.AGGREGATE_TYPES


def test_a_local_named_like_a_struct_type_is_read_as_the_module_reads_it(cold):
    """A shape made in a module without ``%S`` read ``%S`` as a value; in a module whose ``%S`` is a
    type the same line is parsed there, not made from that shape."""
    body = """define i32 @f(i32 %x) {
  %S = add i32 %x, 1
  %r = add i32 %S, 2
  ret i32 %r
}
"""
    parse(body)
    m = _check_round_trip("%S = type { i32 }\n" + body, "a value and a type both named S")
    s, r, _ = m.functions["f"].instructions()
    assert r.operands[0] is s


# -- malformed lines, after their well-formed shapes were shared ---------------------------------

GOOD = """define i32 @f(i32 %a, ptr %p) {
  %x = add i32 %a, 1
  %y = load i32, ptr %p, align 4
  %z = extractvalue { i32, i32 } zeroinitializer, 1
  ret i32 %x
}
"""


@pytest.mark.parametrize(("line", "message"), [
    ("  %x = add i32 %a,", "line 2"),
    ("  %x = add i32 %a, %nope", "use of undefined value %nope"),
    ("  %y = load i32, ptr %q, align 4", "use of undefined value %q"),
    ("  %z = extractvalue { i32, i32 } zeroinitializer, 1, 0", "line 4"),
    ("  %x = add i32 %a, 1 1", "line 2"),
    ("  %x = add i32 %a, 1\n  %x = add i32 %a, 1", "redefinition of value %x"),
    ("  %x = add i3x %a, 1", "line 2"),
])
def test_a_malformed_line_raises_at_its_line_after_its_shape_was_shared(cold, line, message):
    parse(GOOD)
    lines = GOOD.split("\n")
    k = next(k for k, old in enumerate(lines) if old.split()[:1] == line.split()[:1])
    bad = "\n".join([*lines[:k], line, *lines[k + 1 :]])
    with pytest.raises(IRParseError) as exc:
        parse(bad)
    assert message in str(exc.value)
    reference = Parser(bad, reuse_shapes=False)
    with pytest.raises(IRParseError) as plain, reference.reading():
        reference.run()
    assert str(plain.value) == str(exc.value)


def test_the_shared_table_is_bounded(cold, monkeypatch):
    monkeypatch.setattr(PI, "_MAX_SHAPES", 3)
    text = "define void @f(i32 %a) {\n" + "".join(f"  %v{k} = add i32 %a, {k}\n  %w{k} = mul i{k + 2} 0, 0\n"
                                                 for k in range(8)) + "  ret void\n}\n"
    _check_round_trip(text, "bounded")
    assert len(PI.SHAPES) <= 3
