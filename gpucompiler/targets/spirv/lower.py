"""The SPIR-V target's ``finish``: a kernel becomes a Vulkan compute shader LLVM's back end accepts.

In order: the shader entry (:mod:`.entry`) is linked around the kernel and
everything is inlined and optimised; the placeholders of the kernel language
(:mod:`.rules`) become constants and subgroup intrinsics; the AD tape's
``malloc`` and the pointers it keeps in memory go to the tape heap
(:mod:`.heap`); every memory access is rebuilt on logical pointers
(:mod:`.logical`), buffers on
``llvm.spv.resource.handlefrombinding`` handles; float atomics become
device-scope atomics (:mod:`.atomics`). What cannot be expressed is one
:class:`~gpucompiler.errors.InvalidIRError`, raised before LLVM's SPIR-V back
end sees the module (it aborts the process on pointer forms it cannot lower).
"""

from __future__ import annotations

import llvmlite.binding as llvm

from ...core.facts import ALLOCATION_FUNCTIONS
from ...errors import ErrorKind, InvalidIRError
from ...llvm import (Builder, Function, GlobalVariable, Instruction, Value, const_float, const_int, constant, parse_ir,
                     types as LT)
from ...llvm.printer import print_instruction
from ..ptx import entry_name
from .entry import BUFFER, layout, wrapper_ir
from .heap import CALLOC, DISCARD, FREE, HEADER, MALLOC, ZERO, Heap, binding as heap_binding, keeps_pointers, tape_heap
from .logical import STORAGE_BUFFER, Root, to_logical
from .rules import SHARED, SHUFFLE_DOWN, WORKGROUP_SIZE

LOGICAL_POINTER = "LOGICAL_POINTER"
"""The error kind of a pointer use Vulkan's logical addressing cannot express."""
ARGUMENT = "ARGUMENT"
"""The error kind of a kernel argument a shader cannot take."""

#: float64 functions GLSL.std.450 lacks (LLVM intrinsic -> the function's name)
MATH_F64 = {f"llvm.{n}.f64": n for n in ("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
                                          "tanh", "asinh", "acosh", "atanh", "exp", "exp2", "exp10", "log",
                                          "log2", "log10", "pow")}
_MANGLE = {"float": "f32", "double": "f64", "half": "f16"}
#: float32 C math calls the language emits where LLVM has an intrinsic the SPIR-V back end lowers
FLOAT32_LIBM = {f"{n}f": f"llvm.{n}.f32" for n in ("asin", "acos", "atan", "sinh", "cosh", "tanh", "atan2")}


