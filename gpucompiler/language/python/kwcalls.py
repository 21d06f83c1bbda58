"""Keyword arguments in calls of compiled Python functions: ``g(x, scale=2.0)``.

The frontend passes ``f(x, name=v)`` as ``call_kw(f, ("name",), x, v)``.
For a plain Python function (compiled too) the arguments are bound to its
parameters as CPython binds them: positional first, then by name, then the
defaults; a name it has no parameter for, a parameter given twice or one
left without a value is the ``TypeError`` CPython raises, reported when
compiling. The call is then the call of the specialization with every
argument in place (creation.py's keyword handler asks here last, after
NumPy's constructors; functions marked with its ``KEYWORD_HINT`` are refused there).
"""

from __future__ import annotations

import types as pytypes

from ... import types as T
from ...errors import TypeInferenceError
from ...interpreter.lattice import Const, const, pyobj
from ...interpreter.rules import CallResult
from ..numpy.arraymem import disown
from .numbatyped import PARAMETERS, numba_typed, typed_call


def _bind(fn, positional: list, keywords: dict) -> list:
    """The argument of each parameter of ``fn``: ``(index into the call's values, None)`` or
    ``(None, default)``; CPython's TypeError (as a TypeInferenceError) when they do not bind."""
    code, name = fn.__code__, fn.__qualname__
    if code.co_kwonlyargcount:
        raise TypeInferenceError(f"{name}() has keyword-only parameters, which calls in compiled code cannot "
                                 "pass", hint="make them positional parameters")
    params = code.co_varnames[:code.co_argcount]
    if len(positional) > len(params):
        raise TypeInferenceError(f"{name}() takes {len(params)} positional arguments but {len(positional)} were given")
    defaults = fn.__defaults__ or ()
    first_default = len(params) - len(defaults)
    out: list = [(k, None) for k in range(len(positional))]
    for k, p in enumerate(params[len(positional):], start=len(positional)):
        if p in keywords:
            if k < code.co_posonlyargcount:
                raise TypeInferenceError(f"{name}() got some positional-only arguments passed as keyword "
                                         f"arguments: {p!r}")
            out.append((keywords.pop(p), None))
        elif k >= first_default:
            out.append((None, defaults[k - first_default]))
        else:
            raise TypeInferenceError(f"{name}() missing required argument: {p!r}")
    if keywords:
        extra = next(iter(keywords))
        if extra in params:
            raise TypeInferenceError(f"{name}() got multiple values for argument {extra!r}")
        raise TypeInferenceError(f"{name}() got an unexpected keyword argument {extra!r}")
    return out


def keyword_call(interp, args) -> CallResult | None:
    """``call_kw(g, names, *values)`` of a Python function ``g`` compiled with the caller, else None."""
    callee = args[0].value if isinstance(args[0], Const) else None
    callee = getattr(callee, "py_func", callee) if hasattr(callee, "inspect_ir") else callee  # a @jit function
    kind = numba_typed(callee)
    if kind in PARAMETERS:  # typed.Dict.empty(key_type=..., value_type=...)
        return _typed(kind, args)
    if (not isinstance(callee, pytypes.FunctionType)
            or (callee.__module__ or "").partition(".")[0] in ("numpy", "gpucompiler")):
        return None
    names = args[1].value
    values = args[2:]
    split = len(values) - len(names)
    bound = _bind(callee, list(range(split)), {n: split + k for k, n in enumerate(names)})
    argtypes = [values[k] if k is not None else const(d) for k, d in bound]
    res = interp.invoke(callee, argtypes)

    def lower(cg, a, at, rt):
        vals = [a[2 + k] if k is not None else cg.const(argtypes[j].type, d) if _has_value(argtypes[j]) else None
                for j, (k, d) in enumerate(bound)]
        types = [at[2 + k] if k is not None else argtypes[j] for j, (k, _) in enumerate(bound)]
        out = cg.call_result(res, vals, types, rt)
        disown(cg, out, rt)  # the compiled call's reference: codegen adds the rule result's own
        return out
    return CallResult(res.restype, lower)


def _has_value(c: Const) -> bool:
    """Whether a default's constant has a run-time value (not None, not a Python object)."""
    return c.type != T.none and c.type != pyobj


def _typed(kind: str, args) -> CallResult:
    """Numba's typed-container constructor ``kind`` called with keywords: its type arguments in order."""
    names, values = args[1].value, args[2:]
    split = len(values) - len(names)
    params = PARAMETERS[kind]
    given = dict(zip(params, values[:split]))
    for name, v in zip(names, values[split:]):
        if name not in params or name in given:
            raise TypeInferenceError(f"{kind}() got an unexpected or repeated keyword argument {name!r}")
        given[name] = v
    ordered = []
    for p in params:
        if p not in given:
            break
        ordered.append(given[p])
    if len(ordered) != len(given):
        raise TypeInferenceError(f"{kind}() is missing an argument before {list(given)[len(ordered)]!r}")
    return typed_call(kind, ordered)
