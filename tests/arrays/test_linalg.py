"""``np.linalg`` in compiled code (LAPACK through NumPy's OpenBLAS) against NumPy within rounding: every
function, dtypes, layouts and expressions, NumPy's errors at the user's line, and the derivatives of
``solve``, ``inv``, ``det``, ``slogdet`` and ``norm`` against finite differences and JAX; differentiating through
the functions without rules is a typed error."""

import numpy as np
import pytest

from enzyme_plugin import Const, Duplicated, Forward, Reverse, autodiff
from gpucompiler import jit
from gpucompiler.errors import GPUCompilerError, TypeInferenceError

RNG = np.random.default_rng(11)
A = RNG.standard_normal((5, 5)) + 3 * np.eye(5)
SPD = A @ A.T + np.eye(5)
B = RNG.standard_normal((5, 3))
V = RNG.standard_normal(5)


@jit
def solve(a, b):
    return np.linalg.solve(a, b)


@jit
def inv(a):
    return np.linalg.inv(a)


@jit
def det(a):
    return np.linalg.det(a)


@jit
def slogdet(a):
    return np.linalg.slogdet(a)


@jit
def cholesky(a):
    return np.linalg.cholesky(a)


@jit
def eigh(a):
    return np.linalg.eigh(a)


@jit
def lstsq(a, b):
    return np.linalg.lstsq(a, b)


def _close(got, want, rtol=1e-10):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype or want.ndim == 0, (got.dtype, want.dtype)  # a number comes back as a float
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * max(1.0, float(np.abs(want).max(initial=0.0))))


OPERANDS = {
    "C": lambda x: x,
    "F": np.asfortranarray,
    "transposed view": lambda x: x.T.copy().T,
    "strided view": lambda x: np.repeat(x, 2, axis=-1)[..., ::2],
    "float32": lambda x: x.astype(np.float32),
}


@pytest.mark.parametrize("kind", OPERANDS)
def test_solve_inv_det_match_numpy_for_every_layout_and_float32(kind):
    conv = OPERANDS[kind]
    a, b, v = conv(A), conv(B), conv(V)
    tol = 2e-5 if kind == "float32" else 1e-11
    _close(solve(a, b), np.linalg.solve(a, b), tol)
    _close(solve(a, v), np.linalg.solve(a, v), tol)
    _close(inv(a), np.linalg.inv(a), tol)
    _close(det(a), np.linalg.det(a), tol)
    for got, want in zip(slogdet(a), np.linalg.slogdet(a)):
        _close(got, want, tol)


def test_float32_with_float64_solves_in_float64_as_numpy():
    a32 = A.astype(np.float32)
    _close(solve(a32, V), np.linalg.solve(a32, V))
    _close(solve(A, V.astype(np.float32)), np.linalg.solve(A, V.astype(np.float32)))
    got = lstsq(a32, B)
    assert got[0].dtype == np.linalg.lstsq(a32, B)[0].dtype == np.float64


def test_integer_matrices_work_in_float64_and_expressions_are_accepted():
    m = np.array([[4, 1], [2, 3]])
    _close(solve(m, np.array([1, 2])), np.linalg.solve(m, np.array([1, 2])))
    _close(det(m), np.linalg.det(m))
    _close(jit(lambda a, b: np.linalg.solve(a + 1.0, 2.0 * b))(A, V), np.linalg.solve(A + 1.0, 2.0 * V))


def test_cholesky_eigh_and_lstsq_match_numpy():
    _close(cholesky(SPD), np.linalg.cholesky(SPD))
    _close(cholesky(SPD.astype(np.float32)), np.linalg.cholesky(SPD.astype(np.float32)), 1e-5)
    w, v = eigh(SPD)
    _close(w, np.linalg.eigh(SPD)[0])
    _close(SPD @ v, v * w)                     # eigenvectors, whatever their signs
    _close(v.T @ v, np.eye(5))
    cases = [(RNG.standard_normal((8, 3)), RNG.standard_normal(8)), (RNG.standard_normal((8, 3)), RNG.standard_normal((8, 2))),
             (RNG.standard_normal((3, 6)), RNG.standard_normal(3)),   # under-determined: no residuals
             (np.ones((4, 2)), np.arange(4.0))]                       # rank-deficient: no residuals
    for a, b in cases:
        got, want = lstsq(a, b), np.linalg.lstsq(a, b)
        for g, w_ in zip(got[:2], want[:2]):
            _close(g, w_, 1e-9)
        assert got[2] == want[2]
        _close(got[3], want[3])


