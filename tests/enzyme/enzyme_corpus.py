"""The C test corpus as data: which programs exist, how each is compiled, and
the math rules (one module per rule).

Read by ``regen_fixtures.py`` (to compile) and by the tests (to know what each
fixture holds). Pure data: no imports beyond the standard library.
"""

from __future__ import annotations

import math

#: optimisation levels of every fixture: name -> clang flags
LEVELS = {"O0": ["-O0", "-Xclang", "-disable-O0-optnone"], "O2": ["-O2"]}

#: program -> (source file in c/, extra clang flags)
PROGRAMS: dict[str, tuple[str, list[str]]] = {
    "arrays": ("arrays.c", []),
    "realloc": ("realloc.c", []),
    "control": ("control.c", []),
    "calls": ("calls.c", []),
    "activity": ("activity.c", []),
    "structret": ("structret.c", []),
    "custom": ("custom.c", []),
    "custom_float": ("custom_float.c", []),
    "function_like": ("function_like.c", []),
    "split": ("split.c", []),
    "globals": ("globals.c", []),
    "split_ret": ("split_ret.c", []),
    "ptrret": ("ptrret.c", []),
    "libc": ("libc.c", []),
    "intmem": ("intmem.c", []),
    "vec": ("vec.c", ["-ffast-math"]),
    "math_float": ("math_float.c", ["-fno-math-errno"]),
    "bench": ("bench.c", []),
    "loops": ("loops.c", []),
    "nested": ("nested.c", []),  # higher order: differentiated functions call the markers
    "memtypes": ("memtypes.c", []),
    "unsup_asm": ("unsup_asm.c", []),
    "unsup_bits": ("unsup_bits.c", []),
    "unsup_mixcpy": ("unsup_mixcpy.c", []),
    "unsup_intptr": ("unsup_intptr.c", []),
    "unsup_extern": ("unsup_extern.c", []),
    "unsup_rsqrt": ("unsup_rsqrt.c", []),
    "unsup_fnptr_alloc": ("unsup_fnptr_alloc.c", []),
    "unsup_gather": ("unsup_gather.c", ["-O3", "-march=skylake-avx512", "-ffast-math"]),  # after the level's -O
    # with debug info (clang -g: !dbg on declarations too); errors name the source line
    "calls_g": ("calls.c", ["-g"]),
    "custom_g": ("custom.c", ["-g"]),
    "unsup_extern_g": ("unsup_extern.c", ["-g"]),
}


def _d(f):
    """Derivative pair (d/dx, d/dy) of a unary rule: d/dy is 0."""
    return lambda x, y: (f(x), 0.0)


def _floor_like(fn):
    return _d(lambda x: float(fn(4.0 * x)))


#: math rule -> (C expression in x and y, analytic (df/dx, df/dy)).
#: Sample domain: x in [0.3, 0.9], y in [1.1, 1.7].
MATH_OPS: dict[str, tuple[str, object]] = {
    "sqrt": ("sqrt(x)", _d(lambda x: 0.5 / math.sqrt(x))),
    "exp": ("exp(x)", _d(math.exp)),
    "exp2": ("exp2(x)", _d(lambda x: math.log(2.0) * 2.0 ** x)),
    "log": ("log(x)", _d(lambda x: 1.0 / x)),
    "log2": ("log2(x)", _d(lambda x: 1.0 / (x * math.log(2.0)))),
    "log10": ("log10(x)", _d(lambda x: 1.0 / (x * math.log(10.0)))),
    "pow": ("pow(x, y)", lambda x, y: (y * x ** (y - 1.0), math.log(x) * x ** y)),
    "powi": ("__builtin_powi(x, 3) + __builtin_powi(y, -2)", lambda x, y: (3.0 * x * x, -2.0 / y ** 3)),
    "sin": ("sin(x)", _d(math.cos)),
    "cos": ("cos(x)", _d(lambda x: -math.sin(x))),
    "tan": ("tan(x)", _d(lambda x: 1.0 / math.cos(x) ** 2)),
    "asin": ("asin(x)", _d(lambda x: 1.0 / math.sqrt(1.0 - x * x))),
    "acos": ("acos(x)", _d(lambda x: -1.0 / math.sqrt(1.0 - x * x))),
    "atan": ("atan(x)", _d(lambda x: 1.0 / (1.0 + x * x))),
    "atan2": ("atan2(x, y)", lambda x, y: (y / (x * x + y * y), -x / (x * x + y * y))),
    "sinh": ("sinh(x)", _d(math.cosh)),
    "cosh": ("cosh(x)", _d(math.sinh)),
    "tanh": ("tanh(x)", _d(lambda x: 1.0 - math.tanh(x) ** 2)),
    "fabs": ("fabs(x - 0.6) * y", lambda x, y: (math.copysign(y, x - 0.6), abs(x - 0.6))),
    "fma": ("fma(x, y, x * x)", lambda x, y: (y + 2.0 * x, x)),
    "fmuladd": ("x * y + y", lambda x, y: (y, x + 1.0)),
    "fmax": ("fmax(x, y - 1.0)", lambda x, y: (1.0, 0.0) if x > y - 1.0 else (0.0, 1.0)),
    "fmin": ("fmin(x, y - 1.0)", lambda x, y: (1.0, 0.0) if x < y - 1.0 else (0.0, 1.0)),
    "copysign": ("copysign(x, y - 1.4)", lambda x, y: (math.copysign(1.0, y - 1.4), 0.0)),
    "floor": ("floor(4.0 * x) * x", lambda x, y: (float(math.floor(4.0 * x)), 0.0)),
    "ceil": ("ceil(4.0 * x) * x", lambda x, y: (float(math.ceil(4.0 * x)), 0.0)),
    "trunc": ("trunc(4.0 * x) * x", lambda x, y: (float(math.trunc(4.0 * x)), 0.0)),
    "round": ("round(4.0 * x) * x", lambda x, y: (float(math.floor(4.0 * x + 0.5)), 0.0)),
    "erf": ("erf(x)", _d(lambda x: 2.0 / math.sqrt(math.pi) * math.exp(-x * x))),
    "cbrt": ("cbrt(x)", _d(lambda x: x ** (-2.0 / 3.0) / 3.0)),
    "hypot": ("hypot(x, y)", lambda x, y: (x / math.hypot(x, y), y / math.hypot(x, y))),
}


def fixture_names() -> list[str]:
    """Every fixture module name (without level and suffix)."""
    return sorted([*PROGRAMS, *(f"math_{op}" for op in MATH_OPS)])
