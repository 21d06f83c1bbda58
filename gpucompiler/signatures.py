"""Signatures for eager compilation: ``@jit("float64(float64[:], int64)")`` as in Numba.

A signature is ``restype(argtypes)`` (the result may be left out:
``"(float64[:], int64)"``). Types are NumPy's scalar names and Numba's short
ones (``bool``/``b1``, ``int8``..``int64``/``i1``..``i8``, ``uint8``..``uint64``/``u1``..``u8``,
``float32``/``f4``, ``float64``/``f8``, ``complex64``/``c8``, ``complex128``/``c16``,
``void`` for no result) and arrays written with one slice per axis:
``float64[:]`` (any layout), ``float64[::1]`` or ``float64[:, ::1]``
(C-contiguous). :class:`Signature` objects built from
:mod:`gpucompiler.types` values are accepted as well.
"""

from __future__ import annotations

import re

import attrs

from . import types as T
from .errors import ConfigError

_SCALARS: dict[str, T.Type] = {
    **T.SCALARS, "boolean": T.boolean, "b1": T.boolean, "i1": T.int8, "i2": T.int16, "i4": T.int32, "i8": T.int64,
    "u1": T.uint8, "u2": T.uint16, "u4": T.uint32, "u8": T.uint64, "int_": T.int64, "intp": T.int64,
    "f4": T.float32, "f8": T.float64, "double": T.float64, "c8": T.complex64, "c16": T.complex128,
    "void": T.none, "none": T.none}
_SIG = re.compile(r"^\s*([\w]*)\s*\((.*)\)\s*$", re.S)
_ARRAY = re.compile(r"^(\w+)\s*\[(.*)\]$", re.S)


@attrs.frozen
class Signature:
    """Argument types and, when given, the result type (``None``: inferred)."""

    args: tuple[T.Type, ...] = attrs.field(converter=tuple)
    restype: T.Type | None = None

    def __str__(self) -> str:
        return f"{self.restype!r}({', '.join(map(repr, self.args))})" if self.restype else \
            f"({', '.join(map(repr, self.args))})"


def _type(text: str, sig: str) -> T.Type:
    text = text.strip()
    m = _ARRAY.match(text)
    if m is None:
        t = _SCALARS.get(text)
        if t is None:
            raise ConfigError(f"unknown type {text!r} in signature {sig!r}; known: "
                              f"{', '.join(sorted(_SCALARS))} and arrays such as float64[:] or float64[:, ::1]")
        return t
    dtype = _SCALARS.get(m.group(1))
    if not isinstance(dtype, T.Scalar):
        raise ConfigError(f"unknown array dtype {m.group(1)!r} in signature {sig!r}")
    axes = [a.replace(" ", "") for a in m.group(2).split(",")]
    if not all(a in (":", "::1") for a in axes):
        raise ConfigError(f"array type {text!r} in signature {sig!r}: write one ':' per axis, '::1' on the last "
                          "for a C-contiguous array")
    layout = "C" if axes[-1] == "::1" and all(a == ":" for a in axes[:-1]) else "A"
    return T.ArrayType(dtype, len(axes), layout)


def _split(args: str) -> list[str]:
    """Split at the commas outside brackets."""
    out, depth, cur = [], 0, ""
    for ch in args:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def parse_signature(value: str | Signature) -> Signature:
    """A :class:`Signature` from Numba's text form (or one given as such); a malformed one is a ConfigError."""
    if isinstance(value, Signature):
        return value
    if not isinstance(value, str):
        raise ConfigError(f"a signature is a string such as 'float64(float64[:], int64)' or a "
                          f"gpucompiler.signatures.Signature, got {value!r}")
    m = _SIG.match(value)
    if m is None:
        raise ConfigError(f"malformed signature {value!r}: write 'restype(argtype, ...)', e.g. "
                          "'float64(float64[:], int64)'")
    restype = _type(m.group(1), value) if m.group(1) else None
    return Signature(tuple(_type(a, value) for a in _split(m.group(2))), restype)


def accepts(param: T.Type, arg: T.Type) -> bool:
    """Whether an argument of type ``arg`` may be passed where the signature says ``param`` (Numba's
    safe conversions: bool to int, int to float, int32 to int64, float32 to float64; any array to a
    layout-``A`` array of its dtype and rank)."""
    if param == arg:
        return True
    if isinstance(param, T.ArrayType) and isinstance(arg, T.ArrayType):
        return (param.dtype == arg.dtype and param.ndim == arg.ndim and param.layout == "A"
                and (param.readonly or not arg.readonly))
    if isinstance(param, T.Scalar) and isinstance(arg, T.Scalar):
        return T.promote(arg, param) == param  # NumPy's safe casts: promotion lands on the parameter type
    return False


__all__ = ["Signature", "accepts", "parse_signature"]
