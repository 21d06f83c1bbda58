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
