"""The kernel fuzzer on Vulkan: seeded ``@kernel`` programs (tests/kernels/fuzz_kernels.py) run on the SPIR-V
target must match the oracle (the kernel's own Python, thread by thread under CPython) as the CPU grid
emulation does, or fail with a typed error (what Vulkan or LLVM's SPIR-V back end cannot do); never a wrong
number, an untyped error or a crash of the process (LLVM's aborts are contained; control flow LLVM 22
structures wrongly is refused by spirv-val: both typed)."""

from __future__ import annotations

import os
import warnings

import numpy as np

from gpucompiler import kernel
from gpucompiler.errors import GPUCompilerError
from gpucompiler.targets.spirv import SPIRVTarget
from tests.frontend.fuzz_programs import _load, _outcome
from tests.kernels import fuzz_kernels as K

SEEDS = range(3000, 3060)


def run_on_vulkan(seed: int, workdir: str) -> tuple[str, str]:
    """``(kind, detail)``: ``right``, ``typed`` (a compiler or device error), ``skip`` (the oracle raises:
    a device thread cannot), or ``wrong``."""
    src, shared, setting = K.generate(seed)
    mod = _load(src, os.path.join(workdir, f"fuzz_vk_{seed}.py"))
    oracle = _load(K._oracle_source(src), os.path.join(workdir, f"fuzz_vk_oracle_{seed}.py"))
    want = K.arguments(setting)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected = _outcome(lambda: K.run_oracle(oracle.k, want, shared), ())
    if expected[0] != "ok":
        return "skip", "the oracle raises"
    got = K.arguments(setting)
    blocks = (setting["n"] + K.BLOCK - 1) // K.BLOCK
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = _outcome(kernel(mod.k)[blocks, K.BLOCK, SPIRVTarget()], got)
    if out[0] == "raises":
        if isinstance(out[2], GPUCompilerError):  # spirv-val refusing LLVM's structured control flow included
            return "typed", f"{out[1].__name__}: {str(out[2]).splitlines()[0][:160]}"
        return "wrong", f"raised {out[1].__name__}: {out[2]}"[:300]
    diff = K._compare(want, got, "vulkan")
    return ("wrong", diff) if diff else ("right", "")


def test_generated_kernels_on_vulkan_match_the_oracle(vulkan_device, tmp_path):
    results = {s: run_on_vulkan(s, os.fspath(tmp_path)) for s in SEEDS}
    bad = {s: r for s, r in results.items() if r[0] == "wrong"}
    assert not bad, "; ".join(f"seed {s}: {d}" for s, (_, d) in list(bad.items())[:10])
    # most programs use int64 atomics (LLVM 22 has none for Vulkan) or float64 atomic adds (lavapipe has
    # none): typed errors; the rest must be right
    right = sum(r[0] == "right" for r in results.values())
    assert right >= 5, {s: r for s, r in results.items() if r[0] != "right"}
