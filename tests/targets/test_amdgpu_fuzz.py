"""The kernel fuzzer's programs (tests/kernels/fuzz_kernels.py: shared memory, barriers, shuffles,
atomics, math, strided arrays) compiled to AMD code objects: each one links, with its kernel in the
metadata note, or is refused with a typed error; never another exception, and never an LLVM abort
(the compiles run in a child process, so an abort shows as its exit status). No AMD GPU here: the
numbers are the oracle's business on the runnable targets."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def compile_seeds(seeds: list[int], archs: list[str]) -> dict[str, list]:
    """``{"seed arch": [outcome, detail]}``: ``linked`` (the note names the kernel), ``typed`` (a
    GPUCompilerError) or ``untyped`` (anything else, with its traceback)."""
    from gpucompiler.errors import GPUCompilerError
    from gpucompiler.kernel import Kernel
    from gpucompiler.runtime import hip
    from gpucompiler.targets.amdgpu import AMDGPUTarget
    from tests.frontend.fuzz_programs import _load
    from tests.kernels.fuzz_kernels import arguments, generate

    results: dict[str, list] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            src, _, setting = generate(seed)
            mod = _load(src, os.path.join(tmp, f"fuzz_amd_{seed}.py"))
            for arch in archs:
                key = f"{seed} {arch}"
                try:
                    k = Kernel(mod.k)
                    co = hip.code_object(k, k.argument_types(arguments(setting)), AMDGPUTarget(arch))
                    named = co.metadata()[".name"] == "k"
                    results[key] = ["linked" if named else "untyped", "" if named else "the note lacks k"]
                except GPUCompilerError as exc:
                    results[key] = ["typed", f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"]
                except Exception:  # what the test reports
                    results[key] = ["untyped", traceback.format_exc()[-600:]]
    return results


def run_seeds(seeds: list[int], archs: list[str], **env: str) -> dict[str, list]:
    """:func:`compile_seeds` in a child process (an LLVM abort fails the test with its exit status)."""
    proc = subprocess.run([sys.executable, __file__, json.dumps(seeds), json.dumps(archs)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, **env, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'plugins'}"})
    assert proc.returncode == 0, f"the compiles crashed (exit {proc.returncode}): {proc.stderr[-2000:]}"
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(results) == len(seeds) * len(archs)
    return results


def test_fuzzed_kernels_compile_to_code_objects():
    results = run_seeds(list(range(3000, 3024)), ["gfx90a", "gfx1100"])
    bad = {k: v for k, v in results.items() if v[0] != "linked"}
    assert not bad, bad


def test_without_device_libraries_fuzzed_kernels_link_or_name_the_function_and_line(tmp_path):
    results = run_seeds(list(range(3000, 3012)), ["gfx942"], GPUC_ROCM_DEVICE_LIBS=str(tmp_path))
    bad = {k: v for k, v in results.items()
           if v[0] == "untyped" or (v[0] == "typed" and not re.match(
               r"TargetUnsupportedError: \S+fuzz_amd_\d+\.py:\d+: \w+ on float(32|64) has no lowering on the "
               r"amdgpu target", v[1]))}
    assert not bad, bad
    assert any(v[0] == "typed" for v in results.values())  # the fuzzer's programs call float64 math


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    print(json.dumps(compile_seeds(json.loads(sys.argv[1]), json.loads(sys.argv[2]))))
else:  # under pytest: skipped without the tools
    from gpucompiler.errors import ToolNotFoundError
    from gpucompiler.targets.amdgpu import devicelibs, tools

    try:
        for _tool in ("ld.lld", "llvm-readobj", "llvm-objdump"):
            tools.find_tool(_tool)
    except ToolNotFoundError as _exc:
        pytestmark = pytest.mark.skip(reason=str(_exc))
    if devicelibs.find_device_libs_or_none() is None:
        pytestmark = pytest.mark.skip(reason="the ROCm device libraries (rocm-device-libs) are not installed")
