"""Uses of a parsed module, registered on first need, are those an operand walk finds.

A parse registers no uses: its users wait in one ``PendingUses`` and are
registered together on the first question about uses or the first change of
operands. Each test asks its first question in a different way, on a fresh
parse, and checks every value's uses against a walk of every user's operands
(in creation order for a function's values, as eager registration gives).
"""

from __future__ import annotations

from pathlib import Path

import llvmlite.binding as llvm
import pytest

from gpucompiler.llvm import BasicBlock, Builder, Function, Instruction, Module, parse, types as T
from gpucompiler.llvm.binding import initialize
from gpucompiler.llvm.values import Argument, ConstantData, User, Value

CORPUS = sorted((Path(__file__).resolve().parent / "corpus").glob("*.ll"))

SRC = """
@fp = global ptr @later
@alias = alias i32, ptr @g
@g = global i32 7, align 4

define i32 @f(i32 %a, i32 %n) {
entry:
  br label %loop

loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %acc = phi i32 [ %a, %entry ], [ %sum, %loop ]
  %x = load i32, ptr getelementptr inbounds (i8, ptr @g, i64 4), align 4
  %y = call i32 @later(i32 %x)
  %sum = add i32 %acc, %y
  %next = add i32 %i, 1
  %more = icmp slt i32 %next, %n
  br i1 %more, label %loop, label %done

done:
  %z = call i32 asm "mov $0, $1", "=r,r"(i32 %sum)
  %w = call i32 @later(i32 %z)
  ret i32 %w
}

define i32 @later(i32 %v) {
  %r = add i32 %v, 1
  ret i32 %r
}
"""


def llvm_text(text: str) -> str:
    initialize()
    ref = llvm.parse_assembly(text, context=llvm.create_context())
    ref.verify()
    return str(ref)


def _users(m: Module) -> list[User]:
    """Every user in ``m`` (instructions, debug records, globals, constant expressions, nodes)."""
    out: list[User] = []
    seen: set[int] = set()

    def add(u: User) -> None:
        if id(u) in seen:
            return
        seen.add(id(u))
        out.append(u)
        for op in u.operands:
            if isinstance(op, User) and not isinstance(op, (Function, Instruction)) and op.operands:
                add(op)  # constant expressions and aggregates

    for gv in [*m.globals.values(), *m.aliases.values(), *m.functions.values()]:
        add(gv)
    for fn in m.functions.values():
        for inst in fn.instructions():
            for r in inst.debug_records:
                add(r)
            add(inst)
    for node in m.metadata:
        add(node)
    return out


def _walked(m: Module) -> dict[Value, list[tuple[User, int]]]:
    """value -> (user, operand index) for every operand slot of every user, in walk order."""
    want: dict[Value, list[tuple[User, int]]] = {}
    for u in _users(m):
        for k, op in enumerate(u.operands):
            if type(op) is not ConstantData:
                want.setdefault(op, []).append((u, k))
    return want


def _values(m: Module) -> list[Value]:
    out: list[Value] = [*m.globals.values(), *m.aliases.values(), *m.functions.values()]
    for fn in m.functions.values():
        out += [*fn.args, *fn.blocks, *fn.instructions()]
    return out


def _assert_uses_walked(m: Module, ordered: bool = True) -> None:
    """Every value's uses are those of the walk; a function's values' in the walk's order (that of
    a parse) unless operands changed since (``ordered=False``)."""
    want = _walked(m)
    for v in {*_values(m), *want}:
        got = [(u.user, u.index) for u in v.uses]
        expected = want.get(v, [])
        if ordered and isinstance(v, (Instruction, Argument, BasicBlock)):
            assert got == expected, f"{v!r}: uses {got} != {expected}"  # a function's values: in order
        else:
            assert sorted((id(u), k) for u, k in got) == sorted((id(u), k) for u, k in expected), repr(v)
        assert [u.value for u in v.uses] == [v] * len(got)


FIRST_QUESTIONS = {
    "an argument's uses": lambda m: m.functions["f"].args[0].uses,
    "a block's predecessors": lambda m: m.functions["f"].blocks[1].predecessors,
    "an instruction's users": lambda m: next(m.functions["f"].instructions()).users,
    "a called function's uses": lambda m: m.functions["later"].uses,
    "a global's uses": lambda m: m.globals["g"].uses,
    "a constant expression's uses": lambda m: m.functions["f"].blocks[1].instructions[2].operands[0].uses,
    "inline asm's uses": lambda m: m.functions["f"].blocks[2].instructions[0].operands[0].uses,
}


@pytest.mark.parametrize("first", FIRST_QUESTIONS, ids=list(FIRST_QUESTIONS))
def test_the_first_question_about_uses_of_any_kind_of_value_sees_every_use(first):
    m = parse(llvm_text(SRC))
    assert FIRST_QUESTIONS[first](m) is not None
    _assert_uses_walked(m)


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_uses_of_every_corpus_module_are_those_of_an_operand_walk(path):
    m = parse(llvm_text(path.read_text()))
    _assert_uses_walked(m)


def test_an_operand_changed_before_any_question_moves_its_use():
    m = parse(llvm_text(SRC))
    f = m.functions["f"]
    sum_ = next(i for i in f.instructions() if i.name == "sum")
    a, n = f.args
    sum_.set_operand(0, n)  # %acc -> %n, before anything asked for uses
    assert [(u.user.name, u.index) for u in a.uses] == [("acc", 0)]
    assert ("sum", 0) in [(u.user.name, u.index) for u in n.uses]
    _assert_uses_walked(m, ordered=False)


