"""Numba's decorator spellings, options and inspection methods, with Numba's meaning.

Each option is checked by what it does (results, errors, the IR read back),
not by being accepted; an option with no counterpart is a ConfigError that
says so; ``vectorize``/``guvectorize`` are compared with NumPy's own ufuncs.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pytest

import gpucompiler
from gpucompiler import guvectorize, jit, njit, prange, vectorize
from gpucompiler import types as T
from gpucompiler.errors import ConfigError


def twice(x):
    return 2 * x


def plus_one(x):
    return x + 1


def looped(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += plus_one(a[i])
    return s


def read_at(a, i):
    return a[i]


def ratio(a, b):
    return a / b


def psum(a):
    s = 0.0
    for i in prange(a.shape[0]):
        s += a[i]
    return s


def test_njit_and_nopython_are_jit():
    for f in (njit(twice), njit()(twice), jit(nopython=True)(twice), njit(cache=False, nogil=True)(twice)):
        assert f(21) == 42 and f(1.5) == 3.0
    assert "njit" in gpucompiler.__all__ and "vectorize" in gpucompiler.__all__


@pytest.mark.parametrize("options", [{"nopython": False}, {"forceobj": True}])
def test_object_mode_is_a_config_error(options):
    with pytest.raises(ConfigError, match="object mode does not exist"):
        jit(**options)(twice)


@pytest.mark.parametrize("name", ["locals", "looplift", "no_cpython_wrapper", "debug", "pipeline_class", "_nrt"])
def test_numba_options_without_counterpart(name):
    with pytest.raises(ConfigError, match=f"'{name}' has no counterpart here"):
        jit(**{name: True})(twice)


def test_unknown_option_and_inline_value():
    with pytest.raises(ConfigError, match="unknown jit option 'bogus'"):
        njit(bogus=1)(twice)
    with pytest.raises(ConfigError, match="inline must be 'never' or 'always'"):
        njit(inline="sometimes")(twice)


def always_callee(x):
    return x + 1


def never_callee(x):
    return x + 1


def test_inline_always_marks_the_callee():
    for policy, inner in (("always", always_callee), ("never", never_callee)):
        step = njit(inline=policy)(inner)

        def outer(a):
            s = 0.0
            for i in range(a.shape[0]):
                s += step(a[i])  # noqa: B023  (compiled at once, below)
            return s

        f = njit(outer)
        assert f(np.arange(4.0)) == 10.0
        ir = f.inspect_llvm(T.array(T.float64, 1), stage="post_irgen")
        defines = [line for line in ir.splitlines() if line.startswith("define") and inner.__name__ in line]
        assert defines, ir
        groups = {m for line in defines for m in line.split() if m.startswith("#")}
        marked = any("alwaysinline" in line for line in ir.splitlines()
                     if line.startswith("attributes") and line.split()[1] in groups)
        assert marked == (policy == "always") or "alwaysinline" in " ".join(defines), (policy, defines)


def test_boundscheck_and_error_model_keep_numbas_meaning():
    a = np.arange(3.0)
    with pytest.raises(IndexError):
        njit(boundscheck=True)(read_at)(a, 5)
    with pytest.raises(ZeroDivisionError):
        njit(error_model="python")(ratio)(1.0, 0.0)
    assert njit(error_model="numpy")(ratio)(1.0, 0.0) == math.inf


def test_fastmath_and_parallel():
    a = np.random.default_rng(1).random(10_000)
    assert njit(fastmath=True)(looped)(a) == pytest.approx(a.sum() + a.size, rel=1e-12)
    assert "fast" in njit(fastmath=True)(ratio).inspect_llvm(float, float)
    assert njit(parallel=True)(psum)(a) == pytest.approx(a.sum(), rel=1e-12)


def test_prange_from_numba_is_recognised(tmp_path, monkeypatch):
    pytest.importorskip("numba")
    (tmp_path / "uses_numba_prange.py").write_text(
        "import numba\nfrom numba import prange\nfrom gpucompiler import njit\n\n\n"
        "@njit(parallel=True)\ndef total(a):\n    s = 0.0\n    for i in prange(a.shape[0]):\n"
        "        s += a[i]\n    return s\n\n\n"
        "@njit(parallel=True)\ndef total2(a):\n    s = 0.0\n    for i in numba.prange(a.shape[0]):\n"
        "        s += a[i]\n    return s\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import uses_numba_prange as m

    a = np.arange(100_000.0)
    assert m.total(a) == m.total2(a) == a.sum()
    assert "prange" in m.total.inspect_ir(a) or "parallel" in m.total.inspect_llvm(a)


def test_inspection_as_numba_users_call_it():
    f = njit(looped)
    assert f.signatures == [] and f.inspect_llvm() == {}
    a = np.ones(5)
    assert f(a) == 10.0
    sig = (T.array(T.float64, 1),)
    assert f.signatures == [sig]
    by_sig = f.inspect_llvm()
    assert list(by_sig) == [sig] and "define" in by_sig[sig]
    assert f.inspect_llvm(a) == f.inspect_llvm(sig) == f.inspect_llvm(*sig) == f.inspect_llvm("(float64[::1])")
    assert "ret" in f.inspect_asm(a) and list(f.inspect_asm()) == [sig]
    buf = io.StringIO()
    assert f.inspect_types(file=buf) is None
    assert "looped" in buf.getvalue() and "float64" in buf.getvalue()
    g = njit(ratio)
    assert "fdiv" in g.inspect_llvm(float, np.float64)


def test_vectorize_matches_numpy():
    @vectorize(["int64(int64, int64)", "float64(float64, float64)"], identity=0)
    def add(x, y):
        return x + y

    a, b = np.arange(12.0).reshape(3, 4), np.arange(4.0)
    np.testing.assert_array_equal(add(a, b), np.add(a, b))
    assert add(np.arange(3), np.arange(3)).dtype == np.int64
    assert add(np.arange(3, dtype=np.int32), 1).dtype == np.int64  # the first safe loop, as NumPy picks
    assert add(np.arange(3), 1.5).dtype == np.float64
    assert add.types == ["ll->l", "dd->d"] and add.ntypes == 2 and add.nin == 2 and add.nout == 1
    assert isinstance(add(1.0, 2.0), np.float64) and add(1.0, 2.0) == 3.0
    out = np.zeros((3, 4))
    assert add(a, b, out=out) is out and np.array_equal(out, a + b)
    out32 = np.zeros((3, 4), np.float32)
    add(a, b, out=out32)
    np.testing.assert_array_equal(out32, (a + b).astype(np.float32))
    np.testing.assert_array_equal(add(a.T, b[:3]), a.T + b[:3])  # non-contiguous operands
    for axis in (0, 1, None):
        np.testing.assert_array_equal(add.reduce(a, axis=axis), np.add.reduce(a, axis=axis))
        if axis is not None:
            np.testing.assert_array_equal(add.accumulate(a, axis=axis), np.add.accumulate(a, axis=axis))
    assert add.reduce(np.zeros(0)) == 0.0
    np.testing.assert_array_equal(add.reduce(a, axis=1, keepdims=True), np.add.reduce(a, axis=1, keepdims=True))
    with pytest.raises(ConfigError, match="no loop"):
        add(np.ones(2, np.complex128), 1.0)
    with pytest.raises(ConfigError, match="where"):
        add(a, b, where=a > 1)
    assert not isinstance(add, np.ufunc)


def test_lazy_vectorize_compiles_per_dtype():
    @vectorize
    def hyp(x, y):
        return math.sqrt(x * x + y * y)

    x = np.random.default_rng(2).random((5, 6))
    np.testing.assert_allclose(hyp(x, x.T[:1].T), np.hypot(x, x.T[:1].T), rtol=1e-15)
    assert hyp(np.float32(3), np.float32(4)) == 5.0
    with pytest.raises(ValueError, match="zero-size"):
        hyp.reduce(np.zeros(0))


def test_guvectorize_matches_numpy():
    @guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(n)->()")
    def dot(x, y, res):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i] * y[i]
        res[0] = s

    m = np.random.default_rng(3).random((4, 5))
    np.testing.assert_allclose(dot(m, m), np.einsum("ij,ij->i", m, m), rtol=1e-14)
    np.testing.assert_allclose(dot(m, m[0]), m @ m[0], rtol=1e-14)  # the second input broadcasts
    out = np.empty(4)
    assert dot(m, m, out=out) is out
    np.testing.assert_allclose(out, np.einsum("ij,ij->i", m, m), rtol=1e-14)
    with pytest.raises(ValueError, match="core dimension"):
        dot(m, np.ones(3))
    with pytest.raises(ConfigError, match="layout"):
        guvectorize("(n)->(m)")(lambda x, r: None)


def test_cuda_target_without_a_gpu_is_a_config_error(cuda_available):
    if cuda_available:
        pytest.skip("a GPU is visible")
    with pytest.raises(ConfigError, match="target='cuda' needs a visible NVIDIA GPU"):
        vectorize(target="cuda")(twice)
    with pytest.raises(ConfigError, match="target must be one of"):
        vectorize(target="tpu")(twice)


@pytest.mark.gpu
def test_cuda_target_on_a_gpu(cuda_available):
    if not cuda_available:
        pytest.skip("no CUDA device visible")
    f = vectorize(target="cuda")(twice)
    np.testing.assert_array_equal(f(np.arange(1000.0)), 2 * np.arange(1000.0))


def test_inline_policy_is_part_of_the_callers_key():
    from gpucompiler.frontend.fingerprint import encode_value

    plain, inlined = njit(always_callee), njit(inline="always")(always_callee)
    assert encode_value(plain) == encode_value(njit(inline="never")(always_callee))
    assert encode_value(plain) != encode_value(inlined)


def test_signature_keyword_of_the_inspect_methods():
    f = njit(looped)
    a = np.ones(3)
    f(a)
    sig = f.signatures[0]
    assert f.inspect_llvm(signature=sig) == f.inspect_llvm(sig)
    assert "ret" in f.inspect_asm(signature=sig) and ":: float64" in f.inspect_ir(signature=sig)
    buf = io.StringIO()
    f.inspect_types(signature=sig, file=buf)
    assert "looped" in buf.getvalue()


def test_cuda_target_kernel_in_the_grid_emulation():
    """The kernel target='cuda' launches, run by the CPU grid emulation (the GPU run: the gpu test)."""
    from gpucompiler.ufunc import UFunc

    f = UFunc(twice, (), target="cuda")
    f._device = ("cpu",)
    x = np.arange(1000.0).reshape(10, 100)
    np.testing.assert_array_equal(f(x), 2 * x)
    assert f(np.float64(3.5)) == 7.0


def test_vectorize_broadcasting_patterns_and_ieee_division():
    @vectorize
    def div(x, y):
        return x / y

    rng = np.random.default_rng(4)
    for sa, sb in [((3, 1, 4), (1, 5, 1)), ((4,), (2, 3, 4)), ((2, 1), ()), ((), ()), ((1,), (6,))]:
        a, b = rng.random(sa) + 0.5, rng.random(sb) + 0.5
        np.testing.assert_array_equal(div(a, b), np.divide(a, b))
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.divide(np.array([1.0, -1.0, 0.0]), 0.0)
    got = div(np.array([1.0, -1.0, 0.0]), 0.0)  # a ufunc gives IEEE results, as NumPy's (no ZeroDivisionError)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(div(np.arange(6.0).reshape(2, 3).T, 2.0), np.arange(6.0).reshape(2, 3).T / 2)
