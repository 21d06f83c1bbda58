"""What other plugins may ask of the Enzyme plugin in a module they rewrite: a public contract.

* :func:`mark_inactive` ``(model, fn)``: calls of ``fn`` carry no derivative (Enzyme's inactive
  functions: a logger, a random draw, a value the user declares constant). ``fn`` keeps its body,
  stays out of line until AD has seen its calls, and gets its name back after AD.
* :func:`register_rule` ``(model, fn, forward=..., reverse=...)``: calls of ``fn`` are differentiated
  by the plugin's own IR functions instead of ``fn``'s body (Enzyme's custom derivatives, the IR
  form of :func:`enzyme_plugin.custom_rule`); a rule whose signature contradicts ``fn``'s is a
  :class:`RuleSignatureError` when it is registered.

Call them from a callback that runs before the ``ad`` stage, best at ``pre_ad`` (before the optimiser
could inline ``fn``, and before Enzyme keeps the module for its fallback), gated on :data:`AD_MARKERS`
so that modules without AD are left alone; the names they use are the plugin's business, not the
caller's. Renaming a function with its uses is ``Module.rename_function`` of the IR model.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpucompiler.llvm import Builder, ConstantAggregate, Function, GlobalVariable, types as T

from .ad.emit import carries_derivative
from .ad.errors import ADError
from .ad.gpu import INACTIVE_PREFIX
from .passes.noinline import RECORD, REGISTER
from .plugin import AD_MARKERS


class RuleSignatureError(ADError, TypeError):
    """A rule given to :func:`register_rule` does not fit the function's signature (or is not a
    function of the module); inside a plugin's callback, a ``PluginError`` naming the plugin."""


def mark_inactive(model, fn: Function) -> Function:
    """Calls of ``fn`` are inactive for AD in ``model`` (a ``gpucompiler.llvm`` module); returns ``fn``."""
    if fn.name.startswith(INACTIVE_PREFIX):
        return fn
    _keep_out_of_line(fn)
    return model.rename_function(fn, INACTIVE_PREFIX + fn.name)


def register_rule(model, fn: Function, *, forward: Function | None = None, reverse: Function | None = None,
                  shadowed: Iterable[int] = ()) -> Function:
    """Differentiate calls of ``fn`` in ``model`` with ``forward`` and/or ``reverse``; returns ``fn``.

    For ``fn(p1, ..., pn) -> r``, a parameter *has a shadow* when it is a float (scalar, vector or
    aggregate of floats) or a pointer whose index is in ``shadowed`` (the pointers to float data
    that are active at the calls; other pointers, such as the error slot of ``@jit`` code or a
    pointer to integers, are passed alone):

    * ``forward(p1, [dp1], ..., pn, [dpn]) -> dr``: each parameter followed by its tangent (a
      pointer by its shadow) when it has one; returns the tangent of ``r`` (``r``'s type), or
      ``{r, dr}``, or nothing when ``r`` is void;
    * ``reverse(p1, [sp1], ..., pn, [spn], [dret]) -> adjoints``: each shadowed pointer followed by
      its shadow (the rule adds the pointee's adjoint into it), ``dret`` when ``r`` is a float;
      returns the adjoints of the float parameters in order: nothing when there are none, the
      value when there is one, else a struct of them.

    The rules are functions of ``model`` (built with ``gpucompiler.llvm.Builder``; make them
    ``internal`` and they are deleted after AD). Every float argument of a call of ``fn`` must be
    active there (a constant one has no shadow to pass: the engine's ADError). ``fn`` stays out of
    line until AD has seen its calls; after AD the registration is gone. A rule that does not fit
    raises :class:`RuleSignatureError` naming both functions and the signature it must have.
    """
    if forward is None and reverse is None:
        raise RuleSignatureError(f"register_rule(@{fn.name}) needs forward=, reverse= or both")
    for rule in (fn, forward, reverse):
        if rule is not None and (not isinstance(rule, Function) or model.functions.get(rule.name) is not rule):
            raise RuleSignatureError(f"register_rule: {_name(rule)} is not a function of this module")
    if fn.is_declaration:
        raise RuleSignatureError(f"register_rule: @{fn.name} is a declaration; the engine differentiates "
                                 "calls of defined functions only (give it a body that calls the external one)")
    params = fn.function_type.params
    pointers = set(shadowed)
    wrong = sorted(i for i in pointers if not (isinstance(i, int) and 0 <= i < len(params) and params[i].kind == "ptr"))
    if wrong:
        raise RuleSignatureError(f"register_rule(@{fn.name}): shadowed={sorted(pointers)} must be indices of "
                                 f"pointer parameters of {fn.function_type}; {wrong} are not")
    duplicated = [carries_derivative(p) or i in pointers for i, p in enumerate(params)]
    ret = fn.return_type
    if forward is not None:
        want = [t for p, d in zip(params, duplicated) for t in ((p, p) if d else (p,))]
        outs = (T.void,) if ret is T.void else (ret, T.struct([ret, ret]))
        _check(fn, forward, "forward", want, outs)
        _register(model, f"{REGISTER}derivative_{fn.name}", [fn, forward])
    if reverse is not None:
        primal = [t for i, p in enumerate(params) for t in ((p, p) if i in pointers else (p,))]
        floats = [p for i, p in enumerate(params) if i not in pointers and carries_derivative(p)]
        out = T.void if not floats else floats[0] if len(floats) == 1 else T.struct(floats)
        _check(fn, reverse, "reverse", primal + ([ret] if carries_derivative(ret) else []), (out,))
        name = f"{REGISTER}gradient_{fn.name}"
        _unregister(model, name)
        _register(model, name, [fn, _augment(model, fn, primal), reverse])
    _keep_out_of_line(fn)
    return fn


