"""Conveniences over :func:`enzyme_plugin.dispatch.autodiff`: ``gradient``, ``jacobian``, ``hvp`` (plain Python).

* ``gradient(f, x)``: one reverse sweep; ``x`` a float gives a float, ``x`` a
  float array an array of its shape. ``f`` returns a float.
* ``jacobian(f, x)``: forward sweeps, one per element of ``x``. ``f(x)``
  returning a float gives an array of ``x``'s shape (the gradient);
  ``jacobian(f, x, y)`` with ``f(x, y)`` writing its array result into ``y``
  (compiled code does not allocate arrays) gives ``y.shape + x.shape``.
* ``hvp(f, x, v)``: forward mode over a reverse-mode gradient of ``f``
  (higher-order AD), the Hessian of ``f`` at ``x`` times ``v``.

A float-valued ``f`` is checked by one compiled call of ``f`` (on copies of
the arrays): a function returning anything else would get zero derivatives.
"""

from __future__ import annotations

import functools
import linecache

import numpy as np

from gpucompiler.errors import ArgumentTypeError

from .activities import ACTIVITIES, Active, Const, Duplicated
from .compiled import checked_function, primal_value
from .dispatch import autodiff
from .locations import user_errors
from .modes import Forward, Reverse


def _kind(fname: str, name: str, v) -> str:
    """``"scalar"`` or ``"array"``; anything else is an :class:`ArgumentTypeError` naming the argument."""
    if isinstance(v, float) or (isinstance(v, np.floating) and v.ndim == 0):
        return "scalar"
    if isinstance(v, np.ndarray) and v.dtype.kind == "f":
        return "array"
    shown = f"ndarray of dtype {v.dtype}" if isinstance(v, np.ndarray) else type(v).__name__
    raise ArgumentTypeError(name, shown, function=fname,
                            hint="pass a Python float or a float NumPy array (np.asarray(x, dtype=float))")


def _check_f(fname: str, f) -> None:
    checked_function(f, fname)


def _check_float_valued(fname: str, f, *args) -> None:
    """``f(*args)`` (compiled, on copies of arrays) must be a float: otherwise the derivative would be zeros."""
    value = primal_value(f, tuple(Const(a) for a in args))
    if not isinstance(value, float):
        raise ArgumentTypeError("f", f"a function returning {type(value).__name__}", function=fname,
                                hint="differentiate a function that returns a float (for a vector result "
                                     "written into an array use jacobian(f, x, y))")


@user_errors
def gradient(f, x):
    """The gradient of the float-valued ``f`` at ``x`` (a float, or a float array: same shape), one reverse sweep."""
    _check_f("gradient", f)
    kind = _kind("gradient", "x", x)
    _check_float_valued("gradient", f, x)
    if kind == "scalar":
        return autodiff(Reverse, f, Active(float(x)))[0]
    x = np.ascontiguousarray(x)  # a shadow has its value's strides
    dx = np.zeros_like(x)
    autodiff(Reverse, f, Duplicated(x, dx))
    return dx


@user_errors
def jacobian(f, x, y=None):
    """The Jacobian of ``f`` at the float array ``x`` by forward sweeps, one per element of ``x``.

    ``jacobian(f, x)``: ``f(x)`` is a float, the result has ``x``'s shape.
    ``jacobian(f, x, y)``: ``f(x, y)`` writes its result into the float array ``y``;
    the result has shape ``y.shape + x.shape`` and ``y`` holds ``f``'s value.
    """
    _check_f("jacobian", f)
    if _kind("jacobian", "x", x) != "array":
        raise ArgumentTypeError("x", type(x).__name__, function="jacobian",
                                hint="pass a float NumPy array (for a float x use gradient(f, x))")
    if y is not None and _kind("jacobian", "y", y) != "array":
        raise ArgumentTypeError("y", type(y).__name__, function="jacobian",
                                hint="pass the float array f(x, y) writes its result into")
    xs = np.array(x)  # the sweeps read x at the same point every time
    if y is None:
        _check_float_valued("jacobian", f, xs)
    flat = np.zeros(xs.size)
    out = np.zeros((y.size if y is not None else 1, xs.size))
    for j in range(xs.size):
        flat[:] = 0.0
        flat[j] = 1.0
        if y is None:
            out[0, j] = autodiff(Forward, f, Duplicated(xs, flat.reshape(xs.shape)))[0]
        else:
            ys = np.ascontiguousarray(y)  # a shadow has its value's strides; a strided y gets f's value below
            dy = np.zeros_like(ys)
            autodiff(Forward, f, Duplicated(xs, flat.reshape(xs.shape)), Duplicated(ys, dy))
            out[:, j] = dy.ravel()
            if ys is not y:
                y[...] = ys
    return out.reshape(xs.shape) if y is None else out.reshape(y.shape + xs.shape)


@user_errors
def hvp(f, x, v):
    """The Hessian of the float-valued ``f`` at ``x`` times ``v`` (forward over reverse; ``v`` like ``x``)."""
    _check_f("hvp", f)
    kind = _kind("hvp", "x", x)
    if _kind("hvp", "v", v) != kind or np.shape(v) != np.shape(x):
        raise ArgumentTypeError("v", f"{type(v).__name__} of shape {np.shape(v)}", function="hvp",
                                hint=f"pass a direction like x ({type(x).__name__} of shape {np.shape(x)})")
    _check_float_valued("hvp", f, x)
    grad = _gradient_function(f, kind)
    if kind == "scalar":
        return autodiff(Forward, grad, Duplicated(float(x), float(v)))[0]
    x = np.ascontiguousarray(x)  # a shadow has its value's strides
    dx, hv = np.zeros_like(x), np.zeros_like(x)
    autodiff(Forward, grad, Duplicated(x, np.array(v, dtype=x.dtype)), Duplicated(dx, hv))
    return hv


@functools.lru_cache(maxsize=256)
def _gradient_function(f, kind: str):
    """A compilable ``grad_f`` (``x -> f'(x)`` or ``(x, dx) -> None`` adding into ``dx``) for the outer sweep."""
    if kind == "scalar":
        src = "def grad_f(x):\n    return autodiff(Reverse, F, Active(x))[0]\n"
    else:
        src = "def grad_f(x, dx):\n    autodiff(Reverse, F, Duplicated(x, dx))\n"
    filename = f"<enzyme_plugin.hvp {f.__module__}.{f.__qualname__} {kind}>"
    # source for the frontend; no mtime (None), so linecache.checkcache keeps the entry
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)  # pyright: ignore[reportArgumentType]
    namespace = {"autodiff": autodiff, "Reverse": Reverse, "F": f, **ACTIVITIES}
    exec(compile(src, filename, "exec"), namespace)
    return namespace["grad_f"]


__all__ = ["gradient", "jacobian", "hvp"]
