"""Split mode in compiled code: the thunks of ``autodiff_thunk(ReverseSplit, f, ...)`` called inside
``@jit`` functions and kernels, with the Python API's signatures::

    FWD, REV = autodiff_thunk(ReverseSplit, f, Active, Duplicated)     # at module level

    def step(x, a, da):
        tape, y = FWD(Active(x), Duplicated(a, da))     # augmented forward: y == f(x, a)
        (dx,) = REV(Active(x), Duplicated(a, da), 1.0, tape)   # reverse, seeded with 1.0

The tape is an ``int64`` handle to the engine's tape (on the device heap in a kernel): the caller keeps
it where it wants between the two halves (a local, or an ``int64`` array element to carry it from one
kernel launch to the next) and hands it to ``REV``, which consumes and frees it. Each call lowers to the
two halves Python's split mode compiles (``Augment`` / ``SplitReverse`` of ``f``'s primal wrapper,
:func:`enzyme_plugin.splitting.primal_wrapper`): the wrapper's ``out`` and ``dout`` arrays, which carry the
primal result and the seed, and the holder of the tape pointer are ``alloca``s of the caller.
"""

from __future__ import annotations

from llvmlite import ir

from gpucompiler import types as T
from gpucompiler.errors import TypeInferenceError
from gpucompiler.interpreter import BOTTOM, CallResult, deferred_call, nested_interpreter, widen

from ..activities import ACTIVITIES, Activity
from ..modes import Mode, Reverse
from ..splitting import Thunk, primal_wrapper
from .autodiff import activities_of, check_arity
from .lowering import emit_autodiff
from .sets import MARKER, rules
from .types import ActivityType, EnzymeMeta, result_type

_F64 = ir.DoubleType()
_I64 = ir.IntType(64)
_OUT = T.ArrayType(T.float64, 1, "C")
"""The type of the primal wrapper's ``out`` array (and of its shadow ``dout``)."""


def _entry_alloca(cg, ty):
    here = cg.b.block
    cg.b.position_at_start(cg.fn.entry_basic_block)
    slot = cg.b.alloca(ty)
    cg.b.position_at_end(here)
    return slot


def _array(cg, t, slot, n: int, itemsize: int):
    """A 1-d C array struct of type ``t`` over ``n`` elements at ``slot``."""
    agg = ir.Constant(cg.ll(t), ir.Undefined)
    agg = cg.b.insert_value(agg, slot, 0)
    agg = cg.b.insert_value(agg, ir.Constant(_I64, n), [1, 0])
    return cg.b.insert_value(agg, ir.Constant(_I64, itemsize), [2, 0])


def _check_kinds(thunk, acts, wrapped) -> None:
    for k, (kind, act, is_wrapped) in enumerate(zip(thunk.kinds, acts, wrapped)):
        want = ACTIVITIES[kind].kind
        if act.kind is not want or (not is_wrapped and kind != "Const"):
            raise TypeInferenceError(f"{type(thunk).__name__} of {thunk.f.__qualname__}: argument {k} must be "
                                     f"{kind}(...), got {act!r}", hint="call the thunk with the activities it "
                                                                        "was made for")


@rules.handler
def _thunk_call(interp, fn, args):
    if not isinstance(fn, Thunk):
        return None
    forward = fn.forward
    f, n = fn.f, len(fn.kinds)
    if not forward:
        if len(args) != n + 2:
            raise TypeInferenceError(f"ReverseThunk of {f.__qualname__}: expected {n} argument(s), the seed and "
                                     f"the tape, got {len(args)} values", hint="rev(args..., seed, tape)")
        args, seed, tape = list(args[:n]), args[n], args[n + 1]
        if widen(tape) != T.int64:
            raise TypeInferenceError(f"ReverseThunk of {f.__qualname__}: the tape must be the int64 handle the "
                                     f"forward thunk returned, got {widen(tape)!r}")
    acts, wrapped = activities_of(Reverse, args)
    if len(acts) != n:
        raise TypeInferenceError(f"{type(fn).__name__} of {f.__qualname__}: expected {n} argument(s), got "
                                 f"{len(acts)}")
    _check_kinds(fn, acts, wrapped)
    check_arity(f, n)
    primal = tuple(a.items[0] for a in acts)
    wrapper = primal_wrapper(f, n)
    meta = EnzymeMeta("ReverseSplit")
    res = deferred_call(interp, meta, wrapper, (_OUT, *primal), marker=MARKER)
    if res.restype is BOTTOM:
        return CallResult(BOTTOM)
    assert res.deferred is not None, "a deferred call with a result records its job"
    job = res.deferred.job
    ret = widen(nested_interpreter(interp, tuple(meta.rules)).infer(f, list(primal)).rettype)
    if not (ret == T.none or (isinstance(ret, T.Scalar) and ret.kind == "f")):
        raise TypeInferenceError(f"split mode of {f.__qualname__}: it returns {ret!r}; split mode differentiates "
                                 "functions returning a float or nothing")
    out_act = ActivityType((_OUT, _OUT), Activity.DUP)
    derivs = result_type(Reverse, acts, T.none)
    if not forward and ret != T.none and not (isinstance(widen(seed), T.Scalar) and widen(seed).kind == "f"):
        raise TypeInferenceError(f"ReverseThunk of {f.__qualname__}: the seed must be a float, got "
                                 f"{widen(seed)!r}", hint="pass the adjoint of f's result (1.0 for the gradient)")
    restype = T.TupleType((T.int64, ret)) if forward else derivs

    def lower(cg, values, argtypes, rt):
        holder = _entry_alloca(cg, _I64)
        out, dout = _entry_alloca(cg, ir.ArrayType(_F64, 2)), _entry_alloca(cg, ir.ArrayType(_F64, 2))
        zero = ir.Constant(ir.ArrayType(_F64, 2), None)
        cg.b.store(zero, out)
        cg.b.store(zero, dout)
        mode = Mode.Augment if forward else Mode.SplitReverse
        if not forward:
            cg.b.store(values[n + 1], holder)
            if ret != T.none:
                cg.b.store(cg.cast(values[n], widen(argtypes[n]), T.float64),
                           cg.b.gep(dout, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 0)]))
        pair = ir.Constant(cg.ll(out_act), ir.Undefined)
        pair = cg.b.insert_value(pair, _array(cg, _OUT, out, 2, 8), 0)
        pair = cg.b.insert_value(pair, _array(cg, _OUT, dout, 2, 8), 1)
        tape = _array(cg, T.ArrayType(T.int64, 1, "C"), holder, 1, 8)
        got = emit_autodiff(cg, job, mode, [out_act, *acts], [True, *wrapped], [pair, *values[:n]], derivs,
                            tape=tape, fn=wrapper)
        if not forward:
            return got
        result = ir.Constant(cg.ll(restype), ir.Undefined)
        result = cg.b.insert_value(result, cg.b.load(holder), 0)
        if ret != T.none:
            y = cg.b.load(cg.b.gep(out, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 0)]))
            result = cg.b.insert_value(result, y, 1)
        return result

    return CallResult(restype, lower)

