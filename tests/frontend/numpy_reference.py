"""Compiled NumPy calls checked against NumPy: values within rounding, NumPy's dtypes and shapes."""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np

from gpucompiler import jit

_COMPILED: dict = {}


def same(got, want, rtol: float = 1e-12) -> None:
    """``got`` is NumPy's ``want``: tuples item by item; a number may come back as a Python float or int
    (float32, uint8...: as Numba returns them), arrays with NumPy's dtype."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w, rtol)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    kind = {"u": "i"}.get(want.dtype.kind, want.dtype.kind)
    assert got.dtype.kind == kind if want.ndim == 0 else got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def check(fn, *args, rtol: float = 1e-12) -> None:
    """``fn`` compiled (once per argument types across the tests) gives what NumPy gives."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = fn(*args)
    same(_COMPILED.setdefault(fn, jit(fn))(*args), want, rtol)


def function(tmp_path, body: str):
    """``def f(a): return <body>`` written to a module file and imported (compiled from its source; the
    return is on line 4)."""
    path = tmp_path / "forms.py"
    path.write_text(f"import numpy as np\n\ndef f(a):\n    return {body}\n")
    spec = importlib.util.spec_from_file_location(f"forms_{abs(hash(body))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


def central(f, a, eps: float = 1e-6):
    """Central differences of the number ``f(a)`` in each element of ``a``."""
    g = np.zeros_like(a)
    for i in range(a.size):
        up, down = a.copy(), a.copy()
        up.flat[i] += eps
        down.flat[i] -= eps
        g.flat[i] = (f(up) - f(down)) / (2 * eps)
    return g
