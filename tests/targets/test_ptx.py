"""The PTX target: ptxas accepts what it emits; kernels, libdevice, fast math, validation."""

from __future__ import annotations

import re

import pytest

from gpucompiler.core import CompilerConfig, CompilerJob, LLVMSource
from gpucompiler.errors import ConfigError, InvalidIRError, ToolchainError, ToolNotFoundError
from gpucompiler.llvm.binding import parse_ir
from gpucompiler.pipeline import compile
from gpucompiler.targets import NativeTarget, PTXTarget
from gpucompiler.targets.ptx import LLVM_PTX_VERSIONS, MIN_PTX_VERSION

SAXPY = """
define void @saxpy(float %a, ptr %x, ptr %y) {
  %i = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %px = getelementptr float, ptr %x, i32 %i
  %py = getelementptr float, ptr %y, i32 %i
  %vx = load float, ptr %px
  %vy = load float, ptr %py
  %m = fmul float %a, %vx
  %s = fadd float %m, %vy
  %q = call float @helper(float %s)
  store float %q, ptr %py
  ret void
}
define float @helper(float %v) noinline {
  %d = fdiv float %v, 3.0
  ret float %d
}
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
"""

MATH = """
declare float @__nv_sinf(float)
declare double @__nv_exp(double)
define void @k(ptr %f, ptr %d) {
  %v = load float, ptr %f
  %s = call float @__nv_sinf(float %v)
  store float %s, ptr %f
  %w = load double, ptr %d
  %e = call double @__nv_exp(double %w)
  store double %e, ptr %d
  ret void
}
"""


def _ptx(ir, entry="saxpy", emit=("asm",), kernel=True, **target):
    job = CompilerJob(LLVMSource(ir, entry), CompilerConfig(target=PTXTarget(**target), kernel=kernel))
    return compile(job, emit)


def _defined_funcs(ptx: str) -> list[str]:
    return re.findall(r"^\.(?:visible |weak )?\.func\s+(?:\([^)]*\)\s*)?(\w+)\(", ptx, re.M)


@pytest.mark.parametrize("cap, version", [((8, 0), "7.0"), ((9, 0), "7.8")])
def test_kernel_and_device_function_accepted_by_ptxas(cap, version, check_ptx):
    ptx = _ptx(SAXPY, capability=cap).artifacts["asm"]
    assert re.search(rf"^\.version {re.escape(version)}$", ptx, re.M)
    assert re.search(rf"^\.target sm_{cap[0]}{cap[1]}$", ptx, re.M)
    assert re.search(r"^\.visible \.entry saxpy\(", ptx, re.M)
    assert _defined_funcs(ptx) == ["helper"]
    check_ptx(ptx, arch=f"sm_{cap[0]}{cap[1]}")


def test_device_function_is_not_a_kernel(check_ptx):
    ptx = _ptx(SAXPY, kernel=False).artifacts["asm"]
    assert ".entry" not in ptx
    assert sorted(_defined_funcs(ptx)) == ["helper", "saxpy"]
    check_ptx(ptx)


def test_kernel_uses_the_ptx_kernel_calling_convention():
    ir = _ptx(SAXPY, emit=("llvm",)).artifacts["llvm"]
    ref = parse_ir(ir)
    assert ref.triple == "nvptx64-nvidia-cuda"
    assert re.search(r"^define ptx_kernel void @saxpy\(", ir, re.M)
    assert not re.search(r"^define .*ptx_kernel.*@helper", ir, re.M)


def test_libdevice_linked_only_when_used(libdevice_path, check_ptx):
    plain = _ptx(SAXPY).artifacts["asm"]
    result = _ptx(MATH, entry="k", emit=("asm", "llvm"))
    ptx, llvm_text = result.artifacts["asm"], result.artifacts["llvm"]
    ref = parse_ir(llvm_text)
    names = {f.name for f in ref.functions if not f.is_declaration}
    assert names == {"k"}, "libdevice code is inlined and nothing else of it remains"
    assert not any(f.name == "__nvvm_reflect" for f in ref.functions)
    assert "__nv_" not in plain and "__nv_" not in ptx
    assert _defined_funcs(ptx) == []
    assert len(ptx) < 40_000  # the whole of libdevice would be megabytes of PTX
    assert "ex2.approx" in ptx or "fma.rn.f64" in ptx  # exp's polynomial was linked
    check_ptx(ptx)


