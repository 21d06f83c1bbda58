"""NVIDIA PTX target: sm_XX triple and data layout, libdevice, kernel annotations.

The class (its fields, key, spelling and the hooks inference and AD ask) imports without the code
generation, which :mod:`.ptx_codegen` holds and the hooks that generate code import (a kernel's launch
served from the cache loads neither the IR model nor LLVM, nor the kernel language's overlays).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import attrs

from ..errors import ConfigError
from ..core import Rules, Target, WarpIntrinsics
from .libdevicefile import libdevice_digest

if TYPE_CHECKING:
    import llvmlite.binding as llvm

    from ..core.facts import ModuleFacts


def _capability(value: Iterable[int]) -> tuple[int, int]:
    major, minor = value
    return major, minor

TRIPLE = "nvptx64-nvidia-cuda"

#: lowest PTX ISA version supporting each compute capability (PTX ISA manual, "Release notes")
MIN_PTX_VERSION = {
    (5, 0): 40, (5, 2): 41, (5, 3): 42, (6, 0): 50, (6, 1): 50, (6, 2): 50,
    (7, 0): 60, (7, 2): 61, (7, 5): 63, (8, 0): 70, (8, 6): 71, (8, 7): 74, (8, 9): 78,
    (9, 0): 78, (10, 0): 86, (10, 1): 86, (10, 3): 88, (12, 0): 87, (12, 1): 88,
}
#: PTX ISA versions LLVM 22's NVPTX back end knows (``+ptxNN`` features)
LLVM_PTX_VERSIONS = frozenset({32, 40, 41, 42, 43, 50, 60, 61, 62, 63, 64, 65, 70, 71, 72, 73,
                               74, 75, 76, 77, 78, 80, 81, 82, 83, 84, 85, 86, 87, 88, 90})
#: functions the CUDA driver provides to every kernel
DEVICE_RUNTIME = frozenset({"vprintf", "__assertfail"})
GLOBAL = 1
"""The NVPTX address space of global (device) memory."""
WARP_PTX_VERSION = 62
"""The first PTX ISA version with ``activemask`` (and the ``.sync`` shuffles and votes, from 6.0)."""


@attrs.frozen
class PTXTarget(Target):
    """PTX for compute capability ``capability`` (default sm_90, the H100).

    ``ptx_version`` of ``None`` picks the lowest ISA version that supports the
    capability; ``fastmath`` flushes single-precision denormals to zero (also
    in libdevice), marks floating-point operations ``fast`` and computes
    ``a / sqrt(x)`` as ``a * rsqrt(x)`` (libdevice's ``__nv_rsqrt``, within
    about one ulp, instead of a correctly rounded square root and division);
    ``maxregs`` limits registers per thread in kernels; ``aggregate_atomics`` sums a warp's atomic adds
    to one address before one atomic (:mod:`.warpatomics`; False: one atomic per thread).
    """

    name = "ptx"
    spellings = ("ptx", "ptx:sm_XY", "ptx:sm_XY:ptxNN")
    kernel_default = True
    launch_artifact = "asm"
    runtime_module = "gpucompiler.runtime.cuda"
    is_gpu = True

    @classmethod
    def from_spelling(cls, arg: str) -> PTXTarget | None:
        """``ptx`` (sm_90), ``ptx:sm_XY`` (compute capability X.Y) or ``ptx:sm_XY:ptxNN`` (and PTX ISA
        version N.N, for a GPU newer than this table)."""
        if not arg:
            return cls()
        arch, _, isa = arg.partition(":")
        if not (arch.startswith("sm_") and arch[3:].isdigit() and len(arch) >= 5):
            return None
        if isa and not (isa.startswith("ptx") and isa[3:].isdigit()):
            return None
        digits = arch[3:]
        return cls(capability=(int(digits[:-1]), int(digits[-1])), ptx_version=int(isa[3:]) if isa else None)

    def for_inference(self) -> PTXTarget:
        return PTXTarget()

    def warp_intrinsics(self) -> WarpIntrinsics | None:
        """``activemask``, ``vote.sync``, ``shfl.sync`` and ``%laneid``; None before PTX ISA 6.2 (sm_72 and older
        by default), which has no ``activemask`` (LLVM would stop the process)."""
        if self.isa_version() < WARP_PTX_VERSION:
            return None
        return WarpIntrinsics(active_mask="llvm.nvvm.activemask", vote_all="llvm.nvvm.vote.all.sync",
                              shuffle_index="llvm.nvvm.shfl.sync.idx.i32",
                              shuffle_xor="llvm.nvvm.shfl.sync.bfly.i32", lane_id="llvm.nvvm.read.ptx.sreg.laneid")

    def thread_exit(self) -> str | None:
        return "llvm.nvvm.exit"

    def rule_overlays(self) -> tuple[Rules, ...]:
        """libdevice's math and the NVVM kernel intrinsics (special registers, barriers, shuffles)."""
        from .ptx_overlays import KERNEL_RULES, MATH_RULES  # import time: the kernel language, for inference

        return (MATH_RULES, KERNEL_RULES)

    def for_kernel(self, fastmath: bool, maxregs: int | None) -> PTXTarget:
        return attrs.evolve(self, fastmath=self.fastmath or fastmath,
                            maxregs=maxregs if maxregs is not None else self.maxregs)

    # -- automatic differentiation ------------------------------------------------
    def inactive_intrinsic(self, name: str) -> bool:
        """Thread, block and lane index reads (``llvm.nvvm.read.ptx.sreg.*``)."""
        return name.startswith("llvm.nvvm.read.ptx.sreg.")

    def barrier_intrinsic(self, name: str) -> bool:
        """``llvm.nvvm.barrier*`` (``bar.sync``)."""
        return name.startswith("llvm.nvvm.barrier")

    def math_from_device(self, name: str) -> str | None:
        from .libdevice import libm_name  # import time: libdevice's linking and the math table, for AD

        return libm_name(name)

    def math_to_device(self, name: str) -> str | None:
        """libdevice's version (``__nv_cos``): NVPTX has no lowering for most ``llvm.<math>`` intrinsics."""
        from .libdevice import device_name  # import time: libdevice's linking and the math table, for AD

        return device_name(name)

    capability: tuple[int, int] = attrs.field(default=(9, 0), converter=_capability)
    ptx_version: int | None = None
    fastmath: bool = False
    maxregs: int | None = None
    aggregate_atomics: bool = True

    # -- identity ---------------------------------------------------------
    def triple(self) -> str:
        return TRIPLE

    def cpu(self) -> str:
        """The ``sm_XY`` LLVM generates code for."""
        return f"sm_{self.capability[0]}{self.capability[1]}"

    def isa_version(self) -> int:
        """The PTX ISA version, e.g. 78 for ``.version 7.8``."""
        lowest = MIN_PTX_VERSION.get(self.capability)
        version = self.ptx_version if self.ptx_version is not None else lowest
        if version is None:
            raise ConfigError(
                f"no known PTX ISA version for {self.cpu()}; known capabilities: "
                + ", ".join(f"sm_{a}{b}" for a, b in MIN_PTX_VERSION)
                + f". For a newer GPU name the PTX ISA version: the target ptx:{self.cpu()}:ptx88 (gpuc "
                f"--target), PTXTarget(capability={self.capability}, ptx_version=88) in Python")
        if lowest is not None and version < lowest:
            raise ConfigError(f"PTX ISA version {version} does not support {self.cpu()}; "
                              f"use ptx_version >= {lowest} (or None for the lowest that does)")
        if version not in LLVM_PTX_VERSIONS:
            from ..llvm.binding import llvm_version  # import time: llvmlite's library, for this error only

            raise ConfigError(f"LLVM {llvm_version()} does not know PTX ISA "
                              f"version {version}; known: {', '.join(map(str, sorted(LLVM_PTX_VERSIONS)))}")
        return version

    def data_layout(self) -> str:
        """The data layout of the machine at level 3, a kernel's default, which its compile makes anyway
        (the level does not change the layout; level 2 made a second machine, ~0.7 ms)."""
        return str(self.target_machine(3).target_data)

    def target_machine(self, opt_level: int) -> llvm.TargetMachine:
        from .ptx_codegen import target_machine  # import time: LLVM and the code generation, not for a hit

        return target_machine(self, opt_level)

    def machine(self) -> dict:
        return {"triple": TRIPLE, "libdevice": libdevice_digest()}

    def options(self) -> dict:
        return {"fastmath": self.fastmath, "maxregs": self.maxregs, "capability": self.capability,
                "aggregate_atomics": self.aggregate_atomics}

    # -- pipeline hooks ----------------------------------------------------
    def before_optimize(self, job, module, final: bool) -> None:
        """Before the last optimisation (``final``): libdevice pruned on a thread to the functions the
        ``finish`` stage will link (:func:`.ptx_codegen.prune_libdevice_ahead`)."""
        if final:
            from .ptx_codegen import prune_libdevice_ahead  # import time: the code generation, for a compile

            prune_libdevice_ahead(self, module)

    def finish(self, job, module) -> None:
        """Annotate the kernel, make atomic adds into a thread's own element plain
        (:mod:`.ptx_ownelements`), combine a warp's adds into neighbouring elements
        (:mod:`.ptx_neighbouradds`), sum warps' atomic adds (:mod:`.warpatomics`), make zero stores
        wait for their loads (:mod:`.ptx_zerostores`), link libdevice, set fast-math and reflect
        flags, re-optimise.

        Only the ``__nv_*`` functions the module declares are linked; they
        are internalised and, once inlined, removed by global DCE, so the
        output never carries the library. The passes above run on the
        Python model before the link, which they leave alone (a libdevice
        call is a declaration to them, linked or not), so that it never
        parses the library's functions; fast-math alone marks them, after.
        """
        from .ptx_codegen import finish  # import time: the IR model, libdevice, the atomics' passes, LLVM

        finish(self, job, module)

    def validate(self, job, module, facts: ModuleFacts) -> list[tuple[str, str]]:
        """UNKNOWN_FUNCTION, RECURSION, DYNAMIC_ALLOCATION and POINTER_CONSTANT, all at once."""
        from .ptx_codegen import validate  # import time: the module facts and libdevice, for a compile

        return validate(job, module, facts)

    def emit(self, job, module, kind: str) -> str | bytes:
        """``asm`` is PTX text; ``obj`` (a cubin) is ptxas's job, not LLVM's."""
        if kind == "obj":
            raise ConfigError("the PTX target emits 'asm' (PTX text), 'llvm' or 'bc'; assemble the "
                              "PTX with ptxas (or load it with the CUDA driver) for a cubin")
        from .ptx_codegen import emit  # import time: LLVM's code generation, not for a hit

        return emit(self, job, module, kind)

    def check_output(self, kind: str, artifact: str | bytes) -> None:
        """``ptxas`` assembles PTX (``asm``) for this capability; its errors are a ToolchainError."""
        from .ptx_codegen import check_output  # import time: subprocess, tempfile, for a compile

        check_output(self, kind, artifact)


def entry_name(job, ref: llvm.ModuleRef) -> str:
    """The entry's name in ``ref``: the job's output name once the driver renamed it."""
    names = {f.name for f in ref.functions}
    return job.name if job.name in names else job.source.entry

