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

A Python ``list`` of numbers of one type (``[1.0, 2.0]``) is a compiled list
and a ``dict`` of number keys and number values (``{1: 0.5}``) a compiled
dict for the call (:mod:`gpucompiler.codegen.pyargs` converts them; Numba's
``typed.List`` and ``typed.Dict`` of numbers too), and
what the call does to them is reflected into the caller's object when it
returns, as Numba reflects lists: appends, pops and item assignments are seen
by the caller, and an item the call left equal keeps its object. Empty and
mixed containers, containers of other values, and one container passed to
two parameters are refused with an error naming the parameter.

A subclass of ``ndarray`` is passed as its array unless it redefines what
compiled code does to arrays (indexing, operators, ufuncs, reductions:
``np.matrix``'s ``*``, a masked array's mask): compiled code would ignore
the redefinition and return another number than Python, so it is refused
(``np.memmap``, a structured ``np.recarray`` and subclasses that add
attributes or methods pass).
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
    if type(value) is list:
        return _list_type(value, name, function), value
    if type(value) is dict:
        return _dict_type(value, name, function), value
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
        elif type(value).__module__.startswith("numba.typed"):
            return _numba_typed(value, name, function), value
        else:
            _refuse(value, name, function)
    if type(value) is not np.ndarray and isinstance(value, np.ndarray):
        _plain_behaviour(value, np, name, function)
    t = T.typeof(value)
    if t is None:
        _refuse(value, name, function, _struct_hint(value.dtype) if value.dtype.names else _HINT)
    if isinstance(value, np.generic):
        value = value.item()
    return t, value


def _struct_hint(dtype) -> str:
    """What to do with a structured array or scalar that compiled code does not take."""
    problem = T.struct_problem(dtype)
    if problem is None:  # a NumPy record scalar (np.void) or a 0-d structured array
        return ("compiled code takes structured arrays of at least one dimension: pass the array and an index "
                "(f(a, i) reading a[i]), or a.reshape(1)")
    return (f"{problem}: fields of structured arrays are numbers (bool, int8-int64, uint8-uint64, float32, "
            "float64, complex64, complex128) or sub-arrays of numbers, in the machine's byte order; pass a view "
            "of the numeric fields (a[['x', 'm']]) or a converted copy (a.astype(...))")


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
    """Refuse an ndarray subclass that redefines what compiled code does to arrays (a structured
    ``np.recarray`` passes: compiled code reads fields as attributes as it does, ``a.x``, ``a[i].x``)."""
    if type(value) is np.recarray and value.dtype.names is not None:
        return
    redefined = _redefined(type(value), np.ndarray, np.memmap)
    if redefined:
        shown = ", ".join(redefined[:4]) + (", ..." if len(redefined) > 4 else "")
        _refuse(value, name, function, f"{type(value).__name__} redefines {shown}, which compiled code would not "
                "call (it computes on the elements as a plain ndarray); pass np.asarray(x) for that, or "
                "the plain array you mean (a masked array's a.filled(fill_value))")


def _items_type(values, name: str, function: str, what: str, keys: bool = False) -> T.Scalar:
    """The one number type of ``values`` (a list's items, a dict's keys or values), else the error."""
    classes = set(map(type, values))
    kinds = {_PY.get(c) or T.typeof(next(v for v in values if type(v) is c)) for c in classes}
    if len(kinds) > 1 or not all(isinstance(k, T.Scalar) for k in kinds):
        shown = ", ".join(sorted(c.__name__ for c in classes))
        raise ArgumentTypeError(name, f"{what} of {shown}", function=function,
                                hint="a compiled list or dict holds numbers of one type (lists of lists, of "
                                "tuples or of arrays are not taken): convert the numbers ([float(x) for x in xs]), "
                                "pass a NumPy array (np.array(rows) for rows of one length), or build the container "
                                "inside the compiled function")
    t = kinds.pop()
    assert isinstance(t, T.Scalar)
    if t.is_integer and t.kind == "i" and not -(1 << 63) <= min(values) <= max(values) < 1 << 63:
        raise ArgumentTypeError(name, f"{what} of int beyond int64", function=function,
                                hint="a compiled list or dict holds int64 integers (CPython's ints are unbounded): "
                                "pass integers within int64, or floats")
    if keys and (t.kind == "c" or (t.kind == "f" and any(k != k for k in values))):
        raise ArgumentTypeError(name, f"{what} of {'complex' if t.kind == 'c' else 'float with a NaN'}",
                                function=function, hint="a compiled dict's keys are bools, integers or floats "
                                "other than NaN (CPython finds a NaN key by identity)")
    return t


