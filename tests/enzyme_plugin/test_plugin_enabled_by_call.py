"""A call of an object a plugin owns (``__gpuc_plugin__``) enables that plugin for the function:
``autodiff`` in ``@jit`` and kernels without ``plugins=("enzyme",)`` (was "no implementation of
Active(float64)"); the plugin is named by the job, so by its cache key."""

from __future__ import annotations

import numpy as np
import pytest

from enzyme_plugin import Active, Duplicated, Reverse, autodiff
from gpucompiler import NativeTarget, device as gd, jit, kernel
from gpucompiler.errors import PLUGIN_ATTRIBUTE, PluginRequiredError, UnknownPluginError
from gpucompiler.source.spec import FunctionSpec


def cube(x):
    return x * x * x


def dcube(x):
    return autodiff(Reverse, cube, Active(x))[0]


def test_autodiff_in_jit_enables_the_enzyme_plugin_and_its_job_names_it():
    d = jit(dcube)
    assert d(2.0) == 12.0 and d(-1.0) == 3.0
    assert d.plugins == ("enzyme",)
    (entry,) = d._entries.values()
    assert entry.job.config.plugins == ("enzyme",)


def test_without_a_dispatcher_the_error_names_the_plugin_to_enable():
    from gpucompiler import types as T

    with pytest.raises(PluginRequiredError, match="plugin 'enzyme'") as info:
        FunctionSpec(dcube, (T.float64,)).infer(NativeTarget(), (), True)
    assert info.value.plugin == "enzyme" and info.value.line == dcube.__code__.co_firstlineno + 1
    assert "plugins=('enzyme',)" in info.value.hint


def sumsq(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s


def _grad_kernel(a, da):
    if gd.grid(1) == 0:
        autodiff(Reverse, sumsq, Duplicated(a, da))


def test_autodiff_in_a_kernel_enables_the_plugin_in_the_emulation():
    k = kernel(_grad_kernel)
    a, da = np.arange(1.0, 5.0), np.zeros(4)
    k[1, 1, "cpu"](a, da)
    np.testing.assert_allclose(da, 2 * a)
    assert k.plugins == ("enzyme",)


def _owned():
    return 1.0


def test_an_owned_object_of_a_plugin_that_is_not_installed_is_a_typed_error():
    def calls_it():
        return fake_owned()

    fake_owned = _owned
    setattr(_owned, PLUGIN_ATTRIBUTE, "no-such-plugin")
    try:
        with pytest.raises(UnknownPluginError, match="no-such-plugin"):
            jit(calls_it)()
    finally:
        delattr(_owned, PLUGIN_ATTRIBUTE)
