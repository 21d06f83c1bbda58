"""The fields of the reverse-mode emitter that its mixins (:mod:`.tape`, :mod:`.recompute`) read.

:class:`~.reverse.Reverse` sets them all in its constructor; the mixins derive
from :class:`ReverseState` so that each use is checked against one declaration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpucompiler.llvm import BasicBlock, Builder, Function, Instruction, Value

    from .analysis import CFG, Activity
    from .engine import Engine
    from .sweep import Sweep


class ReverseState:
    """Declared fields of :class:`~.reverse.Reverse` (set by its constructor)."""

    b: Builder
    engine: Engine
    fn: Function
    act: Activity
    #: the functions receiving the forward and the reverse sweep (one function in combined mode)
    aug: Function
    rev: Function
    combined: bool
    sweep: Sweep
    cfg: CFG
    rev_entry: BasicBlock
    #: the primal block whose reverse is being emitted
    cur: BasicBlock | None
    #: values rebuilt or loaded in the reverse sweep, by (block, value) and by ("iv"|"hoist", ...)
    memo: dict[tuple, Any]
    requests: dict[BasicBlock | None, list[tuple[Value, Instruction, int]]]
    #: bytes of each block's requests so far (the next request's offset)
    request_bytes: dict[BasicBlock | None, int]
    pop_blocks: dict[BasicBlock | None, BasicBlock]

    if TYPE_CHECKING:  # defined by Reverse
        def fwd(self, v: Value) -> Any: ...
        def fwd_shadow(self, v: Value, inst: Instruction | None = None) -> Any: ...
        def _from_forward(self, block: BasicBlock | None, fv: Value) -> Any: ...
        def _edge(self, ds: Any, pred: BasicBlock) -> None: ...
        def _counted(self, block: BasicBlock | None) -> Any: ...
        def _iv_here(self, v: Instruction) -> Any: ...
        def _tape_in_memory(self, lp: Any) -> bool: ...
