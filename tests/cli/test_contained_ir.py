"""Foreign IR that makes LLVM abort or exit, or that the tools mishandled, is a typed error line and status 1
from ``gpuc compile-ir`` and ``gpuc enzyme`` (subprocesses), and a typed exception from
``enzyme_plugin.ad.differentiate()``; never a signal, an exit from inside LLVM or a Python traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import llvmlite.binding as llvm
import pytest

from gpucompiler.errors import CompilerCrashError, IRParseError
from gpucompiler.llvm.binding import parse_ir
from gpucompiler.contain import ChildError, call_in_child, contained

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "enzyme" / "fixtures"

#: a TBAA access tag whose type node is no scalar type, in a module with debug info: LLVM's verifier
#: aborts the process ("Broken module found")
BROKEN_TBAA = """define double @f(ptr %p) !dbg !5 {
  %v = load double, ptr %p, align 8, !tbaa !10, !dbg !8
  ret double %v, !dbg !8
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3, !4}
!0 = distinct !DICompileUnit(language: DW_LANG_C99, file: !1, producer: "clang", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug)
!1 = !DIFile(filename: "t.c", directory: "/tmp")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !{i32 7, !"Dwarf Version", i32 5}
!5 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 1, type: !6, unit: !0)
!6 = !DISubroutineType(types: !7)
!7 = !{}
!8 = !DILocation(line: 2, column: 3, scope: !5)
!10 = !{!11, !11, i64 0}
!11 = !{!"double"}
"""

NEVER_RETURNS = """declare void @abort() noreturn
define double @h(double %x) {
  call void @abort()
  unreachable
}
declare double @__enzyme_autodiff(ptr, ...)
define double @g(double %x) {
  %r = call double (ptr, ...) @__enzyme_autodiff(ptr @h, double %x)
  ret double %r
}
"""

INTERNAL_KERNEL = """define internal void @k(ptr %p, double %v) {
  store double %v, ptr %p
  ret void
}
"""


def gpuc(*args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpucompiler", *args], cwd=cwd, capture_output=True, input=stdin,
                          env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'plugins'}"})


def assert_typed_failure(proc: subprocess.CompletedProcess, *needles: str) -> str:
    """Status 1 (no signal, no exit from inside LLVM), one ``gpuc: error:`` message holding ``needles``,
    no traceback."""
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 1, (proc.returncode, err)
    assert err.startswith("gpuc: error: "), err
    assert "Traceback" not in err and "Traceback" not in proc.stdout.decode(errors="replace"), err
    for needle in needles:
        assert needle in err, err
    return err


def i386_module() -> str:
    return (FIXTURES / "activity.O2.ll").read_text().replace('"target-cpu"="x86-64"', '"target-cpu"="i386"')


def test_compile_ir_without_entry_contains_an_llvm_abort_while_finding_the_entry(tmp_path):
    (tmp_path / "tbaa.ll").write_text(BROKEN_TBAA)
    proc = gpuc("compile-ir", "tbaa.ll", cwd=tmp_path)  # was killed by SIGABRT (status 134)
    assert_typed_failure(proc, "tbaa.ll", "crashed (SIGABRT)", "Broken module")
    proc = gpuc("enzyme", "tbaa.ll", cwd=tmp_path)
    assert_typed_failure(proc, "tbaa.ll", "crashed (SIGABRT)")


def test_an_exit_from_inside_llvm_is_a_typed_error_from_the_cli_and_the_library(tmp_path):
    (tmp_path / "i386.ll").write_text(i386_module())
    proc = gpuc("enzyme", "i386.ll", cwd=tmp_path)  # LLVM called exit(1) with no message of ours
    assert_typed_failure(proc, "i386.ll", "crashed (exit status 1)", "64-bit code requested")
    from enzyme_plugin.ad import differentiate

    with pytest.raises(CompilerCrashError, match="64-bit code requested"):
        differentiate(i386_module())


@pytest.mark.parametrize("command", ["compile-ir", "enzyme"])
def test_a_file_that_is_not_utf8_names_the_file_and_the_byte(tmp_path, command):
    data = b"define void @f() {\n  ret void ; \xff\xfe\n}\n"
    (tmp_path / "bad.ll").write_bytes(data)
    assert_typed_failure(gpuc(command, "bad.ll", cwd=tmp_path), "bad.ll: byte 32: not UTF-8")
    if command == "enzyme":
        assert_typed_failure(gpuc(command, "-", cwd=tmp_path, stdin=data), "standard input: byte 32")


def test_reverse_mode_of_a_function_that_never_returns_is_an_ad_error(tmp_path):
    from enzyme_plugin.ad import ADError, differentiate

    (tmp_path / "noret.ll").write_text(NEVER_RETURNS)
    assert_typed_failure(gpuc("enzyme", "noret.ll", cwd=tmp_path), "@h, which never returns")  # was an AssertionError
    with pytest.raises(ADError, match="never returns") as info:  # the engine's own class, from the child
        differentiate(NEVER_RETURNS)
    assert info.value.function == "h"


def test_split_mode_of_a_function_that_never_returns_is_an_ad_error(tmp_path):
    from enzyme_plugin.ad import ADError, differentiate

    split = NEVER_RETURNS.replace("declare double @__enzyme_autodiff(ptr, ...)", """declare ptr @__enzyme_augmentfwd(ptr, ...)
