"""Plugin identity in cache keys from the distribution's metadata and files: a hit imports no plugin.

Two plugins are installed as pip would (a ``*.dist-info`` with entry points) in
their own packages, ``alpha_plug`` and ``beta_plug``; ``gamma_plug`` defines
``cache_settings()`` (read from the environment), so its settings are part of
the key and it is imported on a hit to ask for them; ``zeta_plug`` inherits
the hook from another package's class. Every run is a fresh process with its
own hash seed.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gpucompiler.plugin as gp
from gpucompiler.errors import UnknownPluginError
from gpucompiler.identity import entrypoints, keys

jit_module = importlib.import_module("gpucompiler.jit")  # the module: `gpucompiler.jit` is the decorator

PLUGIN = '''
import os
import gpucompiler.plugin as gp


class {cls}(gp.Plugin):
    name = "{name}"
    version = "1.0"
    SCALE = {scale}
{extra}
'''
SETTINGS = '''
    def cache_settings(self):
        return {"mode": os.environ.get("GAMMA_MODE", "a")}
'''

ZETA_BASE = '''
import os
import gpucompiler.plugin as gp


class Base(gp.Plugin):
    version = "1.0"

    def cache_settings(self):
        return {"mode": os.environ.get("ZETA_MODE", "a")}
'''

SCRIPT = textwrap.dedent('''
    import json, sys
    import numpy as np
    from gpucompiler import jit, kernel
    from gpucompiler.cache.core import Cache
    from gpucompiler.identity import plugin_identity

    origins = []
    real = Cache.compile

    def spy(self, *a, **k):  # every compile through a cache, @jit's and kernels' alike
        result = real(self, *a, **k)
        origins.append(result.origin)
        return result

    Cache.compile = spy
    plugins = tuple(sys.argv[1].split(","))

    @jit(plugins=plugins)
    def f(x, y):
        return x * y + 1.0

    @kernel(plugins=plugins)
    def k(a):
        a[0] = a[0] * 2.0 + 1.0

    a = np.full(4, 3.0)
    k[1, 1, "cpu"](a)
    out = {"jit": f(2.0, 3.5), "kernel": float(a[0]), "origins": origins,
           "imported": sorted(m for m in sys.modules if m.split(".")[0].endswith("_plug")),
           "identity": plugin_identity(plugins), "metadata": "importlib.metadata" in sys.modules}
    print(json.dumps(out))
''')


@pytest.fixture
def installed(tmp_path):
    """A site directory with the three plugins' packages and their distribution's entry points."""
    site = tmp_path / "site"
    for name, cls, extra in (("alpha", "Alpha", ""), ("beta", "Beta", ""), ("gamma", "Gamma", SETTINGS)):
        package = site / f"{name}_plug"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "plugin.py").write_text(PLUGIN.format(cls=cls, name=f"{name}_plug", scale=1, extra=extra))
    zeta = site / "zeta_plug"  # its class inherits cache_settings from another top-level package's
    zeta.mkdir()
    (zeta / "__init__.py").write_text("")
    (zeta / "plugin.py").write_text("from zeta_base import Base\n\n\nclass Zeta(Base):\n    name = 'zeta_plug'\n")
    (site / "zeta_base.py").write_text(ZETA_BASE)
    delta = site / "delta_plug"  # its entry point names the class where the package re-exports it
    delta.mkdir()
    (delta / "__init__.py").write_text("from .impl import Delta\n")
    (delta / "impl.py").write_text(PLUGIN.format(cls="Delta", name="delta_plug", scale=1, extra=""))
    info = site / "plug_dist-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plug_dist\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[gpucompiler.plugins]\n" + "".join(f"{n}_plug = {n}_plug.plugin:{c}\n"
                                            for n, c in (("alpha", "Alpha"), ("beta", "Beta"), ("gamma", "Gamma"),
                                                         ("zeta", "Zeta")))
        + "delta_plug = delta_plug:Delta\n")
    return site


def _run(site: Path, tmp_path: Path, plugins: str, seed: int, **env: str) -> dict:
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path]),
               "GPUC_CACHE_DIR": str(tmp_path / "cache"), "PYTHONHASHSEED": str(seed), **env}
    done = subprocess.run([sys.executable, "-c", SCRIPT, plugins], env=environ, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_cached_jit_function_and_kernel_hit_without_importing_their_plugins(installed, tmp_path):
    cold = _run(installed, tmp_path, "alpha_plug,beta_plug", seed=1)
    assert cold["origins"] == ["compiled", "compiled"]
    assert cold["imported"] == ["alpha_plug", "alpha_plug.plugin", "beta_plug", "beta_plug.plugin"]
    warm = _run(installed, tmp_path, "alpha_plug,beta_plug", seed=2)
    assert warm["origins"] == ["disk", "disk"]
    assert warm["imported"] == []  # nothing of either plugin, not even its package's __init__
    # the entry points read without importlib.metadata (~18 ms to import) when cold, from their memo when warm
    assert not cold["metadata"] and not warm["metadata"]
    assert warm["jit"] == cold["jit"] == 2.0 * 3.5 + 1.0
    assert warm["kernel"] == cold["kernel"] == 3.0 * 2.0 + 1.0
    assert warm["identity"] == cold["identity"]  # stable across processes and hash seeds
    assert [i[1] for i in warm["identity"]] == ["plug_dist==1.0", "plug_dist==1.0"]


def test_editing_one_plugin_changes_its_key_only(installed, tmp_path):
    before = {i[0]: i for i in _run(installed, tmp_path, "alpha_plug,beta_plug", seed=3)["identity"]}
    source = installed / "alpha_plug" / "plugin.py"
    source.write_text(source.read_text().replace("SCALE = 1", "SCALE = 2"))  # same size: a changed byte
    after = _run(installed, tmp_path, "alpha_plug,beta_plug", seed=4)
    ident = {i[0]: i for i in after["identity"]}
    assert ident["alpha_plug"][3] != before["alpha_plug"][3]
    assert ident["beta_plug"] == before["beta_plug"]
    assert after["origins"] == ["compiled", "compiled"]  # the key names alpha: a new entry
    # a new file of the package that the plugin does not import leaves its key; once imported, it is covered
    (installed / "alpha_plug" / "helpers.py").write_text("X = 1\n")
    again = {i[0]: i for i in _run(installed, tmp_path, "alpha_plug", seed=5)["identity"]}
    assert again["alpha_plug"][3] == ident["alpha_plug"][3]
    source.write_text("from . import helpers\n" + source.read_text())
    imports = {i[0]: i for i in _run(installed, tmp_path, "alpha_plug", seed=5)["identity"]}
    assert imports["alpha_plug"][3] != ident["alpha_plug"][3]
    (installed / "alpha_plug" / "helpers.py").write_text("X = 2\n")
    edited = {i[0]: i for i in _run(installed, tmp_path, "alpha_plug", seed=5)["identity"]}
    assert edited["alpha_plug"][3] != imports["alpha_plug"][3]


def test_a_plugin_with_cache_settings_is_asked_for_them_on_a_hit(installed, tmp_path):
    first = _run(installed, tmp_path, "gamma_plug", seed=6)
    warm = _run(installed, tmp_path, "gamma_plug", seed=7)
    assert warm["origins"] == ["disk", "disk"]
    assert "gamma_plug.plugin" in warm["imported"]  # its settings may differ per process: asked each time
    other = _run(installed, tmp_path, "gamma_plug", seed=8, GAMMA_MODE="b")
    assert other["origins"] == ["compiled", "compiled"]
    assert [first["identity"][0][2], other["identity"][0][2]] == [{"mode": "a"}, {"mode": "b"}]


def _forget_memos(tmp_path: Path) -> None:
    """The cache's entries kept, its memos of code digests and plugins' hooks removed: entries that came
    from elsewhere (a shared tier, a copied directory), read by a process that finds everything anew."""
    shutil.rmtree(tmp_path / "cache" / "code")


def test_a_hit_without_memos_imports_no_plugin(installed, tmp_path):
    """Each plugin's class is read from its source (``delta_plug``'s through its package's re-export) to
    learn that it defines no ``cache_settings`` (before: imported to ask it)."""
    cold = _run(installed, tmp_path, "alpha_plug,delta_plug", seed=9)
    _forget_memos(tmp_path)
    warm = _run(installed, tmp_path, "alpha_plug,delta_plug", seed=10)
    assert warm["origins"] == ["disk", "disk"]
    assert warm["imported"] == []
    assert warm["identity"] == cold["identity"]
    assert warm["jit"] == cold["jit"] == 2.0 * 3.5 + 1.0 and warm["kernel"] == cold["kernel"] == 7.0


@pytest.mark.parametrize("plugin,variable", [("gamma_plug", "GAMMA_MODE"), ("zeta_plug", "ZETA_MODE")])
def test_without_memos_a_plugin_that_may_define_cache_settings_is_asked_for_them(installed, tmp_path, plugin,
                                                                                 variable):
    """``gamma_plug`` defines the hook; ``zeta_plug`` inherits it from a class of another package (its own
    files never name it): each is imported and asked, and other settings compile anew."""
    first = _run(installed, tmp_path, plugin, seed=11)
    _forget_memos(tmp_path)
    other = _run(installed, tmp_path, plugin, seed=12, **{variable: "b"})
    assert other["origins"] == ["compiled", "compiled"] and f"{plugin}.plugin" in other["imported"]
    _forget_memos(tmp_path)
    again = _run(installed, tmp_path, plugin, seed=13)
    assert again["origins"] == ["disk", "disk"]
    assert [first["identity"][0][2], other["identity"][0][2], again["identity"][0][2]] == \
        [{"mode": "a"}, {"mode": "b"}, {"mode": "a"}]


def test_an_entry_point_or_a_version_edited_in_place_is_seen_by_the_next_process(installed, tmp_path):
    """The memo of the entry points is stamped with each distribution's metadata files: an edit that
    keeps the directories as they were (no file added or removed) still reaches the key."""
    before = _run(installed, tmp_path, "alpha_plug", seed=14)
    (installed / "alpha_plug" / "other.py").write_text(PLUGIN.format(cls="Alpha", name="alpha_plug", scale=3,
                                                                     extra=""))
    info = installed / "plug_dist-1.0.dist-info"
    points = info / "entry_points.txt"
    points.write_text(points.read_text().replace("alpha_plug.plugin:Alpha", "alpha_plug.other:Alpha"))
    after = _run(installed, tmp_path, "alpha_plug", seed=15)
    assert after["origins"] == ["compiled", "compiled"]
    assert after["identity"][0][3] != before["identity"][0][3]  # the code of alpha_plug.other
    metadata = info / "METADATA"
    metadata.write_text(metadata.read_text().replace("Version: 1.0", "Version: 1.1"))
    bumped = _run(installed, tmp_path, "alpha_plug", seed=16)
    assert bumped["identity"][0][1] == "plug_dist==1.1" and bumped["origins"] == ["compiled", "compiled"]
    _forget_memos(tmp_path)
    fresh = _run(installed, tmp_path, "alpha_plug", seed=17)
    assert fresh["identity"] == bumped["identity"] and fresh["origins"] == ["disk", "disk"]


def test_covered_files_are_what_the_entry_points_module_runs(installed, monkeypatch):
    monkeypatch.syspath_prepend(str(installed))
    assert keys.covered_files("alpha_plug.plugin") == ["__init__.py", "plugin.py"]
    assert keys.covered_files("alpha_plug") == ["__init__.py"]
    assert keys.covered_files("delta_plug") == ["__init__.py", "impl.py"]  # the class it re-exports
    assert keys.covered_files("no_such_plug.plugin") is None
    assert "alpha_plug" not in sys.modules


GRADIENT = textwrap.dedent('''
    import json, sys
    import numpy as np
    from gpucompiler import jit
    from gpucompiler.cache.core import Cache
    from enzyme_plugin import Active, Const, Reverse, autodiff

    origins = []
    real = Cache.compile

    def spy(self, *a, **k):
        result = real(self, *a, **k)
        origins.append(result.origin)
        return result

    Cache.compile = spy

    def loss(w, b, xs, ys, n):
        acc = 0.0
        for i in range(n):
            r = w * xs[i] + b - ys[i]
            acc += r * r
        return acc / n

    def grad_loss(w, b, xs, ys, n):
        return autodiff(Reverse, loss, Active(w), Active(b), Const(xs), Const(ys), Const(n))

    before = set(sys.modules)
    g = jit(grad_loss)
    xs = np.linspace(0.0, 1.0, 7)
    ys = 3.0 * xs + 1.0
    dw, db = g(2.0, 0.5, xs, ys, 7)
    print(json.dumps({"grad": [dw, db], "origins": origins, "xs": xs.tolist(), "ys": ys.tolist(),
                      "imported": sorted(m for m in set(sys.modules) - before if m.startswith("enzyme_plugin"))}))
''')


def test_a_cached_gradient_returning_a_tuple_hits_without_the_enzyme_plugin_or_inference(tmp_path):
    """A tuple of scalars returned is rebuilt from the dependency record: the enzyme plugin, which
    only inference and compiles need, stays unimported (before: inferred again, importing it)."""
    env = {**os.environ, "GPUC_CACHE_DIR": str(tmp_path / "cache")}
    runs = []
    for seed in (1, 2):
        done = subprocess.run([sys.executable, "-c", GRADIENT], env={**env, "PYTHONHASHSEED": str(seed)},
                              capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    assert cold["origins"] == ["compiled"] and "enzyme_plugin.plugin" in cold["imported"]
    assert warm["origins"] == ["disk"]
    assert warm["imported"] == []  # not the plugin's class, its AD engine, nor its rules
    xs, ys = cold["xs"], cold["ys"]
    residuals = [2.0 * x + 0.5 - y for x, y in zip(xs, ys)]
    exact = [sum(2.0 * r * x for r, x in zip(residuals, xs)) / 7, sum(2.0 * r for r in residuals) / 7]
    assert warm["grad"] == cold["grad"]
    assert warm["grad"] == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("text", ["float64", "none", "tuple()", "tuple(float64)", "tuple(int64, bool)",
                                  "tuple(tuple(int32, float32), uint8)", "array(float64, 1d, C)",
                                  "array(int32, 3d, A, readonly, managed)", "tuple(array(float64, 1d, C), float64)"])
def test_recorded_return_types_round_trip(text):
    rebuilt = jit_module._recorded_restype(text)
    assert rebuilt is not None and repr(rebuilt) == text


@pytest.mark.parametrize("text", [None, "", "tuple(float64, float64", "tuple(float64,, int64)", "tuple(Record(x))",
                                  "array(float64, 1d)", "array(none, 1d, C)", "array(float64, xd, C)",
                                  "array(float64, 1d, C, weird)", "array(Record(x), 1d, C)"])
def test_other_return_types_are_inferred(text):
    assert jit_module._recorded_restype(text) is None


@pytest.fixture
def fresh_registry(installed, tmp_path, monkeypatch):
    """The installed plugins on ``sys.path`` and a registry built anew (the old one back afterwards)."""
    monkeypatch.syspath_prepend(str(installed))
    monkeypatch.setenv("GPUC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(gp, "_manager", None)
    keys.plugin_code.cache_clear()
    yield installed
    keys.plugin_code.cache_clear()
    for name in [m for m in sys.modules if m.split(".")[0].endswith("_plug")]:
        del sys.modules[name]


def test_a_plugin_registered_by_hand_in_place_of_an_installed_one_has_its_own_identity(fresh_registry):
    installed_one = keys.plugin_identity(["alpha_plug"])
    assert installed_one[0][1] == "plug_dist==1.0"

    class Impostor(gp.Plugin):
        name = "alpha_plug"
        version = "1.0"

    gp.register(Impostor, replace=True)  # loads the installed one first, then replaces it
    replaced = keys.plugin_identity(["alpha_plug"])
    assert replaced[0][:3] == ["alpha_plug", "1.0", None] and replaced != installed_one
    assert replaced[0][3] == keys.plugin_code(__name__)  # this test module's file, not alpha_plug's


def test_an_unknown_plugin_name_in_a_key_is_an_error(fresh_registry):
    with pytest.raises(UnknownPluginError):
        keys.plugin_identity(["no_such_plugin"])


def test_the_identity_is_the_same_before_and_after_the_plugin_is_loaded(fresh_registry):
    """Also for an entry point naming a class its package re-exports (``delta_plug:Delta``, defined in
    ``delta_plug.impl``): the instance the entry point loaded is recognised as the installed plugin."""
    before = keys.plugin_identity(["alpha_plug", "delta_plug"])
    loaded = gp.enabled(["alpha_plug", "delta_plug"])
    assert [type(p).__module__ for p in loaded] == ["alpha_plug.plugin", "delta_plug.impl"]
    assert keys.plugin_identity(["alpha_plug", "delta_plug"]) == before
    assert [i[1] for i in before] == ["plug_dist==1.0", "plug_dist==1.0"]


def test_a_registry_read_before_an_edit_never_reaches_the_memo(fresh_registry, monkeypatch):
    """A long-running process read the entry points before the distribution changed: it keeps naming
    what it loads, and the memo that other processes trust gets what the files say now."""
    assert (entrypoints.installed("alpha_plug") or [None, None])[1] == "alpha_plug.plugin"
    (fresh_registry / "alpha_plug" / "other.py").write_text(PLUGIN.format(cls="Alpha", name="alpha_plug", scale=3,
                                                                          extra=""))
    points = fresh_registry / "plug_dist-1.0.dist-info" / "entry_points.txt"
    points.write_text(points.read_text().replace("alpha_plug.plugin:Alpha", "alpha_plug.other:Alpha"))
    assert (entrypoints.installed("alpha_plug") or [None, None])[1] == "alpha_plug.plugin"  # this registry's

    def refuse(name):
        raise AssertionError("the memo was not used")

    monkeypatch.setattr(gp, "entry_point", refuse)  # another process: the memo alone
    assert (entrypoints.installed("alpha_plug") or [None, None])[1] == "alpha_plug.other"
