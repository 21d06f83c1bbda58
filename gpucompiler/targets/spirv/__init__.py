"""SPIR-V for Vulkan compute: ``spirv1.6-unknown-vulkan1.3-compute`` shaders from kernels.

A kernel compiles to one compute shader (``"hlsl.shader"="compute"``) whose
workgroup size is fixed in the module (``LocalSize``), so the target carries
it. :func:`~.entry.wrapper_ir` gives the shader its entry point (arguments
from storage buffers, :class:`~.entry.Layout`); :func:`~.logical.to_logical`
rebuilds memory accesses on Vulkan's logical pointers, atomics at device
scope (:mod:`.atomics`); ``emit("obj")`` is the
SPIR-V binary, which :func:`validate_binary` checks with ``spirv-val`` in
Vulkan's environment. The runtime is :mod:`gpucompiler.runtime.vulkan`.
"""

from __future__ import annotations

import functools

import attrs
import llvmlite.binding as llvm

from ...contain import contained
from ...errors import ConfigError, ErrorKind
from ...llvm import initialize
from ...core import Rules, Target
from ..native import cached_target_machine, emit_with
from ...core.facts import ModuleFacts
from ...core.mathfns import math_function
from .atomics import EXTENSIONS
from .exits import exit_through_headers
from .libm64 import IMPLEMENTED
from .lower import MATH_F64, lower_shader
from ..ptx import entry_name
from .rules import BARRIER, INDEX_READS, KERNEL_RULES_SPIRV, MATH_RULES_SPIRV, NAME
from .warp import aggregate_adds
from .tools import (SpirvValidationError, no_contraction, order_barriers, place_merges, relaxed_atomics,
                    validate_binary)

TRIPLE = "spirv1.6-unknown-vulkan1.3-compute"
"""SPIR-V 1.6 for Vulkan 1.3 compute (logical addressing, ``GLSL.std.450``)."""


@functools.cache
def _enable_extensions() -> None:
    """Let LLVM's SPIR-V back end use the float-atomic extensions (a process-wide LLVM option, set once)."""
    llvm.set_option("", "--spirv-ext=" + ",".join("+" + e for e in EXTENSIONS))


def _workgroup(value) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and d >= 1 for d in dims):
        raise ConfigError(f"a Vulkan workgroup is 1 to 3 positive ints, got {value!r}")
    x, y, z = (*dims, 1, 1)[:3]
    if x * y * z > 1024:
        raise ConfigError(f"a Vulkan workgroup has at most 1024 invocations here, got {x * y * z}")
    return x, y, z


