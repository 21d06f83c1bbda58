"""NumPy's ``Generator`` (``np.random.default_rng(seed)``) in compiled code: PCG64 seeded by SeedSequence.

SeedSequence as NumPy's ``bit_generator`` describes it (O'Neill's
``seed_seq_fe``: a pool of four 32-bit words mixed from the entropy by
multiply-xorshift hashes, then hashed out into eight words); PCG64 (a
128-bit LCG, output XSL-RR) seeded from those words; doubles from the top
53 bits; bounded integers by Lemire's method; normals and exponentials by 256-layer
ziggurats, their tables made here (:func:`ziggurat_tables`). The generator is a
record holding its state array (uint64: state high, state low, increment
high, increment low, whether a 32-bit half is buffered, the half), so
methods draw from the generator they are called on, not from a shared
state. The generator runs on the state as a tuple of those six words, read
from the array once per call (or per array drawn) and written back, so that
it stays in registers. Each distribution takes ``(t, zig, a, b)``: the
state, the ziggurat tables (float64, three rows for the normal's: the
integer bounds, the widths, the heights; three for the exponential's) and two parameters, and gives ``(number, state)``.
"""

from __future__ import annotations

import dataclasses

from typing import Any

from ....pristine import math  # as imported (pristine.py: the rules key on its functions)

from .... import types as T
from ....frontend.intrinsics import check, getitem_unchecked, setitem_unchecked
from ..npintrinsics import new_array
from .nprandomimpl import count, mask_of, unseeded_entropy

U64: Any = T.uint64
"""called in compiled code: the conversion to uint64 (wrapping)"""
I64: Any = T.int64
M32 = 0xFFFFFFFF
MUL_HI = 0x2360ED051FC65DA4
MUL_LO = 0x4385DF649FCCF645
INIT_A = 0x43B0D7E5
MULT_A = 0x931E8875
INIT_B = 0x8B51F9DD
MULT_B = 0x58F38DED
MIX_L = 0xCA01F9DD
MIX_R = 0x4973F715
ZIG_R = 3.6541528853610088
"""where the normal ziggurat's base layer's tail begins"""
ZIG_RINV = 0.27366123732975828
ZIGE_R = 7.69711747013104972
"""where the exponential ziggurat's base layer's tail begins"""


@dataclasses.dataclass
class Generator:
    """A ``Generator`` made in compiled code: PCG64's state (see the module)."""

    state: object


def ziggurat_tables() -> list[list[float]]:
    """The normal and exponential ziggurats' 256 layers of equal area, built top down from where
    the base layer's tail begins (Marsaglia and Tsang's recurrence): for each, the integer bounds
    (scaled by 2**52 for the normal, 2**53 for the exponential, as floats), widths and heights."""
    return [*_layers(ZIG_R, 2.0 ** 52, lambda x: math.exp(-0.5 * x * x),
                     lambda y: math.sqrt(-2.0 * math.log(y)),
                     math.sqrt(math.pi / 2) * math.erfc(ZIG_R / math.sqrt(2.0))),
            *_layers(ZIGE_R, 2.0 ** 53, lambda x: math.exp(-x), lambda y: -math.log(y), math.exp(-ZIGE_R))]


def _layers(r: float, scale: float, density, inverse, tail: float) -> list[list[float]]:
    """Layers of a ziggurat under ``density`` (decreasing; ``inverse`` its inverse), the base layer's
    tail from ``r`` holding ``tail``."""
    area = r * density(r) + tail
    k, w, f = [0.0] * 256, [0.0] * 256, [0.0] * 256
    q = area / density(r)
    k[0] = float(int(r / q * scale))
    w[0], w[255] = q / scale, r / scale
    f[0], f[255] = 1.0, density(r)
    x = top = r
    for i in range(254, 0, -1):
        x = inverse(area / x + density(x))
        k[i + 1] = float(int(x / top * scale))
        top = x
        f[i] = density(x)
        w[i] = x / scale
    return [k, w, f]


# -- SeedSequence ----------------------------------------------------------------------------
def _hashmix(v, h):
    v = v ^ h
    h = (h * U64(MULT_A)) & U64(M32)
    v = (v * h) & U64(M32)
    return v ^ (v >> U64(16)), h


