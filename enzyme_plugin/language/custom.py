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

from ..locations import caller_location
from .sets import nested_rules


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
    # not inlined: the rebuilt arrays stay whole, so no shape or stride of them is a dead parameter that
    # the optimiser turns into poison at the calls (the reverse rule's tape copies the operands by them)
    out = b.call(target, vals, attrs=("noinline",))
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
        reverse = _saved_reverse(cg, f"{flat.name}.reverse", params + dret, user, argtypes, len(dret))
        augment = _saving_augment(cg, f"{flat.name}.augment", params, argtypes)
        _register_global(cg, "gradient", flat, [flat, augment, reverse])
    args = []
    for v, t in zip(vals, argtypes):
        if isinstance(t, T.ArrayType):
            args.append(cg.b.extract_value(v, 0))
            args += [cg.b.extract_value(v, [f, k]) for f in (1, 2) for k in range(t.ndim)]
        else:
            args.append(v)
    return cg.b.call(flat, args)


# -- the reverse rule reads the array operands as they were at the call --------------------------------
# The reverse sweep runs after the rest of the function: an operand may have been written since, or (a
# temporary) freed. The augmented forward copies each array operand's bytes (the span its strides reach)
# into a block of its own and hands the table of blocks to the engine as the rule's tape; the reverse
# wrapper gives the user's rule arrays over those copies (the shadows are the arguments' own) and frees
# them after it.
def _libc(mod, name: str, ret, params) -> ir.Function:
    fn = mod.globals.get(name)
    return fn if fn is not None else ir.Function(mod, ir.FunctionType(ret, params), name=name)


def _array_params(argtypes, params):
    """``(argument type, data pointer, [shape..., strides...])`` of each array among flat ``params`` (with
    shadows: a shadow pointer after each data pointer)."""
    it, out = iter(params), []
    for t in argtypes:
        if isinstance(t, T.ArrayType):
            data = next(it)
            next(it)  # its shadow
            out.append((t, data, [next(it) for _ in range(2 * t.ndim)]))
        else:
            next(it)
    return out


def _span(b, t, dims):
    """``(low, bytes)``: the byte offset of the lowest element an array reaches from its data pointer
    (strides may be negative) and the bytes from there to the end of its highest element; 0 bytes when
    it has no element."""
    zero = ir.Constant(_I64, 0)
    low, high, empty = zero, ir.Constant(_I64, t.dtype.itemsize), ir.Constant(ir.IntType(1), 0)
    for k in range(t.ndim):
        n, stride = dims[k], dims[t.ndim + k]
        empty = b.or_(empty, b.icmp_signed("<=", n, zero))
        reach = b.mul(b.sub(n, ir.Constant(_I64, 1)), stride)
        neg = b.icmp_signed("<", reach, zero)
        low = b.add(low, b.select(neg, reach, zero))
        high = b.add(high, b.select(neg, zero, reach))
    return low, b.select(empty, zero, b.sub(high, low))


def _saving_augment(cg, name, params, argtypes):
    """The augmented forward of a reverse rule with array operands: copies of the operands, as its tape."""
    mod = cg.mod.module
    fn = mod.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(mod, ir.FunctionType(PTR, params), name=name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    arrays = _array_params(argtypes, list(fn.args))
    malloc = _libc(mod, "malloc", PTR, [_I64])
    memcpy = _libc(mod, "memcpy", PTR, [PTR, PTR, _I64])
    table = b.call(malloc, [ir.Constant(_I64, 8 * len(arrays))])
    for k, (t, data, dims) in enumerate(arrays):
        low, nbytes = _span(b, t, dims)
        block = b.call(malloc, [b.add(nbytes, ir.Constant(_I64, 1))])  # 1 byte more: never malloc(0)
        b.call(memcpy, [block, b.gep(data, [low], source_etype=ir.IntType(8)), nbytes])
        b.store(block, b.gep(table, [ir.Constant(_I64, k)], source_etype=PTR))
    b.ret(table)
    return fn


def _saved_reverse(cg, name, params, user, argtypes, extra):
    """The reverse of a rule with array operands: the user's rule on the operands the augmented forward
    copied (tape: the last parameter), then the copies freed."""
    mod = cg.mod.module
    fn = mod.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(mod, ir.FunctionType(user.function_type.return_type, [*params, PTR]), name=name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    args, table = list(fn.args[:-1]), fn.args[-1]
    flat: list[ir.Value] = list(args[:len(args) - extra])
    blocks: list[ir.Value] = []
    at = 0
    for t in argtypes:
        if isinstance(t, T.ArrayType):
            dims = flat[at + 2:at + 2 + 2 * t.ndim]
            low, _ = _span(b, t, dims)
            block = b.load(b.gep(table, [ir.Constant(_I64, len(blocks))], source_etype=PTR), typ=PTR)
            blocks.append(block)
            flat[at] = b.gep(block, [b.neg(low)], source_etype=ir.IntType(8))  # the copy, as the array saw it
            at += 2 + 2 * t.ndim
        else:
            at += 1
    out = b.call(user, _unflatten(b, argtypes, flat, True, False) + args[len(args) - extra:])
    free = _libc(mod, "free", ir.VoidType(), [PTR])
    for block in blocks:
        b.call(free, [block])
    b.call(free, [table])
    b.ret_void() if isinstance(fn.function_type.return_type, ir.VoidType) else b.ret(out)
    return fn


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
