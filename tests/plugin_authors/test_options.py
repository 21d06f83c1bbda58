"""Plugins' typed options (``PluginOptions``, GPUCompiler.jl's AbstractCompilerParams): set from @jit and
@kernel, checked, part of the job key, read by the plugin (Enzyme's atomic adjoints)."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

import options_funcs as O
from enzyme_plugin import EnzymeOptions
from gpucompiler import CompilerConfig, CompilerJob, NativeTarget, jit, kernel
from gpucompiler import types as T
from gpucompiler.core import PluginOptions
from gpucompiler.errors import ConfigError
from gpucompiler.identity import job_key
from gpucompiler.llvm import parse
from gpucompiler.pipeline import compile
from gpucompiler.source import FunctionSpec

ARR = T.ArrayType(T.float64, 1, "C")


@attrs.frozen
class OtherOptions(PluginOptions):
    plugin = "enzyme"
    level: int = 1


def atomics(ir: str) -> int:
    return sum(1 for f in parse(ir).functions.values() for i in f.instructions() if i.opcode == "atomicrmw")


def test_jit_options_reach_the_plugin_and_change_its_output():
    a = np.array([1.0, -2.0, 3.0])
    plain = jit(O.grad_into, plugins=("enzyme",))
    atomic = jit(O.grad_into, plugins=("enzyme",), options=EnzymeOptions(atomic_adjoints=True))
    for f in (plain, atomic):
        da = np.zeros(3)
        assert f(a, da) == 2.0 and list(da) == [2.0, -4.0, 6.0]
    assert atomics(plain.inspect_llvm(ARR, ARR)) == 0
    assert atomics(atomic.inspect_llvm(ARR, ARR)) > 0  # the adjoints of a[i] are atomic adds


def job(**options) -> CompilerJob:
    return CompilerJob(FunctionSpec(O.grad_into, (ARR, ARR)),
                       CompilerConfig(NativeTarget(), plugins=("enzyme",), **options))


def test_options_are_part_of_the_job_key():
    on = job(params={"enzyme": EnzymeOptions(atomic_adjoints=True)})
    assert job_key(on) == job_key(job(params={"enzyme": EnzymeOptions(atomic_adjoints=True)}))
    assert job_key(on) != job_key(job(params={"enzyme": EnzymeOptions()}))
    assert job().config.options(EnzymeOptions) == EnzymeOptions()  # the defaults


def test_kernel_options_in_the_grid_emulation_and_the_key():
    a = np.array([0.5, 1.5])
    k = kernel(O.k_grad, plugins=("enzyme",), options=(EnzymeOptions(atomic_adjoints=True),))
    out, da = np.zeros(1), np.zeros(2)
    k[1, 1, "cpu"](a, da, out)
    assert out[0] == 1.0 and list(da) == [1.0, 3.0]
    plain = kernel(O.k_grad, plugins=("enzyme",))
    assert job_key(k.job((ARR, ARR, ARR))) != job_key(plain.job((ARR, ARR, ARR)))


@pytest.mark.parametrize(("options", "match"), [
    (object(), "must be plugin options"),
    ((EnzymeOptions(), EnzymeOptions(atomic_adjoints=True)), "given more than once"),
])
def test_malformed_options_are_config_errors(options, match):
    with pytest.raises(ConfigError, match=match):
        jit(O.grad_into, plugins=("enzyme",), options=options)
    with pytest.raises(ConfigError, match=match):
        kernel(O.k_grad, plugins=("enzyme",), options=options)


def test_options_for_a_plugin_the_job_does_not_enable_are_refused():
    spec = FunctionSpec(O.total_sq, (ARR,))
    with pytest.raises(ConfigError, match=r"for plugin 'enzyme', which job .* does not enable"):
        compile(CompilerJob(spec, CompilerConfig(NativeTarget(), params={"enzyme": EnzymeOptions()})))
    with pytest.raises(ConfigError, match="plugin 'enzyme' takes EnzymeOptions options, got OtherOptions"):
        compile(CompilerJob(spec, CompilerConfig(NativeTarget(), plugins=("enzyme",),
                                                 params={"enzyme": OtherOptions()})))


def test_untyped_params_are_still_no_jit_option():
    with pytest.raises(ConfigError, match=r"unknown jit option 'params'.*options"):
        jit(O.grad_into, params={"enzyme_atomic": True})
