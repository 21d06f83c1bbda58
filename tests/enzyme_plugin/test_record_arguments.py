"""Records (dataclasses and NamedTuples of scalars and arrays) as arguments of differentiated functions, with
record shadows, from Python, @jit functions and kernels (the CPU grid emulation); what they cannot do is a
typed error naming the caller's line."""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np
import pytest

from enzyme_plugin import (Active, BatchDuplicated, Const, Duplicated, Forward, ForwardWithPrimal, Reverse,
                           ReverseWithPrimal, autodiff)
from gpucompiler import device as gd, jit, kernel
from gpucompiler import types as T
from gpucompiler.errors import ArgumentTypeError, TypeInferenceError

P = ("enzyme",)


@dataclasses.dataclass
class Params:
    w: float
    b: float


@dataclasses.dataclass
class Model:
    scale: float
    a: np.ndarray
    n: int


@dataclasses.dataclass(frozen=True)
class Frozen:
    scale: float
    a: np.ndarray


class Pair(NamedTuple):
    scale: float
    a: np.ndarray


class Arrays(NamedTuple):
    a: np.ndarray
    b: np.ndarray


@dataclasses.dataclass
class Outer:
    inner: Params
    arrays: tuple


def loss(p, x):
    return (p.w * x + p.b) ** 2


def energy(m):
    s = 0.0
    for i in range(m.n):
        s += m.scale * m.a[i] * m.a[i] + math.sin(m.a[i])
    return s


def energy_grad(m):
    """Analytic: d/dscale and d/da of :func:`energy`."""
    n = m.n
    da = np.zeros_like(m.a)
    da[:n] = 2 * m.scale * m.a[:n] + np.cos(m.a[:n])
    return float(np.sum(m.a[:n] ** 2)), da


def nested(o):
    return o.inner.w * o.arrays[0][1] + o.inner.b * o.arrays[1][0] ** 2


def fd(fn, x, h=1e-6):
    return (fn(x + h) - fn(x - h)) / (2 * h)


def test_active_dataclass_of_floats_gets_a_dataclass_of_derivatives():
    (g, dx) = autodiff(Reverse, loss, Active(Params(2.0, 1.0)), Active(3.0))
    assert type(g) is Params
    assert g.w == pytest.approx(fd(lambda w: loss(Params(w, 1.0), 3.0), 2.0), rel=1e-8)
    assert g.b == pytest.approx(fd(lambda b: loss(Params(2.0, b), 3.0), 1.0), rel=1e-8)
    assert dx == pytest.approx(fd(lambda x: loss(Params(2.0, 1.0), x), 3.0), rel=1e-8)


def test_duplicated_dataclass_adds_array_gradients_and_float_derivatives_into_its_shadow():
    m = Model(1.5, np.array([1.0, 2.0, 3.0]), 2)
    dm = Model(10.0, np.ones(3), 0)  # a shadow already holding values: the derivatives are added
    assert autodiff(Reverse, energy, Duplicated(m, dm)) == ()
    dscale, da = energy_grad(m)
    assert dm.scale == pytest.approx(10.0 + dscale, rel=1e-14)
    np.testing.assert_allclose(dm.a, 1.0 + da, rtol=1e-14)
    assert dm.n == 0  # an integer field has no derivative
    assert dscale == pytest.approx(fd(lambda s: energy(Model(s, m.a, 2)), 1.5), rel=1e-8)


def test_forward_dataclass_tangent_matches_finite_differences():
    m = Model(1.5, np.array([1.0, 2.0, 3.0]), 3)
    t = Model(0.5, np.array([1.0, -1.0, 2.0]), 0)
    (d,) = autodiff(Forward, energy, Duplicated(m, t))
    expect = fd(lambda h: energy(Model(m.scale + h * t.scale, m.a + h * t.a, 3)), 0.0)
    assert d == pytest.approx(expect, rel=1e-7)
    (d2, value) = autodiff(ForwardWithPrimal, energy, Duplicated(m, t))
    assert d2 == d and value == pytest.approx(energy(m), rel=1e-14)


