"""The process's ``np.random`` states that compiled code draws from (NumPy's legacy API).

Buffers per process, apart from NumPy's own state (as Numba keeps it),
reached by name (:data:`SYMBOL`, registered with ``llvmlite.binding.add_symbol``)
so that the IR holds no address. One holds OS entropy and a count of
unseeded states and generators, then a table of thread ids and one MT19937
state per thread (:data:`SLOTS` of them), and one more state that threads
share once every slot is taken; the legacy normals' cached values are in
another (:data:`GAUSS_SYMBOL`: the Enzyme plugin's type analysis sees no
float among the integer words). A thread claims a free slot at its first
draw (the first to take the slot's ticket, an atomic add, writes its id
there) and seeds it from the entropy and its id; ``np.random.seed(s)``
seeds the calling thread's state, as in Numba. A slot stays its thread's
after the thread ends. A forked child forgets every state and draws new
entropy (each process its own streams).

The intrinsics below are what the implementations (:mod:`.nprandomimpl`)
read the buffer through, as arrays.
"""

from __future__ import annotations

import ctypes
import os

import llvmlite.binding as llvm
from llvmlite import ir

from .... import types as T
from ....interpreter.rules import Int
from ...python.numbers import base

SYMBOL = "gpuc_np_random_state"
"""the name compiled code finds the buffer by"""
GAUSS_SYMBOL = "gpuc_np_random_gauss"
"""the cached normals, one per state, apart (so that the integer words hold no float)"""
N = 624
"""MT19937's state words"""
POS = 624
"""(in a state) the index of the next state word to temper (624: twist first)"""
HAS_GAUSS = 625
"""(in a state) whether the legacy normal holds a cached value"""
SEEDED = 626
"""(in a state) whether the state was seeded (a thread's first draw seeds it from entropy)"""
SLOT = 627
"""(in a state) its own index (where its cached normal is in :data:`GAUSS_SYMBOL`'s buffer)"""
STRIDE = 640
"""the words of one state"""
ENTROPY = 0
"""(in the process words) four 32-bit words of OS entropy"""
COUNTER = 4
"""(in the process words) how many unseeded states and generators were made"""
SLOTS = 128
"""states owned by one thread each (a power of two)"""
_OWNERS = 8
_TICKETS = _OWNERS + SLOTS
_STATES = _TICKETS + SLOTS
_WORDS = _STATES + (SLOTS + 1) * STRIDE

_I64 = ir.IntType(64)
_BUFFER = ir.ArrayType(_I64, _WORDS)
_STATE = (ctypes.c_int64 * _WORDS)()
_GAUSS = (ctypes.c_double * (SLOTS + 1))()


def _forget() -> None:
    """Every state unseeded, new entropy (a forked child must not repeat its parent's numbers)."""
    raw = os.urandom(16)
    for k in range(4):
        _STATE[ENTROPY + k] = int.from_bytes(raw[4 * k:4 * k + 4], "little")
    for s in range(SLOTS + 1):
        _STATE[_STATES + s * STRIDE + SEEDED] = 0


_forget()
os.register_at_fork(after_in_child=_forget)
llvm.add_symbol(SYMBOL, ctypes.addressof(_STATE))
llvm.add_symbol(GAUSS_SYMBOL, ctypes.addressof(_GAUSS))


def process_words():
    """The process words (entropy, count) as a 1-d int64 array (an intrinsic: only compiled code calls it)."""
    raise NotImplementedError("process_words is an intrinsic of compiled code")


def thread_owners():
    """The thread id owning each slot (0: free) as a 1-d int64 array (an intrinsic)."""
    raise NotImplementedError("thread_owners is an intrinsic of compiled code")


def slot_words(s):
    """State ``s`` (``SLOTS``: the shared one) as a 1-d int64 array of ``STRIDE`` words (an intrinsic)."""
    raise NotImplementedError("slot_words is an intrinsic of compiled code")