def test_linear_algebra_in_a_callee_and_on_temporaries_matches_numpy():
    f = jit(lambda a, b: _det_inside(a @ a) + np.sum(np.linalg.solve(a @ a, b)) + np.linalg.det(a @ a))
    want = 2 * np.linalg.det(A @ A) + np.sum(np.linalg.solve(A @ A, V))
    assert f(A, V) == pytest.approx(want, rel=1e-10)


def test_empty_matrices_give_numpys_results():
    e = np.empty((0, 0))
    _close(inv(e), np.linalg.inv(e))
    _close(det(e), np.linalg.det(e))
    _close(solve(e, np.empty(0)), np.linalg.solve(e, np.empty(0)))


@pytest.mark.parametrize("call,args,exc,message", [
    (solve, (np.ones((3, 3)), np.ones(3)), np.linalg.LinAlgError, "Singular matrix"),
    (inv, (np.zeros((2, 2)),), np.linalg.LinAlgError, "Singular matrix"),
    (solve, (np.ones((3, 2)), np.ones(3)), np.linalg.LinAlgError, "Last 2 dimensions of the array must be square"),
    (det, (np.ones((3, 2)),), np.linalg.LinAlgError, "Last 2 dimensions of the array must be square"),
    (solve, (np.eye(3), np.ones(4)), ValueError, "solve1: Input operand 1 has a mismatch in its core dimension 0"),
    (solve, (np.eye(3), np.ones((4, 2))), ValueError, r"solve: Input operand 1 .* \(size 4 is different from 3\)"),
    (cholesky, (-np.eye(3),), np.linalg.LinAlgError, "Matrix is not positive definite"),
    (lstsq, (np.ones((3, 2)), np.ones(4)), np.linalg.LinAlgError, "Incompatible dimensions"),
])
def test_numpys_errors_at_the_users_line(call, args, exc, message):
    with pytest.raises(exc, match=message) as numpy_error:
        call.py_func(*args)
    with pytest.raises(exc, match=message) as info:
        call(*args)
    assert type(info.value) is type(numpy_error.value)
    assert any(__file__ in note for note in getattr(info.value, "__notes__", ())), info.value


def test_singular_det_and_slogdet_are_numpys():
    s = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert det(s) == 0.0
    assert slogdet(s) == (0.0, -np.inf)


def test_unsupported_forms_are_typed_errors():
    with pytest.raises(TypeInferenceError, match="2-d array"):
        jit(lambda a: np.linalg.inv(a))(np.ones(3))
    with pytest.raises(TypeInferenceError, match="complex"):
        jit(lambda a: np.linalg.det(a))(np.eye(2, dtype=complex))
    with pytest.raises(TypeInferenceError, match="singular values"):
        jit(lambda a: np.linalg.norm(a, "nuc"))(A)
    with pytest.raises(TypeInferenceError, match="axis"):
        jit(lambda a: np.linalg.norm(a, axis=0))(A)


NORMS = [(V, None), (V, 1), (V, np.inf), (V, -np.inf), (V, 0), (V, 3), (V, 2), (A, None), (A, "fro"), (A, 1),
         (A, -1), (A, np.inf), (A, -np.inf)]


@pytest.mark.parametrize("x,order", NORMS, ids=[f"{x.ndim}d-{o}" for x, o in NORMS])
def test_norms_match_numpy(x, order):
    f = jit(lambda a: np.linalg.norm(a, order))
    _close(f(x), np.linalg.norm(x, order))
    _close(f(x.astype(np.float32)), np.linalg.norm(x.astype(np.float32), order), 1e-5)


def test_default_norms_of_views_expressions_integers_and_empty_arrays_match_numpy():
    f = jit(lambda a: np.linalg.norm(a))
    g = jit(lambda a: np.linalg.norm(a + 1.0))
    for x in (A.T, A[:, ::2], A[0, ::-1], A[::2, 1], np.arange(12).reshape(3, 4), np.empty((0, 3)), np.empty(0)):
        _close(f(x), np.linalg.norm(x))
        _close(g(x), np.linalg.norm(x + 1.0))
    assert "@scipy_cblas_ddot64_(" in f.inspect_llvm(A)  # NumPy's sum of squares: BLAS's dot


def test_the_norm_of_an_empty_vector_with_no_identity_is_numpys_value_error():
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        jit(lambda a: np.linalg.norm(a, np.inf))(np.empty(0))
    assert jit(lambda a: np.linalg.norm(a))(np.empty(0)) == 0.0


# -- derivatives --------------------------------------------------------------------------------------
W5, W53 = RNG.standard_normal(5), RNG.standard_normal((5, 3))
W55 = RNG.standard_normal((5, 5))


