"""The math functions, one record each: the table the language, the ufuncs, the targets and AD read.

Each :class:`MathFunction` says what the function is called in C's libm
(``sin``; ``sinf`` for float32), in Python's ``math`` module and NumPy (where
the language has it), which LLVM intrinsic computes it (where LLVM has one),
how many arguments it takes and which error CPython raises for it. A target's
device library names its functions from the record (libdevice's naming lives
in ``targets/libdevice.py``): nothing else keeps a list of math functions.
"""

from __future__ import annotations

import enum

import attrs


class MathError(enum.Enum):
    """What CPython's ``math`` raises for a function (``math_1``/``math_2`` in mathmodule.c)."""

    NEVER = "never"
    """no argument fails (``fabs``, ``copysign``, ``atan``, ``atan2``)"""
    DOMAIN = "domain"
    """a NaN from non-NaN arguments, or an infinity from finite ones, is a ValueError"""
    RANGE = "range"
    """as DOMAIN, but an infinity from finite arguments is an OverflowError (``exp``, ``cosh``...)"""


@attrs.frozen
class MathFunction:
    """One math function."""

    libm: str
    """C's name for float64 (``sin``); the float32 one adds ``f`` (``sinf``). Rule keys of AD use it."""
    arity: int
    """how many floating-point arguments it takes"""
    intrinsic: str | None = None
    """the LLVM intrinsic computing it (``llvm.sin``; suffixed ``.f64``/``.f32``), None where LLVM has none"""
    python: str | None = None
    """its name in Python's ``math`` module where the language compiles it (None: C code only)"""
    numpy: str | None = None
    """the NumPy ufunc computing it elementwise (None: none, or one with its own rule)"""
    error: MathError = MathError.DOMAIN
    """what CPython raises for it (:class:`MathError`)"""
    rounds: bool = False
    """Python's version returns an int (``floor``, ``ceil``, ``trunc``: exact for ints)"""

    def name(self, float32: bool) -> str:
        """The C library's name for the type: ``sin`` or ``sinf``."""
        return self.libm + "f" if float32 else self.libm


def _f(libm: str, arity: int = 1, intrinsic: bool = False, python: str | None = "", numpy: str | None = "",
       error: MathError = MathError.DOMAIN, rounds: bool = False) -> MathFunction:
    return MathFunction(libm, arity, "llvm." + libm if intrinsic else None,
                        libm if python == "" else python, libm if numpy == "" else numpy, error, rounds)


_R, _N = MathError.RANGE, MathError.NEVER
MATH_FUNCTIONS: tuple[MathFunction, ...] = (
    _f("sin", intrinsic=True), _f("cos", intrinsic=True), _f("tan"),
    _f("asin", numpy="arcsin"), _f("acos", numpy="arccos"), _f("atan", numpy="arctan", error=_N),
    _f("sinh", error=_R), _f("cosh", error=_R), _f("tanh"),
    _f("asinh", numpy="arcsinh"), _f("acosh", numpy="arccosh"), _f("atanh", numpy="arctanh"),
    _f("exp", intrinsic=True, error=_R), _f("exp2", intrinsic=True, error=_R), _f("expm1", error=_R),
    _f("exp10", intrinsic=True, python=None, numpy=None, error=_R),
    _f("log", intrinsic=True), _f("log2", intrinsic=True), _f("log10", intrinsic=True), _f("log1p"),
    _f("sqrt", intrinsic=True), _f("cbrt"), _f("rsqrt", python=None, numpy=None),
    _f("fabs", intrinsic=True, numpy=None, error=_N),
    _f("erf", numpy=None), _f("erfc", numpy=None),
    _f("lgamma", python=None, numpy=None), _f("tgamma", python=None, numpy=None),
    _f("floor", intrinsic=True, numpy=None, error=_N, rounds=True),
    _f("ceil", intrinsic=True, numpy=None, error=_N, rounds=True),
    _f("trunc", intrinsic=True, numpy=None, error=_N, rounds=True),
    _f("round", intrinsic=True, python=None, numpy=None, error=_N),
    _f("atan2", 2, numpy="arctan2", error=_N), _f("hypot", 2, error=_R),
    _f("copysign", 2, intrinsic=True, error=_N), _f("pow", 2, intrinsic=True, numpy=None, error=_R),
    _f("fmod", 2, numpy=None),
    MathFunction("fmin", 2, "llvm.minnum", error=_N), MathFunction("fmax", 2, "llvm.maxnum", error=_N),
    _f("fma", 3, intrinsic=True, python=None, numpy=None, error=_N),
)
"""Every math function the compiler knows, once."""

BY_LIBM: dict[str, MathFunction] = {f.libm: f for f in MATH_FUNCTIONS}
"""The records by C name (``sin``)."""


def math_function(name: str) -> MathFunction | None:
    """The record of a C math name, float32 or float64 (``sin``, ``sinf``), or of an LLVM math intrinsic
    (``llvm.sin.f64``); None for any other name."""
    if name.startswith("llvm."):
        stem, _, suffix = name.rpartition(".")
        if suffix not in ("f32", "f64"):
            return None
        # the record's intrinsic, or one LLVM added since under the C name (llvm.tan)
        return next((f for f in MATH_FUNCTIONS if f.intrinsic == stem), None) or BY_LIBM.get(stem[5:])
    found = BY_LIBM.get(name)
    if found is None and name.endswith("f"):
        found = BY_LIBM.get(name[:-1])
    return found


__all__ = ["BY_LIBM", "MATH_FUNCTIONS", "MathError", "MathFunction", "math_function"]
