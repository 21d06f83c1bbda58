"""Math on AMD GPUs: the ROCm device libraries (ocml) when installed, exact LLVM intrinsics otherwise.

The language and the AD engine call math by its C name (``sin``, ``tanf``) or
as an LLVM intrinsic (``llvm.sin.f64``), records of the one math table
(:mod:`gpucompiler.core.mathfns`). On this target such a call becomes ocml's
``__ocml_<name>_f64`` / ``_f32`` when the device libraries are found
(:func:`find_device_libs`). Without them only what the AMDGPU back end lowers
exactly stays (:data:`EXACT`: square root, rounding, ``fabs``, ``copysign``,
``fma``, ``fmin``/``fmax``; for float32 also ``exp``/``exp2``/``exp10``/
``log``/``log2``/``log10``, documented by LLVM within 1 ulp). The rest (float64
``sin``, any ``pow``, ``tan``...) has no lowering here: LLVM aborts the process
on some ("no libcall available for fsin") and approximates others (float32
``sin`` is the hardware's ``v_sin_f32`` without a full argument reduction), so
type inference (:mod:`.lowering`) and validation refuse them by name.

The device libraries' control constants (``__oclc_ISA_version``,
``__oclc_daz_opt``...) are defined here for the architecture instead of
linking the ``oclc_*.bc`` files, which exist only for the architectures a
given ROCm release knows (Debian's 5.2 has no gfx942 nor gfx1100).
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

import llvmlite.binding as llvm

from ...core.mathfns import MathFunction, math_function
from ...errors import ToolNotFoundError
from ...settings import ROCmSettings

OCML = "__ocml_"

#: math the back end lowers exactly, by C name and float width
EXACT = {64: frozenset("sqrt fabs floor ceil trunc round copysign fma fmin fmax".split())}
EXACT[32] = EXACT[64] | frozenset("exp exp2 exp10 log log2 log10".split())
_OCML = re.compile(r"^__ocml_(\w+)_f(32|64)$")


def _width(name: str) -> int:
    if name.startswith("llvm."):
        return 32 if name.endswith(".f32") else 64
    fn = math_function(name)
    return 32 if fn is not None and name == fn.libm + "f" else 64


def ocml_name(fn: MathFunction, bits: int) -> str:
    """ocml's function for ``fn`` on float``bits`` (``__ocml_sin_f64``)."""
    return f"{OCML}{fn.libm}_f{bits}"


def available(fn: MathFunction, bits: int) -> bool:
    """Whether ``fn`` on float``bits`` has a lowering on this machine."""
    if fn.libm in EXACT[bits]:
        return True
    return find_device_libs_or_none() is not None and ocml_name(fn, bits) in ocml_functions()


def device_name(name: str) -> str | None:
    """What the C math name or math intrinsic ``name`` becomes here: ocml's function (libraries found),
    the exact intrinsic for a C name the back end lowers, None to leave it (an exact intrinsic, not
    math, or nothing available: :func:`unlowered` then names it)."""
    fn = math_function(name)
    if fn is None:
        return None
    bits = _width(name)
    if fn.libm in EXACT[bits]:
        return None if name.startswith("llvm.") or fn.intrinsic is None else f"{fn.intrinsic}.f{bits}"
    if find_device_libs_or_none() is not None and ocml_name(fn, bits) in ocml_functions():
        return ocml_name(fn, bits)
    return None


def libm_name(name: str) -> str | None:
    """The C math name of ocml's ``name`` (``__ocml_sin_f32`` -> ``sinf``); None for other names."""
    m = _OCML.match(name)
    fn = math_function(m.group(1)) if m else None
    if m is None or fn is None or fn.libm != m.group(1):
        return None
    return fn.name(m.group(2) == "32")


def unlowered(name: str) -> str | None:
    """Why a call of ``name`` left in a module cannot be lowered (None: it can, or it is not math)."""
    if name.startswith(OCML):
        if find_device_libs_or_none() is not None and name in ocml_functions():
            return None
        return f"@{name} needs the ROCm device libraries, which were not found ({_where_looked()})"
    fn = math_function(name)
    if fn is None:
        return None
    bits = _width(name)
    if name.startswith("llvm.") and fn.libm in EXACT[bits]:
        return None
    return unsupported_message(fn.libm, bits)


def unsupported_message(libm: str, bits: int) -> str:
    """The typed errors' text for math function ``libm`` on float``bits`` without a lowering."""
    return (f"{libm} on float{bits} has no lowering on the amdgpu target without the ROCm device libraries "
            f"(ocml; {_where_looked()}): install them (Debian: rocm-device-libs) or set ROCM_PATH")


def lower_math(model) -> int:
    """Point every math call at :func:`device_name`'s function; returns how many declarations moved."""
    renamed = 0
    for fn in list(model.functions.values()):
        if fn.is_declaration and (new := device_name(fn.name)) is not None:
            rename(model, fn, new)
            renamed += 1
    return renamed