@attrs.frozen
class SPIRVTarget(Target):
    """A Vulkan compute shader with ``workgroup`` invocations per workgroup (the launch's block)."""

    name = NAME
    runtime_module = "gpucompiler.runtime.vulkan"
    spellings = ("spirv", "spirv:X[xY[xZ]]")
    is_gpu = True

    @classmethod
    def from_spelling(cls, arg: str) -> SPIRVTarget | None:
        """``spirv`` (64 invocations per workgroup) or ``spirv:16x16`` (the workgroup's shape)."""
        if not arg:
            return cls()
        parts = arg.split("x")
        if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
            return None
        return cls(workgroup=tuple(int(p) for p in parts))

    workgroup: tuple[int, int, int] = attrs.field(default=(64, 1, 1), converter=_workgroup)
    subgroups: bool = True
    """whether the device runs subgroup votes and arithmetic in compute shaders (Vulkan 1.1's
    ``subgroupSupportedOperations``; every desktop driver and lavapipe): a subgroup's atomic adds to one
    address are then summed before one atomic add (:mod:`.warp`); False: an atomic add per lane (the
    runtime's launches compile with what the device reports)"""
    aggregate_atomics: bool = True
    """sum a subgroup's atomic adds to one address first (with ``subgroups``; :mod:`.warp`); False: one
    atomic per invocation"""

    def for_inference(self) -> SPIRVTarget:
        return SPIRVTarget()

    def rule_overlays(self) -> tuple[Rules, ...]:
        """float64 math in the kernel language (:mod:`.libm64`) and the kernel language on Vulkan
        (indices, barriers, shared memory, shuffles)."""
        return (MATH_RULES_SPIRV, KERNEL_RULES_SPIRV)

    def inactive_intrinsic(self, name: str) -> bool:
        """Thread, workgroup and lane index reads, and the workgroup size."""
        return name in INDEX_READS

    def barrier_intrinsic(self, name: str) -> bool:
        """The workgroup barrier of ``syncthreads()``."""
        return name == BARRIER

    def triple(self) -> str:
        return TRIPLE

    def target_machine(self, opt_level: int) -> llvm.TargetMachine:
        initialize()
        _enable_extensions()
        return cached_target_machine(TRIPLE, "", "", opt_level)

    def options(self) -> dict:
        return {"workgroup": self.workgroup}

    def prepare(self, job, module) -> None:
        """Triple and layout, and every function but a kernel's entry ``alwaysinline``: a shader inlines
        everything anyway, and inlined before AD, a gradient keeps its values in registers (the gradient
        of a call that stays one keeps them on a heap tape, which Vulkan does not have)."""
        super().prepare(job, module)
        entry = entry_name(job, module.ref) if job.config.kernel else None
        for fn in module.ref.functions:
            if fn.is_declaration or fn.name == entry:
                continue
            if not any(b"noinline" in a for a in fn.attributes):
                fn.add_function_attribute("alwaysinline")

    def finish(self, job, module) -> None:
        """Give a kernel its shader entry point and logical pointers (see the module docstring), sum
        subgroups' atomic adds (:mod:`.warp`), and let loops leave through their headers (:mod:`.exits`)."""
        if not job.config.kernel:
            raise ConfigError("the SPIR-V target compiles kernels (@kernel): Vulkan runs compute shaders, "
                              "which take no arguments and return nothing")
        lower_shader(job, module, self)
        if self.subgroups and self.aggregate_atomics:
            aggregate_adds(module.model)
        for fn in module.model.functions.values():
            if not fn.is_declaration:
                exit_through_headers(fn)

    def validate(self, job, module, facts: ModuleFacts) -> list[tuple[str, str]]:
        """UNKNOWN_FUNCTION (libm calls, float64 functions Vulkan lacks), RECURSION, DYNAMIC_ALLOCATION."""
        errors = []
        for name, users in sorted(facts.external_uses.items()):
            if name.startswith("llvm.") and name not in MATH_F64:
                continue
            where = ", ".join("@" + u for u in users)
            fn = math_function(name)
            math = MATH_F64.get(name) or (fn.libm if fn is not None and name == fn.libm else None)
            if math is not None:
                hint = (f"Vulkan's GLSL.std.450 has no 64-bit {math}, and this target implements only float64 "
                        f"{', '.join(IMPLEMENTED)}: compute it in float32, or run the kernel on PTX or the CPU "
                        "emulation")
            else:
                hint = "a Vulkan shader can call only functions in its module and SPIR-V intrinsics"
            errors.append((ErrorKind.UNKNOWN_FUNCTION, f"call to @{name} in {where}: {hint}"))
        return errors + facts.recursion_errors() + facts.allocation_errors() + facts.pointer_constant_errors()

    def emit(self, job, module, kind: str) -> str | bytes:
        """``obj`` is the SPIR-V binary (made in a child process: LLVM's back end may stop the process;
        checked by ``spirv-val`` when installed); ``asm`` its LLVM assembly."""
        # code generation at -O0 (the IR is optimised already): LLVM 22's SPIR-V back end at higher levels
        # rewrote `4 * m + (i & 3)` in a loop into 8-bit arithmetic without the mask (an element 4 off)
        machine = self.target_machine(0 if kind == "obj" else job.config.opt_level)
        if kind != "obj":
            return emit_with(machine, module, kind)
        ref = module.ref
        binary = contained(lambda: machine.emit_object(ref), f"the SPIR-V shader {job.name}")
        binary = relaxed_atomics(no_contraction(place_merges(order_barriers(binary))))
        validate_binary(binary)
        return binary


__all__ = ["TRIPLE", "KERNEL_RULES_SPIRV", "SPIRVTarget", "SpirvValidationError", "validate_binary"]
