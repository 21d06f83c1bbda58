"""NumPy structured (record) arrays as ``@jit`` arguments, against NumPy running the same function.

The reference runs the uncompiled function on a copy viewed as ``np.recarray`` (whose
elements read fields as attributes, as compiled code and Numba do); the compiled one runs
on a plain copy. Results and the arrays after the call are compared: integers exactly,
floats within rounding.
"""

from __future__ import annotations

import random
from typing import Any

import llvmlite.binding as llvm
import numpy as np
import pytest

from gpucompiler import jit, kernel
from gpucompiler.errors import ArgumentTypeError, GPUCompilerError, ReadOnlyArrayError, TypeInferenceError
from gpucompiler import types as T
from gpucompiler.frontend.fingerprint import encode_value

PARTICLE = np.dtype([("x", np.float64), ("v", np.float64), ("m", np.float64), ("id", np.int32)])
PARTICLE_ALIGNED = np.dtype(PARTICLE.descr, align=True)
PADDED = np.dtype([("flag", np.int8), ("w", np.float64), ("n", np.int16)], align=True)  # 7 bytes after flag
VECTORS = np.dtype([("pos", np.float64, (3,)), ("q", np.float32), ("ok", np.bool_)])
MIXED = np.dtype([("c", np.complex128), ("u", np.uint16), ("b", np.bool_), ("f", np.float32), ("k", np.int64)])


def _particles(dtype, n=7, seed=0) -> Any:
    rng = np.random.default_rng(seed)
    a: Any = np.zeros(n, dtype)
    a["x"], a["v"], a["m"] = rng.standard_normal(n), rng.standard_normal(n), rng.random(n) + 0.5
    a["id"] = np.arange(n) * 3 + 1
    return a


def _same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    if isinstance(want, np.ndarray) and want.dtype.names:
        assert got.dtype == want.dtype and got.shape == want.shape
        for name in want.dtype.names:
            _same(got[name], want[name])
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    else:
        np.testing.assert_array_equal(got, want)


def _check(fn, a, *args):
    """``fn`` compiled on a copy of ``a`` and run by NumPy on another: the same results and writes."""
    mine, theirs = a.copy(), a.copy().view(np.recarray)
    got = jit(fn)(mine, *args)
    with np.errstate(all="ignore"):
        want = fn(theirs, *args)
    _same(got, want)
    _same(mine, np.asarray(theirs))
    return got


# -- the programs ------------------------------------------------------------------
def kinetic(a):
    e = 0.0
    for p in a:
        e += 0.5 * p.m * p.v ** 2
    return e


def step(a, dt):
    for i in range(len(a)):
        a[i].x = a[i].x + dt * a[i].v
        p = a[i]
        p.v -= dt * p.x
        p["id"] = p["id"] * 2 + i
    return a["x"].sum(), np.mean(a["m"]), a.shape[0], a.size, a.ndim


def slices(a):
    head, odd = a[1:], a[::2]
    odd[0].m = 9.0
    s = 0.0
    for p in a[::-3]:
        s += p.x
    return head[0].x, odd[1].id, len(odd), s, a[-1]["v"], a[1:][::2][1].m


def by_index(a):
    total = 0.0
    for p in a:
        total += p[0] * p[-2] + p[3]
        p[2] = p[1] + 1.0
    return total


def copies(a):
    a[0] = a[len(a) - 1]
    a[2] = a[1]
    a[3] = (a[4].m, -1.5, 2, a[5].x * 10.0)  # one number per field, each cast (float to int truncates)
    return a[0].id + a[2].id


@pytest.mark.parametrize("dtype", [PARTICLE, PARTICLE_ALIGNED], ids=["packed", "aligned"])
@pytest.mark.parametrize("fn,args", [(kinetic, ()), (step, (0.125,)), (slices, ()), (by_index, ()), (copies, ())],
                         ids=["kinetic", "step", "slices", "by_index", "copies"])
