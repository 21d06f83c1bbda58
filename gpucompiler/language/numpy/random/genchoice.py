"""``Generator.choice(a, size, replace, p)`` in compiled code: NumPy's draws for the same seed.

With replacement and no ``p`` the indices are ``integers(0, len(a))``; with
``p``, one double per index searched in the cumulative sum of ``p`` divided
by its last value (the first entry above it). Without replacement and no
``p``: Floyd's algorithm (the last ``n`` positions each draw an index below
them, taken unless already taken, itself taken then), its result shuffled
with bounded draws (Lemire's method, as ``integers``), or, for more than
10000 items of which more than a fiftieth are drawn, the tail of a partial
shuffle of ``arange``. With ``p`` and without replacement: rounds of
doubles, each round's new indices kept in their first order, the chosen
entries' probabilities zeroed for the next round; the legacy
``np.random.choice(..., p=...)`` runs the same algorithm on the thread's
MT19937 state (its messages are its own). ``p`` is checked as NumPy
checks it (its length, no NaN, no negative entry, a Kahan sum within
``atol`` of 1). Each function takes the population and the pick of the
result as function constants (an integer ``a`` or a sequence), so that one
algorithm serves every spelling.
"""

from __future__ import annotations

from typing import Any

from .... import types as T
from ....frontend.intrinsics import check, getitem_unchecked, setitem_unchecked
from ..npintrinsics import new_array
from . import nprandomimpl as legacy
from .nprandomgen import _bounded, _store, next_double
from .nprandomimpl import count, mask_of

U64: Any = T.uint64
"""called in compiled code: the conversion to uint64 (wrapping)"""
I64: Any = T.int64
F64: Any = T.float64
_FULL = "Cannot take a larger sample than population when replace is False"


def population_of_int(a, n):
    """The population of an integer ``a`` (``n`` indices to draw)."""
    check(a > 0 or n == 0, "ValueError", "a must be a positive integer unless no samples are taken")
    return a


def population_of_items(a, n):
    """The population of a sequence ``a``: its length."""
    m = len(a)
    check(m > 0 or n == 0, "ValueError", "a cannot be empty unless no samples are taken")
    return m


def _shuffle_int(t, data, n, first):
    """Exchange item ``i`` with one drawn in ``[0, i]`` for ``i`` from ``n - 1`` down to ``first``."""
    for i in range(n - 1, first - 1, -1):
        j, t = _bounded(t, 0, U64(i))
        v = getitem_unchecked(data, i)
        setitem_unchecked(data, i, getitem_unchecked(data, j))
        setitem_unchecked(data, j, v)
    return t


def _floyd(t, pop, n, out, shuffle):
    """``n`` distinct indices below ``pop`` into ``out`` (Floyd's algorithm over an open-addressed set)."""
    mask = I64(mask_of(U64(int(1.2 * n))))
    empty = U64(-1)
    table = new_array((mask + 1,), U64)
    for i in range(mask + 1):
        setitem_unchecked(table, i, empty)
    for j in range(pop - n, pop):
        val, t = _bounded(t, 0, U64(j))
        loc = val & mask
        while getitem_unchecked(table, loc) != empty and getitem_unchecked(table, loc) != U64(val):
            loc = (loc + 1) & mask
        if getitem_unchecked(table, loc) == empty:
            setitem_unchecked(table, loc, U64(val))
            setitem_unchecked(out, j - pop + n, val)
        else:
            loc = j & mask
            while getitem_unchecked(table, loc) != empty:
                loc = (loc + 1) & mask
            setitem_unchecked(table, loc, U64(j))
            setitem_unchecked(out, j - pop + n, j)
    return _shuffle_int(t, out, n, 1) if shuffle else t


def uniform_indices(t, pop, n, replace, p, atol, shuffle):
    """``(indices, state)``: ``n`` indices below ``pop``, every one as likely (``p`` unused); without
    replacement shuffled unless ``shuffle`` is false."""
    out = new_array((n,), I64)
    if replace:
        for i in range(n):
            v, t = _bounded(t, 0, U64(pop) - U64(1))
            setitem_unchecked(out, i, v)
        return out, t
    check(n <= pop, "ValueError", _FULL)
    if pop > 10000 and n > pop // (50 if shuffle else 20):
        idx = new_array((pop,), I64)
        for i in range(pop):
            setitem_unchecked(idx, i, i)
        t = _shuffle_int(t, idx, pop, max(pop - n, 1))
        for i in range(n):
            setitem_unchecked(out, i, getitem_unchecked(idx, pop - n + i))
        return out, t
    return out, _floyd(t, pop, n, out, shuffle)


