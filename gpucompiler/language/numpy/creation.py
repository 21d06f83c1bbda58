"""NumPy's array constructors in compiled code: ``zeros``, ``empty``, ``ones``, ``full``, ``arange``,
``linspace`` and the ``*_like`` forms, with ``dtype=`` given by position or keyword.

NumPy is not imported here: a callee is recognised by its module and name
(it is NumPy's, so the user has imported NumPy). Each constructor is a
parameter list (bound like Python binds a call, keywords included: the
frontend passes ``f(x, dtype=t)`` as ``call_kw(f, ("dtype",), x, t)``) and a
result type; the arrays are allocated by :mod:`.arraymem`, in the order
``order=`` asks for (:mod:`.orders`: C by default, the prototype's for the
``*_like`` forms and ``np.copy``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from llvmlite import ir

from ... import types as T
from ...errors import TypeInferenceError
from ...frontend import intrinsics as K
from ...interpreter.lattice import Const, pyobj, widen
from ...interpreter.rules import CallResult
from . import arraymem as mem
from . import orders
from .arrayloops import counted_loop
from ..python.kwcalls import keyword_call
from .npdtypes import dtype_of, numpy_function
from ..python.numbers import base
from .orders import Order
from .views import copy_into

_I64 = ir.IntType(64)


def _shape_types(shape) -> list:
    """The extents of a ``shape`` argument (an integer or a tuple of integers)."""
    w = widen(shape)
    items = list(w.items) if isinstance(w, T.TupleType) else [w]
    if not all(isinstance(t, T.Scalar) and t.kind in "ib" for t in items):
        raise TypeInferenceError(f"an array shape is an integer or a tuple of integers, not {w!r}", (w,))
    return items


def _shape_values(cg, value, t) -> list:
    w = widen(t)
    if isinstance(w, T.TupleType):
        return [cg.cast(cg.b.extract_value(value, k), it, T.int64) for k, it in enumerate(w.items)]
    return [cg.cast(value, w, T.int64)]


def _scalar_of(t, what: str) -> T.Scalar:
    w = widen(t)
    if not isinstance(w, T.Scalar):
        raise TypeInferenceError(f"{what} must be a number, not {w!r}", (w,))
    return w


class Constructor:
    """A NumPy constructor: its parameters (a signature of Python defaults), its result type and lowering (a
    plain class: an ``attrs`` class took ~0.3 ms to make at a process's first compile)."""

    __slots__ = ("params", "restype", "lower")

    def __init__(self, params: inspect.Signature, restype: Callable, lower: Callable):
        self.params = params
        self.restype = restype
        """``restype(**bound abstract values) -> type``"""
        self.lower = lower
        """``lower(cg, values, types, restype, order) -> value``: ``values``/``types`` by parameter name"""


def _sig(*names: str, **defaults) -> inspect.Signature:
    P = inspect.Parameter
    params = [P(n, P.POSITIONAL_OR_KEYWORD) for n in names]
    params += [P(n, P.POSITIONAL_OR_KEYWORD, default=d) for n, d in defaults.items()]
    return inspect.Signature(params)


def _fill_type(name: str, dtype_default=T.float64):
    def restype(order, shape, dtype=None, fill_value=None):
        dims = _shape_types(shape)
        if dtype is not None:
            dt = dtype_of(dtype)
        elif fill_value is not None:
            dt = _scalar_of(fill_value, "the fill value")
        else:
            dt = dtype_default
        return mem.managed_array(dt, len(dims), orders.layout(order, len(dims)))
    return restype


def _store_all(cg, arr, rt, value_at) -> None:
    """Store ``value_at(i)`` (of type ``rt.dtype``) into the ``i``-th element of the new packed array ``arr``
    in memory order (C order for ``arange`` and ``linspace``, which make C-ordered vectors)."""
    count = ir.Constant(_I64, 1)
    for k in range(rt.ndim):
        count = cg.b.mul(count, cg.b.extract_value(arr, [1, k]))
    data = cg.b.extract_value(arr, 0)
    size = ir.Constant(_I64, rt.dtype.itemsize)
    counted_loop(cg, count, lambda i: cg.store_scalar(value_at(i), cg.b.gep(data, [cg.b.mul(i, size)],
                                                                             source_etype=ir.IntType(8)), rt.dtype))


def _allocate(cg, rt: T.ArrayType, shape: list, order: Order, like, fill: mem.Fill = mem.Fill.UNINITIALIZED):
    """A new array of type ``rt`` and ``shape`` in ``order`` (``like``: the prototype's value and type)."""
    arr = mem.allocate(cg, rt.dtype, shape, fill)
    if rt.layout == "C":  # C order, or one dimension
        return arr
    strides = orders.strides(cg, order, shape, rt.dtype.itemsize, like)
    return mem.build_array(cg, rt, cg.b.extract_value(arr, 0), shape, strides, cg.b.extract_value(arr, 3))


def _filled(fill: mem.Fill, value: Callable | None = None):
    def lower(cg, values, types, rt, order):
        like = (values["a"], widen(types["a"])) if "a" in values else None
        shape = (_shape_values(cg, values["shape"], types["shape"]) if like is None
                 else [cg.b.extract_value(values["a"], [1, k]) for k in range(rt.ndim)])
        arr = _allocate(cg, rt, shape, order, like, fill)
        if value is not None:  # every element the same: the order of the stores does not matter
            v = value(cg, values, types, rt)
            _store_all(cg, arr, rt, lambda i: v)
        return arr
    return lower


def _copied(cg, values, types, rt, order):
    """``np.copy(a)``: the elements of ``a`` in a new array of ``order`` (NumPy's default: K)."""
    a, t = values["a"], widen(types["a"])
    shape = [cg.b.extract_value(a, [1, k]) for k in range(t.ndim)]
    out = _allocate(cg, rt, shape, order, (a, t))
    copy_into(cg, a, t, out, rt)
    return out


def _one(cg, values, types, rt):
    return cg.const(rt.dtype, 1)


def _given(cg, values, types, rt):
    return cg.cast(values["fill_value"], widen(types["fill_value"]), rt.dtype)


def _like_type(order, a, dtype=None, fill_value=None):
    w = widen(a)
    if not isinstance(w, T.ArrayType):
        raise TypeInferenceError(f"the *_like constructors take an array, not {w!r}", (w,))
    dt = dtype_of(dtype) if dtype is not None else w.dtype
    return mem.managed_array(dt, w.ndim, orders.layout(order, w.ndim, w))


# -- arange and linspace ----------------------------------------------------------------
def _arange_type(order, start, stop=None, step=None, dtype=None):
    parts = [_scalar_of(p, "an arange bound") for p in (start, stop, step) if p is not None]
    if dtype is not None:
        return mem.managed_array(dtype_of(dtype), 1)
    common = parts[0]
    for p in parts[1:]:
        common = T.promote(common, p)
    return mem.managed_array(T.float64 if common.kind == "f" else T.int64, 1)


def _arange(cg, values, types, rt, order):
    b = cg.b
    given = [k for k in ("start", "stop", "step") if k in values]
    f = T.float64
    as_f = {k: cg.cast(values[k], widen(types[k]), f) for k in given}
    if len(given) == 1:
        start, stop, step = ir.Constant(ir.DoubleType(), 0.0), as_f["start"], ir.Constant(ir.DoubleType(), 1.0)
    else:
        start, stop = as_f["start"], as_f["stop"]
        step = as_f.get("step", ir.Constant(ir.DoubleType(), 1.0))
    cg.check_value(b.fcmp_ordered("!=", step, ir.Constant(ir.DoubleType(), 0.0)), "Maximum allowed size exceeded")
    span = b.fdiv(b.fsub(stop, start), step)
    ceil = cg.call_intrinsic("llvm.ceil", f, [span])
    count = cg.float_to_int(b.select(b.fcmp_ordered(">", ceil, ir.Constant(ir.DoubleType(), 0.0)), ceil,
                                     ir.Constant(ir.DoubleType(), 0.0)), _I64)
    arr = mem.allocate(cg, rt.dtype, [count])
    if rt.dtype.kind == "f" or any(widen(types[k]).kind == "f" for k in given):
        _store_all(cg, arr, rt, lambda i: cg.cast(b.fadd(start, b.fmul(b.sitofp(i, ir.DoubleType()), step)), f,
                                                  rt.dtype))
    else:  # integers stay exact
        ints = {k: cg.cast(values[k], widen(types[k]), T.int64) for k in given}
        lo = ints["start"] if len(given) > 1 else ir.Constant(_I64, 0)
        st = ints.get("step", ir.Constant(_I64, 1))
        _store_all(cg, arr, rt, lambda i: cg.cast(b.add(lo, b.mul(i, st)), T.int64, rt.dtype))
    return arr


def _linspace_type(order, start, stop, num=None, endpoint=None, dtype=None):
    for p in (start, stop):
        _scalar_of(p, "a linspace bound")
    if num is not None and _scalar_of(num, "num").kind not in "ib":
        raise TypeInferenceError(f"num must be an integer, not {widen(num)!r}", (widen(num),))
    if endpoint is not None and not (isinstance(endpoint, Const) and isinstance(endpoint.value, bool)):
        raise TypeInferenceError("endpoint must be True or False when compiling", (widen(endpoint),))
    return mem.managed_array(dtype_of(dtype) if dtype is not None else T.float64, 1)


def _linspace(cg, values, types, rt, order):
    b, f, d = cg.b, T.float64, ir.DoubleType()
    start, stop = (cg.cast(values[k], widen(types[k]), f) for k in ("start", "stop"))
    num = cg.cast(values["num"], widen(types["num"]), T.int64) if "num" in values else ir.Constant(_I64, 50)
    endpoint = types["endpoint"].value if "endpoint" in types else True
    cg.check_value(b.icmp_signed(">=", num, ir.Constant(_I64, 0)), "Number of samples, %lld, must be non-negative.",
                   num)
    div = b.sub(num, ir.Constant(_I64, 1)) if endpoint else num
    step = b.fdiv(b.fsub(stop, start), b.sitofp(b.select(b.icmp_signed(">", div, ir.Constant(_I64, 0)), div,
                                                         ir.Constant(_I64, 1)), d))
    arr = mem.allocate(cg, rt.dtype, [num])

    def at(i):
        v = b.fadd(start, b.fmul(b.sitofp(i, d), step))
        if endpoint:  # the last sample is ``stop`` exactly, as NumPy makes it
            v = b.select(b.and_(b.icmp_signed("==", i, div), b.icmp_signed(">", div, ir.Constant(_I64, 0))), stop, v)
        return cg.cast(v, f, rt.dtype)
    _store_all(cg, arr, rt, at)
    return arr


CONSTRUCTORS: dict[str, Constructor] = {
    "zeros": Constructor(_sig("shape", dtype=None, order=None), _fill_type("zeros"), _filled(mem.Fill.ZERO)),
    "empty": Constructor(_sig("shape", dtype=None, order=None), _fill_type("empty"), _filled(mem.Fill.UNINITIALIZED)),
    "ones": Constructor(_sig("shape", dtype=None, order=None), _fill_type("ones"), _filled(mem.Fill.UNINITIALIZED, _one)),
    "full": Constructor(_sig("shape", "fill_value", dtype=None, order=None), _fill_type("full"),
                        _filled(mem.Fill.UNINITIALIZED, _given)),
    "zeros_like": Constructor(_sig("a", dtype=None, order=None), _like_type, _filled(mem.Fill.ZERO)),
    "empty_like": Constructor(_sig("a", dtype=None, order=None), _like_type, _filled(mem.Fill.UNINITIALIZED)),
    "ones_like": Constructor(_sig("a", dtype=None, order=None), _like_type, _filled(mem.Fill.UNINITIALIZED, _one)),
    "full_like": Constructor(_sig("a", "fill_value", dtype=None, order=None), _like_type,
                             _filled(mem.Fill.UNINITIALIZED, _given)),
    "copy": Constructor(_sig("a", order=None), _like_type, _copied),
    "arange": Constructor(_sig("start", stop=None, step=None, dtype=None), _arange_type, _arange),
    "linspace": Constructor(_sig("start", "stop", num=None, endpoint=None, dtype=None), _linspace_type, _linspace),
}


def constructor_call(interp, name: str, args: list, names: tuple = (), skip: int = 0) -> CallResult:
    """The meaning of NumPy's constructor ``name`` called with ``args`` (from index ``skip``; the last
    ``len(names)`` passed by keyword)."""
    ctor = CONSTRUCTORS[name]
    if interp.target.is_gpu:
        raise TypeInferenceError(f"np.{name} allocates an array, which kernels on the GPU cannot do",
                                 hint="allocate the array on the host and pass it to the kernel")
    given = list(range(skip, len(args)))
    split = len(given) - len(names)
    try:
        bound = ctor.params.bind(*given[:split], **dict(zip(names, given[split:])))
    except TypeError as exc:
        raise TypeInferenceError(f"np.{name}(): {exc}") from None
    index = {p: k for p, k in bound.arguments.items() if args[k] is not None}
    none = [p for p, k in index.items() if isinstance(args[k], Const) and args[k].value is None]
    for p in none:  # dtype=None is the default
        del index[p]
    at = index.pop("order", None)
    order = orders.order_of(name, args[at] if at is not None else None,
                            orders.LIKE if "a" in ctor.params.parameters else orders.PLAIN)
    abstract = {p: args[k] for p, k in index.items()}
    if any(isinstance(v, Const) and v.type == pyobj for p, v in abstract.items() if p != "dtype"):
        bad = next(p for p, v in abstract.items() if p != "dtype" and isinstance(v, Const) and v.type == pyobj)
        raise TypeInferenceError(f"np.{name}(): unsupported {bad} {abstract[bad].value!r}")
    rt = ctor.restype(order, **abstract)

    def lower(cg, values, argtypes, restype):
        return ctor.lower(cg, {p: values[k] for p, k in index.items() if p != "dtype"},
                          {p: argtypes[k] for p, k in index.items()}, widen(restype), order)
    return CallResult(rt, lower)


@base.handler
def _numpy_constructor(interp, fn, args):
    name = numpy_function(fn)
    return constructor_call(interp, name, args) if name in CONSTRUCTORS else None


KEYWORD_HINT = "__gpuc_keyword_hint__"
"""An attribute of a Python function whose keywords compiled code does not take: the hint of the error."""


@base.handler
def _keyword_call(interp, fn, args):
    """``f(x, name=v)``: NumPy's constructors bind keywords; other callees take arguments by position."""
    if fn is not K.call_kw:
        return None
    callee, names = args[0], args[1]
    name = numpy_function(callee.value) if isinstance(callee, Const) else None
    if name in CONSTRUCTORS:
        return constructor_call(interp, name, args, names.value, skip=2)
    if not hasattr(callee.value, KEYWORD_HINT):
        bound = keyword_call(interp, args)  # a Python function compiled with the caller
        if bound is not None:
            return bound
    shown = getattr(callee.value, "__qualname__", repr(callee.value)) if isinstance(callee, Const) else "a value"
    if isinstance(callee, Const) and callee.value is K.call_method and isinstance(args[3], Const):
        shown = f"the method {args[3].value}() of {widen(args[2])!r}"
    raise TypeInferenceError(f"keyword arguments in a call of {shown} are not supported",
                             hint=getattr(callee.value, KEYWORD_HINT, "pass arguments by position")
                             if isinstance(callee, Const) else "pass arguments by position")
