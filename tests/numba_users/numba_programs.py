"""Programs written as Numba users write them; only the import line differs from Numba's.

With ``from numba import njit, prange, vectorize, guvectorize`` in place of the
line below, this file runs under Numba unchanged (test_numba_programs.py checks
that where Numba is installed). Each ``CASES`` entry is a compiled function
and its arguments; the reference is the same function run by CPython
(``f.py_func``) on copies of the arguments.
"""

from collections import namedtuple
import math

import numpy as np

from gpucompiler import guvectorize, njit, prange, vectorize


@njit
def sum_of_squares(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] ** 2
    return s


@njit(fastmath=True)
def sum_of_squares_fast(a):
    s = 0.0
    for x in a:
        s += x * x
    return s


@njit(cache=True)
def horner(coeffs, x):
    r = 0.0
    for c in coeffs:
        r = r * x + c
    return r


@njit
def histogram(data, lo, hi, nbins):
    counts = np.zeros(nbins, dtype=np.int64)
    width = (hi - lo) / nbins
    for x in data:
        if lo <= x < hi:
            counts[int((x - lo) / width)] += 1
    return counts


@njit(parallel=True)
def parallel_norm(a):
    s = 0.0
    for i in prange(a.shape[0]):
        s += a[i] ** 2
    return math.sqrt(s)


@njit(parallel=True)
def row_means(m):
    out = np.empty(m.shape[0])
    for i in prange(m.shape[0]):
        acc = 0.0
        for j in range(m.shape[1]):
            acc += m[i, j]
        out[i] = acc / m.shape[1]
    return out


@njit(nogil=True)
def pairwise_distances(x):
    n = x.shape[0]
    d = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            s = 0.0
            for k in range(x.shape[1]):
                s += (x[i, k] - x[j, k]) ** 2
            d[i, j] = math.sqrt(s)
    return d


@njit(boundscheck=True)
def moving_average(a, w):
    out = np.empty(a.shape[0] - w + 1)
    s = a[:w].sum()
    out[0] = s / w
    for i in range(1, out.shape[0]):
        s += a[i + w - 1] - a[i - 1]
        out[i] = s / w
    return out


@njit(error_model="numpy")
def safe_ratios(a, b):
    return a / b


@njit(inline="always")
def clamp(x, lo, hi):
    return min(max(x, lo), hi)


@njit
def clamp_all(a):
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = clamp(a[i], -1.0, 1.0)
    return out


@njit
def stencil_slices(u):
    v = u.copy()
    v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return v


@njit
def masked_sum(a, threshold):
    return a[a > threshold].sum()


@njit
def collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


@njit
def inverse_powers(x):
    return x ** -1 + x ** -2 + x ** 3 + x ** 2.0


@njit
def int_powers(n):
    total = 0
    for i in range(n):
        total += i ** 2 + i ** 3
    return total


@njit
def mandelbrot(re, im, maxiter):
    out = np.zeros((im.shape[0], re.shape[0]), dtype=np.int64)
    for i in range(im.shape[0]):
        for j in range(re.shape[0]):
            c = complex(re[j], im[i])
            z = 0j
            k = 0
            while k < maxiter and abs(z) <= 2.0:
                z = z * z + c
                k += 1
            out[i, j] = k
    return out


@njit
def returns_tuple(a):
    return a.min(), a.max(), a.mean()


@njit("float64(float64[:], float64)")
def eager_dot_scale(a, k):
    s = 0.0
    for x in a:
        s += x * k
    return s


@vectorize(["float64(float64, float64)", "float32(float32, float32)"])
def rel_diff(x, y):
    return abs(x - y) / (abs(x) + abs(y) + 1e-12)


@vectorize
def logistic(x):
    return 1.0 / (1.0 + math.exp(-x))


@vectorize(target="parallel")
def cube(x):
    return x ** 3


@guvectorize(["void(float64[:], float64, float64[:])"], "(n),()->(n)")
def shift(x, k, res):
    for i in range(x.shape[0]):
        res[i] = x[i] + k


@guvectorize(["void(float64[:], float64[:])"], "(n)->()")
def norm_rows(x, res):
    s = 0.0
    for v in x:
        s += v * v
    res[0] = math.sqrt(s)


@njit
def trapezoid(y, dx):
    s = 0.5 * (y[0] + y[-1])
    for i in range(1, y.shape[0] - 1):
        s += y[i]
    return s * dx


@njit
def running_max(a):
    out = np.empty_like(a)
    m = -np.inf
    for i in range(a.shape[0]):
        m = max(m, a[i])
        out[i] = m
    return out


