"""Codegen of ``autodiff``: the lookup of the nested job and the ``gpuc.enzyme.autodiff`` marker call."""

from __future__ import annotations

from llvmlite import ir

from gpucompiler import types as T
from gpucompiler.codegen import PTR, TypedCallee, job_global, ll
from gpucompiler.interpreter import LOOKUP, borrowed

from ..activities import Activity
from .sets import MARKER
from .types import width

_I32 = ir.IntType(32)


def check_shadows(cg, fn, acts, wrapped, values) -> None:
    """A ``Duplicated`` array's shadow must have its value's shape (else the derivative code reads and
    writes past the shadow): a cold-path ``ValueError`` naming the parameter, checked at run time.
    Kernels check with their bounds checks (on in the grid emulation, off on the GPU by default)."""
    if not (cg.mod.python_errors or cg.mod.boundscheck):
        return
    names = fn.__code__.co_varnames
    for k, (act, is_wrapped, v) in enumerate(zip(acts, wrapped, values)):
        t = act.items[0]
        if not act.kind.duplicated or not is_wrapped or not isinstance(t, T.ArrayType):
            continue
        value = cg.b.extract_value(v, 0)
        for lane in range(1, len(act.items)):
            _check_shape(cg, fn, names[k], t, value, cg.b.extract_value(v, lane))


def _check_shape(cg, fn, name, t, value, shadow) -> None:
    for axis in range(t.ndim):
        n, m = cg.b.extract_value(value, [1, axis]), cg.b.extract_value(shadow, [1, axis])
        cg.check_value(cg.b.icmp_signed("==", n, m),
                       f"autodiff: the shadow of {fn.__qualname__}'s argument {name!r} must have the "
                       f"shape of its value: axis {axis} has %lld elements in the value, %lld in the shadow",
                       n, m)
    if t.layout == "C":
        return
    for axis in range(t.ndim):  # the engine reads the shadow with the value's strides
        n = cg.b.extract_value(value, [1, axis])
        s, ds = cg.b.extract_value(value, [2, axis]), cg.b.extract_value(shadow, [2, axis])
        fits = cg.b.or_(cg.b.icmp_signed("==", s, ds), cg.b.icmp_signed("<=", n, ir.Constant(n.type, 1)))
        cg.check_value(fits, f"autodiff: the shadow of {fn.__qualname__}'s argument {name!r} must have the "
                             f"strides of its value: axis {axis} steps %lld bytes in the value, %lld in the shadow", s, ds)


def emit_autodiff(cg, job, mode, acts, wrapped, values, restype, tape=None, fn=None, runtime_activity=False,
                  primal=False):
    """``call <restype> @gpuc.enzyme.autodiff(ptr f, i32 mode, (i32 kind, values...)...)``.

    When the nested job ``f`` takes an error slot (its calling convention,
    :attr:`gpucompiler.interpreter.deferred.DeferredJob.takes_error_slot`) the slot comes first:
    it is passed as a ``Const`` pointer (the engine sees a plain argument; its
    stores and the branches on it are inactive), and after the call the
    parent returns at once if ``f`` failed, before any result is used.
    Split mode passes the tape holder array first, as ``(i32 tape, holder)``.
    """
    if fn is not None:
        check_shadows(cg, fn, acts, wrapped, values)
    b = cg.b
    lookup = cg.mod.declare(LOOKUP, PTR, [PTR])
    args = [b.call(lookup, [job_global(cg.mod, job.id)], name="deferred"), ir.Constant(_I32, mode.code)]
    if tape is not None:
        args += [ir.Constant(_I32, Activity.TAPE.value), tape]
    if runtime_activity:  # Enzyme's runtime activity for this call
        args += [ir.Constant(_I32, Activity.RUNTIME_ACTIVITY.value), ir.Constant(ir.IntType(64), 1)]
    if primal:  # the primal result too (enzyme_primal_return)
        args += [ir.Constant(_I32, Activity.PRIMAL_RETURN.value), ir.Constant(ir.IntType(64), 1)]
    n = width(acts)
    if n > 1:  # a batch: every duplicated argument carries n shadows
        args += [ir.Constant(_I32, Activity.WIDTH.value), ir.Constant(ir.IntType(64), n)]
    slot = cg.call_slot() if job.takes_error_slot else None  # the nested job's calling convention
    if slot is not None:
        args += [ir.Constant(_I32, Activity.CONST.value), slot]
    for act, is_wrapped, v in zip(acts, wrapped, values):
        args.append(ir.Constant(_I32, act.kind.value))
        items = [b.extract_value(v, k) for k in range(len(act.items))] if is_wrapped else [v]
        # arrays the function made are lent to the job as plain arrays (the job's parameter type)
        args += [cg.cast(x, t, borrowed(t)) for x, t in zip(items, act.items)]
    decl = cg.mod.declare(MARKER, ir.VoidType(), [PTR])
    if not decl.function_type.var_arg:
        decl.function_type.var_arg = True
    out = b.call(TypedCallee(decl, ir.FunctionType(ll(restype), [PTR], var_arg=True)), args)
    if slot is not None:
        cg.stop_if_failed(slot)
    return out
