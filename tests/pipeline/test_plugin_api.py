"""The plugin interface: declaration, discovery, enabling, ordering, markers, errors, job keys."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import gpucompiler.plugin as gp
from gpucompiler.errors import ConfigError, PluginError, UnknownPluginError, UnknownStageError
from gpucompiler.identity import job_key
from gpucompiler.pipeline import compile

from .conftest import make_job

MARKED_IR = """\
declare i32 @__marker(i32)

define i32 @add(i32 %a, i32 %b) {
  %s = add i32 %a, %b
  ret i32 %s
}

define i32 @user(i32 %a) {
  %r = call i32 @__marker(i32 %a)
  ret i32 %r
}
"""


def recorder(pname: str, log: list, order: int = 0):
    """A plugin class that appends (plugin, callback) to ``log`` from two ``post_irgen`` callbacks."""

    class Recorder(gp.Plugin):
        name = pname
        version = "1"

        @gp.callback("post_irgen", order=order)
        def second_alphabetically_first_declared(self, job, module):
            log.append((pname, "first"))

        @gp.callback("post_irgen", order=order)
        def a_declared_second(self, module):
            log.append((pname, "second"))

    return Recorder


def test_unknown_stage_lists_hook_points():
    with pytest.raises(UnknownStageError) as err:
        gp.callback("optimise")
    assert "optimize.early" in str(err.value) and "post_ad" in err.value.known


def test_unknown_plugin_lists_discovered(register):
    register(recorder("known_one", []))
    with pytest.raises(UnknownPluginError) as err:
        compile(make_job(plugins=("nope",)))
    assert "known_one" in err.value.known and "mock_enzyme" in err.value.known
    assert "'nope'" in str(err.value)


def test_entry_points_are_discovered():
    found = gp.discovered()
    assert {"mock_enzyme", "instrumentation"} <= set(found)
    assert found["instrumentation"].version == "1.0"


def test_disabled_plugins_do_not_run(register):
    log: list = []
    register(recorder("quiet", log))
    compile(make_job())
    assert log == []


def test_marker_gated_callback_runs_only_with_marker(register):
    seen: list = []

    class Gated(gp.Plugin):
        name = "gated"
        version = "1"

        @gp.callback("pre_ad", markers=("__marker",))
        def on_marker(self, job, module):
            seen.append(sorted(module.function_names()))

    register(Gated)
    compile(make_job(plugins=("gated",)))
    assert seen == []
    compile(make_job(MARKED_IR, validate=False, plugins=("gated",)))
    assert len(seen) == 1 and "__marker" in seen[0]


def test_order_by_order_then_name_then_declaration(register):
    log: list = []
    for cls in (recorder("zeta", log), recorder("alpha", log), recorder("early", log, order=-5)):
        register(cls)
    compile(make_job(plugins=("zeta", "alpha", "early")))
    assert log == [("early", "first"), ("early", "second"), ("alpha", "first"), ("alpha", "second"),
                   ("zeta", "first"), ("zeta", "second")]


def test_order_is_independent_of_registration_order(register):
    orders = []
    for names in (("b", "a", "c"), ("c", "a", "b")):
        log: list = []
        for n in names:
            register(recorder(n, log), replace=True)
        compile(make_job(plugins=names))
        orders.append(log)
    assert orders[0] == orders[1] and [p for p, _ in orders[0][::2]] == ["a", "b", "c"]


def test_order_is_the_same_in_every_process():
    script = textwrap.dedent("""
        import random, sys
        sys.path.insert(0, "tests")
        import gpucompiler.plugin as gp
        from gpucompiler.pipeline import compile
        from pipeline.conftest import make_job
        from pipeline.test_plugin_api import recorder
        log = []
        names = ["p%d" % i for i in range(6)]
        random.shuffle(names)
        for n in names:
            gp.register(recorder(n, log, order=int(n[1]) % 2))
        compile(make_job(plugins=names))
        print(log)
    """)
    outputs = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                              env={"PYTHONHASHSEED": str(seed), "PATH": ""}).stdout for seed in (1, 2)}
    assert len(outputs) == 1
    assert outputs.pop().startswith("[('p0', 'first'), ('p0', 'second'), ('p2', 'first')")


def test_failing_callback_raises_plugin_error(register):
    class Broken(gp.Plugin):
        name = "broken"
        version = "1"

        @gp.callback("optimize.late")
        def explode(self, job, module):
            raise RuntimeError("boom")

    register(Broken)
    with pytest.raises(PluginError) as err:
        compile(make_job(plugins=("broken",)))
    e = err.value
    assert (e.plugin, e.stage, e.callback) == ("broken", "optimize.late", "explode")
    assert isinstance(e.cause, RuntimeError) and "boom" in str(e)


def test_callback_signature_is_checked_at_registration():
    class BadArgs(gp.Plugin):
        name = "bad_args"
        version = "1"

        @gp.callback("ad")
        def rewrite(self, job, module, extra):
            pass

    with pytest.raises(PluginError) as err:
        gp.register(BadArgs)
    assert (err.value.plugin, err.value.stage, err.value.callback) == ("bad_args", "ad", "rewrite")
    assert "bad_args" not in gp.discovered()


def test_plugin_identity_is_checked(register):
    class Nameless(gp.Plugin):
        version = "1"

    with pytest.raises(ConfigError):
        gp.register(Nameless)
    register(recorder("twice", []))
    with pytest.raises(ConfigError, match="replace=True"):
        gp.register(recorder("twice", []))


def test_plugin_names_and_versions_enter_the_job_key(register):
    register(recorder("keyed", []))
    plain, with_plugin = job_key(make_job()), job_key(make_job(plugins=("keyed",)))
    assert plain != with_plugin

    class Keyed2(gp.Plugin):
        name = "keyed"
        version = "2"

    register(Keyed2, replace=True)
    assert job_key(make_job(plugins=("keyed",))) not in (plain, with_plugin)


_FIRST_USE_ON_THREADS = """
import threading
from gpucompiler import plugin
barrier, found = threading.Barrier(8), []
def use():
    barrier.wait()
    (p,) = plugin.enabled(["enzyme"])
    found.append((p, len(plugin.callbacks([p], "link_deferred"))))
