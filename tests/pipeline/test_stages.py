"""The driver's stages: order, timing, dumps, optimisation extension points, typed failures."""

from __future__ import annotations

import gc

import llvmlite.binding as llvm
import pytest

import gpucompiler.plugin as gp
from gpucompiler.errors import CompileError, ConfigError, InvalidIRError, IRParseError, PluginError
from gpucompiler.pipeline import compile
from gpucompiler.stages import STAGE_NAMES
from gpucompiler.settings import CompileSettings

from .conftest import ADD_IR, make_job


def opcodes(ir: str, function: str) -> list[str]:
    """Opcodes of ``function`` in ``ir``, read back through LLVM's parser."""
    ref = llvm.parse_assembly(ir)
    return [i.opcode for b in ref.get_function(function).blocks for i in b.instructions]


def test_stage_times_cover_every_stage_in_order():
    result = compile(make_job(), emit=("llvm", "obj"))
    assert list(result.stage_times) == list(STAGE_NAMES)
    assert all(t >= 0 for t in result.stage_times.values())
    assert isinstance(result.artifacts["obj"], bytes) and result.artifacts["obj"][:4] == b"\x7fELF"
    assert opcodes(result.artifacts["llvm"], "add") == ["add", "ret"]  # mem2reg ran


def test_opt_level_zero_keeps_memory_traffic():
    assert opcodes(compile(make_job(opt_level=0)).artifacts["llvm"], "add") == ["alloca", "store", "load", "add", "ret"]


def test_config_name_renames_the_entry():
    ir = compile(make_job(name="sum2")).artifacts["llvm"]
    assert {f.name for f in llvm.parse_assembly(ir).functions} == {"sum2"}


def test_optimize_extension_points_run_in_order(register):
    seen: list = []

    class Points(gp.Plugin):
        name = "points"
        version = "1"

        @gp.callback("optimize.last")
        def last(self, module):
            seen.append(("last", opcodes(module.text, "add")))

        @gp.callback("optimize.late")
        def late(self, module):
            seen.append(("late", opcodes(module.text, "add")))

        @gp.callback("optimize.early")
        def early(self, module):
            seen.append(("early", opcodes(module.text, "add")))

        @gp.callback("post_ad")
        def after(self, module):
            seen.append(("post_ad", None))

    register(Points)
    compile(make_job(plugins=("points",)))
    assert [s for s, _ in seen] == ["early", "late", "last", "post_ad"]
    assert seen[0][1] == ["alloca", "store", "load", "add", "ret"]  # before the default pipeline
    assert seen[1][1] == ["add", "ret"]  # after it


def test_late_callbacks_are_cleaned_up(register):
    class Messy(gp.Plugin):
        name = "messy"
        version = "1"

        @gp.callback("optimize.late")
        def add_zero(self, module):
            model_text = module.text.replace("ret i32 %s", "%z = add i32 %s, 0\n  ret i32 %z")
            module.ref = llvm.parse_assembly(model_text)

        @gp.callback("optimize.last")
        def check(self, module):
            assert opcodes(module.text, "add") == ["add", "ret"], "instcombine did not run after late"

    register(Messy)
    compile(make_job(plugins=("messy",)))


def test_cyclic_gc_pauses_for_a_compile_and_resumes_after(register):
    """A compile's objects live until it ends: the collector stays off while its stages run (and the
    plugins load), and is back on after it, a failed compile included."""
    seen: list = []
    fail: list = []

    class Watch(gp.Plugin):
        name = "watch"
        version = "1"

        @gp.callback("post_irgen")
        def irgen(self, module):
            seen.append(gc.isenabled())

        @gp.callback("optimize.last")
        def last(self, module):
            seen.append(gc.isenabled())

        @gp.callback("post_ad")
        def fails(self, module):
            if fail:
                raise ValueError("bad rewrite")

    register(Watch)
    assert gc.isenabled()
    compile(make_job(plugins=("watch",)))
    assert seen == [False, False] and gc.isenabled()
    fail.append(True)
    with pytest.raises(PluginError, match="bad rewrite"):
        compile(make_job(plugins=("watch",)))
    assert gc.isenabled()
    gc.disable()
    try:  # a caller's own pause is kept
        compile(make_job())
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_dump_dir_gets_before_and_after_of_every_stage(tmp_path):
    compile(make_job(), settings=CompileSettings(dump_dir=tmp_path))
    names = sorted(p.name for p in tmp_path.iterdir())
    expected = [f"add.{i:02d}.{s}.{w}.ll" for i, s in enumerate(STAGE_NAMES) for w in ("before", "after")
                if (s, w) != ("irgen", "before")]
    assert names == sorted(expected)
    assert opcodes((tmp_path / "add.04.optimize.before.ll").read_text(), "add")[0] == "alloca"
    assert opcodes((tmp_path / "add.04.optimize.after.ll").read_text(), "add") == ["add", "ret"]


def test_dump_dir_is_read_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUC_DUMP_DIR", str(tmp_path / "dumps"))
    compile(make_job(name="envjob"))
    assert (tmp_path / "dumps" / "envjob.01.post_irgen.before.ll").is_file()


def test_failing_callback_dumps_the_ir_it_received(register, tmp_path):
    class Breaks(gp.Plugin):
        name = "breaks"
        version = "1"

        @gp.callback("ad")
        def mangle(self, module):
            module.ref.get_function("add").linkage = "internal"
            raise ValueError("bad rewrite")

    register(Breaks)
    with pytest.raises(PluginError, match=r"'breaks' failed in stage 'ad' \(callback mangle, at .*test_stages.py:\d+\)"):
        compile(make_job(plugins=("breaks",)), settings=CompileSettings(dump_dir=tmp_path))
    received = (tmp_path / "add.05.ad.breaks.mangle.failed.ll").read_text()
    assert llvm.parse_assembly(received).get_function("add").linkage == llvm.Linkage.external


def test_lookup_without_a_job_constant_is_refused():
    ir = ADD_IR + "declare ptr @gpuc.lookup(i64)\n" \
        "define ptr @get() {\n  %p = call ptr @gpuc.lookup(i64 7)\n  ret ptr %p\n}\n"
    with pytest.raises(CompileError, match=r"link_deferred.*gpuc.job"):
        compile(make_job(ir))


def test_validation_collects_target_errors():
    ir = "declare double @no_such_symbol_anywhere(double)\n" \
         "define double @f(double %x) {\n  %y = call double @no_such_symbol_anywhere(double %x)\n  ret double %y\n}\n"
    with pytest.raises(InvalidIRError) as err:
        compile(make_job(ir, "f"))
    assert [k for k, _ in err.value.errors] == ["UNKNOWN_FUNCTION"]
    assert "no_such_symbol_anywhere" in compile(make_job(ir, "f", validate=False)).artifacts["llvm"]


@pytest.mark.parametrize("ir,entry,error,match", [
    (ADD_IR, "missing", CompileError, "entry function @missing is not defined"),
    ("define i32 @f( {", "f", IRParseError, "line 1"),
])
def test_bad_sources_raise_typed_errors(ir, entry, error, match):
    with pytest.raises(error, match=match):
        compile(make_job(ir, entry))


def test_unknown_emit_kind():
    with pytest.raises(ConfigError, match=r"unknown emit kind.*ptx"):
        compile(make_job(), emit=("ptx",))
