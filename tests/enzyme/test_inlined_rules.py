"""Registered rules whose function clang inlined before AD (c/inlined_rules.c at -O0..-O3, with and
without debug info): the derivative is the rule's or an ADError saying how to compile, never the
derivative of the primal body the optimiser inlined (6 where the rule says 100 before)."""

from __future__ import annotations

import math

import pytest

import enzyme_plugin
from clang_levels import LEVELS, compile_c, library, needs_clang, scalar

pytestmark = needs_clang

SOURCE = "inlined_rules.c"
#: case -> the function whose rule it registers
RULED = {1: "sq", 2: "cube", 3: "my_log1p", 4: "sq", 5: "sq"}
POINTS = (0.3, 1.7)


def _outcome(case: int, level: str, debug: bool = False, extra: tuple[str, ...] = ()):
    """``("rule", None)`` when every derivative is the rule's, ``("refused", ADError)`` otherwise."""
    flags = (f"-DCASE={case}", *extra)
    try:
        lib = library(SOURCE, level, debug, flags)
    except enzyme_plugin.ADError as exc:
        return "refused", exc
    deriv, want = scalar(lib, "rule_deriv"), scalar(lib, "rule_want")
    for x in POINTS:
        got = deriv(x)
        assert math.isclose(got, want(x), rel_tol=1e-12), f"case {case} {level}: {got}, the rule says {want(x)}"
    return "rule", None


@pytest.mark.parametrize("debug", [False, True], ids=["g0", "g"])
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case", [1, 2, 3])
def test_rule_applies_or_the_engine_refuses(case, level, debug):
    kind, exc = _outcome(case, level, debug)
    if level == "O0":
        assert kind == "rule"  # nothing is inlined without the optimiser
    if kind == "refused":
        text = str(exc)
        assert f"@{RULED[case]} has a registered derivative rule" in text and "noinline" in text, text
        assert "-disable-llvm-optzns" in text


@pytest.mark.parametrize("level", ["O1", "O2", "O3"])
def test_inlined_rule_at_o1_and_above_is_refused(level):
    """clang inlines the small ruled functions at -O1 and above: each is an ADError (was the primal's
    derivative: 6x+1 where the rule gives 301)."""
    for case in (1, 2, 3):
        assert _outcome(case, level)[0] == "refused", f"case {case}"


def test_debug_info_names_the_line_it_was_inlined_at():
    kind, exc = _outcome(1, "O2", debug=True)
    assert kind == "refused"
    text = str(exc)
    assert "inlined its body into @outer" in text and "(at line " in text and "inlined_rules.c:" in text, text


def test_noinline_rule_applies_at_every_level():
    for level in LEVELS:
        assert _outcome(4, level)[0] == "rule", level


@pytest.mark.parametrize("level", ["O2", "O3"])
def test_rule_still_called_directly_but_inlined_elsewhere_is_refused(level):
    """A use of @sq is left (the direct differentiation) while @outer holds its inlined body: with -g the
    debug info names @outer; without it, @sq carries the attributes only the optimiser infers, so it may
    have been inlined: refused too (the derivative was the primal body's, 6x+1 for 301)."""
    kind, exc = _outcome(5, level, debug=True)
    assert kind == "refused" and "into @outer" in str(exc)
    kind, exc = _outcome(5, level)
    assert kind == "refused" and "compile with -g" in str(exc)


def test_ruled_function_the_optimiser_never_saw_is_not_refused():
    """-O2 -Xclang -disable-llvm-optzns: clang's attributes only, the calls are there: the rule applies
    (also for case 5, whose direct differentiation keeps a use)."""
    assert _outcome(5, "O2", extra=("-Xclang", "-disable-llvm-optzns"))[0] == "rule"


@pytest.mark.parametrize("case", [1, 2, 3])
def test_the_advice_works_optimiser_off_before_ad(case):
    """What the error recommends: clang -O2 -Xclang -disable-llvm-optzns keeps the calls for the engine."""
    assert _outcome(case, "O2", extra=("-Xclang", "-disable-llvm-optzns"))[0] == "rule"


def test_the_module_really_inlined_the_rule():
    """The -O2 module has no call of @sq left in @outer (else the tests above would not test inlining)."""
    text = compile_c(SOURCE, "O2", False, ("-DCASE=1",))
    body = text.split("@outer(", 1)[1].split("\n}\n", 1)[0]
    assert "@sq(" not in body
