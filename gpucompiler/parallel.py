"""Kokkos-style ``parallel_for`` and ``parallel_reduce``: a range, a functor and a reducer.

::

    from gpucompiler import parallel_reduce, Space

    def square(i, v):
        return v[i] * v[i]

    parallel_reduce(v.shape[0], square, sum, v)                     # host threads
    parallel_reduce(v.shape[0], square, sum, v, space=Space.CUDA)   # a GPU kernel
    parallel_reduce(v.shape[0], lambda i: v[i] * v[i], sum)         # a closure over v

The functor is called as ``functor(i, *args)`` for ``i`` in ``range(n)``;
arrays a closure captures are passed as arguments. A reducer is a
:class:`Reducer` (a combine function and its identity) or one of
``sum``/``"sum"``, ``math.prod``/``"prod"``, ``min``/``"min"``, ``max``/``"max"``.

Where it runs (:class:`Space`):

* ``HOST``: compiled code on threads (``@jit(parallel=True)``: the range is
  cut into one chunk per thread, partials combined in chunk order);
* ``CUDA`` and ``EMULATION`` (the CPU grid emulation of the same kernel):
  a kernel where each thread reduces a grid-strided share, each block
  reduces its threads' values in shared memory (a tree), and one thread per
  block adds the block's value with one atomic (``sum``, ``min``, ``max``);
  other reducers store one value per block, combined on the host.

Called inside compiled code (a ``@jit`` function, a function given to
``autodiff``), ``parallel_for``/``parallel_reduce`` compile to the same chunk
loop as a ``prange`` loop: threaded under ``parallel=True``, serial
elsewhere, and differentiable by the Enzyme plugin (the derivative runs the
loop serially). A Python function that calls them with ``space=Space.CUDA`` or
``Space.EMULATION`` is differentiated through the kernels (the Enzyme plugin's
``enzyme_plugin.launches.programs``, which uses :func:`reduce_on_device`).
"""

from __future__ import annotations

from .pristine import builtins  # as imported (pristine.py: the reducers key on its functions)
import enum
import functools
from .pristine import math
import operator
from collections.abc import Callable
from typing import Any

import attrs

from . import device as gd, types as T
from .arguments import cell_filled
from .errors import ConfigError, TypeInferenceError
from .runtime.arguments import argument_type
from .frontend import function_source, with_parameters
from .frontend.fingerprint import code_fingerprint
from .frontend.parallel import from_template
from .language.numpy.creation import KEYWORD_HINT
from .language.precedence import base
from .language.python.parallel import region_call
from .interpreter.lattice import Const, const, pyobj, widen
from .interpreter.rules import CallResult
from .jit import jit
from .kernel import CPU, Kernel
from .source.spec import FunctionSpec
from .targets import NativeTarget

BLOCK = 256
"""Threads per block of the reduction kernels (a power of two: the tree halves it)."""
MAX_BLOCKS = 1024
"""At most this many blocks; each thread then reduces a grid-strided share of the range."""


class Space(enum.Enum):
    """Where ``parallel_for``/``parallel_reduce`` run (Kokkos' execution spaces)."""

    HOST = "host"
    """compiled code on the host's threads (:class:`~gpucompiler.settings.ParallelSettings`)"""
    CUDA = "cuda"
    """a kernel on the GPU"""
    EMULATION = "emulation"
    """the same kernel in the CPU grid emulation"""


def _add(a, b):
    return a + b


def _mul(a, b):
    return a * b


def _min(a, b):
    return min(a, b)


def _max(a, b):
    return max(a, b)


@attrs.frozen
class Reducer:
    """A reduction: ``combine(a, b)`` (associative; compiled) and its ``identity``.

    ``atomic``: the device atomic that combines into memory (``atomic_add``...), if any.
    """

    name: str
    combine: Callable[[Any, Any], Any]
    identity: float | int
    atomic: Any = None

    def identity_of(self, t: T.Scalar) -> float | int:
        """The identity as a value of type ``t`` (the largest int64 for ``min`` of integers)."""
        if t.kind == "f":
            return float(self.identity)
        if math.isinf(self.identity):
            return (1 << (t.bits - 1)) - 1 if self.identity > 0 else -(1 << (t.bits - 1))
        return int(self.identity)


SUM = Reducer("sum", _add, 0, gd.atomic_add)
PROD = Reducer("prod", _mul, 1)
MIN = Reducer("min", _min, math.inf, gd.atomic_min)
MAX = Reducer("max", _max, -math.inf, gd.atomic_max)
_NAMED: dict[Any, Reducer] = {"sum": SUM, builtins.sum: SUM, operator.add: SUM, "prod": PROD, math.prod: PROD,
                              operator.mul: PROD, "min": MIN, builtins.min: MIN, "max": MAX, builtins.max: MAX}


