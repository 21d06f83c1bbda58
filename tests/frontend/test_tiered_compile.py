"""Tiered first compiles of ``@jit`` (docs/user_guide.md, "Tiered first compiles"): a function with a
loop first runs quick code (O0) while a thread compiles the full level, which replaces it.

Results never depend on the tier: the differential fuzzer's programs give the same bits at O0, O1
and O2, and a tiered function the same bits before and after its tier-up, from one thread or many
during the swap. The cache holds both tiers; a fresh process that finds the full one uses it and
compiles nothing. ``tier=False`` and ``GPUC_TIER=off`` turn it off; errors stay the typed ones.
"""

from __future__ import annotations

import gc
import importlib
import json
import math
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler import types as gpuc_types
from gpucompiler.cache.default import memory_cache
from gpucompiler.errors import ConfigError, TypeInferenceError

J = importlib.import_module("gpucompiler.jit")  # the module (``gpucompiler.jit`` is the decorator)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def level(f) -> int:
    """The optimisation level of the code ``f``'s last compile made (or found)."""
    return f.last_compile.result.job.config.opt_level


def bits(value) -> str:
    """``value`` exactly: floats by ``float.hex``, arrays by their bytes, exceptions by their type."""
    if isinstance(value, tuple):
        return "(" + ",".join(bits(v) for v in value) + ")"
    if isinstance(value, np.ndarray):
        return f"{value.dtype}{value.shape}:{value.tobytes().hex()}"
    if isinstance(value, float):
        return value.hex()
    return repr(value)


def horner(xs, n):
    s = 0.0
    for i in range(n):
        s = s * 0.75 + xs[i % xs.shape[0]] / (i + 1.0)
        if s > 10.0:
            s -= 3.1
    return s


def series(n, x):
    t = 1.0
    s = 0.0
    k = 0
    while k < n:
        s += t
        t = t * x / (k + 1)
        k += 1
    return s


@pytest.fixture(autouse=True)
def tiers_on(monkeypatch):
    """Tiers on (the suite runs with ``GPUC_TIER=off``: tests count compiles), and none of this module's
    functions compiled yet: ``cache=False`` functions share the process's memory tier (a tier-up an earlier
    test left waiting publishes there first)."""
    monkeypatch.setenv("GPUC_TIER", "on")
    for thread in threading.enumerate():
        if thread.name.startswith("tier-up "):
            thread.join(120)
    memory_cache().memory.clear()


@pytest.fixture
def held():
    """The process's ``@jit`` compile lock held: a tier-up thread waits until the test lets it go."""
    J._COMPILING.acquire()
    try:
        yield J._COMPILING
    finally:
        J._COMPILING.release()


def test_a_loop_runs_quick_code_first_and_the_full_level_once_ready(held):
    f = jit(horner, cache=False)
    xs = np.linspace(-1.0, 3.0, 17)
    inputs = [(xs, n) for n in (0, 1, 5, 40, 1000)]
    quick = [f(*a) for a in inputs]
    assert level(f) == J.QUICK_LEVEL and f.last_compile.tier == "compiled"
    entry = next(iter(f._entries.values()))
    # the quick code has no CPython call entry: its calls go through the dispatcher until the tier-up
    assert entry.tier_up is not None and entry.full is None and entry.fast is None
    assert "__call__" not in type(f).__dict__
    held.release()
    try:
        assert f.wait_tier_up(120)
    finally:
        held.acquire()
    assert level(f) == 2 and entry.full is not None and type(f).__call__ is entry.full.fast
    full = [f(*a) for a in inputs]
    assert [bits(v) for v in quick] == [bits(v) for v in full] == [bits(horner(*a)) for a in inputs]
    assert [bits(jit(horner, tier=False, cache=False)(*a)) for a in inputs] == [bits(v) for v in full]


