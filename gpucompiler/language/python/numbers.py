"""Base rules for scalars: arithmetic with Python semantics, comparisons, conversions."""

from __future__ import annotations

from ...pristine import builtins  # as imported (pristine.py: the rules key on its functions)
import operator

from llvmlite import ir

from ... import types as T
from ...frontend import intrinsics as K
from ...interpreter.lattice import Const, computed, widen
from ...interpreter.rules import Any_, Bool, CallResult, Constant, Float, Int, Number
from . import pyhelpers as H
from .floatint import _MIRROR, compare_int_float, exact_pow, fcmp, finite
from .powers import small_exponent, small_power
from ..precedence import base

IntLike = lambda t: isinstance(widen(t), T.Scalar) and widen(t).kind in "ibu"  # noqa: E731
_CATEGORY = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}


def _weak(t) -> bool:
    """A Python number known at compile time (a literal): NumPy 2 lets the other operand's type
    decide (``uint8 + 1`` is ``uint8``, ``float32 * 2.0`` is ``float32``)."""
    return isinstance(t, Const) and type(t.value) in (int, float, complex)


def _fits(value, t: T.Scalar) -> bool:
    if not t.is_integer or not isinstance(value, int):
        return True
    lo = -(1 << (t.bits - 1)) if t.kind == "i" else 0
    return lo <= value < lo + (1 << t.bits)


def _promote2(a, b) -> T.Scalar:
    ta, tb = widen(a), widen(b)
    if _weak(a) != _weak(b):
        (w, tw), ts = ((a, ta), tb) if _weak(a) else ((b, tb), ta)
        if ts.kind != "b" and _CATEGORY[tw.kind] <= _CATEGORY[ts.kind] and _fits(w.value, ts):
            return ts
        if tw.kind == "c" and ts.kind == "f":
            return T.complex_of(ts)
    return T.promote(ta, tb)


def out_of_bounds(argtypes) -> tuple[int, T.Scalar] | None:
    """``(value, type)`` when a Python int literal meets a NumPy integer it does not fit: NumPy 2
    converts the literal to that type (NEP 50) and raises ``OverflowError`` (arithmetic, bitwise
    and shift operators; comparisons, ``/``, ``min`` and ``max`` take the exact value)."""
    if len(argtypes) != 2 or _weak(argtypes[0]) == _weak(argtypes[1]):
        return None
    w, s = (argtypes[0], argtypes[1]) if _weak(argtypes[0]) else (argtypes[1], argtypes[0])
    ts = widen(s)
    if type(w.value) is int and isinstance(ts, T.Scalar) and ts.kind in "iu" and not _fits(w.value, ts):
        return w.value, ts
    return None


def raise_out_of_bounds(cg, bad: tuple[int, T.Scalar], rt):
    """NumPy's ``OverflowError`` for :func:`out_of_bounds` (a GPU thread traps); the operation never runs:
    its result is a placeholder of type ``rt``."""
    value, t = bad
    cg.check_required(ir.Constant(ir.IntType(1), 0), "OverflowError", f"Python integer {value} out of bounds for {t}")
    return ir.Constant(cg.ll(rt), None)


def _promoted(*ts):
    out = ts[0]
    for t in ts[1:]:
        out = _promote2(out, t)
    out = widen(out)
    return T.promote(out, out) if out == T.boolean else out


def _binary(fn, sig, restype, int_op=None, float_op=None, lower=None):
    def lower_(cg, args, argtypes, rt):
        bad = out_of_bounds(argtypes)
        if bad is not None:
            return raise_out_of_bounds(cg, bad, rt)
        t = rt
        a, b = (cg.cast(v, widen(at), t) for v, at in zip(args, argtypes))
        if lower is not None:
            return lower(cg, a, b, t)
        op = float_op if t.kind == "f" else int_op
        assert op is not None, f"no instruction for {t}"
        return getattr(cg.b, op)(a, b)
    base.define(fn, *sig, restype=restype)(lower_)


