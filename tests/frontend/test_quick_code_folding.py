"""Code compiled at ``opt_level=0`` (the quick tier's, docs/user_guide.md "Tiered first compiles") folds
comparisons, conversions and selects of constants as it is built (gpucompiler/codegen/folding.py), so a
check that cannot fail (a constant divisor's) emits no cold path. The folds against LLVM's own constant
folding of the same instructions, the results against CPython, and the full level's IR unchanged."""

from __future__ import annotations

import itertools
import math
import re
import struct

import llvmlite.binding as llvm
import pytest
from llvmlite import ir

from gpucompiler import jit
from gpucompiler.codegen.folding import FoldingBuilder, is_true
from gpucompiler.targets.native import NativeTarget

INTS = {8: [0, 1, -1, 127, -128, 5], 32: [0, 1, -1, 2**31 - 1, -(2**31), 3, 2**31 + 5], 64: [0, 1, -1, 3, 2**63 - 1,
                                                                                            -(2**63), 2**64 - 1]}
DOUBLES = [0.0, -0.0, 1.5, -2.0, math.inf, -math.inf, math.nan, 5e-324]
OPS = ["==", "!=", "<", "<=", ">", ">="]


def _llvm_folds(build) -> list[str]:
    """``build(b)`` returns i1 values made by a plain builder in one function; LLVM's O2 pipeline folds them:
    each one's ``true``/``false`` as LLVM computes it."""
    module = ir.Module()
    values = []
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.PointerType()]), name="f")
    b = ir.IRBuilder(fn.append_basic_block())
    for k, v in enumerate(build(b)):
        b.store(b.zext(v, ir.IntType(8)) if v.type == ir.IntType(1) else v,
                b.gep(fn.args[0], [ir.Constant(ir.IntType(64), 16 * k)], source_etype=ir.IntType(8)))
        values.append(v.type)
    b.ret_void()
    ref = llvm.parse_assembly(str(module))
    tm = NativeTarget().target_machine(2)
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=2))
    pb.getModulePassManager().run(ref, pb)
    stores = re.findall(r"store (i8|double|i64) ([^,]+), ptr", str(ref))
    assert len(stores) == len(values), str(ref)
    return [v.strip() for _, v in stores]


def _ours(v) -> str:
    """A folded value as LLVM prints what it stores: an i1 zero-extended to i8, a double by its bits."""
    assert isinstance(v, ir.Constant), f"not folded: {v}"
    return float(v.constant).hex() if isinstance(v.type, ir.DoubleType) else str(int(v.constant))


def _theirs(text: str, double: bool) -> str:
    """LLVM's print of a stored constant in :func:`_ours`'s spelling."""
    if not double:
        return text
    if text.startswith("0x"):
        return struct.unpack(">d", bytes.fromhex(text[2:]))[0].hex()
    return float(text).hex()


@pytest.mark.parametrize("bits", [8, 32, 64])
def test_integer_comparisons_fold_as_llvm_folds_them(bits):
    t = ir.IntType(bits)
    cases = [(op, signed, x, y) for op in OPS for signed in (True, False)
             for x, y in itertools.product(INTS[bits], repeat=2)]

    def build(b):
        return [(b.icmp_signed if s else b.icmp_unsigned)(op, ir.Constant(t, x), ir.Constant(t, y))
                for op, s, x, y in cases]

    folded = FoldingBuilder(ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), []), "g").append_basic_block())
    assert [_ours(v) for v in build(folded)] == _llvm_folds(build)


def test_double_comparisons_fold_as_llvm_folds_them():
    cases = [(op, ordered, x, y) for op in OPS for ordered in (True, False)
             for x, y in itertools.product(DOUBLES, repeat=2)]

    def build(b):
        return [(b.fcmp_ordered if o else b.fcmp_unordered)(op, ir.Constant(ir.DoubleType(), x),
                                                            ir.Constant(ir.DoubleType(), y)) for op, o, x, y in cases]

    folded = FoldingBuilder(ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), []), "g").append_basic_block())
    assert [_ours(v) for v in build(folded)] == _llvm_folds(build)


def test_conversions_logic_and_selects_fold_as_llvm_folds_them():
    i1, i64, f64 = ir.IntType(1), ir.IntType(64), ir.DoubleType()
    ints = [0, 1, -1, 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1, 3]

    def build(b):
        out = [b.sitofp(ir.Constant(i64, x), f64) for x in ints]
        for x, y in itertools.product((0, 1), repeat=2):
            out += [b.and_(ir.Constant(i1, x), ir.Constant(i1, y)), b.or_(ir.Constant(i1, x), ir.Constant(i1, y)),
                    b.xor(ir.Constant(i1, x), ir.Constant(i1, y))]
        out += [b.select(ir.Constant(i1, c), ir.Constant(i64, 7), ir.Constant(i64, -9)) for c in (0, 1)]
        return out

    folded = FoldingBuilder(ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), []), "g").append_basic_block())
    n = len(ints)
    assert [_ours(v) for v in build(folded)] == [_theirs(t, k < n) for k, t in enumerate(_llvm_folds(build))]


def test_operands_not_all_constant_are_left_to_llvm():
    fn = ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), [ir.IntType(64), ir.DoubleType()]), "g")
    b = FoldingBuilder(fn.append_basic_block())
    n, x = fn.args
    made = [b.icmp_signed("<", n, ir.Constant(ir.IntType(64), 3)), b.fcmp_ordered("<", x, ir.Constant(x.type, 1.0)),
            b.sitofp(n, ir.DoubleType()), b.select(made_cond := b.icmp_signed("==", n, n), n, n),
            b.fcmp_ordered("ord", ir.Constant(x.type, 1.0), ir.Constant(x.type, 2.0))]
    assert all(isinstance(v, ir.Instruction) for v in made) and not is_true(made_cond)


def modulo_and_halves(n, x):
    s = 0.0
    for i in range(n):
        if i % 3 == 0:
            s += x / 2
        s = s / (i % 7 + 1.0)
    return s


def by_zero(n):
    return n % 0


def test_constant_divisors_leave_no_cold_path_at_o0_only():
    """At O0 one check is left: the division by ``i % 7 + 1.0``, not a constant; the full level's module
    is generated as it always was (four checks, which LLVM's optimiser folds itself)."""
    quick, full = jit(modulo_and_halves, opt_level=0, tier=False), jit(modulo_and_halves, tier=False)
    for f in (quick, full):
        assert f(20, 1.5) == modulo_and_halves(20, 1.5)
    assert len(re.findall(r"call void @PyErr_SetString", quick.inspect_llvm(quick.signatures[0]))) == 1
    job = full._job(full.signatures[0])
    assert len(re.findall(r"call void @\"?PyErr_SetString", job.source.generate_ir(job))) == 4


def test_a_constant_zero_divisor_still_raises_at_o0():
    f = jit(by_zero, opt_level=0, tier=False)
    with pytest.raises(ZeroDivisionError):
        f(5)
