"""IRModule.keep_text: one print of a module no stage changes any more, dropped once a stage asks for its ref."""

from __future__ import annotations

import llvmlite.binding as llvm

from gpucompiler.llvm.binding import parse_ir
from gpucompiler.module import IRModule
from gpucompiler.pipeline import compile

from .conftest import ADD_IR, make_job


def _counting(monkeypatch) -> list[int]:
    prints: list[int] = []
    printed = llvm.ModuleRef.__str__
    monkeypatch.setattr(llvm.ModuleRef, "__str__", lambda self: (prints.append(1), printed(self))[1])
    return prints


def test_a_kept_print_serves_its_readers_until_a_stage_asks_for_the_ref(monkeypatch):
    module = IRModule(ref=parse_ir(ADD_IR))
    prints = _counting(monkeypatch)
    kept = module.keep_text()
    assert module.text is kept and str(module) is kept and module.function_names() == {"add"}
    assert len(prints) == 1 and module.parsed
    module.ref.get_function("add").linkage = llvm.Linkage.internal  # a stage that may change the module
    assert "define internal i32 @add" in module.text and "define internal" not in kept
    assert len(prints) == 2


def test_a_kept_print_is_dropped_for_the_model_and_when_a_form_is_set():
    module = IRModule(ref=parse_ir(ADD_IR))
    module.keep_text()
    module.model.functions["add"].name = "plus"  # the Python model: the authoritative form
    assert "@plus(" in module.text and "@add(" not in module.text
    module.keep_text()  # the model's print: nothing kept beside it, the model stays authoritative
    module.ref = parse_ir(ADD_IR.replace("@add", "@sum"))
    assert "@sum(" in module.text


def test_the_validated_module_is_the_llvm_artifact_printed_once(monkeypatch):
    prints = _counting(monkeypatch)
    result = compile(make_job(), ("llvm",))
    after = len(prints)
    text = result.artifacts["llvm"]
    assert isinstance(text, str) and text is result.module.text  # the result's text is the kept print
    assert len(prints) == after == 1
    assert str(parse_ir(text)) == text
    assert result.facts is not None and result.facts.declarations == []


def test_code_before_the_llvm_artifact_keeps_the_validated_print(monkeypatch):
    """Assembly, an object or bitcode emitted first read the module without changing it: the ``llvm``
    artifact after them is the validated module's one print, not a second one."""
    prints = _counting(monkeypatch)
    result = compile(make_job(), ("asm", "obj", "bc", "llvm"))
    text = result.artifacts["llvm"]
    assert isinstance(text, str) and text is result.module.text
    assert len(prints) == 1
    assert str(parse_ir(text)) == text
    asm = result.artifacts["asm"]
    assert isinstance(asm, str) and "add" in asm
    assert llvm.parse_bitcode(result.artifacts["bc"]).get_function("add") is not None
