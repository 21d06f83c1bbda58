"""Every compiled value that comes back to Python is an owned NumPy array, a Python scalar, or a tuple,
NamedTuple or dataclass of those however nested: a differential sweep against CPython running the same
functions (random nestings of arrays of several dtypes and ranks, views of the arguments, new arrays,
scalars)."""

from __future__ import annotations

import dataclasses
import importlib.util
import random
import sys
from typing import NamedTuple

import numpy as np
import pytest

import gpucompiler as gpuc
from gpucompiler.errors import TypeInferenceError

_HEADER = '''
import dataclasses
from typing import NamedTuple

import numpy as np


class Pair(NamedTuple):
    first: object
    second: object


class Triple(NamedTuple):
    a: object
    b: object
    c: object


@dataclasses.dataclass(frozen=True)
class Rec:
    left: object
    right: object
'''

#: leaves: an expression of the arguments ``A`` (float64, 2-d), ``B`` (int32, 1-d), ``C`` (float32, 3-d),
#: ``D`` (bool, 1-d), ``E`` (complex128, 1-d), ``s`` (float) and ``n`` (int)
_LEAVES = ["A", "A[1:]", "A.T", "A[::2, ::-1]", "A * 2.0", "A + A", "A[1]",
           "B", "B[::2]", "B + B", "B[::-1]",
           "C", "C[1]", "C + C", "C[:, 1:, ::2]",
           "D", "D[1:]", "E", "E + E", "E[::2]",
           "s", "n", "s * 2.0", "n + 1", "A[0, 0]", "B[1]", "D[0]", "s > 1.0", "E[1]",
           "np.zeros(())", "A.sum()", "B.max()", "A[::-1, 1]", "D & D", "B * 2"]
_AGGREGATES = [("({}, {})", 2), ("({}, {}, {})", 3), ("({},)", 1), ("Pair({}, {})", 2), ("Triple({}, {}, {})", 3),
               ("Rec({}, {})", 2)]


def _program(seed: int) -> str:
    rng = random.Random(seed)
    body: list[str] = []

    def leaf() -> str:
        name = f"v{len(body)}"
        body.append(f"    {name} = {rng.choice(_LEAVES)}")
        return name

    def value(depth: int) -> str:
        if depth == 0 or rng.random() < 0.3:
            return leaf()
        form, n = rng.choice(_AGGREGATES)
        parts = [value(depth - 1) for _ in range(n)]
        name = f"t{len(body)}"
        body.append(f"    {name} = {form.format(*parts)}")
        return name

    top = value(3) if seed % 5 else leaf()  # some programs return one array or scalar
    return f"def f{seed}(A, B, C, D, E, s, n):\n" + "\n".join(body) + f"\n    return {top}\n"


def _arguments():
    return (np.arange(12.0).reshape(3, 4), np.arange(5, dtype=np.int32) * 3 - 4,
            np.linspace(-1, 1, 12, dtype=np.float32).reshape(2, 3, 2), np.array([True, False, True, True]),
            np.array([1 + 2j, -0.5j, 3.0]), 1.5, 7)


