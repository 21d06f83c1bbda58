"""AMD GPUs (GCN/CDNA/RDNA): ``amdgcn-amd-amdhsa`` code objects for a chosen architecture.

The target owns everything AMD: the triple and data layout (allocas live in
the private address space 5, shared arrays in the local address space 3),
the ``amdgpu_kernel`` calling convention (the back end reads every kernel
argument from the kernarg segment, constant address space 4), the kernel
language's lowering (:mod:`.lowering`), math through the ROCm device
libraries or the LLVM intrinsics the back end lowers exactly
(:mod:`.devicelibs`), and the code object: LLVM's relocatable object
linked by ``ld.lld -shared`` into the ELF the HIP runtime loads
(:mod:`.tools`).
"""

from __future__ import annotations

import attrs
import llvmlite.binding as llvm

from ...core import Rules, Target, WarpIntrinsics
from ...core.facts import ALLOCATION_FUNCTIONS, TAPE_FUNCTIONS, TAPE_METADATA, ModuleFacts
from ...core.mathfns import math_function
from ...errors import ConfigError, ErrorKind
from ...llvm import Builder, Function, InlineAsm, initialize, parse, types as LT
from ..native import cached_target_machine, emit_with
from ..ptx_codegen import global_array_pointers, optimize_linked
from ..warpatomics import aggregate_atomics
from . import devicelibs, lowering, tools, warp
from .heap import HEAP_IR

TRIPLE = "amdgcn-amd-amdhsa"

#: the architectures this target is built and checked for: ``gfx name -> wavefront size``
ARCHITECTURES = {"gfx90a": 64, "gfx942": 64, "gfx1100": 32}

PRIVATE = 5
"""The AMDGPU address space of a work-item's stack (``alloca``)."""

#: intrinsics the back end lowers, besides math (:mod:`.devicelibs` judges the math ones)
_BACKEND_PREFIXES = tuple("llvm." + p for p in (
    "amdgcn. memcpy. memset. memmove. lifetime. assume experimental. abs. ctpop. ctlz. cttz. fshl. fshr. "
    "bswap. bitreverse. dbg. invariant. expect. trap fmuladd. is.fpclass. frexp. vector.reduce. masked. "
    "smax. smin. umax. umin. sadd. uadd. ssub. usub. smul. umul. sadd.sat. uadd.sat. ssub.sat. usub.sat. "
    "stacksave stackrestore rint. nearbyint. roundeven. ldexp. canonicalize. minimum. maximum. minnum. "
    "maxnum. fptosi.sat. fptoui.sat. read_register. write_register. ptrmask.").split())


_INACTIVE = ("llvm.amdgcn.workitem.id.", "llvm.amdgcn.workgroup.id.", "llvm.amdgcn.dispatch.ptr",
             "llvm.amdgcn.implicitarg.ptr", "llvm.amdgcn.mbcnt.")


def _arch(_instance, _attribute, value) -> None:
    if value not in ARCHITECTURES:
        raise ConfigError(f"unknown AMD GPU architecture {value!r} for the amdgpu target; known: "
                          + ", ".join(ARCHITECTURES))


