"""Targets named on the command line: ``parse_target("native" | "ptx" | "ptx:sm_90")``."""

from __future__ import annotations

from ..errors import UnknownTargetError
from ..core import Target
from .native import NativeTarget
from .ptx import PTXTarget

KNOWN_TARGETS = ("native", "ptx", "ptx:sm_XX")


def parse_target(spec: str | Target) -> Target:
    """Return the target named by ``spec`` (``native``, ``ptx`` or ``ptx:sm_XY``)."""
    if isinstance(spec, Target):
        return spec
    name, _, arg = spec.partition(":")
    if name == "native" and not arg:
        return NativeTarget()
    if name == "ptx":
        if not arg:
            return PTXTarget()
        if arg.startswith("sm_") and arg[3:].isdigit() and len(arg) >= 5:
            digits = arg[3:]
            return PTXTarget(capability=(int(digits[:-1]), int(digits[-1])))
    raise UnknownTargetError(spec, KNOWN_TARGETS, hint="write e.g. ptx:sm_90 for compute capability 9.0")
