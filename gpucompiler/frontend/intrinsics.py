"""Functions the frontend calls for constructs that are not a Python call.

Each is a plain Python function with the construct's semantics, so that
method tables key on it like on any other callee.
"""

import builtins
import math


def build_tuple(*items):
    """``(a, b, ...)``"""
    return items


def build_list(site, *items):
    """``[a, b, ...]``; ``site`` is where it is written (``(line, column)``: an empty list's items are
    typed by its first ``append``)."""
    return list(items)


def build_dict(site, *items):
    """``{k1: v1, k2: v2, ...}`` (``items`` alternate keys and values); ``site`` as for :func:`build_list`."""
    return dict(zip(items[0::2], items[1::2]))


def call_method(obj, name, *args):
    """``obj.name(*args)``: what a call of a method value (``z.conjugate()``) means, and a method
    called on a value computed at run time (``a.copy()`` of a local ``a``)."""
    return getattr(obj, name)(*args)


def make_complex(re, im):
    """The complex number ``re + im*1j`` of two floats (complex64 of two float32)."""
    return complex(re, im)


def call_kw(fn, names, *args):
    """``fn(*positional, name=value...)``: the last ``len(names)`` of ``args`` are passed by keyword."""
    split = len(args) - len(names)
    return fn(*args[:split], **dict(zip(names, args[split:])))


def build_slice(start, stop, step):
    """``start:stop:step`` in an index"""
    return slice(start, stop, step)


def unpack(value, n):
    """``a, b = value``: checks that ``value`` has ``n`` items."""
    if len(value) != n:
        raise ValueError(f"expected {n} values to unpack, got {len(value)}")
    return value


def range_start(*args: int) -> int:
    """First value of ``range(*args)``."""
    return args[0] if len(args) > 1 else 0


def range_stop(*args: int) -> int:
    return args[min(1, len(args) - 1)]


def range_step(*args: int) -> int:
    return args[2] if len(args) > 2 else 1


def range_length(start, stop, step):
    """``len(range(start, stop, step))`` (compiled from this source)."""
    check(step != 0, "ValueError", "range() arg 3 must not be zero")
    if step > 0:
        return (stop - start + step - 1) // step if stop > start else 0
    return (start - stop - step - 1) // -step if start > stop else 0


def range_cond(i, stop, step):
    """Whether the loop over a range goes on with ``i``."""
    return i < stop if step > 0 else i > stop


def iter_len(obj, first):
    """The length of ``obj`` at a step of a loop over it whose length was ``first`` when it began (a
    list may grow; a dict that changed size is CPython's RuntimeError)."""
    return len(obj)


def getitem_unchecked(obj, index):
    """``obj[index]`` where the index is known to be in bounds (see frontend/versioning.py)."""
    return obj[index]


def setitem_unchecked(obj, index, value):
    """``obj[index] = value`` where the index is known to be in bounds."""
    obj[index] = value


def all_in_bounds(*quads):
    """Whether ``0 <= lo and hi < a.shape[axis]`` for every ``(a, axis, lo, hi)`` of ``quads``."""
    return all(quads[k + 2] >= 0 and quads[k + 3] < quads[k].shape[quads[k + 1]]
               for k in range(0, len(quads), 4))


def power_fast(x, n):
    """``x ** n`` (``n`` a small integral constant) without its range check: the value wherever
    :func:`power_outside` is false (see frontend/powerloops.py)."""
    return x ** n


def power_outside(x, n):
    """Whether ``x ** n`` needs the checked operator: its result leaves the range where
    :func:`power_fast` is exact, or it raises."""
    try:
        return not math.isfinite(x ** n) and math.isfinite(x)
    except (OverflowError, ZeroDivisionError):
        return True


def vector_block(flag):
    """``flag``: whether a block of a power loop's iterations, lowered as straight-line code, must run
    checked (frontend/powerloops.py); the module asks for the SLP vectorizer."""
    return flag


def unit_strides(*arrays):
    """Whether every array is C-ordered (a compile-time constant): a power loop's blocks load its
    elements as vectors (frontend/powerloops.py)."""
    return all(a.flags.c_contiguous for a in arrays)