def test_fastmath_and_maxregs(libdevice_path, check_ptx):
    precise = _ptx(SAXPY, kernel=True).artifacts["asm"]
    fast = _ptx(SAXPY, kernel=True, fastmath=True, maxregs=32).artifacts["asm"]
    assert "div.rn.f32" in precise and ".ftz" not in precise
    assert "mul.ftz.f32" in fast and "0f3EAAAAAB" in fast  # fast: v / 3 becomes v * (1/3)
    assert re.search(r"^\.maxnreg 32$", fast, re.M)
    check_ptx(fast)
    sin_fast = _ptx(MATH, entry="k", fastmath=True, emit=("llvm", "asm")).artifacts
    assert '!"nvvm-reflect-ftz", i32 1' in sin_fast["llvm"]
    assert ".ftz.f32" in sin_fast["asm"]


def test_ptx_version_defaults_are_known_to_llvm():
    for cap, version in MIN_PTX_VERSION.items():
        assert version in LLVM_PTX_VERSIONS
        assert PTXTarget(capability=cap).isa_version() == version
    assert PTXTarget(ptx_version=86).isa_version() == 86
    with pytest.raises(ConfigError, match="does not know PTX ISA version 99"):
        PTXTarget(ptx_version=99).isa_version()
    with pytest.raises(ConfigError, match="ptx_version"):
        PTXTarget(capability=(4, 2)).isa_version()
    with pytest.raises(ConfigError, match="70 does not support sm_90"):
        PTXTarget(ptx_version=70).isa_version()


def test_every_llvm_ptx_version_is_emitted_as_asked():
    for version in (78, 80, 86, 88, 90):
        ptx = _ptx(SAXPY, ptx_version=version).artifacts["asm"]
        assert f".version {version // 10}.{version % 10}\n" in ptx


def test_validation_collects_every_kind_at_once():
    ir = """
declare void @host_only(ptr)
declare ptr @malloc(i64)
declare void @free(ptr)
define void @k(i64 %n) {
  %buf = call ptr @malloc(i64 %n)
  call void @host_only(ptr %buf)
  call void @free(ptr %buf)
  %a = alloca i8, i64 %n
  call void @host_only(ptr %a)
  call void @host_only(ptr inttoptr (i64 4096 to ptr))
  call void @ping(i64 %n)
  ret void
}
define void @ping(i64 %n) noinline {
  %m = sub i64 %n, 1
  call void @pong(i64 %m)
  ret void
}
define void @pong(i64 %n) noinline {
  call void @ping(i64 %n)
  ret void
}
"""
    with pytest.raises(InvalidIRError) as info:
        _ptx(ir, entry="k", emit=("llvm",), kernel=True)
    errors = info.value.errors
    kinds = sorted({kind for kind, _ in errors})
    assert kinds == ["DYNAMIC_ALLOCATION", "POINTER_CONSTANT", "RECURSION", "UNKNOWN_FUNCTION"]
    messages = "\n".join(msg for _, msg in errors)
    assert "@host_only" in messages and "@ping" in messages and "@pong" in messages
    assert "@malloc" in messages and "@free" in messages and "alloca" in messages


def test_missing_libdevice_is_a_clear_error(monkeypatch, tmp_path):
    from gpucompiler.targets import libdevice
    from gpucompiler import toolchain

    monkeypatch.setenv("GPUC_LIBDEVICE", str(tmp_path / "nope.bc"))
    for fn in (toolchain.find_libdevice, libdevice._bitcode, libdevice.libdevice_functions):
        fn.cache_clear()
    try:
        with pytest.raises(ToolNotFoundError, match=r"__nv_sinf.*GPUC_LIBDEVICE"):
            _ptx(MATH, entry="k")
        assert "__nv_" not in _ptx(SAXPY).artifacts["asm"]  # modules without __nv_ calls still compile
    finally:
        monkeypatch.delenv("GPUC_LIBDEVICE")
        for fn in (toolchain.find_libdevice, libdevice._bitcode, libdevice.libdevice_functions):
            fn.cache_clear()


