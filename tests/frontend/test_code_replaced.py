"""A function whose code is replaced in place (``f.__code__ = ...``, as IPython's autoreload does) compiles its
new code: a new dispatcher gives the new code's results, and a tier-up that compiles after the first call
returned keys the code its inference read, so no cache entry names one code and holds another's. Results
against CPython."""

from __future__ import annotations

import importlib

import pytest

from gpucompiler import jit
from gpucompiler.cache.default import memory_cache

J = importlib.import_module("gpucompiler.jit")


def edited(n, x):
    s = 0.0
    for i in range(n):
        s += x + i
    return s


def edited_later(n, x):
    s = 0.0
    for i in range(n):
        s -= x * 2.0 - i
    return s


def swapped(n, x):
    t = 1.0
    for i in range(n):
        t = t * x + i
    return t


def swapped_later(n, x):
    t = 1.0
    for i in range(n):
        t = t * 0.5 - x * i
    return t


def _replaced_by(fn, other):
    """``fn``'s code replaced by ``other``'s (named as ``fn``); returns the original to put back."""
    original = fn.__code__
    fn.__code__ = other.__code__.replace(co_name=original.co_name, co_qualname=original.co_qualname)
    return original


@pytest.fixture
def fresh(monkeypatch):
    """Tiers on and an empty memory tier (``cache=False`` functions share it)."""
    monkeypatch.setenv("GPUC_TIER", "on")
    memory_cache().memory.clear()


@pytest.mark.parametrize("tier", [False, True])
def test_a_new_dispatcher_compiles_the_replaced_code(fresh, tier):
    f = jit(edited, cache=False, tier=tier)
    assert f(5, 0.5) == edited(5, 0.5)
    f.wait_tier_up(120)
    original = _replaced_by(edited, edited_later)
    try:
        g = jit(edited, cache=False, tier=tier)
        assert g(5, 0.5) == edited(5, 0.5) == edited_later(5, 0.5)
        g.wait_tier_up(120)  # its full level published before the code is put back
    finally:
        edited.__code__ = original
    h = jit(edited, cache=False, tier=tier)
    assert h(5, 0.5) == edited(5, 0.5)
    h.wait_tier_up(120)


def test_a_tier_up_after_the_code_was_replaced_keys_the_code_it_compiled(fresh):
    J._COMPILING.acquire()  # the tier-up waits until the code is replaced
    try:
        f = jit(swapped, cache=False)
        assert f(4, 0.25) == swapped(4, 0.25)
        assert f.last_compile.result.job.config.opt_level == J.QUICK_LEVEL
        original = _replaced_by(swapped, swapped_later)
    finally:
        J._COMPILING.release()
    try:
        assert f.wait_tier_up(120)
        g = jit(swapped, cache=False)  # finds no entry of the old code under the new code's key
        assert g(4, 0.25) == swapped_later(4, 0.25) and g(7, 1.5) == swapped_later(7, 1.5)
        g.wait_tier_up(120)
        assert g(7, 1.5) == swapped_later(7, 1.5)
    finally:
        swapped.__code__ = original