def lower_shader(job, module, target) -> None:
    """Turn the kernel of ``job`` in ``module`` into a compute shader (see the module docstring)."""
    ref = module.ref
    name = entry_name(job, ref)
    kernel = ref.get_function(name)
    params = tuple(module.model.functions[name].function_type.params)
    ref = module.ref
    lay = layout(params)
    if isinstance(lay, str):
        raise InvalidIRError([(ARGUMENT, lay)], job.name)
    kernel = ref.get_function(name)
    kernel.name = name + ".kernel"
    kernel_type = module.model.functions[name + ".kernel"].function_type
    heap = tape_heap(module.model)
    if isinstance(heap, str):
        raise InvalidIRError([(ErrorKind.DYNAMIC_ALLOCATION, f"{heap}: a Vulkan shader allocates only the AD "
                               "tape's blocks (the heap of targets/spirv/heap.py)")], job.name)
    ref = module.ref
    ref.link_in(parse_ir(wrapper_ir(name + ".kernel", kernel_type, lay, name)))
    for fn in ref.functions:
        if not fn.is_declaration and fn.name != name:
            fn.linkage = "internal"
            fn.add_function_attribute("alwaysinline")
    _optimise(ref, target, job.config.opt_level)
    module.ref = ref
    model = module.model
    other = sorted(n for n in ALLOCATION_FUNCTIONS if n in model.functions and model.functions[n].users)
    if other:
        raise InvalidIRError([(ErrorKind.DYNAMIC_ALLOCATION, f"calls of @{', @'.join(other)}: a Vulkan shader "
                               "allocates only the AD tape's blocks (the heap of targets/spirv/heap.py)")], job.name)
    entry = model.functions[name]
    problems = [f"@{f.name} is called, not inlined: a shader's pointers cannot cross calls"
                for f in model.functions.values() if not f.is_declaration and f is not entry]
    _resolve_placeholders(model, entry, target.workgroup)
    _shader_compares(entry)
    _unsigned_division(entry)
    allocates = any(n in model.functions and model.functions[n].users for n in (MALLOC, CALLOC, FREE))
    tape = Heap(model, entry, lay.arrays) if allocates or keeps_pointers(entry) else None
    if tape is not None:
        problems += tape.lower()
    problems += to_logical(entry, _roots(model, entry, heap_binding(lay.arrays), tape))
    problems += _unrooted(entry) if not problems else []
    if problems:
        raise InvalidIRError([(LOGICAL_POINTER, p) for p in problems], job.name)
    for call in _calls(model, BUFFER) + _calls(model, SHARED):  # roots with no access left
        call.replace_all_uses_with(constant(call.type, "poison"))
        call.erase()
    for fn in list(model.functions.values()):
        if fn.name in (BUFFER, SHARED, WORKGROUP_SIZE) or fn.name.startswith(SHUFFLE_DOWN):
            model.remove_function(fn)
    entry.add_attribute('"hlsl.shader"="compute"')
    entry.add_attribute('"hlsl.numthreads"="{},{},{}"'.format(*target.workgroup))
    ref = module.ref
    cleanup = llvm.create_new_module_pass_manager()
    cleanup.add_always_inliner_pass()
    cleanup.add_dead_code_elimination_pass()
    cleanup.add_global_dead_code_eliminate_pass()
    cleanup.add_verifier()
    cleanup.run(ref, llvm.create_pass_builder(target.target_machine(0), llvm.create_pipeline_tuning_options(0)))
    module.ref = ref


def _unrooted(fn: Function) -> list[str]:
    """Accesses whose pointer :func:`to_logical` did not rebuild (e.g. chosen between two arrays)."""
    problems = []
    for inst in fn.instructions():
        if inst.opcode in ("load", "store", "atomicrmw", "cmpxchg"):
            p = inst.pointer_operand
            ok = isinstance(p, Instruction) and _logical_pointer(p)
            if not ok:
                problems.append(f"memory read or written through a pointer Vulkan cannot express (one chosen "
                                f"between two arrays?): {print_instruction(inst).strip()[:160]}")
    return problems


def _logical_pointer(p: Instruction) -> bool:
    """Whether ``p`` is a pointer :func:`to_logical` made: a buffer element, a global's or a local's."""
    if p.opcode == "alloca":
        return True
    if p.opcode == "getelementptr":  # an element of a Workgroup global or of a local array, as _roots made
        base = p.operands[0]
        return isinstance(base, GlobalVariable) or (isinstance(base, Instruction) and base.opcode == "alloca")
    callee = p.callee if p.opcode == "call" else None
    return callee is not None and callee.name.startswith("llvm.spv.resource.getpointer")


def _optimise(ref, target, opt_level: int) -> None:
    tuning = llvm.create_pipeline_tuning_options(max(opt_level, 1))
    tuning.loop_vectorization = tuning.slp_vectorization = False  # Vulkan's accesses are one element each
    builder = llvm.create_pass_builder(target.target_machine(opt_level), tuning)
    pm = llvm.create_new_module_pass_manager()
    pm.add_always_inliner_pass()
    pm.run(ref, builder)
    builder.getModulePassManager().run(ref, builder)


