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

The process's ``LLJIT`` is made in the background while a first call's modules load
(:mod:`.lljit`).
"""

from __future__ import annotations

import ctypes
import itertools
from types import SimpleNamespace
from typing import Any

import llvmlite.binding as llvm

from ..errors import CompileError, ConfigError
from ..llvm.binding import address_bindings, parse_ir
from ..targets.native import NativeTarget, process_symbol
from . import threadpool
from .lljit import lljit


class LinkError(CompileError):
    """Loading compiled code failed: an external name could not be resolved."""


_library_ids = itertools.count()


class CPULibrary:
    """Compiled code loaded in this process; callables keep it alive.

    >>> lib = CPULibrary.from_ir(ir_text)                      # doctest: +SKIP
    >>> add = lib.function("add", ctypes.c_double, ctypes.c_double, ctypes.c_double)
    >>> add(1.0, 2.0)
    3.0
    """

    def __init__(self, obj: bytes, ref: Any, addresses: dict[str, int] | None = None):
        """Load object code ``obj`` compiled from ``ref`` (used for its symbol names); ``addresses``
        binds names the module's own record binds (:data:`gpucompiler.llvm.binding.ADDRESSES`)."""
        addresses = addresses or {}
        exports = [g.name for g in (*ref.functions, *ref.global_variables)
                   if not g.is_declaration and g.linkage.name not in ("internal", "private")]
        imports = [g.name for g in (*ref.functions, *ref.global_variables)
                   if g.is_declaration and not g.name.startswith("llvm.")]
        builder = llvm.JITLibraryBuilder().add_object_img(obj)
        missing = []
        for name in imports:
            address = addresses.get(name) or process_symbol(name)
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
            self._tracker = builder.link(lljit(), f"gpuc_cpu_{next(_library_ids)}")
        except RuntimeError as exc:
            raise LinkError(f"loading the object code failed: {exc}") from None
        self.names = tuple(sorted(exports))

    @classmethod
    def from_ir(cls, text: str, target: NativeTarget | None = None, opt_level: int = 2) -> CPULibrary:
        """Compile LLVM IR text for the host (no pipeline) and load it."""
        target = target or NativeTarget()
        ref = parse_ir(text)
        ref.triple, ref.data_layout = target.triple(), target.data_layout()
        return cls(target.target_machine(opt_level).emit_object(ref), ref)

    @classmethod
    def from_result(cls, result: Any) -> CPULibrary:
        """Load a native ``CompileResult``: its ``obj`` artifact, or object code emitted from its module."""
        target = result.job.target
        if not isinstance(target, NativeTarget):
            raise ConfigError(f"CPULibrary loads code for the native target, not {target.name!r}; "
                              "compile with target='native'")
        obj = result.artifacts.get("obj")
        if obj is None:
            obj = target.emit(result.job, result.module, "obj")
        assert isinstance(obj, bytes), "object code is bytes"
        text = result.artifacts.get("llvm")
        return cls(obj, result.module.ref, address_bindings(text if isinstance(text, str) else result.module.text))

    @classmethod
    def from_cached(cls, result: Any) -> CPULibrary:
        """Load a cache result: with the entry's symbol table (``meta.symbols``) when it has one,
        so a hit needs no parse of its IR."""
        symbols = result.meta.get("symbols")
        obj = result.artifacts.get("obj")
        if symbols and isinstance(obj, bytes):
            return cls(obj, SymbolTable(symbols), result.meta.get("addresses"))
        return cls.from_result(result)

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
        fn._gpuc_library = self  # pyright: ignore[reportAttributeAccessIssue]  (keeps the JIT dylib alive)
        return fn


class _Symbol:
    __slots__ = ("name", "is_declaration", "linkage")

    def __init__(self, name, is_declaration, linkage):
        self.name, self.is_declaration = name, is_declaration
        self.linkage = SimpleNamespace(name=linkage)


class SymbolTable:
    """The symbols of a cached module (its entry's ``symbols``), standing in for its parsed IR
    when the object code is loaded: a cache hit needs no parse of the IR text."""

    def __init__(self, rows):
        self.functions = [_Symbol(*row) for row in rows]
        self.global_variables = ()

    def declares(self, name: str) -> bool:
        return any(f.name == name and f.is_declaration for f in self.functions)


threadpool.install(CPULibrary.from_ir)  # the first parallel region compiles the process's worker pool with it
