"""``np.random`` in compiled code: NumPy's legacy functions and ``default_rng(seed)``'s Generator.

The legacy functions (``seed``, ``random``/``random_sample``/``rand``,
``uniform``, ``normal``/``standard_normal``/``randn``, ``exponential``,
``randint``, ``shuffle``, ``permutation``, ``choice``, with ``p`` too) draw from the
process's state (:mod:`.nprandomstate`), apart from NumPy's own as in Numba,
with NumPy's algorithms (:mod:`.nprandomimpl`): after ``np.random.seed(s)``
in compiled code they give what ``np.random.RandomState(s)`` gives.
``np.random.default_rng(seed)`` makes a Generator whose ``random``,
``uniform``, ``integers``, ``normal``, ``standard_normal``, ``exponential``,
``standard_exponential``, ``shuffle``, ``permutation`` and ``choice`` give
NumPy's Generator's numbers for the seed (:mod:`.nprandomgen`,
:mod:`.genchoice`). ``size=`` is an integer or a tuple of integers; parameters are numbers (arrays of parameters
are refused). Anything else of ``np.random`` is a typed error.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

from .... import types as T
from ....errors import TypeInferenceError
from ....frontend import intrinsics as K
from ....interpreter.lattice import Const, const, widen
from ....interpreter.rules import CallResult
from . import genchoice as C
from . import nprandomgen as G
from . import nprandomimpl as I
from ..npdtypes import dtype_of
from ...python.numbers import base
from ..reductions import invoke_impl, returned
from ..ufuncs import numpy

#: legacy function -> (parameters, their defaults (missing: required))
_LEGACY: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "seed": (("seed",), {"seed": None}),
    "random": (("size",), {"size": None}), "random_sample": (("size",), {"size": None}),
    "ranf": (("size",), {"size": None}), "sample": (("size",), {"size": None}),
    "standard_normal": (("size",), {"size": None}), "standard_exponential": (("size",), {"size": None}),
    "uniform": (("low", "high", "size"), {"low": 0.0, "high": 1.0, "size": None}),
    "normal": (("loc", "scale", "size"), {"loc": 0.0, "scale": 1.0, "size": None}),
    "exponential": (("scale", "size"), {"scale": 1.0, "size": None}),
    "randint": (("low", "high", "size", "dtype"), {"high": None, "size": None, "dtype": int}),
    "shuffle": (("x",), {}), "permutation": (("x",), {}),
    "choice": (("a", "size", "replace", "p"), {"size": None, "replace": True, "p": None}),
    "default_rng": (("seed",), {"seed": None}),
}
#: distribution -> (implementation, its two parameters, result type)
_LEGACY_DISTS = {
    "random": (I.random_sample, (), T.float64), "random_sample": (I.random_sample, (), T.float64),
    "ranf": (I.random_sample, (), T.float64), "sample": (I.random_sample, (), T.float64),
    "rand": (I.random_sample, (), T.float64), "randn": (I.standard_normal, (), T.float64),
    "standard_normal": (I.standard_normal, (), T.float64), "uniform": (I.uniform, ("low", "high"), T.float64),
    "normal": (I.normal, ("loc", "scale"), T.float64), "exponential": (I.exponential, ("scale",), T.float64),
    "randint": (I.randint, ("low", "high"), T.int64),
    "standard_exponential": (I.standard_exponential, (), T.float64),
}
#: Generator method -> (parameters, defaults)
_METHODS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "random": (("size", "dtype", "out"), {"size": None, "dtype": None, "out": None}),
    "standard_normal": (("size", "dtype", "out"), {"size": None, "dtype": None, "out": None}),
    "uniform": (("low", "high", "size"), {"low": 0.0, "high": 1.0, "size": None}),
    "normal": (("loc", "scale", "size"), {"loc": 0.0, "scale": 1.0, "size": None}),
    "integers": (("low", "high", "size", "dtype", "endpoint"),
                 {"high": None, "size": None, "dtype": None, "endpoint": False}),
    "exponential": (("scale", "size"), {"scale": 1.0, "size": None}),
    "standard_exponential": (("size", "dtype", "method", "out"), {"size": None, "dtype": None, "method": "zig",
                                                                   "out": None}),
}
_GEN_DISTS = {
    "random": (G.random, (), T.float64), "standard_normal": (G.standard_normal, (), T.float64),
    "uniform": (G.uniform, ("low", "high"), T.float64), "normal": (G.normal, ("loc", "scale"), T.float64),
    "integers": (G.integers, ("low", "high"), T.int64), "exponential": (G.exponential, ("scale",), T.float64),
    "standard_exponential": (G.standard_exponential, (), T.float64),
}
_SUPPORTED = "seed, random, random_sample, rand, randn, uniform, normal, standard_normal, exponential, " \
    "standard_exponential, randint, shuffle, permutation, choice and default_rng"


@functools.cache
def _zig() -> Const:
    return const(numpy().array(G.ziggurat_tables()))


class _Call:
    """A call's arguments bound to parameters: each an abstract value and where its run-time value
    is among the call's values (None for a default or a value this module adds)."""

    def __init__(self, what: str, params: tuple[str, ...], defaults: dict, values: list, kwnames: tuple,
                 first: int):
        self.what = what
        npos = len(values) - len(kwnames)
        if npos > len(params):
            raise TypeInferenceError(f"{what}() takes at most {len(params)} arguments in compiled code "
                                     f"({', '.join(params)})")
        self.given: dict[str, tuple[Any, int | None]] = {p: (v, first + k) for k, (p, v) in
                                                        enumerate(zip(params, values[:npos]))}
        for k, (name, v) in enumerate(zip(kwnames, values[npos:])):
            if name not in params or name in self.given:
                raise TypeInferenceError(f"{what}() keyword argument {name!r} is not supported in compiled code",
                                         hint="the supported parameters are " + ", ".join(params))
            self.given[name] = (v, first + npos + k)
        for p in params:
            if p not in self.given:
                if p not in defaults:
                    raise TypeInferenceError(f"{what}() missing required argument {p!r}")
                self.given[p] = (const(defaults[p]), None)

    def value(self, name: str):
        return self.given[name][0]

    def is_none(self, name: str) -> bool:
        v = self.value(name)
        return isinstance(v, Const) and v.value is None

    def number(self, name: str, integer: bool = False):
        """The parameter ``name`` as a slot, checked to be a (real, integer when asked) number."""
        v, k = self.given[name]
        t = widen(v)
        ok = isinstance(t, T.Scalar) and ((t.is_integer or t == T.boolean) if integer else t.kind in "biuf")
        if not ok:
            kind = "an integer" if integer else "a number"
            raise TypeInferenceError(f"{self.what}(): {name} must be {kind} in compiled code, not {t!r}", (t,),
                                     hint="arrays of parameters (NumPy's broadcasting) are not supported: "
                                     "draw in a loop")
        return v, k

    def constant(self, name: str):
        v = self.value(name)
        if not isinstance(v, Const):
            raise TypeInferenceError(f"{self.what}(..., {name}=...) must be a constant in compiled code", (widen(v),))
        return v.value


