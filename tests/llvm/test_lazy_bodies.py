"""Function bodies parsed on first use (``parse(text, lazy=True)``).

A lazily parsed module prints as the eagerly parsed one (LLVM reads the same
module), a body nothing read printed from its text without a parse; a body is
parsed when its blocks are first read, and only that one; a global's uses
include those in bodies not parsed yet (asking parses them); an error in a
body is an ``IRParseError`` at its line and column when the body is first used.
"""

from __future__ import annotations

from pathlib import Path
import re

import llvmlite.binding as llvm
import pytest

from gpucompiler.errors import IRParseError
from gpucompiler.llvm import AttributeGroup, GlobalVariable, Instruction, MDNode, Module, const_int, parse, types as T

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.ll"))

TEXT = """declare i32 @g(i32)
declare i32 @h(i32)

define i32 @f(i32 %x) {
entry:
  %a = call i32 @g(i32 %x)
  ret i32 %a
}

define i32 @k(i32 %x) {
entry:
  %a = call i32 @g(i32 %x)
  %b = call i32 @g(i32 %a)
  ret i32 %b
}
"""


def _printed(path: Path) -> str:
    return _llvm(path.read_text())


def _llvm(text: str) -> str:
    """``text`` as LLVM reads and prints it (the module it means, whatever its spacing and numbering)."""
    return str(llvm.parse_assembly(text, context=llvm.create_context()))


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_a_lazy_parse_prints_as_the_eager_parse(path):
    """Printing parses no body: each is written from its text, renumbered, without LLVM's comments."""
    text = _printed(path)
    lazy = parse(text, lazy=True)
    left = dict(lazy.unparsed)
    printed = str(lazy)
    assert left and all(fn in lazy.unparsed for fn, body in left.items() if not re.search(r"@[0-9]", body))
    assert _llvm(printed) == _llvm(str(parse(text)))
    assert "; preds" not in printed


def test_a_lazy_parse_of_libdevice_prints_as_the_eager_parse(libdevice_path):
    text = str(llvm.parse_bitcode(Path(libdevice_path).read_bytes(), context=llvm.create_context()))
    lazy = parse(text, lazy=True)
    assert len(lazy.unparsed) > 300
    assert _llvm(str(lazy)) == _llvm(str(parse(text)))


def test_reading_one_body_parses_that_body_only():
    m = parse(TEXT, lazy=True)
    f, k = m.functions["f"], m.functions["k"]
    assert list(m.unparsed) == [f, k]
    assert not f.is_declaration and not k.is_declaration and m.functions["g"].is_declaration
    assert list(m.unparsed) == [f, k]  # is_declaration does not parse
    assert [i.opcode for i in f.instructions()] == ["call", "ret"]
    assert list(m.unparsed) == [k]


def test_a_global_counts_uses_in_bodies_not_parsed_yet():
    m = parse(TEXT, lazy=True)
    g = m.functions["g"]
    assert len(g.uses) == 3
    assert not m.unparsed
    assert {u.user.function.name for u in g.uses if isinstance(u.user, Instruction) and u.user.function} == {"f", "k"}


def test_replacing_a_global_reaches_bodies_not_parsed_yet():
    m = parse(TEXT, lazy=True)
    m.functions["g"].replace_all_uses_with(m.functions["h"])
    text = str(m)
    assert "@g(" not in text.split("declare i32 @h")[1] and text.count("call i32 @h(") == 3
    llvm.parse_assembly(text, context=llvm.create_context()).verify()


def test_an_error_in_a_body_is_raised_at_its_first_use_with_line_and_column():
    bad = TEXT.replace("%b = call i32 @g(i32 %a)", "%b = call i32 @g(i32 %zz)")
    m = parse(bad, lazy=True)
    assert [i.opcode for i in m.functions["f"].instructions()] == ["call", "ret"]
    for _ in range(2):  # the body stays unparsed: every use raises
        with pytest.raises(IRParseError) as info:
            m.functions["k"].blocks  # noqa: B018
        assert (info.value.line, info.value.column) == (13, 24), str(info.value)
    with pytest.raises(IRParseError):
        parse(bad)


