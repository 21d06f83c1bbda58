"""AD at Enzyme's place in LLVM's pipeline (enzyme_plugin.cpipeline, ``gpuc cc``, ``gpuc enzyme --pre-opt``):
clang's IR at -O0..-O3 with no pass run, early simplification, AD, then the level's pipeline. Registered
rules of functions clang would inline apply (the same sources on clang's optimised IR are refused), and
gradients through globals and loops match finite differences."""

from __future__ import annotations

import ctypes
import functools
import math
import re
import subprocess
import sys

import numpy as np
import pytest

import enzyme_plugin
from clang_levels import C_DIR, LEVELS, central_difference, compile_c, needs_clang, scalar
from enzyme_plugin.cc import clang_ir
from enzyme_plugin.cpipeline import differentiate_in_pipeline, looks_unoptimised
from gpucompiler.runtime import CPULibrary

pytestmark = needs_clang

PREOPT_LEVELS = (0, 1, 2, 3)
POINTS = (0.7, -1.3, 2.1)


@functools.cache
def _lib(source: str, level: int, extra: tuple[str, ...] = ()):
    text = clang_ir(C_DIR / source, level, [f"-I{C_DIR}", "--target=x86_64-pc-linux-gnu", "-ffp-contract=off",
                                            *extra])
    assert looks_unoptimised(text)
    return CPULibrary.from_ir(differentiate_in_pipeline(text, level))


@pytest.mark.parametrize("level", PREOPT_LEVELS)
def test_rules_of_functions_clang_inlines_apply_in_both_modes(level):
    lib = _lib("pipeline.c", level)
    for mode in ("fwd", "grad"):
        got, want = scalar(lib, f"with_rules_{mode}"), scalar(lib, f"with_rules_want_{mode}")
        for x in POINTS:
            assert math.isclose(got(x), want(x), rel_tol=1e-13), (mode, level, x)


@pytest.mark.parametrize("level", ["O1", "O2", "O3"])
def test_the_same_source_on_optimised_ir_is_still_refused(level):
    with pytest.raises(enzyme_plugin.ADError, match="registered derivative rule"):
        enzyme_plugin.differentiate(compile_c("pipeline.c", level))


@pytest.mark.parametrize("level", PREOPT_LEVELS)
def test_loop_over_globals_matches_finite_differences(level):
    lib = _lib("pipeline.c", level)
    f = scalar(lib, "smooth")
    for x in POINTS:
        fd = central_difference(f, x)
        for name in ("smooth_grad", "smooth_fwd"):
            assert math.isclose(scalar(lib, name)(x), fd, rel_tol=1e-6, abs_tol=1e-9), (name, level, x)


@pytest.mark.parametrize("level", PREOPT_LEVELS)
def test_reverse_through_memory_matches_the_exact_gradient(level):
    lib = _lib("pipeline.c", level)
    grad = lib.function("energy_grad", None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)
    x = np.array([0.3, -1.2, 2.0, 0.9, -0.4, 1.1])
    dx = np.ones_like(x)  # the gradient is added to what is there
    grad(x.ctypes.data, dx.ctypes.data, len(x))
    table = np.array([1.0, -2.0, 0.5, 3.0])[np.arange(len(x)) % 4]
    np.testing.assert_allclose(dx, 1.0 + 2 * x * table + 1.5 * (2 * x + 2.0), rtol=1e-14)


@pytest.mark.parametrize("case", [1, 2, 3])
@pytest.mark.parametrize("level", [1, 2, 3])
def test_inlined_rule_cases_apply_through_the_pipeline(case, level):
    """c/inlined_rules.c: refused on optimised IR at -O1..-O3 (tests/enzyme/test_inlined_rules.py), the rule's
    derivative through the pipeline."""
    lib = _lib("inlined_rules.c", level, (f"-DCASE={case}",))
    for x in (0.3, 1.7):
        assert math.isclose(scalar(lib, "rule_deriv")(x), scalar(lib, "rule_want")(x), rel_tol=1e-12)


def test_optimised_ir_is_not_taken_for_pre_opt_ir():
    for level in LEVELS:
        text = compile_c("pipeline.c", level)
        assert looks_unoptimised(text) == (level == "O0"), level  # -O0 -disable-O0-optnone: nothing ran


