"""Thin helpers over ``llvmlite.binding``: initialisation, parsing with typed errors."""
# llvmlite ships no type information: its members are untyped
# pyright: reportUnknownMemberType=false, reportUnknownArgumentType=false, reportMissingTypeStubs=false

from __future__ import annotations

import ctypes
import functools
import re

import llvmlite.binding as llvm

from ..errors import IRParseError


@functools.cache
def initialize() -> None:
    """Initialise every LLVM target and printer once per process (code generation for any triple)."""
    # llvmlite >= 0.44 initialises the core itself; the targets are ours to ask for.
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    _options()


@functools.cache
def initialize_native() -> None:
    """Initialise the host target only: enough to load and run object code (4x cheaper than
    :func:`initialize`, on the path of every fresh process's first cache hit)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    _options()


@functools.cache
def _options() -> None:
    """LLVM's options for every compile of the process (set before the first, by both initialisers).

    Loops summing floats in order (np.sum, dot, a Python ``s += x``) are vectorised keeping that
    order (``llvm.vector.reduce.fadd`` with a start value: the same additions, one lane after
    another), so their elementwise work (sqrt, products) runs in vector lanes. LLVM enables this
    itself only where the target says it pays (AArch64); the results are the same bits either way.
    A process-wide LLVM option: code other llvmlite users compile in this process (Numba) gets it too.
    """
    llvm.set_option("gpucompiler", "-force-ordered-reductions")


def llvm_version() -> str:
    """The version of the LLVM that llvmlite links, e.g. ``"22.1.0"``."""
    return ".".join(map(str, llvm.llvm_version_info))


#: patterns compiled at their first use (``re``'s own cache), not at import: a cache hit parses no IR
_LINE = r"<string>:(\d+):(\d+):\s*(?:error:\s*)?(.*)"


def parse_ir(text: str, *, verify: bool = True) -> llvm.ModuleRef:
    """Parse LLVM IR text into an llvmlite ``ModuleRef``.

    Malformed text raises :class:`IRParseError` carrying LLVM's message and
    the line it points at.
    """
    try:
        ref = llvm.parse_assembly(text)
        if verify:
            ref.verify()
    except RuntimeError as exc:
        raise _parse_error(str(exc), text) from None
    return ref


def parse_bitcode_apart(bitcode: bytes) -> llvm.ModuleRef:
    """Parse ``bitcode`` into an ``LLVMContext`` of its own, without holding llvmlite's lock.

    llvmlite serialises every call through one process-wide lock; LLVM itself allows
    distinct contexts to be used from distinct threads at once (ThinLTO parses modules so).
    A thread parsing a large library this way lets the compile's own LLVM calls go on. The
    module's later uses take the lock as usual; it cannot be linked into a module of another
    context (its bitcode can). Raises ``RuntimeError`` for bad bitcode, as ``parse_bitcode`` does.
    """
    context = llvm.create_context()
    with llvm.ffi.OutputString() as errmsg:
        module = llvm.ModuleRef(  # (``_cfn``: the ctypes function under llvmlite's locking wrapper)
            llvm.ffi.lib.LLVMPY_ParseBitcode._cfn(  # pyright: ignore[reportPrivateUsage]
                context, ctypes.c_char_p(bitcode), len(bitcode), errmsg), context)
        if errmsg:
            module.close()
            raise RuntimeError(f"LLVM bitcode parsing error\n{errmsg}")
    return module


def _parse_error(message: str, text: str) -> IRParseError:
    match = re.search(_LINE, message)
    if not match:
        return IRParseError(message.strip())
    line = int(match.group(1))
    lines = text.splitlines()
    source = lines[line - 1] if 0 < line <= len(lines) else None
    return IRParseError(match.group(3).strip(), line=line, source_line=source)


ADDRESSES = "gpuc.addresses"
"""Named metadata binding declared names to the addresses the job's own source called:
``!gpuc.addresses = !{!0}``, ``!0 = !{!"name", i64 address}``. A loader binds each name to its
address, so the IR holds names (it validates and can be cached) and still calls what the source
called. The addresses come from the source text, which is part of the job's key."""
_NAMED = r"^!" + re.escape(ADDRESSES) + r" = !\{([^}]*)\}"


def address_bindings(text: str) -> dict[str, int]:
    """``{name: address}`` of the :data:`ADDRESSES` record of the LLVM IR ``text`` (empty without one)."""
    if f"!{ADDRESSES} = " not in text:  # a substring search: the line pattern tries every line of a module
        return {}
    named = re.search(_NAMED, text, re.M)
    if named is None:
        return {}
    out: dict[str, int] = {}
    for ref in re.findall(r"!(\d+)", named.group(1)):
        node = re.search(r"^!" + ref + r' = !\{\s*!"((?:[^"\\]|\\.)*)",\s*i64\s+(-?\d+)\s*\}', text, re.M)
        if node is not None:
            out[node.group(1)] = int(node.group(2)) % (1 << 64)
    return out