def _kahan(q):
    """Kahan's sum of ``q`` (how NumPy checks that ``p`` sums to 1)."""
    d = q.shape[0]
    s = getitem_unchecked(q, 0) if d > 0 else 0.0
    c = 0.0
    for i in range(1, d):
        y = getitem_unchecked(q, i) - c
        u = s + y
        c = (u - s) - y
        s = u
    return s


def _checked(p, pop, atol):
    """``p`` as float64 (a copy), checked as NumPy checks it."""
    d = len(p)
    check(d == pop, "ValueError", "a and p must have same size")
    q = new_array((d,), F64)
    for i in range(d):
        setitem_unchecked(q, i, F64(p[i]))
    s = _kahan(q)
    check(s == s, "ValueError", "Probabilities contain NaN")
    for i in range(d):
        check(not getitem_unchecked(q, i) < 0.0, "ValueError", "Probabilities are not non-negative")
    check(not abs(s - 1.0) > atol, "ValueError",
          "Probabilities do not sum to 1. See Notes section of docstring for more information.")
    return q


def _cdf(q, cdf):
    """The cumulative sum of ``q`` (in order, as ``np.cumsum``) divided by its last value, into ``cdf``."""
    n = q.shape[0]
    s = 0.0
    for i in range(n):
        s = s + getitem_unchecked(q, i)
        setitem_unchecked(cdf, i, s)
    last = getitem_unchecked(cdf, n - 1)
    for i in range(n):
        setitem_unchecked(cdf, i, getitem_unchecked(cdf, i) / last)


def _search(cdf, u):
    """``cdf.searchsorted(u, side='right')``: the number of entries at most ``u``."""
    lo, hi = 0, cdf.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if getitem_unchecked(cdf, mid) <= u:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _weighted(draw, src, q, pop, n, replace):
    """``(indices, source)``: ``n`` indices below ``pop`` drawn with the (checked) probabilities ``q``, each
    double ``draw(src) -> (u, src)``; without replacement, rounds of doubles whose new indices are kept in
    their first order, the chosen entries' probabilities zeroed for the next round (both APIs' algorithm)."""
    out = new_array((n,), I64)
    cdf = new_array((pop,), F64)
    if replace:
        _cdf(q, cdf)
        for i in range(n):
            u, src = draw(src)
            setitem_unchecked(out, i, _search(cdf, u))
        return out, src
    nonzero = 0
    for i in range(pop):
        if getitem_unchecked(q, i) > 0.0:
            nonzero += 1
    check(nonzero >= n, "ValueError", "Fewer non-zero entries in p than size")
    seen = new_array((pop,), I64)
    for i in range(pop):
        setitem_unchecked(seen, i, -1)
    x = new_array((n,), F64)
    done, rounds = 0, 0
    while done < n:
        m = n - done
        for i in range(m):
            u, src = draw(src)
            setitem_unchecked(x, i, u)
        for i in range(done):
            setitem_unchecked(q, getitem_unchecked(out, i), 0.0)
        _cdf(q, cdf)
        added = 0
        for i in range(m):  # the new indices, each at its first place
            k = _search(cdf, getitem_unchecked(x, i))
            if getitem_unchecked(seen, k) != rounds:
                setitem_unchecked(seen, k, rounds)
                setitem_unchecked(out, done + added, k)
                added += 1
        done += added
        rounds += 1
    return out, src


def weighted_indices(t, pop, n, replace, p, atol, shuffle):
    """``(indices, state)``: ``n`` indices below ``pop`` drawn with the probabilities ``p``."""
    q = _checked(p, pop, atol)
    check(replace or n <= pop, "ValueError", _FULL)
    return _weighted(next_double, t, q, pop, n, replace)


# -- the legacy np.random.choice(..., p=...): the same algorithm on the thread's MT19937 state ----------
def _legacy_double(st):
    return legacy.next_double(st), st