for _fn, _i, _f in ((operator.add, "add", "fadd"), (operator.sub, "sub", "fsub"),
                    (operator.mul, "mul", "fmul")):
    _binary(_fn, (Number, Number), _promoted, _i, _f)
def _bitwise_type(a, b):
    """The promoted integer type; None (no implementation) for uint64 with a signed integer, whose
    common type is float64 (NumPy's TypeError); the integer's type for a literal it cannot hold (raises)."""
    bad = out_of_bounds((a, b))
    if bad is not None:
        return bad[1]
    t = _promoted(a, b)
    return t if t.kind in "iu" else None


def _logical_type(a, b):
    """``&``, ``|``, ``^`` of two bools is a bool (Python's and NumPy's), else the integer type."""
    return T.boolean if widen(a) == widen(b) == T.boolean else _bitwise_type(a, b)


for _fn, _i in ((operator.and_, "and_"), (operator.or_, "or_"), (operator.xor, "xor")):
    _binary(_fn, (IntLike, IntLike), _logical_type, _i)


def _shift_count(cg, b, signed=True):
    """``b`` checked like Python (a negative count is a ValueError) and whether it is out of
    ``[0, width)`` (unsigned compare: where errors cannot be raised, in kernels, a negative
    count still gives a defined value, never LLVM poison)."""
    zero = ir.Constant(b.type, 0)
    if signed:
        cg.check(cg.b.icmp_signed(">=", b, zero), "ValueError", "negative shift count")
    return cg.b.icmp_unsigned(">=", b, ir.Constant(b.type, b.type.width))


def _lshift(cg, a, b, t):
    """Python's ``a << b`` wrapped to the integer width: 0 once every bit is shifted out
    (LLVM's ``shl`` by the width or more is poison)."""
    past = _shift_count(cg, b, t.kind == "i")
    safe = cg.b.select(past, ir.Constant(b.type, 0), b)
    return cg.b.select(past, ir.Constant(a.type, 0), cg.b.shl(a, safe))


def _rshift(cg, a, b, t):
    """Python's ``a >> b``: a shift by the width or more gives 0 or -1 (the sign); unsigned
    integers shift in zeros (0 once every bit is out)."""
    past = _shift_count(cg, b, t.kind == "i")
    if t.kind == "u":
        safe = cg.b.select(past, ir.Constant(b.type, 0), b)
        return cg.b.select(past, ir.Constant(a.type, 0), cg.b.lshr(a, safe))
    return cg.b.ashr(a, cg.b.select(past, ir.Constant(b.type, b.type.width - 1), b))


_binary(operator.lshift, (IntLike, IntLike), _bitwise_type, lower=_lshift)
_binary(operator.rshift, (IntLike, IntLike), _bitwise_type, lower=_rshift)


def _truediv_type(a, b):
    t = _promoted(a, b)
    return t if t.kind == "f" else T.float64


@base.define(operator.truediv, Number, Number, restype=_truediv_type)
def _truediv(cg, args, argtypes, rt):
    a, b = (cg.cast(v, widen(t), rt) for v, t in zip(args, argtypes))
    floats = any(widen(t).kind == "f" for t in argtypes)
    cg.check_math(cg.b.fcmp_unordered("!=", b, ir.Constant(b.type, 0.0)), "ZeroDivisionError",
                  "float division by zero" if floats else "division by zero")
    return cg.b.fdiv(a, b)


def _safe_divisor(cg, a, b):
    """``(b', minus_one)``: b with 0 and -1 replaced by 1 (no trap), and b == -1."""
    zero = ir.Constant(b.type, 0)
    cg.check_math(cg.b.icmp_signed("!=", b, zero), "ZeroDivisionError", "integer division by zero")
    minus_one = cg.b.icmp_signed("==", b, ir.Constant(b.type, -1))
    bad = cg.b.or_(minus_one, cg.b.icmp_signed("==", b, zero))
    return cg.b.select(bad, ir.Constant(b.type, 1), b), minus_one