def loss_solve1(a, b):
    return np.sum(np.linalg.solve(a, b) * W5)


def loss_solve2(a, b):
    return np.sum(np.linalg.solve(a, b) * W53)


def loss_inv(a):
    return np.sum(np.linalg.inv(a) * W55)


def loss_det(a):
    return np.linalg.det(a)


def loss_slogdet(a):
    sign, logdet = np.linalg.slogdet(a)
    return 2.0 * logdet + sign


def loss_norms(a):
    return np.linalg.norm(a) + 0.5 * np.linalg.norm(a, 1) + 0.25 * np.linalg.norm(a[0], 3)


def _finite_differences(f, args, i, h=1e-6):
    g = np.zeros_like(args[i])
    for idx in np.ndindex(args[i].shape):
        up, down = [x.copy() for x in args], [x.copy() for x in args]
        up[i][idx] += h
        down[i][idx] -= h
        g[idx] = (f(*up) - f(*down)) / (2 * h)
    return g


@pytest.mark.parametrize("f,args", [(loss_solve1, (A, V)), (loss_solve2, (A, B)), (loss_inv, (A,)),
                                    (loss_det, (A,)), (loss_slogdet, (-A,)), (loss_norms, (A,)),
                                    (loss_solve1, (np.asfortranarray(A), V))],
                         ids=["solve1", "solve2", "inv", "det", "slogdet", "norms", "solve-F-order"])
def test_reverse_and_forward_derivatives_match_finite_differences(f, args):
    shadows = [np.zeros_like(x) for x in args]
    autodiff(Reverse, f, *[Duplicated(x, s) for x, s in zip(args, shadows)])
    scale = max(1.0, abs(f(*args)))
    for i, s in enumerate(shadows):
        np.testing.assert_allclose(s, _finite_differences(f, args, i), atol=1e-6 * scale)
    tangents = [np.empty_like(x) for x in args]  # a shadow has its value's strides
    for d in tangents:
        d[...] = RNG.standard_normal(d.shape)
    (t,) = autodiff(Forward, f, *[Duplicated(x, d) for x, d in zip(args, tangents)])
    want = sum(float(np.sum(s * d)) for s, d in zip(shadows, tangents))
    assert t == pytest.approx(want, rel=1e-9, abs=1e-9 * scale)


def test_derivatives_match_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    da, db = np.zeros_like(A), np.zeros_like(V)
    autodiff(Reverse, loss_solve1, Duplicated(A, da), Duplicated(V, db))
    ja, jb = jax.grad(lambda a, b: jnp.sum(jnp.linalg.solve(a, b) * W5), argnums=(0, 1))(A, V)
    np.testing.assert_allclose(da, ja, rtol=1e-10)
    np.testing.assert_allclose(db, jb, rtol=1e-10)
    dd = np.zeros_like(A)
    autodiff(Reverse, loss_det, Duplicated(A, dd))
    np.testing.assert_allclose(dd, jax.grad(jnp.linalg.det)(A), rtol=1e-10)


def loss_cholesky(a):
    return np.linalg.cholesky(a)[1, 0]


def loss_copied_operand(a, b):
    return np.sum(np.linalg.solve(a + 1.0, b) * W5)


def loss_det_of_a_product(a):
    return np.linalg.det(a @ a)


def _det_inside(m):
    return np.linalg.det(m)


def loss_det_in_a_callee(a):
    return _det_inside(a @ a)


@pytest.mark.parametrize("f,args,match", [
    # the rules read their operands again after the function has run: a temporary (freed by then) is
    # copied, and differentiating through the copy is the engine's error, not a gradient from freed memory
    (loss_det_of_a_product, (Duplicated(A, np.zeros_like(A)),), "no derivative rule for call to 'scipy_LAPACKE_dgetrf64_'"),
    (loss_det_in_a_callee, (Duplicated(A, np.zeros_like(A)),), "no derivative rule for call to 'scipy_LAPACKE_dgetrf64_'"),
    (loss_cholesky, (Duplicated(SPD, np.zeros_like(SPD)),), "no derivative rule for call to 'scipy_LAPACKE_dpotrf64_'"),
    (loss_copied_operand, (Duplicated(A, np.zeros_like(A)), Duplicated(V, np.zeros_like(V))),
     "no derivative rule for call to 'scipy_LAPACKE_dgesv64_'"),
    (loss_solve1, (Const(A), Duplicated(V, np.zeros_like(V))), "needs a shadow at the call"),
])
def test_derivatives_without_a_rule_are_typed_errors_not_zeros(f, args, match):
    with pytest.raises(GPUCompilerError, match=match):
        autodiff(Reverse, f, *args)
