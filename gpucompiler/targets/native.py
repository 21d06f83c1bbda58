"""The host CPU target: host triple, cpu and features; emits LLVM IR, bitcode, assembly, objects.

llvmlite's binding is imported by the methods that ask LLVM, not with the module: a ``@jit`` function's
cache hit names this target in its key and loads its code without LLVM (:mod:`gpucompiler.runtime.shared_object`,
the host machine from its memo, :mod:`gpucompiler.identity.hostmachine`).
"""

from __future__ import annotations

import ctypes
import functools
from typing import TYPE_CHECKING

import attrs

from ..errors import ConfigError, ErrorKind
from ..core import Target
from ..codegen.entrywords import PYEXC
from . import libmvec

if TYPE_CHECKING:
    import llvmlite.binding as llvm

    from ..core.facts import ModuleFacts

EMIT_KINDS = ("llvm", "bc", "asm", "obj")
SHARED_OBJECT_KIND = "so"
"""The artifact kind of the shared object a native job's cache entry may hold (:mod:`.sharedlink` makes it,
:mod:`gpucompiler.runtime.shared_object` loads it)."""


@functools.cache
def cached_target_machine(triple: str, cpu: str, features: str, opt_level: int,
                          reloc: str = "default", codemodel: str = "default") -> llvm.TargetMachine:
    """One llvmlite ``TargetMachine`` per distinct setting, shared by the whole process.

    Targets are frozen ``attrs`` values, so the cache lives here, keyed by value. The
    caller has initialised LLVM's target for ``triple``.
    """
    import llvmlite.binding as llvm  # import time: llvmlite's library (~20 ms), not on a cache hit

    return llvm.Target.from_triple(triple).create_target_machine(
        cpu=cpu, features=features, opt=opt_level, reloc=reloc, codemodel=codemodel)


def emit_with(machine: llvm.TargetMachine, module, kind: str) -> str | bytes:
    """Emit ``module`` as ``kind`` (see :data:`EMIT_KINDS`) with ``machine``.

    Code generation mutates the IR it runs on, so assembly and objects are made
    from a clone: emitting ``asm`` then ``llvm`` gives the optimised IR, not the
    code generator's leftovers.
    """
    if kind == "llvm":
        return module.text
    if kind == "bc":
        return module.read_ref().as_bitcode()
    if kind == "asm":  # read only: the validated module's print stays kept for its ``llvm`` artifact
        return machine.emit_assembly(module.read_ref().clone())
    if kind == "obj":
        return machine.emit_object(module.read_ref().clone())
    raise ConfigError(f"unknown emit kind {kind!r}; known: {', '.join(EMIT_KINDS)}")


