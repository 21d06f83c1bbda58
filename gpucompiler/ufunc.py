"""``@vectorize`` and ``@guvectorize``: Numba's universal-function decorators, loops compiled.

``@vectorize`` turns a scalar function into a callable that behaves as a
NumPy ufunc: its arguments broadcast, a dtype signature is chosen as NumPy
chooses a loop (the first whose inputs convert safely; with no signatures,
one compile per input dtypes), ``out=`` is written in place, and
``reduce``/``accumulate`` work for two-input functions. The loop over the
elements is compiled (a ``@jit`` function generated per arity and
dimension that calls the scalar function): no Python call per element.
``@guvectorize`` does the same for a function over core dimensions
(``"(n),()->(n)"``): the compiled loop calls it once per broadcast element
with views of the arrays.

What these are not: objects of type ``np.ufunc``. ``isinstance(f,
np.ufunc)`` is False, array subclasses' ``__array_ufunc__`` is not asked,
and the keywords ``where``, ``casting``, ``order``, ``subok`` are refused
(a ConfigError); ``outer``, ``at`` and ``reduceat`` do not exist.
``target="parallel"`` runs the outer loop as ``prange`` on threads;
``target="cuda"`` needs a visible NVIDIA GPU (a ConfigError otherwise) and
runs the elements as a GPU kernel.
"""

from __future__ import annotations

import functools
import itertools
import linecache
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from . import device as gd
from . import types as T
from .errors import ConfigError, GPUCompilerError
from .frontend.intrinsics import prange
from .jit import Dispatcher, jit, numba_options
from .kernel import kernel
from .runtime.cuda import current_context
from .signatures import Signature, parse_signature

__all__ = ["GUFunc", "UFunc", "guvectorize", "vectorize"]

_TARGETS = ("cpu", "parallel", "cuda")
_REFUSED_KEYWORDS = ("where", "casting", "order", "subok", "signature", "dtype", "axes", "axis", "keepdims")
_KIND = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}
_counter = itertools.count()


def _generated(source: str, name: str, scope: dict) -> Any:
    """The function ``name`` of ``source``, with a file name :mod:`linecache` serves (the frontend
    reads the source through it)."""
    filename = f"<gpucompiler.ufunc {next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), scope)
    return scope[name]


@functools.cache
def _dtype(t: T.Type):
    return np.dtype(repr(t))


def _indices(shape: tuple, operand: tuple) -> str:
    """How ``loop`` indexes an operand of shape ``operand`` broadcast to ``shape``: its own axes,
    right-aligned, ``0`` along an axis of length 1 that broadcasts (the operand is not copied)."""
    lead = len(shape) - len(operand)
    axes = ["0" if n == 1 and shape[lead + k] != 1 else f"i{lead + k}" for k, n in enumerate(operand)]
    return ", ".join(axes) if axes else "()"


def _loop_source(patterns: tuple, ndim: int, parallel: bool) -> str:
    """``loop(a0, .., out)``: ``out[i] = kernel(a0[...], ..)`` over ``ndim`` axes, each operand
    indexed by its pattern (:func:`_indices`)."""
    idx = ", ".join(f"i{d}" for d in range(ndim)) if ndim else "()"
    lines = ["def loop(" + ", ".join([*(f"a{k}" for k in range(len(patterns))), "out"]) + "):"]
    for d in range(ndim):
        rng = "prange" if parallel and d == 0 else "range"
        lines.append("    " * (d + 1) + f"for i{d} in {rng}(out.shape[{d}]):")
    args = ", ".join(f"a{k}[{p}]" for k, p in enumerate(patterns))
    lines.append("    " * (ndim + 1) + f"out[{idx}] = kernel({args})")
    return "\n".join(lines) + "\n"


_REDUCE = """def reduce(a, out):
    for i in range(a.shape[0]):
        acc = a[i, 0]
        for j in range(1, a.shape[1]):
            acc = kernel(acc, a[i, j])
        out[i] = acc
"""
_ACCUMULATE = """def accumulate(a, out):
    for i in range(a.shape[0]):
        acc = a[i, 0]
        out[i, 0] = acc
        for j in range(1, a.shape[1]):
            acc = kernel(acc, a[i, j])
            out[i, j] = acc
"""
_CUDA = """def elements({params}, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = kernel({args})
"""


