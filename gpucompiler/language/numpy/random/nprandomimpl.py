"""NumPy's legacy random numbers (``np.random.seed``, ``random``, ``normal``...), compiled like user code.

MT19937 as NumPy seeds it (an integer seed: Matsumoto and Nishimura's
``init_genrand``), its tempering, 53-bit doubles from two 32-bit words (the
high 27 and 26 bits), the legacy normal by Marsaglia's polar method with
its second value cached, the exponential by inversion, and bounded integers
by masked rejection (NumPy's legacy ``randint`` and ``shuffle``): the same
numbers as ``np.random.RandomState(seed)`` for the same calls. The state is
the process's buffer (:mod:`.nprandomstate`), held in int64 words below
2**32. Every draw comes from integers, so the Enzyme plugin sees no
derivative through a draw (only through what the caller does with it).
"""

from typing import Any

from ....pristine import math  # as imported (pristine.py: the rules key on its functions)

from .... import types as T
from ....frontend.intrinsics import check, getitem_unchecked, setitem_unchecked
from ..npintrinsics import new_array
from .nprandomstate import COUNTER, ENTROPY, HAS_GAUSS, N, POS, SEEDED, SLOT, SLOTS, gauss_cells, process_words, slot_tickets, slot_words, take_ticket, thread_id, thread_owners

M = 397
MATRIX_A = 0x9908B0DF
UPPER = 0x80000000
LOWER = 0x7FFFFFFF
M32 = 0xFFFFFFFF
U64: Any = T.uint64
"""called in compiled code: the conversion to uint64 (wrapping)"""
I64: Any = T.int64


def state():
    """The calling thread's state: the slot it owns, claimed at its first draw (the shared one once
    every slot is taken), seeded from the process's entropy and the thread's id when new."""
    owners = thread_owners()
    tickets = slot_tickets()
    tid = thread_id()
    h = I64((U64(tid) * U64(-7046029254386353131)) >> U64(40)) & (SLOTS - 1)  # Fibonacci hashing
    s = SLOTS
    for k in range(SLOTS):
        slot = (h + k) & (SLOTS - 1)
        owner = getitem_unchecked(owners, slot)
        if owner == 0 and take_ticket(tickets, slot) == 0:
            setitem_unchecked(owners, slot, tid)
            owner = tid
        if owner == tid:
            s = slot
            break
    st = slot_words(s)
    if st[SEEDED] == 0:
        st[SLOT] = s
        _seed_fresh(st, tid)
    return st


def _seed_fresh(st, tid):
    """Seed ``st`` by ``init_by_array`` of the process's entropy, the thread's id and a count."""
    pw = process_words()
    c = pw[COUNTER]
    pw[COUNTER] = c + 1
    key = new_array((7,), I64)
    for i in range(4):
        setitem_unchecked(key, i, pw[ENTROPY + i] & M32)
    key[4], key[5], key[6] = tid & M32, (tid >> 32) & M32, c & M32
    _init_by_array(st, key)


def _init_genrand(st, s):
    for i in range(N):
        setitem_unchecked(st, i, s)
        s = (1812433253 * (s ^ (s >> 30)) + i + 1) & M32
    st[POS] = N
    st[HAS_GAUSS] = 0
    st[SEEDED] = 1
    gauss_cells()[st[SLOT]] = 0.0


def _init_by_array(st, key):
    """Matsumoto and Nishimura's ``init_by_array`` of the 32-bit words ``key``."""
    _init_genrand(st, 19650218)
    n = key.shape[0]
    i, j = 1, 0
    for _ in range(max(N, n)):
        p = getitem_unchecked(st, i - 1)
        v = (getitem_unchecked(st, i) ^ ((p ^ (p >> 30)) * 1664525)) + getitem_unchecked(key, j) + j
        setitem_unchecked(st, i, v & M32)
        i += 1
        j += 1
        if i >= N:
            setitem_unchecked(st, 0, getitem_unchecked(st, N - 1))
            i = 1
        if j >= n:
            j = 0
    for _ in range(N - 1):
        p = getitem_unchecked(st, i - 1)
        v = (getitem_unchecked(st, i) ^ ((p ^ (p >> 30)) * 1566083941)) - i
        setitem_unchecked(st, i, v & M32)
        i += 1
        if i >= N:
            setitem_unchecked(st, 0, getitem_unchecked(st, N - 1))
            i = 1
    setitem_unchecked(st, 0, UPPER)