def test_an_undefined_global_in_a_body_is_raised_at_its_first_use():
    bad = TEXT.replace("call i32 @g(i32 %a)", "call i32 @nowhere(i32 %a)")
    m = parse(bad, lazy=True)
    with pytest.raises(IRParseError, match="undefined value @nowhere") as info:
        m.functions["k"].blocks  # noqa: B018
    assert info.value.line == 13


def test_a_body_closed_by_an_indented_brace_is_parsed_at_once():
    text = TEXT.replace("  ret i32 %a\n}", "  ret i32 %a\n  }")
    m = parse(text, lazy=True)
    assert list(m.unparsed) == [m.functions["k"]]
    assert str(m) == str(parse(text))


def test_a_function_removed_unparsed_leaves_no_uses_behind():
    m = parse(TEXT, lazy=True)
    g = m.functions["g"]
    m.remove_function(m.functions["k"])
    assert len(g.uses) == 1
    assert "define i32 @k" not in str(m)


def test_an_argument_counts_uses_in_its_body_not_parsed_yet():
    """A pass that starts from a kernel's arguments (the PTX target's global pointers) sees their uses."""
    m = parse(TEXT, lazy=True)
    x = m.functions["k"].args[0]
    assert [u.user.opcode for u in x.uses if isinstance(u.user, Instruction)] == ["call"]
    assert list(m.unparsed) == [m.functions["f"]]


def test_a_body_that_fails_leaves_no_uses_or_names_behind():
    bad = TEXT.replace("%b = call i32 @g(i32 %a)", "%b = call i32 @nowhere(i32 %zz)")
    m = parse(bad, lazy=True)
    m.functions["f"].parse_body()
    with pytest.raises(IRParseError):
        m.functions["k"].blocks  # noqa: B018
    g = m.functions["g"]
    assert len(g.use_dict()) == 1  # f's call only: k's first call, parsed before the error, is undone
    assert m.get_global("nowhere") is None
    for _ in range(2):  # asking for all uses parses k again: the module is malformed
        with pytest.raises(IRParseError, match="undefined value %zz"):
            g.uses  # noqa: B018



APART = """declare i32 @g(i32)
declare i32 @h(i32)
declare i32 @"q\\22uoted"(i32)

define i32 @f(i32 %x) {
entry:
  %a = call i32 @g(i32 %x)
  ret i32 %a
}

define i32 @k(i32 %x) {
entry:
  %a = call i32 @h(i32 %x)
  %b = call i32 @"q\\22uoted"(i32 %a)
  ret i32 %b
}
"""


def _callers(fn) -> list[str]:
    return [u.user.function.name for u in fn.uses if isinstance(u.user, Instruction) and u.user.function is not None]


def test_a_global_asked_for_its_uses_parses_only_the_bodies_that_spell_its_name():
    m = parse(APART, lazy=True)
    h = m.functions["h"]
    assert _callers(h) == ["k"]
    assert list(m.unparsed) == [m.functions["f"]]
    assert str(m) == str(parse(APART))


def test_a_name_printed_escaped_parses_every_body_for_its_uses():
    m = parse(APART, lazy=True)
    quoted = m.functions['q"uoted']
    assert _callers(quoted) == ["k"]
    assert not m.unparsed


def test_a_global_renamed_keeps_its_uses_in_bodies_not_parsed_yet():
    m = parse(APART, lazy=True)
    g = m.rename_function(m.functions["g"], "g2")
    assert _callers(g) == ["f"]
    text = str(m)
    assert text.count("call i32 @g2(") == 1 and "@g(" not in text
    llvm.parse_assembly(text, context=llvm.create_context()).verify()


