"""The call boundary of ``@jit`` functions and kernels: arguments bound and checked as Python would.

Arguments bind to parameters as :meth:`inspect.Signature.bind` binds them:
keywords, keyword-only parameters and defaults work (a default value is
passed like an argument and typed like one); too many or missing arguments
and unknown keywords raise :class:`~gpucompiler.errors.ArgumentBindingError`
(a ``TypeError``). A call with exactly the positional parameters skips the
binding.

Arrays are NumPy ``ndarray``s of at least one dimension. An object with
``__array_interface__`` or the buffer protocol (``memoryview``,
``array.array``, ...) is viewed as one with :func:`numpy.asarray` (no copy
when its layout allows) and that view is what the call gets, alive until it
returns. Anything else, an object that merely has ``dtype`` and ``ndim``
attributes included, is refused with an error naming the parameter: compiled
code reads arrays at NumPy's struct offsets. A 0-d array is an array
(``a[()]`` reads and writes its element).

A subclass of ``ndarray`` is passed as its array unless it redefines what
compiled code does to arrays (indexing, operators, ufuncs, reductions:
``np.matrix``'s ``*``, a masked array's mask): compiled code would ignore
the redefinition and return another number than Python, so it is refused
(``np.memmap`` and subclasses that add attributes or methods pass).
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
from typing import NoReturn

from . import types as T
from .errors import ArgumentBindingError, ArgumentTypeError, UnsupportedError

__all__ = ["Binder", "argument", "arguments", "cell_filled"]

_PY = {int: T.int64, float: T.float64, bool: T.boolean, complex: T.complex128}
_HINT = ("pass bool, int, float, complex, a NumPy scalar or a NumPy array of bool, int8-int64, uint8-uint64, "
         "float32, float64, complex64 or complex128")


class Binder:
    """Binds the arguments of calls of ``fn`` to its parameters, in the compiled function's order."""

    __slots__ = ("fn", "names", "positional", "_signature")

    def __init__(self, fn):
        if not isinstance(fn, types.FunctionType):  # a class, a builtin, a partial, a bound method...
            raise UnsupportedError(f"compiling {fn!r}, a {type(fn).__name__}: only Python functions (def, lambda) "
                                   "compile", hint="call it from a function you compile: def f(x): return g(x)")
        code = fn.__code__
        self.fn = fn
        self.names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        #: the argument count a call may have to skip binding (-1: always bind)
        self.positional = code.co_argcount if not code.co_kwonlyargcount else -1
        self._signature = None

    def bind(self, args: tuple, kwargs: dict) -> tuple:
        """The argument of every parameter, defaults filled in; :class:`ArgumentBindingError` if none binds."""
        if self._signature is None:
            self._signature = inspect.signature(self.fn)
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            code = self.fn.__code__
            raise ArgumentBindingError(f"{self.fn.__name__}(): {exc}", (code.co_filename, code.co_firstlineno, 0),
                                       self.fn.__qualname__,
                                       f"the signature is {self.fn.__name__}{self._signature}") from None
        bound.apply_defaults()
        return tuple(bound.arguments[n] for n in self.names)

    def __call__(self, args: tuple, kwargs: dict) -> tuple:
        if not kwargs and len(args) == self.positional:
            return args
        return self.bind(args, kwargs)


def _refuse(value, name: str, function: str, hint: str = _HINT) -> NoReturn:
    dtype = getattr(value, "dtype", None)
    shown = type(value).__name__ + (f" of dtype {dtype}" if dtype is not None else "")
    raise ArgumentTypeError(name, shown, function=function, hint=hint)


def argument(value, name: str, function: str) -> tuple:
    """``(type, value to pass)`` of one argument: scalars as they are, array-likes as NumPy arrays."""
    t = _PY.get(type(value))
    if t is not None:
        return t, value
    np = sys.modules.get("numpy")
    if np is None or not isinstance(value, (np.ndarray, np.generic)):
        t = T.typeof(value)
        if isinstance(t, (T.TupleType, T.RecordType)):  # a tuple, NamedTuple or dataclass of supported values
            return t, value
        if hasattr(value, "__array_interface__") or _has_buffer(value):
            import numpy as np

            try:
                value = np.asarray(value)
            except (TypeError, ValueError) as exc:
                _refuse(value, name, function, f"NumPy cannot view it as an array ({exc})")
        else:
            _refuse(value, name, function)
    if type(value) is not np.ndarray and isinstance(value, np.ndarray):
        _plain_behaviour(value, np, name, function)
    t = T.typeof(value)
    if t is None:
        _refuse(value, name, function)
    if isinstance(value, np.generic):
        value = value.item()
    return t, value


#: names a subclass of ndarray may define without changing what compiled code computes with it
_NEUTRAL = frozenset(("__new__", "__init__", "__array_finalize__", "__array_wrap__", "__repr__", "__str__",
                      "__format__", "__reduce__", "__reduce_ex__", "__setstate__", "__doc__", "__module__",
                      "__dict__", "__weakref__", "__slots__", "__init_subclass__", "__annotations__",
                      "__qualname__", "__firstlineno__", "__static_attributes__", "__class_getitem__"))


@functools.cache
def _redefined(cls: type, ndarray: type, memmap: type) -> tuple[str, ...]:
    """The array behaviour (ndarray's own names) the subclass ``cls`` redefines."""
    if cls is ndarray or cls is memmap:
        return ()
    own = {name for k in cls.__mro__ if k not in (ndarray, memmap, object) and issubclass(k, ndarray)
           for name in vars(k)}
    return tuple(sorted(n for n in own & set(dir(ndarray)) if n not in _NEUTRAL))


def _plain_behaviour(value, np, name: str, function: str) -> None:
    """Refuse an ndarray subclass that redefines what compiled code does to arrays."""
    redefined = _redefined(type(value), np.ndarray, np.memmap)
    if redefined:
        shown = ", ".join(redefined[:4]) + (", ..." if len(redefined) > 4 else "")
        _refuse(value, name, function, f"{type(value).__name__} redefines {shown}, which compiled code would not "
                "call (it computes on the elements as a plain ndarray); pass np.asarray(x) for that, or "
                "the plain array you mean (a masked array's a.filled(fill_value))")


def _has_buffer(value) -> bool:
    if isinstance(value, (str, tuple, list, dict)):
        return False
    try:
        memoryview(value).release()
    except TypeError:
        return False
    return True


def arguments(values, names, function: str) -> tuple[tuple, tuple]:
    """``(types, values to pass)`` of bound arguments (see :func:`argument`)."""
    np = sys.modules.get("numpy")
    ndarray = np.ndarray if np is not None else None
    types = []
    for v in values:  # the dispatch path of every call with arrays: plain scalars and ndarrays first
        t = _PY.get(type(v))
        if t is None and type(v) is ndarray:
            t = T.typeof(v)
        if t is None:
            typed = [argument(v, n, function) for v, n in zip(values, names)]
            return tuple(t for t, _ in typed), tuple(v for _, v in typed)
        types.append(t)
    return tuple(types), values


def cell_filled(cell) -> bool:
    """Whether a closure cell holds a value (a cell of a name bound later is empty)."""
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True
