"""clang's IR through ``enzyme_plugin.differentiate``, run with the JIT:
reverse gradients against analytic values and finite differences, forward
tangents against reverse gradients, at -O0 and -O2."""

from __future__ import annotations

import pytest

from ad_checks import check_forward, check_output_module, check_reverse
from enzyme_corpus import PROGRAMS
from enzyme_harness import CASES, LEVEL_NAMES, UNSUPPORTED

PROGRAM_CASES = [c for c in CASES if not c.program.startswith("math_")]


@pytest.mark.parametrize("level", LEVEL_NAMES)
@pytest.mark.parametrize("program", [p for p in PROGRAMS if p not in UNSUPPORTED])
def test_output_verifies_without_markers(program, level):
    check_output_module(program, level)


@pytest.mark.parametrize("level", LEVEL_NAMES)
@pytest.mark.parametrize("case", PROGRAM_CASES, ids=lambda c: c.id)
def test_reverse(case, level):
    check_reverse(case, level)


@pytest.mark.parametrize("level", LEVEL_NAMES)
@pytest.mark.parametrize("case", PROGRAM_CASES, ids=lambda c: c.id)
def test_forward_agrees_with_reverse(case, level):
    check_forward(case, level)