def test_with_primal_and_batches_of_dataclasses():
    m = Model(1.5, np.array([1.0, 2.0, 3.0]), 3)
    dm = Model(0.0, np.zeros(3), 0)
    (derivs, value) = autodiff(ReverseWithPrimal, energy, Duplicated(m, dm))
    assert derivs == () and value == pytest.approx(energy(m), rel=1e-14)
    lanes = (Params(0.0, 0.0), Params(1.0, 0.0))
    ((dx1, dx2),) = autodiff(Reverse, loss, BatchDuplicated(Params(2.0, 1.0), lanes), Active(3.0))
    assert dx1 == dx2 == 28.0
    assert lanes == (Params(42.0, 14.0), Params(43.0, 14.0))


def test_records_nested_in_records_and_tuples():
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    o = Outer(Params(0.5, 2.0), (a, b))
    do = Outer(Params(0.0, 0.0), (np.zeros(2), np.zeros(2)))
    autodiff(Reverse, nested, Duplicated(o, do))
    assert do.inner == Params(2.0, 9.0)
    np.testing.assert_array_equal(do.arrays[0], [0.0, 0.5])
    np.testing.assert_array_equal(do.arrays[1], [12.0, 0.0])


def attribute_sum(p):
    return p.scale * p.a[0]


def test_a_namedtuple_from_python_keeps_its_field_names():
    """Compiled code used to get a plain tuple: ``p.scale`` was a TypeInferenceError."""
    a, da = np.array([3.0]), np.zeros(1)
    (g,) = autodiff(Reverse, scaled_by_fields, Active(2.0), Const(Pair(1.5, a)))
    assert g == 4.5
    (t,) = autodiff(Forward, scaled_by_fields, Duplicated(2.0, 1.0), Duplicated(Pair(1.5, a), Pair(1.0, da)))
    assert t == pytest.approx(fd(lambda h: scaled_by_fields(2.0 + h, Pair(1.5 + h, a)), 0.0), rel=1e-8)


def scaled_by_fields(s, p):
    return s * p.a[0] * p.scale


@pytest.mark.parametrize("shadow, value", [
    (Pair(0.0, np.zeros(2)), Pair(1.0, np.ones(2))),
    (Frozen(0.0, np.zeros(2)), Frozen(1.0, np.ones(2))),
])
def test_a_record_shadow_that_cannot_take_its_float_derivatives_is_a_typed_error(shadow, value):
    with pytest.raises(ArgumentTypeError, match=r"cannot receive their derivatives") as info:
        autodiff(Reverse, attribute_sum, Duplicated(value, shadow))
    assert info.value.filename == __file__


def test_a_shadow_of_another_structure_or_shape_is_a_typed_error_at_the_call():
    m = Model(1.5, np.ones(3), 3)
    with pytest.raises(ArgumentTypeError, match="structure") as info:
        autodiff(Reverse, energy, Duplicated(m, Params(0.0, 0.0)))
    assert info.value.filename == __file__
    with pytest.raises(ValueError, match="axis 0 has 3 elements in the value, 2 in the shadow"):
        autodiff(Reverse, energy, Duplicated(m, Model(0.0, np.zeros(2), 0)))
    with pytest.raises(ArgumentTypeError, match="float32"):
        autodiff(Reverse, energy, Duplicated(m, Model(0.0, np.zeros(3, np.float32), 0)))


def test_active_record_holding_an_array_is_a_typed_error():
    with pytest.raises(ArgumentTypeError, match="Active is for float scalars") as info:
        autodiff(Reverse, energy, Active(Model(1.0, np.ones(2), 2)))
    assert info.value.filename == __file__


def grad_in_jit(w, b, x):
    (g, dx) = autodiff(Reverse, loss, Active(Params(w, b)), Active(x))
    return g.w, g.b, dx


def arrays_in_jit(m, dm):
    return autodiff(Reverse, sum_of_pair, Duplicated(m, dm))


def sum_of_pair(t):
    return t.a[0] * t.b[1]


def mixed_in_jit(m, dm):
    return autodiff(Reverse, scaled_by_fields, Const(2.0), Duplicated(m, dm))