def test_a_first_gpu_compile_parses_libdevice_once(monkeypatch):
    """Its function names and the pruned copy of the functions the module calls come from one parse."""
    from gpucompiler.targets import libdevice

    whole, real = [], libdevice.llvm.parse_bitcode

    def counting(data):
        if data is libdevice._bitcode():
            whole.append(len(data))
        return real(data)

    for fn in (libdevice.libdevice_functions, libdevice._pruned):
        fn.cache_clear()
    libdevice._SPARE.clear()
    monkeypatch.setattr(libdevice.llvm, "parse_bitcode", counting)
    ptx = _ptx(MATH, entry="k").artifacts["asm"]
    assert "__nv_sinf" not in ptx and len(whole) == 1 and not libdevice._SPARE
    _ptx(MATH.replace("__nv_exp", "__nv_log"), entry="k")  # another set of functions: the library parsed again
    assert len(whole) == 2


def test_a_first_gpu_compile_lists_libdevices_values_once(monkeypatch):
    """Its function names and its pruning read one listing of what the parse defines (each name a call into
    LLVM: listing the 580 values twice cost ~2.5 ms of a cold kernel's compile); the pruned copy still keeps
    exactly the functions the module calls, the rest internal and dropped."""
    from gpucompiler.targets import libdevice

    libraries, listed = [], []
    real_parse, real_functions = libdevice.llvm.parse_bitcode, libdevice.llvm.ModuleRef.functions.fget
    assert real_functions is not None

    def parse(data):
        module = real_parse(data)
        if data is libdevice._bitcode():
            libraries.append(module)
        return module

    def functions(module):
        if any(module is lib for lib in libraries):
            listed.append(module)
        return real_functions(module)

    libdevice._wait()
    for fn in (libdevice.libdevice_functions, libdevice._pruned):
        fn.cache_clear()
    libdevice._SPARE.clear()
    monkeypatch.setattr(libdevice.llvm, "parse_bitcode", parse)
    monkeypatch.setattr(libdevice.llvm.ModuleRef, "functions", property(functions))
    ptx = _ptx(MATH, entry="k").artifacts["asm"]
    assert isinstance(ptx, str) and len(libraries) == 1 and len(listed) == 1
    names = frozenset({"__nv_sinf", "__nv_exp"})
    pruned = real_parse(libdevice._pruned(names, "nvptx64-nvidia-cuda", ""))
    defined = [f for f in real_functions(pruned) if not f.is_declaration]
    assert {f.name for f in defined if f.linkage != libdevice.llvm.Linkage.internal} == names
    assert len(defined) < 20  # the rest dropped


def test_finish_never_parses_libdevice_into_the_python_model(monkeypatch, libdevice_path, check_ptx):
    """The model passes of ``finish`` run before libdevice is linked: no model the compile parses holds a
    libdevice function's body (fast-math alone marks them, so its modules do), and the PTX is complete."""
    from gpucompiler import module as holder

    parsed, real = [], holder.ir_model.parse
    monkeypatch.setattr(holder.ir_model, "parse", lambda text: parsed.append(text) or real(text))
    ptx = _ptx(MATH, entry="k").artifacts["asm"]
    assert isinstance(ptx, str) and parsed and not [t for t in parsed if re.search(r"^define .*@__nv_", t, re.M)]
    assert "__nv_" not in ptx and "sin.approx" not in ptx
    check_ptx(ptx)
    parsed.clear()
    _ptx(MATH, entry="k", fastmath=True)
    assert [t for t in parsed if re.search(r"^define .*@__nv_sinf", t, re.M)]