def gauss_cells():
    """The cached normal of each state as a 1-d float64 array (an intrinsic)."""
    raise NotImplementedError("gauss_cells is an intrinsic of compiled code")


def thread_id():
    """The calling thread's id (``pthread_self``), never 0 (an intrinsic)."""
    raise NotImplementedError("thread_id is an intrinsic of compiled code")


def slot_tickets():
    """The tickets taken of each slot (the first taker owns it) as a 1-d int64 array (an intrinsic)."""
    raise NotImplementedError("slot_tickets is an intrinsic of compiled code")


def take_ticket(tickets, s):
    """Atomically add 1 to ``tickets[s]``; the count before (an intrinsic: an integer atomic, which
    the Enzyme plugin sees has no derivative)."""
    raise NotImplementedError("take_ticket is an intrinsic of compiled code")


def _global(cg, name: str = SYMBOL, ty: ir.Type = _BUFFER) -> ir.GlobalVariable:
    """A buffer, declared with its size (LLVM assumes nothing is read past a global's end)."""
    module = cg.mod.module
    g = module.globals.get(name)
    if g is None:
        g = ir.GlobalVariable(module, ty, name=name)
        g.linkage = "external"
    return g


def _view(cg, data, n: int, itemsize: int, t):
    b = cg.b
    dims = ir.ArrayType(_I64, 1)
    value = b.insert_value(ir.Constant(cg.ll(t), ir.Undefined), data, 0)
    value = b.insert_value(value, ir.Constant(dims, [ir.Constant(_I64, n)]), 1)
    return b.insert_value(value, ir.Constant(dims, [ir.Constant(_I64, itemsize)]), 2)


def _at(cg, words) -> ir.Value:
    """The address of the buffer's word ``words`` (an LLVM i64 or a Python int)."""
    index = words if isinstance(words, ir.Value) else ir.Constant(_I64, words)
    return cg.b.gep(_global(cg), [ir.Constant(_I64, 0), index], source_etype=_BUFFER)


_WORDS_T = T.array(T.int64, 1)
_GAUSS_T = T.array(T.float64, 1)


@base.define(process_words, restype=_WORDS_T, pure=False)
def _process(cg, args, argtypes, rt):
    return _view(cg, _at(cg, 0), _OWNERS, 8, _WORDS_T)


@base.define(thread_owners, restype=_WORDS_T, pure=False)
def _owners(cg, args, argtypes, rt):
    return _view(cg, _at(cg, _OWNERS), SLOTS, 8, _WORDS_T)


@base.define(slot_words, Int, restype=_WORDS_T, pure=False)
def _slot(cg, args, argtypes, rt):
    b = cg.b
    s = cg.cast(args[0], argtypes[0], T.int64)
    first = b.add(ir.Constant(_I64, _STATES), b.mul(s, ir.Constant(_I64, STRIDE)))
    return _view(cg, _at(cg, first), STRIDE, 8, _WORDS_T)


@base.define(gauss_cells, restype=_GAUSS_T, pure=False)
def _gauss(cg, args, argtypes, rt):
    return _view(cg, _global(cg, GAUSS_SYMBOL, ir.ArrayType(ir.DoubleType(), SLOTS + 1)), SLOTS + 1, 8, _GAUSS_T)


@base.define(thread_id, restype=T.int64, pure=False)
def _thread_id(cg, args, argtypes, rt):
    return cg.b.call(cg.mod.declare("pthread_self", _I64, []), [])


@base.define(slot_tickets, restype=_WORDS_T, pure=False)
def _tickets(cg, args, argtypes, rt):
    return _view(cg, _at(cg, _TICKETS), SLOTS, 8, _WORDS_T)


@base.define(take_ticket, _WORDS_T, Int, restype=T.int64, pure=False)
def _take(cg, args, argtypes, rt):
    b = cg.b
    cell = b.gep(b.extract_value(args[0], 0), [cg.cast(args[1], argtypes[1], T.int64)], source_etype=_I64)
    return b.atomic_rmw("add", cell, ir.Constant(_I64, 1), "seq_cst")
