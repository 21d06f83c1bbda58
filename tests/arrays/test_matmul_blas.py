"""``a @ b``, ``np.matmul`` and ``np.dot`` of float32/float64 matrices and vectors call NumPy's OpenBLAS on the host:
results against NumPy within rounding for every layout BLAS reads in place and those it cannot
(copied first), empty extents, the symbols named (not addresses) in the IR and resolved in a fresh
process from the cache, and gradients through the product (the loops in differentiated code)."""

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from enzyme_plugin import Const, Duplicated, Forward, Reverse, autodiff
from gpucompiler import jit
from gpucompiler.targets import hostblas


@jit
def mm(a, b):
    return a @ b


@jit
def dot(a, b):
    return np.dot(a, b)


@jit
def matmul(a, b):
    return np.matmul(a, b)


RNG = np.random.default_rng(7)
A = RNG.standard_normal((9, 12))


def _close(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 1e-5 if want.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.abs(want).max(initial=0.0))))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,k,p", [(3, 4, 5), (1, 1, 1), (17, 33, 9), (64, 3, 70)])
@pytest.mark.parametrize("order_a,order_b", [("C", "C"), ("F", "C"), ("C", "F"), ("F", "F")])
def test_matrix_products_of_every_order_match_numpy(dtype, n, k, p, order_a, order_b):
    a = np.asarray(RNG.standard_normal((n, k)), dtype=dtype, order=order_a)
    b = np.asarray(RNG.standard_normal((k, p)), dtype=dtype, order=order_b)
    _close(mm(a, b), a @ b)
    _close(dot(a, b), np.dot(a, b))
    _close(matmul(a, b), np.matmul(a, b))


VIEWS = [
    (lambda: A[::2, 1::3], lambda: A[:4, ::3]),        # strides across both axes: copied
    (lambda: A.T, lambda: A),                          # a transposed view: read in place
    (lambda: A[:, ::-1], lambda: A.T[::-1]),           # negative strides: copied
    (lambda: A[2:5, 3:7], lambda: A[1:5, 2:4]),        # row blocks with a leading dimension > width
    (lambda: np.broadcast_to(A[0], (4, 12)), lambda: A.T),  # a zero stride: copied
]


@pytest.mark.parametrize("views", VIEWS)
def test_products_of_views_match_numpy(views):
    a, b = views[0](), views[1]()
    _close(mm(a, b), a @ b)


def test_matrix_vector_products_of_views_match_numpy():
    for a, x in ((A, A[0]), (A.T, A[:, 1]), (A[::2], A[1, ::-1]), (A[:, ::2], A[3, ::2])):
        _close(mm(a, x), a @ x)
        y = np.ascontiguousarray(a[:, 0])
        _close(mm(y, a), y @ a)
        _close(dot(y[::-1], a[::-1]), np.dot(y[::-1], a[::-1]))


def test_mixed_precisions_and_expressions_match_numpy():
    a32 = A.astype(np.float32)
    _close(mm(a32, A.T), a32 @ A.T)            # float32 @ float64 is float64: a32 converted
    _close(jit(lambda a, b: (a + 1.0) @ (2.0 * b))(A, A.T), (A + 1.0) @ (2.0 * A.T))


@pytest.mark.parametrize("n,k,p", [(0, 3, 4), (3, 0, 4), (3, 4, 0), (0, 0, 0)])
def test_empty_extents_give_numpys_zeros(n, k, p):
    a, b = np.ones((n, k)), np.ones((k, p))
    _close(mm(a, b), a @ b)
    _close(mm(a, np.ones(k)), a @ np.ones(k))
    _close(mm(np.ones(k), b), np.ones(k) @ b)


def test_integer_products_keep_numpys_exact_results():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    got = mm(a, a.T)
    assert got.dtype == np.int64 and (got == a @ a.T).all()
    assert (matmul(a, a[0]) == np.matmul(a, a[0])).all()


def test_np_matmul_of_unaligned_shapes_is_numpys_value_error():
    with pytest.raises(ValueError, match="matmul: Input operand 1 has a mismatch in its core dimension 0"):
        matmul(np.ones((2, 3)), np.ones((2, 3)))


def test_the_ir_names_the_blas_symbols_and_holds_no_address():
    text = mm.inspect_llvm(A, A.T)
    assert "@scipy_cblas_dgemm64_(" in text
    assert not re.search(r"inttoptr \(i64 \d", text) and not re.search(r"i64 \d{9,}", text)  # no address
    assert "@scipy_cblas_sgemv64_(" in mm.inspect_llvm(A.astype(np.float32), A[0].astype(np.float32))
    assert hostblas.provides("scipy_cblas_dgemm64_") and not hostblas.provides("dgemm_")


def test_a_fresh_process_loads_the_product_from_the_cache_and_resolves_blas_by_name(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        from gpucompiler import jit

        @jit
        def mm(a, b):
            return a @ b

        a = np.arange(6.0).reshape(2, 3)
        print(bool((mm(a, a.T) == a @ a.T).all()), mm.last_compile.tier)
    """))
    env = {**os.environ, "GPUC_CACHE_DIR": str(tmp_path / "cache")}
    outs = [subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
            for _ in range(3)]
    results = [out.stdout.split() for out in outs]
    assert all(r[0] == "True" for r in results), outs
    assert results[0][1] == "compiled" and "disk" in [r[1] for r in results[1:]], results


def loss(a, b):
    c = a @ b
    s = 0.0
    for i in range(c.shape[0]):
        for j in range(c.shape[1]):
            s += c[i, j] * c[i, j]
    return s


def test_reverse_gradients_through_a_product_are_the_exact_ones():
    a, b = RNG.standard_normal((4, 5)), RNG.standard_normal((5, 3))
    da, db = np.zeros_like(a), np.zeros_like(b)
    autodiff(Reverse, loss, Duplicated(a, da), Duplicated(b, db))
    np.testing.assert_allclose(da, 2 * (a @ b) @ b.T, rtol=1e-12)
    np.testing.assert_allclose(db, 2 * a.T @ (a @ b), rtol=1e-12)


def test_gradient_through_a_product_with_a_constant_transposed_operand():
    a, w = RNG.standard_normal((4, 5)), RNG.standard_normal((3, 5))
    da = np.zeros_like(a)
    autodiff(Reverse, loss, Duplicated(a, da), Const(w.T))
    np.testing.assert_allclose(da, 2 * (a @ w.T) @ w, rtol=1e-12)
    (t,) = autodiff(Forward, loss, Duplicated(a, np.ones_like(a)), Const(w.T))
    assert t == pytest.approx(float(np.sum(2 * (a @ w.T) * (np.ones_like(a) @ w.T))), rel=1e-12)