def test_gpuc_cc_writes_differentiated_ir_in_one_command(tmp_path):
    out = tmp_path / "p.ll"
    proc = subprocess.run([sys.executable, "-m", "gpucompiler", "cc", "-O3", str(C_DIR / "pipeline.c"),
                           "-I", str(C_DIR), "-o", str(out)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert not re.search(r"@__enzyme_\w*\(", text)  # the registration globals stay, as data
    lib = CPULibrary.from_ir(text)
    assert math.isclose(scalar(lib, "with_rules_grad")(0.7), scalar(lib, "with_rules_want_grad")(0.7))


def test_gpuc_cc_reports_clang_errors(tmp_path):
    bad = tmp_path / "bad.c"
    bad.write_text("double f(double x) { return x +; }\n")
    proc = subprocess.run([sys.executable, "-m", "gpucompiler", "cc", str(bad)], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 1 and "clang could not compile" in proc.stderr and "bad.c:1" in proc.stderr


def test_gpuc_enzyme_pre_opt_flag_and_detection_agree(tmp_path):
    ir = tmp_path / "p.ll"
    ir.write_text(clang_ir(C_DIR / "pipeline.c", 2, [f"-I{C_DIR}"]))
    outs = []
    for flags in ([], ["--pre-opt"]):
        out = tmp_path / f"out{len(outs)}.ll"
        proc = subprocess.run([sys.executable, "-m", "gpucompiler", "enzyme", str(ir), *flags, "-o", str(out)],
                              capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
        outs.append(out.read_text())
    assert outs[0] == outs[1]
    proc = subprocess.run([sys.executable, "-m", "gpucompiler", "enzyme", str(ir), "--optimised"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr  # this source also differentiates on the old route


CUDA = C_DIR.parent / "cuda"
CUDA_DEVICE = ["--cuda-device-only", "-nocudainc", "-nocudalib", "--cuda-gpu-arch=sm_90", "-Wno-unknown-cuda-version"]


def test_gpuc_cc_differentiates_cuda_device_code_that_ptxas_assembles(tmp_path, ptxas_path):
    """cuda/guide.cu's device code through ``gpuc cc``, then compiled for sm_90 (its markers live in
    addrspace(1)); the same body for the host gives the exact gradient."""
    flags = [f"--clang-flag={f}" for f in CUDA_DEVICE]
    proc = subprocess.run([sys.executable, "-m", "gpucompiler", "cc", "-O2", str(CUDA / "guide.cu"), *flags, "-o",
                           str(tmp_path / "guide.ll")], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert not re.search(r"@__enzyme_\w*\(", (tmp_path / "guide.ll").read_text())
    proc = subprocess.run([sys.executable, "-m", "gpucompiler", "enzyme", str(tmp_path / "guide.ll"), "--target",
                           "ptx:sm_90", "-o", str(tmp_path / "guide.ptx")], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert ".visible .entry dcube(" in (tmp_path / "guide.ptx").read_text()
    proc = subprocess.run([ptxas_path, "-arch=sm_90", "guide.ptx", "-o", "guide.cubin"], cwd=tmp_path,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    host = clang_ir(CUDA / "guide.cu", 2, ["-x", "c++", "--target=x86_64-pc-linux-gnu"])
    lib = CPULibrary.from_ir(differentiate_in_pipeline(host, 2))
    p = ctypes.POINTER(ctypes.c_double)
    n = 50
    x, dx, y, dy = np.linspace(-2.0, 2.0, n), np.zeros(n), np.zeros(n), np.linspace(0.5, 1.5, n)
    seed = dy.copy()
    lib.function("dcube_host", None, p, p, p, p, ctypes.c_int)(*(a.ctypes.data_as(p) for a in (x, dx, y, dy)), n)
    np.testing.assert_allclose(dx, seed * (3 * x * x + 2), rtol=1e-14)


@pytest.mark.parametrize("pre_opt", [True, False], ids=["pre-opt", "optimised"])
def test_gpuc_enzyme_target_keeps_rules_of_ir_no_pass_ran_on(pre_opt, tmp_path):
    """``gpuc enzyme --target native`` (the compile pipeline with the plugin): on IR no pass ran on, the
    rules' functions stay out of line through its optimize stage and the rules apply (was: the ADError
    saying to give it such IR); clang's optimised IR, where clang inlined them, is still refused."""
    ir = tmp_path / "p.ll"
    ir.write_text(compile_c("pipeline.c", "O2", False, ("-Xclang", "-disable-llvm-optzns") if pre_opt else ()))
    out = tmp_path / "p.out.ll"
    proc = subprocess.run([sys.executable, "-m", "gpucompiler", "enzyme", str(ir), "--target", "native", "--emit",
                           "llvm", "-o", str(out)], capture_output=True, text=True, check=False)
    if not pre_opt:
        assert proc.returncode == 1 and "registered derivative rule" in proc.stderr, proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    lib = CPULibrary.from_ir(out.read_text())
    for mode in ("fwd", "grad"):
        for x in POINTS:
            assert math.isclose(scalar(lib, f"with_rules_{mode}")(x), scalar(lib, f"with_rules_want_{mode}")(x),
                                rel_tol=1e-13), (mode, x)


@pytest.mark.parametrize("debug", [False, True], ids=["g0", "g"])
@pytest.mark.parametrize("level", ["O1", "O2", "O3"])
def test_pre_opt_forced_on_optimised_ir_refuses_the_inlined_rule(level, debug):
    """Optimised IR given to the pipeline route (``gpuc enzyme --pre-opt`` on clang -O2 output): the rules'
    functions clang inlined already are refused, not hidden behind noinline (was: the inlined bodies'
    derivatives, 24.075 where the rules give 63.675 and 30.4)."""
    with pytest.raises(enzyme_plugin.ADError, match="registered derivative rule"):
        differentiate_in_pipeline(compile_c("pipeline.c", level, debug), int(level[1]))