def reducer_of(value) -> Reducer:
    """``value`` as a :class:`Reducer`; anything else is a ConfigError."""
    if isinstance(value, Reducer):
        return value
    try:
        found = _NAMED.get(value)
    except TypeError:  # unhashable
        found = None
    if found is None:
        raise ConfigError(f"a reducer is sum, min, max, math.prod, their names or a Reducer(name, combine, "
                          f"identity), got {value!r}")
    return found


# -- the chunk loops (compiled; the frontend lowers them from these templates) ---------------------

def _arg_names(nargs: int) -> str:
    return "".join(f", a{k}" for k in range(nargs))


@functools.lru_cache(maxsize=256)
def _reduce_chunk(functor, combine, nargs: int):
    a = _arg_names(nargs)
    return from_template(f"""
def chunk(__gpuc_lo, __gpuc_hi, __gpuc_start, __gpuc_step, acc{a}):
    for i in range(__gpuc_lo, __gpuc_hi):
        acc = combine(acc, functor(i{a}))
    return acc
""", "chunk", {"functor": functor, "combine": combine}, _name("parallel_reduce", functor),
        functor.__module__)


@functools.lru_cache(maxsize=256)
def _for_chunk(functor, nargs: int):
    a = _arg_names(nargs)
    return from_template(f"""
def chunk(__gpuc_lo, __gpuc_hi, __gpuc_start, __gpuc_step{a}):
    for i in range(__gpuc_lo, __gpuc_hi):
        functor(i{a})
""", "chunk", {"functor": functor}, _name("parallel_for", functor), functor.__module__)


def _name(what: str, functor) -> str:
    """A readable name, distinct for distinct functors of one qualified name (lambdas)."""
    return f"{what}[{functor.__qualname__}#{code_fingerprint(functor.__code__)[:8]}]"


def _functor(value, where: str):
    fn = getattr(value, "py_func", value)  # a @jit function: its Python function
    if not callable(fn) or not hasattr(fn, "__code__"):
        raise TypeInferenceError(f"{where}: the functor must be a Python function (or lambda), got {value!r}")
    return fn


@base.handler
def _parallel_calls(interp, fn, args):
    """``parallel_for``/``parallel_reduce`` in compiled code: a chunk loop run through ``parallel_region``."""
    if fn is not parallel_reduce and fn is not parallel_for:
        return None
    reduce = fn is parallel_reduce
    head = 3 if reduce else 2
    if len(args) < head or not all(isinstance(a, Const) and a.type == pyobj for a in args[1:head]):
        what = "parallel_reduce(n, functor, reducer, *args)" if reduce else "parallel_for(n, functor, *args)"
        raise TypeInferenceError(f"call {what} with a module-level functor and reducer",
                                 hint="inside compiled code the functor takes (i, *args): pass the arrays "
                                 "it reads as args")
    functor = _functor(args[1].value, fn.__name__)
    rest = list(args[head:])
    zero, one = const(0), const(1)

    def bounds(cg, vals, ats):
        return [vals[0], cg.const(T.int64, 0), cg.const(T.int64, 1)], [ats[0], zero, one]

    if not reduce:
        rt, lower = region_call(interp, _for_chunk(functor, len(rest)), None, zero, one, rest)

        def lower_for(cg, vals, ats, t):
            head_vals, head_types = bounds(cg, vals, ats)
            return lower(cg, [*head_vals, *vals[2:]], [*head_types, *ats[2:]], t)

        return CallResult(rt, lower_for)
    try:
        reducer = reducer_of(args[2].value)
    except ConfigError as exc:
        raise TypeInferenceError(str(exc)) from None
    ft = widen(interp.infer(functor, [T.int64, *rest]).rettype)
    _check_result(functor, ft)
    init = Const(reducer.identity_of(ft), ft)
    body = _reduce_chunk(functor, reducer.combine, len(rest))
    rt, lower = region_call(interp, body, reducer.combine, zero, one, [init, *rest])

    def lower_reduce(cg, vals, ats, t):
        head_vals, head_types = bounds(cg, vals, ats)
        return lower(cg, [*head_vals, cg.const(ft, init.value), *vals[3:]], [*head_types, init, *ats[3:]], t)

    return CallResult(rt, lower_reduce)


# -- host and device drivers ----------------------------------------------------------------------

