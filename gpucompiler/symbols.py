"""Addresses this process gives compiled code by name, handed to LLVM once its library is loaded.

The kernel language's random states and the parallel pool's slot are reached from compiled code by
name (``llvmlite.binding.add_symbol``). Registering them where they are defined would load llvmlite's
library (~20 ms) at ``import gpucompiler.device``, which a GPU program's cached launch never needs: they
are kept here and registered by :mod:`gpucompiler.llvm.binding` when it loads the library (or at once,
when it is loaded already). The first address given for a name is the one kept.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

_ADDRESSES: dict[str, int] = {}
_SLOTS: list = []  # the slots made here, kept alive
#: ``llvmlite.binding.add_symbol`` once :func:`bind` has run (None before)
_add_symbol: list[Callable[[str, int], None] | None] = [None]


def provide(name: str, address: int) -> int:
    """Give compiled code ``address`` as the symbol ``name``; the address kept for it (an earlier one wins)."""
    kept = _ADDRESSES.setdefault(name, address)
    add = _add_symbol[0]
    if add is not None and kept == address:
        add(name, address)
    return kept


def slot(name: str) -> int:
    """The address of a pointer-sized slot (null at first) named ``name``, made by the first caller."""
    found = _ADDRESSES.get(name)
    if found is not None:
        return found
    _SLOTS.append((ctypes.c_void_p * 1)())
    return provide(name, ctypes.addressof(_SLOTS[-1]))


def bind(add_symbol: Callable[[str, int], None]) -> None:
    """Register every address given so far with ``add_symbol``, and the later ones as they come."""
    for name, address in list(_ADDRESSES.items()):
        add_symbol(name, address)
    _add_symbol[0] = add_symbol