def rename(model, fn, new: str) -> None:
    """Point every use of declaration ``fn`` at one called ``new`` (reused when it exists)."""
    existing = model.functions.get(new)
    if existing is not None:
        fn.replace_all_uses_with(existing)
        model.remove_function(fn)
        return
    fn.name = new
    model.functions = {(f.name if f is fn else k): f for k, f in model.functions.items()}


# -- the device libraries ---------------------------------------------------------------
def find_device_libs(settings: ROCmSettings | None = None) -> Path:
    """The folder holding ``ocml.bc`` (:meth:`ROCmSettings.device_lib_folders` says where it is looked for)."""
    settings = settings or ROCmSettings.from_env()
    for folder in settings.device_lib_folders():
        if (folder / "ocml.bc").is_file():
            return folder
    raise ToolNotFoundError(f"the ROCm device libraries (ocml.bc) were not found; {_where_looked(settings)}")


@functools.cache
def find_device_libs_or_none() -> Path | None:
    """:func:`find_device_libs`, or None where there are none (looked for once per process)."""
    try:
        return find_device_libs()
    except ToolNotFoundError:
        return None


def forget_device_libs() -> None:
    """Look for the device libraries again at their next use (after the environment changed)."""
    for cached in (find_device_libs_or_none, _bitcode, device_libs_digest, ocml_functions, _pruned):
        cached.cache_clear()


def _where_looked(settings: ROCmSettings | None = None) -> str:
    folders = (settings or ROCmSettings.from_env()).device_lib_folders()
    return "looked in " + ", ".join(str(f) for f in folders)


@functools.cache
def _bitcode(name: str) -> bytes:
    return (find_device_libs() / name).read_bytes()


@functools.cache
def device_libs_digest() -> str | None:
    """SHA-256 of the ocml in use (None without one): part of the target's cache keys."""
    return hashlib.sha256(_bitcode("ocml.bc")).hexdigest() if find_device_libs_or_none() is not None else None


@functools.cache
def ocml_functions() -> frozenset[str]:
    """Names of the functions ocml defines."""
    return frozenset(f.name for f in llvm.parse_bitcode(_bitcode("ocml.bc")).functions if not f.is_declaration)


def isa_version(arch: str) -> int:
    """ocml's ``__oclc_ISA_version`` of ``gfxMNS`` (major * 1000 + minor * 100 + stepping, hex digits)."""
    digits = arch[3:]
    return int(digits[:-2]) * 1000 + int(digits[-2], 16) * 100 + int(digits[-1], 16)


def _controls(arch: str, wavefront: int) -> str:
    """The control constants for ``arch``: IEEE denormals, no finite-only or unsafe math, a correctly
    rounded float32 square root."""
    words = {"__oclc_ISA_version": isa_version(arch), "__oclc_ABI_version": 500}
    flags = {"__oclc_daz_opt": 0, "__oclc_finite_only_opt": 0, "__oclc_unsafe_math_opt": 0,
             "__oclc_correctly_rounded_sqrt32": 1, "__oclc_wavefrontsize64": int(wavefront == 64)}
    return "\n".join([*(f"@{k} = addrspace(4) constant i32 {v}" for k, v in words.items()),
                      *(f"@{k} = addrspace(4) constant i8 {v}" for k, v in flags.items())])


@functools.cache
def _pruned(library: str, names: frozenset[str], triple: str, data_layout: str, arch: str, wavefront: int) -> bytes:
    lib = llvm.parse_bitcode(_bitcode(library))
    lib.triple, lib.data_layout = triple, data_layout
    lib.link_in(llvm.parse_assembly(f'target triple = "{triple}"\ntarget datalayout = "{data_layout}"\n'
                                    + _controls(arch, wavefront)))
    for value in (*lib.functions, *lib.global_variables):
        if not value.is_declaration:  # ocml's are linkonce_odr: kept only where asked for
            value.linkage = "external" if value.name in names else "internal"
    pm = llvm.create_new_module_pass_manager()
    pm.add_global_dead_code_eliminate_pass()
    pm.run(lib, llvm.create_pass_builder(None, llvm.create_pipeline_tuning_options(0)))
    return lib.as_bitcode()


def link_device_libs(ref: llvm.ModuleRef, arch: str, wavefront: int) -> list[str]:
    """Link the ocml functions ``ref`` declares into it; returns their names (the caller internalises them)."""
    names = frozenset(f.name for f in ref.functions if f.is_declaration and f.name.startswith(OCML))
    if not names or find_device_libs_or_none() is None:
        return []
    ref.link_in(llvm.parse_bitcode(_pruned("ocml.bc", names, ref.triple, ref.data_layout, arch, wavefront)))
    return sorted(names)