def _unsigned_divisor(cg, b):
    zero = ir.Constant(b.type, 0)
    is_zero = cg.b.icmp_unsigned("==", b, zero)
    cg.check_math(cg.b.not_(is_zero), "ZeroDivisionError", "integer division by zero")
    return cg.b.select(is_zero, ir.Constant(b.type, 1), b)


def _int_floordiv(cg, a, b, t):
    if t.kind == "u":
        return cg.b.udiv(a, _unsigned_divisor(cg, b))
    b1, minus_one = _safe_divisor(cg, a, b)
    q, r = cg.b.sdiv(a, b1), cg.b.srem(a, b1)
    adjust = cg.b.and_(cg.b.icmp_signed("!=", r, ir.Constant(r.type, 0)),
                       cg.b.icmp_signed("<", cg.b.xor(r, b1), ir.Constant(r.type, 0)))
    q = cg.b.sub(q, cg.b.zext(adjust, q.type))
    return cg.b.select(minus_one, cg.b.neg(a), q)


def _int_mod(cg, a, b, t):
    if t.kind == "u":
        return cg.b.urem(a, _unsigned_divisor(cg, b))
    b1, minus_one = _safe_divisor(cg, a, b)
    r = cg.b.srem(a, b1)
    adjust = cg.b.and_(cg.b.icmp_signed("!=", r, ir.Constant(r.type, 0)),
                       cg.b.icmp_signed("<", cg.b.xor(r, b1), ir.Constant(r.type, 0)))
    r = cg.b.select(adjust, cg.b.add(r, b1), r)
    return cg.b.select(minus_one, ir.Constant(r.type, 0), r)


_binary(operator.floordiv, (IntLike, IntLike), _promoted, lower=_int_floordiv)
_binary(operator.mod, (IntLike, IntLike), _promoted, lower=_int_mod)


_HELPED = (operator.floordiv, operator.mod, operator.pow)


@base.handler
def _python_helpers(interp, fn, args):
    """``//``, ``%`` on floats and ``**`` on ints are written in Python (pyhelpers)."""
    if fn not in _HELPED or len(args) != 2 or not all(isinstance(widen(a), T.Scalar) for a in args):
        return None
    if any(widen(a).kind == "c" for a in args):
        return _complex_power(interp, fn, args)
    folded = _folded(fn, args)
    if folded is not None:
        return folded
    bad = out_of_bounds(args)
    if bad is not None:
        return CallResult(_promoted(*args), lambda cg, a, at, rt: raise_out_of_bounds(cg, bad, rt))
    helper, t = None, _promoted(*args)
    if t.kind == "f":  # uint64 with a signed integer too (their common type is float64)
        helper = {operator.floordiv: H.float_floordiv, operator.mod: H.float_mod}.get(fn)
        args = [t, t]  # in NumPy's promoted type (``float32 % 2**40`` is a float32)
    elif fn is operator.pow:
        e = args[1]
        if isinstance(e, Const) and e.value < 0:
            return None  # float result: the float rule below
        # in NumPy's promoted type (``int8 ** 2`` is an int8 that wraps, ``uint64 ** uint64`` a uint64)
        return interp.invoke(H.int_pow, [t, e])
    return interp.invoke(helper, args) if helper else None


def _complex_power(interp, fn, args) -> CallResult | None:
    """``z ** n`` of a complex128 ``z`` and an integral constant ``|n| <= 100``: CPython's multiplications
    (pyhelpers.complex_powi); other complex powers are not compiled (None)."""
    e = args[1]
    if fn is not operator.pow or widen(args[0]) != T.complex128 or not isinstance(e, Const):
        return None
    value = e.value
    if isinstance(value, complex):
        if value.imag != 0:
            return None
        value = value.real
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or abs(value) > 100:
        return None
    n = Const(int(value), T.int64)
    res = interp.invoke(H.complex_powi, [args[0], n])
    # the helper takes the exponent as the int constant, whatever the operand's type (2.0, 2+0j)
    return CallResult(res.restype, lambda cg, a, at, rt: cg.call_result(
        res, [a[0], ir.Constant(ir.IntType(64), n.value)], [at[0], n], rt))


