"""Builtins and ``math`` functions written in Python over supported operations, compiled like user code.

``round(x)``, ``pow(x, y)``, ``divmod(a, b)``, ``math.log(x, base)``,
``math.isclose(a, b)``, ``math.gcd(a, b)`` and ``min``/``max``/``any``/``all``
of a tuple, each with CPython's result and exceptions (an error inside them
names the user's line).
"""

from ...pristine import builtins, math  # as imported (pristine.py: the rules key on its functions)
import operator

from ... import types as T
from ...frontend.intrinsics import check
from ...interpreter.lattice import widen
from ..numpy.npscalar import rint
from .numbers import base

_INT64_MIN = -9223372036854775807 - 1


def round_float(x):
    """``round(x)`` of a float: an int (CPython's ValueError for NaN, OverflowError for infinities)."""
    return int(rint(x))


def round_int(x):
    """``round(x)`` of an int or a bool: the int."""
    return x + 0


def divmod_(a, b):
    """``divmod(a, b)``: Python's floor division and modulo (float ``//`` is defined through divmod)."""
    return a // b, a % b


def log_base(x, b):
    """``math.log(x, b)``: CPython divides the two logarithms."""
    return math.log(x) / math.log(b)


def isclose(a, b):
    """``math.isclose(a, b)`` with the default tolerances (relative 1e-9, absolute 0)."""
    a, b = float(a), float(b)
    if a == b:
        return True
    if math.isinf(a) or math.isinf(b):
        return False
    diff = math.fabs(b - a)
    return diff <= math.fabs(1e-09 * b) or diff <= math.fabs(1e-09 * a)


def gcd(a, b):
    """``math.gcd(a, b)`` of two ints; an OverflowError where the result is 2**63 (-2**63 with 0 or itself)."""
    if a == _INT64_MIN:  # abs() would overflow: reduce it modulo the other first
        check(b != 0 and b != _INT64_MIN, "OverflowError", "math.gcd(...) is 2**63, which does not fit in int64")
        a = a % b
    if b == _INT64_MIN:
        check(a != 0, "OverflowError", "math.gcd(...) is 2**63, which does not fit in int64")
        b = b % a
    a, b = abs(a), abs(b)
    while b:
        a, b = b, a % b
    return a


def max_of(t):
    """``max(t)`` of a tuple: the first of the largest items, as CPython keeps it."""
    m = t[0]
    for k in range(1, len(t)):
        if t[k] > m:
            m = t[k]
    return m


def min_of(t):
    m = t[0]
    for k in range(1, len(t)):
        if t[k] < m:
            m = t[k]
    return m


def any_of(t):
    for k in range(len(t)):  # noqa: SIM110  (compiled code has no generators)
        if t[k]:
            return True
    return False


def all_of(t):
    for k in range(len(t)):  # noqa: SIM110  (compiled code has no generators)
        if not t[k]:
            return False
    return True


_OF_TUPLE = {builtins.max: max_of, builtins.min: min_of, builtins.any: any_of, builtins.all: all_of}
_OF_NUMBERS = {(builtins.divmod, 2): divmod_, (math.log, 2): log_base, (math.isclose, 2): isclose}


@base.handler
def _written_in_python(interp, fn, args):
    widened = [widen(a) for a in args]
    if fn in _OF_TUPLE and len(widened) == 1 and isinstance(widened[0], T.TupleType) and widened[0].items:
        return interp.invoke(_OF_TUPLE[fn], args)
    types = [t for t in widened if isinstance(t, T.Scalar) and t.kind in "biuf"]
    if len(types) != len(widened):
        return None
    if fn is builtins.round and len(types) == 1:
        return interp.invoke(round_float if types[0].kind == "f" else round_int, args)
    if fn is builtins.pow and len(types) == 2:
        return interp.abstract_call(operator.pow, args)
    if fn is math.gcd and len(types) == 2 and all(t.kind in "bi" for t in types):
        return interp.invoke(gcd, args)
    helper = _OF_NUMBERS.get((fn, len(types)))
    return interp.invoke(helper, args) if helper is not None else None