def _constant(cg, v):
    """The run-time value of a constant this module passes (a number, the tables), None for the others."""
    if isinstance(v, Const) and isinstance(v.type, (T.Scalar, T.ArrayType, T.TupleType)):
        return cg.const(v.type, v.value)
    return None


def _call(interp, what: str, impl, slots: list) -> CallResult:
    """The call of ``impl`` on ``slots``: ``(abstract value, index of its run-time value or None)``."""
    res = invoke_impl(interp, what, impl, [v for v, _ in slots])

    def lower(cg, a, at, rt):
        values = [a[k] if k is not None and a[k] is not None else _constant(cg, v) for v, k in slots]
        types = [at[k] if k is not None else v for v, k in slots]
        return returned(cg, cg.call_result(res, values, types, rt), rt)
    # what returns nothing has the type none, not the constant None: codegen emits no call of a constant
    none = isinstance(res.restype, Const) and res.restype.value is None
    return CallResult(T.none if none else res.restype, lower)


def _size(call: _Call) -> tuple[tuple, bool] | None:
    """The slot of ``size=`` and whether it is one integer (else a tuple), or None for a scalar."""
    if call.is_none("size"):
        return None
    v, k = call.given["size"]
    t = widen(v)
    if isinstance(t, T.Scalar) and t.is_integer:
        return (v, k), True
    if isinstance(t, T.TupleType) and all(isinstance(i, T.Scalar) and i.is_integer for i in t.items):
        return (v, k), False
    raise TypeInferenceError(f"{call.what}(): size must be an integer or a tuple of integers in compiled code, "
                             f"not {t!r}", (t,))