def seed(s):
    """``np.random.seed(s)`` of the calling thread's state: ``init_genrand(s)``; the cached normal dropped."""
    s = int(s)
    check(0 <= s <= M32, "ValueError", "Seed must be between 0 and 2**32 - 1")
    _init_genrand(state(), s)


def reseed():
    """``np.random.seed()``: the calling thread's state seeded again from the process's entropy and a
    fresh count."""
    _seed_fresh(state(), thread_id())


def _mix(st, i, j, k):
    y = (getitem_unchecked(st, i) & UPPER) | (getitem_unchecked(st, j) & LOWER)
    setitem_unchecked(st, i, getitem_unchecked(st, k) ^ (y >> 1) ^ (-(y & 1) & MATRIX_A))


def _twist(st):
    for i in range(N - M):
        _mix(st, i, i + 1, i + M)
    for i in range(N - M, N - 1):
        _mix(st, i, i + 1, i + M - N)
    _mix(st, N - 1, 0, M - 1)


def next32(st):
    """The next tempered 32-bit word (an int64). A position out of range (threads racing on the shared
    state) twists first: no read leaves the state."""
    i = st[POS]
    if i >= N or i < 0:
        _twist(st)
        i = 0
    y = getitem_unchecked(st, i)
    st[POS] = i + 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    return y ^ (y >> 18)


def next64(st):
    """Two words as a uint64, the first high."""
    hi = U64(next32(st))
    return (hi << U64(32)) | U64(next32(st))


def next_double(st):
    a = next32(st) >> 5
    b = next32(st) >> 6
    return (a * 67108864.0 + b) / 9007199254740992.0


def gauss(st):
    """A standard normal: Marsaglia's polar method, two at a time, the second kept for the next call."""
    cache = gauss_cells()
    k = st[SLOT]
    if st[HAS_GAUSS] != 0:
        st[HAS_GAUSS] = 0
        x = cache[k]
        cache[k] = 0.0
        return x
    x1 = 2.0 * next_double(st) - 1.0
    x2 = 2.0 * next_double(st) - 1.0
    r2 = x1 * x1 + x2 * x2
    while r2 >= 1.0 or r2 == 0.0:
        x1 = 2.0 * next_double(st) - 1.0
        x2 = 2.0 * next_double(st) - 1.0
        r2 = x1 * x1 + x2 * x2
    f = math.sqrt(-2.0 * math.log(r2) / r2)
    cache[k] = f * x1
    st[HAS_GAUSS] = 1
    return f * x2


def mask_of(rng):
    """The smallest mask of low bits (a uint64) covering ``rng`` (a uint64)."""
    m = rng
    m |= m >> U64(1)
    m |= m >> U64(2)
    m |= m >> U64(4)
    m |= m >> U64(8)
    m |= m >> U64(16)
    return m | (m >> U64(32))


def masked(st, rng):
    """An integer in ``[0, rng]`` (``rng`` a uint64) by masked rejection: 32-bit words while ``rng``
    fits in 32 bits, else 64-bit ones (NumPy's legacy bounded integers and ``random_interval``)."""
    if rng == U64(0):
        return U64(0)
    mask = mask_of(rng)
    if rng <= U64(M32):
        v = U64(next32(st)) & mask
        while v > rng:
            v = U64(next32(st)) & mask
        return v
    w = next64(st) & mask
    while w > rng:
        w = next64(st) & mask
    return w


# -- the distributions: each a function of two parameters, so that fill() makes arrays of any of them --
def random_sample(st, a, b):
    return next_double(st)


def uniform(st, low, high):
    return low + (high - low) * next_double(st)


def normal(st, loc, scale):
    check(scale >= 0.0, "ValueError", "scale < 0")
    return loc + scale * gauss(st)


def standard_normal(st, a, b):
    return gauss(st)


def exponential(st, scale, b):
    check(scale >= 0.0, "ValueError", "scale < 0")
    return scale * -math.log(1.0 - next_double(st))


def standard_exponential(st, a, b):
    return -math.log(1.0 - next_double(st))


def randint(st, low, high):
    """An int64 in ``[low, high)``."""
    check(low < high, "ValueError", "low >= high")
    return I64(U64(low) + masked(st, U64(high) - U64(low) - U64(1)))


def count(shape):
    """The number of elements of ``shape``; NumPy's ValueError for a negative extent."""
    n = 1
    for d in shape:
        check(d >= 0, "ValueError", "negative dimensions are not allowed")
        n *= d
    return n


def draw(dist, a, b):
    """One number of ``dist`` from the process's state."""
    return dist(state(), a, b)