def _folded(fn, args) -> CallResult | None:
    """``//``, ``%`` or ``**`` of two Python number constants, computed by Python: CPython's value
    (an integer outside int64 stays a compile-time constant, refused where it would run; ``2**64``
    wrapped to 0). None where Python raises (the helper raises it at run time)."""
    c = computed(fn, args)
    return CallResult(c) if c is not None else None


def _pow_type(a, b):
    t = _promoted(a, b)
    return t if t.kind == "f" else T.float64


_LIKELY = [1 << 20, 1]


@base.define(operator.pow, Number, Number, restype=_pow_type)
def _pow(cg, args, argtypes, rt):
    a, b = (cg.cast(v, widen(t), rt) for v, t in zip(args, argtypes))
    e = argtypes[1]
    n = small_exponent(e.value) if isinstance(e, Const) else None
    if n is None:
        r, ok, always = exact_pow(cg, rt, [a, b]), None, True
    else:  # multiplications (powers.py)
        r, ok, always = small_power(cg, a, n)
    if always:
        if cg.mod.math_errors:  # CPython's float_pow: r finite on the hot path, the rest cold
            cg.check_cases(ok if ok is not None else finite(cg, r),
                           lambda: _pow_cases(cg, rt, r, a, b, n is not None), math=True)
        return r
    # the products hold where ok does; elsewhere libm's pow as CPython calls it, on a cold path
    B, hot = cg.b, cg.b.block
    cold, done = cg.fn.append_basic_block("pow.cold"), cg.fn.append_basic_block("pow.done")
    B.cbranch(ok, done, cold).set_weights(_LIKELY)
    B.position_at_end(cold)
    slow = exact_pow(cg, rt, [a, b])
    if cg.mod.math_errors:
        cg.check_cases(finite(cg, slow), lambda: _pow_cases(cg, rt, slow, a, b, True), math=True)
    end = B.block
    B.branch(done)
    B.position_at_end(done)
    value = B.phi(cg.ll(rt))
    value.add_incoming(r, hot)
    value.add_incoming(slow, end)
    return value


def _pow_cases(cg, rt, r, a, b, integral=False):
    """The cold path of ``a ** b``; ``integral``: ``b`` is a small integral constant (a finite base
    then gives no NaN: zero or an overflow)."""
    B = cg.b
    is_nan = B.fcmp_unordered("uno", r, r)
    nan_in = B.or_(B.fcmp_unordered("uno", a, a), B.fcmp_unordered("uno", b, b))
    fails = B.or_(B.and_(is_nan, B.not_(nan_in)), B.and_(B.not_(is_nan), B.and_(finite(cg, a), finite(cg, b))))
    fails = B.and_(B.not_(finite(cg, r)), fails)
    zero = B.fcmp_ordered("==", a, ir.Constant(r.type, 0.0))
    cases = [(B.and_(B.not_(is_nan), zero), "ZeroDivisionError", "0.0 cannot be raised to a negative power"),
             (B.not_(is_nan), "OverflowError", "(34, 'Numerical result out of range')")]
    if integral:
        return fails, cases
    return fails, [
        *cases,
        # a negative number to a fractional power: CPython's result is complex, or its OverflowError
        (B.not_(finite(cg, exact_pow(cg, rt, [cg.call_intrinsic("llvm.fabs", rt, [a]), b]))), "OverflowError",
         "complex exponentiation"),
        (None, "ValueError", "a negative number raised to a fractional power is complex; "
                             "compiled code has no complex numbers")]


_CMP = {operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=",
        operator.eq: "==", operator.ne: "!="}


