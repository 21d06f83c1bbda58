"""NVIDIA PTX target: sm_XX triple and data layout, libdevice, kernel annotations."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

import attrs
import llvmlite.binding as llvm

from ..errors import ConfigError, ErrorKind, ToolchainError
from ..llvm import Builder, Function, const_int, initialize, types as LT
from ..core import Rules, Target, WarpIntrinsics
from .libdevice import PREFIX, device_name, libdevice_digest, libdevice_functions, libm_name, link_libdevice
from .native import cached_target_machine, emit_with
from .ptx_overlays import KERNEL_RULES, MATH_RULES
from .ptx_blocksums import sum_per_block
from .ptx_ownelements import own_element_adds
from .ptx_zerostores import order_zero_stores
from .warpatomics import aggregate_atomics
from ..core.facts import ALLOCATION_FUNCTIONS, ModuleFacts
from ..toolchain import find_ptxas


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

_FASTMATH_ATTRIBUTE = '"denormal-fp-math-f32"="preserve-sign,preserve-sign"'
_FLOAT_OPS = frozenset({"fadd", "fsub", "fmul", "fdiv", "frem", "fneg"})
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
        return libm_name(name)

    def math_to_device(self, name: str) -> str | None:
        """libdevice's version (``__nv_cos``): NVPTX has no lowering for most ``llvm.<math>`` intrinsics."""
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
            raise ConfigError(f"LLVM {'.'.join(map(str, llvm.llvm_version_info))} does not know PTX ISA "
                              f"version {version}; known: {', '.join(map(str, sorted(LLVM_PTX_VERSIONS)))}")
        return version

    def target_machine(self, opt_level: int) -> llvm.TargetMachine:
        initialize()
        return cached_target_machine(TRIPLE, self.cpu(), f"+ptx{self.isa_version()}", opt_level)

    def machine(self) -> dict:
        return {"triple": TRIPLE, "libdevice": libdevice_digest()}

    def options(self) -> dict:
        return {"fastmath": self.fastmath, "maxregs": self.maxregs, "capability": self.capability,
                "aggregate_atomics": self.aggregate_atomics}

    # -- pipeline hooks ----------------------------------------------------
    def finish(self, job, module) -> None:
        """Annotate the kernel, make atomic adds into a thread's own element plain
        (:mod:`.ptx_ownelements`), sum warps' atomic adds (:mod:`.warpatomics`), make zero stores
        wait for their loads (:mod:`.ptx_zerostores`), link libdevice, set fast-math and reflect
        flags, re-optimise.

        Only the ``__nv_*`` functions the module declares are linked; they
        are internalised and, once inlined, removed by global DCE, so the
        output never carries the library. The passes above run on the
        Python model before the link, which they leave alone (a libdevice
        call is a declaration to them, linked or not), so that it never
        parses the library's functions; fast-math alone marks them, after.
        """
        model = module.model
        name = None
        if job.config.kernel:  # (as entry_name, on the model)
            name = job.name if job.name in model.functions else job.source.entry
        if self.fastmath:
            use_rsqrt(model)
        if name is not None:
            entry = model.functions[name]
            entry.calling_convention = "ptx_kernel"
            if self.maxregs:
                entry.add_attribute(f'"nvvm.maxnreg"="{self.maxregs}"')
            global_array_pointers(entry)
        warp = self.warp_intrinsics() if self.aggregate_atomics else None
        if warp is not None:
            kernel = model.functions.get(name) if name else None
            # sm_70: the non-aligned barrier at the kernel's exit
            blocks = sum_per_block(model, kernel, GLOBAL) if kernel is not None and self.capability >= (7, 0) else None
            if kernel is not None:  # (after the block sums: a plain add after a deferred one needs no check)
                own_element_adds(model, kernel, GLOBAL, blocks)
            aggregate_atomics(model, warp, kernel, GLOBAL, blocks.summable if blocks is not None else ())
            if blocks is not None:
                blocks.finish()
        for fn in model.functions.values():  # after the block sums, which refuse kernels with inline asm
            if not fn.is_declaration:
                order_zero_stores(fn)
        model.add_module_flag(4, "nvvm-reflect-ftz", const_int(LT.i32, int(self.fastmath)))
        ref = module.ref
        linked = set(link_libdevice(ref))
        for fn in ref.functions:
            if fn.name in linked:
                fn.linkage = "internal"
        if self.fastmath:
            for fn in module.model.functions.values():
                if not fn.is_declaration:
                    fn.add_attribute(_FASTMATH_ATTRIBUTE)
                    add_fast_math_flags(fn)
            ref = module.ref
        machine = self.target_machine(job.config.opt_level)
        builder = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(job.config.opt_level))
        builder.getModulePassManager().run(ref, builder)
        cleanup = llvm.create_new_module_pass_manager()
        cleanup.add_global_dead_code_eliminate_pass()
        cleanup.run(ref, builder)
        module.ref = ref

    def validate(self, job, module, facts: ModuleFacts) -> list[tuple[str, str]]:
        """UNKNOWN_FUNCTION, RECURSION, DYNAMIC_ALLOCATION and POINTER_CONSTANT, all at once."""
        errors = []
        for name, users in sorted(facts.external_uses.items()):
            if name.startswith("llvm.") or name in DEVICE_RUNTIME or name in ALLOCATION_FUNCTIONS:
                continue
            if name == "__nvvm_reflect" or (name.startswith(PREFIX) and name in _libdevice_or_empty()):
                continue
            hint = ("libdevice defines no such function" if name.startswith(PREFIX)
                    else "a GPU kernel can call only functions in its module, LLVM/NVVM intrinsics "
                         "and libdevice (__nv_*)")
            errors.append((ErrorKind.UNKNOWN_FUNCTION, f"call to undefined @{name} in "
                                               f"{', '.join('@' + u for u in users)}: {hint}"))
        return (errors + facts.recursion_errors() + facts.allocation_errors()
                + facts.pointer_constant_errors())

    def emit(self, job, module, kind: str) -> str | bytes:
        """``asm`` is PTX text; ``obj`` (a cubin) is ptxas's job, not LLVM's."""
        if kind == "obj":
            raise ConfigError("the PTX target emits 'asm' (PTX text), 'llvm' or 'bc'; assemble the "
                              "PTX with ptxas (or load it with the CUDA driver) for a cubin")
        return emit_with(self.target_machine(job.config.opt_level), module, kind)

    def check_output(self, kind: str, artifact: str | bytes) -> None:
        """``ptxas`` assembles PTX (``asm``) for this capability; its errors are a ToolchainError."""
        if kind != "asm":
            return
        text = artifact.decode() if isinstance(artifact, bytes) else artifact
        with tempfile.TemporaryDirectory(prefix="gpuc-ptxas-") as tmp:
            source = Path(tmp) / "kernel.ptx"
            source.write_text(text)
            proc = subprocess.run([find_ptxas(), f"-arch={self.cpu()}", str(source), "-o", str(Path(tmp) / "k.cubin")],
                                  capture_output=True, text=True)
        if proc.returncode != 0:
            raise ToolchainError(f"ptxas rejected the PTX for {self.cpu()}:\n{proc.stderr.strip()}")


