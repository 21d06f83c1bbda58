"""The frontend's records (the bytecode frontend's instructions, blocks, loops, nested functions and
iterators; a ``prange`` region; a power loop's plan) are plain classes: a dataclass or an ``attrs`` class
took ~0.3-0.5 ms to make, at each process's first compile; and the code they carry compiles as CPython runs
it."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil

import attrs
import pytest

import gpucompiler.frontend.bytecode as bytecode
from gpucompiler import jit
from gpucompiler.frontend.parallel import Region
from gpucompiler.frontend.powerloops import PowerPlan

SOURCE = '''
def records(n, k):
    def scaled(x, f=2.0, g=3):
        return x * f + g
    shift = lambda y, z=1.5: y - z  # noqa: E731
    total = 0.0
    for i in range(n):
        if i == k:
            break
        total += scaled(i) + shift(i)
    else:
        total -= 100.0
    j = 0
    while j < n:
        total += scaled(j, 0.5, 1)
        j += 2
    return total
'''


def test_the_bytecode_frontends_modules_make_no_dataclass():
    made = []
    for info in pkgutil.iter_modules(bytecode.__path__, bytecode.__name__ + "."):
        module = importlib.import_module(info.name)
        made += [f"{info.name}.{name}" for name, value in vars(module).items()
                 if isinstance(value, type) and value.__module__ == info.name and dataclasses.is_dataclass(value)]
    assert made == []


def test_a_prange_region_and_a_power_loops_plan_are_not_attrs_classes():
    assert [cls.__name__ for cls in (Region, PowerPlan) if attrs.has(cls)] == []


@pytest.mark.parametrize("n, k", [(0, 0), (5, 9), (7, 3), (8, 0)])
def test_loops_nested_defaults_and_lambdas_without_source_compile_as_cpython_runs_them(n, k):
    namespace: dict = {}
    exec(compile(SOURCE, "<string>", "exec"), namespace)  # no source file: the bytecode frontend
    fn = namespace["records"]
    assert jit(fn)(n, k) == pytest.approx(fn(n, k), rel=1e-15, abs=0.0)