def fill(dist, shape, dt, a, b):
    """An array of ``shape`` of numbers of ``dist`` (of type ``dt``), drawn in C order."""
    st = state()
    n = count(shape)
    out = new_array((n,), dt)
    for i in range(n):
        setitem_unchecked(out, i, dist(st, a, b))
    return out.reshape(shape)


def fill1(dist, d0, dt, a, b):
    """:func:`fill` of the shape ``(d0,)`` (``size=n``, ``np.random.rand(n)``)."""
    return fill(dist, (d0,), dt, a, b)


def fill2(dist, d0, d1, dt, a, b):
    return fill(dist, (d0, d1), dt, a, b)


def fill3(dist, d0, d1, d2, dt, a, b):
    return fill(dist, (d0, d1, d2), dt, a, b)


def shuffle(x):
    """``np.random.shuffle(x)``: Fisher-Yates from the last item down, along the first axis."""
    st = state()
    for i in range(x.shape[0] - 1, 0, -1):
        j = I64(masked(st, U64(i)))
        t = x[i]
        x[i] = x[j]
        x[j] = t


def shuffle_rows(x):
    """:func:`shuffle` of a 2-d array: whole rows exchanged."""
    st = state()
    for i in range(x.shape[0] - 1, 0, -1):
        j = I64(masked(st, U64(i)))
        for k in range(x.shape[1]):
            t = x[i, k]
            x[i, k] = x[j, k]
            x[j, k] = t


def permutation_n(n):
    """``np.random.permutation(n)``: ``np.arange(n)`` shuffled."""
    out = new_array((n,), T.int64)
    for i in range(n):
        setitem_unchecked(out, i, i)
    shuffle(out)
    return out


def permutation_of(x, dt):
    """``np.random.permutation(x)`` of a 1-d array: a shuffled copy."""
    n = x.shape[0]
    out = new_array((n,), dt)
    for i in range(n):
        setitem_unchecked(out, i, x[i])
    shuffle(out)
    return out


def permutation_rows(x, dt):
    """``np.random.permutation(x)`` of a 2-d array: a copy, its rows shuffled."""
    out = new_array((x.shape[0], x.shape[1]), dt)
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            out[i, k] = x[i, k]
    shuffle_rows(out)
    return out


def choice_index(n):
    """An index of ``choice`` with replacement from a population of ``n``."""
    check(n > 0, "ValueError", "a must be greater than 0 unless no samples are taken")
    return randint(state(), 0, n)


def choice_indices(n, shape, replace):
    """The indices of ``choice(a, size, replace)``: ``randint(0, n, size)`` with replacement, the first
    ones of ``permutation(n)`` without (NumPy's legacy draws)."""
    k = count(shape)
    check(n > 0 or k == 0, "ValueError", "a must be greater than 0 unless no samples are taken")
    if replace:
        return fill(randint, shape, T.int64, 0, n)
    check(k <= n, "ValueError", "Cannot take a larger sample than population when 'replace=False'")
    p = permutation_n(n)
    out = new_array((k,), T.int64)
    for i in range(k):
        setitem_unchecked(out, i, getitem_unchecked(p, i))
    return out.reshape(shape)


def choice_one_unique(n):
    """``choice(n, replace=False)``: the first of a whole permutation, as NumPy draws it."""
    check(n > 0, "ValueError", "a must be greater than 0 unless no samples are taken")
    return getitem_unchecked(permutation_n(n), 0)


def choice_indices1(n, k, replace):
    return choice_indices(n, (k,), replace)


def choice_item(x, replace):
    """``choice(x, replace=replace)`` of a 1-d array: one item."""
    n = x.shape[0]
    return x[choice_index(n) if replace else choice_one_unique(n)]


def choice_items(x, shape, replace, dt):
    """``choice(x, size, replace)`` of a 1-d array: a new array of its items."""
    idx = choice_indices(x.shape[0], shape, replace)
    flat = idx.reshape((count(shape),))
    out = new_array(flat.shape, dt)
    for i in range(flat.shape[0]):
        setitem_unchecked(out, i, x[getitem_unchecked(flat, i)])
    return out.reshape(shape)


def choice_items1(x, k, replace, dt):
    return choice_items(x, (k,), replace, dt)


def unseeded_entropy(words):
    """Fill ``words`` (int64, 5 long) with the process's entropy and a fresh count: the entropy of
    an unseeded ``default_rng()`` (each call another)."""
    pw = process_words()
    for i in range(4):
        setitem_unchecked(words, i, pw[ENTROPY + i] & M32)
    c = pw[COUNTER]
    pw[COUNTER] = c + 1
    setitem_unchecked(words, 4, c & M32)
