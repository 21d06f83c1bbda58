# llvmlite ships no type information: its members are untyped
# pyright: reportUnknownMemberType=false, reportUnknownArgumentType=false, reportMissingTypeStubs=false
"""glibc's libmvec: the SIMD versions of the math functions the native target's loops call.

``_ZGV<isa>N<lanes><v per argument>_<libm name>`` (the x86-64 vector function
ABI): ``b`` SSE (2 doubles, 4 floats), ``c`` AVX and ``d`` AVX2 (4 and 8),
``e`` AVX-512 (8 and 16). For each width the widest ISA the target's features
have is offered; the vectorizer picks the width. Every function of the math
table (:data:`gpucompiler.core.mathfns.MATH_FUNCTIONS`) is looked up by that
name in the library, by its C name (``sin``, ``sinf``) and its LLVM intrinsic
(``llvm.sin.f64``): what the library lacks stays scalar. glibc documents at
most 4 ulp of error for these (docs/benchmarks.md, "Vector math").

The library is loaded into the process once (``load_library_permanently``), so
the JIT and the in-process loader resolve the names; a process without it
(musl, another OS) gets no variants and scalar code.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..llvm.vector_variants import VectorVariant

# The math table and the variants' module load with the first compile that asks (scalar_names, variants):
# a cache hit asks only which library is loaded (the key's machine), ~2 ms of imports less.

SONAME = "libmvec.so.1"
PREFIX = "_ZGV"
"""what the vector function ABI's names start with"""
KEEPER = "gpuc.libmvec"
"""the constant keeping the versions a module's calls name declared until the vectorizer has run"""

#: (ISA letter, doubles per vector, the target feature it needs), widest first for each width
_ISAS = (("e", 8, "avx512f"), ("d", 4, "avx2"), ("c", 4, "avx"), ("b", 2, "sse2"))


@functools.cache
def loaded() -> str | None:
    """The glibc version whose libmvec this process loaded (``"glibc 2.36"``), or None where there is none."""
    import llvmlite.binding as llvm  # import time: llvmlite's library (~20 ms), not on a cache hit

    try:
        llvm.load_library_permanently(SONAME)
    except RuntimeError:  # llvmlite reports a failed dlopen so
        return None
    confstr = getattr(os, "confstr", None)
    try:
        version = confstr("CS_GNU_LIBC_VERSION") if confstr is not None else None
    except (OSError, ValueError):
        version = None
    return version or "glibc"


def isas(features: str) -> tuple[tuple[str, int], ...]:
    """``(letter, doubles per vector)`` the feature string (``+avx2,-avx512f,...``) allows, one per width."""
    have = {f[1:] for f in features.split(",") if f.startswith("+")}
    out: dict[int, str] = {}
    for letter, lanes, feature in _ISAS:
        if feature in have and lanes not in out:
            out[lanes] = letter
    return tuple((letter, lanes) for lanes, letter in sorted(out.items()))


@functools.cache
def scalar_names() -> frozenset[str]:
    """Every name a call of a math function of the table may use (``sin``, ``sinf``, ``llvm.sin.f64``...):
    a module naming none has nothing to vectorize (a test without looking up a symbol)."""
    from ..core.mathfns import MATH_FUNCTIONS

    return frozenset(name for fn in MATH_FUNCTIONS for float32, suffix in ((False, "f64"), (True, "f32"))
                     for name in (fn.name(float32), f"{fn.intrinsic}.{suffix}" if fn.intrinsic else ""))


@functools.cache
def variants(features: str) -> dict[str, tuple[VectorVariant, ...]]:
    """Scalar call name -> its libmvec versions for code with ``features``; empty without libmvec."""
    if loaded() is None:
        return {}
    import llvmlite.binding as llvm
    from ..core.mathfns import MATH_FUNCTIONS
    from ..llvm.vector_variants import VectorVariant

    out: dict[str, tuple[VectorVariant, ...]] = {}
    for fn in MATH_FUNCTIONS:
        for float32, element, suffix in ((False, "double", "f64"), (True, "float", "f32")):
            found = []
            for letter, lanes in isas(features):
                lanes *= 2 if float32 else 1
                symbol = f"{PREFIX}{letter}N{lanes}{'v' * fn.arity}_{fn.name(float32)}"
                if llvm.address_of_symbol(symbol) is not None:
                    found.append((symbol, lanes))
            scalars = [fn.name(float32)] + ([f"{fn.intrinsic}.{suffix}"] if fn.intrinsic else [])
            for scalar in scalars:
                if found:
                    out[scalar] = tuple(VectorVariant(scalar, symbol, lanes, fn.arity, element)
                                        for symbol, lanes in found)
    return out


__all__ = ["KEEPER", "PREFIX", "SONAME", "isas", "loaded", "scalar_names", "variants"]