def test_naming_a_libdevice_function_parses_the_library_on_a_thread(monkeypatch, libdevice_path):
    """The code generator's first ``__nv_*`` name starts libdevice's parse; the compile that links it
    then finds the parse made and parses the whole library no more."""
    from gpucompiler.core.mathfns import math_function
    from gpucompiler.targets import libdevice

    libdevice._wait()
    for fn in (libdevice.libdevice_functions, libdevice._pruned):
        fn.cache_clear()
    libdevice._SPARE.clear()
    monkeypatch.setattr(libdevice, "_pending", [])
    sin, cos = math_function("sin"), math_function("cos")
    assert sin is not None and cos is not None
    assert libdevice.libdevice_name(sin, False) == "__nv_sin"
    assert len(libdevice._pending) == 1
    libdevice._wait()  # (what the compile's own parse does first)
    assert len(libdevice._SPARE) == 1
    whole, real = [], libdevice.llvm.parse_bitcode
    monkeypatch.setattr(libdevice.llvm, "parse_bitcode",
                        lambda data: whole.append(len(data)) or real(data))
    assert "__nv_sin" in libdevice.libdevice_functions() and whole == []
    ptx = _ptx(MATH, entry="k").artifacts["asm"]
    assert isinstance(ptx, str) and "__nv_exp" not in ptx and len(whole) == 1  # the pruned copy only
    libdevice.libdevice_name(cos, False)  # once per process
    assert len(libdevice._pending) == 1


def test_the_threads_parse_leaves_llvmlites_lock_free(libdevice_path):
    """libdevice's parse on the thread takes its own context and not llvmlite's lock: the compile's LLVM
    calls go on meanwhile; bad bitcode is a RuntimeError, as llvmlite's own parse raises."""
    import threading
    import time

    import llvmlite.binding as llvm

    from gpucompiler.llvm.binding import parse_bitcode_apart
    from gpucompiler.targets import libdevice

    got = []
    thread = threading.Thread(target=lambda: got.append(parse_bitcode_apart(libdevice._bitcode())))
    lock = llvm.ffi.lib._lock._lock
    free = []
    thread.start()
    while thread.is_alive():
        took = lock.acquire(blocking=False)
        free.append(took)
        if took:
            lock.release()
        time.sleep(0.0002)  # (the GIL for the thread: it holds the lock while it waits for it)
    thread.join()
    # held only to make and free its context (llvmlite's own parse holds it throughout: nearly every sample)
    assert len(free) >= 5 and free.count(False) <= len(free) // 2, free
    assert "__nv_sin" in {f.name for f in got[0].functions if not f.is_declaration}
    with pytest.raises(RuntimeError, match="bitcode"):
        parse_bitcode_apart(b"BC\xc0\xde not bitcode")


def _fresh_libdevice(monkeypatch):
    """libdevice's state as in a new process: no parse, no thread started, nothing pruned."""
    from gpucompiler.targets import libdevice

    libdevice._wait()
    for fn in (libdevice.libdevice_functions, libdevice._pruned):
        fn.cache_clear()
    libdevice._SPARE.clear()
    monkeypatch.setattr(libdevice, "_pending", [])
    monkeypatch.setattr(libdevice, "_pending_ahead", [])
    return libdevice


def _ad_kernel_outputs(kernel_fn, nargs=2, **options):
    from gpucompiler import kernel
    from gpucompiler import types as T
    from gpucompiler.pipeline import compile as run

    a = T.ArrayType(T.float64, 1, "C")
    job = kernel(kernel_fn, plugins=("enzyme",), **options).job((a,) * nargs, PTXTarget())
    out = run(job, ("asm", "llvm")).artifacts
    asm, llvm_ir = out["asm"], out["llvm"]
    assert isinstance(asm, str) and isinstance(llvm_ir, str)
    return re.sub(r"callseq \d+", "callseq", asm), llvm_ir  # (NVPTX numbers the calls of the whole process)


@pytest.mark.parametrize("name, nargs, fastmath", [("elem_grad", 2, False), ("nbody_grad", 6, True),
                                                   ("sten_grad", 2, False), ("elem_primal", 2, False)])
