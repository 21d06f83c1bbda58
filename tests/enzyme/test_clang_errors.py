"""Constructs the engine cannot differentiate raise ADError naming them; never
a silently wrong number."""

from __future__ import annotations

import pytest

import enzyme_plugin
from enzyme_harness import LEVEL_NAMES, UNSUPPORTED, fixture_text


@pytest.mark.parametrize("level", LEVEL_NAMES)
@pytest.mark.parametrize("program", sorted(UNSUPPORTED))
def test_unsupported_construct_raises(program, level):
    with pytest.raises(enzyme_plugin.ADError) as info:
        enzyme_plugin.differentiate(fixture_text(program, level))
    message = str(info.value)
    assert UNSUPPORTED[program] in message, message
    assert "@" in message or "function" in message, f"the message names no function: {message}"


def test_aderror_is_a_gpucompiler_error():
    from gpucompiler.errors import GPUCompilerError

    assert issubclass(enzyme_plugin.ADError, GPUCompilerError)


def test_module_without_markers_is_unchanged_in_meaning():
    text = "define double @f(double %x) {\n  %y = fmul double %x, %x\n  ret double %y\n}\n"
    from gpucompiler.llvm.binding import parse_ir

    out = enzyme_plugin.differentiate(text)
    assert [f.name for f in parse_ir(out).functions] == ["f"]