def test_programs_give_numpys_results_and_writes(dtype, fn, args):
    _check(fn, _particles(dtype), *args)


def test_packed_and_aligned_layouts_are_the_dtypes_own():
    assert (PARTICLE.itemsize, PARTICLE_ALIGNED.itemsize, PADDED.itemsize) == (28, 32, 24)
    a = np.zeros(5, PADDED)
    a["flag"], a["w"], a["n"] = [1, -2, 3, -4, 5], np.linspace(0.5, 2.5, 5), [10, 20, -30, 40, 50]

    def padded(a):
        s = 0.0
        for p in a:
            s += p.flag * p.w + p.n
            p.n = p.flag * 3
            p.flag = 7
        return s

    _check(padded, a)
    raw = a.copy()
    raw.view(np.uint8).reshape(5, 24)[:, 1:8] = 0xAB
    before = raw.view(np.uint8).copy()
    jit(padded)(raw)
    after = raw.view(np.uint8)
    assert (after.reshape(5, 24)[:, 1:8] == 0xAB).all()  # the padding between the fields is not written
    assert (after.reshape(5, 24)[:, 0] == 7).all() and (after != before).sum() > 5


def test_explicit_offsets_with_gaps_and_a_multi_field_view():
    dt = np.dtype({"names": ["y", "x"], "formats": [np.int32, np.float64], "offsets": [13, 1], "itemsize": 19})
    a = np.zeros(6, dt)
    a["x"], a["y"] = np.arange(6) * 0.5, np.arange(6) - 2

    def use(a):
        t = 0.0
        for p in a:
            t += p.x * p.y
            p.y += 1
        return t

    _check(use, a)
    b = _particles(PARTICLE)
    _check(kinetic, b[["v", "m"]])  # NumPy's view of two fields: the same offsets, the itemsize of the whole


def test_non_contiguous_and_two_dimensional_arrays():
    a = _particles(PARTICLE, 12)
    _check(step, a[::2], 0.25)
    _check(kinetic, a[::-3])

    def grid(g):
        s = 0.0
        for i in range(g.shape[0]):
            for j in range(g.shape[1]):
                g[i, j].m = i * 10.0 + j
                s += g[i, j].v
        row = g[1]
        return s, row[2].m, g["m"].sum(), g[:, 1]["x"].sum(), len(g)

    _check(grid, _particles(PARTICLE_ALIGNED, 12).reshape(3, 4))
    _check(grid, _particles(PARTICLE, 24).reshape(4, 6)[::2, 1:5])


def test_field_views_take_numpys_functions_and_write_the_array():
    def views(a):
        x, m = a["x"], a.m
        a["v"][:] = 2.0 * x
        a.id[1:] = 5
        return x.sum(), np.mean(m), m.max(), np.dot(x, m), a["v"].std(), (x * m).sum(), a["id"].sum()

    _check(views, _particles(PARTICLE))
    _check(views, _particles(PARTICLE_ALIGNED)[1::2])


def test_sub_array_and_mixed_fields():
    a = np.zeros(4, VECTORS)
    a["pos"] = np.arange(12.0).reshape(4, 3) - 5.0
    a["q"], a["ok"] = [0.5, -1.5, 2.0, 3.25], [True, False, True, False]

    def vectors(a):
        s = 0.0
        for p in a:
            if p.ok:
                s += p.pos[0] * p.q + p.pos.sum()
            p.pos[2] = p.q
            p.ok = not p.ok
        return s, a["pos"][:, 1].sum(), a["pos"].shape, np.linalg.norm(a[2].pos)

    _check(vectors, a)
    b = np.zeros(5, MIXED)
    b["c"], b["u"], b["b"] = np.arange(5) * (1 + 2j), np.arange(5) * 1000, [1, 0, 1, 1, 0]
    b["f"], b["k"] = np.linspace(-1, 1, 5), np.arange(5) - (1 << 40)

    def mixed(a):
        z = 0j
        n = 0
        for p in a:
            z += p.c * p.f
            n += p.u + p.k * p.b
            p.u = p.u + 1
            p.c = p.c * 1j
        return z, n

    _check(mixed, b)


