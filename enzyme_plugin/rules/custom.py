"""Custom derivative rules: give a Python function its own forward and/or reverse derivative.

Example::

    def clip(x):                       # AD would give 0 outside [-1, 1]; we want a straight-through gradient
        return min(max(x, -1.0), 1.0)

    def clip_forward(x, dx):           # tangent of the result
        return dx

    def clip_reverse(x, dret):         # one adjoint per argument, as a tuple
        return (dret,)

    custom_rule(clip, forward=clip_forward, reverse=clip_reverse)

The rules apply only inside differentiated code (the nested jobs of
``autodiff``); everywhere else ``clip`` is compiled as usual. There the call
stays a call (the plugin marks ``clip`` noinline until AD is done, see
:mod:`enzyme_plugin.passes.noinline`) and the engine uses the rules through
Enzyme's ``__enzyme_register_gradient_*`` / ``__enzyme_register_derivative_*``
globals. Conventions, for ``f(x1, ..., xn)`` of float scalars returning a float:

* ``forward(x1, dx1, ..., xn, dxn) -> df``
* ``reverse(x1, ..., xn, dret) -> (dx1, ..., dxn)``
"""

from __future__ import annotations

import types as pytypes

import attrs
from llvmlite import ir

from gpucompiler import types as T
from gpucompiler.codegen import PTR
from gpucompiler.errors import TypeInferenceError
from gpucompiler.interpreter import BOTTOM, CallResult, widen

from . import nested_rules


@attrs.frozen
class Rule:
    """The rules of one function."""

    forward: object = None
    reverse: object = None


RULES: dict = {}
"""Function -> :class:`Rule`."""


def custom_rule(fn=None, *, forward=None, reverse=None):
    """Register ``forward`` and/or ``reverse`` as the derivative of ``fn``; also a decorator.

    ``custom_rule(f, forward=f_fwd, reverse=f_rev)`` or ``@custom_rule(forward=..., reverse=...)``
    above ``def f``. Returns ``fn``.
    """
    if forward is None and reverse is None:
        raise TypeError("custom_rule needs forward=, reverse= or both")
    for name, r in (("forward", forward), ("reverse", reverse)):
        if r is not None and not isinstance(r, pytypes.FunctionType):
            raise TypeError(f"custom_rule: {name} must be a Python function, got {r!r}")

    def register(f):
        if not isinstance(f, pytypes.FunctionType):
            raise TypeError(f"custom_rule: expected a Python function, got {f!r}")
        RULES[f] = Rule(forward, reverse)
        return f

    return register if fn is None else register(fn)


def _check_float(fn, argtypes):
    for t in argtypes:
        w = widen(t)
        if not (isinstance(w, T.Scalar) and w.kind == "f"):
            raise TypeInferenceError(f"custom rule of {fn.__qualname__}: arguments must be float scalars, got "
                                     f"{w!r}", tuple(map(widen, argtypes)),
                                     hint="custom rules cover functions of float scalars")


def _register_global(cg, kind: str, fn_ll, fns) -> None:
    name = f"__enzyme_register_{kind}_{fn_ll.name}"
    if name in cg.mod.module.globals:
        return
    arr = ir.ArrayType(PTR, len(fns))
    g = ir.GlobalVariable(cg.mod.module, arr, name=name)
    g.initializer = ir.Constant(arr, list(fns))  # pyright: ignore[reportAttributeAccessIssue]


def _augment(cg, fn_ll):
    """The augmented forward pass of a reverse rule: nothing to record (the rule gets the primals)."""
    name = f"{fn_ll.name}.enzyme_augment"
    g = cg.mod.module.globals.get(name)
    if g is None:
        g = ir.Function(cg.mod.module, ir.FunctionType(ir.VoidType(), list(fn_ll.function_type.args)), name=name)
        g.linkage = "internal"
        ir.IRBuilder(g.append_basic_block("entry")).ret_void()
    return g


@nested_rules.handler
def _custom(interp, fn, args):
    rule = RULES.get(fn) if isinstance(fn, pytypes.FunctionType) else None
    if rule is None:
        return None
    argtypes = [widen(a) for a in args]
    _check_float(fn, argtypes)
    frame = interp.infer(fn, list(argtypes))
    ret = frame.provisional if frame in interp.stack else frame.rettype
    if ret is BOTTOM:
        return CallResult(BOTTOM)
    ret = widen(ret)
    if not (isinstance(ret, T.Scalar) and ret.kind == "f"):
        raise TypeInferenceError(f"custom rule of {fn.__qualname__}: the function must return a float, got "
                                 f"{ret!r}", (ret,))
    fwd = rev = None
    if rule.forward is not None:
        fwd = interp.infer(rule.forward, [t for a in argtypes for t in (a, a)])
        _expect(rule.forward, widen(fwd.rettype), ret)
    if rule.reverse is not None:
        rev = interp.infer(rule.reverse, [*argtypes, ret])
        _expect(rule.reverse, widen(rev.rettype), T.TupleType(tuple(argtypes)))

    def lower(cg, values, ats, rt):
        f_ll = cg.mod.function_for(frame, plain=True)  # signatures fixed by Enzyme's convention
        if fwd is not None:
            _register_global(cg, "derivative", f_ll, [f_ll, cg.mod.function_for(fwd, plain=True)])
        if rev is not None:
            _register_global(cg, "gradient", f_ll, [f_ll, _augment(cg, f_ll), cg.mod.function_for(rev, plain=True)])
        vals = [cg.cast(v, widen(a), t) for v, a, t in zip(values, ats, argtypes)]
        return cg.b.call(f_ll, vals)

    return CallResult(ret, lower)


def _expect(rule_fn, got, want) -> None:
    if got != want:
        raise TypeInferenceError(f"custom rule {rule_fn.__qualname__} returns {got!r}; expected {want!r}",
                                 (got,), hint="forward returns the tangent; reverse a tuple with one adjoint "
                                              "per argument")


__all__ = ["custom_rule", "Rule", "RULES"]