def _calls(model, name: str) -> list[Instruction]:
    fn = model.functions.get(name)
    return [] if fn is None else [u for u in fn.users if isinstance(u, Instruction) and u.opcode == "call"]


def _resolve_placeholders(model, entry: Function, workgroup: tuple[int, int, int]) -> None:
    """Workgroup sizes become constants; shuffles ``OpGroupNonUniformShuffle`` over 32 lanes."""
    for call in _calls(model, WORKGROUP_SIZE):
        axis = _const(call.args[0])
        call.replace_all_uses_with(const_int(LT.i32, workgroup[axis]))
        call.erase()
    for fn in [f for f in model.functions.values() if f.name.startswith(SHUFFLE_DOWN)]:
        for call in _calls(model, fn.name):
            _lower_shuffle(model, call)
    for fn in [f for f in model.functions.values() if f.name.startswith(("llvm.fptosi.sat.", "llvm.fptoui.sat."))]:
        for call in _calls(model, fn.name):
            _lower_saturating(call, fn.name.startswith("llvm.fptosi"))
    for name, intrinsic in FLOAT32_LIBM.items():
        fn = model.functions.get(name)
        if fn is not None and fn.is_declaration:  # the same signature: GLSL.std.450 computes these in float32
            ty = fn.function_type
            fn.replace_all_uses_with(_declare(model, intrinsic, ty.ret, list(ty.params)))
            model.remove_function(fn)
    for fn in [f for f in model.functions.values() if f.name.startswith("llvm.copysign.")]:
        for call in _calls(model, fn.name):
            _lower_copysign(call)


def _lower_copysign(call: Instruction) -> None:
    """``llvm.copysign`` (GLSL.std.450 has none; LLVM 22 stops on it) from the bits: the magnitude of
    the first operand, the sign of the second."""
    x, y = call.args
    bits, _ = _FLOAT_BITS[str(x.type)]
    t = LT.int_type(bits)
    b = Builder()
    b.position_before(call)
    sign = const_int(t, 1 << (bits - 1))
    magnitude = b.binop("and", b.cast("bitcast", x, t), const_int(t, (1 << (bits - 1)) - 1))
    out = b.binop("or", magnitude, b.binop("and", b.cast("bitcast", y, t), sign))
    call.replace_all_uses_with(b.cast("bitcast", out, x.type))
    call.erase()


def _unsigned_division(fn: Function) -> None:
    """``sdiv``/``srem`` as unsigned division of the magnitudes, the sign put back with selects.

    LLVM's back end declares every integer type unsigned (``OpTypeInt 64 0``), and NVIDIA's driver
    (580) then computes ``OpSRem`` as an unsigned remainder: ``-55 % 20011`` gave ``2**64 - 55``'s
    remainder (found by the kernel fuzzer, Python's ``%`` off for negative operands). ``OpUDiv`` and
    ``OpUMod`` on unsigned types mean the same to every driver. ``0 - INT_MIN`` is ``2**(N-1)`` as an
    unsigned magnitude, so every operand pair keeps LLVM's result (division by zero and
    ``INT_MIN / -1`` stay undefined, as in LLVM)."""
    for inst in list(fn.instructions()):
        if inst.opcode not in ("sdiv", "srem") or not isinstance(inst.type, LT.IntType):
            continue
        t = inst.type
        zero = const_int(t, 0)
        b = Builder()
        b.position_before(inst)
        a, d = inst.operands[0], inst.operands[1]
        a_neg = b.icmp("slt", a, zero)
        d_neg = b.icmp("slt", d, zero)
        ua = b.select(a_neg, b.binop("sub", zero, a), a)
        ud = b.select(d_neg, b.binop("sub", zero, d), d)
        if inst.opcode == "sdiv":
            q = b.binop("udiv", ua, ud)
            out = b.select(b.binop("xor", a_neg, d_neg), b.binop("sub", zero, q), q)
        else:
            r = b.binop("urem", ua, ud)
            out = b.select(a_neg, b.binop("sub", zero, r), r)
        inst.replace_all_uses_with(out)
        inst.erase()


