"""What ``import enzyme_plugin`` loads, and the AD modes' marker codes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from enzyme_plugin import Forward, Mode, Reverse, ReverseSplit
from gpucompiler import CompilerConfig, NativeTarget


def test_import_enzyme_plugin_loads_neither_numpy_nor_networkx_nor_the_engine_nor_the_compiler():
    heavy = ("numpy", "networkx", "enzyme_plugin.ad.engine", "enzyme_plugin.ad.c_interface", "enzyme_plugin.language",
             "llvmlite", "importlib.metadata", "gpucompiler.interpreter.infer", "gpucompiler.codegen",
             "gpucompiler.llvm", "gpucompiler.pipeline", "gpucompiler.device")
    code = f"import sys, enzyme_plugin; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_names_loaded_on_first_use_are_the_modules_objects():
    import enzyme_plugin
    from enzyme_plugin import derivatives, split

    assert enzyme_plugin.gradient is derivatives.gradient
    assert enzyme_plugin.Tape is split.Tape
    from enzyme_plugin.ad import c_interface

    assert enzyme_plugin.differentiate is c_interface.differentiate
    from enzyme_plugin.language import custom

    assert enzyme_plugin.custom_rule is custom.custom_rule
    with pytest.raises(AttributeError):
        _ = enzyme_plugin.no_such_name  # type: ignore[attr-defined]


def test_mode_codes_round_trip_and_only_marker_modes_have_one():
    for mode in (Reverse, Forward, Mode.Augment, Mode.SplitReverse):
        assert Mode.of_code(mode.code) is mode
    assert len({m.code for m in (Reverse, Forward, Mode.Augment, Mode.SplitReverse)}) == 4
    with pytest.raises(KeyError):
        _ = ReverseSplit.code
    with pytest.raises(ValueError):
        Mode.of_code(7)
    assert repr(Reverse) == "Reverse" and Mode("Forward") is Forward


def test_grid_emulation_is_a_config_property():
    assert not CompilerConfig(NativeTarget()).emulates_grid
    assert CompilerConfig(NativeTarget(), plugins=("gpuc_grid",)).emulates_grid
