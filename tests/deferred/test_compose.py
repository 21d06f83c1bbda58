"""Nested jobs of two plugins compose (GPUCompiler.jl PR #636's "double extension"): ``mock_enzyme``'s
and ``enzyme``'s nested jobs inside each other, each inside itself and three deep, at O0..O3, on the
CPU, the CPU grid emulation and PTX; values against exact derivatives.

A nested job's calling convention (whether it takes an error slot) is the job's own
(:attr:`DeferredJob.takes_error_slot`): the caller's lowering and the nested code generation
follow it whatever plugin's job the caller is."""

from __future__ import annotations

import math

import numpy as np
import pytest

import compose_funcs as C
from deferred_helpers import defined_and_declared
from gpucompiler import jit, kernel
from gpucompiler import types as T
from gpucompiler.interpreter.deferred import DeferredJob
from gpucompiler.source.deferred import nested_checks

PLUGINS = ("mock_enzyme", "enzyme")
XS = (0.7, -1.3, 2.5)
ARR = T.ArrayType(T.float64, 1, "C")


@pytest.mark.parametrize("opt", [0, 1, 2, 3])
@pytest.mark.parametrize("case", sorted(C.CASES))
def test_nested_jobs_of_two_plugins_compose(case, opt):
    fn, exact = C.CASES[case]
    f = jit(fn, plugins=PLUGINS, opt_level=opt)
    for x in XS:
        assert f(x) == pytest.approx(exact(x), rel=1e-13, abs=1e-14)


@pytest.mark.parametrize("case", sorted(C.KERNELS))
def test_compositions_in_the_cpu_grid_emulation(case):
    exact = C.CASES[case][1]
    k = kernel(C.KERNELS[case], plugins=PLUGINS)
    xs = np.linspace(-2.0, 2.0, 70)
    out = np.zeros_like(xs)
    k[3, 32, "cpu"](xs, out)
    np.testing.assert_allclose(out, [exact(x) for x in xs], rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("case", sorted(C.KERNELS))
def test_compositions_compile_for_ptx(case, libdevice_path):
    k = kernel(C.KERNELS[case], plugins=PLUGINS)
    defined, declared = defined_and_declared(k.inspect_llvm(ARR, ARR))
    assert not {"gpuc.lookup", "__autodiff", "__enzyme_autodiff", "gpuc.enzyme.autodiff"} & (defined | declared)
    assert not any(n.startswith("__nv_") for n in declared)  # libdevice's sin and cos linked in


@pytest.mark.parametrize("case", sorted(C.FAILING))
def test_an_error_in_the_innermost_job_stops_every_caller(case):
    fn, order = C.FAILING[case]
    f = jit(fn, plugins=PLUGINS)
    assert f(4.0) == pytest.approx(0.25 if order else 2.0, rel=1e-15)
    with pytest.raises(ValueError, match="root_of needs x >= 0"):
        f(-1.0)
    assert f(9.0) == pytest.approx(1 / 6 if order else 3.0, rel=1e-15)  # nothing left behind


def test_the_calling_convention_is_the_nested_jobs_own():
    """The nested code generation reads :attr:`DeferredJob.takes_error_slot`, as the callers do."""
    from gpucompiler import CompilerConfig, NativeTarget
    from gpucompiler.interpreter.deferred import _REGISTRY

    jit(C.m_dg, plugins=PLUGINS)(0.5)
    jobs = [j for j in _REGISTRY.values() if j.fn in (C.dg, C.g)]
    assert {type(j.meta).__name__ for j in jobs} == {"AutodiffMeta", "EnzymeMeta"}
    for job in jobs:
        assert isinstance(job, DeferredJob)
        assert job.takes_error_slot is job.stops_on_errors  # both metas ask for a slot
        assert nested_checks(job, CompilerConfig(NativeTarget()))["error_slot"] is job.takes_error_slot


def test_exact_references():
    """The references themselves, against central differences."""
    h = 1e-6
    for x in XS:
        assert C.dg_exact(x) == pytest.approx((C.g(x + h) - C.g(x - h)) / (2 * h), rel=1e-7)
        assert C.ddg_exact(x) == pytest.approx((C.dg_exact(x + h) - C.dg_exact(x - h)) / (2 * h), rel=1e-7)
    assert math.isfinite(C.ddg_exact(0.0))