def _same(got, want, args) -> str | None:
    """Why ``got`` (compiled) differs from ``want`` (CPython), or None; ``args``: the arguments of each
    call."""
    if isinstance(want, np.ndarray):
        if type(got) is not np.ndarray:
            return f"{type(got).__name__} where CPython gives an array"
        if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
            return f"array {got.dtype}{got.shape} {got.tolist()} != {want.dtype}{want.shape} {want.tolist()}"
        for g, w in zip(*args):  # a view of an argument stays one; a new array shares nothing
            if isinstance(g, np.ndarray) and np.shares_memory(got, g) != np.shares_memory(want, w):
                return "memory shared with an argument differs from CPython's"
        return None
    if isinstance(want, tuple):
        if type(got) is not type(want) or len(got) != len(want):
            return f"{type(got).__name__} of {len(got)} where CPython gives {type(want).__name__} of {len(want)}"
        return next((why for g, w in zip(got, want) if (why := _same(g, w, args)) is not None), None)
    if dataclasses.is_dataclass(want):
        if type(got) is not type(want):
            return f"{type(got).__name__} where CPython gives {type(want).__name__}"
        return next((why for f in dataclasses.fields(want)
                     if (why := _same(getattr(got, f.name), getattr(want, f.name), args)) is not None), None)
    kind = {np.bool_: bool, np.integer: int, np.floating: float, np.complexfloating: complex}
    want_kind = next((k for t, k in kind.items() if isinstance(want, t)), type(want))
    if type(got) is not want_kind and not (isinstance(got, np.generic) and isinstance(got, want_kind)):
        return f"{type(got).__name__} {got!r} where CPython gives {type(want).__name__} {want!r}"
    return None if got == want else f"{got!r} != {want!r}"


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    seeds = range(60)
    path = tmp_path_factory.mktemp("returned") / "returned_values_programs.py"
    path.write_text(_HEADER + "\n\n" + "\n\n".join(_program(s) for s in seeds))
    spec = importlib.util.spec_from_file_location("returned_values_programs", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


@pytest.mark.parametrize("seed", range(60))
def test_a_returned_nesting_of_arrays_records_and_scalars_is_cpythons(programs, seed):
    fn = getattr(programs, f"f{seed}")
    want_args, got_args = _arguments(), _arguments()
    want = fn(*want_args)
    args = (got_args, want_args)
    got = gpuc.jit(fn)(*got_args)
    assert _same(got, want, args) is None, (_same(got, want, args), _program(seed))
    again = gpuc.jit(fn)(*got_args)  # a second call (the warm path) too
    assert _same(again, want, args) is None


def test_the_sweep_returns_records_holding_new_arrays_and_views():
    """Not vacuous: the programs return NamedTuples and dataclasses holding arrays made by the compiled
    code and views of the arguments, and bare arrays and scalars."""
    text = "\n".join(_program(s) for s in range(60))
    for needle in ("Pair(", "Triple(", "Rec(", "A * 2.0", "A[1:]", "C[:, 1:, ::2]", "E + E"):
        assert needle in text


class Body(NamedTuple):
    pos: np.ndarray
    vel: np.ndarray
    mass: float


def step(pos, vel):
    new = pos + vel
    energy = 0.5 * float((vel * vel).sum())
    return Body(new, vel * 2.0, 3.0), energy


def alone(pos, vel):
    moved = pos + vel
    return Body(moved, vel, 1.0)


def test_a_namedtuple_of_arrays_returned_in_a_tuple_and_alone_holds_owned_arrays():
    pos, vel = np.arange(3.0), np.array([0.5, -1.0, 2.0])
    body, energy = gpuc.jit(step)(pos, vel)
    want, want_energy = step(pos, vel)
    assert type(body) is Body and energy == want_energy
    for got_field, want_field in zip(body, want):
        assert type(got_field) is type(want_field)
        assert np.array_equal(got_field, want_field)
    assert body.pos.flags.writeable and body.pos.flags.owndata is False  # its base keeps the memory
    single = gpuc.jit(alone)(pos, vel)
    assert type(single) is Body and np.array_equal(single.pos, pos + vel) and single.vel is vel


@dataclasses.dataclass
class State:
    body: Body
    t: float


def make(x, k):
    return Body(x * k, x + k, float(k))


def carried_through_a_loop(x, n):
    b = make(x, 1.0)  # a record of new arrays from a compiled helper
    for _ in range(n):
        b = Body(b.pos + b.vel, b.vel * 0.5, b.mass + 1.0)  # each iteration frees the last one's arrays
    return State(b, 2.0), b.pos.sum()


def merged_from_two_paths(x, c):
    if c > 0:
        b = make(x, 2.0)
    else:
        b = Body(x, x[::-1], 0.0)  # views of the argument on this path (was a TypeInferenceError)
    return b, b.vel[0]


@pytest.mark.parametrize(("fn", "args"), [(carried_through_a_loop, (3,)), (carried_through_a_loop, (0,)),
                                          (merged_from_two_paths, (1,)), (merged_from_two_paths, (-1,))])
def test_records_of_new_arrays_carried_merged_and_returned_from_helpers(fn, args):
    want_x, got_x = np.arange(4.0), np.arange(4.0)
    want, got = fn(want_x, *args), gpuc.jit(fn)(got_x, *args)
    assert _same(got, want, ((got_x,), (want_x,))) is None, _same(got, want, ((got_x,), (want_x,)))


def nones_in_tuples(x, a):
    t = (None, x, a * 2.0)
    return (None, t[1], (None, t[2]), t[0]), None


def picks_after_a_none(x, y):
    t = (None, x, y)
    return t[1] - t[2]


def test_none_inside_returned_tuples_and_the_items_after_it():
    """A tuple holding None was an AttributeError from inside the compiler (building it, boxing it)."""
    a = np.arange(3.0)
    for _ in range(2):  # the first call and the warm entry
        got, want = gpuc.jit(nones_in_tuples)(1.5, a), nones_in_tuples(1.5, a)
        assert _same(got, want, ((a,), (a,))) is None
    assert gpuc.jit(picks_after_a_none)(5.0, 2.0) == 3.0


def slices_around_a_none(x, a, b):
    t = (None, a, x, None, b, 4.0)
    u = t[1:]
    return u, t[::2], t[2:][2:], t[1:3], u[1] + u[4], (None, a)[1:]


def test_slices_of_a_tuple_holding_none_pick_the_items_python_picks():
    """A slice indexed the tuple's fields by Python's positions, which a None shifts: an error from inside
    LLVM's bindings (or the wrong item when the types matched)."""
    a, b = np.arange(3.0), np.ones(2)
    got, want = gpuc.jit(slices_around_a_none)(1.5, a, b), slices_around_a_none(1.5, a, b)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, tuple):
            assert len(g) == len(w)
            for gi, wi in zip(g, w):
                assert (gi is None and wi is None) or np.array_equal(gi, wi)
        else:
            assert g == w


def test_a_record_of_a_class_defined_in_a_function_is_a_typed_error():
    class Local(NamedTuple):
        x: float
        y: float

    def back(p):
        return p

    with pytest.raises(TypeInferenceError, match="defined inside a function"):  # was a segmentation fault
        gpuc.jit(back)(Local(1.0, 2.0))
