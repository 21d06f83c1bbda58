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
globals. Conventions, for ``f(x1, ..., xn)`` of float scalars and float arrays returning a
float (or nothing, when it has array arguments):

* ``forward(x1, dx1, ..., xn, dxn) -> df``: every argument followed by its tangent (an array's
  tangent is its shadow array, into which the tangents of what ``f`` writes go);
* ``reverse(x1, ..., xn, dret) -> (dx1, ...)``: every array argument followed by its shadow (the
  rule adds the array's adjoint into it), ``dret`` only when ``f`` returns a float; returns the
  adjoints of the float scalar arguments, in order (``()`` when there are none).

Array arguments are passed to the engine as (data pointer, shape, strides), the data pointer
with its shadow (:mod:`enzyme_plugin.passes.lower`'s convention): the call goes to a flat
wrapper of ``f`` and the rules get flat wrappers that rebuild the arrays.
"""

from __future__ import annotations

import types as pytypes

import attrs
from llvmlite import ir

from gpucompiler import types as T
from gpucompiler.codegen import PTR, ll
from gpucompiler.errors import SourceError, TypeInferenceError
from gpucompiler.interpreter import BOTTOM, CallResult, widen
from gpucompiler.kernel import Kernel

from ..api import caller_location
from . import nested_rules


class CustomRuleError(SourceError, TypeError):
    """``custom_rule`` given something it cannot register (a kernel, a non-function); located at the
    user's call."""


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
        raise CustomRuleError("custom_rule needs forward=, reverse= or both", caller_location(), "custom_rule")
    for name, r in (("forward", forward), ("reverse", reverse)):
        if r is not None and not isinstance(r, pytypes.FunctionType):
            raise CustomRuleError(f"custom_rule: {name} must be a Python function, got {type(r).__name__}",
                                  caller_location(), "custom_rule")

    def register(f):
        if isinstance(f, Kernel):
            name = f.py_func.__qualname__
            raise CustomRuleError(f"custom_rule: {name} is a @kernel; custom rules are for functions called in "
                                  "differentiated code", caller_location(), "custom_rule",
                                  f"a kernel's gradient in launch tapes is registered with "
                                  f"enzyme_plugin.register_gradient({name}, {name}_grad)")
        if not isinstance(f, pytypes.FunctionType):
            raise CustomRuleError(f"custom_rule: expected a Python function, got {type(f).__name__}",
                                  caller_location(), "custom_rule")
        RULES[f] = Rule(forward, reverse)
        return f

    return register if fn is None else register(fn)


def _is_float(t) -> bool:
    return isinstance(t, T.Scalar) and t.kind == "f"


def _check_float(fn, argtypes):
    for t in argtypes:
        w = widen(t)
        if not (_is_float(w) or (isinstance(w, T.ArrayType) and w.dtype.kind == "f")):
            raise TypeInferenceError(f"custom rule of {fn.__qualname__}: arguments must be float scalars or float "
                                     f"arrays, got {w!r}", tuple(map(widen, argtypes)),
                                     hint="custom rules cover functions of float scalars and float arrays; pass "
                                          "integers through a closure-free helper without a rule")


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
    if rule is None or any(fr.pyfunc in (rule.forward, rule.reverse) for fr in interp.stack):
        return None  # no rule, or a call of f inside its own rules (for the primal): compiled as usual
    argtypes = [widen(a) for a in args]
    _check_float(fn, argtypes)
    frame = interp.infer(fn, list(argtypes))
    ret = frame.provisional if frame in interp.stack else frame.rettype
    if ret is BOTTOM:
        return CallResult(BOTTOM)
    ret = widen(ret)
    arrays = [isinstance(t, T.ArrayType) for t in argtypes]
    if not (_is_float(ret) or (any(arrays) and ret == T.none)):
        raise TypeInferenceError(f"custom rule of {fn.__qualname__}: the function must return a float"
                                 f"{' (or nothing)' if any(arrays) else ''}, got {ret!r}", (ret,))
    fwd = rev = None
    names = fn.__code__.co_varnames[:fn.__code__.co_argcount]
    if rule.forward is not None:
        _check_rule_arity(rule.forward, [x for n in names for x in (n, f"d{n}")])
        fwd = interp.infer(rule.forward, [t for a in argtypes for t in (a, a)])
        _expect(rule.forward, widen(fwd.rettype), ret)
    if rule.reverse is not None:
        _check_rule_arity(rule.reverse, [x for n, arr in zip(names, arrays) for x in ((n, f"d{n}") if arr else (n,))]
                          + (["dret"] if _is_float(ret) else []))
        rev_args = [t for a, arr in zip(argtypes, arrays) for t in ((a, a) if arr else (a,))]
        rev = interp.infer(rule.reverse, rev_args + ([ret] if _is_float(ret) else []))
        _expect(rule.reverse, widen(rev.rettype), T.TupleType(tuple(a for a, arr in zip(argtypes, arrays)
                                                                    if not arr)))

    def lower(cg, values, ats, rt):
        f_ll = cg.mod.function_for(frame, plain=True)  # signatures fixed by Enzyme's convention
        vals = [cg.cast(v, widen(a), t) for v, a, t in zip(values, ats, argtypes)]
        if any(arrays):
            return _lower_flat(cg, f_ll, argtypes, ret, vals, fwd, rev)
        if fwd is not None:
            _register_global(cg, "derivative", f_ll, [f_ll, cg.mod.function_for(fwd, plain=True)])
        if rev is not None:
            _register_global(cg, "gradient", f_ll, [f_ll, _augment(cg, f_ll), cg.mod.function_for(rev, plain=True)])
        return cg.b.call(f_ll, vals)

    return CallResult(ret, lower)


_I64 = ir.IntType(64)


def _flat_types(t, shadow: bool) -> list:
    """The parameters of argument type ``t`` flattened: an array's data pointer (and its shadow's), then
    its shape and strides; a scalar itself (and its tangent)."""
    if isinstance(t, T.ArrayType):
        return [PTR] * (2 if shadow else 1) + [_I64] * (2 * t.ndim)
    return [ll(t)] * (2 if shadow else 1)


def _array(b, t, data, dims):
    """The array struct of type ``t`` from its data pointer and ``shape + strides`` (a managed type's
    buffer null: the rule borrows the memory, its references are not counted)."""
    agg = b.insert_value(ir.Constant(ll(t), ir.Undefined), data, 0)
    for k, d in enumerate(dims):
        agg = b.insert_value(agg, d, [1 + k // t.ndim, k % t.ndim])
    if t.managed:
        agg = b.insert_value(agg, ir.Constant(PTR, None), 3)
    return agg


def _unflatten(b, argtypes, params, shadows, shadowed_scalars: bool) -> list:
    """The arguments rebuilt from flat ``params``: each array (and, with ``shadows``, its shadow array
    sharing its shape), each scalar (and, with ``shadowed_scalars``, its tangent)."""
    it = iter(params)
    out = []
    for t in argtypes:
        if isinstance(t, T.ArrayType):
            data = next(it)
            sdata = next(it) if shadows else None
            dims = [next(it) for _ in range(2 * t.ndim)]
            out.append(_array(b, t, data, dims))
            if sdata is not None:
                out.append(_array(b, t, sdata, dims))
        else:
            out.append(next(it))
            if shadowed_scalars:
                out.append(next(it))
    return out


def _flat_function(cg, name, params, ret, target, argtypes, shadows, shadowed_scalars, extra=0):
    """``name(params...)`` calling ``target`` on the arguments rebuilt from them (+ ``extra`` trailing
    parameters passed as they are); ``target`` None: an empty body."""
    mod = cg.mod.module
    fn = mod.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(mod, ir.FunctionType(ret, params), name=name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    if target is None:
        b.ret_void()
        return fn
    args = list(fn.args)
    vals = _unflatten(b, argtypes, args[:len(args) - extra], shadows, shadowed_scalars) + args[len(args) - extra:]
    out = b.call(target, vals)
    b.ret_void() if isinstance(ret, ir.VoidType) else b.ret(out)
    return fn


def _lower_flat(cg, f_ll, argtypes, ret, vals, fwd, rev):
    """A call of a custom-rule function with array arguments: through ``<f>.flat`` (arrays flattened),
    whose rules are flat wrappers of the user's rules (see the module docstring)."""
    rty = ll(ret) if _is_float(ret) else ir.VoidType()
    flat = _flat_function(cg, f"{f_ll.name}.flat", [p for t in argtypes for p in _flat_types(t, False)], rty,
                          f_ll, argtypes, False, False)
    if fwd is not None:
        params = [p for t in argtypes for p in _flat_types(t, True)]
        user = cg.mod.function_for(fwd, plain=True)
        _register_global(cg, "derivative", flat, [flat, _flat_function(cg, f"{flat.name}.forward", params, rty, user,
                                                                       argtypes, True, True)])
    if rev is not None:
        params = [p for t in argtypes for p in _flat_types(t, isinstance(t, T.ArrayType))]
        user = cg.mod.function_for(rev, plain=True)
        dret = [rty] if _is_float(ret) else []
        reverse = _flat_function(cg, f"{flat.name}.reverse", params + dret, user.function_type.return_type, user,
                                 argtypes, True, False, extra=len(dret))
        augment = _flat_function(cg, f"{flat.name}.augment", params, ir.VoidType(), None, argtypes, True, False)
        _register_global(cg, "gradient", flat, [flat, augment, reverse])
    args = []
    for v, t in zip(vals, argtypes):
        if isinstance(t, T.ArrayType):
            args.append(cg.b.extract_value(v, 0))
            args += [cg.b.extract_value(v, [f, k]) for f in (1, 2) for k in range(t.ndim)]
        else:
            args.append(v)
    return cg.b.call(flat, args)


def _check_rule_arity(rule_fn, params: list[str]) -> None:
    """The rule takes the parameters its convention gives it at this call (``params``, named as ``f``'s)."""
    code = rule_fn.__code__
    if code.co_argcount == len(params) or (code.co_flags & 0x04 and code.co_argcount <= len(params)):
        return
    raise TypeInferenceError(f"custom rule {rule_fn.__qualname__} takes {code.co_argcount} arguments; at this call "
                             f"it is given {len(params)}: {rule_fn.__name__}({', '.join(params)})",
                             hint="forward(x1, dx1, ..., xn, dxn); reverse(x1, ..., dret) with every array "
                                  "argument followed by its shadow, dret when f returns a float")


def _expect(rule_fn, got, want) -> None:
    if got != want:
        raise TypeInferenceError(f"custom rule {rule_fn.__qualname__} returns {got!r}; expected {want!r}",
                                 (got,), hint="forward returns the tangent; reverse a tuple with one adjoint "
                                              "per argument")


__all__ = ["CustomRuleError", "custom_rule", "Rule", "RULES"]
