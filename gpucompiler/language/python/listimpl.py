"""The list operations that compiled code runs as compiled Python (lists.py dispatches to them): slices
and their assignment and deletion, ``extend``, ``+``, ``*``, ``insert``, ``reverse``, ``index``,
``count``, ``copy``, ``sort``/``sorted``, ``min``/``max``, ``any``/``all``, ``==``; and a dict's
``copy``, ``update``, ``setdefault``; with CPython's semantics.

Each reads a list it also writes through a snapshot (a length read once, or a copy of the source):
``xs.extend(xs)`` doubles the list and ``xs[1:2] = xs`` splices a copy, as in CPython. Slices come
as ``(start, step, count)``, the result of ``slice.indices`` (views.py's ``slice_indices``).
"""

from __future__ import annotations

from ...frontend.intrinsics import check, getitem_unchecked, setitem_unchecked
from ..numpy.npintrinsics import new_array
from ..numpy.sort.npsortimpl import merge_sort

def list_slice(lst, start, step, count):
    """``lst[start::step]``, ``count`` items: a new list."""
    out = []
    for i in range(count):
        out.append(getitem_unchecked(lst, start + i * step))
    return out


def _refill(lst, items):
    """Make ``lst`` hold the items of the list ``items`` (another list)."""
    while len(lst) > 0:
        lst.pop()
    for i in range(len(items)):
        lst.append(getitem_unchecked(items, i))


def list_setslice(lst, start, step, count, src):
    """``lst[slice] = src``: a simple slice (step 1) is replaced by ``src``'s items, however many; an
    extended one takes exactly ``count`` items, one for each place."""
    items = []  # a copy: src may be lst itself
    for i in range(len(src)):
        items.append(src[i])
    m = len(items)
    if step == 1:
        kept = []
        for i in range(start):
            kept.append(getitem_unchecked(lst, i))
        for i in range(m):
            kept.append(getitem_unchecked(items, i))
        for i in range(start + count, len(lst)):
            kept.append(getitem_unchecked(lst, i))
        _refill(lst, kept)
    else:
        check(m == count, "ValueError", "attempt to assign a sequence to an extended slice of another size")
        for i in range(m):
            setitem_unchecked(lst, start + i * step, getitem_unchecked(items, i))


def list_delslice(lst, start, step, count):
    """``del lst[slice]``: the ``count`` items from ``start`` by ``step`` removed."""
    if count == 0:
        return
    if step < 0:  # the same places, walked upwards
        start = start + (count - 1) * step
        step = -step
    kept = []
    k = 0
    for i in range(len(lst)):
        if k < count and i == start + k * step:
            k += 1
        else:
            kept.append(getitem_unchecked(lst, i))
    _refill(lst, kept)


def list_extend(lst, src):
    """``lst.extend(src)`` of a list or a 1-d array: its length read once (``lst.extend(lst)`` doubles)."""
    n = len(src)
    for i in range(n):
        lst.append(src[i])


def list_extend_iter(lst, src):
    """``lst.extend(src)`` of a tuple."""
    for x in src:
        lst.append(x)


def list_concat(a, b):
    """``a + b``: a new list."""
    out = []
    for i in range(len(a)):
        out.append(getitem_unchecked(a, i))
    for i in range(len(b)):
        out.append(getitem_unchecked(b, i))
    return out


def list_repeat(a, k):
    """``a * k``: a new list of ``k`` copies of ``a``'s items (none for ``k <= 0``)."""
    out = []
    n = len(a)
    for _ in range(k):
        for i in range(n):
            out.append(getitem_unchecked(a, i))
    return out


def list_assign(lst, new):
    """``lst += ys``, ``lst *= k``: ``lst`` itself holds the result (every name of it sees it)."""
    _refill(lst, new)
    return lst


def list_insert(lst, i, v):
    """``lst.insert(i, v)``: ``i`` clamped as CPython clamps it, the items from ``i`` moved up one."""
    n = len(lst)
    if i < 0:
        i += n
        if i < 0:
            i = 0
    elif i > n:
        i = n
    lst.append(v)
    j = n
    while j > i:
        setitem_unchecked(lst, j, getitem_unchecked(lst, j - 1))
        j -= 1
    setitem_unchecked(lst, i, v)


def list_reverse(lst):
    i, j = 0, len(lst) - 1
    while i < j:
        v = getitem_unchecked(lst, i)
        setitem_unchecked(lst, i, getitem_unchecked(lst, j))
        setitem_unchecked(lst, j, v)
        i += 1
        j -= 1


def list_index(lst, x):
    """The first place of an item ``== x``; CPython's ValueError when none is."""
    check(x == x, "ValueError", "list.index(x) with x a NaN: CPython finds it by identity (the same object), "
          "which compiled numbers do not have")
    for i in range(len(lst)):
        if getitem_unchecked(lst, i) == x:
            return i
    check(False, "ValueError", "list.index(x): x not in list")
    return -1


