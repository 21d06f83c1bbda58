"""The clang corpus (enzyme_corpus.PROGRAMS, the cases of enzyme_harness.CASES) through AD inside the
pipeline: each program compiled by clang-19 at -O1..-O3 with its optimiser off, differentiated by
``enzyme_plugin.cpipeline`` and run: reverse gradients against the analytic gradient and finite
differences, forward tangents against reverse gradients (the other route's tests read the committed
fixtures, tests/enzyme/test_clang_gradients.py)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import enzyme_plugin

from clang_levels import C_DIR, needs_clang
from enzyme_corpus import PROGRAMS
from enzyme_harness import CASES, UNSUPPORTED, Entry, assert_close, central_fd, fd_tolerance
from enzyme_plugin.cc import clang_ir
from tests.enzyme import fuzz_c
from enzyme_plugin.cpipeline import differentiate_in_pipeline
from gpucompiler.runtime import CPULibrary

pytestmark = needs_clang

#: the fixtures' flags (tests/enzyme/regen_fixtures.py) without the level
FLAGS = ["--target=x86_64-pc-linux-gnu", "-fno-ident", "-ffp-contract=on", f"-I{C_DIR}"]
CASES_HERE = [c for c in CASES if c.program in PROGRAMS and c.program not in UNSUPPORTED]


@functools.cache
def _lib(program: str, level: int):
    source, extra = PROGRAMS[program]
    return CPULibrary.from_ir(differentiate_in_pipeline(clang_ir(C_DIR / source, level, [*FLAGS, *extra]), level))


@pytest.mark.parametrize("level", [1, 2, 3])
@pytest.mark.parametrize("case", CASES_HERE, ids=lambda c: c.id)
def test_gradients_in_the_pipeline(case, level):
    entry = Entry(_lib(case.program, level), case)
    for n in case.ns():
        x = case.sample(n)
        g = entry.grad(x)
        if case.analytic is not None:
            assert_close(g, case.analytic(x.astype("f8")), case.rtol, f"{case.id} n={n} O{level}: analytic")
        mask = case.inactive(n) if case.inactive else np.zeros(n, bool)
        if case.fd:
            fd = np.where(mask, 0.0, central_fd(entry.primal, x, mask))
            assert_close(g, fd, fd_tolerance(case), f"{case.id} n={n} O{level}: finite differences")
        assert np.all(g[mask] == 0.0)
        v = case.sample(n, salt=1) - case.sample(n, salt=2)
        t = entry.fwd(x, v)
        scale = float(np.abs(g) @ np.abs(v.astype("f8"))) + 1e-300
        tol = 1e-4 if case.dtype == "f4" else 1e-9
        assert abs(t - g @ v.astype("f8")) <= tol * max(1.0, scale), f"{case.id} n={n} O{level}: forward"


@pytest.mark.parametrize("seed", range(6))
def test_generated_programs_in_the_pipeline(seed, tmp_path, monkeypatch):
    """The C fuzzer's programs (fuzz_c.py: loops, branches, libm, recursion, malloc/memcpy, a global) with
    clang's optimiser off at -O1..-O3, differentiated in the pipeline: gradient against finite differences,
    split gradient and forward tangent against it (its check, run on this route's module)."""
    src = tmp_path / f"fuzz_{seed}.c"
    src.write_text(fuzz_c.program(seed))
    for level in (1, 2, 3):
        text = clang_ir(src, level, ["--target=x86_64-pc-linux-gnu", "-fno-ident", "-ffp-contract=off"])
        monkeypatch.setattr(enzyme_plugin, "differentiate", functools.partial(differentiate_in_pipeline, level=level))
        kind, detail = fuzz_c._check(text, seed, f"-O{level}")
        assert kind == "right", detail
