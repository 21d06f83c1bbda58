"""Several rule sets in one plugin (for every target and per target) and Numba-@overload-style routes:
a Python implementation per target."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpucompiler.plugin as gp
import rule_funcs as R
from gpucompiler import jit, kernel
from gpucompiler import types as T
from gpucompiler.errors import ConfigError
from gpucompiler.interpreter import RuleSet
from gpucompiler.llvm import parse

everywhere = RuleSet("twoway")
on_ptx = RuleSet("twoway.ptx", target="ptx")


@everywhere.define(R.scale, T.float64, restype=T.float64, pure=False)
def _scale_host(cg, args, argtypes, restype):
    return cg.b.fmul(args[0], cg.const(T.float64, 5.0))  # 5x: tells the rule set used apart from CPython's 3x


@on_ptx.define(R.scale, T.float64, restype=T.float64, pure=False)
def _scale_ptx(cg, args, argtypes, restype):
    return cg.b.fmul(args[0], cg.const(T.float64, 7.0))


@everywhere.overload(R.hypot2)
def _hypot2_host(x, y):
    return math.sqrt(x * x + y * y) + 1000.0  # + 1000: tells the route taken apart


@on_ptx.overload(R.hypot2)
def _hypot2_ptx(x, y):
    return math.hypot(x, y) + 2000.0  # libdevice's hypot on the device; + 2000: the route taken


class TwoWay(gp.Plugin):
    name, version = "twoway", "1"
    rules = (everywhere, on_ptx)


class NotRules(gp.Plugin):
    name, version = "not_rules", "1"
    rules = ("twoway",)


def test_rules_for_every_target_apply_on_the_cpu(register):
    register(TwoWay)
    f = jit(R.uses, plugins=("twoway",))
    for x, y in ((1.5, 2.0), (-3.0, 4.0)):
        assert f(x, y) == pytest.approx(5.0 * x + math.hypot(x, y) + 1000.0, rel=1e-15)


def test_the_ptx_set_wins_on_ptx_and_the_overload_routes_there(register, libdevice_path, check_ptx):
    register(TwoWay)
    k = kernel(R.k_uses, plugins=("twoway",))
    ir = k.inspect_llvm(np.zeros(4), np.zeros(4), np.zeros(4))
    module = parse(ir)
    text = str(module)
    assert "7.000000e+00" in text and "5.000000e+00" not in text  # the PTX set's lowering
    assert "2.000000e+03" in text and "1.000000e+03" not in text  # the PTX route, not the host's
    assert not [n for n, f in module.functions.items() if f.is_declaration and n.startswith("__nv_")]
    check_ptx(k.inspect_asm(np.zeros(4), np.zeros(4), np.zeros(4)))


def test_the_grid_emulation_uses_the_host_rules(register):
    register(TwoWay)
    x, y = np.linspace(-2, 2, 40), np.linspace(1, 3, 40)
    out = np.zeros(40)
    kernel(R.k_uses, plugins=("twoway",))[2, 32, "cpu"](x, y, out)
    np.testing.assert_allclose(out, 5.0 * x + np.hypot(x, y) + 1000.0, rtol=1e-15)


def test_rules_that_are_not_rule_sets_are_a_config_error(register):
    register(NotRules)
    with pytest.raises(ConfigError, match=r"plugin 'not_rules': `rules` must be a RuleSet or a tuple of RuleSets"):
        jit(R.uses, plugins=("not_rules",))(1.0, 2.0)
