"""``np.random``'s legacy functions in compiled code against ``np.random.RandomState(seed)``.

After ``np.random.seed(s)`` in compiled code the draws are NumPy's for the
same seed and calls: MT19937's doubles and bounded integers exactly (they
are exact algorithms), the transformed ones (normal, exponential, uniform)
within rounding. Errors are NumPy's at run time, typed errors naming the
user's line when compiling.
"""

import os
import subprocess
import sys
import threading
from typing import Any

import numpy as np
import pytest

from enzyme_plugin import Duplicated, Forward, autodiff, gradient
from gpucompiler import device as gd
from gpucompiler import jit, kernel, parse_target, prange
from gpucompiler import types as T
from gpucompiler.errors import TypeInferenceError
from gpucompiler.language.numpy.random.nprandomgen import Generator

SEEDS = [0, 1, 2, 42, 12345, 2**31, 2**32 - 1] + list(range(100, 130))


def mixed(rs, seed, out, iout):
    """The same calls, through ``rs`` (``np.random`` compiled; a RandomState in CPython)."""
    if seed >= 0:
        rs.seed(seed)
    k = 0
    for i in range(iout.shape[0]):
        out[k] = rs.random()
        out[k + 1] = rs.uniform(-2.0, 3.0)
        out[k + 2] = rs.normal(1.0, 2.0)
        out[k + 3] = rs.standard_normal()
        out[k + 4] = rs.randn()
        out[k + 5] = rs.exponential(1.5)
        out[k + 6] = rs.rand()
        out[k + 7] = rs.random_sample()
        out[k + 8] = rs.normal()
        out[k + 9] = rs.uniform()
        k += 10
        iout[i, 0] = rs.randint(10)
        iout[i, 1] = rs.randint(-5, 1000)
        iout[i, 2] = rs.randint(0, 2**32)  # a range of 2**32: 64-bit words
        iout[i, 3] = rs.randint(-2**62, 2**62)
        iout[i, 4] = rs.randint(7, 8)  # one value: no draw
        iout[i, 5] = rs.randint(-2**63, 2**63 - 1)
        iout[i, 6] = rs.randint(0, 2**32 - 1)


def draws(seed, out, iout):
    mixed(np.random, seed, out, iout)


compiled_draws = jit(draws)


@pytest.mark.parametrize("seed", SEEDS)
def test_scalar_draws_are_numpys_for_the_seed(seed):
    n = 40
    got, igot = np.zeros(10 * n), np.zeros((n, 7), np.int64)
    want, iwant = np.zeros(10 * n), np.zeros((n, 7), np.int64)
    compiled_draws(seed, got, igot)
    mixed(np.random.RandomState(seed), seed, want, iwant)
    np.testing.assert_array_equal(igot, iwant)
    exact = np.r_[0:10 * n:10, 6:10 * n:10, 7:10 * n:10]  # random, rand, random_sample: bit for bit
    np.testing.assert_array_equal(got[exact], want[exact])
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)


@jit
def state_carries_over(seed, out, iout):
    np.random.seed(seed)
    draws(-1, out, iout)  # another function draws on from the same state


@jit
def continue_draws(out, iout):
    draws(-1, out, iout)


def test_the_state_is_one_per_process_across_compiled_functions():
    a, ia = np.zeros(30), np.zeros((3, 7), np.int64)
    b, ib = np.zeros(30), np.zeros((3, 7), np.int64)
    state_carries_over(5, a, ia)
    continue_draws(b, ib)  # an odd number of normals before: the cached second value is used
    rs = np.random.RandomState(5)
    wa, wia, wb, wib = np.zeros(30), np.zeros((3, 7), np.int64), np.zeros(30), np.zeros((3, 7), np.int64)
    mixed(rs, -1, wa, wia)
    mixed(rs, -1, wb, wib)
    np.testing.assert_allclose(np.r_[a, b], np.r_[wa, wb], rtol=1e-14)
    np.testing.assert_array_equal(np.r_[ia, ib], np.r_[wia, wib])


@jit
def normal_then_reseed(s):
    np.random.seed(s)
    a = np.random.normal()  # leaves the second value cached
    np.random.seed(s)  # which seeding drops
    return a, np.random.normal(), np.random.normal()