@attrs.frozen
class AMDGPUTarget(Target):
    """An AMD GPU of architecture ``arch`` (``gfx90a``: MI200, ``gfx942``: MI300, ``gfx1100``: RX 7900).

    ``emit("obj")`` is the loadable code object (an ELF shared object); ``asm`` the GCN assembly.
    ``aggregate_atomics`` sums a wavefront's atomic adds to one address before one atomic
    (:mod:`..warpatomics`; False: one atomic per work-item).
    """

    name = "amdgpu"
    runtime_module = "gpucompiler.runtime.hip"
    spellings = ("amdgpu", *(f"amdgpu:{a}" for a in ARCHITECTURES))
    is_gpu = True

    arch: str = attrs.field(default="gfx90a", validator=_arch)
    aggregate_atomics: bool = True

    @classmethod
    def from_spelling(cls, arg: str) -> AMDGPUTarget | None:
        """``amdgpu`` (gfx90a) or ``amdgpu:gfxNNN`` (one of :data:`ARCHITECTURES`)."""
        if not arg:
            return cls()
        return cls(arg) if arg in ARCHITECTURES else None

    def for_inference(self) -> AMDGPUTarget:
        return AMDGPUTarget()

    def rule_overlays(self) -> tuple[Rules, ...]:
        """The kernel language on AMD (work-item ids, LDS, ``s_barrier``, ``ds_bpermute``) and the
        refusal of math without a lowering here."""
        return (lowering.KERNEL_RULES,)

    @property
    def wavefront_size(self) -> int:
        """Lanes of a wavefront (64 on CDNA, 32 on RDNA)."""
        return ARCHITECTURES[self.arch]

    # -- identity ---------------------------------------------------------
    def triple(self) -> str:
        return TRIPLE

    def target_machine(self, opt_level: int) -> llvm.TargetMachine:
        initialize()
        return cached_target_machine(TRIPLE, self.arch, "", opt_level, "pic")

    def machine(self) -> dict:
        return {"triple": TRIPLE, "device_libs": devicelibs.device_libs_digest()}

    def options(self) -> dict:
        return {"arch": self.arch, "wavefront_size": self.wavefront_size}

    # -- automatic differentiation ------------------------------------------------
    def warp_intrinsics(self) -> WarpIntrinsics:
        """The wavefront's ballots, ``ds_bpermute`` and lane id (:mod:`.warp`), over
        :attr:`wavefront_size` lanes."""
        return warp.intrinsics(self.wavefront_size)

    def inactive_intrinsic(self, name: str) -> bool:
        """Work-item and workgroup ids, the dispatch packet (sizes), the lane id (``mbcnt``)."""
        return name.startswith(_INACTIVE)

    def barrier_intrinsic(self, name: str) -> bool:
        """``llvm.amdgcn.s.barrier`` (``finish`` puts its fences back around the reverse sweep's)."""
        return name == "llvm.amdgcn.s.barrier"

    def math_from_device(self, name: str) -> str | None:
        return devicelibs.libm_name(name)

    def math_to_device(self, name: str) -> str | None:
        """ocml's version (``__ocml_cos_f64``) where the back end does not lower ``name`` exactly."""
        return devicelibs.device_name(name)

    # -- pipeline hooks ----------------------------------------------------
    def prepare(self, job, module) -> None:
        """Allocas into the private address space (LLVM's verifier requires it on amdgcn), then the
        triple and data layout."""
        private_allocas(module.model)
        super().prepare(job, module)

    def adapt_ir(self, text: str) -> str:
        """Allocas a producer that does not know the target (the AD engine) made in address space 0
        moved to 5."""
        if "alloca" not in text or " = alloca" not in text:
            return text
        model = parse(text)
        return str(model) if private_allocas(model) else text

    def finish(self, job, module) -> None:
        """Math to the device libraries (or exact intrinsics), the kernel's calling convention and
        global array pointers, fenced barriers, wavefronts' atomic adds summed (:mod:`..warpatomics`); then
        the libraries linked, internalised and re-optimised."""
        model = module.model
        private_allocas(model)
        drop_free_of_null(model)
        devicelibs.lower_math(model)
        lowering.fence_barriers(model)
        entry = None
        if job.config.kernel:
            entry = model.functions[job.name if job.name in model.functions else job.source.entry]
            entry.calling_convention = "amdgpu_kernel"
            global_array_pointers(entry)
        if self.aggregate_atomics:
            aggregate_atomics(model, self.warp_intrinsics(), entry)
        heap = tape_heap_only(model)
        ref = module.ref
        linked = devicelibs.link_device_libs(ref, self.arch, self.wavefront_size)
        if heap:  # the AD tape's malloc/free on the runtime's heap (.heap)
            ref.link_in(llvm.parse_assembly(f'target triple = "{TRIPLE}"\ntarget datalayout = "{ref.data_layout}"\n'
                                            + HEAP_IR))
            linked += ["malloc", "free"]
        used = [f.name for f in ref.functions if f.name.startswith(warp.PREFIX)]
        if used:  # the summed atomic adds' collectives
            ref.link_in(llvm.parse_assembly(f'target triple = "{TRIPLE}"\ntarget datalayout = "{ref.data_layout}"\n'
                                            + warp.definitions(self.wavefront_size)))
            linked += used
        for fn in ref.functions:
            if fn.name in linked:
                fn.linkage = "internal"
        optimize_linked(self, job, ref)
        module.ref = ref

    def validate(self, job, module, facts: ModuleFacts) -> list[tuple[str, str]]:
        """UNKNOWN_FUNCTION (math without a lowering, inline assembly included), RECURSION,
        DYNAMIC_ALLOCATION (any but the AD tape's, which ``finish`` gave the runtime's heap) and
        POINTER_CONSTANT, all at once."""
        errors = []
        for name, users in sorted(facts.external_uses.items()):
            where = ", ".join("@" + u for u in users)
            problem = devicelibs.unlowered(name)
            if problem is not None:
                errors.append((ErrorKind.UNKNOWN_FUNCTION, f"{problem} (in {where})"))
            elif name in ALLOCATION_FUNCTIONS or math_function(name) is not None or name.startswith(_BACKEND_PREFIXES):
                continue  # allocation: reported below; math: an exact intrinsic
            elif name.startswith("llvm."):
                errors.append((ErrorKind.UNKNOWN_FUNCTION, f"@{name} (in {where}) has no lowering on the "
                                                           f"amdgpu target ({self.arch})"))
            else:
                errors.append((ErrorKind.UNKNOWN_FUNCTION, f"call to undefined @{name} in {where}: an AMD GPU "
                               "kernel can call only functions in its module, LLVM/AMDGPU intrinsics and "
                               "the ROCm device libraries (__ocml_*)"))
        errors += [(ErrorKind.UNKNOWN_FUNCTION, f"inline assembly in @{fn}: LLVM's AMDGPU object writer here "
                    "has no assembly parser (it would abort the process); use intrinsics instead")
                   for fn in inline_assembly(module.model)]
        return (errors + facts.recursion_errors() + facts.allocation_errors()
                + facts.pointer_constant_errors())

    def emit(self, job, module, kind: str) -> str | bytes:
        """``obj`` is the linked code object (``ld.lld -shared``), ``asm`` GCN assembly."""
        machine = self.target_machine(job.config.opt_level)
        out = emit_with(machine, module, kind)
        if kind == "obj":
            assert isinstance(out, bytes)
            return tools.link_code_object(out)
        return out