def test_libdevice_pruned_ahead_on_a_thread_links_what_pruning_at_the_link_does(monkeypatch, libdevice_path,
                                                                                 name, nargs, fastmath):
    """Before the last optimisation the target names what ``finish`` will link, and a thread drops the rest
    of the library's parse (global DCE of ~570 functions, ~6 ms) meanwhile: the link takes that pruned parse
    (the whole library is parsed once, on the prefetch's thread), and the PTX and the final LLVM IR are
    those of a compile that prunes at the link."""
    import os
    import sys

    from gpucompiler.targets import ptx_codegen

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
    import ad_kernels  # pyright: ignore[reportMissingImports]

    fn = getattr(ad_kernels, name)
    libdevice = _fresh_libdevice(monkeypatch)
    taken, real_parsed = [], libdevice._parsed

    def parsed(names=None):
        if names is not None:  # the link's pruning: which parse it finds
            libdevice._wait()
            taken.append([spare.covers for spare in libdevice._SPARE])
        return real_parsed(names)

    whole, real_parse = [], libdevice.llvm.parse_bitcode
    monkeypatch.setattr(libdevice, "_parsed", parsed)
    monkeypatch.setattr(libdevice.llvm, "parse_bitcode",
                        lambda data: (whole.append(data) if data is libdevice._bitcode() else None) or real_parse(data))
    libdevice.prefetch()
    libdevice._wait()  # (the parse over before the last optimisation, as in a compile behind a cold key)
    ahead = _ad_kernel_outputs(fn, nargs, fastmath=fastmath)
    assert len(libdevice._pending_ahead) == 1 and whole == []
    assert len(taken) == 1 and len(taken[0]) == 1 and taken[0][0]  # the pruned parse, not the whole library
    assert {n for n in taken[0][0] if n.startswith("__nv_")} == set(taken[0][0])
    libdevice = _fresh_libdevice(monkeypatch)
    monkeypatch.setattr(ptx_codegen, "prune_ahead", lambda names: None)
    libdevice.prefetch()
    libdevice._wait()
    at_link = _ad_kernel_outputs(fn, nargs, fastmath=fastmath)
    assert libdevice._pending_ahead == []
    assert ahead == at_link


def test_a_parse_pruned_ahead_serves_a_subset_and_not_other_functions(monkeypatch, libdevice_path):
    """The link that needs fewer functions than were pruned ahead prunes that parse further (the same module
    as the whole library pruned to them); one that needs another function parses the library again."""
    from gpucompiler.llvm.binding import parse_bitcode_apart

    triple, layout = "nvptx64-nvidia-cuda", "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
    direct = {}
    for names in (frozenset({"__nv_sin"}), frozenset({"__nv_tanh"})):
        libdevice = _fresh_libdevice(monkeypatch)
        libdevice.prefetch()  # (a parse of its own context: the struct types keep their names)
        direct[names] = str(parse_bitcode_apart(libdevice._pruned(names, triple, layout)))
    libdevice = _fresh_libdevice(monkeypatch)
    libdevice.prefetch()
    libdevice._wait()
    libdevice.prune_ahead(["__nv_sin", "__nv_cos", "__nv_exp", "sin", "__nv_no_such_function"])
    libdevice._wait()
    assert [spare.covers for spare in libdevice._SPARE] == [frozenset({"__nv_sin", "__nv_cos", "__nv_exp"})]
    whole, real_parse = [], libdevice.llvm.parse_bitcode
    monkeypatch.setattr(libdevice.llvm, "parse_bitcode",
                        lambda data: (whole.append(data) if data is libdevice._bitcode() else None) or real_parse(data))
    sin = libdevice._pruned(frozenset({"__nv_sin"}), triple, layout)
    assert whole == [] and libdevice._SPARE == []
    assert str(parse_bitcode_apart(sin)) == direct[frozenset({"__nv_sin"})]
    tanh = libdevice._pruned(frozenset({"__nv_tanh"}), triple, layout)  # parsed into the global context
    assert len(whole) == 1 and re.sub(r"(%struct\.\w+?)(?:\.\d+)+\b", r"\1", str(parse_bitcode_apart(tanh))) == \
        direct[frozenset({"__nv_tanh"})]


def test_the_prefetch_returns_once_its_thread_runs(monkeypatch, libdevice_path):
    """The parse's thread has read the library when ``prefetch`` returns (a new thread waits for Python's lock
    while the compile runs, up to the interpreter's switch interval, before its parse can start)."""
    import _thread

    libdevice = _fresh_libdevice(monkeypatch)
    real, read = libdevice._bitcode, []
    monkeypatch.setattr(libdevice, "_bitcode", lambda: read.append(_thread.get_ident()) or real())
    libdevice.prefetch()
    assert read and read[0] != _thread.get_ident()
    libdevice._wait()
    assert len(libdevice._SPARE) == 1 and libdevice._SPARE[0].apart


