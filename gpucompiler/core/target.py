"""The target interface: every hook a target may override, with its default.

A target is a frozen ``attrs`` class (so it is part of the job key) whose
methods *are* the hooks, in the style of GPUCompiler.jl's ``interface.jl``.
The driver (:mod:`gpucompiler.pipeline`) calls them in pipeline order;
``@kernel`` asks the kernel hooks, the AD plugin the AD hooks. Required
hooks raise ``NotImplementedError``; the rest have working defaults.

A class that sets :attr:`Target.name` registers itself under that name when
it is defined (:data:`TARGET_CLASSES`): ``parse_target``, ``gpuc compile-ir
--target`` and the compile service's protocol know every target whose file
is in ``gpucompiler/targets/``. A new target is that file plus, to launch
kernels, its runtime (docs/architecture.md, "A new target in two files").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from ..errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    import llvmlite.binding as llvm

    from ..module import IRModule
    from .facts import ModuleFacts
    from .job import CompilerJob
    from .rules import Rules


TARGET_CLASSES: dict[str, type[Target]] = {}
"""Every target class by :attr:`Target.name`, filled as the classes are defined."""


@attrs.frozen
class WarpIntrinsics:
    """A target's warp-level intrinsics, by name, in the shapes of ``shfl.sync``-style collectives over a
    warp of :attr:`width` lanes (the mask ``-1`` names every lane)."""

    active_mask: str = ""
    """``i32 ()``: the mask of the lanes executing this instruction"""
    vote_all: str = ""
    """``i1 (i32 mask, i1 p)``: whether ``p`` holds on every lane of ``mask``"""
    shuffle_index: str = ""
    """``i32 (i32 mask, i32 v, i32 lane, i32 clamp)``: ``v`` of lane ``lane``"""
    shuffle_xor: str = ""
    """``i32 (i32 mask, i32 v, i32 bits, i32 clamp)``: ``v`` of lane ``laneid ^ bits`` (a butterfly)"""
    lane_id: str = ""
    """``i32 ()``: this lane's index in its warp"""
    width: int = 32
    """lanes in a warp (a wavefront: 64 on AMD's CDNA)"""

    def __attrs_post_init__(self) -> None:
        shaped = (self.active_mask, self.vote_all, self.shuffle_index, self.shuffle_xor, self.lane_id)
        if not all(shaped):
            raise ConfigError("WarpIntrinsics names all five collectives (active_mask, vote_all, "
                              "shuffle_index, shuffle_xor, lane_id)")
        if self.width < 2 or self.width & (self.width - 1):
            raise ConfigError(f"a warp's width is a power of two, got {self.width}")