def test_seeding_drops_the_cached_normal():
    rs = np.random.RandomState(9)
    a = rs.normal()
    rs.seed(9)
    np.testing.assert_allclose(normal_then_reseed(9), (a, rs.normal(), rs.normal()), rtol=1e-15)


def arrays(rs, seed):
    rs.seed(seed)
    x = np.arange(10.0)
    rs.shuffle(x)
    m = np.arange(12.0).reshape(4, 3)
    rs.shuffle(m)
    return (rs.random((3, 4)), rs.random(5), rs.normal(1.0, 2.0, size=5), rs.randint(0, 10, size=(2, 3)),
            rs.randint(5, size=4), rs.rand(2, 3), rs.rand(4), rs.randn(4), rs.randn(2, 2),
            rs.uniform(0.0, 1.0, 7), rs.standard_normal((2, 2)), rs.exponential(2.0, (3,)), x, m,
            rs.permutation(8), rs.permutation(np.arange(5.0)), rs.choice(6), rs.choice(x, size=5),
            rs.choice(9, 3, replace=False), rs.choice(x, replace=False), rs.choice(7, size=(2, 2)),
            rs.choice(np.arange(4), 0), rs.random(0), rs.permutation(np.arange(12).reshape(4, 3)),
            rs.standard_exponential(), rs.standard_exponential((2, 3)))


@jit
def compiled_arrays(seed):
    return arrays(np.random, seed)


@pytest.mark.parametrize("seed", [0, 3, 99, 2**32 - 1])
def test_arrays_shuffles_and_choices_are_numpys(seed):
    got, want = compiled_arrays(seed), arrays(np.random.RandomState(seed), seed)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g, w)
        np.testing.assert_allclose(g, w, rtol=1e-14, atol=0)


@jit
def sized_at_run_time(seed, n, m):
    np.random.seed(seed)
    return np.random.random(n), np.random.rand(n, m), np.random.normal(0.0, 1.0, (n, m, 2))


def test_sizes_known_only_at_run_time():
    got = sized_at_run_time(4, 3, 2)
    rs = np.random.RandomState(4)
    want = rs.random(3), rs.rand(3, 2), rs.normal(0.0, 1.0, (3, 2, 2))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-14)


@jit
def bad_seed(s):
    np.random.seed(s)


@jit
def bad_randint(a, b):
    return np.random.randint(a, b)


@jit
def bad_scale(s):
    return np.random.normal(0.0, s)


@jit
def bad_choice(n, k):
    return np.random.choice(n, k, replace=False)


@jit
def bad_size(n):
    return np.random.random((n, -1))


def test_run_time_errors_are_numpys():
    with pytest.raises(ValueError, match="Seed must be between 0 and 2\\*\\*32 - 1"):
        bad_seed(-1)
    with pytest.raises(ValueError, match="Seed must be between"):
        bad_seed(2**32)
    with pytest.raises(ValueError, match="low >= high"):
        bad_randint(5, 5)
    with pytest.raises(ValueError, match="scale < 0"):
        bad_scale(-1.0)
    with pytest.raises(ValueError, match="larger sample than population"):
        bad_choice(3, 4)
    with pytest.raises(ValueError, match="negative dimensions"):
        bad_size(2)


def gamma(x):
    return np.random.gamma(x)


def choice_p(a):
    return np.random.choice(3, p=a)  # p of rows: NumPy's ValueError, refused when compiling


def normal_of_array(a):
    return np.random.normal(a)


def randint_dtype(n):
    return np.random.randint(n, dtype=np.int32)


def random_state(n):
    return np.random.RandomState(n).random()


def seed_float(x):
    np.random.seed(x)


@pytest.mark.parametrize("fn,arg,match", [
    (gamma, 2.0, "np.random.gamma is not supported"), (choice_p, np.ones((3, 1)) / 3, "p=.* not supported"),
    (normal_of_array, np.ones(3), "loc must be a number"), (randint_dtype, 5, "dtype=.* int64"),
    (random_state, 3, "RandomState is not supported"), (seed_float, 1.5, "seed must be an integer"),
])
def test_unsupported_uses_are_typed_errors_at_the_users_line(fn, arg, match):
    with pytest.raises(TypeInferenceError, match=match) as info:
        jit(fn)(arg)
    assert f"{__file__}:{fn.__code__.co_firstlineno + 1}" in str(info.value)


