"""Plugins' reports and warnings through the cache: a report arrives as its object (rebuilt from JSON data
by the plugin on a hit, never its ``str()``), ``@jit`` functions and kernels expose them in
``last_compile``, and a warning a plugin emits while compiling is shown again on every cache hit."""

from __future__ import annotations

import sys
import threading
import warnings

import attrs
import numpy as np
import pytest

import gpucompiler.cache.default as cached
import gpucompiler.plugin as gp
from gpucompiler import jit, kernel
from gpucompiler import device as gd
from gpucompiler.cache.report import recorded_warnings, replay
from gpucompiler.errors import PluginError
from gpucompiler_plugins.instrumentation import InstrumentationReport


class SlowPathWarning(UserWarning):
    """A plugin's own warning category."""


@attrs.frozen
class Tally:
    calls: int
    stages: tuple[str, ...]


class Tallying(gp.Plugin):
    name, version = "tallying", "1"

    def new_state(self, job):
        return {"calls": 0, "stages": []}

    @gp.callback("post_irgen")
    def count(self, module, state):
        state["calls"] = module.text.count(" call ")
        state["stages"].append("post_irgen")

    @gp.callback("optimize.late")
    def warn(self, job):
        warnings.warn(f"{job.name}: took the slow path", SlowPathWarning, stacklevel=1)

    def report(self, job, state):
        return Tally(state["calls"], tuple(state["stages"]))

    def load_report(self, data):
        return Tally(data["calls"], tuple(data["stages"]))


class Opaque(gp.Plugin):
    """A report that is not JSON data and no save_report: kept in the compile's result, not in the entry."""

    name, version = "opaque_report", "1"

    def report(self, job):
        return object()


class DictReport(gp.Plugin):
    name, version = "dict_report", "1"

    def report(self, job):
        return {"name": job.name, "sizes": [1, 2]}


class BadLoad(gp.Plugin):
    name, version = "bad_load", "1"

    def report(self, job):
        return {"x": 1}

    def load_report(self, data):
        return data["missing"]


def helper(x):
    return x * 2.0


def f(x):
    return helper(x) + 1.0


def k(a):
    i = gd.grid(1)
    if i < a.shape[0]:
        a[i] = a[i] * 2.0


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private cache of the test's own; ``new_process()`` forgets the memory tier (a hit then comes from disk)."""
    monkeypatch.setenv("GPUC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GPUC_CACHE", raising=False)
    cached._cache_for.cache_clear()  # pyright: ignore[reportPrivateUsage]
    yield tmp_path
    cached._cache_for.cache_clear()  # pyright: ignore[reportPrivateUsage]


def new_process():
    cached._cache_for.cache_clear()  # pyright: ignore[reportPrivateUsage]


@pytest.fixture
def plugins(register):
    for p in (Tallying, Opaque, DictReport, BadLoad):
        register(p)


def test_a_report_is_its_object_on_a_compile_and_rebuilt_on_a_hit(cache_dir, plugins):
    with pytest.warns(SlowPathWarning):
        cold = jit(f, plugins=("tallying", "dict_report"))
        assert cold(1.5) == 4.0
    last = cold.last_compile
    assert last is not None and not last.hit
    tally = last.reports["tallying"]
    assert isinstance(tally, Tally) and tally.calls > 0 and tally.stages == ("post_irgen",)
    assert last.reports["dict_report"] == {"name": last.name, "sizes": [1, 2]}
    new_process()
    with pytest.warns(SlowPathWarning):
        warm = jit(f, plugins=("tallying", "dict_report"))
        assert warm(1.5) == 4.0
    assert warm.last_compile is not None and warm.last_compile.tier == "disk"
    assert warm.last_compile.reports == last.reports  # Tally rebuilt by load_report, not a repr
    assert isinstance(warm.last_compile.reports["tallying"], Tally)


def test_a_report_that_is_not_json_data_is_the_compiles_only(cache_dir, plugins):
    cold = jit(f, plugins=("opaque_report",))
    cold(1.0)
    assert cold.last_compile is not None and type(cold.last_compile.reports["opaque_report"]) is object
    new_process()
    warm = jit(f, plugins=("opaque_report",))
    warm(1.0)
    assert warm.last_compile is not None and warm.last_compile.hit
    assert warm.last_compile.reports == {}  # not stored: no str() of it either


def test_a_failing_load_report_names_the_plugin(cache_dir, plugins):
    jit(f, plugins=("bad_load",))(1.0)
    new_process()
    warm = jit(f, plugins=("bad_load",))
    warm(1.0)
    assert warm.last_compile is not None
    with pytest.raises(PluginError, match=r"plugin 'bad_load' failed in stage 'report' \(callback load_report"):
        _ = warm.last_compile.reports


def test_a_plugins_warning_is_shown_again_on_every_hit(cache_dir, plugins):
    with warnings.catch_warnings(record=True) as cold:
        warnings.simplefilter("always")
        jit(f, plugins=("tallying",))(1.0)
    new_process()
    with warnings.catch_warnings(record=True) as warm:
        warnings.simplefilter("always")
        g = jit(f, plugins=("tallying",))
        g(1.0)
    ours = [[(w.category, str(w.message), w.filename, w.lineno) for w in ws if w.category is SlowPathWarning]
            for ws in (cold, warm)]
    assert len(ours[0]) == 1 and ours[0] == ours[1]  # the same category, text, file and line
    assert ours[0][0][2] == __file__
    assert g.last_compile is not None and g.last_compile.hit
    assert [w["message"] for w in g.last_compile.warnings] == [ours[0][0][1]]


