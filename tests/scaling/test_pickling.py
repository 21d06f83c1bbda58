"""@jit functions and kernels pickle by reference; a spawned worker finds their code in the cache tiers."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import scaling_shipped as shipped
from enzyme_plugin import Active, ReverseSplit, autodiff_thunk
from gpucompiler import jit
from gpucompiler.targets import parse_target
from gpucompiler.errors import NotPicklableError


@pytest.fixture(scope="module", autouse=True)
def cache_dir(tmp_path_factory):
    """A fresh GPUC_CACHE_DIR for this module's compiles (the dispatchers of :mod:`scaling_shipped` keep what
    they compiled in memory), inherited by spawned workers through the environment."""
    path = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPUC_CACHE_DIR", str(path))
        yield path


def _poly(x):
    return 3.0 * x * x - 2.0 * x + 1.0


def test_module_level_objects_unpickle_as_themselves():
    for obj in (shipped.poly, shipped.total, shipped.scale):
        data = pickle.dumps(obj)
        assert pickle.loads(data) is obj
        assert b"ELF" not in data and len(data) < 200  # a reference, no code


@pytest.mark.parametrize("factor", [2.5, -1.0, 0.0])
def test_closures_rebuild_with_their_cells(factor):
    f = pickle.loads(pickle.dumps(shipped.scaler(factor)))
    assert f.__qualname__ == "scaler.<locals>.scaled"
    for x in (0.0, 1.5, -3.0):
        assert f(x) == factor * x + 1.0


def test_closure_kernel_rebuilds_in_the_emulation():
    k = pickle.loads(pickle.dumps(shipped.shifter(0.5)))
    y, _ = shipped.launch(k, 40)
    np.testing.assert_array_equal(y, np.arange(40.0) + 0.5)


def test_closure_of_a_closure_pickles_its_cells_by_reference():
    outer = shipped.scaler(2.0)
    data = pickle.dumps((outer, outer))
    a, b = pickle.loads(data)
    assert a is b and a(1.0) == 3.0


_LAMBDA = jit(lambda x: x + 1.0)


def test_lambda_at_module_level_is_a_typed_error():
    with pytest.raises(NotPicklableError, match=r"<lambda>.*test_pickling.py:\d+.*define it with def"):
        pickle.dumps(_LAMBDA)


def test_lambda_inside_a_function_pickles_from_its_code():
    def make(c):
        return jit(lambda x: x * c), jit(lambda x: x - c)  # two lambdas on one line: which is ambiguous
    times = pickle.loads(pickle.dumps(jit(lambda x: x * 3.0)))
    assert times(2.0) == 6.0
    with pytest.raises(NotPicklableError, match="finds 2 such functions"):
        pickle.loads(pickle.dumps(make(2.0)[0]))


def test_exec_made_function_is_a_typed_error():
    ns: dict = {"__name__": "not_a_module_here"}
    exec("def made(x):\n    return x\n", ns)
    with pytest.raises(NotPicklableError, match=r"not_a_module_here\.made"):
        pickle.dumps(jit(ns["made"]))
    bare: dict = {}
    exec("def made(x):\n    return x\n", bare)  # no __name__: the function's __module__ is None
    with pytest.raises(NotPicklableError, match="cannot be pickled by reference"):
        pickle.dumps(jit(bare["made"]))


def test_recursive_closure_is_a_typed_error():
    def outer():
        @jit
        def fact(n):
            return 1 if n <= 1 else n * fact(n - 1)
        return fact
    with pytest.raises(NotPicklableError, match="refers to itself through its variable 'fact'"):
        pickle.dumps(outer())


def test_closure_calling_a_nested_plain_helper():
    f = pickle.loads(pickle.dumps(shipped.with_helper(3.0)))
    assert f(2.0) == 7.0 and f.py_func.__closure__[0].cell_contents.__qualname__ == "with_helper.<locals>.helper"


def test_mutually_recursive_closures_are_a_typed_error():
    with pytest.raises(NotPicklableError, match="refers to itself through its variable 'odd'"):
        pickle.dumps(shipped.mutual())


def test_closure_whose_factory_is_gone_is_a_typed_error(monkeypatch):
    f = shipped.scaler(2.0)
    monkeypatch.setattr(shipped, "scaler", None)
    with pytest.raises(NotPicklableError, match=r"scaling_shipped\.scaler, is not a module-level function"):
        pickle.dumps(f)


def test_closure_unpickled_where_the_factory_changed_is_a_typed_error(monkeypatch):
    data = pickle.dumps(shipped.scaler(2.0))
    monkeypatch.setattr(shipped, "scaler", shipped.shifter)
    with pytest.raises(NotPicklableError, match="finds 0 such functions"):
        pickle.loads(data)


def test_a_second_jit_of_a_module_function_rebuilds_with_its_options():
    g = jit(_poly, boundscheck=False)
    h = pickle.loads(pickle.dumps(g))
    assert h is not g and h.py_func is _poly and h.boundscheck is False and h(2.0) == 9.0


def test_a_kernel_for_another_target_keeps_it():
    target = parse_target("ptx:sm_80")
    k = pickle.loads(pickle.dumps(shipped.scale.on(target)))
    assert k.requested_target == target and k.py_func is shipped.scale.py_func
    assert ".target sm_80" in k.inspect_asm(2.0, np.zeros(4), np.zeros(4))


def test_declared_signatures_travel_with_a_closure():
    f = pickle.loads(pickle.dumps(shipped.typed_scaler(3.0)))
    assert f.declared == shipped.typed_scaler(3.0).declared and f(2.0) == 6.0
    with pytest.raises(TypeError):
        f(np.arange(3.0))  # no declared signature takes an array: Numba's rule holds after the trip


def _warm():
    assert shipped.poly(2.0) == 9.0
    assert shipped.total(np.arange(5.0)) == 30.0
    assert shipped.scaler(2.5)(2.0) == 6.0
    y, _ = shipped.launch(shipped.scale, 64)
    np.testing.assert_array_equal(y, 2.0 * np.arange(64.0))


def test_multiprocessing_spawn_workers_hit_the_shared_cache(cache_dir):
    _warm()
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        results = pool.starmap(shipped.call, [(shipped.poly, 2.0), (shipped.scaler(2.5), 2.0),
                                              (shipped.total, np.arange(5.0))])
        kernels = pool.starmap(shipped.launch, [(shipped.scale, 64)])
        counters = pool.apply(shipped.stats, (shipped.poly, 2.0))
    assert [r for r, _ in results] == [9.0, 6.0, 30.0]
    assert [c for _, c in results] == [0, 0, 0]  # each worker compiled nothing: the cache held the code
    (y, compiles), = kernels
    np.testing.assert_array_equal(y, 2.0 * np.arange(64.0))
    assert compiles == 0
    assert counters.get("compile", 0) == 0 and counters["hit.disk"] >= 1  # the worker's code came from disk


def test_process_pool_executor_spawn(cache_dir):
    _warm()
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as ex:
        futures = [ex.submit(shipped.call, shipped.poly, float(x)) for x in range(4)]
        futures.append(ex.submit(shipped.call, shipped.scaler(2.5), 4.0))
        results = [f.result() for f in futures]
    assert [r for r, _ in results] == [_poly(float(x)) for x in range(4)] + [11.0]
    assert all(c == 0 for _, c in results)


def test_a_cold_worker_compiles_and_says_so(cache_dir):
    """The counter the tests above read does count: a closure value the parent never compiled compiles."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        value, compiles = pool.apply(shipped.call, (shipped.scaler(7.0), 1.0))
    assert value == 8.0 and compiles >= 1


