"""A fleet for mixed machines: three `gpuc serve` on one Redis compile one kernel for several GPU kinds
(two NVIDIA compute capabilities, two AMD architectures), each kind once across the fleet, and each
client gets the code of its own kind."""

from __future__ import annotations

import shutil
import subprocess
import threading

import pytest

from gpucompiler.core import CompilerConfig, CompilerJob, LLVMSource
from gpucompiler.service import ServiceClient
from gpucompiler.targets import parse_target
from tests.cache.servers import SECRET
from tests.service.conftest import TOKEN
from tests.service.test_fleet import fleet, stats  # noqa: F401  (the fixture)

AXPY = """
define void @axpy(ptr %x, ptr %y, double %a, i64 %i) {
entry:
  %px = getelementptr double, ptr %x, i64 %i
  %py = getelementptr double, ptr %y, i64 %i
  %vx = load double, ptr %px
  %vy = load double, ptr %py
  %m = fmul double %vx, %a
  %s = fadd double %m, %vy
  store double %s, ptr %py
  ret void
}
"""

#: each kind, the artifact asked for, and what that artifact must say about its machine
KINDS = {"ptx:sm_80": ("asm", b".target sm_80"), "ptx:sm_90": ("asm", b".target sm_90"),
         "amdgpu:gfx90a": ("obj", b"gfx90a"), "amdgpu:gfx942": ("obj", b"gfx942")}


def _job(kind: str) -> CompilerJob:
    return CompilerJob(LLVMSource(AXPY, "axpy"), CompilerConfig(parse_target(kind)))


def _amd_arch(obj: bytes, tmp_path) -> str:
    """The architecture an AMD object declares (its ELF flags, read back by llvm-readobj)."""
    tool = shutil.which("llvm-readobj-19") or shutil.which("llvm-readobj")
    if tool is None:
        pytest.skip("llvm-readobj (Debian's llvm-19) is not installed")
    path = tmp_path / "code.o"
    path.write_bytes(obj)
    out = subprocess.run([tool, "--file-headers", str(path)], capture_output=True, text=True, check=True).stdout
    return out


def test_a_fleet_compiles_each_gpu_kind_once(fleet, tmp_path):  # noqa: F811
    answers: list[tuple[str, object]] = []
    errors: list[Exception] = []

    def one(url, kind):
        try:
            emit = KINDS[kind][0]
            answers.append((kind, ServiceClient(url, token=TOKEN, secret=SECRET, timeout=120)
                            .compile(_job(kind), (emit,))))
        except Exception as exc:  # collected, asserted below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(url, kind)) for url in fleet for kind in KINDS for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    assert errors == [] and len(answers) == 3 * 2 * len(KINDS)
    for kind, (emit, marker) in KINDS.items():
        codes = {a.artifacts[emit] for k, a in answers if k == kind}
        assert len(codes) == 1, kind  # every client of a kind got the same code
        code = next(iter(codes))
        code = code if isinstance(code, bytes) else code.encode()
        if emit == "asm":
            assert marker in code, kind
        else:
            assert marker.decode().upper() in _amd_arch(code, tmp_path).upper(), kind
    by_kind = {k: next(a.artifacts[KINDS[k][0]] for kk, a in answers if kk == k) for k in KINDS}
    assert len(set(by_kind.values())) == len(KINDS)  # four kinds, four different codes
    compiled = [stats(url).get("worker.compiled", 0) for url in fleet]
    assert sum(compiled) == len(KINDS), compiled  # LLVM ran once per kind in the fleet
