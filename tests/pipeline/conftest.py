"""Helpers for pipeline tests: jobs on the host target, plugins registered for one test only."""

from __future__ import annotations

import pytest

import gpucompiler.plugin as gp
from gpucompiler import CompilerConfig, CompilerJob, LLVMSource, NativeTarget

ADD_IR = """\
define i32 @add(i32 %a, i32 %b) {
entry:
  %p = alloca i32
  store i32 %a, ptr %p
  %x = load i32, ptr %p
  %s = add i32 %x, %b
  ret i32 %s
}
"""


def make_job(ir: str = ADD_IR, entry: str = "add", **config) -> CompilerJob:
    return CompilerJob(LLVMSource(ir, entry), CompilerConfig(target=NativeTarget(), **config))


@pytest.fixture
def register():
    """``register(PluginClass)`` for the duration of one test."""
    names: list[str] = []

    def add(plugin, **kwargs):
        instance = gp.register(plugin, **kwargs)
        names.append(instance.name)
        return instance

    yield add
    for name in reversed(names):
        if name in gp.discovered():
            gp.unregister(name)
