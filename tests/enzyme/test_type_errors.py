"""Type-analysis errors that explain (c/type_errors.c): when the engine cannot tell what memory or a value
holds, the ADError names the value as the C source does (the variable, from -g's debug records; else "the
1st argument of `f`"), the C file:line (with -g), and what would settle it (``enzyme_const``, a
floating-point type, ``-g``), without quoting IR. Through clang's -O0 and -O2 IR and AD inside the
pipeline."""

from __future__ import annotations

import re

import pytest

import enzyme_plugin
from clang_levels import C_DIR, compile_c, needs_clang
from enzyme_plugin.cc import clang_ir
from enzyme_plugin.cpipeline import differentiate_in_pipeline

pytestmark = needs_clang

SOURCE = C_DIR / "type_errors.c"
#: case -> (what the error says, the function, the variable -g names, what names it without -g)
CASES = {
    1: ("a float made of integer bits read from memory with a shadow", "bump", "`vals`",
        "the 1st argument of `bump`"),
    2: ("bit pattern of an active float used as an integer", "nudge", "`x`", "the 1st argument of `nudge`"),
    3: ("cannot deduce the type of the memory a memcpy writes", "move", "`to`", "the 1st argument of `move`"),
    4: ("memcpy over memory holding both floating-point values and pointers", "weigh", "memory inside `b`",
        "memory inside the result of `malloc`"),
}
ROUTES = ("O0", "O2", "pipeline")


def _error_line(case: int) -> int:
    lines = SOURCE.read_text().splitlines()
    start = lines.index(f"#{'el' if case > 1 else ''}if CASE == {case}")
    return next(k + 1 for k in range(start, len(lines)) if "ERROR-LINE" in lines[k])


def _error(route: str, case: int, debug: bool) -> str:
    if route == "pipeline":
        text = clang_ir(SOURCE, 2, [f"-I{C_DIR}", "--target=x86_64-pc-linux-gnu", f"-DCASE={case}"], debug=debug)
        run = lambda: differentiate_in_pipeline(text, 2)  # noqa: E731
    else:
        text = compile_c("type_errors.c", route, debug, (f"-DCASE={case}",))
        run = lambda: enzyme_plugin.differentiate(text)  # noqa: E731
    with pytest.raises(enzyme_plugin.ADError) as info:
        run()
    return str(info.value)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_with_debug_info_the_error_names_the_variable_and_the_line(case, route):
    what, fn, variable, _ = CASES[case]
    message = _error(route, case, True)
    assert re.match(rf"\S*type_errors\.c:{_error_line(case)}: {re.escape(what)}", message), message
    assert variable in message and f"@{fn}" in message, message
    assert any(w in message for w in ("enzyme_const", "floating-point variable", "field by field", "one by one")), message
    assert "%" not in message and "\n" not in message, message  # no IR quoted
    assert "compile with -g" not in message, message


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_without_debug_info_the_error_describes_the_value_and_asks_for_g(case, route):
    what, fn, _, described = CASES[case]
    message = _error(route, case, False)
    assert message.startswith(what), message
    assert described in message and f"@{fn}" in message, message
    assert "compile with -g" in message, message
    assert "%" not in message and "\n" not in message, message


def test_an_argument_with_a_shadow_is_offered_enzyme_const():
    """The memory is an argument's: passing it as enzyme_const settles it (when it carries no derivative)."""
    message = _error("O2", 3, True)
    assert re.search(r"pass `to` as `enzyme_const` if it carries no derivative", message), message