def _energy_of(p):
    return 0.5 * p.m * p.v * p.v


def _kick(p, dv):
    p.v = p.v + dv


def _total(a):
    e = 0.0
    for p in a:
        e += _energy_of(p)
    return e


def test_elements_and_arrays_pass_to_other_compiled_functions():
    def nested(a, dv):
        for i in range(len(a)):
            _kick(a[i], dv * i)
        return _total(a), _total(a[1:]), _energy_of(a[0])

    _check(nested, _particles(PARTICLE), 0.5)
    _check(nested, _particles(PARTICLE_ALIGNED)[::-1], -0.25)


def test_same_names_with_other_offsets_compile_apart():
    """Two dtypes NumPy tells apart only by their offsets: each call reads its own layout."""
    first = np.dtype({"names": ["a", "b"], "formats": [np.float64, np.float64], "offsets": [0, 8]})
    second = np.dtype({"names": ["a", "b"], "formats": [np.float64, np.float64], "offsets": [8, 0]})
    assert T.typeof(np.zeros(1, first)) != T.typeof(np.zeros(1, second))

    @jit
    def diff(a):
        return a[0].a - a[0].b

    x, y = np.zeros(1, first), np.zeros(1, second)
    x["a"], x["b"] = 5.0, 1.0
    y["a"], y["b"] = 5.0, 1.0
    assert diff(x) == 4.0 and diff(y) == 4.0 and diff(x) == 4.0
    assert len(diff._entries) == 2
    packed = np.zeros(2, PARTICLE)
    packed["v"] = [1.0, 2.0]
    aligned = packed.astype(PARTICLE_ALIGNED)
    plain = np.array([1.0, 2.0])

    @jit
    def second_v(a):
        return a[1].v if a.ndim == 1 else 0.0

    assert second_v(packed) == 2.0 and second_v(aligned) == 2.0 and len(second_v._entries) == 2
    with pytest.raises(TypeInferenceError):
        second_v(plain)  # a float64 has no field: another specialization, refused at its line


def test_typed_errors_name_the_field_and_the_line():
    def reads(a):
        return a[0].x

    for dt, field in ((np.dtype([("x", np.float64), ("name", "U8")]), "name"),
                      (np.dtype([("x", np.float64), ("o", object)]), "o"),
                      (np.dtype([("x", ">f8")]), "x"),
                      (np.dtype([("x", np.float64), ("in", [("a", np.int8)])]), "in")):
        with pytest.raises(ArgumentTypeError, match=f"field '{field}'"):
            jit(reads)(np.zeros(2, dt))
    with pytest.raises(ArgumentTypeError, match="at least one dimension"):
        jit(reads)(np.zeros(2, PARTICLE)[0])

    def missing(a):
        return a[0].z

    def returns_element(a):
        return a[1]

    def returns_array(a):
        return a[1:]

    def complex_into_float(a):
        a[0].x = 1j

    def whole_sub_array(a):
        a[0].pos = 1.0

    def whole_field(a):
        a["x"] = 1.0

    def plain_attribute(a):
        a[0].z = 1.0

    def short_tuple(a):
        a[0] = (1.0, 2.0, 3.0)

    cases = [(missing, "no field 'z'", PARTICLE), (returns_element, "returning a structured array", PARTICLE),
             (returns_array, "returning a structured array", PARTICLE),
             (complex_into_float, "cannot assign complex128", PARTICLE),
             (whole_sub_array, "sub-array field 'pos'", VECTORS), (whole_field, r"a\['x'\]\[:\] = v", PARTICLE),
             (plain_attribute, "no field 'z'", PARTICLE), (short_tuple, r"assignment of tuple\(", PARTICLE)]
    for fn, message, dt in cases:
        with pytest.raises(TypeInferenceError, match=message) as info:
            jit(fn)(np.zeros(3, dt))
        assert info.value.filename == __file__ and info.value.line == fn.__code__.co_firstlineno + 1, fn.__name__
    frozen = np.zeros(3, PARTICLE)
    frozen.flags.writeable = False
    with pytest.raises(ReadOnlyArrayError):
        jit(step)(frozen, 0.5)
    assert jit(kinetic)(frozen) == 0.0


