"""A launch tape's shadow of a strided view has the view's strides: the gradient kernel indexes the shadow
with the primal's strides (a shadow of other strides got wrong gradients and writes past its buffer)."""

import numpy as np
import pytest

from enzyme_plugin import LaunchTape
from enzyme_plugin.launches.arrays import ArrayOps
from gpucompiler import device as gd, kernel


@kernel
def cubes_total(v, out):
    i = gd.grid(1)
    if i < v.shape[0]:
        gd.atomic_add(out, 0, v[i] ** 3)


@pytest.mark.parametrize("step", [2, 3, 5, -1, -3])
def test_gradient_of_a_strided_view_lands_in_its_elements(step):
    base = np.arange(20.0)
    v, out = base[::step], np.zeros(1)
    tape = LaunchTape()
    with tape:
        cubes_total[1, 32, "cpu"](v, out)
    tape.backward(loss=out)
    g = tape.gradient(v)
    assert g.strides == v.strides
    assert np.array_equal(g, 3 * v ** 2)


def test_shadow_of_a_two_dimensional_view_keeps_both_strides():
    a = np.arange(60.0).reshape(6, 10)[1::2, ::-3]
    s = ArrayOps().zeros_like(a)
    assert s.shape == a.shape and s.strides == a.strides and not s.any()
    s[...] = 1.0                           # every element is writable and inside the shadow's buffer
    assert s.sum() == a.size