def _shadowed(t) -> bool:
    return t.kind == "ptr" or carries_derivative(t)


def _name(value) -> str:
    return f"@{value.name}" if isinstance(value, Function) else repr(value)


def _check(fn: Function, rule: Function, kind: str, want: list, outs: tuple) -> None:
    got = list(rule.function_type.params)
    if got != want or rule.function_type.vararg:
        raise RuleSignatureError(
            f"the {kind} rule @{rule.name} of @{fn.name} ({fn.function_type}) takes ({', '.join(map(str, got))}); "
            f"it must take ({', '.join(map(str, want))})")
    if rule.return_type not in outs:
        raise RuleSignatureError(f"the {kind} rule @{rule.name} of @{fn.name} ({fn.function_type}) returns "
                                 f"{rule.return_type}; it must return {' or '.join(map(str, outs))}")


def _unregister(model, name: str) -> None:
    old = model.globals.get(name)
    if old is not None:
        model.remove_global(old)  # registered again: the last rule wins


def _register(model, name: str, fns: list[Function]) -> None:
    _unregister(model, name)
    ty = T.array(len(fns), T.ptr())
    model.add_global(GlobalVariable(name, ty, initializer=ConstantAggregate(ty, fns)))


def _augment(model, fn: Function, types: list) -> Function:
    """The augmented forward pass of a reverse rule, taking ``types``: it records nothing (the engine
    runs ``fn`` for the primal, and the rule gets the primal arguments)."""
    name = f"{fn.name}.gpuc.augment"
    found = model.functions.get(name)
    if found is not None:
        if found.function_type == T.function(T.void, types):
            return found
        model.remove_function(found)  # registered again with other shadows (its registration is gone)
    augment = model.add_function(Function(name, T.function(T.void, types), prefix="internal"))
    Builder(augment.append_block("entry")).ret()
    return augment


def _keep_out_of_line(fn: Function) -> None:
    """``fn`` noinline until AD has seen its calls (the Enzyme plugin's ``post_ad`` undoes it)."""
    if not fn.is_declaration and not fn.has_attribute("noinline"):
        fn.remove_attribute("alwaysinline")
        fn.add_attribute("noinline")
        fn.add_attribute(f'"{RECORD}"')


__all__ = ["AD_MARKERS", "RuleSignatureError", "mark_inactive", "register_rule"]
