"""The Enzyme plugin's typed options: ``@jit(plugins=("enzyme",), options=EnzymeOptions(...))``."""

from __future__ import annotations

import attrs

from gpucompiler.core import PluginOptions


@attrs.frozen
class EnzymeOptions(PluginOptions):
    """Options of the ``enzyme`` plugin (part of the job key; the defaults when none are given)."""

    plugin = "enzyme"
    atomic_adjoints: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    """accumulate adjoints into memory with atomic adds in host code too (kernels always do: threads
    share memory there)"""
    tape_arena: int = attrs.field(default=1024, validator=[attrs.validators.instance_of(int),
                                                           attrs.validators.ge(0)])
    """bytes of the tape arena of each ``autodiff`` call in a kernel: the loop tapes a thread carves from
    local memory before any reaches the device heap (0: straight to the heap; docs/enzyme.md)"""
    noneed_writes: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    """in reverse mode, leave out the writes into a ``DuplicatedNoNeed`` argument's memory where nothing in the
    differentiated function reads it: the caller promises that no other argument reaches that memory (a launch
    tape's gradient kernels, which check each launch's arrays)"""
