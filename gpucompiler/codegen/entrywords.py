"""The words a Python entry reads from its state, laid out once for the code generator that reads them
(:mod:`.pyentry`, :mod:`.pyresult`) and the runtime that fills them (:mod:`gpucompiler.runtime.pyentry`),
and the names through which compiled code reads CPython's exception classes (:data:`PYEXC`: the loader
binds them).

This module needs neither llvmlite nor the language's rules: a cached function's first call makes its
entry from these and loads no code generator.
"""

from __future__ import annotations

from .. import types as T

PYEXC = "gpuc.pyexc."
"""The prefix of the names compiled code reads CPython's ``PyExc_<name>`` variables through
(:mod:`.pyobjects`)."""
#: the dtype words: word 0 the offset of ``names`` in a structured ``PyArray_Descr`` (NumPy 1 and 2
#: differ), word 1 the address of ``numpy.recarray`` (a structured argument may be one), then
#: :data:`DTYPE_WORDS` per argument: two slots, each the address of a dtype its structured array may
#: have and of that dtype's ``names`` tuple (0: none yet; the two never hold one dtype)
DTYPE_HEADER, DTYPE_WORDS = 2, 4
#: words per guard after ``guard[0]`` (their count): the address of the watched word, its expected
#: value, and for a dict's version tag the dict, the name read and the object it found (0: none)
GUARD_WORDS = 5
#: the words of the entry's NumPy state: the addresses of these C API functions, in this order
NUMPY_FUNCTIONS = ("PyArray_NewFromDescr", "PyArray_SetBaseObject", "PyArray_DescrFromType")


def holds_array(t) -> bool:
    """Whether a result of type ``t`` holds an array (its boxing reads the NumPy words)."""
    if isinstance(t, T.TupleType):
        return any(holds_array(it) for it in t.items)
    return isinstance(t, T.ArrayType)


__all__ = ["DTYPE_HEADER", "DTYPE_WORDS", "GUARD_WORDS", "NUMPY_FUNCTIONS", "holds_array"]