@jit
def unseeded(n):
    return np.random.random(n)


@jit
def reseeded(s, n):
    np.random.seed(s)
    a = np.random.random(n)
    np.random.seed()  # from entropy again, as NumPy's
    return a, np.random.random(n)


def test_seed_without_a_value_seeds_from_entropy():
    a, b = reseeded(5, 100)
    np.testing.assert_array_equal(a, np.random.RandomState(5).random(100))
    assert not np.array_equal(b, np.random.RandomState(5).random(200)[100:])
    assert not np.array_equal(b, reseeded(5, 100)[1])


def test_unseeded_draws_start_from_os_entropy():
    a = unseeded(1000)
    assert a.min() >= 0.0 and a.max() < 1.0 and 0.4 < a.mean() < 0.6
    assert not np.array_equal(a, unseeded(1000))


@jit(parallel=True)
def parallel_draws(n):
    out = np.empty(n)
    for i in prange(n):
        out[i] = np.random.random()
    return out


def test_prange_draws_are_in_range_and_do_not_repeat():
    """Threads drawing at once (each from its own state, seeded apart): every number in [0, 1),
    none twice."""
    a = parallel_draws(1_000_000)
    assert a.min() >= 0.0 and a.max() < 1.0 and 0.49 < a.mean() < 0.51
    assert len(np.unique(a)) == a.size


@jit(nogil=True)
def seeded_stream(s, out):
    np.random.seed(s)
    for i in range(out.shape[0]):
        out[i] = np.random.random()