def test_records_in_jit_functions():
    assert jit(grad_in_jit, plugins=P)(2.0, 1.0, 3.0) == (42.0, 14.0, 28.0)
    a, b, da, db = np.array([3.0, 5.0]), np.array([7.0, 11.0]), np.zeros(2), np.zeros(2)
    assert jit(arrays_in_jit, plugins=P)(Arrays(a, b), Arrays(da, db)) == ()
    np.testing.assert_array_equal(da, [11.0, 0.0])
    np.testing.assert_array_equal(db, [0.0, 3.0])
    with pytest.raises(TypeInferenceError, match="pass its scalars Active and its arrays Duplicated"):
        jit(mixed_in_jit, plugins=P)(Pair(1.0, np.ones(2)), Pair(0.0, np.zeros(2)))


@kernel(plugins=P)
def record_kernel(ws, out):
    i = 0
    (g, dx) = autodiff(Reverse, loss, Active(Params(ws[i], 1.0)), Active(3.0))
    out[i] = g.w + dx


def test_records_in_kernels_on_the_grid_emulation():
    out = np.zeros(1)
    record_kernel[1, 1, "cpu"](np.array([2.0]), out)
    assert out[0] == 42.0 + 28.0


@dataclasses.dataclass
class Single:
    w: np.float32


def squared_field(c):
    return c.w * c.w


def test_a_float32_field_keeps_its_type_in_the_shadow():
    d = Single(np.float32(0.5))
    autodiff(Reverse, squared_field, Duplicated(Single(np.float32(3.0)), d))
    assert type(d.w) is np.float32 and d.w == np.float32(6.5)


@dataclasses.dataclass
class Labelled:
    label: str
    w: float


def test_a_record_compiled_code_cannot_take_is_a_typed_error_at_the_call():
    with pytest.raises(ArgumentTypeError, match="Labelled") as info:
        autodiff(Reverse, loss, Const(Labelled("a", 2.0)), Active(3.0))
    assert info.value.filename == __file__


def square_real(z, i):
    return (z[i] * z[i]).real + 2.0 * z[i].imag


@kernel(plugins=P)
def complex_grad_kernel(z, dz):
    i = gd.grid(1)
    if i < z.shape[0]:
        autodiff(Reverse, square_real, Duplicated(z, dz), Const(i))


def _complex_expected(z):
    return 2 * z.real - 2j * z.imag + 2j  # d/dRe(x²-y²+2y) + i d/dIm(...)


def test_records_and_complex_arrays_in_kernels_compile_to_ptx(check_ptx):
    A = T.ArrayType(T.float64, 1)
    check_ptx(record_kernel.inspect_asm(A, A))
    C = T.ArrayType(T.complex128, 1)
    check_ptx(complex_grad_kernel.inspect_asm(C, C))


def test_complex_arrays_in_kernels_on_the_grid_emulation():
    z = np.linspace(-1, 1, 100) + 1j * np.linspace(2, -0.5, 100)
    dz = np.zeros_like(z)
    complex_grad_kernel[2, 64, "cpu"](z, dz)
    np.testing.assert_allclose(dz, _complex_expected(z), rtol=1e-15)


@pytest.mark.gpu
def test_records_and_complex_arrays_in_kernels_on_the_gpu():
    cp = pytest.importorskip("cupy")
    out = cp.zeros(1)
    record_kernel[1, 1](cp.asarray([2.0]), out)
    assert float(out[0]) == 42.0 + 28.0
    z = np.linspace(-1, 1, 100) + 1j * np.linspace(2, -0.5, 100)
    dz = cp.zeros(100, dtype=cp.complex128)
    complex_grad_kernel[2, 64](cp.asarray(z), dz)
    np.testing.assert_allclose(cp.asnumpy(dz), _complex_expected(z), rtol=1e-14)


def polar_record(r, t):
    return Params(r * math.cos(t), r * math.sin(t))


def test_a_dataclass_result_has_a_dataclass_tangent_and_takes_a_seed_by_field_or_position():
    (dt,) = autodiff(Forward, polar_record, Const(2.0), Duplicated(0.3, 1.0))
    assert type(dt) is Params and (dt.w, dt.b) == pytest.approx((-2 * math.sin(0.3), 2 * math.cos(0.3)), rel=1e-15)
    by_field = autodiff(Reverse, polar_record, Active(2.0), Active(0.3), seed=Params(0.0, 1.0))
    by_position = autodiff(Reverse, polar_record, Active(2.0), Active(0.3), seed=(0.0, 1.0))
    assert by_field == by_position == pytest.approx((math.sin(0.3), 2 * math.cos(0.3)), rel=1e-15)
