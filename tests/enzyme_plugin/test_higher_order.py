"""Higher-order AD: ``autodiff`` of functions that call ``autodiff`` (forward over reverse,
reverse over reverse, forward over forward, reverse over forward, third order), from Python,
in ``@jit`` functions and in kernels, against analytic Hessians to 1e-10 relative."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ho_funcs as F
from enzyme_plugin import Active, Const, Duplicated, Forward, Reverse, autodiff
from gpucompiler import jit, kernel, types as T
from gpucompiler.errors import GPUCompilerError
from gpucompiler.llvm import parse

P = ("enzyme",)
A = T.ArrayType(T.float64, 1, "C")
RTOL = 1e-10


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * np.max(np.abs(want)))


# -- scalars ----------------------------------------------------------------------
@pytest.mark.parametrize("x", [0.7, -1.3, 2.4])
def test_second_derivative_of_a_scalar_in_every_nesting_from_python(x):
    want = F.d2_cubic_sin(x)
    (fr,) = autodiff(Forward, F.cubic_sin_rev, Duplicated(x, 1.0))
    (rr,) = autodiff(Reverse, F.cubic_sin_rev, Active(x))
    (ff,) = autodiff(Forward, F.cubic_sin_fwd, Duplicated(x, 1.0))
    (rf,) = autodiff(Reverse, F.cubic_sin_fwd, Active(x))
    for got in (fr, rr, ff, rf):
        assert got == pytest.approx(want, rel=RTOL)


def test_second_derivatives_inside_a_jit_function():
    x = 0.9
    got = jit(F.scalar_second_derivatives, plugins=P)(x)
    assert got == pytest.approx((F.d2_cubic_sin(x),) * 4, rel=RTOL)


def test_third_derivative_forward_over_forward_over_reverse():
    for x in (0.4, 1.7):
        (d3,) = autodiff(Forward, F.cubic_sin_fwd_rev, Duplicated(x, 1.0))
        assert d3 == pytest.approx(F.d3_cubic_sin(x), rel=RTOL)


# -- arrays: Hessian-vector products --------------------------------------------------
CASES = [
    (F.grad_cubic_sin_ring, F.hess_cubic_sin_ring, np.linspace(0.3, 1.2, 5)),
    (F.grad_rosenbrock, F.hess_rosenbrock, np.linspace(-0.5, 1.3, 6)),
]


@pytest.mark.parametrize("grad,hess,x", CASES, ids=["x3_sin_ring", "rosenbrock"])
def test_hessian_vector_product_forward_over_reverse_from_python(grad, hess, x):
    n = len(x)
    v = np.cos(np.arange(n) + 0.5)
    dx, hv = np.zeros(n), np.zeros(n)
    autodiff(Forward, grad, Duplicated(x, v), Duplicated(dx, hv), Const(n))
    close(hv, hess(x) @ v)


@pytest.mark.parametrize("grad,hess,x", CASES, ids=["x3_sin_ring", "rosenbrock"])
def test_hessian_vector_product_reverse_over_reverse_from_python(grad, hess, x):
    n = len(x)
    v = np.cos(np.arange(n) + 0.5)
    hv, dx = np.zeros(n), np.zeros(n)
    autodiff(Reverse, grad, Duplicated(x, hv), Duplicated(dx, v.copy()), Const(n))
    close(hv, hess(x) @ v)


def test_full_hessian_of_rosenbrock_column_by_column():
    x = np.array([0.8, -0.3, 1.1, 0.5])
    n = len(x)
    cols = []
    for k in range(n):
        v, dx, hv = np.eye(n)[k].copy(), np.zeros(n), np.zeros(n)
        autodiff(Forward, F.grad_rosenbrock, Duplicated(x, v), Duplicated(dx, hv), Const(n))
        cols.append(hv)
    close(np.array(cols).T, F.hess_rosenbrock(x))


@pytest.mark.parametrize("hidden,n", [(3, 4), (8, 64)], ids=["small", "stack_grows"])
def test_mlp_loss_hessian_vector_products_both_ways(hidden, n):
    """Nested loops with early exits (index checks): the inner gradient keeps a stack tape, which the
    outer derivative mirrors; 8 x 64 iterations grow (move) the stack."""
    rng = np.random.default_rng(3)
    w, x, a, y = rng.normal(size=hidden * n), rng.normal(size=n), rng.normal(size=hidden), 0.4
    v = rng.normal(size=hidden * n)
    want = F.hess_mlp_loss(w, x, a, y, hidden, n) @ v
    dw, hv = np.zeros_like(w), np.zeros_like(w)
    autodiff(Forward, F.grad_mlp_loss, Duplicated(w, v), Duplicated(dw, hv), Const(x), Const(a), Const(y),
             Const(hidden), Const(n))
    close(hv, want)
    dw, hv2 = np.zeros_like(w), np.zeros_like(w)
    autodiff(Reverse, F.grad_mlp_loss, Duplicated(w, hv2), Duplicated(dw, v.copy()), Const(x), Const(a),
             Const(y), Const(hidden), Const(n))
    close(hv2, want)


def test_hessian_vector_products_inside_jit_functions():
    x = np.linspace(-0.5, 1.3, 6)
    v = np.cos(np.arange(6.0))
    want = F.hess_rosenbrock(x) @ v
    hv = np.zeros(6)
    jit(F.rosenbrock_hvp_fwd_rev, plugins=P)(x, v, np.zeros(6), hv, 6)
    close(hv, want)
    hv = np.zeros(6)
    jit(F.rosenbrock_hvp_rev_rev, plugins=P)(x, hv, np.zeros(6), v.copy(), 6)
    close(hv, want)


# -- kernels -----------------------------------------------------------------------------
N = 64


def _kernel_inputs():
    x = np.linspace(0.1, 1.5, N)
    v = np.linspace(-1.0, 2.0, N)
    d1 = 3 * x * x * np.sin(x) + x ** 3 * np.cos(x)
    d2 = 6 * x * np.sin(x) + 6 * x * x * np.cos(x) - x ** 3 * np.sin(x)
    return x, v, d1, d2


def test_forward_over_reverse_in_a_kernel_on_the_grid_emulation():
    x, v, d1, d2 = _kernel_inputs()
    dx, hv = np.zeros(N), np.zeros(N)
    kernel(F.second_derivative_kernel, plugins=P)[2, 32, "cpu"](x, v, dx, hv)
    close(dx, d1)
    close(hv, d2 * v)


def test_reverse_over_reverse_in_a_kernel_on_the_grid_emulation():
    x, v, _, d2 = _kernel_inputs()
    hv, dx = np.zeros(N), np.zeros(N)
    kernel(F.second_derivative_rev_rev_kernel, plugins=P)[2, 32, "cpu"](x, hv, dx, v.copy())
    close(hv, d2 * v)


@pytest.mark.parametrize("fn", [F.second_derivative_kernel, F.second_derivative_rev_rev_kernel])
def test_nested_gradient_kernels_assemble_with_ptxas(fn, check_ptx):
    k = kernel(fn, plugins=P)
    model = parse(k.inspect_llvm(A, A, A, A))
    calls = {i.callee.name for f in model.functions.values() for i in f.instructions()
             if i.opcode == "call" and getattr(i.callee, "name", None)}
    assert not {"realloc", "__enzyme_autodiff", "__enzyme_fwddiff"} & calls
    check_ptx(k.inspect_asm(A, A, A, A))


def _until_four_d2(x):
    """f'' of until_four by central differences of its exact first derivative (the chain rule
    through every step of the loop)."""
    def d1(t):
        s, ds = t, 1.0
        while s < 4.0:
            s, ds = s + 0.5 + 0.1 * math.sin(s), ds * (1.0 + 0.1 * math.cos(s))
        return 2 * s * ds
    h = 1e-5
    return np.array([(d1(t + h) - d1(t - h)) / (2 * h) for t in x])


@pytest.mark.parametrize("fn", [F.until_four_second_derivative_kernel, F.until_four_rev_rev_kernel],
                         ids=["fwd_rev", "rev_rev"])
def test_while_loop_in_nested_kernel_gradient_on_the_emulation_and_through_ptxas(fn, check_ptx):
    """The inner gradient's tape grows on the device (malloc + copy + free); the outer derivative gives
    its copies shadows marked as the tape's, which validation and ptxas accept."""
    x = np.linspace(0.05, 0.95, N)
    v = np.linspace(-1.0, 2.0, N)
    a = (x, v, np.zeros(N), np.zeros(N)) if fn is F.until_four_second_derivative_kernel else \
        (x, np.zeros(N), np.zeros(N), v.copy())
    kernel(fn, plugins=P)[2, 32, "cpu"](*a)
    hv = a[3] if fn is F.until_four_second_derivative_kernel else a[1]
    np.testing.assert_allclose(hv, _until_four_d2(x) * v, rtol=1e-6, atol=1e-7)
    check_ptx(kernel(fn, plugins=P).inspect_asm(A, A, A, A))