@attrs.frozen
class NativeTarget(Target):
    """The host CPU. Empty ``cpu``/``features`` mean the host's own.

    Code is position independent and uses the JIT's code model (large on
    64-bit hosts), so the same object file serves a linker and the in-process
    loader (:mod:`gpucompiler.runtime.cpu`) wherever the JIT puts it.
    """

    name = "native"

    cpu: str = ""
    features: str = ""

    def triple(self) -> str:
        import llvmlite.binding as llvm

        return llvm.get_process_triple()

    def pinned(self) -> NativeTarget:
        """The host's CPU and features named: another process compiles for this host's CPU, not its own."""
        return attrs.evolve(self, cpu=self.host_cpu(), features=self.host_features())

    def machine(self) -> dict:
        """Triple, CPU and features, and the vector math library loops call (:mod:`.libmvec`)."""
        return {"triple": self.triple(), "cpu": self.host_cpu(), "features": self.host_features(),
                "vector_math": libmvec.loaded()}

    def host_cpu(self) -> str:
        """The CPU name code is generated for."""
        return self.cpu or _host_cpu()

    def host_features(self) -> str:
        """The feature string code is generated with."""
        return self.features or _host_features()

    def target_machine(self, opt_level: int) -> llvm.TargetMachine:
        from ..llvm.binding import initialize_native

        initialize_native()  # the host's target alone: a quarter of initialising them all
        return cached_target_machine(self.triple(), self.host_cpu(), self.host_features(),
                                     opt_level, "pic", "jitdefault")

    def before_optimize(self, job, module, final: bool) -> None:
        """Before the last optimisation: every math call names its libmvec versions for the features
        (a function's own, clang's, or the target's; :mod:`.libmvec`), so that loops calling ``sin``
        vectorize. Not before AD: the engine has derivative rules for scalar math, none for libmvec's."""
        if not final or job.config.opt_level == 0 or libmvec.scalar_names().isdisjoint(module.function_names()):
            return
        host = self.host_features()
        if not libmvec.variants(host):
            return
        # import time: the vector variants' patterns (~1 ms), loaded by a compile, not by a cache hit
        from ..llvm.binding import parse_ir
        from ..llvm.vector_variants import keeper, name_variants

        text, named = name_variants(module.text, lambda own: libmvec.variants(host if own is None else own))
        if named:  # our edit of LLVM's print: parsed unverified, the optimiser's caller verifies what it made
            module.ref = parse_ir(text + keeper(named, libmvec.KEEPER), verify=False)

    def finish(self, job, module) -> None:
        """The libmvec versions :meth:`before_optimize` kept declared are let go: their keeper made internal,
        global DCE drops it and the versions no vectorized call uses (no print and parse of the module)."""
        import llvmlite.binding as llvm

        try:
            keeper = module.ref.get_global_variable(libmvec.KEEPER)
        except NameError:  # no version was named
            return
        keeper.linkage = llvm.Linkage.internal
        mpm = llvm.create_new_module_pass_manager()
        mpm.add_global_dead_code_eliminate_pass()
        mpm.run(module.ref, llvm.create_pass_builder(self.target_machine(job.config.opt_level),
                                                     llvm.create_pipeline_tuning_options()))

    def validate(self, job, module, facts: ModuleFacts) -> list[tuple[str, str]]:
        """Unresolvable external names and constant pointers (see :mod:`.validation`); the job's
        ``loader_symbols`` param names what the code's loader will define."""
        errors = facts.pointer_constant_errors()
        provided = set(job.config.param("loader_symbols", ()))  # the loader defines these names
        for name, users in sorted(facts.external_uses.items()):
            if not name.startswith("llvm.") and name not in provided and process_symbol(name) is None:
                errors.append((ErrorKind.UNKNOWN_FUNCTION,
                               f"@{name} (used in {', '.join('@' + u for u in users)}) is not defined "
                               "in the module nor found among the process's symbols; define it, load "
                               "its library (llvmlite.binding.load_library_permanently) or register "
                               "it with llvmlite.binding.add_symbol"))
        return errors

    def emit(self, job, module, kind: str) -> str | bytes:
        return emit_with(self.target_machine(job.config.opt_level), module, kind)


@functools.cache
def _open_process() -> None:
    # LLVM searches the process's own symbols (libc, libm...) only once the
    # process is "loaded"; the C API's LoadLibraryPermanently(NULL) does that.
    import llvmlite.binding as llvm

    llvm.ffi.lib.LLVMPY_LoadLibraryPermanently(None, None)
    libmvec.loaded()  # the vector math loops compiled for this host call (absent: none do)


def process_symbol(name: str) -> int | None:
    """The address LLVM resolves ``name`` to in this process, or None.

    Names registered with ``llvmlite.binding.add_symbol`` come first, then
    the process and the libraries loaded with ``load_library_permanently``;
    NumPy's BLAS and LAPACK names load NumPy's OpenBLAS first (:mod:`.hostblas`).
    """
    if name.startswith(PYEXC):
        return _cpython_variable("PyExc_" + name[len(PYEXC):])
    import llvmlite.binding as llvm

    _open_process()
    address = llvm.address_of_symbol(name)
    if address is None:
        from . import hostblas  # import time: glob and the BLAS names, for a name LLVM did not find

        if hostblas.provides(name):
            hostblas.load()
            address = llvm.address_of_symbol(name)
    return address


@functools.cache
def _cpython_variable(name: str) -> int | None:
    """The address of CPython's global variable ``name`` (``PyExc_OverflowError``: where the class
    pointer is), asked of the interpreter, not of LLVM's symbol table (which Numba changes)."""
    try:
        return ctypes.addressof(ctypes.c_void_p.in_dll(ctypes.pythonapi, name))
    except ValueError:
        return None


@functools.cache
def _host_cpu() -> str:
    # asked by every target machine's lookup (~50 us each: LLVM reads the CPU's identification again)
    import llvmlite.binding as llvm

    return llvm.get_host_cpu_name()


@functools.cache
def _host_features() -> str:
    # no target initialisation needed (it costs ~1 ms, on the path of every fresh-process cache hit)
    import llvmlite.binding as llvm

    return llvm.get_host_cpu_features().flatten()