def test_a_kernels_reports_and_warnings(cache_dir, plugins):
    a = np.arange(4.0)
    with pytest.warns(SlowPathWarning):
        cold = kernel(plugins=("tallying",))(k)
        cold[1, 4, "cpu"](a)
    new_process()
    with pytest.warns(SlowPathWarning):
        warm = kernel(plugins=("tallying",))(k)
        warm[1, 4, "cpu"](a)
    np.testing.assert_array_equal(a, [0.0, 4.0, 8.0, 12.0])
    assert warm.last_compile is not None and warm.last_compile.hit
    assert isinstance(warm.last_compile.reports["tallying"], Tally)


def test_stored_warnings_are_plain_fields_and_malformed_ones_are_skipped():
    rows = [
        {"category": "builtins:DeprecationWarning", "message": "old", "filename": "p.py", "lineno": 3},
        {"category": f"{__name__}:SlowPathWarning", "message": "slow", "filename": "p.py", "lineno": 4},
        {"category": "no_such_module_xyz:Evil", "message": "unknown", "filename": "p.py", "lineno": 5},
        {"category": "builtins:print", "message": "not a warning class", "filename": "p.py", "lineno": 6},
        {"category": "builtins:UserWarning", "message": 7, "filename": "p.py", "lineno": 7},
        {"category": "builtins:UserWarning", "message": "m", "filename": "p.py", "lineno": "8"},
        "a string", None,
    ]
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        replay(rows)
        replay({"not": "a list"})
    assert [(w.category, str(w.message), w.lineno) for w in shown] == [
        (DeprecationWarning, "old", 3), (SlowPathWarning, "slow", 4), (UserWarning, "unknown", 5),
        (UserWarning, "not a warning class", 6)]
    assert "no_such_module_xyz" not in sys.modules  # a category is looked up, never imported


def test_only_the_compiling_threads_warnings_are_recorded():
    """Another thread's warning during a compile is shown at once and not kept with the compile's entry."""
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        with recorded_warnings() as rows:
            warnings.warn("from the compile", SlowPathWarning, stacklevel=1)
            other = threading.Thread(target=lambda: warnings.warn("from elsewhere", RuntimeWarning, stacklevel=1))
            other.start()
            other.join()
            assert [str(w.message) for w in shown] == ["from elsewhere"]  # shown as it came
    assert [(r["category"], r["message"]) for r in rows] == [(f"{__name__}:SlowPathWarning", "from the compile")]
    assert [str(w.message) for w in shown] == ["from elsewhere", "from the compile"]  # then the compile's


def test_the_instrumentation_report_is_rebuilt_on_a_hit(cache_dir):
    cold = jit(f, plugins=("instrumentation",))
    cold(1.0)
    new_process()
    warm = jit(f, plugins=("instrumentation",))
    warm(1.0)
    assert cold.last_compile is not None and warm.last_compile is not None and warm.last_compile.hit
    made, rebuilt = cold.last_compile.reports["instrumentation"], warm.last_compile.reports["instrumentation"]
    assert isinstance(rebuilt, InstrumentationReport) and rebuilt == made  # its table() works on a hit too
    assert rebuilt.stage("irgen").functions == made.stage("irgen").functions > 0


def _warn_here(text):
    warnings.warn(text, SlowPathWarning, stacklevel=1)  # one line: Python's once-per-location registry


def test_threads_record_at_once_each_its_own_warnings_and_nested_recordings_nest():
    barrier = threading.Barrier(2, timeout=30)
    found: dict[str, list] = {}

    def compile_like(name):
        with recorded_warnings() as rows:
            barrier.wait()  # both recordings open at once: neither waits for the other
            _warn_here(f"{name} warns")
            with recorded_warnings() as inner:
                _warn_here(f"{name} inner")
            found[f"{name}.inner"] = [r["message"] for r in inner]
            barrier.wait()
        found[name] = [r["message"] for r in rows]

    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        threads = [threading.Thread(target=compile_like, args=(n,)) for n in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert found == {"a": ["a warns", "a inner"], "a.inner": ["a inner"],
                     "b": ["b warns", "b inner"], "b.inner": ["b inner"]}
    assert sorted(str(w.message) for w in shown) == ["a inner", "a warns", "b inner", "b warns"]  # once each
    assert warnings.showwarning is not None and not getattr(warnings.showwarning, "func", None)  # restored


def test_the_programs_filters_apply_and_each_recording_sees_a_warning_shown_before():
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("default")  # once per location
        for _ in range(2):
            with recorded_warnings() as rows:
                _warn_here("the same text at the same line")
            assert [r["message"] for r in rows] == ["the same text at the same line"]  # in each entry
        assert len(shown) == 2  # and shown by each compile
        warnings.filterwarnings("ignore", category=SlowPathWarning)
        with recorded_warnings() as rows:
            _warn_here("ignored by the program")
        assert rows == []
        warnings.filterwarnings("error", category=SlowPathWarning)
        with pytest.raises(SlowPathWarning), recorded_warnings():
            _warn_here("an error for the program")