def _mix(x, y):
    r = (U64(MIX_L) * x - U64(MIX_R) * y) & U64(M32)
    return r ^ (r >> U64(16))


def _pool(ent, n):
    """SeedSequence's pool of four words from the ``n`` 32-bit words of ``ent`` (int64)."""
    pool = new_array((4,), U64)
    h = U64(INIT_A)
    for i in range(4):
        v = U64(ent[i]) if i < n else U64(0)
        v, h = _hashmix(v, h)
        pool[i] = v
    for src in range(4):
        for dst in range(4):
            if src != dst:
                v, h = _hashmix(pool[src], h)
                pool[dst] = _mix(pool[dst], v)
    for src in range(4, n):
        for dst in range(4):
            v, h = _hashmix(U64(ent[src]), h)
            pool[dst] = _mix(pool[dst], v)
    return pool


def _pair(w, i):
    return w[2 * i] | (w[2 * i + 1] << U64(32))


def _generator(ent, n):
    """PCG64 seeded by ``SeedSequence(entropy)``, ``entropy`` the ``n`` 32-bit words of ``ent``."""
    pool = _pool(ent, n)
    w = new_array((8,), U64)
    h = U64(INIT_B)
    for i in range(8):
        v = pool[i & 3] ^ h
        h = (h * U64(MULT_B)) & U64(M32)
        v = (v * h) & U64(M32)
        w[i] = v ^ (v >> U64(16))
    seq_hi, seq_lo = _pair(w, 2), _pair(w, 3)
    inc_hi = (seq_hi << U64(1)) | (seq_lo >> U64(63))
    inc_lo = (seq_lo << U64(1)) | U64(1)
    t = step((U64(0), U64(0), inc_hi, inc_lo, U64(0), U64(0)))
    init_lo = _pair(w, 1)
    lo = t[1] + init_lo
    t = step((t[0] + _pair(w, 0) + (U64(1) if lo < init_lo else U64(0)), lo, inc_hi, inc_lo, U64(0), U64(0)))
    s = new_array((6,), U64)
    _store(s, t)
    return Generator(s)


def default_rng(seed):
    """``np.random.default_rng(seed)`` of an integer seed."""
    seed = int(seed)
    check(seed >= 0, "ValueError", "expected non-negative integer")
    ent = new_array((2,), I64)
    ent[0] = seed & M32
    ent[1] = seed >> 32
    return _generator(ent, 2 if ent[1] != 0 else 1)


def default_rng_unseeded():
    """``np.random.default_rng()``: seeded from the process's OS entropy and a count of such calls."""
    ent = new_array((5,), I64)
    unseeded_entropy(ent)
    return _generator(ent, 5)


# -- PCG64 on the state as a tuple (in registers: draws touch memory once per call or array) --
def _store(s, t):
    for i in range(6):
        setitem_unchecked(s, i, t[i])


def mulhi(a, b):
    """The high 64 bits of the 128-bit product of two uint64."""
    a0, a1 = a & U64(M32), a >> U64(32)
    b0, b1 = b & U64(M32), b >> U64(32)
    p01, p10 = a0 * b1, a1 * b0
    mid = ((a0 * b0) >> U64(32)) + (p01 & U64(M32)) + (p10 & U64(M32))
    return a1 * b1 + (p01 >> U64(32)) + (p10 >> U64(32)) + (mid >> U64(32))


def step(t):
    """The LCG's step: ``state = state * multiplier + increment`` (mod 2**128)."""
    hi, lo, inc_hi, inc_lo = t[0], t[1], t[2], t[3]
    mlo = U64(MUL_LO)
    high = mulhi(lo, mlo) + lo * U64(MUL_HI) + hi * mlo
    low = lo * mlo + inc_lo
    return (high + inc_hi + (U64(1) if low < inc_lo else U64(0)), low, inc_hi, inc_lo, t[4], t[5])


def next64(t):
    """``(output, state)``: XSL-RR of the stepped state."""
    t = step(t)
    x = t[0] ^ t[1]
    r = t[0] >> U64(58)
    return (x >> r) | (x << ((U64(64) - r) & U64(63))), t