def _compare(sym):
    def lower(cg, args, argtypes, rt):
        t = _promoted(*argtypes)
        kinds = [widen(at).kind for at in argtypes]
        if t == T.float64 and "f" in kinds and "i" in kinds:  # int64 with float: exactly
            k = kinds.index("i")
            return compare_int_float(cg, sym if k == 0 else _MIRROR[sym], args[k], argtypes[k],
                                     cg.cast(args[1 - k], widen(argtypes[1 - k]), t), argtypes[1 - k])
        if t.kind == "f" and all(k in "ibu" for k in kinds):  # uint64 with a signed int: exactly
            return _compare_mixed_64(cg, sym, args, argtypes)
        a, b = (cg.cast(v, widen(at), t) for v, at in zip(args, argtypes))
        if t.kind == "f":
            return fcmp(cg, sym, a, b)
        return (cg.b.icmp_unsigned if t.kind == "u" else cg.b.icmp_signed)(sym, a, b)
    return lower


def _compare_mixed_64(cg, sym, args, argtypes):
    """``a <sym> b`` of a uint64 and a signed integer (NumPy 2 compares them exactly): a
    negative signed value is below every unsigned one, else both compare as unsigned."""
    k = 0 if widen(argtypes[0]).kind == "i" else 1
    s = cg.cast(args[k], widen(argtypes[k]), T.int64)
    u = cg.cast(args[1 - k], widen(argtypes[1 - k]), T.uint64)
    a, b = (s, u) if k == 0 else (u, s)
    negative = cg.b.icmp_signed("<", s, ir.Constant(s.type, 0))
    below = sym in ("<", "<=", "!=") if k == 0 else sym in (">", ">=", "!=")  # the result when s < 0
    return cg.b.select(negative, ir.Constant(ir.IntType(1), int(below)), cg.b.icmp_unsigned(sym, a, b))


for _fn, _sym in _CMP.items():
    base.define(_fn, Number, Number, restype=T.boolean)(_compare(_sym))


@base.define(operator.is_, Any_, Any_, restype=lambda a, b: Const(widen(a) == widen(b) == T.none,
                                                                    T.boolean), pure=False)
@base.define(operator.is_not, Any_, Any_,
             restype=lambda a, b: Const(not widen(a) == widen(b) == T.none, T.boolean), pure=False)
def _is(cg, args, argtypes, rt):
    return None


@base.define(operator.neg, Number, restype=lambda a: _promoted(a))
def _neg(cg, args, argtypes, rt):
    v = cg.cast(args[0], widen(argtypes[0]), rt)
    return cg.b.fneg(v) if rt.kind == "f" else cg.b.neg(v)


@base.define(operator.pos, Number, restype=lambda a: _promoted(a))
def _pos(cg, args, argtypes, rt):
    return cg.cast(args[0], widen(argtypes[0]), rt)


@base.define(operator.invert, IntLike, restype=lambda a: _promoted(a))
def _invert(cg, args, argtypes, rt):
    return cg.b.not_(cg.cast(args[0], widen(argtypes[0]), rt))


@base.define(bool, Number, restype=T.boolean)
def _bool(cg, args, argtypes, rt):
    return cg.truth(args[0], widen(argtypes[0]))


@base.define(operator.not_, Number, restype=T.boolean)
def _not(cg, args, argtypes, rt):
    return cg.b.not_(cg.truth(args[0], widen(argtypes[0])))


@base.define(float, Number, restype=T.float64)
@base.define(int, Number, restype=T.int64)
def convert(cg, args, argtypes, rt):
    if rt == T.int64 and widen(argtypes[0]) == T.uint64:  # Python's int holds it; an int64 may not
        cg.check(cg.b.icmp_signed(">=", args[0], ir.Constant(args[0].type, 0)), "OverflowError",
                 "int() of a uint64 of 2**63 or more: compiled code's ints are int64")
    return cg.cast(args[0], widen(argtypes[0]), rt)


