"""A compiled call that raises gives back the memory it made before the error: arrays, lists and dicts
held by its values are released on the failure path as on a return."""

from __future__ import annotations

import numpy as np
import pytest

from gpucompiler import jit


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@jit(tier=False)
def array_then_index_error(n):
    a = np.zeros(n)
    b = a * 2.0
    return b[n]


@jit(tier=False)
def list_and_dict_then_index_error(n):
    xs = [i * 1.0 for i in range(n)]
    d = {i: 1.0 for i in range(n)}
    return xs[n] + d[0]


def _helper(xs, k):
    return xs[k]


@jit(tier=False)
def callee_fails(n):
    xs = [i * 1.0 for i in range(n)]
    ys = np.ones(n)
    return _helper(xs, n) + ys[0]


@pytest.mark.parametrize("fn", [array_then_index_error, list_and_dict_then_index_error, callee_fails])
def test_a_raising_call_gives_back_what_it_made(fn):
    """Each call makes ~8-40 kB and raises IndexError; 20,000 calls kept 160-800 MB before."""
    n = 1000
    for _ in range(200):
        with pytest.raises(IndexError):
            fn(n)
    before = _rss()
    for _ in range(20_000):
        try:
            fn(n)
        except IndexError:
            pass
    grown = _rss() - before
    assert grown < 32 << 20, f"RSS grew {grown} bytes over 20,000 raising calls"


def test_values_a_raising_call_returns_on_other_paths_are_still_right():
    @jit(tier=False)
    def maybe(n, k):
        xs = [float(i) for i in range(n)]
        a = np.arange(n) * 1.0
        if k >= n:
            return xs[k] + a[0]
        return xs[k] + a[k]

    assert maybe(5, 2) == 4.0
    with pytest.raises(IndexError):
        maybe(5, 7)
    assert maybe(5, 4) == 8.0
