"""The public contract between another plugin and Enzyme: ``enzyme_plugin.contract.mark_inactive`` makes
calls of a function inactive for AD (no private name prefix, no hand-rolled rename), and the function
gets its name back after AD."""

from __future__ import annotations

import math

import numpy as np
import pytest

import contract_funcs as C
import gpucompiler.plugin as gp
from enzyme_plugin.contract import mark_inactive
from gpucompiler import jit, kernel
from gpucompiler import types as T
from gpucompiler.llvm import Function, parse
from gpucompiler.llvm import types as LT


class Constant(gp.Plugin):
    """Marks every function named ``*.noise(...)`` inactive for AD."""

    name, version = "constant_noise", "1"

    @gp.callback("pre_ad")
    def mark(self, module):
        model = module.model
        for fn in [f for n, f in model.functions.items() if ".noise(" in n]:
            mark_inactive(model, fn)


@pytest.mark.parametrize("opt", [0, 1, 2, 3])
def test_an_inactive_function_contributes_no_derivative(register, opt):
    register(Constant)
    marked = jit(C.dg, plugins=("enzyme", "constant_noise"), opt_level=opt)
    plain = jit(C.dg, plugins=("enzyme",), opt_level=opt)
    for x in (0.3, -1.2, 2.0):
        assert marked(x) == pytest.approx(math.sin(x) + 2 * x, rel=1e-14)  # d/dx treats noise(x) as constant
        assert plain(x) == pytest.approx(math.sin(x) + x * math.cos(x) + 2 * x, rel=1e-14)
    names = set(parse(marked.inspect_llvm(T.float64)).functions)
    assert not [n for n in names if n.startswith("gpuc.inactive.")]  # its name is back after AD


def test_in_the_grid_emulation(register):
    register(Constant)
    x = np.linspace(-2.0, 2.0, 40)
    out = np.zeros(40)
    kernel(C.k_dg, plugins=("enzyme", "constant_noise"))[2, 32, "cpu"](x, out)
    np.testing.assert_allclose(out, np.sin(x) + 2 * x, rtol=1e-14)


def test_the_model_renames_a_function_and_its_uses():
    m = parse("declare double @f(double)\ndefine double @g(double %x) {\n  %y = call double @f(double %x)\n"
              "  ret double %y\n}\n")
    m.rename_function(m.functions["f"], "h")
    assert list(m.functions) == ["h", "g"] and "call double @h(double %x)" in str(m)
    m.add_function(Function("f", LT.function(LT.double, [LT.double])))
    with pytest.raises(ValueError, match="@f already exists"):
        m.rename_function(m.functions["h"], "f")
