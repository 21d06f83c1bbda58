"""Functions of the differential suite: each runs in CPython and compiled."""

import math

SCALE = 3
OFFSET = 0.5


def add(a, b):
    return a + b


def sub_mul(a, b):
    return (a - b) * (a + b)


def floordiv(a, b):
    return a // b


def mod(a, b):
    return a % b


def truediv(a, b):
    return a / b


def power_int(a, b):
    return a ** (b % 6)


def power_float(a, b):
    return abs(a) ** 0.5 + b ** 2


def neg_not(a, b):
    return -a if not b else +a


def bits(a, b):
    return (a & b) | (a ^ 7) + (b << 2) - (a >> 1)


def chained(a, b):
    return 0 < a < b <= 100


def and_or(a, b):
    return (a > 0 and b > 0) or (a < -5 and b < -5)


def ifexp(a, b):
    return a if a > b else b - 1


def minmax(a, b):
    return min(a, b, 3) + max(a, b) * 2


def conversions(a, b):
    return int(float(a) / 3.0) + int(b > a) + float(bool(a))


def abs_mix(a, b):
    return abs(a - b) + abs(-2.5)


def constants(a, b):
    return a * SCALE + OFFSET + math.pi


def math_fns(a, b):
    x = float(a % 10) + 0.25
    return math.sin(x) + math.cos(x) * math.exp(x / 10) + math.sqrt(x) + math.log(x)


def math_more(a, b):
    x = float(a % 7) + 1.5
    return math.atan2(x, 2.0) + math.tanh(x) + math.hypot(x, 3.0) + math.floor(x) + math.ceil(-x)


def math_pred(a, b):
    x = a / 3.0
    return math.isnan(x) or math.isinf(x) or (math.isfinite(x) and x > 1)


def sum_range(a, b):
    s = 0
    for i in range(a % 50):
        s += i * b
    return s


def range_step(a, b):
    s = 0
    for i in range(a % 20, -(b % 20), -3):
        s = s * 3 + i
    return s


def range_two(a, b):
    s = 0
    for i in range(-(a % 9), b % 13):
        s += i
    return s


def while_loop(a, b):
    n = abs(a) % 1000 + 1
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def break_continue(a, b):
    s = 0
    for i in range(100):
        if i % 3 == 0:
            continue
        if i > abs(a) % 60:
            break
        s += i
    return s


def nested_loops(a, b):
    s = 0
    for i in range(a % 8):
        for j in range(i, b % 8):
            if (i + j) % 2:
                continue
            s += i * j
    return s


def early_return(a, b):
    for i in range(50):
        if i * i > abs(a):
            return i
    return -1


def multi_return(a, b):
    if a > b:
        return 1
    elif a == b:
        return 0
    return -1


def float_accum(a, b):
    s = 0
    for i in range(a % 30):
        s += 0.5 * i
    return s


def elif_chain(a, b):
    if a < -10:
        r = 1
    elif a < 0:
        r = 2
    elif a < 10:
        r = 3
    else:
        r = 4
    return r * b


def tuple_swap(a, b):
    x, y = a, b
    for _ in range(3):
        x, y = y, x + y
    return x, y


def tuple_index(a, b):
    t = (a, b, a + b)
    return t[0] + t[-1] * t[1]


def tuple_return(a, b):
    return (a // 3, a % 3), b


def tuple_len(a, b):
    t = (a, b, 1, 2)
    return len(t) + a


def _helper(x):
    return x * x + 1


def _helper2(x, y=2):
    return _helper(x) - y


def calls(a, b):
    return _helper(a) + _helper2(b) + _helper2(a, 5)


def fact(n):
    return 1 if n <= 1 else n * fact(n - 1)


def recursion(a, b):
    return fact(abs(a) % 15)


def is_even(n):
    return True if n == 0 else is_odd(n - 1)


def is_odd(n):
    return False if n == 0 else is_even(n - 1)


def mutual_recursion(a, b):
    return is_even(abs(a) % 40)


def gcd(a, b):
    a, b = abs(a), abs(b)
    while b:
        a, b = b, a % b
    return a


def augmented(a, b):
    x = a
    x += 3
    x -= b
    x *= 2
    x //= 3
    x %= 1000
    return x


def bool_arith(a, b):
    return (a > 0) + (b > 0) * 2


def float_compare(a, b):
    x = a * 0.1
    return x == b * 0.1 or x != x or x >= 0.3


def sign(a, b):
    return (a > 0) - (a < 0)


def int_float_mix(a, b):
    return a * 1.5 + b // 2


def float_floordiv(a, b):
    return (a * 0.7) // (b * 0.3 + 0.1) if b * 0.3 + 0.1 != 0 else 0.0


def float_mod(a, b):
    return (a * 1.25) % (b * 0.5 + 0.75) if b * 0.5 + 0.75 != 0 else 0.0


def cond_var(a, b):
    x = a
    if b > 0:
        x = b
    return x


def loop_var_after(a, b):
    k = -1
    for _k in range(a % 10):
        pass
    return k


def count_primes(a, b):
    n = abs(a) % 200
    count = 0
    for k in range(2, n):
        p = True
        d = 2
        while d * d <= k:
            if k % d == 0:
                p = False
                break
            d += 1
        if p:
            count += 1
    return count


SCALAR_FUNCS = [
    add, sub_mul, floordiv, mod, truediv, power_int, power_float, neg_not, bits, chained, and_or,
    ifexp, minmax, conversions, abs_mix, constants, math_fns, math_more, math_pred, sum_range,
    range_step, range_two, while_loop, break_continue, nested_loops, early_return, multi_return,
    float_accum, elif_chain, tuple_swap, tuple_index, tuple_return, tuple_len, calls, recursion,
    mutual_recursion, gcd, augmented, bool_arith, float_compare, sign, int_float_mix,
    float_floordiv, float_mod, cond_var, loop_var_after, count_primes,
]


# -- arrays ------------------------------------------------------------------
def arr_sum(a):
    s = 0.0
    for i in range(len(a)):
        s += a[i]
    return s


def arr_neg_index(a):
    return a[-1] + a[0] * 2


def arr_scale(a):
    for i in range(a.shape[0]):
        a[i] = a[i] * 2 + 1
    return a.shape[0]


def arr_2d_sum(a):
    s = 0.0
    n, m = a.shape
    for i in range(n):
        for j in range(m):
            s += a[i, j] * (i + 1) - a[-1 - i, j]
    return s


def arr_3d(a):
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            for k in range(a.shape[2]):
                a[i, j, k] += i * 100 + j * 10 + k
                s += a[i, j, k]
    return s


def arr_row(a):
    row = a[1]
    return row[0] + row[-1] + a.ndim + a.size


def arr_max(a):
    m = a[0]
    for i in range(1, len(a)):
        if a[i] > m:
            m = a[i]
    return m


def arr_int_count(a):
    c = 0
    for i in range(len(a)):
        if a[i] % 2 == 0:
            c += 1
    return c


def arr_dot(a):
    s = 0.0
    for i in range(len(a)):
        s += a[i] * a[len(a) - 1 - i]
    return s


def arr_cumsum(a):
    for i in range(1, len(a)):
        a[i] += a[i - 1]
    return a[len(a) - 1]


ARRAY_FUNCS = [arr_sum, arr_neg_index, arr_scale, arr_2d_sum, arr_3d, arr_row, arr_max,
               arr_int_count, arr_dot, arr_cumsum]
