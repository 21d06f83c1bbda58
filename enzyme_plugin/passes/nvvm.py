"""Preserve/restore: a target's intrinsics in forms the AD engine has rules for, and back.

The target says which of its functions are which (the AD hooks of
:class:`gpucompiler.core.Target`); this pass knows no vendor. Before AD (``pre_ad``):

* thread/block index and size reads (``target.inactive_intrinsic``), and the
  CPU grid emulation's thread context (``pthread_getspecific``), become
  calls of ``gpuc.inactive.<name>``: no derivative flows through them;
* barriers (``target.barrier_intrinsic``, the emulation's ``gpuc_emu_barrier``)
  become ``gpuc.barrier.<name>``: the engine mirrors them in the reverse sweep;
* the device library's math (``target.math_from_device``) becomes the C
  library's names (``sin``) the engine has derivative rules for.

After AD (``post_ad``) every renamed function gets its name back, and the
math the derivatives call (``cos``, ``llvm.exp.f64``...) is mapped to the
device library where the target says so (``target.math_to_device``), so
that ``finish`` links it.
"""

from __future__ import annotations

from gpucompiler.core import Target
from gpucompiler.llvm import Function

from ..ad.gpu import BARRIER_PREFIX, INACTIVE_PREFIX

EMULATION_INACTIVE = frozenset({"pthread_getspecific"})
"""The CPU grid emulation's thread context read (:mod:`gpucompiler.device`)."""
EMULATION_BARRIERS = frozenset({"gpuc_emu_barrier"})
"""The CPU grid emulation's barrier."""
RESTORE_MARKERS_PREFIXES = (INACTIVE_PREFIX, BARRIER_PREFIX)


def _rename(model, fn: Function, new: str) -> Function:
    """Point every use of ``fn`` at a declaration called ``new`` (reused when it exists)."""
    target = model.functions.get(new)
    if target is None:
        fn.name = new
        model.functions = {(f.name if f is fn else k): f for k, f in model.functions.items()}
        return fn
    fn.replace_all_uses_with(target)
    model.remove_function(fn)
    return target


def preserved_name(name: str, target: Target) -> str | None:
    """The name :func:`preserve` gives the declaration ``name``; None when it keeps its own."""
    if name in EMULATION_INACTIVE or target.inactive_intrinsic(name):
        return INACTIVE_PREFIX + name
    if name in EMULATION_BARRIERS or target.barrier_intrinsic(name):
        return BARRIER_PREFIX + name
    return target.math_from_device(name)


def preserve(model, target: Target) -> int:
    """Rename the intrinsics (see the module docstring); returns how many functions were renamed."""
    n = 0
    for fn in list(model.functions.values()):
        new = preserved_name(fn.name, target) if fn.is_declaration else None
        if new is not None:
            _rename(model, fn, new)
            n += 1
    return n


def restored_name(name: str, declaration: bool, target: Target) -> str | None:
    """The name :func:`restore` gives the function ``name`` (a ``declaration`` or not); None when it keeps its
    own."""
    if name.startswith(RESTORE_MARKERS_PREFIXES):
        return name.split(".", 2)[2]
    return target.math_to_device(name) if declaration else None


def restore(model, target: Target) -> int:
    """Undo :func:`preserve`, and map math calls to the target's device library. Returns how many
    functions were renamed."""
    n = 0
    for fn in list(model.functions.values()):
        new = restored_name(fn.name, fn.is_declaration, target)
        if new is not None:
            _rename(model, fn, new)
            n += 1
    return n
