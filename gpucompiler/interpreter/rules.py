"""Rule sets: method tables, per-target overlays, call handlers, inlining policy.

Every meaning the compiler gives to a call lives in a :class:`RuleSet`: the
base rules (operators, builtins, ``math``), a target's overlays (``math.sin``
-> its device library's sine; the kernel language on its intrinsics), which
the target object hands over (:meth:`Target.rule_overlays
<gpucompiler.core.Target.rule_overlays>`), and each plugin's rules. A job uses
the base rules, the overlays of its target and the rule sets of the plugins
its config enables, so a plugin's rules never leak into jobs that did not ask
for them.

Example: a plugin adding an intrinsic ``fma3(a, b, c)`` (what a lowering and a
handler receive is typed in :mod:`.lowering`)::

    rules = RuleSet("my_plugin")

    @rules.define(fma3, Float, Float, Float, restype=lambda a, b, c: widen(a))
    def _fma3(cg: CodeGen, args: Args, argtypes: ArgTypes, restype: T.Type) -> ir.Value:
        return cg.call_intrinsic("llvm.fma", restype, values(args))

    class MyPlugin(gpucompiler.plugin.Plugin):
        name, version, rules = "my_plugin", "1.0", rules

    gpucompiler.plugin.register(MyPlugin)  # enabled by CompilerConfig(plugins=("my_plugin",))
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, cast

import attrs

from .. import plugin as gp, types as T
from ..errors import ConfigError, GPUCompilerError, PluginError, RuleConflictError
from .lattice import AbstractValue, Const, widen
from .lowering import ArgTypes, CallResult, Handler, InlinePolicy, Interp, Lowering

if TYPE_CHECKING:
    from ..core import Rules, Target


Pattern: TypeAlias = "T.Type | type[T.Type] | tuple[str, ...] | Callable[[AbstractValue], bool]"
"""A rule signature's entry: a type, a type class (``ArrayType``), one of the patterns below, or a predicate
on the abstract value."""
Restype: TypeAlias = "T.Type | Const | Callable[..., AbstractValue | None]"
"""A rule's result: a type, a constant (the call's value is known), or a function of the argument types
giving one of them (None: the rule declines the call)."""
Claim: TypeAlias = "CallResult | tuple[tuple[Method, AbstractValue], str]"
"""A plugin's claim on a call: its handler's result, or ``((method, result type), rule set name)``."""
L = TypeVar("L", bound=Lowering)
H = TypeVar("H", bound=Handler)
F = TypeVar("F", bound=Callable[..., Any])

Float = ("kind", "f")
Int = ("kind", "i")
Bool = ("kind", "b")
Complex = ("kind", "c")
Number = ("number",)
"""a real scalar: bool, an integer or a float (complex numbers have their own rules)"""
Numeric = ("numeric",)
"""any scalar, complex ones included"""
Any_ = ("any",)


def _matches(pattern: Pattern, t: AbstractValue) -> bool:
    w = widen(t)
    if isinstance(pattern, T.Type):
        return w == pattern
    if isinstance(pattern, type):
        return isinstance(w, pattern)
    if isinstance(pattern, tuple):
        tags = cast("tuple[str, ...]", pattern)  # (isinstance also admits a callable subclass of tuple)
        tag = tags[0]
        if tag == "any":
            return True
        if tag == "number":
            return isinstance(w, T.Scalar) and w.kind != "c"
        if tag == "numeric":
            return isinstance(w, T.Scalar)
        if tag == "kind":
            return isinstance(w, T.Scalar) and w.kind == tags[1]
        if tag == "const":
            return isinstance(t, Const)
    assert not isinstance(pattern, tuple) and callable(pattern), f"rule pattern {pattern!r}"
    return bool(pattern(t))


Constant = ("const",)


class Method:
    """One entry of a method table: a signature, a result type and a lowering."""

    __slots__ = ("sig", "varargs", "restype", "lower", "pure")

    def __init__(self, sig: tuple[Pattern, ...], varargs: bool, restype: Restype, lower: Lowering, pure: bool):
        self.sig, self.varargs, self.restype = sig, varargs, restype
        self.lower, self.pure = lower, pure

    def match(self, argtypes: ArgTypes) -> bool:
        n = len(self.sig)
        if len(argtypes) != n and not (self.varargs and len(argtypes) >= n - 1):
            return False
        pats = list(self.sig) + [self.sig[-1]] * (len(argtypes) - n) if n else []
        return all(_matches(p, t) for p, t in zip(pats, argtypes))

    def result(self, argtypes: ArgTypes) -> AbstractValue | None:
        r = self.restype
        return r(*argtypes) if callable(r) and not isinstance(r, T.Type) else r


class RuleSet:
    """A named set of rules; ``target`` limits it to one target name (an overlay).

    ``plugin`` names the plugin the rules belong to (errors in its handlers
    name it); by default the part of ``name`` before its first dot.
    ``builtin`` marks the compiler's own rules, which every job uses (a
    plugin's are enabled per job).

    ``parts``, when given, is the set's precedence: the modules whose rules it
    holds, in order. Call handlers are asked in that order (the first claim
    wins); a function's definitions are tried from the last part back (a later
    part refines an earlier one's definitions of the same function); within a
    module, handlers in definition order and definitions from its last. The
    order modules are imported in is then irrelevant, and a rule from a module
    not listed is refused (its place must be stated).
    """

    def __init__(self, name: str, target: str | None = None, plugin: str | None = None, *,
                 builtin: bool = False, parts: tuple[str, ...] = ()):
        self.name, self.target, self.builtin = name, target, builtin
        self.plugin = plugin or name.partition(".")[0]
        self.parts = parts
        self.methods: dict[object, list[Method]] = {}
        self.handlers: list[Handler] = []
        self.inline_policy: InlinePolicy | None = None

    def define(self, fn: object, *sig: Pattern, restype: Restype, varargs: bool = False,
               pure: bool = True) -> Callable[[L], L]:
        """Decorator: ``lower(cg, args, argtypes, restype)`` implements ``fn`` for ``sig``.

        Signature entries are types, type classes (``ArrayType``), the
        patterns ``Float``/``Int``/``Bool``/``Complex``/``Number`` (real)/``Numeric``/``Any_``/``Constant``
        or predicates on the abstract value. ``restype`` is a type or a
        function of the argument types; it may return ``None`` to decline.
        ``pure`` rules of constant arguments are folded by calling ``fn``.
        """
        def deco(lower: L) -> L:
            methods = self.methods.setdefault(fn, [])
            methods.append(Method(sig, varargs, restype, lower, pure))
            methods.sort(key=lambda m: self._rank(m.lower))  # stable: a module's own in definition order
            return lower
        return deco

    def handler(self, fn: H) -> H:
        """Register ``fn(interp, callee, argtypes) -> CallResult | None`` (a call handler)."""
        self.handlers.append(fn)
        self.handlers.sort(key=self._rank)
        return fn

    def _rank(self, rule: Callable[..., Any]) -> int:
        """The place of ``rule``'s module in ``parts`` (0 for a set without them)."""
        if not self.parts:
            return 0
        module = getattr(rule, "__module__", None)
        if module not in self.parts:
            raise ConfigError(f"rule set {self.name!r}: {module}.{getattr(rule, '__qualname__', rule)} comes from "
                              "a module not in its precedence: add the module to the set's `parts`")
        return self.parts.index(module)

    def overload(self, fn: object, *, target: str | None = None) -> Callable[[F], F]:
        """Decorator (Numba's ``@overload``): a Python implementation compiled in place of calls of ``fn``
        (on the target named ``target`` only, when given), with the same arguments::

            @rules.overload(math.hypot, target="ptx")
            def hypot_ptx(x, y):
                return math.sqrt(x * x + y * y)
        """
        def deco(impl: F) -> F:
            def route(interp: Interp, callee: object, argtypes: ArgTypes) -> CallResult | None:
                if callee is not fn or (target is not None and interp.target.name != target):
                    return None
                return interp.invoke(impl, list(argtypes))

            route.__qualname__ = getattr(impl, "__qualname__", repr(impl))
            route.__module__ = getattr(impl, "__module__", route.__module__)
            self.handler(route)
            return impl
        return deco

    def lookup(self, fn: object, argtypes: ArgTypes) -> tuple[Method, AbstractValue] | None:
        for method in reversed(self.methods.get(fn, ())):
            if method.match(argtypes):
                res = method.result(argtypes)
                if res is not None:
                    return method, res
        return None

    def applies_to(self, target: Target) -> bool:
        """Whether this set's rules hold on ``target`` (every target unless it names one)."""
        return self.target is None or self.target == target.name

    def __repr__(self) -> str:
        return f"RuleSet({self.name!r})"