@njit
def prefix_sums(a):
    out = np.empty_like(a)
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
        out[i] = s
    return out


@njit
def argmax_loop(a):
    best, k = a[0], 0
    for i in range(1, a.shape[0]):
        if a[i] > best:
            best, k = a[i], i
    return k


@njit
def matmul_loops(a, b):
    n, m, p = a.shape[0], a.shape[1], b.shape[1]
    c = np.zeros((n, p))
    for i in range(n):
        for k in range(m):
            aik = a[i, k]
            for j in range(p):
                c[i, j] += aik * b[k, j]
    return c


@njit
def gcd(a, b):
    while b:
        a, b = b, a % b
    return a


@njit
def primes_below(n):
    sieve = np.ones(n, dtype=np.bool_)
    sieve[:2] = False
    for i in range(2, int(math.sqrt(n)) + 1):
        if sieve[i]:
            sieve[i * i::i] = False
    return sieve.sum()


@njit
def bit_count(x):
    c = 0
    while x:
        x &= x - 1
        c += 1
    return c


@njit
def axis_stats(m):
    return m.sum(axis=0), m.sum(axis=1), np.mean(m)


@njit
def jacobi_step(u, steps):
    for _ in range(steps):
        u[1:-1] = 0.5 * (u[:-2] + u[2:])
    return u


@njit
def logsumexp(a):
    m = a.max()
    s = 0.0
    for x in a:
        s += math.exp(x - m)
    return m + math.log(s)


@njit
def kahan_sum(a):
    s = 0.0
    c = 0.0
    for x in a:
        y = x - c
        t = s + y
        c = (t - s) - y
        s = t
    return s


@njit
def bincount_weights(idx, w, n):
    out = np.zeros(n)
    for i in range(idx.shape[0]):
        out[idx[i]] += w[i]
    return out


@njit
def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


@njit
def where_clip(a, lo, hi):
    return np.where(a < lo, lo, np.where(a > hi, hi, a))


@njit(parallel=True)
def parallel_max(a):
    m = -np.inf
    for i in prange(a.shape[0]):
        m = max(m, a[i])
    return m


@njit
def polyval_powers(c, x):
    s = 0.0
    for k in range(c.shape[0]):
        s += c[k] * x ** k
    return s


@njit
def mandelbrot_pow(c, maxiter):
    z = 0j
    for k in range(maxiter):
        z = z ** 2 + c
        if abs(z) > 2.0:
            return k
    return maxiter


@njit
def complex_roots_of_unity(n):
    out = np.empty(n, dtype=np.complex128)
    for k in range(n):
        out[k] = complex(math.cos(2 * math.pi * k / n), math.sin(2 * math.pi * k / n))
    return out


@njit
def monte_carlo_pi(n, seed):
    np.random.seed(seed)
    inside = 0
    for _ in range(n):
        x = np.random.random()
        y = np.random.random()
        if x * x + y * y < 1.0:
            inside += 1
    return 4.0 * inside / n


@njit
def random_walk(n, seed):
    np.random.seed(seed)
    steps = np.random.randint(0, 2, size=n) * 2 - 1
    pos = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        pos[i + 1] = pos[i] + steps[i]
    return pos, pos.max(), np.random.normal(0.0, 1.0, size=(2, 3))


@njit
def permutation_test(a, b, rounds, seed):
    np.random.seed(seed)
    pooled = np.concatenate((a, b))
    na = a.shape[0]
    observed = abs(a.mean() - b.mean())
    count = 0
    for _ in range(rounds):
        np.random.shuffle(pooled)
        if abs(pooled[:na].mean() - pooled[na:].mean()) >= observed:
            count += 1
    return count / rounds


@njit
def bootstrap_mean(x, rounds, seed):
    np.random.seed(seed)
    means = np.empty(rounds)
    for r in range(rounds):
        idx = np.random.randint(0, x.shape[0], size=x.shape[0])
        s = 0.0
        for i in idx:
            s += x[i]
        means[r] = s / x.shape[0]
    return means


