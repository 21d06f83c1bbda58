"""Every marker of Enzyme's C interface is implemented or refused, never left in the output: c/markers.c
has one module per marker the engine does not implement (clang -O2 with -g, before and after clang's
optimiser); each is an ADError naming the marker and its C line (was: the call stayed, a call of an
undefined symbol)."""

from __future__ import annotations

import ctypes
import re

import pytest

import enzyme_plugin
from clang_levels import C_DIR, compile_c, needs_clang
from enzyme_plugin.ad import leftover
from enzyme_plugin.cpipeline import differentiate_in_pipeline
from gpucompiler.runtime import CPULibrary

pytestmark = needs_clang

#: case -> the marker its module calls
REFUSED = {1: "__enzyme_batch", 2: "__enzyme_shadow", 3: "__enzyme_virtualreverse", 4: "__enzyme_set_fixed_point",
           5: "__enzyme_fixed_point", 6: "__enzyme_allocation_like", 7: "__enzyme_checkpoint",
           8: "enzyme_context"}
#: the registration globals of the clang plugin's attributes in plain C (enzyme_inactive, enzyme_shadow)
GLOBALS = {10: "__enzyme_inactive_global", 11: "__enzyme_inactivefn", 12: "enzyme_shadow"}
PREOPT = ("-Xclang", "-disable-llvm-optzns")


def _marker_line(case: int) -> int:
    """The line of ``c/markers.c`` that calls the case's marker (read from the source, not assumed)."""
    lines = (C_DIR / "markers.c").read_text().splitlines()
    start = next(k for k, s in enumerate(lines) if re.match(rf"#(?:el)?if CASE == {case}\b", s))
    return next(k for k in range(start, len(lines)) if "double use(" in lines[k]) + 1


@pytest.mark.parametrize("pre_opt", [False, True], ids=["optimised", "pre-opt"])
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_unimplemented_marker_is_an_error_naming_it_and_its_line(case, pre_opt):
    text = compile_c("markers.c", "O2", True, (f"-DCASE={case}", *(PREOPT if pre_opt else ())))
    route = differentiate_in_pipeline if pre_opt else enzyme_plugin.differentiate
    with pytest.raises(enzyme_plugin.ADError) as info:
        route(text)
    msg = str(info.value)
    assert REFUSED[case] in msg, msg
    assert f"markers.c:{_marker_line(case)}:" in msg, msg


@pytest.mark.parametrize("case", sorted(GLOBALS))
def test_registration_globals_the_engine_does_not_read_are_refused(case):
    text = compile_c("markers.c", "O2", False, (f"-DCASE={case}",))
    with pytest.raises(enzyme_plugin.ADError, match=GLOBALS[case]):
        enzyme_plugin.differentiate(text)


def test_no_marker_call_or_declaration_survives_the_implemented_ones():
    """The augmented forward call returning a struct is implemented: nothing named __enzyme_ is left."""
    out = enzyme_plugin.differentiate(compile_c("markers.c", "O2", False, ("-DCASE=9",)))
    assert "__enzyme_" not in out
    use = CPULibrary.from_ir(out).function("use", ctypes.c_double, ctypes.c_double)
    assert use(3.0) == 9.0 and use(-0.5) == 0.25


def test_output_check_refuses_a_marker_call_left_behind():
    """The last line of defence: a call of a marker in a differentiated module (here: written by hand) is an
    ADError, an unused declaration is removed."""
    text = ("declare double @__enzyme_autodiff(ptr, ...)\ndeclare double @__enzyme_batch(ptr, ...)\n"
            "define double @f(double %x) {\n  ret double %x\n}\n")
    out = leftover.check_output(text)
    assert "__enzyme_" not in out and "define double @f" in out
    with pytest.raises(enzyme_plugin.ADError, match="left in the differentiated module"):
        leftover.check_output(text + "define double @g(double %x) {\n  %r = call double (ptr, ...) "
                                     "@__enzyme_autodiff(ptr @f, double %x)\n  ret double %r\n}\n")


@pytest.mark.parametrize("case", [1, 2, 5, 7])
def test_the_error_quotes_the_call_as_the_input_numbers_it(case):
    """The instruction in the message is the input's line, unnamed values by their numbers (was
    ``%<unnamed>`` for each of them)."""
    text = compile_c("markers.c", "O2", True, (f"-DCASE={case}",))
    with pytest.raises(enzyme_plugin.ADError) as info:
        enzyme_plugin.differentiate(text)
    quoted = info.value.instruction
    assert quoted is not None and "<unnamed>" not in str(info.value)
    assert quoted.split(" #")[0] in text, quoted


def test_a_marker_used_as_a_value_is_refused():
    """A marker declaration whose address is taken (stored, not called) is an ADError naming it, never a
    dangling reference."""
    text = ("declare double @__enzyme_autodiff(ptr, ...)\n@slot = global ptr @__enzyme_autodiff\n"
            "define double @f(double %x) {\n  ret double %x\n}\n")
    with pytest.raises(enzyme_plugin.ADError, match="used as a value"):
        leftover.check_output(text)