#: Python scalar classes, weak in NumPy 2's promotion, and their kinds
_WEAK = {bool: "b", int: "i", float: "f", complex: "c"}


def _weak_fits(cls: type, t: T.Type) -> bool:
    """A Python scalar of class ``cls`` converts to ``t`` when its kind is not above ``t``'s."""
    return isinstance(t, T.Scalar) and _KIND[_WEAK[cls]] <= _KIND[t.kind]


class UFunc:
    """A compiled universal function (see the module's docstring for how it differs from ``np.ufunc``)."""

    def __init__(self, fn, signatures: tuple[Signature, ...], identity=None, target: str = "cpu", **options):
        self.py_func, self.identity, self.target = fn, identity, target
        self.__name__, self.__doc__ = fn.__name__, fn.__doc__
        self.nin, self.nout = fn.__code__.co_argcount, 1
        self.nargs = self.nin + 1
        for sig in signatures:
            if sig.restype is None or sig.restype == T.none or not all(isinstance(a, T.Scalar) for a in sig.args):
                raise ConfigError(f"vectorize signature {sig} of {fn.__qualname__}: scalar argument types and a "
                                  "scalar result, as 'float64(float64, float64)'")
            if len(sig.args) != self.nin:
                raise ConfigError(f"vectorize signature {sig} has {len(sig.args)} arguments; {fn.__qualname__} "
                                  f"takes {self.nin}")
        self._signatures = signatures
        options = {"error_model": "numpy", **options}  # a ufunc gives inf/NaN where Python would raise
        self._kernel = Dispatcher(fn, signatures=signatures, **options)  # compiles the signatures now
        self._parallel = target == "parallel"
        # the generated loops index within the broadcast shape by construction (unless checks are asked for)
        self._options = {"boundscheck": False, **options, **({"parallel": True} if self._parallel else {})}
        self._loops: dict = {}
        self._chosen: dict = {}
        self._device: tuple = ()  # target="cuda": the launch's device (the default GPU)

    @property
    def types(self) -> list[str]:
        """The signatures as NumPy's type strings (``'dd->d'``)."""
        return ["".join(_dtype(a).char for a in s.args) + "->" + _dtype(s.restype or T.none).char
                for s in self._signatures]

    @property
    def ntypes(self) -> int:
        return len(self._signatures)

    def _choose(self, values) -> tuple[tuple, T.Type]:
        """The argument types to compute in and the result type, per the inputs' dtypes (a Python
        scalar by its class: NumPy 2's weak scalars), remembered."""
        key = tuple(type(v) if type(v) in _WEAK else np.asarray(v).dtype for v in values)
        hit = self._chosen.get(key)
        if hit is None:
            hit = self._chosen[key] = self._resolve(key)
        return hit

    def _resolve(self, key) -> tuple[tuple, T.Type]:
        """The first signature every input converts to safely (with none declared, the inputs' own types)."""
        if not self._signatures:
            argtypes = tuple(T.typeof(np.dtype(k).type(0)) for k in key)
            return argtypes, self._kernel.result_type(*argtypes)
        for sig in self._signatures:
            if all(_weak_fits(k, t) if k in _WEAK else np.can_cast(k, _dtype(t), "safe")
                   for k, t in zip(key, sig.args)):
                assert sig.restype is not None
                return sig.args, sig.restype
        got = ", ".join(str(np.dtype(k)) for k in key)
        raise ConfigError(f"{self.__name__} has no loop for ({got}): its signatures are {', '.join(self.types)}; "
                          "convert the inputs or add a signature")

    def _loop(self, key, source: Callable[[], str], name: str):
        loop = self._loops.get(key)
        if loop is None:
            scope = {"kernel": self.py_func, "prange": prange}
            loop = self._loops[key] = jit(**self._options)(_generated(source(), name, scope))
        return loop

    def __call__(self, *args, out=None, **kwargs):
        bad = sorted(set(kwargs) & set(_REFUSED_KEYWORDS)) or sorted(kwargs)
        if bad:
            raise ConfigError(f"{self.__name__}: the ufunc keyword {bad[0]!r} is not supported by compiled "
                              "ufuncs (out= is)")
        if len(args) == self.nargs and out is None:
            args, out = args[:-1], args[-1]
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes {self.nin} positional arguments (and out), got {len(args)}")
        if isinstance(out, tuple):
            (out,) = out
        argtypes, restype = self._choose(args)
        arrays = [np.asarray(v, dtype=_dtype(t)) for v, t in zip(args, argtypes)]
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        if out is not None and (not isinstance(out, np.ndarray) or out.shape != shape):
            raise ValueError(f"{self.__name__}: out must be an array of shape {shape}")
        rdtype = _dtype(restype)
        if out is not None and out.dtype == rdtype and out.flags.writeable:
            result, direct = out, True
        else:
            result, direct = np.empty(shape, rdtype), False
        if self.target == "cuda":
            self._cuda(arrays, argtypes, result)
        else:
            flat = result
            if len(shape) > 1 and result.flags.c_contiguous and all(a.shape == shape and a.flags.c_contiguous
                                                                    for a in arrays):
                arrays, flat = [a.reshape(-1) for a in arrays], result.reshape(-1)
            patterns = tuple(_indices(flat.shape, a.shape) for a in arrays)
            loop = self._loop(("map", flat.ndim, patterns),
                              lambda: _loop_source(patterns, flat.ndim, self._parallel), "loop")
            loop(*arrays, flat)
        if out is not None:
            if not direct:
                np.copyto(out, result, casting="same_kind")
            return out
        return result[()] if result.ndim == 0 else result

    def _cuda(self, arrays, argtypes, result) -> None:
        flat = [np.ascontiguousarray(np.broadcast_to(a, result.shape)).reshape(-1) for a in arrays]
        dest = np.empty(result.size, result.dtype)
        k: Any = self._loops.get("cuda")
        if k is None:
            names = [f"a{j}" for j in range(self.nin)]
            source = _CUDA.format(params=", ".join(names), args=", ".join(f"{n}[i]" for n in names))
            k = self._loops["cuda"] = kernel(_generated(source, "elements", {"kernel": self.py_func, "gd": gd}))
        k[((dest.size + 255) // 256, 256, *self._device)](*flat, dest)
        result[...] = dest.reshape(result.shape)

    def _along(self, array, axis, dtype):
        """``array`` in the reduction's type with ``axis`` last, as 2-D, and the kept shape."""
        if self.nin != 2:
            raise ConfigError(f"{self.__name__}: reduce and accumulate need a function of two arguments")
        a = np.asarray(array)
        if axis is None:
            a, axis = a.reshape(-1), 0
        if not isinstance(axis, int):
            raise ConfigError(f"{self.__name__}: reduce over {axis!r}: give one axis (an int) or None")
        if dtype is None:
            t = T.typeof(a.dtype.type(0))
            dtype = _dtype(self._choose((a.dtype.type(0), a.dtype.type(0)))[1]) if t is not None else a.dtype
        moved = np.moveaxis(a, axis, -1).astype(dtype, copy=False)
        kept = moved.shape[:-1]
        rows = math.prod(kept)
        return np.ascontiguousarray(moved.reshape(rows, moved.shape[-1])), kept, axis

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False, initial=None):
        """NumPy's ``ufunc.reduce`` over one axis (or all, ``axis=None``), compiled."""
        a2, kept, axis = self._along(array, axis, dtype)
        if initial is None and self.identity not in (None, "reorderable") and a2.shape[1] == 0:
            initial = self.identity
        if initial is not None:
            a2 = np.concatenate([np.full((a2.shape[0], 1), initial, a2.dtype), a2], axis=1)
        if a2.shape[1] == 0:
            raise ValueError(f"zero-size array to reduction operation {self.__name__} which has no identity")
        res = np.empty(a2.shape[0], a2.dtype)
        self._loop(("reduce",), lambda: _REDUCE, "reduce")(a2, res)
        res = res.reshape(kept)
        if keepdims:
            res = np.expand_dims(res, axis)
        if out is not None:
            np.copyto(out, res, casting="same_kind")
            return out
        return res[()] if res.ndim == 0 else res

    def accumulate(self, array, axis=0, dtype=None, out=None):
        """NumPy's ``ufunc.accumulate`` along one axis, compiled."""
        a2, kept, axis = self._along(array, axis, dtype)
        res = np.empty_like(a2)
        if a2.shape[1]:
            self._loop(("accumulate",), lambda: _ACCUMULATE, "accumulate")(a2, res)
        res = np.moveaxis(res.reshape((*kept, a2.shape[1])), -1, axis)
        if out is not None:
            np.copyto(out, res, casting="same_kind")
            return out
        return res

    def __repr__(self) -> str:
        return f"<compiled ufunc {self.__name__}>"


_LAYOUT = re.compile(r"^\s*(\([\w\s,]*\)(?:\s*,\s*\([\w\s,]*\))*)\s*->\s*(\([\w\s,]*\)(?:\s*,\s*\([\w\s,]*\))*)\s*$")


def _dims(text: str) -> list[tuple[str, ...]]:
    return [tuple(d.strip() for d in g.split(",") if d.strip()) for g in re.findall(r"\(([^)]*)\)", text)]


class GUFunc:
    """A compiled generalized ufunc: ``fn(*inputs, *outputs)`` over core dimensions, called once per
    broadcast element of the loop dimensions (outputs are written by ``fn``)."""

    def __init__(self, fn, signatures: tuple[Signature, ...], layout: str, target: str = "cpu", **options):
        m = _LAYOUT.match(layout)
        if m is None:
            raise ConfigError(f"guvectorize layout {layout!r}: write it as '(n),()->(n)'")
        self.ins, self.outs = _dims(m.group(1)), _dims(m.group(2))
        self.py_func, self.signature, self.target = fn, layout.replace(" ", ""), target
        self.__name__, self.__doc__ = fn.__name__, fn.__doc__
        self.nin, self.nout = len(self.ins), len(self.outs)
        if fn.__code__.co_argcount != self.nin + self.nout:
            raise ConfigError(f"guvectorize {fn.__qualname__} takes {fn.__code__.co_argcount} arguments; the layout "
                              f"{layout!r} has {self.nin} inputs and {self.nout} outputs")
        known = {d for dims in self.ins for d in dims}
        if any(d not in known for dims in self.outs for d in dims):
            raise ConfigError(f"guvectorize layout {layout!r}: an output dimension no input has cannot be sized")
        for sig in signatures:
            if len(sig.args) != self.nin + self.nout:
                raise ConfigError(f"guvectorize signature {sig} has {len(sig.args)} arguments; {fn.__qualname__} "
                                  f"takes {self.nin + self.nout}")
        if target == "cuda":
            raise ConfigError("guvectorize(target='cuda') is not built: use target='cpu' or 'parallel', or "
                              "write the kernel with @kernel")
        options = {"error_model": "numpy", **options}  # as vectorize's
        self._signatures, self._options = signatures, ({**options, "parallel": True} if target == "parallel"
                                                       else options)
        jit(**self._options)  # the options checked now
        self._loops: dict = {}

    def _choose(self, values):
        if not self._signatures:
            dt = np.result_type(*values)
            return [np.asarray(v).dtype for v in values], [dt] * self.nout
        for sig in self._signatures:
            dts = [_dtype(t.dtype if isinstance(t, T.ArrayType) else t) for t in sig.args]
            if all(np.can_cast(np.asarray(v).dtype, d, "safe") for v, d in zip(values, dts)):
                return dts[:self.nin], dts[self.nin:]
        got = ", ".join(str(np.asarray(v).dtype) for v in values)
        raise ConfigError(f"{self.__name__} has no loop for ({got}); convert the inputs or add a signature")

    def __call__(self, *args, out=None):
        outs = list(out) if isinstance(out, tuple) else ([out] if out is not None else [])
        if len(args) == self.nin + self.nout and not outs:
            args, outs = args[:self.nin], list(args[self.nin:])
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes {self.nin} inputs (and {self.nout} outputs), got {len(args)}")
        in_dts, out_dts = self._choose(args)
        arrays = [np.asarray(v, dtype=d) for v, d in zip(args, in_dts)]
        sizes: dict[str, int] = {}
        loops = []
        for a, dims in zip(arrays, self.ins):
            if a.ndim < len(dims):
                raise ValueError(f"{self.__name__}: an input of {a.ndim} dimensions for core dimensions {dims}")
            core = a.shape[a.ndim - len(dims):]
            for d, n in zip(dims, core):
                if sizes.setdefault(d, n) != n:
                    raise ValueError(f"{self.__name__}: core dimension {d} is {sizes[d]} and {n}")
            loops.append(a.shape[:a.ndim - len(dims)])
        loop_shape = np.broadcast_shapes(*loops)
        count = int(np.prod(loop_shape))
        views = [np.broadcast_to(a, loop_shape + a.shape[a.ndim - len(d):]).reshape((count, *a.shape[a.ndim - len(d):]))
                 for a, d in zip(arrays, self.ins)]
        results = []
        for k, (dims, dt) in enumerate(zip(self.outs, out_dts)):
            shape = loop_shape + tuple(sizes[d] for d in dims)
            if k < len(outs):
                if outs[k].shape != shape:
                    raise ValueError(f"{self.__name__}: output {k} must have shape {shape}")
                results.append(outs[k])
            else:
                results.append(np.empty(shape, dt))
        flat = [r.reshape((count, *r.shape[len(loop_shape):])) if r.flags.c_contiguous else
                np.empty((count, *r.shape[len(loop_shape):]), r.dtype) for r in results]
        flat = [f if f.ndim > 1 else f.reshape(count, 1) for f in flat]
        self._loop()(*views, *flat)
        for r, f in zip(results, flat):
            if not np.shares_memory(r, f):
                r[...] = f.reshape(r.shape)
        if outs:
            return outs[0] if self.nout == 1 else tuple(outs)
        return results[0] if self.nout == 1 else tuple(results)

    def _loop(self):
        loop = self._loops.get("loop")
        if loop is None:
            rng = "prange" if self.target == "parallel" else "range"
            ins = [f"a{k}" for k in range(self.nin)]
            outs = [f"o{k}" for k in range(self.nout)]
            call = [f"{n}[i]" for n in ins] + [f"{n}[i]" for n in outs]
            source = (f"def loop({', '.join(ins + outs)}):\n    for i in {rng}({outs[0]}.shape[0]):\n"
                      f"        kernel({', '.join(call)})\n")
            scope = {"kernel": self.py_func, "prange": prange}
            loop = self._loops["loop"] = jit(**self._options)(_generated(source, "loop", scope))
        return loop

    def __repr__(self) -> str:
        return f"<compiled gufunc {self.__name__} {self.signature}>"


def _signatures(ftylist) -> tuple[Signature, ...]:
    if ftylist is None:
        return ()
    items = ftylist if isinstance(ftylist, (list, tuple)) else [ftylist]
    return tuple(parse_signature(s) for s in items)


def _target(target: str) -> str:
    if target not in _TARGETS:
        raise ConfigError(f"target must be one of {', '.join(map(repr, _TARGETS))}, got {target!r}")
    if target == "cuda":
        try:
            current_context()
        except GPUCompilerError as exc:
            raise ConfigError(f"target='cuda' needs a visible NVIDIA GPU and its driver ({exc}); use target='cpu' "
                              "or 'parallel'") from None
    return target


def vectorize(ftylist_or_function=None, /, *, identity=None, target: str = "cpu", **options) -> Any:
    """Numba's ``@vectorize``: ``@vectorize``, ``@vectorize(["float64(float64, float64)"])`` (those
    loops only, compiled now) or ``@vectorize(target="parallel")``; ``options`` are :func:`jit`'s."""
    options = numba_options(options)[0]
    if callable(ftylist_or_function) and not isinstance(ftylist_or_function, (str, Signature)):
        return UFunc(ftylist_or_function, (), identity, _target(target), **options)
    sigs = _signatures(ftylist_or_function)
    target = _target(target)
    return lambda fn: UFunc(fn, sigs, identity, target, **options)


def guvectorize(ftylist, layout: str | None = None, /, *, target: str = "cpu", **options) -> Any:
    """Numba's ``@guvectorize([signatures], "(n),()->(n)")``; the signatures may be left out
    (``@guvectorize("(n)->(n)")``: the outputs take the inputs' result type)."""
    options = numba_options(options)[0]
    if layout is None:
        if not isinstance(ftylist, str):
            raise ConfigError("guvectorize needs a layout such as '(n),()->(n)'")
        ftylist, layout = None, ftylist
    sigs = _signatures(ftylist)
    target = _target(target)
    return lambda fn: GUFunc(fn, sigs, layout, target, **options)