def _closure_arrays(functor):
    """``(functor with the arrays it reads from closure cells or module globals as trailing parameters,
    those arrays)``: they are passed by reference, not frozen into the code."""
    found = {n: c.cell_contents for n, c in zip(functor.__code__.co_freevars, functor.__closure__ or ())
             if cell_filled(c) and _is_array(c.cell_contents)}
    g = functor.__globals__
    found.update({n: g[n] for n in functor.__code__.co_names if n in g and _is_array(g[n]) and n not in found})
    if not found:
        return functor, ()
    names = tuple(found)
    return _with_parameters(functor, names), tuple(found[n] for n in names)


@functools.lru_cache(maxsize=256)
def _with_parameters(functor, names: tuple[str, ...]):
    """One parametrised copy per functor: its driver and compiled code are then found again."""
    return with_parameters(functor, names)


def _is_array(value) -> bool:
    return hasattr(value, "__array_interface__") or hasattr(value, "__cuda_array_interface__")



@functools.lru_cache(maxsize=128)
def _host_driver(functor, reducer: Reducer | None, nargs: int):
    a = _arg_names(nargs)
    if reducer is None:
        source = f"def drive(n{a}):\n    parallel_for(n, functor{a})\n"
    else:
        source = f"def drive(n{a}):\n    return parallel_reduce(n, functor, reducer{a})\n"
    fn = from_template(source, "drive", {"functor": functor, "reducer": reducer, "parallel_for": parallel_for,
                                         "parallel_reduce": parallel_reduce},
                       _name("drive", functor), functor.__module__)
    return jit(parallel=True)(fn)


@functools.lru_cache(maxsize=128)
def _reduce_kernel(functor, reducer: Reducer, dtype: T.Scalar, nargs: int):
    a = _arg_names(nargs)
    finish = "atomic(out, 0, cache[0])" if reducer.atomic is not None else "out[blockIdx.x] = cache[0]"
    source = f"""
def reduce_kernel(out, n{a}):
    cache = shared_array(BLOCK, dtype)
    tid = threadIdx.x
    i = blockIdx.x * blockDim.x + tid
    stride = gridDim.x * blockDim.x
    acc = identity
    while i < n:
        acc = combine(acc, functor(i{a}))
        i += stride
    cache[tid] = acc
    syncthreads()
    s = BLOCK // 2
    while s > 0:
        if tid < s:
            cache[tid] = combine(cache[tid], cache[tid + s])
        syncthreads()
        s = s // 2
    if tid == 0:
        {finish}
"""
    cells = {"shared_array": gd.shared_array, "threadIdx": gd.threadIdx, "blockIdx": gd.blockIdx,
             "blockDim": gd.blockDim, "gridDim": gd.gridDim, "syncthreads": gd.syncthreads,
             "atomic": reducer.atomic, "functor": functor, "combine": reducer.combine,
             "identity": reducer.identity_of(dtype), "dtype": dtype, "BLOCK": BLOCK}
    return Kernel(from_template(source, "reduce_kernel", cells, _name("reduce_kernel", functor), functor.__module__))


@functools.lru_cache(maxsize=128)
def _for_kernel(functor, nargs: int):
    a = _arg_names(nargs)
    source = f"""
def for_kernel(n{a}):
    i = blockIdx.x * blockDim.x + threadIdx.x
    stride = gridDim.x * blockDim.x
    while i < n:
        functor(i{a})
        i += stride
"""
    cells = {"threadIdx": gd.threadIdx, "blockIdx": gd.blockIdx, "blockDim": gd.blockDim, "gridDim": gd.gridDim,
             "functor": functor}
    return Kernel(from_template(source, "for_kernel", cells, _name("for_kernel", functor), functor.__module__))


