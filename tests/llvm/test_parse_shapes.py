"""The parser's fast paths agree with its reference paths.

Two shortcuts make parsing fast: the body of a function is tokenized at once
(punctuation spaced out, the text split at whitespace) instead of one regular
expression per line, and an instruction spelled like one parsed before (the
same tokens but for value names and numbers) is made from that one's parts.
Both are checked here against the plain paths on every module of the corpus,
the corpus after O2, the AD fixtures and the whole of libdevice: the same
tokens, and instruction by instruction the same opcode, type, spelling,
operands, typed fields and call site.
"""

from __future__ import annotations

from pathlib import Path

import llvmlite.binding as llvm
import pytest

from gpucompiler.llvm import AttributeGroup, Instruction, MDNode, Module
from gpucompiler.llvm import lexer
from gpucompiler.llvm.parser import Parser
from gpucompiler.llvm.types import Type
from gpucompiler.llvm.values import Value

TESTS = Path(__file__).resolve().parents[1]
FILES = sorted((TESTS / "llvm" / "corpus").glob("*.ll")) + sorted((TESTS / "enzyme" / "fixtures").glob("*.ll"))


def _printed(text: str, opt: bool = False) -> str:
    """``text`` as LLVM prints it (after its O2 pipeline when ``opt``)."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    mod = llvm.parse_assembly(text, context=llvm.create_context())
    if opt:
        tm = llvm.Target.from_triple(mod.triple or llvm.get_process_triple()).create_target_machine()
        pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=2))
        pb.getModulePassManager().run(mod, pb)
    return str(mod)


def _texts() -> list[tuple[str, str]]:
    out = []
    for f in FILES:
        text = f.read_text()
        out.append((f"{f.stem}.printed", _printed(text)))
        out.append((f"{f.stem}.O2", _printed(text, opt=True)))
    return out


@pytest.fixture(scope="module")
def texts() -> list[tuple[str, str]]:
    return _texts()


@pytest.fixture(scope="module")
def libdevice_text(libdevice_path) -> str:
    return str(llvm.parse_bitcode(Path(libdevice_path).read_bytes(), context=llvm.create_context()))


def _regex_tokens(line: str) -> list[str]:
    toks = lexer._findall(line)
    for k, t in enumerate(toks):
        if t[0] == ";":
            return toks[:k]
    return toks


def _assert_same_tokens(text: str, what: str) -> None:
    lines = text.split("\n")
    at_once = lexer.tokenize_lines(lines)
    for n, (line, toks) in enumerate(zip(lines, at_once), 1):
        want = _regex_tokens(line)
        assert toks == want, f"{what}:{n}: {line!r}: body tokens {toks} != {want}"
        assert lexer.tokenize(line) == want, f"{what}:{n}: {line!r}: line tokens differ"


def _describe(v: Value, slots: dict[Value, int]) -> object:
    """An operand by what it is, not by identity (the two parses make different objects)."""
    if v in slots:
        return ("slot", slots[v])
    return (type(v).__name__, v.ref, str(v.type))


def _part(p: object, m: Module) -> object:
    if isinstance(p, MDNode):
        return ("node", m.metadata.index(p) if p in m.metadata else p.parts)
    if isinstance(p, AttributeGroup):
        return ("group", p.attrs)
    return p if isinstance(p, (str, int)) else (type(p).__name__, str(p))


def _assert_same_model(a: Module, b: Module, what: str) -> None:
    assert list(a.functions) == list(b.functions)
    for name, fa in a.functions.items():
        fb = b.functions[name]
        sa = {v: k for k, v in enumerate([*fa.args, *fa.blocks, *fa.instructions()])}
        sb = {v: k for k, v in enumerate([*fb.args, *fb.blocks, *fb.instructions()])}
        assert len(sa) == len(sb), f"{what}: @{name}: different sizes"
        for ia, ib in zip(fa.instructions(), fb.instructions()):
            where = f"{what}: @{name}: {ia.opcode}"
            assert isinstance(ib, Instruction), where
            assert (ia.opcode, str(ia.type), ia.name) == (ib.opcode, str(ib.type), ib.name), where
            assert [_part(p, a) for p in ia.parts] == [_part(p, b) for p in ib.parts], where
            assert [_describe(o, sa) for o in ia.operands] == [_describe(o, sb) for o in ib.operands], where
            assert [str(f) if isinstance(f, Type) else f for f in ia.fields()] == [
                str(f) if isinstance(f, Type) else f for f in ib.fields()], where
            ca, cb = ia.call, ib.call
            assert (ca is None) == (cb is None), where
            if ca is not None and cb is not None:
                assert (ca.callee_index, ca.nargs, ca.metadata_args, ca.attributes) == (
                    cb.callee_index, cb.nargs, cb.metadata_args, cb.attributes), where
            assert len(ia.uses) == len(ib.uses), f"{where}: {len(ia.uses)} uses != {len(ib.uses)}"
    assert str(a) == str(b), what


def _check(text: str, what: str) -> None:
    _assert_same_tokens(text, what)
    fast = Parser(text).run()
    plain = Parser(text, reuse_shapes=False).run()
    _assert_same_model(fast, plain, what)


def test_fast_paths_agree_with_the_reference_paths_on_the_corpus(texts):
    assert len(texts) >= 2 * 20
    for what, text in texts:
        _check(text, what)


def test_fast_paths_agree_with_the_reference_paths_on_libdevice(libdevice_text):
    assert libdevice_text.count("define ") > 300
    _check(libdevice_text, "libdevice")


@pytest.mark.parametrize("line", [
    "  %a%b = add i32 %x, 1",        # a sigil inside a word starts a new token
    "  %r = add i32 %x,1",           # no space after a comma
    "  %r = fadd double %x, 1.0e+00",
    "  %r = fadd double %x, +1",     # '+' outside a float's exponent
    "  %r = add i32 %x, 1 ; comment, with (punctuation)",
    "  %r = call i32 @\"odd name\"(i32 %x) ; c",
    "  %r = and i32 %x^%y",
    "!0 = !{!1,!2}",
])
def test_line_tokens_match_the_regular_expression(line):
    want = _regex_tokens(line)
    assert lexer.tokenize(line) == want
    assert lexer.tokenize_lines([line, "  ret void"]) == [want, ["ret", "void"]]


def test_a_shape_with_another_alignment_or_index_is_parsed_again():
    """Numbers that are not operands (an alignment, an aggregate index) are part of the shape: two loads
    spelled alike but for the alignment keep their own alignments."""
    text = """define i32 @f(ptr %p, { i32, i32 } %s) {
  %a = load i32, ptr %p, align 4
  %b = load i32, ptr %p, align 8
  %c = extractvalue { i32, i32 } %s, 0
  %d = extractvalue { i32, i32 } %s, 1
  %e = add i32 %a, %b
  %f = add i32 %c, %d
  %g = add i32 %e, %f
  ret i32 %g
}
"""
    m = Parser(text).run()
    insts = list(m.functions["f"].instructions())
    assert [i.alignment for i in insts[:2]] == [4, 8]
    assert [i.aggregate_indices for i in insts[2:4]] == [(0,), (1,)]
    assert str(m) == str(Parser(text, reuse_shapes=False).run())
    assert str(llvm.parse_assembly(str(m), context=llvm.create_context())) == _printed(text)