threads = [threading.Thread(target=use) for _ in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
assert len({id(p) for p, _ in found}) == 1 and len({n for _, n in found}) == 1 and found[0][1] > 0, found
"""


def test_threads_using_the_registry_first_at_once_share_one_plugin_instance():
    # a fresh process: the registry is built by whichever thread comes first, the others wait for it
    # (two registries gave a thread a plugin whose callbacks were not found: markers left unlowered)
    for _ in range(3):
        subprocess.run([sys.executable, "-c", _FIRST_USE_ON_THREADS], check=True, timeout=120)


_KERNEL_WITHOUT_INSTALLED_PLUGINS = """
import sys
import numpy as np
from gpucompiler import device as gd, jit, kernel

@kernel
def scale(x, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = 2.0 * x[i]

def twice(a):
    return 2 * a

x, out = np.arange(5.0), np.zeros(5)
scale[1, 8, "cpu"](x, out)
assert list(out) == [0.0, 2.0, 4.0, 6.0, 8.0] and jit(twice)(21) == 42
print(sorted(m for m in ("enzyme_plugin", "gpucompiler_plugins") if m in sys.modules))
"""


def test_a_job_loads_only_the_installed_plugins_it_enables(tmp_path):
    # the grid emulation's plugin is built in: its kernels and plain @jit functions import no installed
    # plugin (loading every entry point cost a first launch more than its compile)
    script = tmp_path / "first_launch.py"
    script.write_text(_KERNEL_WITHOUT_INSTALLED_PLUGINS)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "GPUC_CACHE": "off"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]"]
    assert "enzyme" in gp.discovered() and "enzyme" in [p.name for p in gp.enabled(["enzyme"])]


def test_entry_points_are_looked_for_once_per_process(monkeypatch):
    # the compile service asks for the discovered plugins per request: a scan of the installed
    # distributions each time made it time out under load
    import importlib.metadata

    from gpucompiler import discovery

    gp.discovered()
    scans = []
    real = importlib.metadata.entry_points
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: scans.append(kw) or real(**kw))
    real_scan = discovery.scan
    monkeypatch.setattr(discovery, "scan", lambda group: scans.append(group) or real_scan(group))
    for _ in range(3):
        assert {"mock_enzyme", "instrumentation"} <= set(gp.discovered())
        assert [p.name for p in gp.enabled(["instrumentation"])] == ["instrumentation"]
        with pytest.raises(UnknownPluginError):
            gp.enabled(["surely_not_installed"])
        assert gp.entry_point("instrumentation") is not None and gp.entry_point("surely_not_installed") is None
    assert scans == []
