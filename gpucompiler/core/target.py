"""The target interface: every hook a target may override, with its default.

A target is a frozen ``attrs`` class (so it is part of the job key) whose
methods *are* the hooks, in the style of GPUCompiler.jl's ``interface.jl``.
The driver (:mod:`gpucompiler.pipeline`) calls them in pipeline order.
Required hooks raise ``NotImplementedError``; the rest have working defaults.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import llvmlite.binding as llvm

    from ..module import IRModule
    from .facts import ModuleFacts
    from .job import CompilerJob
    from .rules import Rules


class Target:
    """Base class of compilation targets."""

    #: short name used on the command line (``--target NAME``)
    name: str = ""

    # -- identity ---------------------------------------------------------
    def triple(self) -> str:
        """The LLVM target triple."""
        raise NotImplementedError

    def data_layout(self) -> str:
        """The LLVM data layout string of the target machine (the opt level does not change it: 2,
        the default, names the machine a compile makes anyway)."""
        return str(self.target_machine(2).target_data)

    def target_machine(self, opt_level: int) -> llvm.TargetMachine:
        """An llvmlite ``TargetMachine`` for code generation at ``opt_level``."""
        raise NotImplementedError

    def machine(self) -> dict[str, Any]:
        """What code generation depends on beyond the target's own fields (part of cache keys):
        the host CPU for native code, the libdevice linked for PTX."""
        return {"triple": self.triple()}

    def options(self) -> dict[str, Any]:
        """Catch-all for target settings a plugin may read (e.g. ``{"fastmath": True}``)."""
        return {}

    def scalable_vectors(self) -> bool:
        """Whether code for this target may use scalable vectors (``<vscale x …>``); LLVM aborts
        the process on them for a target without (x86, NVPTX), so the IR is refused first."""
        return False

    #: whether code runs on a GPU: many threads at once (a plugin then accumulates shared values
    #: atomically), no host libraries (libm calls become the device library's)
    is_gpu: bool = False

    def warp_aggregation(self) -> bool:
        """Whether an AD plugin may sum a warp's atomic adjoints with NVVM shuffles (``shfl.sync``,
        ``vote``, ``activemask``) before one atomic add; default: no (PTX says yes)."""
        return False

    # -- inference -----------------------------------------------------------
    def for_inference(self) -> Target:
        """This target as type inference sees it: fields that matter only to code generation
        (a GPU's capability, fastmath) reset, so one inference serves every variant."""
        return self

    def rule_overlays(self) -> Sequence[Rules]:
        """The rule sets that replace base rules on this target (the interpreter consults them before
        the base rules): its math and device-intrinsic overlays. Default: none."""
        return ()

    # -- pipeline hooks ----------------------------------------------------
    def prepare(self, job: CompilerJob, module: IRModule) -> None:
        """Before ``post_irgen``: set triple and data layout on the module."""
        ref = module.ref
        ref.triple = self.triple()
        ref.data_layout = self.data_layout()

    def finish(self, job: CompilerJob, module: IRModule) -> None:
        """The ``finish`` stage: target lowering (library linking, annotations)."""

    def validate(self, job: CompilerJob, module: IRModule, facts: ModuleFacts) -> list[tuple[str, str]]:
        """The ``validate`` stage: return ``(KIND, message)`` for every problem found; ``facts`` is
        the module's one walk (:class:`~.facts.ModuleFacts`), which the cache's serialisable
        check reuses."""
        return []

    def emit(self, job: CompilerJob, module: IRModule, kind: str) -> str | bytes:
        """The ``emit`` stage: ``"llvm"`` text, ``"bc"`` bitcode, ``"asm"`` or ``"obj"``."""
        raise NotImplementedError