declare double @__enzyme_reverse(ptr, ...)""").replace(
        "  %r = call double (ptr, ...) @__enzyme_autodiff(ptr @h, double %x)",
        """  %b = call ptr (ptr, ...) @__enzyme_augmentfwd(ptr @h, double %x)
  %r = call double (ptr, ...) @__enzyme_reverse(ptr @h, double %x, ptr %b)""")
    assert "__enzyme_reverse(ptr @h" in split
    with pytest.raises(ADError, match="never returns"):  # was a KeyError inside the engine
        differentiate(split)
    (tmp_path / "split.ll").write_text(split)
    assert_typed_failure(gpuc("enzyme", "split.ll", cwd=tmp_path), "@h, which never returns")


def test_forward_mode_of_a_function_that_never_returns_still_differentiates():
    from enzyme_plugin.ad import differentiate

    fwd = NEVER_RETURNS.replace("__enzyme_autodiff", "__enzyme_fwddiff").replace("double %x)\n  ret",
                                                                                  "double %x, double 1.0)\n  ret")
    out = parse_ir(differentiate(fwd))
    assert "__enzyme_fwddiff" not in str(out) and any(f.name == "g" for f in out.functions)


def test_an_internal_entry_is_compiled_and_exported(tmp_path, libdevice_path):
    (tmp_path / "k.ll").write_text(INTERNAL_KERNEL)
    proc = gpuc("compile-ir", "k.ll", "--kernel", "--target", "ptx:sm_80", "--emit", "asm", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr  # was a KeyError reported as an LLVM abort
    assert ".visible .entry k(" in proc.stdout.decode() and "st.global.b64" in proc.stdout.decode()
    proc = gpuc("compile-ir", "k.ll", "--kernel", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr  # was an empty module: the optimiser deleted @k
    ref = parse_ir(proc.stdout.decode())
    k = ref.get_function("k")
    assert not k.is_declaration and k.linkage == llvm.Linkage.external
    private = INTERNAL_KERNEL.replace("internal", "private")
    (tmp_path / "p.ll").write_text(private)
    proc = gpuc("compile-ir", "p.ll", cwd=tmp_path)
    assert proc.returncode == 0 and not parse_ir(proc.stdout.decode()).get_function("k").is_declaration


def test_a_childs_typed_error_comes_back_as_its_class_and_another_one_as_an_internal_error():
    def parse_error() -> bytes:
        raise IRParseError("bad token", line=3, source_line="  %x = ???")

    with pytest.raises(IRParseError, match="line 3: bad token") as info:
        contained(parse_error, "x.ll")
    assert info.value.line == 3 and info.value.source_line == "  %x = ???"

    def bug() -> bytes:
        return {}["missing"]

    with pytest.raises(ChildError, match=r"internal error \(KeyError: 'missing'\) while compiling x.ll") as bad:
        call_in_child(bug, "x.ll")
    assert "Traceback" not in str(bad.value)