def test_no_pruning_ahead_while_libdevice_is_still_parsed(monkeypatch, libdevice_path):
    """A parse not over by the last optimisation is left to the link: the compile does not wait for it there
    (its passes until the link would no longer overlap the parse), and starts no thread."""
    import _thread
    import time

    libdevice = _fresh_libdevice(monkeypatch)
    parsing = _thread.allocate_lock()
    parsing.acquire()  # a prefetch thread still inside LLVM
    monkeypatch.setattr(libdevice, "_pending", [parsing])
    start = time.perf_counter()
    libdevice.prune_ahead(["__nv_sin"])
    assert time.perf_counter() - start < 0.05 and libdevice._pending_ahead == [] and libdevice._SPARE == []
    parsing.release()


def test_a_parse_of_the_global_context_is_never_pruned_on_a_thread(monkeypatch, libdevice_path):
    """The thread's pass takes no lock, which only a parse of an LLVM context of its own allows: a library the
    compile parsed itself (the prefetch's parse failed, or none was made) stays for the link to prune."""
    import _thread

    libdevice = _fresh_libdevice(monkeypatch)
    over = _thread.allocate_lock()  # a prefetch thread that finished without a parse
    monkeypatch.setattr(libdevice, "_pending", [over])
    assert "__nv_sin" in libdevice.libdevice_functions()
    assert [(spare.covers, spare.apart) for spare in libdevice._SPARE] == [(None, False)]
    libdevice.prune_ahead(["__nv_sin"])
    assert libdevice._pending_ahead == [] and [spare.covers for spare in libdevice._SPARE] == [None]


def test_inferring_a_kernels_math_starts_libdevices_parse(monkeypatch, libdevice_path):
    """Where a core is free for it, the math overlay's result types start the parse (a cold compile infers its
    kernel for the key, before the lookup and the IR generation), not only the code generator's first
    ``__nv_*`` name; other calls do not."""
    import math

    from gpucompiler import device as gd
    from gpucompiler import kernel
    from gpucompiler import types as T
    from gpucompiler.targets import ptx_overlays

    def with_exp(x, out):
        i = gd.grid(1)
        out[i] = math.exp(x[i])

    def with_log(x, out):
        i = gd.grid(1)
        out[i] = math.log(x[i])

    def without(x, out):
        i = gd.grid(1)
        out[i] = x[i] * 2.0

    started = []
    monkeypatch.setattr(ptx_overlays, "prefetch", lambda: started.append(1))
    a = T.ArrayType(T.float64, 1, "C")
    monkeypatch.setattr(ptx_overlays, "_core_to_spare", lambda: False)  # no free core: the code generator starts it
    kernel(with_log).job((a, a), PTXTarget()).source_fingerprint()
    assert started == []
    monkeypatch.setattr(ptx_overlays, "_core_to_spare", lambda: True)
    kernel(without).job((a, a), PTXTarget()).source_fingerprint()
    assert started == []
    kernel(with_exp).job((a, a), PTXTarget()).source_fingerprint()
    assert started


@pytest.mark.parametrize("load, cores, free", [(0.9, 2, True), (1.2, 2, False), (3.0, 2, False), (1.2, 16, True),
                                               (15.5, 16, False)])
