"""``x ** n`` (small constant ``n``) at the edges of the float range, against CPython and NumPy.

The multiplied powers (powers.py) are exact only while ``|x| ** |n|`` stays
inside the normal range; near the overflow, the smallest normals and the
subnormals the result must still be CPython's (its ``pow``): the same value,
or the same exception type (values within an ulp, as powers.py says).
Each sweep walks 60 neighbouring floats (both
signs) around ``x ** n == 2**k`` for the edges ``k``. Before the cold path to
``pow``, ``x ** -2`` was 4 ulp off near ``2**1024``, ``x ** 3`` one ulp off
at ``2**-1022`` and ``x ** -8`` 0.0 for a subnormal result.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from gpucompiler import device as gd
from gpucompiler import jit, kernel
from gpucompiler.errors import GPUCompilerError
from gpucompiler.targets import PTXTarget

EDGES = (1024, 1000, 969, -969, -1000, -1022, -1060, -1074)
EXPONENTS = (-8, -5, -3, -2, -1, 2, 3, 4, 5, 7, 8)
EXACT = (-3, -2, -1, 2, 3, 4)
"""powers correctly rounded here (glibc's pow, CPython's, is within 0.52 ulp: an ulp off at times);
the others are within an ulp of CPython's"""


def _around(t: float, width: int = 30) -> list[float]:
    x = t
    for _ in range(width):
        x = math.nextafter(x, 0.0)
    out = []
    for _ in range(2 * width):
        out += [x, -x]
        x = math.nextafter(x, math.inf)
    return out


def _sweep(n: int) -> list[float]:
    xs = []
    for k in EDGES:
        if abs(k / n) < 1023:
            xs += _around(2.0 ** (k / n))
    return xs + [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, 1.7976931348623157e308]


