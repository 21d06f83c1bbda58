"""The PTX target's code generation: :meth:`.ptx.PTXTarget.finish`'s lowering, its validation, emission
and ``ptxas`` check.

Apart from :mod:`.ptx` so that the target's class (its fields, key and spelling) imports without the IR
model, libdevice's linking, the atomics' passes or LLVM: a kernel's launch served from the cache never
generates code.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import llvmlite.binding as llvm

from ..core.facts import ALLOCATION_FUNCTIONS, ModuleFacts
from ..errors import ErrorKind, ToolchainError
from ..llvm import Builder, Function, const_int, initialize, types as LT
from ..toolchain import find_ptxas
from .libdevice import PREFIX, libdevice_functions, link_libdevice, prune_ahead
from .native import cached_target_machine, emit_with
from .ptx import DEVICE_RUNTIME, GLOBAL, TRIPLE, PTXTarget
from .ptx_blocksums import sum_per_block
from .ptx_neighbouradds import neighbour_adds
from .ptx_ownelements import own_element_adds
from .ptx_zerostores import order_zero_stores
from .warpatomics import aggregate_atomics

_FASTMATH_ATTRIBUTE = '"denormal-fp-math-f32"="preserve-sign,preserve-sign"'
_FLOAT_OPS = frozenset({"fadd", "fsub", "fmul", "fdiv", "frem", "fneg"})


def target_machine(target: PTXTarget, opt_level: int) -> llvm.TargetMachine:
    """:meth:`.ptx.PTXTarget.target_machine`."""
    initialize()
    return cached_target_machine(TRIPLE, target.cpu(), f"+ptx{target.isa_version()}", opt_level)


def prune_libdevice_ahead(target: PTXTarget, module) -> None:
    """:meth:`.ptx.PTXTarget.before_optimize` of the last optimisation: libdevice pruned on a thread
    (:func:`.libdevice.prune_ahead`) to the ``__nv_*`` functions the module declares, those of the math it
    calls by C or intrinsic names (an AD engine's: the ``post_ad`` restore maps them to libdevice) and, with
    fast math, the reciprocal square roots :func:`use_rsqrt` may call. A function the link needs beyond
    these is found by parsing the library again."""
    names = set()
    for fn in module.ref.functions:
        if fn.is_declaration:
            name = fn.name
            names.add(name if name.startswith(PREFIX) else target.math_to_device(name) or "")
    if target.fastmath:
        names |= {"__nv_rsqrt", "__nv_rsqrtf"}
    prune_ahead(names)


def finish(target: PTXTarget, job, module) -> None:
    """:meth:`.ptx.PTXTarget.finish`."""
    model = module.model
    name = None
    if job.config.kernel:  # (as entry_name, on the model)
        name = job.name if job.name in model.functions else job.source.entry
    if target.fastmath:
        use_rsqrt(model)
    if name is not None:
        entry = model.functions[name]
        entry.calling_convention = "ptx_kernel"
        if target.maxregs:
            entry.add_attribute(f'"nvvm.maxnreg"="{target.maxregs}"')
        global_array_pointers(entry)
    warp = target.warp_intrinsics() if target.aggregate_atomics else None
    if warp is not None:
        kernel = model.functions.get(name) if name else None
        # sm_70: the non-aligned barrier at the kernel's exit
        blocks = sum_per_block(model, kernel, GLOBAL) if kernel is not None and target.capability >= (7, 0) else None
        combined = []
        if kernel is not None:  # (after the block sums: a plain add after a deferred one needs no check)
            own_element_adds(model, kernel, GLOBAL, blocks)
            combined = neighbour_adds(model, warp, kernel, GLOBAL)  # (each lane's add at its own address)
        aggregate_atomics(model, warp, kernel, GLOBAL, blocks.summable if blocks is not None else (), keep=combined)
        if blocks is not None:
            blocks.finish()
    for fn in model.functions.values():  # after the block sums, which refuse kernels with inline asm
        if not fn.is_declaration:
            order_zero_stores(fn)
    model.add_module_flag(4, "nvvm-reflect-ftz", const_int(LT.i32, int(target.fastmath)))
    ref = module.ref
    linked = set(link_libdevice(ref))
    for fn in ref.functions:
        if fn.name in linked:
            fn.linkage = "internal"
    if target.fastmath:
        for fn in module.model.functions.values():
            if not fn.is_declaration:
                fn.add_attribute(_FASTMATH_ATTRIBUTE)
                add_fast_math_flags(fn)
        ref = module.ref
    optimize_linked(target, job, ref)
    module.ref = ref


def optimize_linked(target, job, ref) -> None:
    """The job's optimisation pipeline on ``ref`` after the device library's link, then global DCE (the
    library's functions nothing calls go)."""
    machine = target.target_machine(job.config.opt_level)
    builder = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(job.config.opt_level))
    builder.getModulePassManager().run(ref, builder)
    cleanup = llvm.create_new_module_pass_manager()
    cleanup.add_global_dead_code_eliminate_pass()
    cleanup.run(ref, builder)


def validate(job, module, facts: ModuleFacts) -> list[tuple[str, str]]:
    """:meth:`.ptx.PTXTarget.validate`."""
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


def emit(target: PTXTarget, job, module, kind: str) -> str | bytes:
    """:meth:`.ptx.PTXTarget.emit` of ``asm``, ``llvm`` or ``bc``."""
    return emit_with(target.target_machine(job.config.opt_level), module, kind)


def check_output(target: PTXTarget, kind: str, artifact: str | bytes) -> None:
    """:meth:`.ptx.PTXTarget.check_output`."""
    if kind != "asm":
        return
    import subprocess  # import time: subprocess, signal, selectors (~3 ms), for a check only, not in a compile

    text = artifact.decode() if isinstance(artifact, bytes) else artifact
    with tempfile.TemporaryDirectory(prefix="gpuc-ptxas-") as tmp:
        source = Path(tmp) / "kernel.ptx"
        source.write_text(text)
        proc = subprocess.run([find_ptxas(), f"-arch={target.cpu()}", str(source), "-o", str(Path(tmp) / "k.cubin")],
                              capture_output=True, text=True)
    if proc.returncode != 0:
        raise ToolchainError(f"ptxas rejected the PTX for {target.cpu()}:\n{proc.stderr.strip()}")


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


def _libdevice_or_empty() -> frozenset[str]:
    try:
        return libdevice_functions()
    except FileNotFoundError:
        return frozenset()
