"""What the PyTorch and JAX wrappers share: a host program of kernel launches, run under a launch tape.

A *program* is a Python function ``program(device, *inputs, *outputs)``
that launches kernels (``k[grid, block, device](...)``) reading the input
arrays and writing the output arrays; ``device`` is ``"cpu"`` (the CPU grid
emulation) or the CUDA stream of the arrays' producer. ``outputs(*inputs)``
gives the ``(shape, dtype)`` of each output; the wrappers allocate them
zeroed on the inputs' device. A program must not write its inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from gpucompiler.errors import ArgumentTypeError

from ..locations import caller_location
from ..launches import LaunchTape


@attrs.frozen
class Program:
    """A program, the shapes of its outputs, and whether its tape runs in split mode."""

    fn: Callable[..., Any]
    outputs: Callable[..., Sequence[tuple[tuple[int, ...], Any]]]
    split: bool = False

    def output_specs(self, inputs, dtype_of: Callable[[Any], np.dtype] = np.dtype) -> list[tuple[tuple[int, ...],
                                                                                                 np.dtype]]:
        """``(shape, NumPy dtype)`` of each output; ``dtype_of`` reads the library's dtypes."""
        specs = list(self.outputs(*inputs))
        out = []
        for k, spec in enumerate(specs):
            if not (isinstance(spec, tuple) and len(spec) == 2):
                raise ArgumentTypeError(f"output {k}", type(spec).__name__, caller_location(), "outputs",
                                        hint="outputs(*inputs) returns one (shape, dtype) pair per output")
            shape, dtype = spec
            out.append((tuple(int(n) for n in shape), dtype_of(dtype)))
        return out

    def record(self, device, inputs: Sequence, outputs: Sequence) -> LaunchTape:
        """Run the program on ``inputs`` into ``outputs`` under a fresh tape."""
        tape = LaunchTape(split=self.split)
        with tape:
            self.fn(device, *inputs, *outputs)
        return tape


def gradient_or_zeros(tape: LaunchTape, a, zeros: Callable[[], Any]):
    """The gradient the tape holds for ``a``, or zeros when no launch took ``a``."""
    return tape.gradient(a) if tape.knows(a) else zeros()


def is_float(dtype) -> bool:
    return np.dtype(dtype).kind == "f"


def check_program(fn, outputs) -> None:
    if not callable(fn) or not callable(outputs):
        raise ArgumentTypeError("program" if not callable(fn) else "outputs",
                                type(fn if not callable(fn) else outputs).__name__, caller_location(),
                                hint="pass program(device, *inputs, *outputs) and outputs(*inputs) -> "
                                     "[(shape, dtype), ...]")


__all__ = ["Program", "check_program", "gradient_or_zeros", "is_float"]
