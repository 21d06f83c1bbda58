"""The typed surface a rule is written against (gpucompiler.interpreter.lowering): the objects a lowering and
a call handler receive during a real compile are the protocols' (every member the protocols declare is
there), and a lowering typed with them compiles and computes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest
from llvmlite import ir

import gpucompiler.plugin as gp
from gpucompiler import jit, types as T
from gpucompiler.interpreter import RuleSet
from gpucompiler.interpreter.lattice import widen
from gpucompiler.interpreter.lowering import (ArgTypes, Args, CallResult, CodeGen, Interp, ModuleGen, Specialization,
                                              values)


def fma3(a, b, c):
    """``a * b + c`` in CPython; compiled: one fused multiply-add."""
    return a * b + c


def twice(x):
    """``2 * x``; compiled through the handler below: a call of :func:`twice_and_a_half` (tells the route)."""
    return 2.0 * x


def twice_and_a_half(x):
    return x + x + 0.5


def uses(x, y, z):
    return fma3(x, y, z)


def uses_twice(x):
    return twice(x)


seen: dict[str, object] = {}
rules = RuleSet("typed_rules")


@rules.define(fma3, T.float64, T.float64, T.float64, restype=T.float64, pure=False)
def _fma3(cg: CodeGen, args: Args, argtypes: ArgTypes, restype: T.Type) -> ir.Value:
    seen["cg"], seen["argtypes"], seen["restype"] = cg, tuple(argtypes), restype
    seen["where"] = cg.frame.where(cg.inst) if cg.inst is not None else None
    return cg.call_intrinsic("llvm.fma", restype, values(args))


@rules.handler
def _twice(interp: Interp, callee: object, argtypes: ArgTypes) -> CallResult | None:
    if callee is not twice:
        return None
    seen["interp"] = interp
    return interp.invoke(twice_and_a_half, argtypes)


class TypedRules(gp.Plugin):
    name, version = "typed_rules", "1"
    rules = rules


def test_a_typed_lowering_and_handler_compile_compute_and_receive_the_protocols_objects(register):
    register(TypedRules)
    seen.clear()
    f = jit(uses, plugins=("typed_rules",), cache=False)
    u = 1.0 + 2.0 ** -30  # u * u - 1 is 2**-29 rounded, 2**-29 + 2**-60 fused
    for x, y, z in ((1.5, 2.0, -0.25), (u, u, -1.0), (-3.0, 1e-3, 7.0)):
        assert f(x, y, z) == float(Fraction(x) * Fraction(y) + Fraction(z))  # one rounding, as llvm.fma
    assert f(u, u, -1.0) == 2.0 ** -29 + 2.0 ** -60 != u * u - 1.0  # the rule ran, not CPython's a * b + c
    g = jit(uses_twice, plugins=("typed_rules",), cache=False)
    assert [g(x) for x in (1.25, -3.0)] == [3.0, -5.5]  # the handler's route: 2x + 0.5
    assert [widen(t) for t in seen["argtypes"]] == [T.float64] * 3 and seen["restype"] == T.float64

    # the objects the rules received have every member of their protocols
    cg, interp = seen["cg"], seen["interp"]
    assert isinstance(cg, CodeGen) and isinstance(cg.mod, ModuleGen) and isinstance(cg.frame, Specialization)
    assert isinstance(interp, Interp) and isinstance(cg.mod.interp, Interp)
    assert cg.frame.pyfunc is uses and cg.target == interp.target and cg.mod.target is cg.target
    file, line, _ = seen["where"]
    assert file == __file__ and line == uses.__code__.co_firstlineno + 1  # the call of fma3 in uses


def test_the_protocols_are_not_met_by_objects_without_their_members():
    """The member check above can fail: an object lacking one member is not a CodeGen."""

    class Almost:
        def __getattr__(self, name: str) -> object:
            if name == "check_index":
                raise AttributeError(name)
            return None

    assert not isinstance(Almost(), CodeGen)
    assert not isinstance(object(), Interp)


def test_values_gives_the_llvm_values_and_refuses_an_argument_without_one():
    one = ir.Constant(ir.DoubleType(), 1.0)
    assert values([one, one]) == [one, one]
    with pytest.raises(TypeError, match="argument 1 has no LLVM value"):
        values([one, None])


ROOT = Path(__file__).resolve().parents[2]


def _strict_errors(code: str, tmp_path: Path) -> list[str]:
    """basedpyright's errors on ``code`` checked in strict mode, under the project's configuration."""
    path = tmp_path / "typed_plugin.py"
    path.write_text("# pyright: strict, reportMissingTypeStubs=false\n" + code)
    out = subprocess.run([str(shutil.which("basedpyright")), "--outputjson", str(path)], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    return [d["message"] for d in json.loads(out.stdout)["generalDiagnostics"] if d["severity"] == "error"]


@pytest.mark.skipif(shutil.which("basedpyright") is None, reason="basedpyright (the lint extra) is not installed")
def test_the_docs_typed_plugin_checks_strictly_and_a_lowering_of_the_wrong_signature_does_not(tmp_path):
    text = (ROOT / "docs" / "plugins.md").read_text()
    match = re.search(r"```python\n(.*?)```", text[text.index("## Typed rules and plugins"):], re.S)
    assert match is not None
    code = match.group(1)
    assert "@typed.define" in code and "@typed.handler" in code and "class Typed(gp.Plugin)" in code
    assert _strict_errors(code, tmp_path) == []
    wrong = code.replace("restype: T.Type) -> ir.Value:", "restype: int) -> ir.Value:")  # not a Lowering
    assert wrong != code
    assert any("Lowering" in e or "restype" in e for e in _strict_errors(wrong, tmp_path))
