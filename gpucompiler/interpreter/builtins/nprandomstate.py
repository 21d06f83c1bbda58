"""The process's ``np.random`` state that compiled code draws from (NumPy's legacy API).

One buffer per process, apart from NumPy's own (as Numba keeps it): a
MT19937 state (624 words and a position), the legacy normal's cached second
value, and entropy for unseeded ``default_rng()``. Compiled code reaches it
by name (:data:`SYMBOL`, registered with ``llvmlite.binding.add_symbol``),
so the IR holds no address. The state starts seeded from the OS's entropy;
``np.random.seed(s)`` in compiled code reseeds it. Threads share it: draws
from several threads at once never read outside it, but their order (and
so the numbers each thread gets) is not reproducible.

:func:`legacy_words` and :func:`legacy_gauss` are the intrinsics the
implementations (:mod:`.nprandomimpl`) read it through, as arrays.
"""

from __future__ import annotations

import ctypes
import os

import llvmlite.binding as llvm
from llvmlite import ir

from ... import types as T
from .numbers import base

SYMBOL = "gpuc_np_random_state"
"""the name compiled code finds the buffer by"""
N = 624
"""MT19937's state words"""
POS = 624
"""the word holding the index of the next state word to temper (624: twist first)"""
HAS_GAUSS = 625
"""the word saying whether the legacy normal holds a cached value"""
COUNTER = 626
"""how many unseeded ``default_rng()`` generators were made (each gets other entropy)"""
ENTROPY = 628
"""four 32-bit words of OS entropy for unseeded ``default_rng()``"""
WORDS = 632
"""int64 words before the cached normal (a float64)"""

_I64 = ir.IntType(64)
_I8 = ir.IntType(8)


def _buffer() -> ctypes.Array:
    buf = (ctypes.c_int64 * (WORDS + 1))()
    raw = os.urandom(4 * (N + 4))
    for i in range(N):
        buf[i] = int.from_bytes(raw[4 * i:4 * i + 4], "little")
    buf[0] |= 0x80000000  # never the all-zero state (NumPy's init_by_array does the same)
    for i in range(4):
        buf[ENTROPY + i] = int.from_bytes(raw[4 * (N + i):4 * (N + i) + 4], "little")
    buf[POS] = N
    return buf


_STATE = _buffer()
llvm.add_symbol(SYMBOL, ctypes.addressof(_STATE))


def legacy_words():
    """The state's int64 words as a 1-d array (an intrinsic: only compiled code calls it)."""
    raise NotImplementedError("legacy_words is an intrinsic of compiled code")


def legacy_gauss():
    """The legacy normal's cached value as a 1-d float64 array of one element (an intrinsic)."""
    raise NotImplementedError("legacy_gauss is an intrinsic of compiled code")


def _global(cg) -> ir.GlobalVariable:
    """The buffer, declared with its size (LLVM assumes nothing is read past a global's end)."""
    module = cg.mod.module
    g = module.globals.get(SYMBOL)
    if g is None:
        g = ir.GlobalVariable(module, ir.ArrayType(_I64, WORDS + 1), name=SYMBOL)
        g.linkage = "external"
    return g


def _view(cg, offset: int, n: int, itemsize: int, t):
    b = cg.b
    data = b.gep(_global(cg), [ir.Constant(_I64, offset)], source_etype=_I8)
    dims = ir.ArrayType(_I64, 1)
    value = b.insert_value(ir.Constant(cg.ll(t), ir.Undefined), data, 0)
    value = b.insert_value(value, ir.Constant(dims, [ir.Constant(_I64, n)]), 1)
    return b.insert_value(value, ir.Constant(dims, [ir.Constant(_I64, itemsize)]), 2)


_WORDS_T = T.array(T.int64, 1)
_GAUSS_T = T.array(T.float64, 1)


@base.define(legacy_words, restype=_WORDS_T, pure=False)
def _words(cg, args, argtypes, rt):
    return _view(cg, 0, WORDS, 8, _WORDS_T)


@base.define(legacy_gauss, restype=_GAUSS_T, pure=False)
def _gauss(cg, args, argtypes, rt):
    return _view(cg, 8 * WORDS, 1, 8, _GAUSS_T)