def global_array_pointers(entry) -> int:
    """Access the kernel's array arguments through global-memory pointers.

    An array argument is ``{ptr, shape..., strides...}`` whose pointer the
    caller takes from device memory (never shared or local memory). Each
    ``extractvalue %arg, 0`` of a pointer (or of ``freeze %arg``) is cast to ``addrspace(1)`` once,
    and the ``getelementptr`` chains, plain loads, plain stores and atomic
    read-modify-writes using it are rebuilt on the global pointer, so the
    back end emits ``ld.global``/``st.global``/``atom.global`` instead of
    generic accesses. Other uses get the global pointer cast back to
    generic, so that LLVM infers the address space through calls it
    inlines later. Returns the number of accesses moved.
    """
    moved = 0
    for arg in entry.args:
        t = arg.type
        if not isinstance(t, LT.StructType) or not t.elements or t.elements[0] != LT.ptr():
            continue
        users = list(arg.users)
        users += [u for f in users if getattr(f, "opcode", None) == "freeze" for u in f.users]
        for user in users:
            if (getattr(user, "opcode", None) == "extractvalue" and user.type == LT.ptr()
                    and user.aggregate_indices == (0,)):
                b = Builder()
                b.position_after(user)
                glob = b.cast("addrspacecast", user, LT.ptr(GLOBAL))
                moved += _move_to_global(b, user, glob)
                # the rest (calls not inlined yet, phis, selects) take the global pointer cast
                # back, from which LLVM infers the address space once they are inlined
                rest = [u for u in list(user.uses) if u.user is not glob and u.user.parent is not None]
                if rest:
                    b.position_after(glob)
                    back = b.cast("addrspacecast", glob, LT.ptr())
                    for u in rest:
                        u.user.set_operand(u.index, back)
    return moved