def _params(call: _Call, names: tuple, integer: bool) -> list:
    slots = [call.number(n, integer) for n in names]
    zero = const(0) if integer else const(0.0)
    return slots + [(zero, None)] * (2 - len(slots))


def _legacy_draw(interp, call: _Call, name: str) -> CallResult:
    impl, names, dt = _LEGACY_DISTS[name]
    integer = name == "randint"
    if integer:
        if dtype_of(call.value("dtype"), "np.random.randint()'s dtype") != T.int64:
            raise TypeInferenceError("np.random.randint(..., dtype=...) other than int64 is not supported in "
                                     "compiled code", hint="convert the result: np.random.randint(...).astype(t)")
        if call.is_none("high"):
            call.given["high"] = call.given["low"]
            call.given["low"] = (const(0), None)
    params = _params(call, names, integer)
    size = _size(call)
    fn = (const(impl), None)
    if size is None:
        return _call(interp, call.what, I.draw, [fn, *params])
    return _call(interp, call.what, I.fill1 if size[1] else I.fill, [fn, size[0], (const(dt), None), *params])


def _dims(interp, what: str, name: str, values: list, first: int) -> CallResult:
    """``np.random.rand(d0, d1...)`` and ``randn``."""
    impl, _, dt = _LEGACY_DISTS[name]
    fn, dts, zeros = (const(impl), None), (const(dt), None), [(const(0.0), None)] * 2
    for v in values:
        t = widen(v)
        if not (isinstance(t, T.Scalar) and t.is_integer):
            raise TypeInferenceError(f"{what}() takes integer dimensions, not {t!r}", (t,))
    if not values:
        return _call(interp, what, I.draw, [fn, *zeros])
    if all(isinstance(v, Const) for v in values):
        return _call(interp, what, I.fill, [fn, (const(tuple(v.value for v in values)), None), dts, *zeros])
    fills = {1: I.fill1, 2: I.fill2, 3: I.fill3}
    if len(values) not in fills:
        raise TypeInferenceError(f"{what}() of more than 3 dimensions not known when compiling is not supported",
                                 hint="pass size as a tuple: np.random.random((d0, d1, d2, d3))")
    return _call(interp, what, fills[len(values)], [fn, *[(v, first + k) for k, v in enumerate(values)], dts,
                                                    *zeros])


def _array(call: _Call, name: str, ndims: tuple[int, ...]):
    v, k = call.given[name]
    t = widen(v)
    if not (isinstance(t, T.ArrayType) and t.ndim in ndims):
        raise TypeInferenceError(f"{call.what}() of {t!r} is not supported in compiled code", (t,),
                                 hint=f"pass a {' or '.join(f'{n}-d' for n in ndims)} array")
    return v, k


def _dtype(slot: tuple) -> tuple:
    """The slot of the element type of the array slot ``slot``."""
    t = widen(slot[0])
    assert isinstance(t, T.ArrayType), "checked by _array"
    return const(t.dtype), None