def _use_sites(v) -> list[tuple[str, str]]:
    """Each use of ``v`` as (the using function's name or the global's, the user's opcode or kind)."""
    out = []
    for u in v.uses:
        user = u.user
        if isinstance(user, Instruction):
            out.append((user.function.name if user.function is not None else "", user.opcode))
        else:
            out.append((getattr(user, "name", ""), type(user).__name__))
    return sorted(out)


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_every_global_asked_in_turn_has_the_uses_of_the_eager_parse(path):
    """Each global's uses, asked one after another of one lazy parse (each question parsing the bodies that
    spell that name), are the eager parse's; the module then prints as the eager one."""
    text = _printed(path)
    eager, lazy = parse(text), parse(text, lazy=True)
    for table in ("functions", "globals"):
        for name, v in getattr(eager, table).items():
            assert _use_sites(getattr(lazy, table)[name]) == _use_sites(v), name
    assert _llvm(str(lazy)) == _llvm(str(eager))


# -- a body printed from its text: numbers as the print gives them ----------------------------------

def _both(text: str, edit) -> tuple[str, str, Module]:
    """``edit`` applied to a lazy and to an eager parse of ``text``; both printed, and the lazy module."""
    lazy, eager = parse(text, lazy=True), parse(text)
    edit(lazy)
    edit(eager)
    return str(lazy), str(eager), lazy


def test_a_body_printed_from_its_text_follows_renumbered_metadata():
    """A node put first shifts every ``!N``: the untouched bodies' ``!dbg`` and ``#dbg_value`` references
    are numbered as the print numbers their nodes (before, printing parsed every body)."""
    text = _printed(CORPUS[[p.stem for p in CORPUS].index("debug_info")])

    def edit(m):
        m.metadata.insert(0, MDNode(['!{!"first"}']))

    lazy_text, eager_text, lazy = _both(text, edit)
    assert lazy.unparsed  # printed without a parse
    assert lazy_text == eager_text
    assert _llvm(lazy_text) == _llvm(eager_text)


def test_a_body_printed_from_its_text_follows_renumbered_attribute_groups():
    text = _printed(CORPUS[[p.stem for p in CORPUS].index("calls_attrs")])

    def edit(m):
        m.attribute_groups.insert(0, AttributeGroup(["cold"]))
        m.functions["caller"].attribute_groups.insert(0, m.attribute_groups[0])

    lazy_text, eager_text, lazy = _both(text, edit)
    assert lazy.unparsed
    assert _llvm(lazy_text) == _llvm(eager_text)


NUMBERED = """@0 = global i32 1
@named = global i32 2

define i32 @f(i32 %x) {
entry:
  %a = load i32, ptr @0
  %b = add i32 %a, %x
  ret i32 %b
}
"""


def test_a_body_that_names_an_unnamed_global_is_parsed_to_print():
    """``@N`` is numbered anew by each print: a global put first makes the old ``@0`` print as ``@1``."""
    def edit(m):
        g = GlobalVariable("", T.i32, initializer=const_int(T.i32, 7))
        m.globals = {"\\0first": g, **m.globals}
        g.module = m

    lazy_text, eager_text, lazy = _both(NUMBERED, edit)
    assert not lazy.unparsed
    assert lazy_text == eager_text and "load i32, ptr @1" in lazy_text


def test_a_body_whose_argument_was_renamed_is_parsed_to_print():
    def edit(m):
        m.functions["f"].args[0].name = "y"

    lazy_text, eager_text, lazy = _both(TEXT, edit)
    assert lazy_text == eager_text and "call i32 @g(i32 %y)" in lazy_text
    assert list(lazy.unparsed) == [lazy.functions["k"]]


def test_strings_and_comments_in_a_body_printed_from_its_text_keep_their_numbers():
    text = """@s = constant [9 x i8] c"!1 #0 @3\\00"

define void @f() {
entry:                                            ; preds = !7 #9
  call void asm sideeffect "nop # !2 #1 @0", ""()
  ret void
}
"""
    m = parse(text, lazy=True)
    printed = str(m)
    assert m.unparsed
    assert 'asm sideeffect "nop # !2 #1 @0"' in printed and "; preds" not in printed
    assert _llvm(printed) == _llvm(text)