def _shader_compares(fn: Function) -> None:
    """``fcmp uno``/``ord`` (OpenCL's ``OpUnordered``/``OpOrdered``) as NaN tests on the bits."""
    for inst in list(fn.instructions()):
        if inst.opcode == "fcmp" and inst.predicate in ("uno", "ord"):
            b = Builder()
            b.position_before(inst)
            x, y = inst.operands[0], inst.operands[1]
            either = b.binop("or", _is_nan(b, x), _is_nan(b, y))
            inst.replace_all_uses_with(either if inst.predicate == "uno" else b.binop("xor", either, const_int(LT.i1, 1)))
            inst.erase()


_FLOAT_BITS = {"half": (16, 10), "float": (32, 23), "double": (64, 52)}


def _is_nan(b: Builder, x: Value) -> Value:
    """Whether the float ``x`` is a NaN, from its bits: a Vulkan driver need not keep NaN semantics in
    float compares (without ``SignedZeroInfNanPreserve``; NVIDIA's folds ``x != x`` to false)."""
    bits, mantissa = _FLOAT_BITS[str(x.type)]
    t = LT.int_type(bits)
    magnitude = b.binop("and", b.cast("bitcast", x, t), const_int(t, (1 << (bits - 1)) - 1))
    return b.icmp("ugt", magnitude, const_int(t, ((1 << (bits - 1 - mantissa)) - 1) << mantissa))