def _weighted_choice(interp, call: _Call) -> CallResult:
    """``np.random.choice(a, size, replace, p)`` with ``p``: genchoice.py's algorithm on the legacy state."""
    p, atol = _probabilities(call)
    replace = call.number("replace")
    a, k = call.given["a"]
    t = widen(a)
    size = _size(call)
    if isinstance(t, T.Scalar) and t.is_integer:
        if size is None:
            return _call(interp, call.what, C.legacy_int, [(a, k), replace, p, atol])
        return _call(interp, call.what, C.legacy_ints1 if size[1] else C.legacy_ints, [(a, k), size[0], replace, p,
                                                                                       atol])
    dt = (const(t.item), None) if isinstance(t, T.ListType) and isinstance(t.item, T.Scalar) else \
        _dtype(_array(call, "a", (1,)))
    if size is None:
        return _call(interp, call.what, C.legacy_item, [(a, k), replace, p, atol])
    return _call(interp, call.what, C.legacy_items1 if size[1] else C.legacy_items, [(a, k), size[0], replace, p,
                                                                                     atol, dt])


def _choice(interp, call: _Call) -> CallResult:
    if not call.is_none("p"):
        return _weighted_choice(interp, call)
    replace = (const(bool(call.constant("replace"))), None)
    a, k = call.given["a"]
    t = widen(a)
    size = _size(call)
    if isinstance(t, T.Scalar) and t.is_integer:
        if size is None:
            return _call(interp, call.what, I.choice_index if replace[0].value else I.choice_one_unique, [(a, k)])
        impl = I.choice_indices1 if size[1] else I.choice_indices
        return _call(interp, call.what, impl, [(a, k), size[0], replace])
    x = _array(call, "a", (1,))
    if size is None:
        return _call(interp, call.what, I.choice_item, [x, replace])
    impl = I.choice_items1 if size[1] else I.choice_items
    return _call(interp, call.what, impl, [x, size[0], replace, _dtype(x)])


def _on_host(interp, what: str) -> None:
    if interp.target.is_gpu:
        raise TypeInferenceError(f"{what}() draws from the host's random state, which kernels on the GPU cannot "
                                 "reach", hint="draw the numbers on the host and pass them to the kernel")


def _legacy(interp, name: str, values: list, kwnames: tuple, first: int) -> CallResult:
    what = f"np.random.{name}"
    _on_host(interp, what)
    if name in ("rand", "randn"):
        if kwnames:
            raise TypeInferenceError(f"{what}() takes no keyword arguments")
        return _dims(interp, what, name, values, first)
    params, defaults = _LEGACY[name]
    call = _Call(what, params, defaults, values, kwnames, first)
    if name == "seed":
        if call.is_none("seed"):
            return _call(interp, what, I.reseed, [])
        v, k = call.number("seed", integer=True)
        return _call(interp, what, I.seed, [(v, k)])
    if name == "default_rng":
        if call.is_none("seed"):
            return _call(interp, what, G.default_rng_unseeded, [])
        return _call(interp, what, G.default_rng, [call.number("seed", integer=True)])
    if name == "shuffle":
        x = _array(call, "x", (1, 2))
        return _call(interp, what, I.shuffle if widen(x[0]).ndim == 1 else I.shuffle_rows, [x])
    if name == "permutation":
        v, k = call.given["x"]
        t = widen(v)
        if isinstance(t, T.Scalar) and t.is_integer:
            return _call(interp, what, I.permutation_n, [(v, k)])
        x = _array(call, "x", (1, 2))
        return _call(interp, what, I.permutation_of if widen(x[0]).ndim == 1 else I.permutation_rows, [x, _dtype(x)])
    if name == "choice":
        return _choice(interp, call)
    return _legacy_draw(interp, call, name)