def _legacy_checked(p, pop, atol):
    """``p`` as float64 (a copy), checked as NumPy's ``RandomState.choice`` checks it."""
    d = len(p)
    check(d == pop, "ValueError", "'a' and 'p' must have same size")
    q = new_array((d,), F64)
    for i in range(d):
        setitem_unchecked(q, i, F64(p[i]))
    s = _kahan(q)
    check(s == s, "ValueError", "probabilities contain NaN")
    for i in range(d):
        check(not getitem_unchecked(q, i) < 0.0, "ValueError", "probabilities are not non-negative")
    check(not abs(s - 1.0) > atol, "ValueError", "probabilities do not sum to 1")
    return q


def legacy_indices(pop, n, replace, p, atol):
    """The indices of ``np.random.choice(pop, n, replace, p)`` from the calling thread's state."""
    q = _legacy_checked(p, pop, atol)
    check(replace or n <= pop, "ValueError", "Cannot take a larger sample than population when 'replace=False'")
    return _weighted(_legacy_double, legacy.state(), q, pop, n, replace)[0]


def legacy_int(a, replace, p, atol):
    check(a > 0, "ValueError", "a must be greater than 0 unless no samples are taken")
    return getitem_unchecked(legacy_indices(a, 1, replace, p, atol), 0)


def legacy_ints(a, shape, replace, p, atol):
    n = count(shape)
    check(a > 0 or n == 0, "ValueError", "a must be greater than 0 unless no samples are taken")
    return legacy_indices(a, n, replace, p, atol).reshape(shape)


def legacy_ints1(a, d0, replace, p, atol):
    return legacy_ints(a, (d0,), replace, p, atol)


def legacy_item(a, replace, p, atol):
    check(len(a) > 0, "ValueError", "'a' cannot be empty unless no samples are taken")
    return a[getitem_unchecked(legacy_indices(len(a), 1, replace, p, atol), 0)]


def legacy_items(a, shape, replace, p, atol, dt):
    n = count(shape)
    check(len(a) > 0 or n == 0, "ValueError", "'a' cannot be empty unless no samples are taken")
    idx = legacy_indices(len(a), n, replace, p, atol)
    out = new_array((n,), dt)
    for i in range(n):
        setitem_unchecked(out, i, a[getitem_unchecked(idx, i)])
    return out.reshape(shape)


def legacy_items1(a, d0, replace, p, atol, dt):
    return legacy_items(a, (d0,), replace, p, atol, dt)


def choose(indices, population, g, a, shape, replace, p, atol, shuffle):
    """``rng.choice(a, size=shape, ...)``: the flat indices ``indices`` draws, reshaped (an integer ``a``) or
    the items of ``a`` at them."""
    n = count(shape)
    pop = population(a, n)
    s = g.state
    check(s.shape[0] == 6, "ValueError", "a Generator's state holds 6 words")
    t = (getitem_unchecked(s, 0), getitem_unchecked(s, 1), getitem_unchecked(s, 2), getitem_unchecked(s, 3),
         getitem_unchecked(s, 4), getitem_unchecked(s, 5))
    idx, t = indices(t, pop, n, replace, p, atol, shuffle)
    _store(s, t)
    return idx


def choose_ints(indices, g, a, shape, replace, p, atol, shuffle):
    return choose(indices, population_of_int, g, a, shape, replace, p, atol, shuffle).reshape(shape)


def choose_ints1(indices, g, a, d0, replace, p, atol, shuffle):
    return choose_ints(indices, g, a, (d0,), replace, p, atol, shuffle)


def choose_int(indices, g, a, replace, p, atol, shuffle):
    return getitem_unchecked(choose(indices, population_of_int, g, a, (1,), replace, p, atol, shuffle), 0)


def choose_items(indices, g, a, shape, replace, p, atol, shuffle, dt):
    idx = choose(indices, population_of_items, g, a, shape, replace, p, atol, shuffle)
    out = new_array((idx.shape[0],), dt)
    for i in range(idx.shape[0]):
        setitem_unchecked(out, i, a[getitem_unchecked(idx, i)])
    return out.reshape(shape)


def choose_items1(indices, g, a, d0, replace, p, atol, shuffle, dt):
    return choose_items(indices, g, a, (d0,), replace, p, atol, shuffle, dt)


def choose_item(indices, g, a, replace, p, atol, shuffle):
    return a[getitem_unchecked(choose(indices, population_of_items, g, a, (1,), replace, p, atol, shuffle), 0)]
