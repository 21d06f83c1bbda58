"""What compiled code needs of split mode: the base class of its thunks and ``f``'s primal wrapper.

The thunks themselves, their tapes and ``autodiff_thunk`` are :mod:`enzyme_plugin.split` (it loads
NumPy); the language's rules (:mod:`enzyme_plugin.language.thunks`) type a thunk's call from this base
class and lower it to the two halves of :func:`primal_wrapper`'s derivative.
"""

from __future__ import annotations

import functools
import linecache
from typing import ClassVar

from gpucompiler.errors import PLUGIN_ATTRIBUTE


class Thunk:
    """A split-mode thunk of ``f`` for the activities ``kinds`` (class names), both halves compiled into
    ``entry``; called from Python (:mod:`enzyme_plugin.split`) and in compiled code."""

    __slots__ = ("f", "kinds", "entry", "__weakref__")
    forward: ClassVar[bool] = True
    """The augmented forward pass (else the reverse pass)."""

    def __init__(self, f, kinds: tuple[str, ...], entry):
        self.f, self.kinds, self.entry = f, kinds, entry


setattr(Thunk, PLUGIN_ATTRIBUTE, "enzyme")  # calls of thunks in compiled code need the plugin

PRIMAL_FILE = "<enzyme_plugin.split primal"
"""How the source of :func:`primal_wrapper`'s functions is named (an error there is about ``f``'s result)."""


@functools.lru_cache(maxsize=256)
def primal_wrapper(f, n: int):
    """``split_primal(out, x0, ..., x<n-1>)``: ``f``'s result into ``out[0]`` and 1.0 into ``out[1]``
    (the primal comes back through ``out``, the seed goes in through its shadow)."""
    fargs = ", ".join(f"x{i}" for i in range(n))
    src = (f"def split_primal(out, {fargs}):\n"
           f"    r = F({fargs})\n"
           f"    if r is not None:\n"
           f"        out[0] = r\n"
           f"        out[1] = 1.0\n")
    filename = f"{PRIMAL_FILE} {f.__module__}.{f.__qualname__} {n}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)  # source for the frontend
    namespace = {"F": f}
    exec(compile(src, filename, "exec"), namespace)
    return namespace["split_primal"]


__all__ = ["PRIMAL_FILE", "Thunk", "primal_wrapper"]
