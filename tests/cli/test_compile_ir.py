"""``gpuc compile-ir`` end to end, in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import llvmlite.binding as llvm

from gpucompiler.llvm.binding import parse_ir
from gpucompiler.targets import target_classes

ROOT = Path(__file__).resolve().parents[2]

KERNEL = """
declare float @__nv_expf(float)
define void @scale(ptr %x, float %a) {
  %v = load float, ptr %x
  %e = call float @__nv_expf(float %v)
  %m = fmul float %e, %a
  store float %m, ptr %x
  ret void
}
"""

BAD = """define i32 @f(i32 %x) {
  %y = add i32 %x, %nope
  ret i32 %y
}
"""


def gpuc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpucompiler", *args], cwd=cwd, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [str(ROOT), str(ROOT / "plugins"), os.environ.get("PYTHONPATH", "")])})


def test_ptx_kernel_to_stdout(tmp_path, libdevice_path, check_ptx):
    (tmp_path / "x.ll").write_text(KERNEL)
    proc = gpuc("compile-ir", "x.ll", "--target", "ptx:sm_90", "--emit", "asm", "--kernel", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert ".target sm_90" in proc.stdout and ".visible .entry scale(" in proc.stdout
    assert "__nv_expf" not in proc.stdout
    check_ptx(proc.stdout, arch="sm_90")


def test_native_object_and_llvm_files(tmp_path):
    (tmp_path / "f.ll").write_text(BAD.replace("%nope", "7"))
    proc = gpuc("compile-ir", "f.ll", "--emit", "obj", "-O", "3", "-o", "f.o", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "f.o").read_bytes()[:4] == b"\x7fELF" and b"f" in (tmp_path / "f.o").read_bytes()
    proc = gpuc("compile-ir", "f.ll", "--emit", "llvm", "-o", "f.opt.ll", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    ref = parse_ir((tmp_path / "f.opt.ll").read_text())
    assert ref.triple == llvm.get_process_triple() and [f.name for f in ref.functions] == ["f"]


def test_obj_needs_an_output_file(tmp_path):
    (tmp_path / "f.ll").write_text(BAD.replace("%nope", "7"))
    proc = gpuc("compile-ir", "f.ll", "--emit", "obj", cwd=tmp_path)
    assert proc.returncode == 1 and "-o" in proc.stderr


def test_malformed_ir_reports_llvm_message_and_line(tmp_path):
    (tmp_path / "bad.ll").write_text(BAD)
    proc = gpuc("compile-ir", "bad.ll", "--target", "ptx", cwd=tmp_path)
    assert proc.returncode == 1
    assert "bad.ll:2:" in proc.stderr and "use of undefined value '%nope'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_target_and_plugin_list_known_ones(tmp_path):
    (tmp_path / "f.ll").write_text(KERNEL)
    proc = gpuc("compile-ir", "f.ll", "--target", "cuda", cwd=tmp_path)
    assert proc.returncode == 1 and "unknown target 'cuda'" in proc.stderr
    assert "native" in proc.stderr and "ptx:sm_XY" in proc.stderr
    assert all(spelling in proc.stderr for spelling in _package_targets())  # every target, from its file
    helped = gpuc("compile-ir", "--help", cwd=tmp_path)
    assert all(spelling in " ".join(helped.stdout.split()) for spelling in _package_targets())
    proc = gpuc("compile-ir", "f.ll", "--plugin", "no_such_plugin", cwd=tmp_path)
    assert proc.returncode == 1 and "unknown plugin 'no_such_plugin'" in proc.stderr
    assert "instrumentation" in proc.stderr


def _package_targets() -> list[str]:
    """The spellings of the targets in gpucompiler/targets/ (a test may define more in this process)."""
    return [s for cls in target_classes().values() if cls.__module__.startswith("gpucompiler.targets.")
            for s in cls.spellings or (cls.name,)]


def test_invalid_ir_lists_every_problem(tmp_path):
    (tmp_path / "k.ll").write_text(
        "declare void @host_fn()\n"
        "define void @k() {\n  call void @host_fn()\n  call void @k()\n  ret void\n}\n")
    proc = gpuc("compile-ir", "k.ll", "--target", "ptx:sm_80", "-O", "0", cwd=tmp_path)
    assert proc.returncode == 1
    assert "[UNKNOWN_FUNCTION]" in proc.stderr and "[RECURSION]" in proc.stderr


def test_llvm_abort_is_an_error_line_and_status_1(tmp_path):
    from tests.cache.aborting import FOREIGN_INTRINSIC

    (tmp_path / "abort.ll").write_text(FOREIGN_INTRINSIC)
    proc = gpuc("compile-ir", "abort.ll", "--emit", "asm", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout == ""
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("gpuc: error: the compiler crashed (SIGABRT) while compiling abort.ll")
    assert "Cannot select" in last and "llvm.nvvm.read.ptx.sreg.tid.x" in last


def test_scalable_vectors_are_refused_before_llvm(tmp_path):
    from tests.cache.aborting import SCALABLE

    (tmp_path / "sv.ll").write_text(SCALABLE)
    for target in ("native", "ptx"):
        proc = gpuc("compile-ir", "sv.ll", "--target", target, "--emit", "asm", cwd=tmp_path)
        assert proc.returncode == 1 and "[SCALABLE_VECTOR]" in proc.stderr and "crashed" not in proc.stderr


def test_an_output_file_that_cannot_be_written_is_an_error_line_not_a_traceback(tmp_path):
    src = tmp_path / "k.ll"
    src.write_text("define i32 @f(i32 %x) {\n  ret i32 %x\n}\n")
    out = tmp_path / "missing" / "k.ll"
    for command in ("compile-ir", "enzyme"):
        proc = gpuc(command, str(src), "-o", str(out), cwd=tmp_path)
        assert proc.returncode == 1
        assert f"gpuc: error: {out}: No such file or directory" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_a_gpu_newer_than_the_ptx_table_is_spelt_with_its_isa_version(tmp_path):
    src = tmp_path / "f.ll"
    src.write_text("define i32 @f(i32 %x) {\n  ret i32 %x\n}\n")
    run = [sys.executable, "-m", "gpucompiler", "compile-ir", str(src), "--emit", "asm", "--target"]
    refused = subprocess.run([*run, "ptx:sm_999"], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and "ptx:sm_999:ptx88" in refused.stderr  # a spelling the CLI takes
    made = subprocess.run([*run, "ptx:sm_999:ptx88"], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0 and ".version 8.8" in made.stdout
    bad = subprocess.run([*run, "ptx:sm_90:isa88"], capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "ptx:sm_XY:ptxNN" in bad.stderr
