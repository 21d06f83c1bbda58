"""Every scalar math rule, one clang module per rule (``c/math_op.c``):
d/dx with x active through ``enzyme_out`` and y constant, d/dy through the
implicit rule, the forward tangent, against the analytic derivative and finite
differences, at -O0 (libm calls) and -O2."""

from __future__ import annotations

import pytest

from ad_checks import check_forward, check_output_module, check_reverse
from enzyme_harness import CASES, LEVEL_NAMES

MATH_CASES = [c for c in CASES if c.program.startswith("math_") and c.program != "math_float"]


@pytest.mark.parametrize("level", LEVEL_NAMES)
@pytest.mark.parametrize("case", MATH_CASES, ids=lambda c: c.program[5:])
def test_rule(case, level):
    check_output_module(case.program, level)
    check_reverse(case, level)
    check_forward(case, level)
