"""Loading compiled code into this process and calling it through ctypes.

Code is loaded as an *object file* into llvmlite's ORC ``LLJIT``: the object
the native target emits (the ``obj`` artifact, cacheable and identical in
every process) is exactly what runs, no second code generation happens, and
each library is its own JIT dylib that lives as long as its Python object.
(MCJIT would need the IR again and re-run code generation per module.)

External symbols are resolved *by name* when the object is linked: first
among the names registered with ``llvmlite.binding.add_symbol`` or loaded
with ``load_library_permanently``, then in the process (libm's ``sin``...).
The IR never holds an address, so it stays cacheable.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
from typing import Any

import llvmlite.binding as llvm

from ..errors import CompileError, ConfigError
from ..llvm.binding import initialize_native, parse_ir
from ..targets.native import NativeTarget, process_symbol


class LinkError(CompileError):
    """Loading compiled code failed: an external name could not be resolved."""


_library_ids = itertools.count()


@functools.cache
def _jit() -> llvm.LLJIT:
    initialize_native()
    return llvm.create_lljit_compiler()


class CPULibrary:
    """Compiled code loaded in this process; callables keep it alive.

    >>> lib = CPULibrary.from_ir(ir_text)                      # doctest: +SKIP
    >>> add = lib.function("add", ctypes.c_double, ctypes.c_double, ctypes.c_double)
    >>> add(1.0, 2.0)
    3.0
    """

    def __init__(self, obj: bytes, ref: llvm.ModuleRef):
        """Load object code ``obj`` compiled from ``ref`` (used for its symbol names)."""
        exports = [g.name for g in (*ref.functions, *ref.global_variables)
                   if not g.is_declaration and g.linkage.name not in ("internal", "private")]
        imports = [g.name for g in (*ref.functions, *ref.global_variables)
                   if g.is_declaration and not g.name.startswith("llvm.")]
        builder = llvm.JITLibraryBuilder().add_object_img(obj)
        missing = []
        for name in imports:
            address = process_symbol(name)
            if address is None:
                missing.append(name)
            else:
                builder.import_symbol(name, address)
        if missing:
            raise LinkError(f"unresolved external symbol(s) {', '.join(missing)}: load the library "
                            "that defines them (llvmlite.binding.load_library_permanently) or "
                            "register them with llvmlite.binding.add_symbol")
        builder.add_current_process()
        for name in exports:
            builder.export_symbol(name)
        try:
            self._tracker = builder.link(_jit(), f"gpuc_cpu_{next(_library_ids)}")
        except RuntimeError as exc:
            raise LinkError(f"loading the object code failed: {exc}") from None
        self.names = tuple(sorted(exports))

    @classmethod
    def from_ir(cls, text: str, target: NativeTarget | None = None, opt_level: int = 2) -> "CPULibrary":
        """Compile LLVM IR text for the host (no pipeline) and load it."""
        target = target or NativeTarget()
        ref = parse_ir(text)
        ref.triple, ref.data_layout = target.triple(), target.data_layout()
        return cls(target.target_machine(opt_level).emit_object(ref), ref)

    @classmethod
    def from_result(cls, result: Any) -> "CPULibrary":
        """Load a native ``CompileResult``: its ``obj`` artifact, or object code emitted from its module."""
        target = result.job.target
        if not isinstance(target, NativeTarget):
            raise ConfigError(f"CPULibrary loads code for the native target, not {target.name!r}; "
                              "compile with target='native'")
        obj = result.artifacts.get("obj")
        if obj is None:
            obj = target.emit(result.job, result.module, "obj")
        return cls(obj, result.module.ref)

    def address(self, name: str) -> int:
        """The address of the exported symbol ``name``."""
        if name not in self.names:
            raise ConfigError(f"no symbol {name!r} in this library; it exports: {', '.join(self.names)}")
        return self._tracker[name]

    def function(self, name: str, restype: Any, *argtypes: Any):
        """A ctypes callable of ``name`` with C signature ``restype(*argtypes)``.

        The callable holds a reference to this library, so the code stays loaded
        as long as the callable is reachable.
        """
        fn = ctypes.CFUNCTYPE(restype, *argtypes)(self.address(name))
        fn._gpuc_library = self  # keeps the JIT dylib alive
        return fn