@njit
def dict_histogram(data, width):
    counts = {}
    for x in data:
        b = int(x // width)
        if b in counts:
            counts[b] += 1
        else:
            counts[b] = 1
    return counts


@njit
def primes_by_comprehension(n):
    return [p for p in range(2, n) if all_odd_divisors_fail(p)]


@njit
def all_odd_divisors_fail(p):
    if p % 2 == 0:
        return p == 2
    d = 3
    while d * d <= p:
        if p % d == 0:
            return False
        d += 2
    return True


@njit
def count_values(keys):
    seen = {}
    for k in keys:
        if k in seen:
            seen[k] += 1
        else:
            seen[k] = 1
    most, best = 0, -1
    for k, c in seen.items():
        if c > most:
            most, best = c, k
    return len(seen), best, most


@njit
def smooth(x, weight=0.5, bias=0.0):
    return weight * x + (1.0 - weight) * bias


@njit
def kwargs_helper(a):
    out = [smooth(a[0])]
    for i in range(1, a.shape[0]):
        out.append(smooth(a[i], bias=out[-1], weight=0.25))
    return sum(out), out


@njit
def extend_running_sums(xs):
    # a Python list passed in (Numba's reflected list): what the call appends is seen by the caller
    s = 0.0
    for i in range(len(xs)):
        s += xs[i]
        xs.append(s)
    return len(xs), s, xs


@njit
def top_k_of_list(values, k):
    out = []
    for _ in range(k):
        best = 0
        for i in range(len(values)):
            if values[i] > values[best]:
                best = i
        out.append(values.pop(best))
    return out, len(values)


@njit
def sorted_insert_window(values, width):
    # a running sorted window kept as a list: insert, slices, del and extend, as Numba users write them
    window = [values[0]]
    medians = []
    for i in range(1, len(values)):
        v = values[i]
        j = 0
        while j < len(window) and window[j] < v:
            j += 1
        window.insert(j, v)
        if len(window) > width:
            old = values[i - width]
            k = window.index(old)
            del window[k]
        medians.append(window[len(window) // 2])
    tail = window[1:]
    tail.extend(window[:1])
    return medians, tail, window[::-1]


@njit
def sample_without_replacement(a, k, seed):
    np.random.seed(seed)
    picked = np.random.choice(a, k, replace=False)
    again = np.random.choice(a.shape[0], size=(2, 3))
    return picked, again, np.random.choice(a)



Particle = namedtuple("Particle", ["x", "v", "m"])


@njit
def kinetic_energy(particles):
    e = 0.0
    for p in particles:
        e += 0.5 * p.m * p.v * p.v
    return e, Particle(particles[0].x + 1.0, particles[0].v, particles[0].m)


@njit
def summary_statistics(a):
    return (a.mean(), a.std(), np.var(a), np.median(a), np.percentile(a, 95.0),
            np.quantile(a, 0.25), np.nanmean(a))


@njit
def numpy_histogram(a, bins):
    counts, edges = np.histogram(a, bins, (-3.0, 3.0))
    centres = 0.5 * (edges[1:] + edges[:-1])
    return counts, centres, np.bincount(np.searchsorted(edges, a) % bins)


@njit
def resample_curve(x, y, at):
    order = np.argsort(x)
    return np.interp(at, x[order], y[order])


@njit
def solve_with_identity(m, rhs, lam):
    n = m.shape[1]
    a = m.T @ m + lam * np.eye(n)
    w = np.linalg.solve(a, m.T @ rhs)
    return w, np.trace(a)


@njit
def unique_and_steps(k, a):
    u = np.unique(k)
    return u, np.diff(a[:10]), np.round(a[:5], 3), np.outer(a[:3], a[3:5])


STAR = np.dtype([("x", np.float64), ("v", np.float64), ("m", np.float64), ("id", np.int32)], align=True)


@njit
def leapfrog_records(stars, dt, steps):
    for _ in range(steps):
        for i in range(len(stars)):
            p = stars[i]
            p.v -= dt * p.x
            p.x += dt * p.v
    e = 0.0
    for p in stars:
        e += 0.5 * p.m * p.v ** 2
    return e, stars["x"].copy(), stars[0].id


@njit
def centre_of_mass(stars):
    m = stars["m"]
    heaviest = 0
    for i in range(1, len(stars)):
        if stars[i].m > stars[heaviest].m:
            heaviest = i
    return (stars["x"] * m).sum() / m.sum(), stars[heaviest].id, np.mean(stars[::2]["v"])


def _stars(n, packed=False):
    """A record array of ``n`` stars (np.recarray: CPython reads fields as attributes, as Numba does)."""
    rng = np.random.default_rng(n)
    dtype = np.dtype([("x", np.float64), ("v", np.float64), ("m", np.float64), ("id", np.int32)]) if packed else STAR
    stars = np.zeros(n, dtype).view(np.recarray)
    stars.x, stars.v, stars.m, stars.id = rng.standard_normal(n), rng.standard_normal(n), rng.random(n), np.arange(n)
    return stars


_rng = np.random.default_rng(28)
_A = _rng.standard_normal(1000)
_M = _rng.standard_normal((40, 30))
_U = _rng.random((32, 32))
_P = _rng.random((20, 3))

#: (name, function, arguments)
CASES = [
    ("sum_of_squares", sum_of_squares, (_A,)),
    ("horner", horner, (np.array([1.0, -2.0, 0.5, 3.0]), 1.7)),
    ("histogram", histogram, (_A, -2.0, 2.0, 16)),
    ("parallel_norm", parallel_norm, (_A,)),
    ("row_means", row_means, (_M,)),
    ("pairwise_distances", pairwise_distances, (_P,)),
    ("moving_average", moving_average, (_A, 7)),
    ("clamp_all", clamp_all, (_A,)),
    ("stencil_slices", stencil_slices, (_U,)),
    ("masked_sum", masked_sum, (_A, 0.5)),
    ("collatz_steps", collatz_steps, (27,)),
    ("inverse_powers", inverse_powers, (1.375,)),
    ("int_powers", int_powers, (100,)),
    ("mandelbrot", mandelbrot, (np.linspace(-2, 0.5, 24), np.linspace(-1, 1, 16), 50)),
    ("returns_tuple", returns_tuple, (_A,)),
    ("eager_dot_scale", eager_dot_scale, (_A, 0.5)),
    ("safe_ratios", safe_ratios, (np.array([1.0, -1.0, 0.0, 2.0]), np.array([0.0, 0.0, 0.0, 4.0]))),
    ("sum_of_squares_fast", sum_of_squares_fast, (_A,)),
    ("trapezoid", trapezoid, (_A, 0.01)),
    ("running_max", running_max, (_A,)),
    ("prefix_sums", prefix_sums, (_A,)),
    ("argmax_loop", argmax_loop, (_A,)),
    ("matmul_loops", matmul_loops, (_M, _M.T.copy())),
    ("gcd", gcd, (1071, 462)),
    ("primes_below", primes_below, (1000,)),
    ("bit_count", bit_count, (0b1011011101,)),
    ("axis_stats", axis_stats, (_M,)),
    ("jacobi_step", jacobi_step, (np.linspace(0.0, 1.0, 50) ** 2, 20)),
    ("logsumexp", logsumexp, (_A,)),
    ("kahan_sum", kahan_sum, (_A,)),
    ("bincount_weights", bincount_weights, (np.arange(1000) % 7, _A, 7)),
    ("fib", fib, (80,)),
    ("where_clip", where_clip, (_A, -0.5, 0.5)),
    ("parallel_max", parallel_max, (_A,)),
    ("polyval_powers", polyval_powers, (np.array([1.0, -0.5, 0.25, 2.0, -1.0]), 1.3)),
    ("mandelbrot_pow", mandelbrot_pow, (complex(-0.75, 0.1), 200)),
    ("complex_roots_of_unity", complex_roots_of_unity, (12,)),
    ("monte_carlo_pi", monte_carlo_pi, (100_000, 7)),
    ("random_walk", random_walk, (500, 3)),
    ("permutation_test", permutation_test, (_A[:30] + 0.3, _A[30:70], 200, 11)),
    ("bootstrap_mean", bootstrap_mean, (_A[:50], 100, 5)),
    ("dict_histogram", dict_histogram, (_A, 0.25)),
    ("primes_by_comprehension", primes_by_comprehension, (500,)),
    ("count_values", count_values, (np.arange(1000) * 7 % 13,)),
    ("kwargs_helper", kwargs_helper, (_A[:100],)),
    ("extend_running_sums", extend_running_sums, ([float(x) for x in _A[:20]],)),
    ("top_k_of_list", top_k_of_list, ([float(x) for x in _A[:40]], 5)),
    ("sample_without_replacement", sample_without_replacement, (_A[:60], 10, 4)),
    ("sorted_insert_window", sorted_insert_window, ([float(x) for x in _A[:80]], 9)),
    ("kinetic_energy", kinetic_energy, ((Particle(0.0, 1.5, 2.0), Particle(1.0, -0.5, 1.0), Particle(2.0, 2.5, 0.5)),)),
    ("summary_statistics", summary_statistics, (_A,)),
    ("numpy_histogram", numpy_histogram, (_A, 12)),
    ("resample_curve", resample_curve, (_A[:50], np.sin(_A[:50]), np.linspace(-1.5, 1.5, 40))),
    ("solve_with_identity", solve_with_identity, (_M, _A[:40], 0.1)),
    ("unique_and_steps", unique_and_steps, (np.arange(1000) * 7 % 13, _A)),
    ("leapfrog_records", leapfrog_records, (_stars(50), 0.01, 20)),
    ("centre_of_mass", centre_of_mass, (_stars(40, packed=True),)),
]