def test_index_errors_and_kernels():
    @jit
    def at(a, i):
        return a[i].m

    a = _particles(PARTICLE, 4)
    assert at(a, -1) == a[-1]["m"]
    with pytest.raises(IndexError):
        at(a, 4)

    @jit
    def row_tail(g, i):
        return g[i, 1:][0].m

    g = _particles(PARTICLE, 12).reshape(3, 4)
    assert row_tail(g, np.uint64(2)) == row_tail(g, -1) == g[2, 1]["m"]
    with pytest.raises(IndexError, match="18446744073709551615 is out of bounds for axis 0"):
        row_tail(g, np.uint64(2 ** 64 - 1))  # an unsigned index is never wrapped as a negative one

    def fill(a, out):
        out[0] = 1.0

    k = kernel(fill)
    with pytest.raises(ArgumentTypeError, match="structured array"):
        k[1, 1, "cpu"](a, np.zeros(1))  # pyright: ignore[reportIndexIssue]


_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.float32, np.float64, np.bool_]


def _fuzzed(a):
    s = 0.0
    for p in a:
        s += p[0] * 2.0 + p[1] - p[2]
        p[0] = p[1]
        p[2] = p[2] + 1
    return s, a[1:][::2][0][1]


def test_random_dtypes_against_numpy():
    """A few random field types, orders, alignments and gaps (a small fixed sample: under two seconds)."""
    rng = random.Random(28)
    for _ in range(4):
        kinds = [rng.choice(_TYPES) for _ in range(3)]
        if rng.random() < 0.5:
            dt = np.dtype([(f"f{k}", t) for k, t in enumerate(kinds)], align=rng.random() < 0.5)
        else:  # explicit offsets, shuffled, with gaps
            order, offsets, at = rng.sample(range(3), 3), [0] * 3, rng.randrange(3)
            for k in order:
                offsets[k] = at
                at += np.dtype(kinds[k]).itemsize + rng.randrange(3)
            dt = np.dtype({"names": ["f0", "f1", "f2"], "formats": kinds, "offsets": offsets, "itemsize": at})
        a = np.zeros(6, dt)
        for k, t in enumerate(kinds):
            a[f"f{k}"] = np.array([rng.randrange(0, 50) for _ in range(6)]).astype(t)
        _check(_fuzzed, a)


def _field_energy(a, k):
    e = 0.0
    for p in a:
        e += p.m * p.x * p.x * k
    return e


def _field_energy_after(a, k):
    e = _field_energy(a, k)
    a[0].m = a[1].x * 2.0
    return e + a[0].m * a[2].x


def _field_energy_ids(a, k):
    e = 0.0
    for p in a:
        e += p.m * p.x * p.x * k + p.id * p.x
    return e


def _central_difference(fn, a, field, i, k, h):
    up, down = a.copy(), a.copy()
    up[field][i] += h
    down[field][i] -= h
    return (fn(up.view(np.recarray), k) - fn(down.view(np.recarray), k)) / (2 * h)


@pytest.mark.parametrize("dtype", [np.dtype([("x", np.float64), ("m", np.float64), ("id", np.int32)]),
                                   np.dtype([("x", np.float64), ("m", np.float64), ("id", np.int32)], align=True),
                                   np.dtype([("id", np.int16), ("x", np.float64), ("m", np.float32)])],
                         ids=["packed", "aligned", "int-first"])
