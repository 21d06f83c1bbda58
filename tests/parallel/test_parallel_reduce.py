"""Kokkos-style ``parallel_for`` / ``parallel_reduce`` on host threads, in the CPU grid emulation, on the GPU,
inside compiled code, and differentiated (the 2-norm: gradient ``v / ||v||``)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from enzyme_plugin import Duplicated, Reverse, autodiff
from gpucompiler import Reducer, Space, jit, parallel_for, parallel_reduce, prange
from gpucompiler.errors import ConfigError, TypeInferenceError

CPU_SPACES = [Space.HOST, Space.EMULATION]


def square(i, v):
    return v[i] * v[i]


def double_into(i, v, out):
    out[i] = 2.0 * v[i] + i


def absdiff(a, b):
    return abs(a - b)


@pytest.mark.parametrize("space", CPU_SPACES)
@pytest.mark.parametrize("n", [0, 1, 3, 255, 256, 257, 1000])
def test_sum_of_squares_matches_numpy(space, n):
    v = np.random.default_rng(n).random(n)
    got = parallel_reduce(n, square, sum, v, space=space)
    assert got == pytest.approx(float(np.sum(v * v)), rel=1e-12, abs=0.0)


@pytest.mark.parametrize("space", CPU_SPACES)
def test_min_max_prod_and_names(space):
    v = np.random.default_rng(7).random(600) + 0.5
    assert parallel_reduce(600, lambda i: v[i], max, space=space) == v.max()
    assert parallel_reduce(600, lambda i: v[i], "min", space=space) == v.min()
    assert parallel_reduce(12, lambda i: i + 1, math.prod, space=space) == math.factorial(12)
    assert parallel_reduce(0, lambda i: v[i], max, space=space) == -math.inf  # the identity
    assert parallel_reduce(40, lambda i: 3 * i - 50, min, space=space) == -50  # integers stay integers


@pytest.mark.parametrize("space", CPU_SPACES)
def test_custom_reducer_with_identity(space):
    v = np.random.default_rng(3).random(300) - 0.5
    # the largest magnitude: combine is associative and commutative, identity 0
    largest = Reducer("absmax", lambda a, b: max(abs(a), abs(b)), 0.0)
    assert parallel_reduce(300, lambda i: v[i], largest, space=space) == np.abs(v).max()


@pytest.mark.parametrize("space", CPU_SPACES)
@pytest.mark.parametrize("n", [0, 1, 5, 1000])
def test_parallel_for_writes_every_index_once(space, n):
    v = np.random.default_rng(n).random(n)
    out = np.full(n, np.nan)
    parallel_for(n, double_into, v, out, space=space)
    np.testing.assert_array_equal(out, 2.0 * v + np.arange(n))


def test_closures_over_arrays_are_passed_by_reference():
    v = np.arange(10.0)
    out = np.zeros(10)

    def fill(i):
        out[i] = v[i] + 1.0

    parallel_for(10, fill)
    np.testing.assert_array_equal(out, v + 1.0)
    v[:] = 5.0  # the same array, new contents: no stale frozen copy
    assert parallel_reduce(10, lambda i: v[i], sum) == 50.0


def test_inside_jit_with_threads_and_serially():
    v = np.random.default_rng(1).random(1001)

    def norm(v):
        return math.sqrt(parallel_reduce(v.shape[0], square, sum, v))

    for options in ({}, {"parallel": True}):
        assert jit(**options)(norm)(v) == pytest.approx(float(np.linalg.norm(v)), rel=1e-12)


def test_an_error_in_the_functor_raises_index_error():
    v = np.arange(5.0)

    def past_end(i, v):
        return v[i + 1]

    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        parallel_reduce(5, past_end, sum, v)


def test_wrong_reducer_and_space_are_typed_errors():
    with pytest.raises(ConfigError, match="a reducer is"):
        parallel_reduce(3, lambda i: i, "mean")
    with pytest.raises(ConfigError, match="space must be"):
        parallel_reduce(3, lambda i: i, sum, space="gpu")

    @jit
    def bad(v):
        return parallel_reduce(v.shape[0], square, "avg", v)

    with pytest.raises(TypeInferenceError, match="a reducer is"):
        bad(np.arange(3.0))


def test_functor_returning_a_tuple_is_refused():
    with pytest.raises(TypeInferenceError, match="not a number"):
        parallel_reduce(3, lambda i: (i, i), sum)


_V = np.arange(10.0)


def _above_two(i):  # reads the module's array: compiled as a copy taking it as a parameter
    return _V[i] > 2


@pytest.mark.parametrize("space", CPU_SPACES)
def test_a_functor_returning_no_number_is_refused_at_its_definition(space):
    """The error named the generated driver (``<gpucompiler drive[...]>:2``), not the functor's line."""
    with pytest.raises(TypeInferenceError, match="returns bool, not a number") as info:
        parallel_reduce(5, _above_two, sum, space=space)
    assert (info.value.filename, info.value.line) == (__file__, _above_two.__code__.co_firstlineno)


