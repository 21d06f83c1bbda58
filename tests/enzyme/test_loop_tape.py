"""The tape of loops (tests/enzyme/c/loops.c): cache arrays sized before a
loop whose trip count is known there, nested loops (one array per
rectangular nest), arrays that grow for a while loop with a data-dependent
exit and for a loop with an early exit, small arrays of constant size on the
stack. Gradients against finite differences and forward mode; the IR of a
loop with a known trip count has no ``realloc``, a constant one no
``malloc``."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ad_checks import check_forward, check_reverse
from enzyme_harness import Case, differentiated

CASES = [
    Case("loops", "counted", sizes=(1, 2, 9, 40)),
    Case("loops", "nest", sizes=(1, 2, 7, 20)),
    Case("loops", "untilsum", sizes=(1, 3, 8), domain=(0.2, 1.0)),
    Case("loops", "early", sizes=(1, 3, 9, 40)),
    Case("loops", "fixed", sizes=(1, 3, 30)),
    Case("loops", "fixnest", sizes=(1, 4, 11)),
    Case("loops", "rect", sizes=(1, 2, 5, 12)),
]
LEVELS = ("O0", "O2")


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_reverse_gradient(case, level):
    check_reverse(case, level)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_forward_agrees(case, level):
    check_forward(case, level)


def _body(text: str, prefix: str) -> str:
    """The text of ``<prefix>_grad`` (the derivative is inlined into it) and of any derivative
    function of ``<prefix>`` left out of line."""
    found = re.findall(rf"^define [^\n]*@(?:{prefix}_grad|diffe_{prefix}\b)[^\n]*\{{\n(.*?)^\}}", text, re.S | re.M)
    m = "".join(found)
    assert m, f"no derivative of {prefix} in the output"
    return m


def _calls(body: str, name: str) -> int:
    return len(re.findall(rf"call [^\n]*@{name}\(", body))


@pytest.mark.parametrize("level", LEVELS)
def test_known_trip_count_allocates_before_the_loop_and_never_grows(level):
    body = _body(differentiated("loops", level), "counted")
    assert _calls(body, "realloc") == 0, body
    # one array per loop (clang -O2 splits the loop into an unrolled one and its remainder)
    assert _calls(body, "malloc") >= 1 and _calls(body, "malloc") == _calls(body, "free"), body


@pytest.mark.parametrize("level", LEVELS)
def test_nested_loops_with_known_trip_counts_never_grow(level):
    assert _calls(_body(differentiated("loops", level), "nest"), "realloc") == 0


@pytest.mark.parametrize("level", LEVELS)
def test_unknown_trip_count_grows(level):
    """From its inline segment by malloc and a copy, 8 bytes at a time (test_host_inline_tape.py)."""
    body = _body(differentiated("loops", level), "untilsum")
    assert _calls(body, "malloc") >= 1 and re.search(r"^cpword[.\w]*:", body, re.M), body


def test_early_exit_from_a_counted_loop_is_sized_by_its_bound():
    """A counted loop with a ``break`` besides: its count is an upper bound, enough to size the
    array once before the loop (no growth). (At -O2 clang's loop tests the counter in a block
    that is neither the header nor the latch: that array grows.)"""
    body = _body(differentiated("loops", "O0"), "early")
    assert _calls(body, "realloc") == 0 and _calls(body, "malloc") == 1, body


@pytest.mark.parametrize("arena", [0, 1024])
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case", [c for c in CASES if c.name in ("untilsum", "early", "counted")],
                         ids=lambda c: c.name)
def test_device_tape_grows_without_realloc_to_the_host_gradients(case, level, arena):
    """With the device's tapes (PTX and the grid emulation: no realloc; growth by malloc + copy +
    free from a 256-byte inline segment, or from the call's tape arena of 1 KiB) the clang loops give
    the gradients the host tapes give (those are checked against finite differences above), also for
    sizes that leave the segment or the arena."""
    import enzyme_plugin
    from enzyme_harness import Entry, fixture_text, library
    from enzyme_plugin.ad import gpu
    from gpucompiler.runtime import CPULibrary

    text = enzyme_plugin.differentiate(fixture_text("loops", level),
                                       options=gpu.EngineOptions(device_tape=True, tape_arena=arena))
    body = _body(text, case.name)
    assert _calls(body, "realloc") == 0, body
    if case.name == "untilsum":
        assert re.search(r"^cpword[.\w]*:", body, re.M) and f"alloca [{arena or 256} x i8]" in body, body
    device, host = Entry(CPULibrary.from_ir(text), case), Entry(library("loops", level), case)
    for n in (1, 3, 9, 40, 300):
        x = case.sample(n)
        np.testing.assert_array_equal(device.grad(x), host.grad(x), err_msg=f"n={n}")


@pytest.mark.parametrize("level", LEVELS)
def test_tape_calls_are_marked(level):
    """The engine's own allocations carry !gpuc.ad.tape (the GPU validator accepts only those)."""
    text = differentiated("loops", level)
    for line in text.splitlines():
        if re.search(r"call [^\n]*@(malloc|realloc|free)\(", line):
            assert "!gpuc.ad.tape" in line, line


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", ["fixed", "fixnest"])
def test_constant_trip_counts_keep_the_tape_on_the_stack(level, name):
    """A small array of constant size is an ``alloca`` of the entry block: no malloc, free or realloc."""
    body = _body(differentiated("loops", level), name)
    for fn in ("malloc", "free", "realloc"):
        assert _calls(body, fn) == 0, body


def _malloc_sizes(body: str):
    return re.findall(r"call [^\n]*@malloc\(i64 (?:noundef )?([^)]*)\)", body)


def test_rectangular_nest_allocates_one_array():
    """At -O0 both loops of ``rect`` test their counter in the header: the inner loop runs on every
    iteration of the outer one, so a single array holds both levels (one malloc, one free)."""
    body = _body(differentiated("loops", "O0"), "rect")
    assert _calls(body, "malloc") == 1 and _calls(body, "free") == 1, body
    assert _calls(body, "realloc") == 0


def test_triangular_inner_loop_keeps_its_own_array():
    """``nest``'s second nest is triangular (the inner count is the outer counter): the inner loop
    allocates per execution; the rectangular first nest allocates once."""
    body = _body(differentiated("loops", "O0"), "nest")
    assert _calls(body, "malloc") == 3, body  # the rectangular nest, the triangular outer and inner loops