@pytest.mark.gpu
def test_nested_gradient_kernels_on_the_gpu():
    cp = pytest.importorskip("cupy")
    x, v, d1, d2 = _kernel_inputs()
    dx, hv = cp.zeros(N), cp.zeros(N)
    kernel(F.second_derivative_kernel, plugins=P)[2, 32](cp.asarray(x), cp.asarray(v), dx, hv)
    close(cp.asnumpy(dx), d1)
    close(cp.asnumpy(hv), d2 * v)
    hv, dx = cp.zeros(N), cp.zeros(N)
    kernel(F.second_derivative_rev_rev_kernel, plugins=P)[2, 32](cp.asarray(x), hv, dx, cp.asarray(v))
    close(cp.asnumpy(hv), d2 * v)


# -- errors ------------------------------------------------------------------------------
def test_a_function_differentiating_itself_is_a_typed_error_at_its_line():
    with pytest.raises(GPUCompilerError, match="unbounded order") as info:
        autodiff(Reverse, F.differentiates_itself, Active(0.5))
    line = F.differentiates_itself.__code__.co_firstlineno + 1
    assert f"ho_funcs.py:{line}" in str(info.value)


def test_an_unsupported_construct_under_nested_autodiff_is_an_ad_error_at_its_python_line():
    import enzyme_plugin

    x = np.ones(4)
    with pytest.raises(GPUCompilerError) as info:
        kernel(F.nested_unsupported_kernel, plugins=P)[1, 4, "cpu"](x, x.copy(), x.copy(), x.copy(), x.copy(),
                                                                    x.copy())
    err = info.value.__cause__ or info.value.__context__
    assert isinstance(err, enzyme_plugin.ADError) and "old value of an atomic add" in str(err)
    line = F.reads_old_value.__code__.co_firstlineno + 1  # the atomic_add
    assert f"ho_funcs.py:{line}: " in str(info.value)