@pytest.mark.parametrize("space", CPU_SPACES)
def test_the_count_is_an_int(space):
    """``parallel_reduce(5.0, ...)`` ran five iterations; it is range's TypeError (NumPy ints are fine)."""
    with pytest.raises(TypeError, match="n must be an int"):
        parallel_reduce(5.0, square, sum, _V, space=space)
    with pytest.raises(TypeError, match="n must be an int"):
        parallel_for("3", double_into, _V, np.zeros(10), space=space)
    assert parallel_reduce(np.int32(3), square, sum, _V, space=space) == 5.0


# -- differentiation: the Kokkos 2-norm -------------------------------------------------------------

def norm2(v):
    return math.sqrt(parallel_reduce(v.shape[0], square, sum, v))


def norm2_prange(v):
    s = 0.0
    for i in prange(v.shape[0]):
        s += v[i] * v[i]
    return math.sqrt(s)


@pytest.mark.parametrize("f", [norm2, norm2_prange])
@pytest.mark.parametrize("n", [1, 7, 300])
def test_gradient_of_the_two_norm_is_v_over_its_norm(f, n):
    v = np.random.default_rng(n).random(n) + 0.1
    dv = np.zeros_like(v)
    autodiff(Reverse, f, Duplicated(v, dv))
    np.testing.assert_allclose(dv, v / np.linalg.norm(v), rtol=1e-12)


def test_gradient_inside_a_parallel_jit_function_matches_finite_differences():
    @jit(parallel=True)
    def grad(v, dv):
        autodiff(Reverse, norm2, Duplicated(v, dv))

    v = np.random.default_rng(5).random(9) + 0.1
    dv = np.zeros_like(v)
    grad(v, dv)
    h = 1e-6
    fd = [(np.linalg.norm(v + h * e) - np.linalg.norm(v - h * e)) / (2 * h) for e in np.eye(9)]
    np.testing.assert_allclose(dv, fd, rtol=1e-6)


# -- the GPU --------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 1000, 1 << 20])
def test_gpu_block_tree_reduction_and_for(n):
    v = np.random.default_rng(n).random(n)
    assert parallel_reduce(n, square, sum, v, space=Space.CUDA) == pytest.approx(float(np.sum(v * v)), rel=1e-9)
    assert parallel_reduce(n, lambda i: v[i], max, space=Space.CUDA) == v.max()
    m = min(n, 300)  # a product of values near 1 stays finite
    w = 1.0 + (v[:m] - 0.5) * 1e-3
    times = Reducer("times", lambda a, b: a * b, 1.0)  # no atomic: one value per block, combined on the host
    assert parallel_reduce(m, lambda i: w[i], times, space=Space.CUDA) == pytest.approx(float(np.prod(w)), rel=1e-12)
    out = np.zeros(n)
    parallel_for(n, double_into, v, out, space=Space.CUDA)
    np.testing.assert_array_equal(out, 2.0 * v + np.arange(n))


def test_reduction_kernel_ptx_has_a_block_barrier_and_one_atomic(check_ptx):
    from gpucompiler import types as T
    from gpucompiler.parallel import SUM, _reduce_kernel

    arr = T.ArrayType(T.float64, 1)
    ptx = _reduce_kernel(square, SUM, T.float64, 1).inspect_asm(arr, T.int64, arr)
    assert "bar.sync" in ptx
    assert len(re.findall(r"(?:atom|red)\.global\.add\.f64", ptx)) == 1
    check_ptx(ptx)
