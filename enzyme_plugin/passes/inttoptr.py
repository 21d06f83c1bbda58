"""inttoptr preserve/restore: calls through constant addresses get names for the AD engine.

A frontend that embeds runtime addresses (a ctypes function pointer, a JIT's
symbol) produces ``call double inttoptr (i64 140234 to ptr)(double %x)``. The
engine keys its rules by callee name, and IR holding process addresses cannot
be cached, so before anything else (``post_irgen``) such a callee becomes a
named declaration:

* the symbol's own name when the dynamic linker knows the address (``dladdr``):
  ``call double @sin(double %x)``, which the engine differentiates by rule;
* else ``@gpuc.inttoptr.<hex address>``.

The address is kept on the side (:data:`ADDRESSES`, by name) and registered
with LLVM's symbol table for the in-process JIT, so after AD the names stay
in the IR (serialisable, cacheable) and still resolve in this process.
:func:`restore` puts the constant addresses back where a caller wants the
original form (``CompilerConfig(params={"enzyme_inttoptr": "restore"})``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import llvmlite.binding as llvm

from gpucompiler.llvm import ConstantExpr, Function, Instruction, const_int, types as T

PREFIX = "gpuc.inttoptr."
MARKER_FREE = "inttoptr"  # the callback is gated by a text check instead (see plugin.py)
ADDRESSES: dict[str, int] = {}
"""Name of a preserved declaration -> the runtime address it stands for (this process)."""
RECORD = "gpuc.enzyme.address"


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
    from .nvvm import MATH

    try:
        lib = ctypes.CDLL(library)
    except OSError:
        return None
    for name in sorted(MATH | {m + "f" for m in MATH}):
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


def _inttoptr(address: int) -> ConstantExpr:
    return ConstantExpr(T.ptr(), "inttoptr", ["inttoptr(", T.i64, " ", 0, " to ", T.ptr(), ")"],
                        [const_int(T.i64, address)])


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
            ADDRESSES[name] = addr
            llvm.add_symbol(name, addr)
            inst.set_operand(inst.callee_slot(), decl)
            n += 1
    return n


def restore(model) -> int:
    """Calls of preserved ``gpuc.inttoptr.*`` declarations back to their constant addresses."""
    n = 0
    for name in [k for k in model.functions if k.startswith(PREFIX)]:
        fn = model.functions[name]
        addr = ADDRESSES.get(name)
        if addr is None:
            continue
        for use in list(fn.uses):
            if isinstance(use.user, Instruction):
                use.user.set_operand(use.index, _inttoptr(addr))
                n += 1
        if not fn.uses:
            model.remove_function(fn)
    return n