def tape_heap_only(model) -> bool:
    """Whether the module calls ``malloc``/``free`` and every call of them is the AD tape's."""
    users = [u for name, f in model.functions.items() if name in TAPE_FUNCTIONS and f.is_declaration
             for u in f.users]
    mark = TAPE_METADATA.lstrip("!")
    return bool(users) and all(getattr(u, "opcode", None) == "call" and mark in u.metadata for u in users)


def inline_assembly(model) -> list[str]:
    """Names of the functions that call inline assembly."""
    return [fn.name for fn in model.functions.values() if not fn.is_declaration
            and any(inst.opcode == "call" and any(isinstance(op, InlineAsm) for op in inst.operands)
                    for inst in fn.instructions())]


def drop_free_of_null(model) -> int:
    """Erase ``free(null)`` (a no-op in C): what the optimiser leaves of an AD tape it kept in registers,
    which the back end, knowing no ``free``, cannot fold. Returns how many."""
    dropped = 0
    for fn in model.functions.values():
        for inst in list(fn.instructions()) if not fn.is_declaration else ():
            callee = getattr(inst, "callee", None) if inst.opcode == "call" else None
            if callee is not None and callee.name == "free" and len(inst.args) == 1 \
                    and getattr(inst.args[0], "text", None) == "null":
                inst.erase()
                dropped += 1
    return dropped


def private_allocas(model) -> int:
    """Move every ``alloca`` of address space 0 to the private space 5 and give its users the
    generic pointer (``addrspacecast``); returns how many moved."""
    moved = 0
    for fn in list(model.functions.values()):  # lifetime markers may declare .p5 intrinsics
        if fn.is_declaration:
            continue
        for inst in list(fn.instructions()):
            if inst.opcode != "alloca" or inst.type != LT.ptr():
                continue
            users = list(inst.uses)
            inst.parts = [*inst.parts, f", addrspace({PRIVATE})"]
            inst.type = LT.ptr(PRIVATE)
            b = Builder()
            b.position_after(inst)
            generic = b.cast("addrspacecast", inst, LT.ptr())
            for use in users:
                if not _private_lifetime(model, use.user, inst):
                    use.user.set_operand(use.index, generic)
            moved += 1
    return moved


def _private_lifetime(model, call, alloca) -> bool:
    """Rebuild ``llvm.lifetime.start/end.p0`` of ``alloca`` as the ``.p5`` intrinsic on the alloca itself
    (LLVM's verifier wants the alloca there, not a cast of it); False for any other user."""
    callee = getattr(call, "callee", None) if getattr(call, "opcode", None) == "call" else None
    name = getattr(callee, "name", "")
    if not name.startswith(("llvm.lifetime.start.p0", "llvm.lifetime.end.p0")):
        return False
    private = name.rsplit(".", 1)[0] + f".p{PRIVATE}"
    fn = model.functions.get(private)
    if fn is None:
        params = [LT.ptr(PRIVATE) if a is alloca or getattr(a, "type", None) == LT.ptr() else a.type
                  for a in call.args]
        fn = model.add_function(Function(private, LT.function(LT.void, params)))
    b = Builder()
    b.position_before(call)
    b.call(fn, [alloca if a.type == LT.ptr() else a for a in call.args])
    call.erase()
    return True