@pytest.mark.parametrize("fn", [_field_energy, _field_energy_after, _field_energy_ids],
                         ids=["loop", "loop-and-writes", "integer-field-read"])
def test_gradients_through_fields_match_finite_differences_or_are_refused(dtype, fn):
    """Fields are loads at offsets: reverse and forward derivatives in the float fields of the shadow match
    central differences; where the AD engine cannot tell an integer field from a float one it says so."""
    ad = pytest.importorskip("enzyme_plugin")
    a: Any = np.zeros(3, dtype)
    a["x"], a["m"], a["id"] = [1.0, 2.0, -0.5], [2.0, 0.5, 3.0], [1, 2, 3]
    da: Any = np.zeros_like(a)
    reads_floats_only = fn is not _field_energy_ids
    try:
        (dk,) = ad.autodiff(ad.Reverse, fn, ad.Duplicated(a.copy(), da), ad.Active(1.5))
        tangent: Any = np.zeros_like(a)
        tangent["x"][1] = 1.0
        (forward,) = ad.autodiff(ad.Forward, fn, ad.Duplicated(a.copy(), tangent), ad.Const(1.5))
    except GPUCompilerError:
        assert not reads_floats_only  # code reading only float fields is differentiated
        return
    # the energies are at most quadratic in each field: central differences with a step every field (a
    # float32 one too) holds exactly are exact
    for field in ("x", "m"):
        want = [_central_difference(fn, a, field, i, 1.5, 2.0 ** -10) for i in range(3)]
        np.testing.assert_allclose(da[field], want, rtol=1e-12, atol=1e-12)
    assert (da["id"] == 0).all()
    h = 2.0 ** -10
    np.testing.assert_allclose(dk, (fn(a.copy().view(np.recarray), 1.5 + h)
                                    - fn(a.copy().view(np.recarray), 1.5 - h)) / (2 * h), rtol=1e-12)
    np.testing.assert_allclose(forward, da["x"][1], rtol=1e-12)


def _load_alignments(fn, a) -> set[tuple[str, int]]:
    """``(type, align)`` of every load of the optimised IR of ``fn`` compiled for ``a`` (parsed by LLVM)."""
    module = llvm.parse_assembly(fn.inspect_llvm(a))
    out = set()
    for f in module.functions:
        for block in f.blocks:
            for inst in block.instructions:
                if inst.opcode == "load":
                    text = str(inst)
                    out.add((text.split("load ")[1].split(",")[0], int(text.rsplit("align ", 1)[1].split(",")[0])))
    return out


def test_field_loads_assume_the_alignment_numpy_guarantees():
    @jit
    def read(a):
        s = 0.0
        for p in a:
            s += p.w + p.n
        return s

    aligned = np.zeros(4, PADDED)  # align=True: w at 8, n at 16, NumPy's flags.aligned
    aligned["w"], aligned["n"] = [1.0, 2.0, 3.0, 4.0], [1, 2, 3, 4]
    packed = aligned.astype(np.dtype([("flag", np.int8), ("w", np.float64), ("n", np.int16)]))  # w at 1
    raw = np.zeros(4 * PADDED.itemsize + 1, np.uint8)
    unaligned = np.frombuffer(raw.data, PADDED, 4, offset=1)  # the same dtype at an odd address
    unaligned[...] = aligned
    assert not unaligned.flags.aligned
    assert read(aligned) == read(packed) == read(unaligned) == 20.0
    assert ("double", 8) in _load_alignments(read, aligned)
    for other in (packed, unaligned):
        loads = _load_alignments(read, other)
        assert ("double", 1) in loads and ("i16", 1) in loads and ("double", 8) not in loads
    assert len(read._entries) == 3  # an unaligned array of the same dtype is a specialization of its own