def _generator_method(interp, name: str, values: list, kwnames: tuple, first: int) -> CallResult:
    what = f"Generator.{name}"
    _on_host(interp, what)
    if name in ("shuffle", "permutation"):
        return _generator_shuffle(interp, what, name, values, kwnames, first)
    if name == "choice":
        return _generator_choice(interp, what, values, kwnames, first)
    if name not in _METHODS:
        raise TypeInferenceError(f"{what}() is not supported in compiled code",
                                 hint="compiled code's Generator has random, uniform, integers, normal, "
                                 "standard_normal, exponential, standard_exponential, shuffle, permutation and "
                                 "choice")
    params, defaults = _METHODS[name]
    call = _Call(what, params, defaults, values[1:], kwnames, first + 1)
    impl, names, dt = _GEN_DISTS[name]
    integer = name == "integers"
    if "out" in params and not call.is_none("out"):
        raise TypeInferenceError(f"{what}(..., out=...) is not supported in compiled code")
    if "dtype" in params and not call.is_none("dtype") and dtype_of(call.value("dtype"), f"{what}()'s dtype") != dt:
        raise TypeInferenceError(f"{what}(..., dtype=...) other than {dt!r} is not supported in compiled code")
    if "method" in params and call.constant("method") != "zig":
        raise TypeInferenceError(f"{what}(..., method=...) other than 'zig' is not supported in compiled code")
    if integer:
        if call.is_none("high"):
            call.given["high"] = call.given["low"]
            call.given["low"] = (const(0), None)
        if call.constant("endpoint"):
            impl = G.integers_closed
    gen = (values[0], first - 1)
    params_ = _params(call, names, integer)
    size = _size(call)
    fn, zig = (const(impl), None), (_zig(), None)
    if size is None:
        return _call(interp, what, G.draw, [fn, gen, zig, *params_])
    return _call(interp, what, G.fill1 if size[1] else G.fill, [fn, gen, zig, size[0], (const(dt), None), *params_])


def _generator_shuffle(interp, what: str, name: str, values: list, kwnames: tuple, first: int) -> CallResult:
    """``rng.shuffle(x)`` and ``rng.permutation(x)`` along the first axis."""
    call = _Call(what, ("x", "axis"), {"axis": 0}, values[1:], kwnames, first + 1)
    if call.constant("axis") != 0:
        raise TypeInferenceError(f"{what}(..., axis=...) other than 0 is not supported in compiled code")
    gen = (values[0], first - 1)
    v, k = call.given["x"]
    t = widen(v)
    if name == "permutation" and isinstance(t, T.Scalar) and t.is_integer:
        return _call(interp, what, G.permutation_n, [gen, (v, k)])
    x = _array(call, "x", (1, 2))
    if name == "shuffle":
        return _call(interp, what, G.shuffle, [gen, x])
    impl = G.permutation_of if widen(x[0]).ndim == 1 else G.permutation_rows
    return _call(interp, what, impl, [gen, x, _dtype(x)])


#: ``sqrt(finfo(float64).eps)`` and ``sqrt(finfo(float32).eps)``: how far ``p``'s sum may be from 1
_ATOL64, _ATOL32 = 1.4901161193847656e-08, 0.00034526698300124393


def _probabilities(call: _Call) -> tuple[tuple, tuple]:
    """The slots of ``p=`` (a 1-d array or a list of numbers) and of its tolerance, as NumPy's choice sets it."""
    v, k = call.given["p"]
    t = widen(v)
    if isinstance(t, T.ListType) and isinstance(t.item, T.Scalar) and t.item.kind in "biuf":
        return (v, k), (const(_ATOL64), None)
    if isinstance(t, T.ArrayType) and t.ndim == 1 and t.dtype.kind in "biuf":
        return (v, k), (const(_ATOL32 if t.dtype == T.float32 else _ATOL64), None)
    raise TypeInferenceError(f"{call.what}(..., p=...) of {t!r} is not supported in compiled code", (t,),
                             hint="pass p as a 1-d array or a list of numbers")


