"""What the interpreter reads from a rule set: the protocol targets and plugins hand it.

The interpreter's :class:`~gpucompiler.interpreter.rules.RuleSet` is the one
implementation; the contract's hooks (:meth:`Target.rule_overlays
<gpucompiler.core.target.Target.rule_overlays>`, a plugin's ``rules``) are typed
by this protocol so that the contract sits below the interpreter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class Rules(Protocol):
    """A named set of interpreter rules: method tables, call handlers, an inlining policy."""

    name: str
    """Unique name (``base.ptx``, ``enzyme``...), shown in rule conflicts."""
    target: str | None
    """A target's name: the rules hold on that target only; None: on every target."""
    plugin: str
    """The plugin the rules belong to (errors in its handlers name it)."""
    builtin: bool
    """The compiler's own rules (every job uses them; a plugin's are enabled per job)."""
    handlers: list[Callable[..., Any]]
    """Call handlers ``fn(interp, callee, argtypes) -> CallResult | None``, tried in order."""
    inline_policy: Callable[..., Any] | None
    """Whether a call is inlined into its caller (None: the interpreter's default)."""

    def lookup(self, fn: Any, argtypes: tuple[Any, ...]) -> tuple[Any, Any] | None:
        """``(method, result type)`` of the rule for ``fn(argtypes)``, or None."""
        ...
