"""The module under compilation, held in whichever form the last stage used.

A stage or plugin asks for the form it works on:

* ``module.ref``   an ``llvmlite.binding.ModuleRef`` (to run LLVM passes, link, emit);
* ``module.model`` the mutable Python model :class:`gpucompiler.llvm.Module`;
* ``module.text``  printed LLVM IR.

Asking for ``ref`` or ``model`` makes that form the authoritative one: later
changes to it are seen by the next stage, and the other form is rebuilt from
it on demand (printing and re-parsing). Converting only when a stage needs
another form keeps the common path (no Python-model pass) free of Python-side
parsing. :meth:`IRModule.keep_text` keeps one print of a module no stage
changes any more (after validation) for every later reader of its text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import llvmlite.binding as llvm

from . import llvm as ir_model  # the Python model loads when a stage first asks for it
from .llvm.binding import parse_ir

if TYPE_CHECKING:  # pragma: no cover
    from .llvm import Module


class IRModule:
    """Holder of the module being compiled (see the module docstring)."""

    __slots__ = ("_ref", "_model", "_text")

    def __init__(self, text: str | None = None, *, ref: llvm.ModuleRef | None = None,
                 model: Module | None = None):
        given = [x is not None for x in (text, ref, model)]
        if sum(given) != 1:
            raise TypeError("IRModule takes exactly one of text, ref, model")
        self._text, self._ref, self._model = text, ref, model

    @property
    def text(self) -> str:
        """The module printed as LLVM IR."""
        if self._model is not None:
            return str(self._model)
        if self._text is not None:  # the authoritative form, or the ref's print kept by keep_text
            return self._text
        assert self._ref is not None
        return str(self._ref)

    def keep_text(self) -> str:
        """The module's text, printed once and kept beside the ``ModuleRef`` until a stage asks for
        ``ref`` or ``model`` again (which may change it): the validated module's readers (its facts, the
        ``llvm`` artifact, dumps) share one print."""
        text = self.text
        if self._ref is not None:
            self._text = text
        return text

    @property
    def parsed(self) -> bool:
        """Whether the authoritative form is the ``ModuleRef`` (LLVM parsed and verified the last change
        made as text or model; changes through the ref itself are LLVM's API)."""
        return self._ref is not None

    @property
    def ref(self) -> llvm.ModuleRef:
        """The module as an llvmlite ``ModuleRef``; becomes the authoritative form."""
        if self._ref is None:
            self._ref = parse_ir(self.text)
            self._model = None
        self._text = None  # the caller may change the module: a kept print is stale from now on
        return self._ref

    @ref.setter
    def ref(self, value: llvm.ModuleRef) -> None:
        self._ref, self._model, self._text = value, None, None

    @property
    def model(self) -> Module:
        """The module as a mutable Python model; becomes the authoritative form."""
        if self._model is None:
            self._model = ir_model.parse(self.text)
            self._ref = self._text = None
        return self._model

    @model.setter
    def model(self, value: Module) -> None:
        self._model, self._ref, self._text = value, None, None

    def read_ref(self) -> llvm.ModuleRef:
        """The module as an llvmlite ``ModuleRef`` for a reader that does not change it (a clone for the
        code generator, the bitcode): a print kept by :meth:`keep_text` stays."""
        return self._ref if self._ref is not None else self.ref

    def function_names(self) -> set[str]:
        """Names of every function defined or declared in the module."""
        if self._model is not None:
            return set(self._model.functions)
        return {f.name for f in self.read_ref().functions}

    def __str__(self) -> str:
        return self.text


__all__ = ["IRModule"]
