"""Compilation targets: the host CPU and NVIDIA PTX.

``parse_target("native" | "ptx" | "ptx:sm_90")`` turns a command-line
spelling into a target object. The targets, which need LLVM, load on first use
(:mod:`gpucompiler.lazy`); their interface, :class:`gpucompiler.core.Target`, is the core's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import attach

if TYPE_CHECKING:
    from .native import NativeTarget
    from .ptx import PTXTarget
    from .spelling import KNOWN_TARGETS, parse_target

_LAZY = {"NativeTarget": ".native", "PTXTarget": ".ptx", "parse_target": ".spelling", "KNOWN_TARGETS": ".spelling"}
__getattr__, __dir__ = attach(__name__, _LAZY, globals())

__all__ = ["NativeTarget", "PTXTarget", "parse_target", "KNOWN_TARGETS"]