def _generator_choice(interp, what: str, values: list, kwnames: tuple, first: int) -> CallResult:
    """``rng.choice(a, size, replace, p, axis=0, shuffle)`` of an integer, a 1-d array or a list."""
    call = _Call(what, ("a", "size", "replace", "p", "axis", "shuffle"),
                 {"size": None, "replace": True, "p": None, "axis": 0, "shuffle": True}, values[1:], kwnames, first + 1)
    if call.constant("axis") != 0:
        raise TypeInferenceError(f"{what}(..., axis=...) other than 0 is not supported in compiled code")
    flags = [call.number(n) for n in ("replace", "shuffle")]
    if call.is_none("p"):
        fn, p, atol = (const(C.uniform_indices), None), (const(0.0), None), (const(0.0), None)
    else:
        fn, (p, atol) = (const(C.weighted_indices), None), _probabilities(call)
    gen, (a, k) = (values[0], first - 1), call.given["a"]
    t = widen(a)
    size = _size(call)
    rest = [flags[0], p, atol, flags[1]]
    if isinstance(t, T.Scalar) and t.is_integer:
        if size is None:
            return _call(interp, what, C.choose_int, [fn, gen, (a, k), *rest])
        return _call(interp, what, C.choose_ints1 if size[1] else C.choose_ints, [fn, gen, (a, k), size[0], *rest])
    if isinstance(t, T.ListType) and isinstance(t.item, T.Scalar):
        dt = (const(t.item), None)
    else:
        x = _array(call, "a", (1,))
        dt = _dtype(x)
    if size is None:
        return _call(interp, what, C.choose_item, [fn, gen, (a, k), *rest])
    impl = C.choose_items1 if size[1] else C.choose_items
    return _call(interp, what, impl, [fn, gen, (a, k), size[0], *rest, dt])


def _is_generator(t) -> bool:
    t = widen(t)
    return isinstance(t, T.RecordType) and t.module == G.__name__ and t.qualname == "Generator"


def _is_module(receiver, name) -> bool:
    """Whether ``receiver.name(...)`` calls a function of the module ``np.random`` (passed as a value)."""
    np = sys.modules.get("numpy")  # not imported for code that has no NumPy
    return np is not None and isinstance(receiver, Const) and isinstance(name, Const) and receiver.value is np.random


def _module_function(name: Const) -> str:
    fn = getattr(numpy().random, name.value, None)
    found = _legacy_name(fn) if fn is not None else None
    if found is None:
        raise TypeInferenceError(f"np.random.{name.value} is not supported in compiled code",
                                 hint=f"compiled code has np.random's {_SUPPORTED}")
    return found


def _legacy_name(fn) -> str | None:
    """The name of the ``np.random`` function ``fn``; TypeInferenceError for one compiled code lacks."""
    module = getattr(fn, "__module__", None)
    owner = getattr(type(getattr(fn, "__self__", None)), "__module__", None)
    if not any(isinstance(m, str) and m.startswith("numpy.random") for m in (module, owner)):
        return None
    np = numpy()
    name = getattr(fn, "__name__", "")
    if name in (*_LEGACY, "rand", "randn") and fn is getattr(np.random, name, None):
        return name
    raise TypeInferenceError(f"np.random.{name} is not supported in compiled code",
                             hint=f"compiled code has np.random's {_SUPPORTED}")


@base.handler
def _random_call(interp, fn, args):
    """``np.random.normal(0, 1, size=3)``, ``rng.integers(10)``, ``np.random.seed(1)``..."""
    if fn is K.call_kw:
        callee, names = args[0], args[1]
        if not (isinstance(callee, Const) and isinstance(names, Const)):
            return None
        if callee.value is K.call_method and len(args) > 3 and _is_generator(args[2]):
            return _generator_method(interp, args[3].value, [args[2], *args[4:]], names.value, 3)
        if callee.value is K.call_method and len(args) > 3 and _is_module(args[2], args[3]):
            return _legacy(interp, _module_function(args[3]), list(args[4:]), names.value, 4)
        name = _legacy_name(callee.value)
        return None if name is None else _legacy(interp, name, list(args[2:]), names.value, 2)
    if fn is K.call_method:
        if len(args) > 1 and _is_generator(args[0]) and isinstance(args[1], Const):
            return _generator_method(interp, args[1].value, [args[0], *args[2:]], (), 1)
        if len(args) > 1 and _is_module(args[0], args[1]):
            return _legacy(interp, _module_function(args[1]), list(args[2:]), (), 2)
        return None
    name = _legacy_name(fn)
    return None if name is None else _legacy(interp, name, list(args), (), 0)