def test_split_thunks_pickle_as_a_pair():
    fwd, rev = autodiff_thunk(ReverseSplit, shipped.cube, Active)
    f2, r2 = pickle.loads(pickle.dumps((fwd, rev)))
    assert r2.fwd is f2 and f2 is not fwd
    y, dx, _ = shipped.split_gradient(f2, r2, 1.5)
    assert y == 1.5 ** 3 and dx == 3 * 1.5 ** 2
    r3 = pickle.loads(pickle.dumps(rev))  # alone: with a forward thunk of its own
    tape, _ = r3.fwd(Active(2.0))
    assert r3(Active(2.0), 1.0, tape) == (12.0,)


def test_split_thunks_of_a_closure_pickle():
    scale = 4.0

    def g(x):
        return scale * x * x
    fwd, rev = pickle.loads(pickle.dumps(autodiff_thunk(ReverseSplit, g, Active)))
    assert shipped.split_gradient(fwd, rev, 3.0)[:2] == (36.0, 24.0)


def test_split_thunks_in_a_spawned_worker_hit_the_cache():
    fwd, rev = autodiff_thunk(ReverseSplit, shipped.cube, Active)
    assert shipped.split_gradient(fwd, rev, 2.0)[:2] == (8.0, 12.0)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        y, dx, compiles = pool.apply(shipped.split_gradient, (fwd, rev, 3.0))
    assert (y, dx, compiles) == (27.0, 27.0, 0)


_SCRIPT = '''
import multiprocessing
from gpucompiler import jit
from gpucompiler.cache.default import default_cache


@jit
def cube(x):
    return x * x * x


def maker(c):
    @jit
    def plus(x):
        return x + c
    return plus


def run(fn, x):
    return fn(x), default_cache().stats["compile"]


if __name__ == "__main__":
    assert cube(2.0) == 8.0 and maker(0.5)(1.0) == 1.5
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        print(pool.apply(run, (cube, 3.0)), pool.apply(run, (maker(0.5), 2.0)))
'''


def test_functions_of_the_main_script_travel(tmp_path):
    """The usual program: @jit functions defined in the script run as __main__, a spawn pool."""
    script = tmp_path / "job.py"
    script.write_text(_SCRIPT)
    env = {**os.environ, "GPUC_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["(27.0,", "0)", "(2.5,", "0)"]
