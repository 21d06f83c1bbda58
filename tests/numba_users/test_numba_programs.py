"""The programs of numba_programs.py, compiled, against the same Python run by CPython/NumPy.

Floats are compared within rounding (threads and ``fastmath`` reorder sums);
integers and shapes exactly. Where Numba is installed, the same file with
Numba's import line runs under Numba and gives the same results.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
import sys
from pathlib import Path

import numpy as np
import pytest

import numba_programs as P

HERE = Path(__file__).parent


def _same(got, want):
    if isinstance(want, Mapping):  # a dict (Numba's typed Dict): the same entries in the same order
        assert isinstance(got, Mapping) and list(dict(got).items()) == list(dict(want).items())
        return
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype.kind == want.dtype.kind, (got.dtype, want.dtype)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name,fn,args", P.CASES, ids=[c[0] for c in P.CASES])
def test_program_as_cpython(name, fn, args):
    with np.errstate(all="ignore"):
        want = fn.py_func(*copy.deepcopy(args))
    _same(fn(*copy.deepcopy(args)), want)


def test_vectorize_programs():
    a = P._A
    _same(P.rel_diff(a, a[::-1]), np.abs(a - a[::-1]) / (np.abs(a) + np.abs(a[::-1]) + 1e-12))
    f32 = a.astype(np.float32)
    assert P.rel_diff(f32, f32[::-1]).dtype == np.float64  # the first signature that fits, as NumPy picks
    _same(P.logistic(P._M), 1.0 / (1.0 + np.exp(-P._M)))
    _same(P.cube(P._M), P._M ** 3)
    _same(P.shift(P._M, 2.5), P._M + 2.5)
    _same(P.norm_rows(P._M), np.sqrt((P._M ** 2).sum(axis=1)))


@pytest.mark.slow
def test_same_file_under_numba(tmp_path):
    """The program file with Numba's import line: Numba's results are ours."""
    numba = pytest.importorskip("numba")
    source = (HERE / "numba_programs.py").read_text()
    line = "from gpucompiler import guvectorize, njit, prange, vectorize\n"
    assert source.count(line) == 1
    path = tmp_path / "numba_programs_numba.py"
    path.write_text(source.replace(line, "from numba import guvectorize, njit, prange, vectorize\n"))
    sys.path.insert(0, str(tmp_path))
    try:
        import numba_programs_numba as N
    finally:
        sys.path.remove(str(tmp_path))
    assert isinstance(N.horner, numba.core.registry.CPUDispatcher)
    for (_, fn, args), (_, nfn, _) in zip(P.CASES, N.CASES):
        with np.errstate(all="ignore"):
            _same(fn(*copy.deepcopy(args)), nfn(*copy.deepcopy(args)))
    _same(P.shift(P._M, 2.5), N.shift(P._M, 2.5))
    _same(P.norm_rows(P._M), N.norm_rows(P._M))
