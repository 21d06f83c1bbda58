"""``np.eye``, ``np.identity``, ``np.trace`` and ``np.diag`` of a 1-d array: loops compiled like user
code, with NumPy's dtypes (``dtype=`` a constant, float64 by default; ``trace`` sums as ``sum`` does).

``np.diag`` of a 2-d array is NumPy's read-only view of the diagonal: not offered (a writable copy would
accept writes NumPy refuses); ``np.diagonal(m).copy()`` is NumPy's spelling of the copy, also not compiled:
both are typed errors naming the loop to write.
"""

from __future__ import annotations

from ... import types as T
from ...errors import TypeInferenceError
from ...frontend.intrinsics import setitem_unchecked
from ...interpreter.lattice import Const, const, widen
from .npcalls import Bindings, Plan, Signature, register
from .npdtypes import dtype_of
from .npintrinsics import element, new_array
from ..python.numbers import base
from .ufuncs import is_arraylike


def eye(n, m, k, dt):
    out = new_array((n, m), dt)
    for i in range(n):
        for j in range(m):
            setitem_unchecked(out, (i, j), dt(1) if j - i == k else dt(0))
    return out


def trace(x, k, dt):
    n, m = x.shape
    s = dt(0)
    for i in range(n):
        if 0 <= i + k < m:
            s += dt(element(x, i, i + k))
    return s


def diag_matrix(v, k, dt):
    """The square matrix with ``v`` on diagonal ``k``."""
    n = v.shape[0]
    size = n + (k if k >= 0 else -k)
    out = new_array((size, size), dt)
    for i in range(size):
        for j in range(size):
            setitem_unchecked(out, (i, j), dt(0))
    for i in range(n):
        if k >= 0:
            setitem_unchecked(out, (i, i + k), dt(element(v, i)))
        else:
            setitem_unchecked(out, (i - k, i), dt(element(v, i)))
    return out


def _count(name: str, bound: Bindings, key: str):
    index, value = bound[key]
    t = widen(value)
    if not (isinstance(t, T.Scalar) and t.kind in "iu"):
        raise TypeInferenceError(f"np.{name}(): {key} must be an integer, not {t!r}", (t,))
    return index, value


def _dtype(name: str, bound: Bindings) -> T.Scalar:
    if "dtype" not in bound:
        return T.float64
    return dtype_of(bound["dtype"][1], f"np.{name}()'s dtype")


def _eye(name: str, bound: Bindings) -> Plan:
    if "N" not in bound and "n" not in bound:
        raise TypeInferenceError(f"np.{name}() needs the number of rows")
    n = _count(name, bound, "N" if name == "eye" else "n")
    m = bound.get("M")
    if m is None or (isinstance(m[1], Const) and m[1].value is None):
        m = n
    else:
        m = _count(name, bound, "M")
    k = _count(name, bound, "k") if "k" in bound else (None, const(0))
    return eye, [n, m, k, (None, const(_dtype(name, bound)))]


def _trace(name: str, bound: Bindings) -> Plan:
    if "a" not in bound or not is_arraylike(bound["a"][1]) or widen(bound["a"][1]).ndim != 2:
        raise TypeInferenceError("np.trace() takes a 2-d array in compiled code", hint="pass a matrix")
    d = widen(bound["a"][1]).dtype
    dt = _dtype(name, bound) if "dtype" in bound else {"b": T.int64, "i": T.int64, "u": T.uint64}.get(d.kind, d)
    k = _count(name, bound, "offset") if "offset" in bound else (None, const(0))
    return trace, [bound["a"], k, (None, const(dt))]


def _diag(name: str, bound: Bindings) -> Plan:
    v = bound.get("v")
    if v is None or not is_arraylike(v[1]):
        raise TypeInferenceError("np.diag() takes an array in compiled code")
    t = widen(v[1])
    if t.ndim != 1:
        raise TypeInferenceError("np.diag() of a 2-d array is NumPy's read-only view of its diagonal: not "
                                 "supported in compiled code", (t,),
                                 hint="write the loop: d[i] = m[i, i] for i in range(min(m.shape))")
    k = _count(name, bound, "k") if "k" in bound else (None, const(0))
    return diag_matrix, [v, k, (None, const(t.dtype))]


register(base, __name__, {
    "eye": (Signature(("N", "M", "k", "dtype", "order", "device", "like"), frozenset({"N", "M", "k", "dtype"})), _eye),
    "identity": (Signature(("n", "dtype", "like"), frozenset({"n", "dtype"})), _eye),
    "trace": (Signature(("a", "offset", "axis1", "axis2", "dtype", "out"), frozenset({"a", "offset", "dtype"})),
              _trace),
    "diag": (Signature(("v", "k"), frozenset({"v", "k"})), _diag),
})