def _blocks(n: int) -> int:
    return max(1, min(MAX_BLOCKS, -(-n // BLOCK)))


def _launch(n: int, space: Space) -> tuple:
    """The launch configuration: enough blocks for ``n`` (at most MAX_BLOCKS), on the GPU or the emulation."""
    return (_blocks(n), BLOCK, CPU) if space is Space.EMULATION else (_blocks(n), BLOCK)


def _result_type(functor, args) -> T.Scalar:
    """The scalar type the functor returns for these arguments (inferred as the host would)."""
    types = (T.int64, *(argument_type(a, f"args[{k}]", functor.__qualname__) for k, a in enumerate(args)))
    rt = widen(FunctionSpec(functor, types).infer(NativeTarget(), (), False)[1].rettype)
    _check_result(functor, rt)
    return rt


def _check_result(functor, rt) -> None:
    """A reduced value is a number: else a TypeInferenceError at the functor's definition."""
    if not isinstance(rt, T.Scalar) or rt == T.boolean:
        node, filename, offset = function_source(functor)  # also of a copy taking closure arrays as parameters
        loc = (filename, node.lineno + offset, 0)
        raise TypeInferenceError(f"parallel_reduce: the functor {functor.__qualname__} returns {rt!r}, not a "
                                 "number", (rt,), loc, functor.__qualname__, hint="return an int or a float")


def _count(n, what: str) -> int:
    """The iteration count of a call from Python: an integer (``range``'s rule), else a TypeError."""
    try:
        return operator.index(n)
    except TypeError:
        raise TypeError(f"{what}: n must be an int (the iterations are range(n)), got {type(n).__name__}") from None


def _space(space) -> Space:
    if not isinstance(space, Space):
        raise ConfigError(f"space must be a gpucompiler.Space (Space.HOST, Space.CUDA, Space.EMULATION), "
                          f"got {space!r}")
    return space


def parallel_for(n: int, functor, *args, space: Space = Space.HOST) -> None:
    """Call ``functor(i, *args)`` for every ``i`` in ``range(n)``, in parallel (see the module docstring)."""
    space = _space(space)
    n = _count(n, "parallel_for")
    fn, extra = _closure_arrays(_functor(functor, "parallel_for"))
    args = (*args, *extra)
    if space is Space.HOST:
        _host_driver(fn, None, len(args))(n, *args)
        return
    _for_kernel(fn, len(args))[_launch(n, space)](n, *args)


def parallel_reduce(n: int, functor, reducer, *args, space: Space = Space.HOST):
    """``reducer``'s combination of ``functor(i, *args)`` over ``i`` in ``range(n)`` (its identity when
    ``n <= 0``), in parallel (see the module docstring)."""
    space = _space(space)
    n = _count(n, "parallel_reduce")
    red = reducer_of(reducer)
    fn, extra = _closure_arrays(_functor(functor, "parallel_reduce"))
    args = (*args, *extra)
    if space is Space.HOST:
        return _host_driver(fn, red, len(args))(n, *args)
    return _device_reduce(n, fn, red, args, space).value


for _region in (parallel_for, parallel_reduce):  # space= in compiled code: say where device regions run
    setattr(_region, KEYWORD_HINT, "in compiled code parallel_for/parallel_reduce run on the host (the chunk loop): "
            "call them with space=Space.CUDA or Space.EMULATION from Python (autodiff of such a Python function "
            "differentiates it through the kernels, docs/autodiff.md)")


@attrs.frozen
class DeviceReduction:
    """A reduction run by a kernel (``Space.CUDA``, ``Space.EMULATION``): its value and how it ran."""

    value: float | int
    out: Any
    """the kernel's result array (one element for reducers with an atomic, else one per block)"""
    kernel: Kernel
    """the reduction kernel, launched as ``kernel[grid, BLOCK](out, n, *args)``"""
    functor: Any
    """the functor as compiled: arrays it read from a closure or globals are trailing parameters"""
    reducer: Reducer
    dtype: T.Scalar
    """the functor's result type (the element type of ``out``)"""
    args: tuple
    """the functor's arguments after ``i``, the closure's arrays last"""
    n: int
    grid: int
    """blocks of the launch (of :data:`BLOCK` threads)"""

    @property
    def block(self) -> int:
        return BLOCK


def reduce_on_device(n: int, functor, reducer, *args, space: Space) -> DeviceReduction:
    """``parallel_reduce(n, functor, reducer, *args, space=space)`` on a device space, with the kernel, its
    result array and the functor as compiled (what a gradient of the reduction needs)."""
    space = _space(space)
    if space is Space.HOST:
        raise ConfigError("reduce_on_device runs on Space.CUDA or Space.EMULATION, got Space.HOST")
    n = _count(n, "reduce_on_device")
    fn, extra = _closure_arrays(_functor(functor, "parallel_reduce"))
    return _device_reduce(n, fn, reducer_of(reducer), (*args, *extra), space)


def _device_reduce(n: int, fn, red: Reducer, args: tuple, space: Space) -> DeviceReduction:
    import numpy as np  # import time: NumPy (~240 ms), only for device reductions

    dtype = _result_type(fn, args)
    grid = _blocks(n)
    out = np.full(1 if red.atomic is not None else grid, red.identity_of(dtype), dtype=np.dtype(dtype.name))
    kernel = _reduce_kernel(fn, red, dtype, len(args))
    kernel[_launch(n, space)](out, n, *args)
    value = functools.reduce(red.combine, out.tolist()) if red.atomic is None else out.tolist()[0]
    return DeviceReduction(value, out, kernel, fn, red, dtype, args, n, grid)


__all__ = ["BLOCK", "MAX", "MIN", "PROD", "SUM", "DeviceReduction", "Reducer", "Space", "parallel_for",
           "parallel_reduce", "reduce_on_device", "reducer_of"]
