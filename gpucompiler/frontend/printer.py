"""Readable text of SSA functions, optionally annotated with inferred types."""

from __future__ import annotations

from typing import TYPE_CHECKING
from collections.abc import Callable

if TYPE_CHECKING:
    from .ir import Function


def format_function(fn: Function, typeof: Callable | None = None, header: str | None = None) -> str:
    """Print ``fn``; ``typeof(value)`` (when given) annotates each value with its type."""
    fn.renumber()
    ann = (lambda v: f" :: {typeof(v)!r}") if typeof else (lambda v: "")
    lines = [header or f"function {fn.name}({', '.join(a.name for a in fn.args)})"]
    for block in fn.blocks:
        preds = ", ".join(map(repr, block.preds))
        lines.append(f"{block!r}:" + (f"  ; preds {preds}" if preds else ""))
        for phi in block.phis:
            inc = ", ".join(f"[{b!r}: {v.ref()}]" for b, v in phi.incoming.items())
            lines.append(f"  %{phi.id} = phi {phi.var} {inc}{ann(phi)}")
        for inst in block.insts:
            args = ", ".join(a.ref() for a in inst.args)
            lines.append(f"  %{inst.id} = {inst.fn.ref()}({args}){ann(inst)}{_loc(inst)}")
        lines.append("  " + _term(block.term))
    return "\n".join(lines)


def _loc(inst) -> str:
    return f"  # line {inst.loc[1]}" if inst.loc else ""


def _term(term) -> str:
    text = getattr(term, "text", None)
    return text() if text is not None else "<no terminator>"


__all__ = ["format_function"]
