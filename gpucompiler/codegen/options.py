"""Typed options of code generation."""

from __future__ import annotations

import enum


class ErrorPolicy(str, enum.Enum):
    """How compiled code reports a failed check (an index out of bounds); a ``str``, so that it
    prints as its value."""

    PYTHON = "python"
    """set the Python exception (functions called from Python through the Python ABI)"""
    EMULATION = "emulation"
    """call the CPU grid emulation's callback (kernels run on the CPU)"""
    TRAP = "trap"
    """``llvm.trap`` (the GPU: the launch fails)"""

    def __str__(self) -> str:
        return self.value