def _compiled(n: int, tmp_path, **options):
    path = tmp_path / f"edge_{'m' if n < 0 else ''}{abs(n)}.py"
    path.write_text(f"def p(x):\n    return x ** {n}\n\n\ndef pf(x):\n    return x ** {float(n)}\n")
    scope: dict = {"__name__": path.stem, "__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), scope)
    return scope["p"], jit(**options)(scope["p"]), jit(**options)(scope["pf"])


def _outcome(f, x):
    try:
        return "value", f(x)
    except ArithmeticError as exc:
        return "raises", type(exc)


def _agree(got, want, x, n) -> bool:
    """The same exception, or values within an ulp of each other (bit for bit where CPython's is
    the exactly rounded power), the exponents in ``EXACT`` exactly rounded."""
    if got[0] != want[0] or got[0] == "raises":
        return got == want
    g, w = got[1], want[1]
    if math.isnan(w) or math.isnan(g):
        return math.isnan(g) and math.isnan(w)
    if g == w:
        return math.copysign(1.0, g) == math.copysign(1.0, w)
    if not (math.isfinite(w) and abs(g - w) <= math.ulp(w)):
        return False
    return n not in EXACT or g == float(Fraction(x) ** n)  # glibc's pow is within 0.52 ulp, ours exact


@pytest.mark.parametrize("n", EXPONENTS)
def test_edges_as_cpython(n, tmp_path):
    fn, f, ff = _compiled(n, tmp_path)
    bad = []
    for x in _sweep(n):
        want = _outcome(fn, x)
        for g in (f, ff):
            got = _outcome(g, x)
            if not _agree(got, want, x, n):
                bad.append((x, got, want))
    assert not bad, bad[:5]


@pytest.mark.parametrize("n", EXPONENTS)
def test_edges_as_numpy_under_its_error_model(n, tmp_path):
    _, f, _ = _compiled(n, tmp_path, error_model="numpy")
    bad = []
    with np.errstate(all="ignore"):
        for x in _sweep(n):
            want = ("value", float(np.float64(x) ** np.float64(n)))
            got = _outcome(f, x)
            if not _agree(got, want, x, n):
                bad.append((x, got, want))
    assert not bad, bad[:5]


def squares_of_cubes(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] ** 3


def test_in_a_loop_the_error_comes_at_its_element(tmp_path):
    """The stores before the overflowing element are done, none after (CPython's order)."""
    a = np.array([2.0, 1e-110, -0.0, 3.0, 1e103, 4.0])
    out = np.zeros(a.size)
    with pytest.raises(OverflowError):
        jit(squares_of_cubes)(a, out)
    np.testing.assert_array_equal(out, [8.0, 1e-110 ** 3, 0.0, 27.0, 0.0, 0.0])
    assert math.copysign(1.0, out[2]) == -1.0


@pytest.mark.parametrize("n", (-8, -3, -2, 3, 4, 8))
def test_float32_edges_within_an_ulp_of_numpy(n, tmp_path):
    """float32 powers have their own range (powers.SAFE): NumPy's float32 power, within an ulp."""
    _, f, _ = _compiled(n, tmp_path, error_model="numpy")
    bad = []
    with np.errstate(all="ignore"):
        for k in (128, 100, -100, -126, -140, -149):
            if abs(k / n) >= 127:
                continue
            x = np.float32(2.0 ** (k / n))
            for _ in range(20):
                x = np.nextafter(x, np.float32(0.0))
            for _ in range(40):
                want, got = np.float32(x) ** np.float32(n), f(x)
                ok = (np.isnan(want) and np.isnan(got)) or want == got or (
                    np.isfinite(want) and abs(np.float32(got) - want) <= np.spacing(np.abs(want)))
                if not ok:
                    bad.append((float(x), got, want))
                x = np.nextafter(x, np.float32(np.inf))
    assert not bad, bad[:5]


@kernel
def powers_kernel(x, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = x[i] ** 3 + x[i] ** -2 + x[i] ** 8 + x[i] ** 2.5


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_cold_pow_path_in_a_gpu_kernel_assembles(dtype, check_ptx):
    """x ** 2.5 calls libdevice's pow on NVPTX (which cannot lower llvm.pow: LLVM aborted the process
    before), the small powers none: the PTX is accepted by ptxas."""
    x = np.zeros(4, dtype)
    ptx = powers_kernel.inspect_asm(x, x.copy(), target=PTXTarget(capability=(9, 0)))
    check_ptx(ptx, arch="sm_90")


def power_energy(x, w, i):
    return w[0] * x[i] ** 3 + x[i] ** -2 + x[i] ** 2.5


def power_gradient_kernel(x, dx, w, dw):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, power_energy, Duplicated(x, dx), Duplicated(w, dw), Const(i))


def test_powers_differentiated_inside_a_kernel(check_ptx):
    """The range test is float comparisons where the AD engine may differentiate (an active float's
    bits as an integer are refused): PTX through ptxas, and the CPU grid's gradient exact."""
    k = kernel(power_gradient_kernel, plugins=("enzyme",))
    check_ptx(k.inspect_asm(np.ones(256), np.ones(256), np.ones(1), np.ones(1)))
    x, dx, w, dw = np.linspace(0.5, 2.0, 256), np.zeros(256), np.array([0.7]), np.zeros(1)
    k[2, 128, "cpu"](x, dx, w, dw)  # pyright: ignore[reportIndexIssue]
    np.testing.assert_allclose(dx, 3 * 0.7 * x ** 2 - 2 * x ** -3 + 2.5 * x ** 1.5, rtol=1e-12)
    np.testing.assert_allclose(dw, [np.sum(x ** 3)], rtol=1e-12)


@kernel
def float64_powers_kernel(x, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = x[i] ** 3 + x[i] ** -2 + x[i] ** 8


def test_small_float64_powers_run_on_vulkan():
    """Vulkan has no float64 pow: the small powers call none on a GPU (the products everywhere)."""
    from gpucompiler.runtime import vulkan

    try:
        vulkan.device()
    except GPUCompilerError as exc:
        pytest.skip(f"no Vulkan device: {exc}")
    x = np.concatenate([np.linspace(0.5, 2.0, 126), [0.0, -0.0]])
    out = np.zeros(x.size)
    with np.errstate(divide="ignore"):
        want = x ** 3 + x ** -2.0 + x ** 8
        vulkan.launch(float64_powers_kernel, 2, 64, (x, out))
    np.testing.assert_allclose(out, want, rtol=4e-16)