def powers_unchecked(roles, *values):
    """Whether a loop's powers may run unchecked (frontend/powerloops.py): every value with role 0 is
    a float, an int or a bool; with role ``k > 0`` a float array of ``k`` dimensions read, ``-k`` one
    written."""
    return all((isinstance(v, (bool, int, float)) if r == 0 else v.ndim == abs(r) and v.dtype.kind == "f")
               for r, v in zip(roles, values))


def _extent(a):
    """The addresses ``[lo, hi)`` spanned by the elements of array ``a`` (empty: ``lo == hi``)."""
    lo = hi = a.__array_interface__["data"][0]
    if 0 in a.shape:
        return lo, lo
    for n, stride in zip(a.shape, a.strides):
        lo, hi = lo + min(0, (n - 1) * stride), hi + max(0, (n - 1) * stride)
    return lo, hi + a.itemsize


def disjoint(a, b):
    """Whether the elements of arrays ``a`` and ``b`` lie in disjoint memory (by their extents)."""
    (alo, ahi), (blo, bhi) = _extent(a), _extent(b)
    return ahi <= blo or bhi <= alo or alo == ahi or blo == bhi


def check(ok, exc_name, message):
    """Raise the built-in exception named ``exc_name`` when ``ok`` is false."""
    if not ok:
        raise getattr(builtins, exc_name)(message)


def check_bound(ok, exc_name, message):
    """:func:`check` that stops on every target (a GPU thread traps): a read of an unbound local."""
    check(ok, exc_name, message)


def read_global(value):
    """A read of a global name its module did not define when the function was lowered: NameError at the
    read (before any later effect) when it is still undefined at the compile; nothing once defined."""
    del value


def check_math(ok, exc_name, message):
    """:func:`check` of a math error: skipped under ``ErrorModel.NUMPY`` (IEEE results)."""
    check(ok, exc_name, message)


def fmod_ieee(a, b):
    """C's ``fmod``: NaN for an infinite ``a`` or a zero ``b`` (no math error)."""
    if math.isinf(a) or b == 0 or math.isnan(a) or math.isnan(b):
        return math.nan
    return math.fmod(a, b)


def ffloor(x):
    """``floor`` of a float, as a float."""
    return float(math.floor(x))


def raise_exception(cls, message):
    """``raise cls(message)`` (``raise cls()`` when ``message`` is None): a ``raise`` statement."""
    raise cls(message) if message is not None else cls()


def assert_(ok, message):
    """``assert ok, message``: AssertionError when ``ok`` is false."""
    if not ok:
        raise AssertionError(message) if message is not None else AssertionError()


def prange(*args: int) -> range:
    """Numba's ``prange``: a ``range`` whose iterations ``@jit(parallel=True)`` runs on threads.

    Outside compiled code, and in compiled code without ``parallel=True``, it is ``range``.
    """
    return range(*args)


def prange_count(start: int, stop: int, step: int) -> int:
    """The number of iterations of ``range(start, stop, step)``."""
    return len(range(start, stop, step))


def zero_of(x):
    """``0`` of the type of ``x`` (where the partials of a ``+`` reduction start)."""
    return type(x)(0)


def one_of(x):
    """``1`` of the type of ``x`` (where the partials of a ``*`` reduction start)."""
    return type(x)(1)


def parallel_region(body, combine, n, start, step, *args):
    """An outlined ``prange`` loop (see frontend/parallel.py): ``body`` over the chunks of ``range(n)``,
    their partials joined by ``combine``; in Python one chunk."""
    del combine  # one chunk: nothing to combine
    return body(0, n, start, step, *args)


def materialize(value):
    """A value bound to a name or returned: an array expression becomes an array (NumPy evaluates
    ``c = a + b`` there); anything else is itself."""
    return value


def inplace(old, new):
    """``x op= y`` with ``new = x op y``: an array ``x`` is overwritten with ``new`` (NumPy's
    in-place operators), anything else is rebound to ``new``."""
    return new
