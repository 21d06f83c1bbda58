"""Stable encodings of Python values and code: what a job's fingerprint and a deferred job's id hold.

Line numbers are left out (moving a function does not change what it
computes); functions are encoded by qualified name, code digest and
defaults, other objects by qualified name (or type and ``repr``).
"""

from __future__ import annotations

import hashlib
import json
import sys
import types as pytypes
from typing import Any

from ..reference import module_name

_CODE_FP: dict[int, tuple[Any, str]] = {}  # id(code) -> (code, digest); code objects are immutable


def _const(c) -> Any:
    if isinstance(c, pytypes.CodeType):
        return ["code", code_fingerprint(c)]
    if isinstance(c, (tuple, list)):
        return [type(c).__name__, [_const(x) for x in c]]
    if isinstance(c, frozenset):
        return ["frozenset", sorted((_const(x) for x in c), key=json.dumps)]
    return [type(c).__name__, repr(c)]


def code_fingerprint(code: pytypes.CodeType) -> str:
    """SHA-256 of what a code object computes: bytecode, constants, names (line numbers excluded)."""
    hit = _CODE_FP.get(id(code))
    if hit is not None and hit[0] is code:
        return hit[1]
    doc = [sys.implementation.cache_tag, getattr(code, "co_qualname", code.co_name), code.co_argcount,
           code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags, code.co_code.hex(),
           getattr(code, "co_exceptiontable", b"").hex(), [_const(c) for c in code.co_consts],
           list(code.co_names), list(code.co_varnames), list(code.co_freevars), list(code.co_cellvars)]
    digest = hashlib.sha256(json.dumps(doc, separators=(",", ":")).encode()).hexdigest()
    _CODE_FP[id(code)] = (code, digest)
    return digest


def python_function(value):
    """The Python function behind ``value`` (a function or a ``@jit`` dispatcher), else None."""
    if isinstance(value, pytypes.FunctionType):
        return value
    inner = getattr(value, "py_func", None)
    return inner if isinstance(inner, pytypes.FunctionType) and hasattr(value, "inspect_ir") else None


def encode_value(value) -> Any:
    """JSON data standing for ``value`` in a fingerprint, equal in every process for equal values."""
    if isinstance(value, (bool, int, float, str, type(None))):
        return value
    if isinstance(value, (tuple, list)):
        return [encode_value(v) for v in value]
    if type(value).__module__ == "numpy" and hasattr(value, "tobytes") and hasattr(value, "shape"):
        # a NumPy array or scalar, frozen into the code: its contents (repr elides large arrays)
        # (a structured dtype by its fields and offsets: its str is only its size)
        dtype = str(value.dtype) if value.dtype.names is not None else value.dtype.str
        return {"numpy": dtype, "shape": list(value.shape),
                "sha256": hashlib.sha256(value.tobytes(order="C")).hexdigest()}
    if isinstance(value, pytypes.FunctionType):
        return {"function": f"{module_name(value.__module__)}.{value.__qualname__}",
                "code": code_fingerprint(value.__code__), "defaults": encode_value(value.__defaults__),
                "kwdefaults": encode_value(tuple(sorted((value.__kwdefaults__ or {}).items())))}
    fn = python_function(value)
    if fn is not None:  # a @jit function called from compiled code: its body is compiled in
        inline = getattr(value, "inline", "never")  # @jit(inline="always") changes its callers' code
        return {"jit": encode_value(fn)} if inline == "never" else {"jit": encode_value(fn), "inline": inline}
    if isinstance(value, pytypes.ModuleType):
        return {"module": module_name(value.__name__)}
    name = getattr(value, "__qualname__", None)
    if name is not None:
        return {"object": f"{module_name(getattr(value, '__module__', ''))}.{name}"}
    return {"object": type(value).__qualname__, "repr": repr(value)}


__all__ = ["code_fingerprint", "encode_value", "python_function"]
