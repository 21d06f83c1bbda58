"""Compilation targets, one file each (the host CPU, NVIDIA PTX...), registered by name when loaded.

``parse_target("native" | "ptx" | "ptx:sm_90")`` turns a command-line
spelling into a target object; ``known_targets()`` lists the spellings. The targets, which need LLVM, load on first use
(:mod:`gpucompiler.lazy`); their interface, :class:`gpucompiler.core.Target`, is the core's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import attach

if TYPE_CHECKING:
    from .native import NativeTarget
    from .ptx import PTXTarget
    from .spelling import default_kernel_target, known_targets, parse_target, target_class, target_classes

_LAZY = {"NativeTarget": ".native", "PTXTarget": ".ptx", "parse_target": ".spelling", "known_targets": ".spelling",
         "target_class": ".spelling", "target_classes": ".spelling", "default_kernel_target": ".spelling"}
__getattr__, __dir__ = attach(__name__, _LAZY, globals())

__all__ = ["NativeTarget", "PTXTarget", "default_kernel_target", "known_targets", "parse_target", "target_class",
           "target_classes"]