def test_a_function_without_source_writes_fields():
    namespace: dict = {}
    exec("def kick(a, dt):\n    for p in a:\n        p.v += dt * p.x\n        p.x = p.x * 2\n    a[0].m = 7.0\n"
         "    return a['v'].sum()\n", namespace)
    _check(namespace["kick"], _particles(PARTICLE), 0.5)


def test_views_and_elements_of_several_kinds_join_at_merges():
    def pick(a, flag):
        b = a if flag else a[::2]
        p = b[1] if flag else a[::-1][0]
        p.m = -1.0
        return b[len(b) - 1].x + p.x, len(b)

    for flag in (True, False):
        _check(pick, _particles(PARTICLE, 8), flag)
    raw = np.zeros(8 * PARTICLE_ALIGNED.itemsize + 1, np.uint8)
    unaligned = np.frombuffer(raw.data, PARTICLE_ALIGNED, 8, offset=1)
    unaligned[...] = _particles(PARTICLE_ALIGNED, 8)

    def mixed_alignment(a, b, flag):
        p = a[0] if flag else b[0]
        return p.x

    assert jit(mixed_alignment)(_particles(PARTICLE_ALIGNED, 8), unaligned, False) == unaligned[0]["x"]


TABLE = _particles(PARTICLE, 5)


def _table_energy():
    e = 0.0
    for p in TABLE:
        e += p.m * p.x
    return e + TABLE[1]["id"]


def test_a_module_level_structured_array_is_frozen_read_only():
    global TABLE
    want = float((TABLE["m"] * TABLE["x"]).sum() + TABLE["id"][1])
    f = jit(_table_energy)
    assert f() == pytest.approx(want, rel=1e-15)
    saved = TABLE
    try:  # the same bytes under another layout: another fingerprint, and the new layout's numbers
        TABLE = np.frombuffer(saved.tobytes(), np.dtype({"names": ["m", "x", "id"], "formats": [np.float64] * 2
                                                          + [np.int32], "offsets": [0, 8, 24], "itemsize": 28}))
        assert encode_value(TABLE) != encode_value(saved)
        assert f() == pytest.approx(float((TABLE["m"] * TABLE["x"]).sum() + TABLE["id"][1]), rel=1e-15)
    finally:
        TABLE = saved

    def write():
        TABLE[0].x = 1.0

    with pytest.raises(ReadOnlyArrayError, match="read-only") as info:
        jit(write)()
    assert "frozen" in info.value.hint and info.value.line == write.__code__.co_firstlineno + 1


def test_equal_packed_and_aligned_dtypes_keep_their_own_alignment():
    """NumPy calls [("q1", f8), ("q2", f8)] packed and aligned equal (the same offsets); only the aligned one
    promises 8-byte fields, whichever is typed first."""
    aligned = np.dtype([("q1", np.float64), ("q2", np.float64)], align=True)
    packed = np.dtype([("q1", np.float64), ("q2", np.float64)])
    assert aligned == packed and (aligned.alignment, packed.alignment) == (8, 1)
    first, second = T.typeof(np.zeros(2, aligned)), T.typeof(np.zeros(2, packed))
    assert isinstance(first, T.StructArrayType) and isinstance(second, T.StructArrayType)
    assert (first.dtype.alignment, second.dtype.alignment) == (8, 1)
    raw = np.zeros(2 * 16 + 1, np.uint8)
    odd = np.frombuffer(raw.data, packed, 2, offset=1)  # NumPy's flags.aligned: a packed dtype is never misaligned
    assert odd.flags.aligned

    @jit
    def total(a):
        return a[0].q1 + a[1].q2

    odd[...] = [(1.0, 2.0), (3.0, 4.0)]
    assert total(np.zeros(2, aligned)) == 0.0 and total(odd) == 5.0
    assert ("double", 1) in _load_alignments(total, odd) and ("double", 8) not in _load_alignments(total, odd)