def test_a_core_is_to_spare_where_the_load_leaves_one_beside_the_compiles(monkeypatch, load, cores, free):
    from gpucompiler.targets import ptx_overlays

    monkeypatch.setattr(ptx_overlays.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(ptx_overlays.os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    ptx_overlays._core_to_spare.cache_clear()
    try:
        assert ptx_overlays._core_to_spare() is free
        ptx_overlays._core_to_spare.cache_clear()

        def unknown():
            raise OSError("no load average")

        monkeypatch.setattr(ptx_overlays.os, "getloadavg", unknown)
        assert ptx_overlays._core_to_spare() is False
    finally:
        ptx_overlays._core_to_spare.cache_clear()


def test_a_cold_gpu_compile_with_autodiff_imports_no_subprocess_nor_the_inttoptr_pass(tmp_path, libdevice_path):
    """A kernel with ``autodiff`` and math compiled to PTX in a fresh process (an empty cache) loads neither
    ``subprocess`` (only ``ptxas``'s check runs it: ~3 ms with ``signal``, ``selectors``, ``locale``) nor the
    Enzyme plugin's inttoptr pass (``ctypes.util``: only modules that call a constant address need it)."""
    import json
    import os
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent("""
        import json, math, sys
        import gpucompiler
        from gpucompiler import device as gd, types as T
        from gpucompiler.targets import PTXTarget
        from enzyme_plugin import Const, Duplicated, Reverse, autodiff

        def f(x, i):
            v = x[i]
            return math.sin(v) * math.exp(v)

        def grad(x, dx):
            i = gd.grid(1)
            if i < x.shape[0]:
                autodiff(Reverse, f, Duplicated(x, dx), Const(i))

        a = T.ArrayType(T.float64, 1, "C")
        ptx = gpucompiler.kernel(grad, plugins=("enzyme",)).compile((a, a), PTXTarget())[0]
        print(json.dumps([".entry grad" in ptx, sorted(m for m in ("subprocess", "ctypes.util",
                          "enzyme_plugin.passes.inttoptr", "enzyme_plugin.plugin") if m in sys.modules)]))
    """))
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GPUC_")}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True,
                         env={**environ, "GPUC_CACHE_DIR": str(tmp_path / "cache")})
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [True, ["enzyme_plugin.plugin"]]


FORK_DURING_PARSE = """
import os, signal, sys
import llvmlite.binding as llvm
from gpucompiler.core.mathfns import math_function
from gpucompiler.targets import libdevice
libdevice.libdevice_name(math_function("sin"), False)  # starts the library's parse on its thread (~25 ms)
pid = os.fork()  # at once: the fork waits for that thread
if pid == 0:
    signal.alarm(30)  # a hung child ends
    parsed = bool(libdevice._SPARE)  # the parse ended before the fork
    llvm.parse_assembly("define i32 @f() { ret i32 1 }")  # LLVM usable in the child
    os._exit(0 if parsed else 4)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_fork_while_libdevice_parses_leaves_the_child_llvm(libdevice_path):
    """A fork waits for the parse's thread: the child finds the parse done and LLVM usable (exit 4: forked
    while the thread was inside LLVM; a hang: the child's llvmlite lock held)."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", FORK_DURING_PARSE], capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr


def test_the_targets_output_check_runs_ptxas_for_its_capability(ptxas_path):
    """``check_output`` is the PTX target's tool: ptxas accepts its PTX and reports an error as a ToolchainError."""
    ptx = _ptx(SAXPY, capability=(8, 0)).artifacts["asm"]
    PTXTarget(capability=(8, 0)).check_output("asm", ptx)
    broken = ptx.replace(".visible .entry", ".visible .entr", 1)
    with pytest.raises(ToolchainError, match="ptxas rejected the PTX for sm_80"):
        PTXTarget(capability=(8, 0)).check_output("asm", broken)
    NativeTarget().check_output("obj", b"")  # the host has no output check: nothing runs


def test_the_data_layout_comes_from_the_machine_a_kernel_s_compile_makes(monkeypatch):
    """A kernel compiles at level 3 by default: the data layout is read from that machine, so asking for it
    makes no second machine (the layout is the same at every level, LLVM's machine at level 2 says)."""
    import llvmlite.binding as llvm

    from gpucompiler.targets.native import cached_target_machine

    made: list[int] = []
    real = llvm.Target.create_target_machine

    def counted(self, *args, **kwargs):
        made.append(kwargs.get("opt", 2))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(llvm.Target, "create_target_machine", counted)
    cached_target_machine.cache_clear()
    target = PTXTarget()
    layout = target.data_layout()
    target.target_machine(3)  # the kernel's optimisation and code generation
    assert made == [3]
    assert layout == str(target.target_machine(2).target_data)
    assert layout.startswith("e-") and "i64:64" in layout
