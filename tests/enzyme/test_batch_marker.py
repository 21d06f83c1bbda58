"""``__enzyme_batch`` from C (c/batch.c): the primal over N lanes, each result against NumPy, at -O0..-O3,
before and after clang's optimiser, with debug info (the lanes' calls carry the marker's location);
malformed batch calls are ADErrors naming the call (was: the call stayed, an undefined symbol)."""

from __future__ import annotations

import ctypes
import functools
import subprocess
import sys

import numpy as np
import pytest

import enzyme_plugin
from clang_levels import LEVELS, clang, compile_c, needs_clang
from enzyme_plugin.cpipeline import differentiate_in_pipeline
from gpucompiler.runtime import CPULibrary

pytestmark = needs_clang

P, D = ctypes.c_void_p, ctypes.c_double
X = np.array([0.5, -1.5, 2.0, 3.0])
A = np.array([1.0, 2.0, -1.0, 0.5])
PREOPT = ("-Xclang", "-disable-llvm-optzns")


def poly(x, a):
    return a * x * x + 3.0 * x


@functools.cache
def _lib(level: str, pre_opt: bool):
    text = compile_c("batch.c", level, True, PREOPT if pre_opt and level != "O0" else ())
    return CPULibrary.from_ir(differentiate_in_pipeline(text, int(level[1])) if pre_opt
                              else enzyme_plugin.differentiate(text))


ROUTES = [(level, False) for level in LEVELS] + [(level, True) for level in ("O1", "O2", "O3")]


@pytest.mark.parametrize(("level", "pre_opt"), ROUTES)
def test_batch_results_match_numpy(level, pre_opt):
    lib = _lib(level, pre_opt)
    out = np.full(4, np.nan)
    lib.function("batch_two", None, P, D, P)(X.ctypes.data, 2.5, out.ctypes.data)
    np.testing.assert_allclose(out[:2], poly(X[:2], 2.5), rtol=1e-15)
    lib.function("batch_vec", None, P, D, P)(X.ctypes.data, -0.5, out.ctypes.data)
    np.testing.assert_allclose(out[:2], poly(X[:2], -0.5), rtol=1e-15)
    lib.function("batch_four", None, P, P, P)(X.ctypes.data, A.ctypes.data, out.ctypes.data)
    np.testing.assert_allclose(out, poly(X, A), rtol=1e-15)
    out[:] = np.nan
    lib.function("batch_ptrs", None, P, P)(X.ctypes.data, out.ctypes.data)
    np.testing.assert_allclose(out[:3], X[:3] ** 2 + 1.0, rtol=1e-15)
    assert np.isnan(out[3])  # three lanes: the fourth element untouched


@pytest.mark.parametrize(("level", "pre_opt"), ROUTES)
def test_gradient_through_a_batch_call(level, pre_opt):
    grad = _lib(level, pre_opt).function("batched_sum_grad", D, D)
    for x in (0.7, -1.1):
        # d/dx [poly(x, 2) + poly(2x, 2)] = (4x + 3) + 2 (8x + 3)
        assert grad(x) == pytest.approx(4 * x + 3 + 2 * (8 * x + 3), rel=1e-14)


BAD = {
    "no_width": ("__enzyme_batch_two((void *)poly, enzyme_vector, x, x, enzyme_scalar, 1.0)", "enzyme_width, N"),
    "unmarked_short": ("__enzyme_batch_two((void *)poly, enzyme_width, 2, x, x, enzyme_scalar)", "enzyme_scalar"),
    "marker_short": ("__enzyme_batch_two((void *)poly, enzyme_width, 2, x)", "too few values"),
    "too_few": ("__enzyme_batch_two((void *)poly, enzyme_width, 2, enzyme_vector, x, x, enzyme_vector, 1.0)",
                "too few values"),
    "too_many": ("__enzyme_batch_two((void *)poly, enzyme_width, 2, enzyme_vector, x, x, enzyme_scalar, 1.0, x)",
                 "too many"),
    "wrong_return": ("__enzyme_batch_one((void *)poly, enzyme_width, 2, enzyme_vector, x, x, enzyme_scalar, 1.0)",
                     "2 results of type double"),
}


PROLOGUE = ("int enzyme_width, enzyme_vector, enzyme_scalar;\n"
            "double poly(double x, double a) { return a * x * x; }\n"
            "typedef struct { double a, b; } two;\n"
            "two __enzyme_batch_two(void *, ...);\n"
            "double __enzyme_batch_one(void *, ...);\n")


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_batch_calls_are_errors_naming_the_line(case, tmp_path):
    call, message = BAD[case]
    src = tmp_path / "bad.c"
    src.write_text(PROLOGUE + f"void use(double x, void *out) {{\n  *(__typeof__({call}) *)out = {call};\n}}\n")
    cc = clang()
    assert cc is not None
    proc = subprocess.run([cc, "-O2", "-g", "-S", "-emit-llvm", str(src), "-o", "-"], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    with pytest.raises(enzyme_plugin.ADError) as info:
        enzyme_plugin.differentiate(proc.stdout)
    text = str(info.value)
    assert message in text and "bad.c:7" in text, text


def test_batch_through_the_compile_pipeline(tmp_path):
    """``gpuc enzyme --target native``: the plugin's ``ad`` stage lowers the batch calls too (was: ADError
    "no derivative rule for call to '__enzyme_batch_two'" in the differentiated @batched_sum)."""
    ir = tmp_path / "batch.ll"
    ir.write_text(compile_c("batch.c", "O2", True))
    out = tmp_path / "batch.s"
    proc = subprocess.run([sys.executable, "-m", "gpucompiler", "enzyme", str(ir), "--target", "native", "-o",
                           str(out)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    asm = out.read_text()
    assert "batched_sum" in asm and "__enzyme_" not in asm


def test_unmarked_arguments_take_one_value_per_lane(tmp_path):
    """An argument without enzyme_vector or enzyme_scalar is a vector (Enzyme's default): N values."""
    src = tmp_path / "unmarked.c"
    src.write_text(PROLOGUE + "void use(double x, double y, double *out) {\n"
                   "  two t = __enzyme_batch_two((void *)poly, enzyme_width, 2, x, y, 3.0, -1.0);\n"
                   "  out[0] = t.a; out[1] = t.b;\n}\n")
    cc = clang()
    assert cc is not None
    text = subprocess.run([cc, "-O2", "-S", "-emit-llvm", str(src), "-o", "-"], capture_output=True, text=True,
                          check=True).stdout
    use = CPULibrary.from_ir(enzyme_plugin.differentiate(text)).function("use", None, D, D, P)
    out = np.zeros(2)
    use(1.5, 2.0, out.ctypes.data)
    np.testing.assert_array_equal(out, [3.0 * 1.5 * 1.5, -1.0 * 2.0 * 2.0])
