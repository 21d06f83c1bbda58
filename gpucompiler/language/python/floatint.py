"""Where ints meet floats: comparisons with CPython's exact semantics.

CPython compares an ``int`` with a ``float`` by their mathematical values:
``2**53 + 1 == 9007199254740992.0`` is False, although converting the int to
double gives equality. The hot path still compares in double: the answer is
exact whenever the int converts exactly (``|i| <= 2**53``), and also whenever
the converted value differs from the float (rounding is monotonic, so the
order is kept). Only an int beyond 2**53 that rounds onto the float takes the
cold path, which compares the float's integer value as an integer.
"""

from __future__ import annotations

from ...pristine import math  # as imported (pristine.py: the rules key on its functions)

from llvmlite import ir

from ... import types as T
from ...interpreter.lattice import Const, widen

_MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_EXACT = 2 ** 53
_LIKELY = [1 << 20, 1]


def fcmp(cg, sym, a, b):
    """IEEE comparison as Python does it: every comparison with NaN is False but ``!=``."""
    return (cg.b.fcmp_unordered if sym == "!=" else cg.b.fcmp_ordered)(sym, a, b)


def finite(cg, v):
    """``v`` is neither NaN nor an infinity (compares with constants only)."""
    inf = ir.Constant(v.type, math.inf)
    return cg.b.and_(cg.b.fcmp_ordered("!=", v, inf), cg.b.fcmp_ordered("!=", v, cg.b.fneg(inf)))


def exact_pow(cg, rt, xs):
    """``x ** y`` as libm's ``pow``, declared ``nobuiltin``: LLVM rewrites ``pow(2**53, y)`` into
    ``exp2(53 * y)``, which rounds ``53 * y`` first (a result 20 ulp off CPython's). The
    intrinsic in differentiated code (the AD engine's rules know it) and on a GPU, there the device
    library's ``pow`` where the target names one (NVPTX cannot lower ``llvm.pow``)."""
    if cg.target.is_gpu and not cg.mod.error_slot:
        device = cg.target.math_to_device("llvm.pow." + ("f32" if rt == T.float32 else "f64"))
        if device is not None:
            return cg.call_extern(device, rt, xs)
    if cg.target.is_gpu or cg.mod.error_slot:
        return cg.call_intrinsic("llvm.pow", rt, xs)
    fn = cg.mod.declare("pow" + ("f" if rt == T.float32 else ""), cg.ll(rt), [x.type for x in xs])
    fn.attributes.add("nobuiltin")
    return cg.b.call(fn, xs)


def _needs_exact(it, ft) -> bool:
    """Whether an int of abstract value ``it`` and a float ``ft`` can round onto each other."""
    if widen(it).bits <= 53 or (isinstance(it, Const) and abs(it.value) <= _EXACT):
        return False
    if isinstance(ft, Const):  # only integral floats beyond 2**53 can be hit by rounding
        f = ft.value
        return math.isfinite(f) and abs(f) >= _EXACT
    return True


def compare_int_float(cg, sym, i, it, f, ft):
    """``i <sym> f`` for an integer ``i`` (abstract value ``it``) and a float64 ``f``, exactly."""
    b = cg.b
    fast = fcmp(cg, sym, b.sitofp(i, f.type), f)
    if not _needs_exact(it, ft):
        return fast
    if i.type.width < 64:
        i = b.sext(i, ir.IntType(64))
    i64 = i.type
    # |i| <= 2**53: i + 2**53 (wrapping) as unsigned is at most 2**54
    exact = b.icmp_unsigned("<=", b.add(i, ir.Constant(i64, _EXACT)), ir.Constant(i64, 2 * _EXACT))
    here = b.block
    slow = cg.fn.append_basic_block("intfloat.slow")
    done = cg.fn.append_basic_block("intfloat.done")
    b.cbranch(exact, done, slow).set_weights(_LIKELY)
    b.position_at_end(slow)
    rounded = b.sitofp(i, f.type)
    onto = b.fcmp_ordered("==", rounded, f)  # f is then integral, in [-2**63, 2**63]
    big = b.fcmp_ordered(">=", f, ir.Constant(f.type, float(2 ** 63)))
    fi = b.fptosi(b.select(big, ir.Constant(f.type, 0.0), f), i64)
    as_int = b.icmp_signed(sym, i, fi)
    beyond = ir.Constant(ir.IntType(1), int(sym in ("<", "<=", "!=")))  # i < 2**63 always
    exact_cmp = b.select(big, beyond, as_int)
    slow_result = b.select(onto, exact_cmp, fcmp(cg, sym, rounded, f))
    slow_end = b.block
    b.branch(done)
    b.position_at_end(done)
    phi = b.phi(ir.IntType(1))
    phi.add_incoming(fast, here)
    phi.add_incoming(slow_result, slow_end)
    return phi


__all__ = ["compare_int_float", "exact_pow", "fcmp", "finite"]
