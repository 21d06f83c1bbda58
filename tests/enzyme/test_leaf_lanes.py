"""Vector forward mode with one shadow buffer per argument (c/leaf_lanes.c, :mod:`enzyme_plugin.ad.leaf`):
``enzyme_width, 4`` and one shadow after each duplicated pointer, the 4 tangents of each double side by
side, through both routes at every level, against the exact Jacobian; what the convention does not cover (a
returned derivative, floats, the buffer handed to a call) is an ADError naming it."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import enzyme_plugin
from clang_levels import C_DIR, LEVELS, compile_c, needs_clang
from enzyme_plugin.ad.errors import ADError
from enzyme_plugin.cc import clang_ir
from enzyme_plugin.cpipeline import differentiate_in_pipeline
from gpucompiler.runtime import CPULibrary

pytestmark = needs_clang
_P = ctypes.POINTER(ctypes.c_double)
_LANES = 4


def _differentiated(route: str, level: str, case: int = 0) -> str:
    defines = (f"-DCASE={case}",)
    if route == "pipeline":
        n = int(level[1])
        return differentiate_in_pipeline(clang_ir(C_DIR / "leaf_lanes.c", n, [
            f"-I{C_DIR}", "--target=x86_64-pc-linux-gnu", "-ffp-contract=off", *defines]), n)
    return enzyme_plugin.differentiate(compile_c("leaf_lanes.c", level, extra=defines))


@pytest.mark.parametrize(("route", "level"), [(r, lv) for r in ("optimised", "pipeline") for lv in LEVELS])
def test_lanes_side_by_side_give_the_jacobian(route, level):
    lib = CPULibrary.from_ir(_differentiated(route, level))
    jac = lib.function("cubes_jac4", None, _P, _P, _P, _P, ctypes.c_size_t)
    rng = np.random.default_rng(4)
    for n in (4, 7):
        x, w = rng.uniform(-1.5, 1.5, n), rng.uniform(0.1, 2.0, n)
        jx = np.zeros(n * _LANES)
        directions = rng.uniform(-1, 1, (_LANES, n))  # lane k: direction k
        for k in range(_LANES):
            jx[k::_LANES] = directions[k]
        jout = np.full(2 * _LANES, np.nan)
        jac(x.ctypes.data_as(_P), w.ctypes.data_as(_P), jx.ctypes.data_as(_P), jout.ctypes.data_as(_P), n)
        s = float(np.sum(w * x ** 3))
        grad_s = 3 * w * x ** 2
        grad_p = grad_s * x[0]
        grad_p[0] += s
        np.testing.assert_allclose(jout.reshape(2, _LANES), np.stack([directions @ grad_s, directions @ grad_p]),
                                   rtol=1e-13)
        np.testing.assert_array_equal(jx.reshape(n, _LANES).T, directions)  # the directions are left alone


@pytest.mark.parametrize(("case", "names"), [(1, "returns double"), (2, "a float load"), (3, "'call'")])
@pytest.mark.parametrize("route", ["optimised", "pipeline"])
def test_what_one_buffer_per_argument_does_not_cover_is_refused(case, names, route):
    with pytest.raises(ADError, match="one shadow buffer per argument") as info:
        _differentiated(route, "O0", case)
    assert names in str(info.value)
