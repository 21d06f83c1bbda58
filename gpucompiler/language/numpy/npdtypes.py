"""What names NumPy's functions and dtypes: ``numpy_function(np.zeros)`` is ``"zeros"``,
``dtype_of(np.float32)`` the compiled scalar type.

Apart from the constructors (:mod:`.creation`) so that modules whose call
handlers come before theirs can use it.
"""

from __future__ import annotations

import sys

from ... import types as T
from ...errors import TypeInferenceError
from ...interpreter.lattice import Const, widen


def numpy_function(fn) -> str | None:
    """The name of NumPy's function ``fn`` (``"zeros"``), or None when ``fn`` is not NumPy's."""
    module = getattr(fn, "__module__", None)
    if not isinstance(module, str) or not (module == "numpy" or module.startswith("numpy.")):
        return None
    return getattr(fn, "__name__", None)


def dtype_of(value, what: str = "dtype") -> T.Scalar:
    """The scalar type a ``dtype=`` argument names (``np.float32``, ``float``, ``"int64"``, ``np.dtype``)."""
    if not isinstance(value, Const):
        raise TypeInferenceError(f"{what} must be known when compiling (a NumPy type, a Python type or a "
                                 f"string), not a value of type {widen(value)!r}", (widen(value),))
    v = value.value
    builtin = {float: T.float64, int: T.int64, bool: T.boolean}.get(v) if isinstance(v, type) else None
    if builtin is not None:
        return builtin
    np = sys.modules.get("numpy")
    try:
        name = np.dtype(v).name if np is not None else None
    except TypeError:
        name = None
    scalar = T.SCALARS.get(name or "")
    if scalar is None:
        raise TypeInferenceError(f"unsupported {what} {v!r}", hint="use one of " + ", ".join(T.SCALARS))
    return scalar