def test_many_threads_calling_during_the_swap_all_get_the_same_bits(held):
    f = jit(series, cache=False)
    want = {n: series(n, 0.37) for n in range(0, 60, 7)}
    assert f(3, 0.37) == series(3, 0.37) and level(f) == J.QUICK_LEVEL
    got: list[tuple[int, float]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(9)

    def work():
        try:
            start.wait()
            for _ in range(300):
                for n in want:
                    got.append((n, f(n, 0.37)))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    held.release()  # the tier-up now compiles and swaps while the threads call
    try:
        start.wait()
        assert f.wait_tier_up(120)
        for t in threads:
            t.join(120)
    finally:
        held.acquire()
    assert not errors and len(got) == 8 * 300 * len(want)
    assert all(v.hex() == want[n].hex() for n, v in got)
    entry = next(iter(f._entries.values()))
    assert level(f) == 2 and entry.tier_up is None and type(f).__call__ is entry.fast  # the full level's


def test_a_call_running_the_quick_code_during_the_swap_finishes(held):
    f = jit(series, nogil=True, cache=False)  # its calls release the GIL: the swap may run beside one
    assert f(3, 0.5) == series(3, 0.5) and level(f) == J.QUICK_LEVEL
    quick = next(iter(f._entries.values()))
    n, x = 20_000_000, 1.0 - 1e-9
    want = jit(series, tier=False, cache=False)(n, x)
    began, out = threading.Event(), []

    def long_call():
        began.set()
        out.append(quick.call(n, x))  # the quick code, called directly

    worker = threading.Thread(target=long_call)
    worker.start()
    began.wait()
    held.release()
    try:
        assert f.wait_tier_up(120)  # usually while the long call still runs (its GIL released)
        worker.join(120)
    finally:
        held.acquire()
    assert out and out[0].hex() == want.hex() and f(n, x).hex() == want.hex()


@pytest.mark.parametrize("opt", [0, 1])
def test_the_fuzzers_programs_give_the_same_bits_at_each_level(opt):
    """The differential fuzzer's programs (scalars, and NumPy array programs) at O0 or O1 against O2,
    no tiering: the floats bit for bit, the same exception types."""
    script = textwrap.dedent(f"""
        import json, os, sys, tempfile, warnings
        import numpy as np
        sys.path.insert(0, {ROOT!r})
        from gpucompiler import jit
        from tests.frontend import fuzz_arrays as A, fuzz_programs as F
        from tests.frontend.test_tiered_compile import bits

        def outcome(fn, args):
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                kind, *rest = F._outcome(fn, args)
            return bits(rest[0]) + bits(args) if kind == "ok" else rest[0].__name__

        differ, compared = [], 0
        with tempfile.TemporaryDirectory() as tmp:
            for seed in range(70):
                src, inputs = F.generate(seed)
                mod = F._load(src, os.path.join(tmp, f"prog_{{seed}}.py"))
                fast, quick = jit(mod.f, tier=False), jit(mod.f, tier=False, opt_level={opt})
                for i, j, x, y, arr in inputs:
                    a, b = outcome(fast, (i, j, x, y, np.array(arr))), outcome(quick, (i, j, x, y, np.array(arr)))
                    compared += 1
                    if a != b:
                        differ.append((seed, a[:80], b[:80]))
            for seed in range(40):
                src, inputs = A.generate(seed)
                mod = F._load(src, os.path.join(tmp, f"arr_{{seed}}.py"))
                fast, quick = jit(mod.f, tier=False), jit(mod.f, tier=False, opt_level={opt})
                for dtype, la, lb, sa, sb, sv, s in inputs:
                    args = lambda: (A._array(dtype, sa, la, s), A._array(dtype, sb, lb, s + 0.1),
                                    A._array(dtype, sv, "C", s + 0.2))
                    a, b = outcome(fast, args()), outcome(quick, args())
                    compared += 1
                    if a != b:
                        differ.append(("arrays", seed, a[:80], b[:80]))
        print(json.dumps({{"differ": differ, "compared": compared}}))
    """)
    env = {**os.environ, "GPUC_CACHE": "off", "PYTHONPATH": ROOT}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=900,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["compared"] == 70 * 4 + 40 * 3 and not out["differ"], out["differ"][:5]


_TWO_PROCESSES = textwrap.dedent("""
    import importlib, json, sys
    sys.path.insert(0, sys.argv[1])
    from gpucompiler.cache.default import cache_from_settings, default_cache
    from gpucompiler.settings import CacheSettings
    from tests.frontend.test_tiered_compile import J, horner, level
    import numpy as np
    from gpucompiler import jit
    f = jit(horner)
    value = f(np.linspace(-1.0, 3.0, 17), 300)
    first = (level(f), f.last_compile.tier)
    stats = dict(default_cache().stats)  # before the tier-up's compile
    entry = next(iter(f._entries.values()))  # quick code, or a hit's full level
    tiered = f.wait_tier_up(120)
    disk = cache_from_settings(CacheSettings.from_env())  # its memory tier empty: the disk answers
    on_disk = []
    for e in (entry, entry.full):
        try:
            on_disk.append(disk.compile(e.job, ("obj",), compiler=J._not_cached).job.config.opt_level)
        except (J._NotCached, AttributeError):
            pass
    from gpucompiler.identity.keys import code_digest
    print(json.dumps({"value": value.hex(), "first": first, "after": [level(f), f.last_compile.tier],
                      "tiered": tiered, "pending": entry.tier_up is not None, "stats": stats,
                      "on_disk": on_disk, "compiler": code_digest("gpucompiler")}))
""")


def _fresh(cache, **env) -> dict:
    environ = {**os.environ, "GPUC_CACHE_DIR": str(cache), "PYTHONPATH": ROOT, **env}
    environ.pop("GPUC_SERVICE_URL", None)
    environ.pop("GPUC_CACHE_URL", None)
    done = subprocess.run([sys.executable, "-c", _TWO_PROCESSES, ROOT], env=environ, capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_cache_holds_both_tiers_and_a_fresh_process_runs_the_full_one(tmp_path):
    for attempt in range(3):  # again when the compiler's own source (part of every key) was edited meanwhile
        cold = _fresh(tmp_path / str(attempt))
        warm = _fresh(tmp_path / str(attempt))
        if warm["compiler"] == cold["compiler"]:
            break
    assert cold["first"] == [J.QUICK_LEVEL, "compiled"] and cold["after"] == [2, "compiled"] and cold["tiered"]
    assert cold["on_disk"] == [J.QUICK_LEVEL, 2]  # both tiers' code, read back by a new cache
    # the full level from the disk: no compile at all (the quick level is not compiled, nor looked up)
    assert warm["first"] == [2, "disk"] and not warm["pending"] and "compile" not in warm["stats"]
    assert warm["value"] == cold["value"]
    quick = _fresh(tmp_path / str(attempt), GPUC_TIER="off")
    assert quick["first"] == [2, "disk"]


def test_both_tiers_are_entries_of_the_cache(held):
    f = jit(series, cache=False)
    f(4, 0.5)
    entry = next(iter(f._entries.values()))
    held.release()
    try:
        assert f.wait_tier_up(120)
    finally:
        held.acquire()
    assert next(iter(f._entries.values())) is entry.full
    cache = memory_cache()
    for e in (entry, entry.full):
        assert e is not None
        found = cache.compile(e.job, ("obj",), compiler=J._not_cached)  # a hit, or _NotCached
        assert found.job.config.opt_level == e.job.config.opt_level
    assert entry.job.config.opt_level == J.QUICK_LEVEL and entry.full is not None
    assert entry.full.job.config.opt_level == 2


def test_the_off_switches(monkeypatch):
    xs = np.arange(5.0)
    off = jit(horner, tier=False, cache=False)
    assert off(xs, 7) == horner(xs, 7) and level(off) == 2 and not any(e.tier_up for e in off._entries.values())
    monkeypatch.setenv("GPUC_TIER", "off")
    env_off = jit(series, cache=False)
    assert env_off(9, 0.25) == series(9, 0.25) and level(env_off) == 2
    monkeypatch.setenv("GPUC_TIER", "maybe")
    with pytest.raises(ConfigError, match="GPUC_TIER"):
        jit(series, cache=False)(9, 0.5)
    with pytest.raises(ConfigError, match="tier must be True or False"):
        jit(series, tier="yes")


def straight(a, b):
    return a * b + 1.5


def with_math(xs):
    s = 0.0
    for i in range(xs.shape[0]):
        s += math.sin(xs[i])
    return s


def calls_math(xs):
    s = 0.0
    for i in range(xs.shape[0]):
        s += through(xs[i])
    return s


def through(x):
    return math.exp(x) - 1.0


def test_what_is_not_tiered():
    xs = np.linspace(0.0, 2.0, 64)
    cases = [(jit(straight, cache=False), (2.0, 3.0)),  # no loop: the full level at once
             (jit(with_math, cache=False), (xs,)),  # its own math call: O2 may vectorize it (libmvec)
             (jit(calls_math, cache=False), (xs,)),  # a callee's: the quick code is made, then refused
             (jit(horner, fastmath=True, cache=False), (xs, 9)),  # fast-math: the levels' bits may differ
             (jit(horner, opt_level=0, cache=False), (xs, 9)),  # nothing quicker than O0
             (jit("float64(float64[:], int64)", cache=False)(horner), (xs, 9)),  # eager: compiled at once
             (jit(horner, cache=False), (np.ones(J.SMALL_CALL + 1), 9)),  # a long first call: O0 would be slow
             (jit(series, cache=False), (J.SMALL_CALL + 1, 0.5)),  # an integer argument a loop may run to
             (jit(series, cache=False), (np.int32(-J.SMALL_CALL - 1), 0.5))]
    for f, args in cases:
        value = f(*args)
        assert value == pytest.approx(f.py_func(*args), rel=1e-12)
        assert level(f) == f.opt_level and all(e.tier_up is None for e in f._entries.values()), f


def test_a_gradient_is_never_tiered_and_differentiates_the_full_level():
    pytest.importorskip("enzyme_plugin")
    from enzyme_plugin import Active, Const, Reverse, autodiff

    def loss(w, xs, n):
        acc = 0.0
        for i in range(n):
            r = w * xs[i] - 1.0
            acc += r * r
        return acc

    def grad(w, xs, n):
        total = 0.0
        for _ in range(2):  # a loop of its own: only the plugin keeps it from being tiered
            total += autodiff(Reverse, loss, Active(w), Const(xs), Const(n))[0]
        return total

    xs = np.linspace(0.0, 1.0, 11)
    g = jit(grad, cache=False)
    dw = g(0.5, xs, 11)
    assert dw == pytest.approx(2 * sum(2 * (0.5 * x - 1.0) * x for x in xs), rel=1e-12)
    assert g.plugins == ("enzyme",) and level(g) == 2 and all(e.tier_up is None for e in g._entries.values())


def bad(n):
    s = 0
    for _ in range(n):
        s += "a"  # pyright: ignore[reportOperatorIssue]  (the typed error under test)
    return s


def checked(xs, n):
    s = 0.0
    for i in range(n):
        s += xs[i] / xs[0]
    return s


@pytest.mark.parametrize("tier", [True, False])
def test_errors_are_the_same_typed_ones_on_each_tier(tier, held):
    with pytest.raises(TypeInferenceError):
        jit(bad, tier=tier, cache=False)(3)
    f = jit(checked, tier=tier, cache=False)
    xs = np.array([0.0, 1.0, 2.0])
    for _ in range(2):  # the quick code, then (tiered) the full level's: the same exceptions
        with pytest.raises(ZeroDivisionError):
            f(xs, 2)
        with pytest.raises(IndexError):
            f(np.array([1.0, 2.0]), 3)
        assert f(np.array([2.0, 1.0]), 2) == 1.5
        assert level(f) == (J.QUICK_LEVEL if tier else 2)
        held.release()
        try:
            assert f.wait_tier_up(120)
        finally:
            held.acquire()
        tier = False  # the second round runs the full level either way


def test_a_tier_up_that_fails_keeps_the_quick_code(held, caplog):
    f = jit(series, cache=False)
    assert f(5, 0.5) == series(5, 0.5)
    entry = next(iter(f._entries.values()))

    def broken():
        raise ConfigError("no full level here")

    f._config = broken  # the tier-up thread's job cannot be made
    with caplog.at_level("WARNING", logger="gpucompiler.jit"):
        held.release()
        try:
            assert not f.wait_tier_up(120)
        finally:
            held.acquire()
    assert "the quick code stays" in caplog.text and entry.full is None
    assert f(11, 0.5).hex() == series(11, 0.5).hex() and level(f) == J.QUICK_LEVEL


def test_a_quick_compile_that_fails_leaves_the_full_level_to_decide(monkeypatch):
    monkeypatch.setattr(J, "QUICK_LEVEL", -1)  # not a level: the quick job's config is a ConfigError
    f = jit(series, cache=False)
    assert f(7, 0.5) == series(7, 0.5) and level(f) == 2
    assert all(e.tier_up is None for e in f._entries.values())
    with pytest.raises(TypeInferenceError):
        jit(bad, cache=False)(3)


def test_inspecting_during_a_tier_up(held):
    f = jit(series, cache=False)
    assert f(6, 0.25) == series(6, 0.25)
    held.release()  # the tier-up compiles while this thread infers and compiles for inspection
    try:
        for _ in range(3):
            assert repr(f.result_type(gpuc_types.int64, gpuc_types.float64)) == "float64"
            assert "define" in f.inspect_llvm(gpuc_types.int64, gpuc_types.float64)
        assert f.wait_tier_up(120)
    finally:
        held.acquire()
    assert level(f) == 2 and f(6, 0.25).hex() == series(6, 0.25).hex()


def test_small_arguments():
    small = (1.5e300, True, -J.SMALL_CALL, np.int64(J.SMALL_CALL), np.zeros((64, 64)), (3, np.ones(5)), [1, 2],
             "text", None, np.float64(1e12))
    large = (J.SMALL_CALL + 1, np.uint64(J.SMALL_CALL + 1), np.zeros((65, 64)), (1, (2, 10**9)), [0] * (J.SMALL_CALL + 1))
    assert all(J._small(v) for v in small) and not any(J._small(v) for v in large)


def test_loops_are_found_in_the_bytecode():
    def comprehension(xs):
        return sum([x for x in xs])

    def while_loop(x):
        while x > 1:
            x = x / 2
        return x

    assert J._has_loop(horner.__code__) and J._has_loop(series.__code__) and J._has_loop(while_loop.__code__)
    assert J._has_loop(comprehension.__code__) and not J._has_loop(straight.__code__)


def test_the_quick_code_has_no_call_entry_and_keys_apart_from_a_users_opt_level_0(held):
    """The quick module holds the ctypes wrapper, not the CPython call entry (the full level's has it). Its
    key says so: ``@jit(opt_level=0)`` of the same function, compiled after it in the same process (the
    memory tier shared), compiles its own code with a call entry instead of finding the quick code."""
    f = jit(horner, cache=False)
    xs = np.linspace(-1.0, 3.0, 17)
    quick_value = f(xs, 9)
    quick = next(iter(f._entries.values()))
    names = set(f.last_compile.result.module.function_names())
    entry_name = quick.spec.entry  # the module's name as this test was imported
    assert level(f) == J.QUICK_LEVEL and entry_name + ".pywrap" in names
    assert not any(n.endswith(".pyentry") for n in names)
    user = jit(horner, opt_level=0, tier=False, cache=False)
    assert user(xs, 9) == quick_value and level(user) == 0 and user.last_compile.tier == "compiled"
    mine = next(iter(user._entries.values()))
    assert mine.fast is not None and mine.job.source.call_entry and not quick.job.source.call_entry
    held.release()
    try:
        assert f.wait_tier_up(120)
    finally:
        held.acquire()
    assert quick.full is not None and quick.full.fast is not None and quick.full.job.source.call_entry
    assert entry_name + ".pyentry" in f.last_compile.result.module.function_names()
    assert bits(f(xs, 9)) == bits(quick_value) == bits(horner(xs, 9))


def test_a_verified_record_keys_the_spec_with_and_without_its_call_entry_apart():
    """A dependency record verified through one spec serves the other's fingerprint (they share it), each with
    its own index part: never the one of the other, whose code differs."""
    from gpucompiler.core import CompilerJob
    from gpucompiler.source.spec import FunctionSpec

    argtypes = (gpuc_types.int64, gpuc_types.float64)
    job = jit(series, cache=False)._job(argtypes)
    full = job.source
    record = FunctionSpec(series, argtypes).dependency_record(job)
    assert record is not None
    by_inference = (full.fingerprint(job), full.without_call_entry().fingerprint(job))
    verified = FunctionSpec(series, argtypes)
    assert verified.verify_record(job, record) == by_inference[0]
    quick = verified.without_call_entry()
    quick_job = CompilerJob(quick, job.config)
    assert quick.fingerprint(quick_job) == by_inference[1] != by_inference[0]
    assert by_inference[1] == {**by_inference[0], "call_entry": False}
    assert verified.fingerprint(job) == by_inference[0]


def running(a):
    out = np.empty_like(a)
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * SCALE
        out[i] = s
    return out


def stats(xs, n, *, shift=0.5):
    lo, hi, k = xs[0], xs[0], 0
    for i in range(n):
        v = xs[i % xs.shape[0]] - shift
        lo, hi = min(lo, v), max(hi, v)
        k += v > 0.0
    return k, hi - lo, k == n


def wrapped(n, m):
    t = 0
    for i in range(n):
        t = (t * 31 + i) % m
    return t


SCALE = 2.0


def test_the_quick_code_without_its_call_entry_answers_as_the_full_level(held):
    """Before its tier-up the quick code is called through the dispatcher and ctypes: arrays and tuples
    returned, keyword arguments, integers out of int64, a rebound global (world age) and Python's
    exceptions are what the full level (through its call entry) and CPython give."""
    xs = np.linspace(-1.0, 2.0, 9)
    f, g, h = jit(running, cache=False), jit(stats, cache=False), jit(wrapped, cache=False)
    calls = [(f, (xs,), {}), (g, (xs, 13), {}), (g, (xs,), {"n": 5, "shift": -0.25}), (h, (50, 7), {}),
             (h, (3, 0), {}), (h, (1 << 63, 7), {}), (f, (xs.reshape(3, 3),), {}), (g, ([1.0],), {"n": 2})]

    def outcomes():
        got = []
        for fn, args, kwargs in calls:
            try:
                got.append(bits(fn(*args, **kwargs)))
            except Exception as exc:  # compared by type, as CPython raises them
                got.append(type(exc).__name__)
        return got

    global SCALE
    quick = outcomes()
    assert [level(fn) for fn in (f, g, h)] == [J.QUICK_LEVEL] * 3
    assert all(e.fast is None and e.tier_up is not None for fn in (f, g, h) for e in fn._entries.values())
    python = []
    for fn, args, kwargs in calls[:5]:  # the others are refused before they run (CPython would loop 2**63 times)
        try:
            value = fn.py_func(*args, **kwargs)  # NumPy scalars where compiled code gives Python's
            python.append(bits(tuple(v.item() if isinstance(v, np.generic) else v for v in value)
                               if isinstance(value, tuple) else value))
        except Exception as exc:
            python.append(type(exc).__name__)
    assert quick[:5] == python and quick[4] == "ZeroDivisionError"
    assert quick[5] == "OverflowError"  # not an int64
    assert quick[6] in ("TypeInferenceError", "ArgumentTypeError", "ValueError", "IndexError") and quick[7] != bits(
        stats(np.array([1.0]), 2))  # a 2-d array for a 1-d loop, a list for an array: never a silent answer
    SCALE = 3.0  # rebound: the quick code's next call compiles again (its tier-up still waits)
    try:
        assert bits(f(xs)) == bits(running(xs))
        held.release()
        try:
            assert all(fn.wait_tier_up(120) for fn in (f, g, h))
        finally:
            held.acquire()
        # the full level's call entries (a keyword-only parameter, as stats's, keeps calls on ctypes at every level)
        assert all(e.fast is not None for fn in (f, h) for e in fn._entries.values())
        assert all(e.fast is None and e.spec.call_entry for e in g._entries.values())
        assert bits(f(xs)) == bits(running(xs))
    finally:
        SCALE = 2.0
    assert outcomes() == quick


def test_a_global_rebound_before_the_tier_up_is_seen_by_the_next_call(held):
    """The full level compiles from the quick compile's inference: a global rebound after the quick code's
    last call and before the swap makes it stale. The swap installs no entry then, and the next call
    compiles again with the new value (before, the swap installed the stale code with the new dict tag
    taken as expected: the rebound global was never seen)."""
    global SCALE
    xs = np.linspace(-1.0, 2.0, 9)
    f = jit(running, cache=False)
    assert bits(f(xs)) == bits(running(xs)) and level(f) == J.QUICK_LEVEL
    quick = next(iter(f._entries.values()))
    SCALE = 5.0
    try:
        held.release()
        try:
            assert f.wait_tier_up(120) and quick.full is not None
        finally:
            held.acquire()
        stale_installed = "__call__" in type(f).__dict__
        assert bits(f(xs)) == bits(running(xs)) == bits(np.cumsum(xs * 5.0))
        assert not stale_installed  # the swap installed nothing: the call compiled again
        assert bits(f(xs)) == bits(running(xs))  # and through whatever the call installed
    finally:
        SCALE = 2.0
    assert bits(f(xs)) == bits(running(xs)) == bits(np.cumsum(xs * 2.0))


_WARM_UP = textwrap.dedent("""
    import importlib, json, sys, threading
    import llvmlite.binding as llvm
    from gpucompiler import jit
    from gpucompiler.targets.native import NativeTarget
    sys.path.insert(0, sys.argv[1] + "/tests/frontend")
    from test_tiered_compile import series
    J = importlib.import_module("gpucompiler.jit")
    if sys.argv[2] == "off":
        J._warm_code_generator = lambda target: None
    made, emit = [], llvm.TargetMachine.emit_object
    def recorded(machine, module):
        made.append((machine, threading.current_thread() is threading.main_thread()))
        return emit(machine, module)
    llvm.TargetMachine.emit_object = recorded
    f = jit(series, cache=False)
    value = f(5, 0.25)
    assert f.last_compile.result.job.config.opt_level == J.QUICK_LEVEL
    quick = NativeTarget().target_machine(J.QUICK_LEVEL)
    mains = [main for machine, main in made if machine is quick]
    obj = f.last_compile.result.artifacts["obj"]
    f.wait_tier_up()
    print(json.dumps({"mains": mains, "value": value.hex(), "obj": obj.hex()}))
""")


def _quick_objects(switch: str) -> dict:
    env = {**os.environ, "GPUC_TIER": "on", "GPUC_CACHE": "off", "PYTHONPATH": ROOT}
    done = subprocess.run([sys.executable, "-c", _WARM_UP, ROOT, switch], env=env, capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_quick_levels_code_generator_is_set_up_off_the_callers_thread():
    """A fresh process's first quick compile: the quick level's machine makes its first object (LLVM's set-up
    of its code generator, ~1 ms) in a background thread while the quick code's IR is generated, then the
    quick code's on the caller's thread; that object is the same bytes as without the set-up ahead. Which comes
    first is the threads' race (on a loaded machine the background thread may start after the caller's IR is
    ready): the two objects are counted, not ordered."""
    ahead, alone = _quick_objects("on"), _quick_objects("off")
    assert sorted(ahead["mains"]) == [False, True] and alone["mains"] == [True]
    assert ahead["obj"] == alone["obj"] and ahead["value"] == alone["value"] == series(5, 0.25).hex()


def test_the_collector_waits_until_the_tier_up_ends_and_a_forks_child_resumes_it(held):
    """A tiered first compile pauses cyclic collection from its start until its tier-up ends (what both levels
    build lives until then); an untiered compile resumes it when it returns; a caller's own pause is kept, and
    a child forked while a tier-up holds the pause resumes it (no thread there ends it)."""
    assert gc.isenabled()
    f = jit(series, cache=False)
    assert f(4, 0.5) == series(4, 0.5) and level(f) == J.QUICK_LEVEL
    assert not gc.isenabled()  # the tier-up waits for the lock the test holds
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave at once
        os.write(write, b"1" if gc.isenabled() else b"0")
        os._exit(0)
    os.close(write)
    child = os.read(read, 1)
    os.close(read)
    os.waitpid(pid, 0)
    assert child == b"1"
    held.release()
    try:
        assert f.wait_tier_up(120)
    finally:
        held.acquire()
    assert gc.isenabled() and level(f) == 2
    g = jit(series, cache=False, tier=False)
    assert g(4, 0.5) == series(4, 0.5) and gc.isenabled()
    gc.disable()
    try:
        h = jit(horner, cache=False)
        xs = np.linspace(0.0, 1.0, 5)
        assert bits(h(xs, 7)) == bits(horner(xs, 7)) and level(h) == J.QUICK_LEVEL
        held.release()
        try:
            assert h.wait_tier_up(120)
        finally:
            held.acquire()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_child_forked_while_the_collectors_lock_is_held_compiles():
    """A tier-up releases the collector's pause under a lock of its own, after the compile lock a fork waits
    for: a child forked meanwhile gets a new lock (the parent's stays held there by no thread)."""
    J._collector_lock.acquire()
    try:
        pid = os.fork()
        if pid == 0:  # the child: compile and call, then leave at once
            code = 2
            try:
                code = 0 if jit(series, cache=False, tier=False)(3, 0.5) == series(3, 0.5) else 1
            finally:
                os._exit(code)
    finally:
        J._collector_lock.release()
    deadline = time.monotonic() + 60
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if done[0] == 0:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert done[0] == pid and os.waitstatus_to_exitcode(done[1]) == 0
