"""inttoptr preserve: calls through constant addresses get names for the AD engine.

A frontend that embeds runtime addresses (a ctypes function pointer, a JIT's
symbol) produces ``call double inttoptr (i64 140234 to ptr)(double %x)``. The
engine keys its rules by callee name, and IR holding process addresses cannot
be validated or cached, so before anything else (``post_irgen``) such a
callee becomes a named declaration:

* the symbol's own name when the dynamic linker knows the address (``dladdr``):
  ``call double @sin(double %x)``, which the engine differentiates by rule;
* else ``@gpuc.inttoptr.<hex address>``, bound to the address in the module's
  own record (``!gpuc.addresses``, :data:`gpucompiler.llvm.binding.ADDRESSES`).

The names stay in the output: it validates on every target and is cacheable,
and every loader binds the recorded names, so the code calls what the source
called (this is what ``enzyme_inttoptr="restore"`` asked for; the constants
themselves never come back). The binding is also registered with LLVM's
symbol table of this process.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import llvmlite.binding as llvm

from gpucompiler.core.mathfns import MATH_FUNCTIONS
from gpucompiler.llvm import ADDRESSES, ConstantExpr, Function, MDNode, const_int, types as T

PREFIX = "gpuc.inttoptr."


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def symbol_name(address: int) -> str | None:
    """The exported name of the function at ``address`` (exactly there), or None."""
    try:
        libc = ctypes.CDLL(None)
        dladdr = libc.dladdr
    except (OSError, AttributeError):
        return None
    dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    info = _DlInfo()
    if not dladdr(ctypes.c_void_p(address), ctypes.byref(info)):
        return None
    if info.dli_sname and info.dli_saddr == address:
        return info.dli_sname.decode()
    if info.dli_fname:  # an IFUNC-resolved libm entry has no symbol of its own: try the math names
        return _math_symbol(info.dli_fname.decode(), address)
    return None


def _math_symbol(library: str, address: int) -> str | None:
    try:
        lib = ctypes.CDLL(library)
    except OSError:
        return None
    for name in sorted(f.name(single) for f in MATH_FUNCTIONS for single in (False, True)):
        fn = getattr(lib, name, None)
        if fn is not None and ctypes.cast(fn, ctypes.c_void_p).value == address:
            return name
    return None


def _address(callee) -> int | None:
    """The integer of ``inttoptr (i64 N to ptr)``, else None."""
    if isinstance(callee, ConstantExpr) and callee.opcode == "inttoptr":
        value = getattr(callee.operands[0], "value", None)
        return value if isinstance(value, int) else None
    return None


def _record(model, name: str, address: int) -> None:
    """``!{!"name", i64 address}`` in the module's ``!gpuc.addresses`` record (once per name)."""
    record = model.get_named_metadata(ADDRESSES)
    if any(f'!"{name}"' in node.parts[0] for node in record.nodes):
        return
    node = MDNode([f'!{{!"{name}", ', T.i64, " ", 0, "}"], [const_int(T.i64, address)])
    model.add_metadata(node)
    record.nodes.append(node)


def preserve(model) -> int:
    """Name every called constant address; returns how many calls were rewritten."""
    n = 0
    for fn in list(model.functions.values()):
        for inst in list(fn.instructions()):
            if inst.opcode != "call" or inst.callee is None:
                continue
            addr = _address(inst.callee)
            if addr is None:
                continue
            name = symbol_name(addr) or f"{PREFIX}{addr:x}"
            decl = model.functions.get(name)
            if decl is None:
                ftype = T.function(inst.type, [a.type for a in inst.args])
                decl = model.add_function(Function(name, ftype))
            if name.startswith(PREFIX):
                _record(model, name, addr)
            llvm.add_symbol(name, addr)
            inst.set_operand(inst.callee_slot(), decl)
            n += 1
    return n
