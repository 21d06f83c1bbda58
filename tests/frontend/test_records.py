"""Tuples, NamedTuples and dataclasses as ``@jit`` arguments; records built and returned."""

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

from gpucompiler import jit, kernel
from gpucompiler.errors import ArgumentTypeError, TypeInferenceError


class Point(NamedTuple):
    x: float
    y: float


@dataclasses.dataclass(frozen=True)
class Body:
    pos: Point
    mass: float
    samples: np.ndarray
    count: np.uint8


@dataclasses.dataclass
class Mutable:
    scale: float
    k: int


def energy(b, m, t):
    s = 0.0
    for v in b.samples:
        s += v * m.scale
    _x, y = b.pos
    return Point(b.pos.x * m.k + s, y * b.mass + b.count + t[0] + t[1][1] + len(b.pos) + b.pos[-1])


def test_records_and_tuples_as_arguments_read_fields_and_return_a_namedtuple():
    b = Body(Point(1.0, 2.0), 3.0, np.arange(4.0)[::-1], np.uint8(250))
    args = (b, Mutable(0.5, 3), (1, (2.0, 3.5)))
    got, want = jit(energy)(*args), energy(*args)
    assert type(got) is Point and got == want


def test_a_record_holding_a_strided_or_integer_array_is_read_through_its_strides():
    @jit
    def total(b):
        s = 0
        for v in b.samples:
            s += v
        return s

    strided = Body(Point(0.0, 0.0), 1.0, np.arange(10, dtype=np.int16)[::-3], np.uint8(0))
    assert total(strided) == int(strided.samples.sum())


def test_a_missing_field_names_the_fields_and_assignment_is_refused():
    @jit
    def wrong(p):
        return p.z

    with pytest.raises(TypeInferenceError, match="has no field 'z'") as info:
        wrong(Point(1.0, 2.0))
    assert "x, y" in info.value.hint

    @jit
    def assign(m):
        m.scale = 2.0

    with pytest.raises(TypeInferenceError, match="assignment to attribute 'scale'") as info:
        assign(Mutable(1.0, 2))
    assert info.value.line == assign.py_func.__code__.co_firstlineno + 2


def test_a_record_of_an_unsupported_value_is_an_argument_type_error():
    with pytest.raises(ArgumentTypeError):
        jit(energy)(Body(Point(1.0, 2.0), 3.0, ["not", "an array"], np.uint8(1)), Mutable(1.0, 1), (1, (2, 3)))  # pyright: ignore[reportArgumentType]


@kernel
def scale_kernel(p, out):
    out[0] = p.x


def test_kernels_refuse_records_with_the_way_out():
    with pytest.raises(ArgumentTypeError, match="fields"):
        scale_kernel[1, 1, "cpu"](Point(1.0, 2.0), np.zeros(1))