def _lower_saturating(call: Instruction, signed: bool) -> None:
    """``llvm.fpto[su]i.sat`` as compares and a plain conversion (Vulkan has no ``SaturatedConversion``):
    NaN gives 0, values past the integer's range its bound."""
    x = call.args[0]
    t = call.type
    assert isinstance(t, LT.IntType)
    low, high = (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if signed else (0, (1 << t.bits) - 1)
    b = Builder()
    b.position_before(call)
    out = b.cast("fptosi" if signed else "fptoui", x, t)
    out = b.select(b.fcmp("oge", x, const_float(x.type, float(high))), const_int(t, high), out)
    out = b.select(b.fcmp("ole", x, const_float(x.type, float(low))), const_int(t, low), out)
    out = b.select(_is_nan(b, x), const_int(t, 0), out)
    call.replace_all_uses_with(out)
    call.erase()


def _declare(model, name: str, ret: LT.Type, params, *attrs: str) -> Function:
    fn = model.functions.get(name)
    if fn is None:
        fn = model.add_function(Function(name, LT.function(ret, params)))
        for a in attrs:
            fn.add_attribute(a)
    return fn


def _lower_shuffle(model, call: Instruction) -> None:
    """``shfl.down(v, d)``: lane ``id + d`` of the subgroup when below 32, else ``v`` (the runtime
    requires 32-lane subgroups for such shaders)."""
    word, delta = call.args
    b = Builder()
    b.position_before(call)
    lane_id = _declare(model, "llvm.spv.subgroup.local.invocation.id", LT.i32, [])
    lane = b.binop("add", b.call(lane_id, []), delta)
    read = _declare(model, f"llvm.spv.wave.readlane.{word.type}", word.type, [word.type, LT.i32], "convergent")
    got = b.call(read, [word, lane])
    inside = b.icmp("ult", lane, const_int(LT.i32, 32))
    call.replace_all_uses_with(b.select(inside, got, word))
    call.erase()


def _const(v: Value) -> int:
    value = getattr(v, "value", None)
    assert isinstance(value, int), v
    return value


def _roots(model, entry: Function, heap: int, tape: Heap | None) -> list[Root]:
    """Storage buffers (one handle per binding; binding ``heap`` the ``tape`` heap's words), shared arrays
    and local variables of ``entry`` (byte arrays, the AD tape's, as words: it stores values of every
    width in them)."""
    roots: list[Root] = []
    first = entry.entry.instructions[0]
    by_binding: dict[int, Instruction] = {}
    for call in _calls(model, BUFFER):
        binding = _const(call.args[0])
        keep = by_binding.setdefault(binding, call)
        if keep is not call:
            call.replace_all_uses_with(keep)
            call.erase()
    for binding, call in sorted(by_binding.items()):
        if call.parent is not entry.entry:  # its operands are constants: valid at the top
            call.remove_from_parent()
            call.insert_before(first)
        if binding == heap:
            roots.insert(0, Root(call, "the AD tape heap", _buffer_address(model, entry, binding), LT.i32,
                                 words=True, heap=True, dead=tape.spent if tape is not None else None,
                                 spare=(ZERO, DISCARD), reserved=HEADER // 4))
        else:
            roots.append(Root(call, f"storage buffer {binding}", _buffer_address(model, entry, binding)))
    for call in _calls(model, SHARED):
        g = call.args[0]
        assert isinstance(g, GlobalVariable) and isinstance(g.value_type, LT.ArrayType)
        roots.append(Root(call, f"shared array @{g.name}", _array_address(g, g.value_type),
                          g.value_type.element))
    for inst in list(entry.instructions()):
        if inst.opcode == "alloca":
            t = inst.allocated_type
            assert t is not None
            if isinstance(t, LT.ArrayType) and t.element == LT.i8:
                b = Builder()
                b.position_before(inst)
                words = LT.array((t.count + 3) // 4, LT.i32)
                new = b.alloca(words, align=max(inst.alignment or 4, 4))
                inst.replace_all_uses_with(new)
                inst.erase()
                roots.append(Root(new, f"local byte array %{inst.name}", _array_address(new, words), LT.i32,
                                  words=True))
            elif isinstance(t, LT.ArrayType):
                roots.append(Root(inst, f"local array %{inst.name}", _array_address(inst, t), t.element))
            else:
                roots.append(Root(inst, f"local variable %{inst.name}", lambda b, i, e, a=inst: a, t))
    return roots


def _array_address(base: Value, t: LT.ArrayType):
    def address(b: Builder, index: Value, element: LT.Type) -> Value:
        return b.gep(t, base, [const_int(LT.i32, 0), index])
    return address


def _buffer_address(model, entry: Function, binding: int):
    """Element ``index`` of binding ``binding``: one resource handle per binding, made at the entry."""
    handles: dict[str, Value] = {}

    def address(b: Builder, index: Value, element: LT.Type) -> Value:
        handle_type = LT.TargetExtType(f'target("spirv.VulkanBuffer", [0 x {element}], 12, 1)')
        suffix = f"tspirv.VulkanBuffer_a0{_MANGLE.get(str(element), str(element))}_12_1t"
        handle = handles.get(suffix)
        if handle is None:
            label = model.add_global(GlobalVariable(
                f"gpuc.binding.{binding}", LT.array(len(f"b{binding}") + 1, LT.i8),
                prefix="private unnamed_addr", is_constant=True,
                initializer=constant(LT.array(len(f"b{binding}") + 1, LT.i8), f'c"b{binding}\\00"')))
            make = _declare(model, f"llvm.spv.resource.handlefrombinding.{suffix}", handle_type,
                            [LT.i32, LT.i32, LT.i32, LT.i32, LT.ptr()])
            top = Builder()
            top.position_before(entry.entry.instructions[0])
            handle = handles[suffix] = top.call(make, [const_int(LT.i32, 0), const_int(LT.i32, binding),
                                                       const_int(LT.i32, 1), const_int(LT.i32, 0), label])
        get = _declare(model, f"llvm.spv.resource.getpointer.p{STORAGE_BUFFER}.{suffix}", LT.ptr(STORAGE_BUFFER),
                       [handle_type, LT.i32])
        return b.call(get, [handle, index])
    return address
