"""The serialisable-IR validator: IR another process can load and run with the same results.

Compiled IR enters the cache or crosses the wire only if it holds no
runtime pointers and no process-specific symbols:

* ``POINTER_CONSTANT``: an ``inttoptr`` of a constant address, in a function
  body (the targets' own check, :class:`~gpucompiler.core.facts.ModuleFacts`)
  or in a global's initializer;
* ``PROCESS_SYMBOL``: a declared name that encodes an address or a process
  id (``@fn_0x7f3a12c0``, ``@__gpuc_addr_…``); such names are resolved by
  ``llvmlite.binding.add_symbol`` in one process and mean nothing in another.

Externals referenced *by name* (``@sin``, ``@llvm.fma.f64``) are fine: every
process resolves them itself, and so are names the module binds itself to
addresses its job's source called (:data:`gpucompiler.llvm.binding.ADDRESSES`:
every loader binds them; the source, and so the address, is part of the key).
"""
# llvmlite ships no type information: the members of its ModuleRef and ValueRef are untyped
# pyright: reportUnknownMemberType=false, reportUnknownArgumentType=false, reportMissingTypeStubs=false

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..errors import ErrorKind, UnserialisableIRError
from ..llvm.binding import parse_ir
from ..core.facts import ModuleFacts

if TYPE_CHECKING:
    import llvmlite.binding as llvm

#: hexadecimal runs of 8+ digits (``0x7f3a...`` or bare) or explicit address markers in a symbol name
_ADDRESS_NAME = re.compile(r"(0x[0-9a-fA-F]{6,}|(?<![0-9a-zA-Z])[0-9a-fA-F]{12,}(?![0-9a-zA-Z])|"
                           r"__gpuc_addr|\baddr_\d{6,}|\bpid\d+)")


def serialisation_errors(module: Any, facts: ModuleFacts | None = None) -> list[tuple[str, str]]:
    """Every reason ``module`` (IR text, an ``IRModule`` or a ``ModuleRef``) cannot be serialised;
    ``facts``: the module's :class:`ModuleFacts` when validation has them (else read here). The facts
    hold all the check asks: given them, the module is neither printed nor walked again."""
    if facts is None:
        facts = ModuleFacts.of(_ref(module))
    errors = facts.pointer_constant_errors()
    errors += [(ErrorKind.POINTER_CONSTANT, f"constant address in the initializer of @{name}: `{line}`; "
                "refer to the object by name instead") for name, line in facts.global_pointer_constants]
    errors += [(ErrorKind.PROCESS_SYMBOL, f"@{name} names a process-specific object (an address in its name); "
                "another process cannot resolve it: declare a stable symbol name")
               for name in facts.declarations if _ADDRESS_NAME.search(name) and name not in facts.addresses]
    return errors


def check_serialisable(module: Any, job_name: str = "") -> None:
    """Raise :class:`UnserialisableIRError` listing every problem of ``module``; return None if clean."""
    errors = serialisation_errors(module)
    if errors:
        raise UnserialisableIRError(errors, job_name=job_name)


def _ref(module: Any) -> llvm.ModuleRef:
    if isinstance(module, str):
        return parse_ir(module, verify=False)
    ref = getattr(module, "ref", None)
    return ref if ref is not None else module
