"""np.eye, np.identity, np.trace and np.diag of a 1-d array in compiled code, against NumPy (values,
dtypes, offsets past the edges, negative sizes), and np.diag of a matrix refused with its reason."""

from __future__ import annotations

import numpy as np
import pytest

from gpucompiler import errors, jit

from numpy_reference import check


def identities(n):
    return (np.eye(n), np.eye(n, n + 2), np.eye(n + 1, n, k=1), np.eye(n, k=-2, dtype=np.int32), np.identity(n),
            np.identity(n, dtype=np.bool_), np.eye(n, M=None))


def traces(m, k):
    return np.trace(m), np.trace(m, 1), np.trace(m, offset=-2), np.trace(m, 9), np.trace(k), np.trace(m, dtype=np.int64)


def diagonals(v, k):
    return np.diag(v), np.diag(v, 2), np.diag(v, k=-1), np.diag(k), np.diag(v[:0])


@pytest.mark.parametrize("n", [0, 1, 4])
def test_identities_as_numpy(n):
    check(identities, n)


def test_traces_and_diagonals_as_numpy():
    rng = np.random.default_rng(2)
    m, k = rng.standard_normal((4, 5)) * 3, rng.integers(-9, 9, (3, 3)).astype(np.int16)
    check(traces, m, k)
    check(diagonals, rng.standard_normal(3), k[0])
    check(lambda m: np.linalg.inv(m.T @ m + np.eye(5)), m)


def test_negative_sizes_are_numpys_value_error():
    for f in (lambda n: np.eye(n), lambda n: np.identity(n), lambda n: np.eye(2, n)):
        with pytest.raises(ValueError, match="negative dimensions"):
            jit(f)(-1)


def test_diag_of_a_matrix_is_refused_with_the_loop_to_write():
    with pytest.raises(errors.TypeInferenceError, match="read-only view") as info:
        jit(lambda m: np.diag(m))(np.ones((2, 2)))
    assert "m[i, i]" in str(info.value)