RULE_SETS: dict[str, RuleSet] = {}
"""Every registered rule set by name."""


def register(rule_set: RuleSet) -> RuleSet:
    RULE_SETS[rule_set.name] = rule_set
    return rule_set


def enabled_rule_sets(target: Target, plugins: Iterable[str]) -> tuple[list[RuleSet], list[Rules]]:
    """``(plugin rule sets, base rule sets)`` for a job; base starts with the target's overlays.

    A rule set with a ``target`` (a plugin's overlay, like the base ones)
    applies only to jobs for that target. The precedence: the target's
    overlays (in the target's order), then the registered builtin sets by
    name (the language's ``base``, its own precedence in its ``parts``:
    :mod:`gpucompiler.language.precedence`); plugins' claims do not compete by
    order: two claims are a :class:`RuleConflictError`.
    """
    plugin_sets = [rs for name in plugins for rs in _plugin_rules(name) if rs.applies_to(target)]
    builtin = sorted((r for r in RULE_SETS.values() if r.builtin and r.target is None), key=lambda r: r.name)
    return plugin_sets, [*target.rule_overlays(), *builtin]


def _plugin_rules(name: str) -> tuple[RuleSet, ...]:
    """The rule sets of plugin ``name``: its ``rules`` hook (one set, or a tuple of them: for every
    target and per target), else one registered by name."""
    rules = gp.hook(gp.enabled([name])[0], "rules")
    if rules is None:
        rules = RULE_SETS.get(name)
    sets = () if rules is None else (rules,) if isinstance(rules, RuleSet) else rules
    if not isinstance(sets, (tuple, list)) or not all(isinstance(rs, RuleSet) for rs in cast("Sequence[object]", sets)):
        raise ConfigError(f"plugin {name!r}: `rules` must be a RuleSet or a tuple of RuleSets, got {rules!r}")
    return tuple(cast("Sequence[RuleSet]", sets))  # checked just above