def next32(t):
    """The low half of a 64-bit output, its high half kept for the next call."""
    if t[4] != U64(0):
        return t[5], (t[0], t[1], t[2], t[3], U64(0), t[5])
    x, t = next64(t)
    return x & U64(M32), (t[0], t[1], t[2], t[3], U64(1), x >> U64(32))


def next_double(t):
    x, t = next64(t)
    return U64(x >> U64(11)) * (1.0 / 9007199254740992.0), t


def _lemire32(t, rng):
    excl = rng + U64(1)
    x, t = next32(t)
    m = x * excl
    if (m & U64(M32)) < excl:
        limit = (U64(M32) - rng) % excl
        while (m & U64(M32)) < limit:
            x, t = next32(t)
            m = x * excl
    return m >> U64(32), t


def _lemire64(t, rng):
    excl = rng + U64(1)
    x, t = next64(t)
    if x * excl < excl:
        limit = (U64(-1) - rng) % excl
        while x * excl < limit:
            x, t = next64(t)
    return mulhi(x, excl), t


def _bounded(t, low, rng):
    """``low`` plus an integer in ``[0, rng]`` (``rng`` a uint64), as NumPy's Generator draws it."""
    v = U64(0)
    if rng == U64(M32):
        v, t = next32(t)
    elif rng != U64(0) and rng < U64(M32):
        v, t = _lemire32(t, rng)
    elif rng == U64(-1):
        v, t = next64(t)
    elif rng != U64(0):
        v, t = _lemire64(t, rng)
    return I64(U64(low) + v), t


# -- the distributions: each ``(number, state)`` of the state, the tables and two parameters --
def random(t, zig, a, b):
    return next_double(t)


def uniform(t, zig, low, high):
    width = high - low
    check(math.isfinite(width), "OverflowError", "Range exceeds valid bounds")
    u, t = next_double(t)
    return low + width * u, t


def integers(t, zig, low, high):
    """An int64 in ``[low, high)``."""
    check(low < high, "ValueError", "low >= high")
    return _bounded(t, low, U64(high) - U64(low) - U64(1))


def integers_closed(t, zig, low, high):
    """An int64 in ``[low, high]`` (``endpoint=True``)."""
    check(low <= high, "ValueError", "low > high")
    return _bounded(t, low, U64(high) - U64(low))


def standard_normal(t, zig, a, b):
    """The 256-layer ziggurat: a layer and a sign from one 64-bit word; the base layer's tail
    by Marsaglia's exponential method, the wedges by the density."""
    while True:
        r, t = next64(t)
        idx = I64(r & U64(0xFF))
        r = r >> U64(8)
        rabs = I64((r >> U64(1)) & U64(0x000FFFFFFFFFFFFF))
        x = rabs * zig[1, idx]
        if (r & U64(1)) != U64(0):
            x = -x
        if rabs < zig[0, idx]:
            return x, t
        if idx == 0:
            while True:
                u, t = next_double(t)
                xx = -ZIG_RINV * math.log1p(-u)
                u, t = next_double(t)
                yy = -math.log1p(-u)
                if yy + yy > xx * xx:
                    return (-(ZIG_R + xx) if (rabs >> 8) & 1 else ZIG_R + xx), t
        else:
            u, t = next_double(t)
            if (zig[2, idx - 1] - zig[2, idx]) * u + zig[2, idx] < math.exp(-0.5 * x * x):
                return x, t


def normal(t, zig, loc, scale):
    check(scale >= 0.0, "ValueError", "scale < 0")
    z, t = standard_normal(t, zig, 0.0, 0.0)
    return loc + scale * z, t


def standard_exponential(t, zig, a, b):
    """The 256-layer exponential ziggurat: a layer from the low bits of a 61-bit word, the tail
    past the base layer by inversion (the exponential has no memory), the wedges by the density."""
    while True:
        r, t = next64(t)
        r = r >> U64(3)
        idx = I64(r & U64(0xFF))
        ri = I64(r >> U64(8))
        x = ri * zig[4, idx]
        if ri < zig[3, idx]:
            return x, t
        u, t = next_double(t)
        if idx == 0:
            return ZIGE_R - math.log1p(-u), t
        if (zig[5, idx - 1] - zig[5, idx]) * u + zig[5, idx] < math.exp(-x):
            return x, t