def _move_to_global(b, generic, glob) -> int:
    """Rebuild the GEPs, loads and stores addressed by ``generic`` on ``glob`` (its global twin)."""
    moved = 0
    for use in generic.uses:
        inst = use.user
        op = getattr(inst, "opcode", None)
        if inst is glob or inst.parent is None or use.index != (1 if op == "store" else 0):
            continue
        if op in ("load", "store") and (inst.is_volatile or inst.is_atomic):
            continue
        b.position_before(inst)
        if op == "getelementptr":
            flags = [f for f in inst.flags if f in ("inbounds", "nuw", "nusw")]
            new = b.gep(inst.source_element_type, glob, inst.indices, flags=flags)
            back = b.cast("addrspacecast", new, LT.ptr())
            inst.replace_all_uses_with(back)
            moved += _move_to_global(b, back, new)
        elif op == "load":
            new = b.load(inst.type, glob, align=inst.alignment)
            inst.replace_all_uses_with(new)
        elif op == "store":
            new = b.store(inst.value_operand, glob, align=inst.alignment)
        elif op == "atomicrmw":  # e.g. adjoints added by the AD engine: atom.global, not generic atom
            inst.set_operand_type(0, LT.ptr(GLOBAL))
            inst.set_operand(0, glob)
            moved += 1
            continue
        else:
            continue
        new.metadata = dict(inst.metadata)
        inst.erase()
        moved += op != "getelementptr"
    return moved


def add_fast_math_flags(fn) -> None:
    """Mark ``fn``'s floating-point operations and floating-point intrinsic calls ``fast``."""
    for inst in fn.instructions():
        if inst.opcode in _FLOAT_OPS:
            inst.add_flags("fast")
        elif inst.opcode == "call" and _is_float(inst.type):
            callee = inst.callee
            if callee is not None and callee.name.startswith("llvm."):
                inst.add_flags("fast")


_SQRT = {"llvm.sqrt.f64": "__nv_rsqrt", "__nv_sqrt": "__nv_rsqrt", "llvm.nvvm.sqrt.rn.d": "__nv_rsqrt",
         "llvm.sqrt.f32": "__nv_rsqrtf", "__nv_sqrtf": "__nv_rsqrtf"}
"""Square roots whose reciprocal libdevice computes directly (fast-math only), by name."""


def use_rsqrt(model) -> int:
    """Rewrite ``fdiv a, sqrt(x)`` as ``fmul a, __nv_rsqrt(x)`` (fast-math); returns how many.

    libdevice's ``rsqrt`` is an approximate reciprocal square root refined
    by Newton steps (about one ulp), a few instructions where a correctly
    rounded ``sqrt.rn`` followed by ``div.rn``/``rcp.rn`` are two
    subroutines with special-case branches. ``1.0 * r`` folds in the
    re-optimisation that follows; the square root stays where it has other
    users.
    """
    count = 0
    for fn in list(model.functions.values()):
        if fn.is_declaration:
            continue
        for inst in list(fn.instructions()):
            if inst.opcode != "fdiv":
                continue
            den = inst.operands[1]
            callee = den.callee if getattr(den, "opcode", None) == "call" else None
            name = _SQRT.get(callee.name) if callee is not None else None
            if name is None:
                continue
            rsqrt = model.functions.get(name)
            if rsqrt is None:
                rsqrt = model.add_function(Function(name, LT.function(den.type, [den.type])))
            b = Builder()
            b.position_before(inst)
            r = b.call(rsqrt, [den.args[0]])
            prod = b.binop("fmul", inst.operands[0], r)
            inst.replace_all_uses_with(prod)
            inst.erase()
            if not den.users:
                den.erase()
            count += 1
    return count


def _is_float(t) -> bool:
    return str(t.scalar) in ("float", "double", "half")


def entry_name(job, ref: llvm.ModuleRef) -> str:
    """The entry's name in ``ref``: the job's output name once the driver renamed it."""
    names = {f.name for f in ref.functions}
    return job.name if job.name in names else job.source.entry


def _libdevice_or_empty() -> frozenset[str]:
    try:
        return libdevice_functions()
    except FileNotFoundError:
        return frozenset()