def call_handler(rs: RuleSet, handler: Handler, interp: Interp, fn: object, argtypes: ArgTypes) -> CallResult | None:
    """``handler(interp, fn, argtypes)`` of rule set ``rs``; a failure (other than a typed compiler
    error) becomes a :class:`PluginError` naming the plugin and the handler (the interpreter adds
    the user's file:line)."""
    try:
        return handler(interp, fn, argtypes)
    except GPUCompilerError:
        raise
    except Exception as exc:
        name = getattr(handler, "__qualname__", repr(handler))
        raise PluginError(rs.plugin, "call handler", name, exc, at=gp.plugin_location(exc, handler)) from exc


def claim(plugin_sets: list[RuleSet], interp: Interp, fn: object, argtypes: ArgTypes) -> Claim | None:
    """The one plugin claim on ``fn(argtypes)``; several claims raise RuleConflictError (within one
    plugin, its rule sets for the job's target win over those for every target)."""
    claims: list[tuple[RuleSet, Claim]] = []
    for rs in plugin_sets:
        found: Claim | None = None
        for h in rs.handlers:
            found = call_handler(rs, h, interp, fn, argtypes)
            if found is not None:
                found = attrs.evolve(found, rule_set=rs.name)
                break
        if found is None:
            hit = rs.lookup(fn, argtypes)
            if hit is not None:
                found = (hit, rs.name)
        if found is not None:
            claims.append((rs, found))
    by_target = {rs.plugin for rs, _ in claims if rs.target is not None}
    kept = [c for rs, c in claims if rs.target is not None or rs.plugin not in by_target]  # a plugin's own
    if len(kept) > 1:  # rules for this target win over its rules for every target
        names = [c.rule_set if isinstance(c, CallResult) else c[1] for c in kept]
        raise RuleConflictError(getattr(fn, "__qualname__", repr(fn)), names)
    return kept[0] if kept else None
