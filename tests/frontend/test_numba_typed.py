"""Numba's typed containers spelled as Numba users spell them, in compiled code (where Numba is installed)."""

from __future__ import annotations

import pytest

from gpucompiler import jit
from gpucompiler.errors import TypeInferenceError

numba = pytest.importorskip("numba", reason="numba.typed's objects exist only where Numba is installed")
typed = numba.typed


@jit
def filled(n):
    xs = typed.List.empty_list(numba.float64)
    d = typed.Dict.empty(key_type=numba.types.int64, value_type=numba.types.float64)
    e = typed.Dict.empty(numba.int64, numba.float64)
    for i in range(n):
        xs.append(i)
        d[i] = i * 0.5
        e[i % 2] = 1.0
    return xs, d, len(e)


def test_empty_list_and_dict_empty_make_compiled_containers():
    """Numba's answer (its typed List and Dict, converted) written out: running Numba's own compiled
    containers in this process before our compiled calls has ended in a segfault (two LLVM JITs)."""
    xs, d, n = filled(4)
    assert xs == [0.0, 1.0, 2.0, 3.0] and type(xs) is list
    assert d == {0: 0.0, 1: 0.5, 2: 1.0, 3: 1.5} and n == 2


def test_a_typed_list_without_its_type_is_a_typed_error_with_the_spelling_that_works():
    @jit
    def untyped():
        return typed.List()

    with pytest.raises(TypeInferenceError) as info:
        untyped()
    assert "empty_list" in info.value.hint and info.value.filename == __file__
