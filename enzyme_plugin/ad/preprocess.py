"""LLVM passes around AD: cleanup before (so AD sees SSA values, not stack slots)
and the O2 pipeline after (what Enzyme does so the derivative is fast)."""

from __future__ import annotations

import functools
import re

import llvmlite.binding as llvm

from gpucompiler.llvm import ConstantAggregate, ConstantData, Module, constant, initialize, parse_ir, types as T

_OPTNONE = re.compile(r"\boptnone\b")


@functools.cache
def _target_machine(triple: str, opt: int) -> llvm.TargetMachine:
    """One target machine per triple and level for the process (each took ~0.5 ms to make, and
    :func:`prepare` runs at every level of AD)."""
    initialize()
    try:
        target = llvm.Target.from_triple(triple)
    except RuntimeError:
        target = llvm.Target.from_default_triple()
    return target.create_target_machine(opt=opt)


def _pass_builder(ref: llvm.ModuleRef, opt: int) -> llvm.PassBuilder:
    tm = _target_machine(ref.triple or llvm.get_process_triple(), opt)
    return llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=opt))


def prepare(ir: str | llvm.ModuleRef) -> str:
    """SROA/mem2reg, instcombine, simplifycfg, a single exit per function and
    loops in canonical form (loop-simplify, LCSSA); returns the text.

    ``ir``: LLVM IR text, whose ``optnone`` is dropped first (clang -O0 sets it; the derivative is
    optimised anyway), or a verified module LLVM holds and no function of which is ``optnone``
    (changed in place: the text's print and parse between an optimisation and this saved)."""
    ref = parse_ir(_OPTNONE.sub("", ir)) if isinstance(ir, str) else ir
    pb = _pass_builder(ref, 2)
    mpm = llvm.create_new_module_pass_manager()
    mpm.add_sroa_pass()
    mpm.add_instruction_combine_pass()
    mpm.add_simplify_cfg_pass()
    mpm.add_sroa_pass()
    mpm.add_dead_code_elimination_pass()
    mpm.add_unify_function_exit_nodes_pass()
    # canonical loops for the tape: a preheader, one latch, exits reached only from the loop
    mpm.add_loop_simplify_pass()
    mpm.add_lcssa_pass()
    mpm.run(ref, pb)
    return str(ref)


def has_optnone(text: str) -> bool:
    """Whether ``text`` may spell ``optnone`` (then :func:`prepare` takes it as text, which drops it)."""
    return _OPTNONE.search(text) is not None


def optimize(text: str, level: int = 2) -> str:
    """LLVM's default ``O<level>`` pipeline; the result is verified."""
    ref = parse_ir(text)
    if level > 0:
        pb = _pass_builder(ref, level)
        pb.getModulePassManager().run(ref, pb)
        ref.verify()
    return str(ref)


_UNDEFINED = frozenset(("poison", "undef"))
_UNDEFINED_WORD = re.compile(r"\b(?:poison|undef)\b")
#: an undefined vector (``<2 x double> poison``) or lane (``<double 1.0, double undef>``) in IR text
_UNDEFINED_LANE = re.compile(r"(?:>\s*|<[^<>]*)\b(?:poison|undef)\b")
_FLOATS = frozenset(("half", "bfloat", "float", "double", "fp128", "x86_fp80", "ppc_fp128"))


def define_unused_lanes(module: Module) -> None:
    """Give the vector lanes a function leaves undefined a value: a ``poison``/``undef`` lane of a
    float vector becomes 0.5 and of an integer vector 1 (no division by zero, no logarithm's or arc
    sine's singularity in a lane nobody reads), a shuffle mask's undefined lane takes lane 0. The
    function never uses such a lane (that would be undefined behaviour), but adjoints multiply by it:
    an SLP-vectorized ``<a*b, poison>`` gives the unused lane the adjoint ``0 * poison``, which is
    poison, not 0, and spoiled the lanes it was added to (clang -O2 code's gradients came out wrong)."""
    for fn in module.functions.values():
        left = module.unparsed.get(fn)  # a body not parsed yet: left so unless it may spell an undefined lane
        if fn.is_declaration or (left is not None and not _UNDEFINED_LANE.search(left)):
            continue
        for block in fn.blocks:
            for inst in block.instructions:
                for k, op in enumerate(inst.operands):
                    if op.type.kind == "vector":
                        mask = inst.opcode == "shufflevector" and k == 2
                        new = _defined(op, mask)
                        if new is not op:
                            inst.set_operand(k, new)


def _lane_text(t: T.Type, mask: bool) -> str:
    return "0" if mask else "0.5" if t.kind in _FLOATS else "1"


def _defined(op, mask: bool):
    """``op`` with its undefined lanes defined (itself if it has none)."""
    if isinstance(op, ConstantData):
        text = op.ref
        vector = op.type
        assert isinstance(vector, T.VectorType), "a vector operand"
        lane = _lane_text(vector.element, mask)
        if text in _UNDEFINED:
            return constant(vector, "<" + ", ".join([f"{vector.element} {lane}"] * vector.count) + ">")
        if text.startswith("<") and _UNDEFINED_WORD.search(text):
            return constant(vector, _UNDEFINED_WORD.sub(lane, text))
        return op
    if isinstance(op, ConstantAggregate):
        for k, element in enumerate(op.operands):
            if isinstance(element, ConstantData) and element.ref in _UNDEFINED:
                op.set_operand(k, constant(element.type, _lane_text(element.type, mask)))
    return op