def _list_type(value: list, name: str, function: str) -> T.ListType:
    if not value:
        raise ArgumentTypeError(name, "empty list", function=function,
                                hint="an empty list has no item type to compile for: build it inside the function "
                                "([] takes the type of its first append), or pass a NumPy array (np.empty(0))")
    return T.ListType(_items_type(value, name, function, "list"))


def _dict_type(value: dict, name: str, function: str) -> T.DictType:
    if not value:
        raise ArgumentTypeError(name, "empty dict", function=function,
                                hint="an empty dict has no key and value types to compile for: build it inside the "
                                "function ({} takes the types of its first item)")
    if any(type(k) is str for k in value):
        raise ArgumentTypeError(name, "dict with str keys", function=function,
                                hint="compiled dicts have number keys: map the names to integers before the call "
                                "({i: d[k] for i, k in enumerate(names)}), or pass the values as an array")
    return T.DictType(_items_type(list(value), name, function, "dict keys", True),
                      _items_type(list(value.values()), name, function, "dict values"))


def _numba_item(t, name: str, function: str, keys: bool = False) -> T.Scalar:
    """Our number type of Numba's type ``t`` (read by name: Numba is not imported here)."""
    ours = {"bool": T.boolean}.get(str(t)) or T.SCALARS.get(str(t))
    if ours is None or (keys and ours.kind == "c"):
        raise ArgumentTypeError(name, f"a Numba typed container of {t}", function=function,
                                hint="compiled lists and dicts hold numbers (dict keys: bools, integers or floats)")
    return ours


def _numba_typed(value, name: str, function: str) -> T.ListType | T.DictType:
    """The type of Numba's ``typed.List`` or ``typed.Dict`` ``value`` (converted and reflected as a Python
    list or dict is: :mod:`gpucompiler.codegen.pyargs`)."""
    kind = type(value).__name__
    if kind not in ("List", "Dict") or not getattr(value, "_typed", False):
        _refuse(value, name, function, "pass a typed.List or typed.Dict whose types are known (made with items, "
                "or with List.empty_list(item_type) / Dict.empty(key_type, value_type)), or a Python list or dict")
    if kind == "List":
        return T.ListType(_numba_item(value._dtype, name, function))
    dt = value._dict_type
    return T.DictType(_numba_item(dt.key_type, name, function, True), _numba_item(dt.value_type, name, function))


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
            _distinct_containers(values, names, function)
            return tuple(t for t, _ in typed), tuple(v for _, v in typed)
        types.append(t)
    return tuple(types), values


def _distinct_containers(values, names, function: str) -> None:
    """Refuse one list or dict passed to two parameters: the call converts each, so a change through one
    name would not be seen through the other as CPython sees it."""
    seen: dict[int, str] = {}
    for v, n in zip(values, names):
        if type(v) in (list, dict) or type(v).__module__.startswith("numba.typed"):
            other = seen.setdefault(id(v), n)
            if other != n:
                raise ArgumentTypeError(n, f"the same {type(v).__name__} as parameter {other!r}", function=function,
                                        hint="pass a copy (list(xs), dict(d)) to one of them, or pass it once")


def cell_filled(cell) -> bool:
    """Whether a closure cell holds a value (a cell of a name bound later is empty)."""
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True
