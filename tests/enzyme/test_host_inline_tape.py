"""Growing loop tapes on the host (c/inline_tape.c): a while loop's array starts in an inline segment of
the derivative's stack (``tape.INLINE_SEGMENT`` bytes) and reaches the heap only when the loop outgrows
it. Counted at run time (the IR's ``malloc``/``realloc`` calls routed through a counter): no heap call for
a short loop, growth for a long one; gradients against a tangent replay of the loops in Python and equal,
bit for bit, to the heap tape's (what an inner level of nested AD keeps)."""

from __future__ import annotations

import ctypes
import functools
import math
import re

import numpy as np
import pytest

import enzyme_plugin
from clang_levels import compile_c, needs_clang
from enzyme_plugin.ad import gpu
from gpucompiler.runtime import CPULibrary

pytestmark = needs_clang
_P = ctypes.POINTER(ctypes.c_double)
LEVELS = ("O0", "O2")

_COUNTER = """
@heap_calls = global i64 0
define ptr @counted_malloc(i64 %n) {
  %c = load i64, ptr @heap_calls
  %c1 = add i64 %c, 1
  store i64 %c1, ptr @heap_calls
  %p = call ptr @malloc(i64 %n)
  ret ptr %p
}
define ptr @counted_realloc(ptr %b, i64 %n) {
  %c = load i64, ptr @heap_calls
  %c1 = add i64 %c, 1
  store i64 %c1, ptr @heap_calls
  %p = call ptr @realloc(ptr %b, i64 %n)
  ret ptr %p
}
"""


class _Lib:
    """The derivative of inline_tape.c at a level, its heap calls counted."""

    def __init__(self, level: str, options: gpu.EngineOptions):
        text = enzyme_plugin.differentiate(compile_c("inline_tape.c", level), options=options)
        self.text = text
        text = re.sub(r"(call [^\n]*?)@(malloc|realloc)\(", r"\1@counted_\2(", text)
        for name, sig in (("malloc", "ptr @malloc(i64)"), ("realloc", "ptr @realloc(ptr, i64)")):
            if not re.search(rf"^declare [^\n]*@{name}\(", text, re.M):
                text += f"\ndeclare {sig}\n"
        self.lib = CPULibrary.from_ir(text + _COUNTER)
        self.calls = ctypes.c_int64.from_address(self.lib.address("heap_calls"))

    def grad(self, name: str, x: np.ndarray) -> tuple[np.ndarray, int]:
        """The gradient of ``name`` at ``x`` and the heap calls it made."""
        fn = self.lib.function(f"{name}_grad", None, _P, _P, ctypes.c_int)
        xs, dx = x.copy(), np.zeros_like(x)
        before = self.calls.value
        fn(xs.ctypes.data_as(_P), dx.ctypes.data_as(_P), len(x))
        return dx, self.calls.value - before


@functools.cache
def _lib(level: str, heap: bool = False) -> _Lib:
    """``heap``: the tapes of a level that is differentiated again (heap from the first frame)."""
    return _Lib(level, gpu.EngineOptions(differentiated_again=heap))


def _walk_reference(x: np.ndarray) -> tuple[np.ndarray, int]:
    """walk's gradient by a tangent replay of its loop, and its trip count."""
    s, ds, trips = x[1], np.array([0.0, 1.0, 0.0, 0.0]), 0
    e2, e3 = np.array([0.0, 0.0, 1.0, 0.0]), np.array([0.0, 0.0, 0.0, 1.0])
    while s < x[0]:
        s, ds = s * x[2] + math.sin(s) * x[3] + 0.125, ds * x[2] + s * e2 + math.cos(s) * x[3] * ds + math.sin(s) * e3
        trips += 1
    return 2.0 * s * ds, trips


def _walks_reference(x: np.ndarray) -> np.ndarray:
    g = np.zeros_like(x)
    for i, a in enumerate(x):
        s, ds = a, 1.0
        while s < 2.0:
            s, ds = s + 0.125 + 0.0625 * math.sin(s * a), ds + 0.0625 * math.cos(s * a) * (ds * a + s)
        g[i] = ds * a + s
    return g


@pytest.mark.parametrize("level", LEVELS)
def test_short_while_loop_makes_no_heap_call(level):
    """A few iterations fit the inline segment: no malloc, no realloc (the heap tape made one per call)."""
    lib = _lib(level)
    assert re.search(r"alloca \[256 x i8\]", lib.text), lib.text
    for top in (0.05, 0.3, 0.6):  # 0, 3 and 5 iterations
        x = np.array([top, 0.0, 1.0, 0.01])
        dx, calls = lib.grad("walk", x)
        ref, trips = _walk_reference(x)
        assert calls == 0, (top, trips, calls)
        np.testing.assert_allclose(dx, ref, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("level", LEVELS)
def test_long_while_loop_outgrows_the_segment_exactly(level):
    """Hundreds of iterations leave the segment (growth by malloc, a copy and free): the gradient is the
    tangent replay's and, bit for bit, the heap tape's."""
    lib, heap = _lib(level), _lib(level, heap=True)
    for top in (4.0, 40.0, 150.0):
        x = np.array([top, 0.0, 1.0, 0.01])
        dx, calls = lib.grad("walk", x)
        ref, trips = _walk_reference(x)
        assert trips > 30 and calls >= 1, (top, trips, calls)
        np.testing.assert_allclose(dx, ref, rtol=1e-11, atol=1e-15)
        np.testing.assert_array_equal(dx, heap.grad("walk", x)[0])


@pytest.mark.parametrize("name", ["walks", "rwalks"])
@pytest.mark.parametrize("level", LEVELS)
def test_while_loops_in_a_loop_and_in_a_recursion(name, level):
    """A while loop inside a counted loop keeps an array per execution (several live at once); one in
    each frame of a recursion gets each frame's own segment."""
    lib, heap = _lib(level), _lib(level, heap=True)
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 40):
        x = rng.uniform(-0.5, 1.5, n)
        dx, _ = lib.grad(name, x)
        np.testing.assert_allclose(dx, _walks_reference(x), rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(dx, heap.grad(name, x)[0])


@pytest.mark.parametrize("level", LEVELS)
def test_split_mode_keeps_its_loop_tape_on_the_heap(level):
    """Split mode returns the tape to the caller: no inline segment (it would end with the forward call)."""
    lib = _lib(level)
    for top in (0.3, 40.0):
        x = np.array([top, 0.0, 1.0, 0.01])
        dx, calls = lib.grad("walk_split", x)
        assert calls >= 1
        np.testing.assert_allclose(dx, _walk_reference(x)[0], rtol=1e-11, atol=1e-15)