class Target:
    """Base class of compilation targets."""

    #: short name used on the command line (``--target NAME``); setting it registers the class
    name: ClassVar[str] = ""
    #: how the command line spells this target's variants (``ptx``, ``ptx:sm_XY``); default: the name
    spellings: ClassVar[tuple[str, ...]] = ()
    #: whether ``@kernel`` compiles for this target when none is named (one registered target says so)
    kernel_default: ClassVar[bool] = False
    #: the emit kind its runtime loads (``asm``: PTX text; ``obj``: a code object)
    launch_artifact: ClassVar[str] = "obj"
    #: the module that registers the runtime launching its kernels (``gpucompiler.runtime.cuda``), imported at
    #: the first launch alone; empty: every runtime module is imported to find one
    runtime_module: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__ or not cls.name:
            return
        known = TARGET_CLASSES.get(cls.name)
        if known is not None and (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
            raise ConfigError(f"two target classes are named {cls.name!r}: {known.__module__}.{known.__qualname__} "
                              f"and {cls.__module__}.{cls.__qualname__}; give the new one another name")
        TARGET_CLASSES[cls.name] = cls  # attrs rebuilds a slotted class: the last definition is the class

    @classmethod
    def from_spelling(cls, arg: str) -> Target | None:
        """The target spelt ``NAME:arg`` on the command line (``arg`` empty for plain ``NAME``), None when
        ``arg`` spells none of its variants; default: the target with default fields, for no ``arg``."""
        return None if arg else cls()

    def pinned(self) -> Target:
        """This target with every field that depends on the host made explicit (the native target's
        CPU and features), so that another process compiles the same code for it."""
        return self

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

    def warp_intrinsics(self) -> WarpIntrinsics | None:
        """The intrinsics with which the target's ``finish`` sums a warp's atomic adds to one address before
        one atomic (:class:`WarpIntrinsics`, ``gpucompiler.targets.warpatomics``); None (the default): a
        target without them, or with its own collectives (SPIR-V's subgroup operations)."""
        return None

    def thread_exit(self) -> str | None:
        """The intrinsic (``void()``) that ends the calling thread and leaves the context usable: an AD
        tape whose device ``malloc`` fails sets the heap flag the runtime reads after the launch
        (:mod:`gpucompiler.runtime.device_heap`) and calls it; None (the default): such a tape traps."""
        return None

    # -- inference -----------------------------------------------------------
    def for_inference(self) -> Target:
        """This target as type inference sees it: fields that matter only to code generation
        (a GPU's capability, fastmath) reset, so one inference serves every variant."""
        return self

    def rule_overlays(self) -> Sequence[Rules]:
        """The rule sets that replace base rules on this target (the interpreter consults them before
        the base rules): its math and device-intrinsic overlays. Default: none."""
        return ()

    # -- kernels (``@kernel``) -------------------------------------------------
    def for_kernel(self, fastmath: bool, maxregs: int | None) -> Target:
        """This target with ``@kernel``'s code-generation options; default: refused unless unset."""
        if fastmath or maxregs is not None:
            raise ConfigError(f"target {self.name!r} has no kernel options (fastmath, maxregs): "
                              "pass none, or set them on the target object")
        return self

    # -- automatic differentiation (the hooks an AD plugin asks) ----------------
    def inactive_intrinsic(self, name: str) -> bool:
        """Whether calls of the declared function ``name`` carry no derivative (thread and block
        index reads); default: none does."""
        return False

    def barrier_intrinsic(self, name: str) -> bool:
        """Whether the declared function ``name`` is a barrier, which reverse mode mirrors; default: none."""
        return False

    def math_from_device(self, name: str) -> str | None:
        """The C math name (``sin``, ``sinf``) of the device library's function ``name``: AD has derivative
        rules for the C names; None for any other name (default: no device library)."""
        return None

    def math_to_device(self, name: str) -> str | None:
        """The device library's function for the C math name or LLVM math intrinsic ``name`` (what AD
        emits) where the target cannot lower ``name`` itself; None: leave it (default)."""
        return None

    def adapt_ir(self, text: str) -> str:
        """LLVM IR text from a producer that does not know this target (an AD plugin's output) in the
        form this target's LLVM verifier accepts, before LLVM parses it; default: unchanged."""
        return text

    # -- pipeline hooks ----------------------------------------------------
    def prepare(self, job: CompilerJob, module: IRModule) -> None:
        """Before ``post_irgen``: set triple and data layout on the module."""
        ref = module.ref
        ref.triple = self.triple()
        ref.data_layout = self.data_layout()

    def before_optimize(self, job: CompilerJob, module: IRModule, final: bool) -> None:
        """Before each run of the default optimisation pipeline (the ``optimize`` stage's, and again after
        AD); ``final``: no AD engine reads the result. Default: nothing (native: math calls name their SIMD
        versions)."""

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

    def check_output(self, kind: str, artifact: str | bytes) -> None:
        """Check an emitted ``artifact`` of ``kind`` with the tool that validates this target's output
        (PTX: ``ptxas`` assembles it for the capability); a ToolchainError carries the tool's report,
        a ToolNotFoundError says the tool is missing. Default: nothing to check."""