def exponential(t, zig, scale, b):
    check(scale >= 0.0, "ValueError", "scale < 0")
    e, t = standard_exponential(t, zig, 0.0, 0.0)
    return scale * e, t


def _interval(t, top):
    """An integer in ``[0, top]`` (``top`` a uint64) by masked rejection (``shuffle``'s draws, not
    Lemire's): 32-bit words while ``top`` fits in 32 bits."""
    if top == U64(0):
        return U64(0), t
    mask = mask_of(top)
    if top <= U64(M32):
        v, t = next32(t)
        while (v & mask) > top:
            v, t = next32(t)
        return v & mask, t
    w, t = next64(t)
    while (w & mask) > top:
        w, t = next64(t)
    return w & mask, t


def shuffle(g, x):
    """``rng.shuffle(x)``: Fisher-Yates from the last item down, along the first axis (rows of a
    2-d array exchanged whole)."""
    s = g.state
    check(s.shape[0] == 6, "ValueError", "a Generator's state holds 6 words")
    t = (getitem_unchecked(s, 0), getitem_unchecked(s, 1), getitem_unchecked(s, 2), getitem_unchecked(s, 3),
         getitem_unchecked(s, 4), getitem_unchecked(s, 5))
    for i in range(x.shape[0] - 1, 0, -1):
        j, t = _interval(t, U64(i))
        swap_items(x, i, I64(j))
    _store(s, t)


def swap_items(x, i, j):
    if x.ndim == 1:
        v = x[i]
        x[i] = x[j]
        x[j] = v
    else:
        for k in range(x.shape[1]):
            v = x[i, k]
            x[i, k] = x[j, k]
            x[j, k] = v


def permutation_n(g, n):
    """``rng.permutation(n)``: ``np.arange(n)`` shuffled."""
    out = new_array((n,), I64)
    for i in range(n):
        setitem_unchecked(out, i, i)
    shuffle(g, out)
    return out


def permutation_of(g, x, dt):
    """``rng.permutation(x)`` of a 1-d array: a shuffled copy."""
    out = new_array((x.shape[0],), dt)
    for i in range(x.shape[0]):
        out[i] = x[i]
    shuffle(g, out)
    return out


def permutation_rows(g, x, dt):
    """``rng.permutation(x)`` of a 2-d array: a copy, its rows shuffled."""
    out = new_array((x.shape[0], x.shape[1]), dt)
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            out[i, k] = x[i, k]
    shuffle(g, out)
    return out


def draw(dist, g, zig, a, b):
    """One number of ``dist`` from the generator ``g``. (The state's words are read here, not in a
    helper: each call that takes the array counts a reference to it, atomically.)"""
    s = g.state
    check(s.shape[0] == 6, "ValueError", "a Generator's state holds 6 words")
    t = (getitem_unchecked(s, 0), getitem_unchecked(s, 1), getitem_unchecked(s, 2), getitem_unchecked(s, 3),
         getitem_unchecked(s, 4), getitem_unchecked(s, 5))
    v, t = dist(t, zig, a, b)
    for i in range(6):
        setitem_unchecked(s, i, t[i])
    return v


def fill(dist, g, zig, shape, dt, a, b):
    """An array of ``shape`` of numbers of ``dist`` (type ``dt``) from ``g``, drawn in C order."""
    s = g.state
    check(s.shape[0] == 6, "ValueError", "a Generator's state holds 6 words")
    t = (getitem_unchecked(s, 0), getitem_unchecked(s, 1), getitem_unchecked(s, 2), getitem_unchecked(s, 3),
         getitem_unchecked(s, 4), getitem_unchecked(s, 5))
    n = count(shape)
    out = new_array((n,), dt)
    for i in range(n):
        v, t = dist(t, zig, a, b)
        setitem_unchecked(out, i, v)
    _store(s, t)
    return out.reshape(shape)


def fill1(dist, g, zig, d0, dt, a, b):
    """:func:`fill` of the shape ``(d0,)`` (``size=n``)."""
    return fill(dist, g, zig, (d0,), dt, a, b)
