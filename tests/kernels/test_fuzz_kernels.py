"""The kernel fuzzer (fuzz_kernels.py) in CI: seeded ``@kernel`` programs whose CPU-emulation results match
the oracle (the kernel's own Python code, thread by thread under CPython) and whose PTX ptxas accepts;
never wrong, untyped, a crash or a hang. The oracle is checked to see the bugs it exists for."""

import os

import numpy as np
import pytest

from tests.frontend import fuzz_programs as F
from tests.kernels import fuzz_kernels as K


def test_generated_kernels_match_the_oracle(monkeypatch):
    monkeypatch.setenv("GPUC_FUZZ_PTXAS", "0")
    results = F.run(list(range(40)), timeout=120.0, batch=40, family="kernels")
    bad = {s: r for s, r in sorted(results.items()) if r[0] != "right"}
    assert not bad, "; ".join(f"seed {s}: {k}: {d}" for s, (k, d) in list(bad.items())[:10])


def test_generated_kernels_pass_ptxas(ptxas_path, monkeypatch):
    monkeypatch.setenv("GPUC_FUZZ_PTXAS", "1")
    results = F.run(list(range(1000, 1012)), timeout=120.0, batch=12, family="kernels")
    bad = {s: r for s, r in sorted(results.items()) if r[0] != "right"}
    assert not bad, "; ".join(f"seed {s}: {k}: {d}" for s, (k, d) in list(bad.items())[:10])


@pytest.mark.gpu
def test_generated_kernels_on_the_gpu_match_the_oracle(monkeypatch):
    monkeypatch.setenv("GPUC_FUZZ_GPU", "1")
    results = F.run(list(range(2000, 2150)), timeout=120.0, batch=150, family="kernels")
    bad = {s: r for s, r in sorted(results.items()) if r[0] != "right"}
    assert not bad, "; ".join(f"seed {s}: {k}: {d}" for s, (k, d) in list(bad.items())[:10])


def test_the_oracle_runs_threads_in_lock_step_between_barriers(tmp_path):
    """A block reduction in shared memory is only right if every thread passes each barrier together."""
    src, shared, setting = K.generate(next(s for s in range(200) if K.generate(s)[1]))
    assert shared
    mod = F._load(K._oracle_source(src), os.fspath(tmp_path / "oracle.py"))
    args = K.arguments(setting)
    K.run_oracle(mod.k, args, shared)
    part = args[7]
    assert part.shape == ((setting["n"] + K.BLOCK - 1) // K.BLOCK,) and np.all(np.isfinite(part))


def test_a_kernel_that_differs_from_the_oracle_is_wrong(tmp_path, monkeypatch):
    """The comparison tells a wrong store apart: an oracle that adds one to a stored integer."""
    original = K._oracle_source
    monkeypatch.setattr(K, "_oracle_source", lambda src: original(src).replace("iout[i] = ", "iout[i] = 1 + "))
    kind, detail = K.run_kernel_program(3, os.fspath(tmp_path))
    assert kind == "wrong" and detail.startswith("cpu: iout[0]")
