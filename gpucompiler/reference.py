"""Compiled functions pickled by reference, as Python pickles functions: never their code.

A ``@jit`` function, a kernel or an ``autodiff`` thunk pickles as the place
of its Python function, its module and qualified name: the receiving process
imports the module and finds the same object there, and its compiles come
from the cache tiers the process is configured with (``GPUC_CACHE_DIR``,
the shared directory, Redis), not from the pickle. A closure pickles as the
place of its code (the module-level function that defines it and the nested
code's qualified name and first line) and the values of its cells, defaults
and keyword defaults, which pickle as themselves. What has no such place (a
lambda at module level, a function made by ``exec``, an unfilled or
self-referencing cell) is a :class:`~gpucompiler.errors.NotPicklableError`
saying why.
"""

from __future__ import annotations

import importlib
import types
from typing import Any

from .errors import NotPicklableError

_LOCALS = ".<locals>."


def module_name(module: str) -> str:
    """``module`` as the parent process names it: a spawned worker runs the main script as ``__mp_main__``
    (and aliases it as ``__main__``), so the same function has the same name, and key, in both."""
    return "__main__" if module == "__mp_main__" else module


def locate(module: str, qualname: str) -> Any:
    """The object named ``qualname`` in ``module`` (imported), or None when there is none."""
    if not isinstance(module, str):  # a function made by exec without __name__
        return None
    try:
        obj: Any = importlib.import_module(module)
    except ImportError:
        return None
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def found(module: str, qualname: str) -> Any:
    """:func:`locate`, unpickling: a name that is gone is a :class:`NotPicklableError`."""
    obj = locate(module, qualname)
    if obj is None:
        raise NotPicklableError(f"{module}.{qualname} was pickled by reference but this process finds no such "
                                "name: run the same version of the module in every process")
    return obj


def _python_function(obj: Any) -> Any:
    """The Python function behind ``obj`` (a dispatcher's or kernel's ``py_func``, a wrapper's ``__wrapped__``)."""
    for _ in range(8):
        inner = getattr(obj, "py_func", None) or getattr(obj, "__wrapped__", None)
        if inner is None:
            break
        obj = inner
    return obj


def _nested_code(code: types.CodeType, name: str, line: int) -> list[types.CodeType]:
    """The code objects named ``name`` starting at ``line`` nested (at any depth) in ``code``."""
    out = []
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_name == name and const.co_firstlineno == line:
                out.append(const)
            out.extend(_nested_code(const, name, line))
    return out


def function_reference(fn: types.FunctionType, what: str) -> tuple:
    """A picklable reference to ``fn`` for :func:`function`: ``fn`` itself when its module names it (pickled
    as a global), else its code's place and its cells' values. ``what`` names the object in errors."""
    module, qualname = fn.__module__, fn.__qualname__
    where = f"{what} {module}.{qualname} ({fn.__code__.co_filename}:{fn.__code__.co_firstlineno})"
    if _LOCALS not in qualname:
        named = locate(module, qualname) if "<lambda>" not in qualname else None
        if named is fn:
            return ("global", fn)
        if named is not None and _python_function(named) is fn:  # the module names a wrapper of fn
            return ("wrapped", module, qualname)
        raise NotPicklableError(f"{where} cannot be pickled by reference: its module has no name {qualname!r} "
                                "(a lambda or a function made by exec has no place to find it again): define it with def at module level or inside a module-level function")
    outer = qualname.split(_LOCALS, 1)[0]
    if _function_code(module, outer) is None:
        raise NotPicklableError(f"{where} cannot be pickled by reference: the function that defines it, "
                                f"{module}.{outer}, is not a module-level function of that name: define the enclosing function with def at module level")
    cells = []
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:
            raise NotPicklableError(f"{where} cannot be pickled: its variable {name!r} is not assigned yet: "
                                    "pickle the closure after the enclosing function assigned it") from None
        if _refers_to(value, fn, set()):
            raise NotPicklableError(f"{where} cannot be pickled by reference: it refers to itself through "
                                    f"its variable {name!r} (a recursive closure, directly or through other "
                                    "closures): define the recursive functions at module level")
        cells.append(_Function(value) if isinstance(value, types.FunctionType) else value)
    return ("closure", module, outer, qualname, fn.__code__.co_firstlineno, fn.__defaults__, fn.__kwdefaults__,
            tuple(cells))


def _refers_to(value: Any, fn: types.FunctionType, seen: set[int]) -> bool:
    """Whether ``value`` is ``fn`` (or wraps it), or a closure whose cells reach it."""
    inner = _python_function(value)
    if inner is fn:
        return True
    if not isinstance(inner, types.FunctionType) or id(inner) in seen:
        return False
    seen.add(id(inner))
    for cell in inner.__closure__ or ():
        try:
            if _refers_to(cell.cell_contents, fn, seen):
                return True
        except ValueError:  # unassigned: its own pickle says so
            continue
    return False


class _Function:
    """A plain function held by a closure's cell, pickled by reference as well (a helper defined beside the
    compiled function: plain pickle refuses local functions)."""

    __slots__ = ("fn",)

    def __init__(self, fn: types.FunctionType):
        self.fn = fn

    def __reduce__(self) -> tuple:
        return function, (function_reference(self.fn, "function"),)


def _function_code(module: str, qualname: str) -> types.CodeType | None:
    fn = _python_function(locate(module, qualname))
    return fn.__code__ if isinstance(fn, types.FunctionType) else None


def function(ref: tuple) -> types.FunctionType:
    """The function :func:`function_reference` referred to, in this process."""
    if ref[0] == "global":
        return ref[1]
    if ref[0] == "wrapped":
        return _python_function(found(ref[1], ref[2]))
    _, module, outer, qualname, line, defaults, kwdefaults, cells = ref
    code = _function_code(module, outer)
    matches = _nested_code(code, qualname.rsplit(".", 1)[-1], line) if code is not None else []
    if len(matches) != 1:
        raise NotPicklableError(f"{module}.{qualname} (line {line}) was pickled by reference but this process "
                                f"finds {len(matches)} such functions in {module}.{outer}: run the same version "
                                "of the module in every process (and one lambda per line)")
    globals_ = vars(importlib.import_module(module))
    fn = types.FunctionType(matches[0], globals_, matches[0].co_name, defaults,
                            tuple(types.CellType(v) for v in cells))
    fn.__kwdefaults__ = kwdefaults
    fn.__qualname__ = qualname
    return fn


def reduce_wrapper(obj: Any, rebuild: Any, keywords: dict, what: str) -> tuple:
    """``obj.__reduce__()`` for an object wrapping a Python function (``obj.py_func``): the object its module
    names, when that is ``obj``; else ``rebuild(function_reference, keywords)``."""
    fn = obj.py_func
    if not isinstance(fn, types.FunctionType):
        raise NotPicklableError(f"{what} {obj!r} wraps {type(fn).__name__}, not a Python function: it cannot "
                                "be pickled by reference")
    if _LOCALS not in fn.__qualname__ and locate(fn.__module__, fn.__qualname__) is obj:
        return found, (fn.__module__, fn.__qualname__)
    return rebuild, (function_reference(fn, what), keywords)


__all__ = ["found", "function", "function_reference", "locate", "module_name", "reduce_wrapper"]