def test_operands_dropped_and_erased_before_any_question_leave_no_uses():
    m = parse(llvm_text(SRC))
    f = m.functions["later"]
    r = f.blocks[0].instructions[0]
    ret = f.blocks[0].instructions[1]
    ret.drop_operands()
    ret.remove_from_parent()
    r.erase()
    assert f.args[0].uses == []
    _assert_uses_walked(m, ordered=False)


def test_rauw_of_a_value_used_before_its_definition_reaches_the_phi():
    m = parse(llvm_text(SRC))
    f = m.functions["f"]
    nxt = next(i for i in f.instructions() if i.name == "next")
    phi = f.blocks[1].instructions[0]
    assert phi.operands[2] is nxt  # the forward reference was patched at parse
    nxt.replace_all_uses_with(f.args[1])
    assert phi.operands[2] is f.args[1] and nxt.uses == []
    _assert_uses_walked(m, ordered=False)


def test_a_mutated_module_prints_what_llvm_reads_from_the_same_edits():
    """Edits made before and after the first question about uses print as LLVM reads the same
    edits made on the text."""
    m = parse(llvm_text(SRC))
    f = m.functions["f"]
    by = {i.name: i for i in f.instructions() if i.name}
    by["sum"].set_operand(1, f.args[1])  # %sum = add i32 %acc, %n  (no question asked yet)
    by["y"].replace_all_uses_with(f.args[0])  # now %y is unused
    by["y"].erase()
    m.functions["later"].args[0].replace_all_uses_with(m.functions["later"].args[0])
    edited = (SRC.replace("%sum = add i32 %acc, %y", "%sum = add i32 %acc, %n")
              .replace("  %y = call i32 @later(i32 %x)\n", ""))
    assert llvm_text(str(m)) == llvm_text(edited)


def test_a_global_asked_after_one_lazy_body_counts_the_bodies_parsed_later():
    m = parse(llvm_text(SRC), lazy=True)
    f = m.functions["f"]
    assert len(f.args[0].uses) == 1  # parses @f's body and registers what is pending
    later = m.functions["later"]
    assert len(later.uses) == 3  # @fp's initializer and @f's two calls
    assert len(later.args[0].uses) == 1  # @later's body, parsed after the registration
    _assert_uses_walked(m)


def test_instructions_spelled_alike_change_apart():
    """From the third on, instructions spelled alike share their spelling; a change to one copies it."""
    text = llvm_text("""
define i32 @f(i32 %a, i32 %b, i1 %c) {
entry:
  %x = add i32 %a, %b
  %y = add i32 %b, %a
  %u = add i32 %a, %a
  %v = add i32 %b, %b
  br i1 %c, label %l, label %r
l:
  br label %r
r:
  %p = phi i32 [ %x, %entry ], [ %y, %l ]
  %q = phi i32 [ %y, %entry ], [ %x, %l ]
  %t = phi i32 [ %u, %entry ], [ %v, %l ]
  %w = phi i32 [ %v, %entry ], [ %u, %l ]
  %s = add i32 %p, %q
  ret i32 %s
}
""")
    m = parse(text)
    f = m.functions["f"]
    by = {i.name: i for i in f.instructions() if i.name}
    assert by["u"].parts is by["v"].parts and by["t"].parts is by["w"].parts  # one shape, one spelling
    by["u"].add_flags("nsw")
    by["t"].add_incoming(by["x"], f.blocks[0])
    by["w"].set_operand_type(0, T.i32)
    printed = str(m)
    assert "%u = add nsw i32 %a, %a\n  %v = add i32 %b, %b\n" in printed
    assert "%t = phi i32 [ %u, %entry ], [ %v, %l ], [ %x, %entry ]\n" in printed
    assert "%w = phi i32 [ %v, %entry ], [ %u, %l ]\n" in printed


def test_debug_records_of_a_removed_instruction_move_to_the_next_one():
    m = parse(llvm_text(next(p for p in CORPUS if p.stem == "debug_info").read_text()))
    f = m.functions["norm2"]
    entry = f.blocks[0]
    alloca, br = entry.instructions
    records = list(br.debug_records)
    assert records and alloca.debug_records == ()
    br.remove_from_parent()
    assert br.debug_records == () and alloca.debug_records == ()
    loop = f.blocks[1]
    gep, load = loop.instructions[2:4]
    moved = list(gep.debug_records)
    assert moved and load.debug_records == ()
    gep.remove_from_parent()
    assert list(load.debug_records) == moved and gep.debug_records == ()
    lines = str(m).split("\n")
    at = next(k for k, line in enumerate(lines) if line.startswith("  %v = load"))
    assert lines[at - 1].startswith("    #dbg_value(i64 %i,")


def test_instructions_built_on_a_fresh_parse_join_the_uses_in_order():
    """A built instruction registers its uses at once, after every pending use of the parse."""
    m = parse(llvm_text(SRC))
    f = m.functions["f"]
    ret = f.blocks[2].instructions[-1]
    b = Builder()
    b.position_before(ret)
    x = b.mul(f.args[0], f.args[1])  # nothing asked yet: %a's pending uses come first
    assert [u.user for u in f.args[0].uses] == [f.blocks[1].instructions[1], x]
    b.call(m.functions["later"], [x])
    _assert_uses_walked(m, ordered=False)
    printed = llvm_text(str(m))
    assert "%0 = mul i32 %a, %n" in printed and "call i32 @later(i32 %0)" in printed