def list_index_from(lst, x, start, stop):
    """``lst.index(x, start, stop)``: ``start`` and ``stop`` clamped as slice bounds are."""
    check(x == x, "ValueError", "list.index(x) with x a NaN: CPython finds it by identity (the same object), "
          "which compiled numbers do not have")
    n = len(lst)
    if start < 0:
        start = max(start + n, 0)
    if stop < 0:
        stop = max(stop + n, 0)
    for i in range(start, min(stop, n)):
        if getitem_unchecked(lst, i) == x:
            return i
    check(False, "ValueError", "list.index(x): x not in list")
    return -1


def list_index_start(lst, x, start):
    return list_index_from(lst, x, start, len(lst))


def list_remove(lst, x):
    """``lst.remove(x)``: the first item ``== x`` removed; CPython's ValueError when none is."""
    check(x == x, "ValueError", "list.remove(x) with x a NaN: CPython finds it by identity (the same object), "
          "which compiled numbers do not have")
    n = len(lst)
    for i in range(n):
        if getitem_unchecked(lst, i) == x:
            for j in range(i, n - 1):
                setitem_unchecked(lst, j, getitem_unchecked(lst, j + 1))
            lst.pop()
            return
    check(False, "ValueError", "list.remove(x): x not in list")


def list_count(lst, x):
    check(x == x, "ValueError", "list.count(x) with x a NaN: CPython counts it by identity (the same object), "
          "which compiled numbers do not have")
    c = 0
    for i in range(len(lst)):
        if getitem_unchecked(lst, i) == x:
            c += 1
    return c


def list_copy(lst):
    return list_slice(lst, 0, 1, len(lst))


def list_clear(lst):
    while len(lst) > 0:
        lst.pop()


_NAN_SORT = "sorting values holding a NaN: CPython's order of them is its algorithm's, not reproduced here"


def list_sort(lst, dt, reverse):
    """``lst.sort(reverse=...)``: stable, as CPython's (reversed, sorted, reversed again for ``reverse``);
    a NaN is a ValueError (CPython's order of one is its algorithm's)."""
    n = len(lst)
    a = new_array((n,), dt)
    for i in range(n):
        v = getitem_unchecked(lst, n - 1 - i) if reverse else getitem_unchecked(lst, i)
        check(v == v, "ValueError", _NAN_SORT)
        setitem_unchecked(a, i, v)
    merge_sort(a, new_array((n,), dt))
    for i in range(n):
        setitem_unchecked(lst, i, getitem_unchecked(a, n - 1 - i) if reverse else getitem_unchecked(a, i))


def list_sorted(lst, dt, reverse):
    """``sorted(lst, reverse=...)``: a new list."""
    out = list_copy(lst)
    list_sort(out, dt, reverse)
    return out


def list_min(lst):
    """``min(lst)`` as CPython walks it: an item replaces the best only where ``item < best``."""
    check(len(lst) > 0, "ValueError", "min() arg is an empty sequence")
    best = getitem_unchecked(lst, 0)
    for i in range(1, len(lst)):
        v = getitem_unchecked(lst, i)
        if v < best:
            best = v
    return best


def list_max(lst):
    check(len(lst) > 0, "ValueError", "max() arg is an empty sequence")
    best = getitem_unchecked(lst, 0)
    for i in range(1, len(lst)):
        v = getitem_unchecked(lst, i)
        if v > best:
            best = v
    return best


def list_any(lst):
    for i in range(len(lst)):  # noqa: SIM110  (compiled: a loop that stops at the first true item)
        if getitem_unchecked(lst, i):
            return True
    return False


def list_all(lst):
    for i in range(len(lst)):  # noqa: SIM110  (compiled: a loop that stops at the first false item)
        if not getitem_unchecked(lst, i):
            return False
    return True


def list_equal(a, b):
    """``a == b``: the same length and items ``==`` pairwise; two NaNs at one place are a ValueError (CPython
    compares their identity first, which compiled numbers do not have)."""
    if len(a) != len(b):
        return False
    for i in range(len(a)):
        x, y = getitem_unchecked(a, i), getitem_unchecked(b, i)
        check(x == x or y == y, "ValueError", "lists holding NaNs at one place compared: CPython compares their "
              "identity first, which compiled numbers do not have")
        if x != y:
            return False
    return True


def list_not_equal(a, b):
    return not list_equal(a, b)


def dict_copy(d):
    """``dict(d)``, ``d.copy()``: a new dict of the entries in their order."""
    out = {}
    for k, v in d.items():
        out[k] = v
    return out


def dict_update(d, other):
    for k, v in other.items():
        d[k] = v


def dict_setdefault(d, k, v):
    if k not in d:
        d[k] = v
    return d[k]
