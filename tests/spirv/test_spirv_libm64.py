"""float64 exp, log, log2, log10, sin, cos, tan on Vulkan (GLSL.std.450 has none): the kernel-language
implementations of ``gpucompiler.targets.spirv.libm64`` against NumPy, in ulps, over wide ranges and at
the special values; their derivatives inside a kernel against the exact ones."""

from __future__ import annotations

import math

import numpy as np
import pytest

import spirv_kernels as K
from enzyme_plugin import Active, Const, Reverse, autodiff
from gpucompiler import device as gd, kernel
from gpucompiler.runtime import vulkan

FUNCTIONS = [("exp", np.exp, 2), ("log", np.log, 2), ("log2", np.log2, 2), ("log10", np.log10, 2),
             ("sin", np.sin, 3), ("cos", np.cos, 3), ("tan", np.tan, 4)]
rng = np.random.default_rng(64)


def run_all(x: np.ndarray) -> np.ndarray:
    out = np.zeros((7, len(x)))
    vulkan.launch(K.float64_math, (len(x) + 63) // 64, 64, (out, x))
    return out


def ulps(got: np.ndarray, want: np.ndarray) -> float:
    """The largest distance in units in the last place of ``want`` (equal infinities and NaNs: 0)."""
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    err = np.abs(got - want) / np.spacing(np.abs(want))
    return float(np.max(np.where(same, 0.0, err), initial=0.0))


def test_wide_ranges_within_a_few_ulp(vulkan_device):
    x = np.concatenate([rng.uniform(-745, 709.7, 4000), rng.uniform(-1, 1, 2000), np.exp(rng.uniform(-740, 709, 4000)),
                        rng.uniform(-1e8, 1e8, 2000), rng.uniform(-1e-6, 1e-6, 500), [5e-324, 2.2e-308, 1e-310]])
    out = run_all(x)
    for row, (name, ref, bound) in enumerate(FUNCTIONS):
        with np.errstate(all="ignore"):
            want = ref(x)
        domain = x > 0 if name.startswith("log") else np.abs(x) <= 1e8 if name in ("sin", "cos", "tan") else x == x
        assert ulps(out[row][domain], want[domain]) <= bound, name


def test_special_values(vulkan_device):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, 1.0, 709.79, -745.2, 2.0 ** -1074, 1024.0])
    out = run_all(x)
    with np.errstate(all="ignore"):
        for row, (name, ref, bound) in enumerate(FUNCTIONS):
            want = ref(x)
            if name in ("sin", "cos", "tan"):
                want[np.isinf(x)] = np.nan
            special = ~np.isfinite(want) | (want == 0)  # NaN, infinities and zeros exactly
            np.testing.assert_array_equal(out[row][special], want[special], err_msg=name)
            assert ulps(out[row], want) <= bound, name


MORE = [("expm1", np.expm1, 2), ("log1p", np.log1p, 2), ("tanh", np.tanh, 3), ("sinh", np.sinh, 4),
        ("cosh", np.cosh, 4), ("atan", np.arctan, 2), ("asin", np.arcsin, 3), ("acos", np.arccos, 2)]


def run_more(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.zeros((9, len(x)))
    vulkan.launch(K.float64_math_more, (len(x) + 63) // 64, 64, (out, x, y))
    return out


def test_more_functions_within_a_few_ulp(vulkan_device):
    x = np.concatenate([rng.uniform(-30, 30, 3000), rng.uniform(-1, 1, 3000), rng.uniform(-1e-6, 1e-6, 300),
                        rng.uniform(-700, 700, 1000), [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 710.4, -0.999]])
    y = rng.standard_normal(len(x)) * np.exp(rng.uniform(-5, 5, len(x)))
    out = run_more(x, y)
    with np.errstate(all="ignore"):
        for row, (name, ref, bound) in enumerate(MORE):
            want = ref(x)
            assert ulps(out[row], want) <= bound, name
            zero = want == 0  # signed zeros kept
            np.testing.assert_array_equal(np.signbit(out[row][zero]), np.signbit(want[zero]), err_msg=name)
        assert ulps(out[8], np.arctan2(y, x)) <= 3


def test_atan2_special_values(vulkan_device):
    special = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-300, 3.0]
    ys, xs = (a.ravel() for a in np.meshgrid(special, special))
    out = run_more(xs, ys)[8]
    want = np.arctan2(ys, xs)
    assert ulps(out, want) <= 1
    np.testing.assert_array_equal(np.signbit(out[want == 0]), np.signbit(want[want == 0]))


def test_past_cody_waite_trig_reduces_and_infinities_are_nan(vulkan_device):
    x = np.array([2.0e8, -1e300, np.inf, -np.inf])
    out = run_all(x)
    for row, ref in ((4, np.sin), (5, np.cos), (6, np.tan)):
        assert ulps(out[row][:2], ref(x[:2])) <= 3
    assert np.isnan(out[4:, 2:]).all()


def scalar_law(v, a):
    return math.exp(a * v) + math.log(1.0 + v * v) + math.sin(v) * math.cos(2.0 * v)


@kernel(plugins=("enzyme",))
def float64_derivative(xs, out, a):
    i = gd.grid(1)
    if i < xs.shape[0]:
        out[i] = autodiff(Reverse, scalar_law, Active(xs[i]), Const(a))[0]


def test_float64_gradient_through_the_implementations(vulkan_device):
    x = rng.uniform(-2, 2, 256)
    out = np.zeros_like(x)
    vulkan.launch(float64_derivative, 4, 64, (x, out, 0.3))
    exact = (0.3 * np.exp(0.3 * x) + 2 * x / (1 + x * x)
             + np.cos(x) * np.cos(2 * x) - 2 * np.sin(x) * np.sin(2 * x))
    np.testing.assert_allclose(out, exact, rtol=1e-13, atol=1e-13)
    emulated = np.zeros_like(x)
    float64_derivative[4, 64, "cpu"](x, emulated, 0.3)
    np.testing.assert_allclose(out, emulated, rtol=1e-13, atol=1e-13)


def scalar_law2(v, a):
    return math.tanh(v) + math.atan(a * v) + math.expm1(0.5 * v) + math.log1p(v * v) + math.cosh(v)


@kernel(plugins=("enzyme",))
def float64_derivative2(xs, out, a):
    i = gd.grid(1)
    if i < xs.shape[0]:
        out[i] = autodiff(Reverse, scalar_law2, Active(xs[i]), Const(a))[0]


def test_float64_gradient_through_tanh_atan_expm1_log1p_cosh(vulkan_device):
    x = rng.uniform(-2, 2, 256)
    out = np.zeros_like(x)
    vulkan.launch(float64_derivative2, 4, 64, (x, out, 0.7))
    exact = (1 - np.tanh(x) ** 2 + 0.7 / (1 + (0.7 * x) ** 2) + 0.5 * np.exp(0.5 * x) + 2 * x / (1 + x * x)
             + np.sinh(x))
    np.testing.assert_allclose(out, exact, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("name", ["exp", "log", "sin"])
def test_float32_stays_in_glsl(name):
    """float32 calls keep GLSL.std.450 (one instruction), float64 calls the implementation."""
    from gpucompiler.targets.spirv import SPIRVTarget

    x32, x64 = np.zeros(4, np.float32), np.zeros(4)
    text32 = K.sines.inspect_llvm(x32, x32, target=SPIRVTarget())
    text64 = K.sines.inspect_llvm(x64, x64, target=SPIRVTarget())
    assert "llvm.sin.f32" in text32 and "llvm.sin.f64" not in text64 and "@llvm.sin" not in text64
    assert name
