"""Malformed IR: every case is an ``IRParseError`` at the offending line and column, never an internal
exception, never accepted.

Each text is first shown to be invalid by LLVM's own parser; the model must refuse it too, naming the
line, the column of the offending token and what is wrong.
"""

from __future__ import annotations

import llvmlite.binding as llvm
import pytest

from gpucompiler.errors import IRParseError
from gpucompiler.llvm import parse

_HEAD = "define i32 @f(i32 %a, ptr %p) {\nentry:\n"
_TAIL = "  ret i32 %a\n}\n"

# id -> (text, line, column, words of the message)
CASES = {
    "line-ends-after-operand-type": (_HEAD + "  %b = add i32\n" + _TAIL, 3, 15, "ends early"),
    "line-ends-after-equals": (_HEAD + "  %b =\n" + _TAIL, 3, 7, "expected an instruction"),
    "value-name-alone": (_HEAD + "  %b\n" + _TAIL, 3, 3, "expected an instruction, found '%b'"),
    "sigil-inside-a-name": (_HEAD + "  %b%c = add i32 %a, 1\n" + _TAIL, 3, 3, "expected an instruction"),
    "value-defined-twice": (_HEAD + "  %b = add i32 %a, 1\n  %b = add i32 %a, 2\n" + _TAIL, 4, 3,
                            "redefinition of value %b"),
    "function-defined-twice": (_HEAD + _TAIL + "\ndefine i32 @f(i32 %a) {\n  ret i32 %a\n}\n", 6, 12,
                               "redefinition of @f"),
    "undefined-value": (_HEAD + "  %b = add i32 %a, %zz\n" + _TAIL, 3, 20, "undefined value %zz"),
    "undefined-block": (_HEAD + "  br label %nowhere\n}\n", 3, 12, "undefined block %nowhere"),
    "undefined-metadata": (_HEAD + "  %b = add i32 %a, 1, !dbg !7\n" + _TAIL, 3, 28, "undefined metadata !7"),
    "array-type-unclosed": (_HEAD + "  %b = load [4 x i32, ptr %p\n" + _TAIL, 3, 21, "expected ']'"),
    "vector-type-without-count": (_HEAD + "  %b = load <x x i32>, ptr %p\n" + _TAIL, 3, 13, "'<'"),
    "phi-without-brackets": (_HEAD + "  %b = phi i32 %a, %entry\n" + _TAIL, 3, 18, "unsupported value ','"),
    "call-unclosed": (_HEAD + "  %b = call i32 @f(i32 %a, ptr %p\n" + _TAIL, 3, 34, "ends early"),
    "switch-unclosed": (_HEAD + "  switch i32 %a, label %entry [\n    i32 0, label %entry\n" + _TAIL, 3, 3,
                        "missing ']'"),
    "stray-token-after-operands": (_HEAD + "  %b = add i32 %a, 1 )\n" + _TAIL, 3, 22, "unexpected ')'"),
    "integer-width-out-of-range": (_HEAD + "  %b = add i99999999999999999999 %a, 1\n" + _TAIL, 3, 12,
                                   "out of range"),
    "integer-width-zero": (_HEAD + "  %b = add i0 %a, 1\n" + _TAIL, 3, 12, "out of range"),
    "global-without-type": ("@g = global\n", 1, 12, "ends early"),
    "attribute-group-unclosed": ("attributes #0 = { nounwind\n", 1, 27, "expected '}'"),
    "struct-type-unclosed": ("%T = type { i32,\n", 1, 17, "ends early"),
    "declaration-without-parameters": ("declare i32 @g\n", 1, 15, "ends early"),
}


@pytest.mark.parametrize("text,line,column,words", list(CASES.values()), ids=list(CASES))
def test_malformed_ir_is_a_parse_error_at_line_and_column(text, line, column, words):
    with pytest.raises(RuntimeError):  # LLVM refuses it too
        llvm.parse_assembly(text, context=llvm.create_context())
    with pytest.raises(IRParseError) as info:
        parse(text)
    err = info.value
    assert (err.line, err.column) == (line, column), str(err)
    assert words in str(err)
    assert str(err).startswith(f"line {line}:{column}: ")
    assert err.__context__ is None or err.__suppress_context__  # no internal exception behind it


def test_every_prefix_of_a_valid_module_parses_or_is_a_parse_error():
    """Truncated text (a file cut anywhere) never escapes as another exception."""
    text = """%T = type { i32, [2 x float] }
@g = global %T zeroinitializer, align 4
define float @h(ptr %p, i32 %n) {
entry:
  %q = getelementptr inbounds %T, ptr %p, i64 0, i32 1, i64 1
  %v = load float, ptr %q, align 4
  %c = icmp slt i32 %n, 3
  br i1 %c, label %a, label %b
a:
  %w = call float @llvm.fabs.f32(float %v)
  br label %b
b:
  %r = phi float [ %v, %entry ], [ %w, %a ]
  switch i32 %n, label %d [
    i32 0, label %d
  ]
d:
  ret float %r
}
declare float @llvm.fabs.f32(float)
attributes #0 = { nounwind }
"""
    for cut in range(len(text)):
        try:
            parse(text[:cut])
        except IRParseError as err:
            assert err.line is not None