for _t in (T.int32, T.int64, T.float32, T.float64):
    base.define(_t, Number, restype=_t)(convert)


@base.define(builtins.abs, Number, restype=lambda a: _promoted(a))
def _abs(cg, args, argtypes, rt):
    v = cg.cast(args[0], widen(argtypes[0]), rt)
    if rt.kind == "f":
        return cg.call_intrinsic("llvm.fabs", rt, [v])
    if rt.kind == "u":
        return v
    return cg.b.select(cg.b.icmp_signed("<", v, ir.Constant(v.type, 0)), cg.b.neg(v), v)


def _minmax_type(*ts):
    """``min``/``max`` return one of their arguments: a bool when every argument is one."""
    return T.boolean if all(widen(t) == T.boolean for t in ts) else _promoted(*ts)


def _minmax(sym):
    def lower(cg, args, argtypes, rt):
        vals = [cg.cast(v, widen(t), rt) for v, t in zip(args, argtypes)]
        acc = vals[0]
        for v in vals[1:]:  # Python keeps the first of equal items; bools compare unsigned (True > False)
            better = (cg.b.fcmp_ordered(sym, v, acc) if rt.kind == "f"
                      else cg.b.icmp_unsigned(sym, v, acc) if rt.kind in "ub" else cg.b.icmp_signed(sym, v, acc))
            acc = cg.b.select(better, v, acc)
        return acc
    return lower


# two or more numbers (``varargs`` repeats the last pattern zero or more times); ``min(n)`` of
# one number is CPython's TypeError ("'int' object is not iterable"), here at compile time
base.define(builtins.min, Number, Number, Number, varargs=True, restype=_minmax_type)(_minmax("<"))
base.define(builtins.max, Number, Number, Number, varargs=True, restype=_minmax_type)(_minmax(">"))


@base.define(K.check, Bool, Constant, Constant, restype=T.none, pure=False)
def _check(cg, args, argtypes, rt):
    cg.check(args[0], argtypes[1].value, argtypes[2].value)


@base.define(K.check_bound, Bool, Constant, Constant, restype=T.none, pure=False)
def _check_bound(cg, args, argtypes, rt):
    cg.check_required(args[0], argtypes[1].value, argtypes[2].value)


@base.define(K.read_global, Any_, restype=T.none)
def _read_global(cg, args, argtypes, rt):
    """A global read the frontend marked (frontend/expressions.py): the name was defined by the compile."""


@base.define(K.check_math, Bool, Constant, Constant, restype=T.none, pure=False)
def _check_math(cg, args, argtypes, rt):
    cg.check_math(args[0], argtypes[1].value, argtypes[2].value)


def _range_lower(index_of):
    def lower(cg, args, argtypes, rt):
        i = index_of(len(args))
        if i is None:
            return ir.Constant(cg.ll(T.int64), 0 if index_of is _START else 1)
        value = cg.cast(args[i], widen(argtypes[i]), T.int64)
        if i == 2:  # a step: range(0, n, 0) is CPython's ValueError (the loop ran no iteration)
            cg.check(cg.b.icmp_signed("!=", value, ir.Constant(value.type, 0)), "ValueError",
                     "range() arg 3 must not be zero")
        return value
    return lower


def _START(n):
    return 0 if n > 1 else None


for _fn, _idx in ((K.range_start, _START), (K.range_stop, lambda n: 1 if n > 1 else 0),
                  (K.range_step, lambda n: 2 if n > 2 else None)):
    base.define(_fn, IntLike, varargs=True, restype=T.int64)(_range_lower(_idx))


@base.define(K.range_cond, Int, Int, Int, restype=T.boolean)
def _range_cond(cg, args, argtypes, rt):
    i, stop, step = args
    up = cg.b.icmp_signed(">", step, ir.Constant(step.type, 0))
    return cg.b.select(up, cg.b.icmp_signed("<", i, stop), cg.b.icmp_signed(">", i, stop))


__all__ = ["base", "Float", "Int"]
