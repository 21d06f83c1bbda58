"""The engine parses only the bodies it reads (``parse(text, lazy=True)`` in ``_prepared``): the functions
no marker reaches (a Python entry, helpers, ``main``) are printed from their text, and the derivative LLVM
reads is the one an eager parse gives, on clang's IR at ``-O0`` and ``-O2`` (globals written elsewhere
keep their shadows, invoked markers, vector lanes, nested levels)."""

from __future__ import annotations

import re
from pathlib import Path

import llvmlite.binding as llvm
import pytest

from enzyme_plugin.ad import c_interface
from gpucompiler.llvm import parser

FIXTURES = Path(__file__).parent / "fixtures"
NAMES = ["globals.O0", "globals.O2", "memtypes.O2", "vec.O2", "control.O0", "split.O2", "nested.O2", "calls_g.O2",
         "activity.O2", "libc.O0", "structret.O2", "bench.O2"]


def _read(text: str) -> str:
    """``text`` as LLVM reads it, struct names without the suffixes an earlier parse in this process gave."""
    printed = str(llvm.parse_assembly(text, context=llvm.create_context()))
    return re.sub(r"(%struct\.[A-Za-z_]+)(\.\d+)+", r"\1", printed)


@pytest.mark.parametrize("name", NAMES)
def test_the_lazily_parsed_derivative_is_the_eager_one(name, monkeypatch):
    text = (FIXTURES / f"{name}.ll").read_text()
    printed: list[str] = []
    real = parser._LeftBody.printed

    def spy(self, fn, *args):
        out = real(self, fn, *args)
        if out is not None:
            printed.append(fn.name)
        return out

    monkeypatch.setattr(parser._LeftBody, "printed", spy)
    lazy = _read(c_interface.differentiate_here(text))
    eager_parse = c_interface.parse
    monkeypatch.setattr(c_interface, "parse", lambda t, lazy=False: eager_parse(t))
    assert lazy == _read(c_interface.differentiate_here(text))
    # the primal entry points no marker reaches: never parsed (in globals.* every function names a global
    # it may write, which the engine reads to give it a shadow)
    assert printed or name.startswith("globals.")
