"""Three plugins of a plugin author's kind (tests/plugin_authors/author_plugins), installed through entry
points: alone, with the Enzyme plugin and with each other (and mock_enzyme), at O0..O3, on the CPU, the
CPU grid emulation and PTX (ptxas), against exact values and derivatives."""

from __future__ import annotations

import importlib.metadata
import math

import numpy as np
import pytest

import author_funcs as A
import gpucompiler.plugin as gp
from gpucompiler import CompilerConfig, CompilerJob, NativeTarget, jit, kernel
from gpucompiler.pipeline import compile
from gpucompiler.source import FunctionSpec
from gpucompiler import types as T
from gpucompiler.llvm import parse

OPTS = [0, 1, 2, 3]
ALL = ("divsan", "overlay", "keep_rules", "enzyme", "mock_enzyme")
XS = (0.3, -0.8, 1.1)


def close(got, want):
    return got == pytest.approx(want, rel=1e-12, abs=1e-13)


def test_the_plugins_load_through_their_entry_points(installed):
    eps = {ep.name: ep.value for ep in importlib.metadata.entry_points(group=gp.ENTRY_POINT_GROUP)}
    assert {"divsan", "overlay", "keep_rules"} <= set(eps)
    found = gp.enabled(("divsan", "overlay", "keep_rules"))
    assert [type(p).__module__ for p in found] == ["author_plugins.divsan", "author_plugins.keep_rules",
                                                   "author_plugins.overlay"]


# -- the CPU -----------------------------------------------------------------------------------
@pytest.mark.parametrize("opt", OPTS)
def test_divsan_alone_and_with_enzyme(installed, opt):
    f = jit(A.ratio, plugins=("divsan",), opt_level=opt, error_model="numpy")
    df = jit(A.d_ratio, plugins=("divsan", "enzyme"), opt_level=opt, error_model="numpy")
    for a, b in ((3.0, 2.0), (3.0, 0.0), (-1.5, 0.25)):
        assert close(f(a, b), A.ratio_ref(a, b))
        assert close(df(a, b), A.d_ratio_ref(a, b))
    assert math.isinf(jit(A.ratio, opt_level=opt, error_model="numpy")(3.0, 0.0))  # without the plugin


@pytest.mark.parametrize("opt", OPTS)
def test_overlay_alone_and_with_enzyme(installed, opt):
    f = jit(A.exp_twice, plugins=("overlay",), opt_level=opt)
    df = jit(A.d_exp_twice, plugins=("overlay", "enzyme"), opt_level=opt)
    for x in XS:
        assert close(f(x), A.exp_twice_ref(x))
        assert close(df(x), A.d_exp_twice_ref(x))


@pytest.mark.parametrize("opt", OPTS)
def test_keep_rules_keeps_the_rule_a_call_through_ad(installed, opt):
    df = jit(A.d_kept, plugins=("keep_rules", "enzyme"), opt_level=opt)
    for x in XS:
        assert close(df(x), A.d_kept_ref(x))
    assert close(jit(A.kept, plugins=("keep_rules",), opt_level=opt)(0.4), A.kept_ref(0.4))


@pytest.mark.parametrize("opt", OPTS)
def test_all_three_with_enzyme_and_mock_enzyme(installed, opt):
    f = jit(A.m_d_all_three, plugins=ALL, opt_level=opt, error_model="numpy")
    for x in XS:
        for b in (2.0, 0.0):
            assert close(f(x, b), A.d_all_three_ref(x, b))
    g = jit(A.all_three, plugins=ALL, opt_level=opt, error_model="numpy")
    assert close(g(0.6, 0.0), A.all_three_ref(0.6, 0.0))


@pytest.mark.parametrize("opt", OPTS)
def test_keep_rules_reports_the_rule_still_called_after_the_engine(installed, opt):
    job = CompilerJob(FunctionSpec(A.d_kept, (T.float64,)),
                      CompilerConfig(NativeTarget(), opt_level=opt, plugins=("enzyme", "keep_rules")))
    report = compile(job).reports["keep_rules"]
    (rule,) = report["kept"]
    assert ".rule_damp(" in rule and report["called_after_ad"] == [rule]


# -- the CPU grid emulation and PTX --------------------------------------------------------------
N = 64


def inputs():
    rng = np.random.default_rng(7)
    x = rng.uniform(-1.2, 1.2, N)
    b = np.where(np.arange(N) % 5 == 0, 0.0, rng.uniform(0.5, 2.0, N))
    return x, b


KERNELS = {
    "divsan": (A.k_ratio, ("divsan", "enzyme"), 2,
               lambda x, b: [A.d_ratio_ref(a, c) + A.ratio_ref(a, c) for a, c in zip(x, b)]),
    "overlay": (A.k_exp_twice, ("overlay", "enzyme"), 1, lambda x, b: [A.d_exp_twice_ref(a) for a in x]),
    "keep_rules": (A.k_kept, ("keep_rules", "enzyme"), 1, lambda x, b: [A.d_kept_ref(a) for a in x]),
    "all": (A.k_all_three, ALL, 2, lambda x, b: [A.d_all_three_ref(a, c) for a, c in zip(x, b)]),
}


def args_of(nin, x, b):
    return (x, b)[:nin]


@pytest.mark.parametrize("opt", OPTS)
@pytest.mark.parametrize("case", sorted(KERNELS))
def test_kernels_in_the_cpu_grid_emulation(installed, case, opt):
    fn, plugins, nin, ref = KERNELS[case]
    x, b = inputs()
    out = np.zeros(N)
    kernel(fn, plugins=plugins, opt_level=opt)[2, 32, "cpu"](*args_of(nin, x, b), out)
    np.testing.assert_allclose(out, ref(x, b), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("opt", OPTS)
@pytest.mark.parametrize("case", sorted(KERNELS))
def test_kernels_compile_to_ptx_that_ptxas_accepts(installed, case, opt, check_ptx, libdevice_path):
    fn, plugins, nin, _ = KERNELS[case]
    x, b = inputs()
    k = kernel(fn, plugins=plugins, opt_level=opt)
    module = parse(k.inspect_llvm(*args_of(nin, x, b), np.zeros(N)))
    names = set(module.functions)
    assert not {"__overlay_twice", "__autodiff", "__enzyme_autodiff", "gpuc.lookup"} & names
    assert not [n for n, f in module.functions.items() if f.is_declaration and n.startswith("__nv_")]
    check_ptx(k.inspect_asm(*args_of(nin, x, b), np.zeros(N)))