def test_threads_seed_and_draw_their_own_states_at_once():
    """As in Numba: ``np.random.seed`` seeds the calling thread's state; four threads drawing at
    once (the GIL released) each get NumPy's stream for their seed."""
    seeded_stream(0, np.zeros(1))
    outs = [np.zeros(1_000_000) for _ in range(4)]
    threads = [threading.Thread(target=seeded_stream, args=(10 + k, outs[k])) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        np.testing.assert_array_equal(outs[k], np.random.RandomState(10 + k).random(1_000_000))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_forked_child_draws_other_numbers():
    unseeded(1)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its draws to the pipe, then out without pytest's teardown
        os.write(w, unseeded(4).tobytes())
        os._exit(0)
    os.waitpid(pid, 0)
    child = np.frombuffer(os.read(r, 32))
    os.close(r)
    os.close(w)
    assert child.shape == (4,) and not np.array_equal(child, unseeded(4))


def noisy_energy(x):
    np.random.seed(7)
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * np.random.normal() + np.random.normal(x[i], 2.0) * x[0]
    return s + np.random.uniform(x[1], 3.0 * x[1]) ** 2 + np.random.exponential(x[2] * x[2])


def test_draws_are_constants_of_the_derivative():
    """The gradient through the draws' parameters (loc, scale, bounds) and with the draws as
    constants, against central differences of NumPy's own draws for the same seed."""
    x = np.array([0.3, 1.2, -0.7])
    eps = 1e-6
    fd = np.array([(noisy_energy(x + eps * e) - noisy_energy(x - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(gradient(noisy_energy, x), fd, rtol=1e-6)
    np.testing.assert_allclose(autodiff(Forward, noisy_energy, Duplicated(x, np.eye(3)[1]))[0], fd[1], rtol=1e-6)
    assert np.all(np.abs(fd) > 0.1)  # no derivative is zero here: a silent zero would fail


def keywords(rs, seed):
    rs.seed(seed=seed)
    return (rs.uniform(low=1.0, high=2.0), rs.normal(scale=3.0), rs.randint(low=2, high=5),
            rs.randint(3, size=(2,)), rs.exponential(scale=0.5, size=2), rs.choice(a=5, size=3, replace=False),
            rs.random_sample(size=2), rs.permutation(x=4), rs.standard_normal(size=(1, 2)))


@jit
def compiled_keywords(seed):
    return keywords(np.random, seed)


def test_keyword_arguments_as_numpy_names_them():
    got, want = compiled_keywords(21), keywords(np.random.RandomState(21), 21)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-14)
        assert np.asarray(g).dtype == np.asarray(w).dtype


def test_a_cached_function_draws_numpys_numbers_in_a_fresh_process(tmp_path):
    """The state is found by name when the code comes from the disk cache in another process."""
    script = tmp_path / "draw.py"
    script.write_text("import numpy as np\nfrom gpucompiler import jit\n\n@jit(cache=True)\ndef f(s):\n"
                      "    np.random.seed(s)\n    return np.random.random(3), np.random.default_rng(s).random()\n\n"
                      "@jit(cache=True)\ndef g(s):\n    np.random.seed(s)\n    return np.random.randint(1000)\n\n"
                      "a, b = f(17)\nr = np.random.RandomState(17).random(3)\n"
                      "assert (a == r).all() and b == np.random.default_rng(17).random(), (a, r)\n"
                      "assert g(3) == np.random.RandomState(3).randint(1000)\nprint('ok')\n")
    env = {**os.environ, "GPUC_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):  # compiled, then loaded from the disk
        out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    assert list((tmp_path / "cache").rglob("*"))


def test_a_gpu_kernel_that_draws_is_a_typed_error_at_its_line():
    def noise(out):
        i = gd.grid(1)
        if i < out.shape[0]:
            out[i] = np.random.random()

    k: Any = kernel(noise)
    A = T.ArrayType(T.float64, 1, "C")
    line = f"{__file__}:{noise.__code__.co_firstlineno + 3}"
    with pytest.raises(TypeInferenceError, match="kernels on the GPU cannot reach") as info:
        k.inspect_asm(A, target=parse_target("ptx:sm_80"))
    assert line in str(info.value)
    with pytest.raises(TypeInferenceError, match="kernels on the GPU cannot reach"):
        k[1, 32, "cpu"](np.zeros(8))  # the CPU grid emulation refuses it alike


def test_a_generator_whose_state_is_not_pcg64s_is_a_value_error():
    bad = Generator(np.zeros(2, np.uint64))
    with pytest.raises(ValueError, match="6 words"):
        jit(lambda g: g.random())(bad)


W = np.linspace(1.0, 2.0, 6)


def shuffled_energy(x):
    np.random.seed(3)
    y = x.copy()
    np.random.shuffle(y)
    p = np.random.permutation(x)
    c = np.random.choice(x, 4)
    q = np.random.default_rng(2).permutation(x)
    s = 0.0
    for i in range(6):
        s += W[i] * y[i] ** 2 + p[i] * W[5 - i] + q[i] * q[i] * W[i]
    for i in range(4):
        s += c[i] ** 3
    return s


def test_derivatives_flow_through_shuffled_and_chosen_copies():
    """The draws pick the order; the values moved are the differentiated array's: the gradient is
    the derivative permuted (against central differences of NumPy's own shuffles)."""
    x = np.array([0.5, -1.0, 2.0, 0.3, 1.5, -0.7])
    eps = 1e-6
    fd = np.array([(shuffled_energy(x + eps * e) - shuffled_energy(x - eps * e)) / (2 * eps) for e in np.eye(6)])
    np.testing.assert_allclose(gradient(shuffled_energy, x), fd, rtol=1e-7, atol=1e-8)
    assert np.all(np.abs(fd) > 0.1)


def test_threads_past_the_slots_share_one_state(tmp_path):
    """160 threads alive at once (in a fresh process: the slots stay taken): every slot is claimed,
    the threads past them draw from the shared state, each seeded as it asked (the GIL orders them)."""
    script = tmp_path / "threads.py"
    script.write_text(
        "import threading\nimport numpy as np\nfrom gpucompiler import jit\n"
        "from gpucompiler.language.numpy.random import nprandomstate as S\n\n@jit\n"
        "def f(s):\n    np.random.seed(s)\n    return np.random.random()\n\nout = {}\n"
        "barrier = threading.Barrier(160)\n\ndef run(k):\n    out[k] = f(k)\n    barrier.wait()\n\n"
        "threads = [threading.Thread(target=run, args=(k,)) for k in range(160)]\n"
        "for t in threads:\n    t.start()\nfor t in threads:\n    t.join()\n"
        "assert all(S._STATE[8 + i] != 0 for i in range(S.SLOTS))\n"
        "assert all(out[k] == np.random.RandomState(k).random() for k in range(160))\nprint('ok')\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
