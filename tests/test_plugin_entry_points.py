"""The registry and the cache key share one read of the installed entry points (gpucompiler.discovery).

A process reads the distributions once: the key's entry point (identity.entrypoints.installed) and
the plugin the registry loads come from the same read, so they are the same entry point also when
two distributions declare one name; the memo of the key's entry points holds that read's stamps.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
import zipfile
from pathlib import Path

import pytest

import gpucompiler.plugin as gp
from gpucompiler import discovery
from gpucompiler.errors import PluginError
from gpucompiler.identity import entrypoints, keys

PLUGIN = "import gpucompiler.plugin as gp\n\n\nclass P(gp.Plugin):\n    name = {name!r}\n    version = '1.0'\n"


def install(site: Path, dist: str, points: str, modules: dict[str, str] = {}) -> Path:  # noqa: B006
    """A distribution ``dist`` in ``site`` with ``entry_points.txt`` text ``points`` and the plugin modules
    ``modules`` (module name -> plugin name)."""
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(points)
    for module, name in modules.items():
        (site / f"{module}.py").write_text(PLUGIN.format(name=name))
    return info


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A registry and a cache directory of their own (a fresh process), and the read of the entry points
    counted."""
    monkeypatch.setattr(gp, "_manager", None)
    monkeypatch.setenv("GPUC_CACHE_DIR", str(tmp_path / "cache"))
    keys.plugin_code.cache_clear()
    reads = []
    real = discovery.scan
    monkeypatch.setattr(discovery, "scan", lambda group: reads.append(group) or real(group))

    def refuse(**kwargs):
        raise AssertionError("importlib.metadata.entry_points was called")

    monkeypatch.setattr(importlib.metadata, "entry_points", refuse)
    before = set(sys.modules)
    yield reads
    keys.plugin_code.cache_clear()
    for name in set(sys.modules) - before:
        if name.startswith("ep_test_"):
            del sys.modules[name]


def test_the_key_and_the_registry_take_one_read_of_the_distributions(fresh, tmp_path, monkeypatch):
    install(tmp_path / "site", "ep_dist", "[gpucompiler.plugins]\nep_one = ep_test_one:P\n", {"ep_test_one": "ep_one"})
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    found = entrypoints.installed("ep_one")
    assert found == entrypoints.Installed("ep_one", "ep_test_one", "P", "ep_dist==1.0")
    assert [type(p).__module__ for p in gp.enabled(["ep_one"])] == ["ep_test_one"]
    assert keys.plugin_identity(["ep_one"])[0][:2] == ["ep_one", "ep_dist==1.0"]
    assert fresh == [gp.ENTRY_POINT_GROUP]  # one read; importlib.metadata never asked
    monkeypatch.setattr(gp, "_manager", None)  # the next process: the memo, no read
    assert entrypoints.installed("ep_one") == found and entrypoints.installed("ep_absent") is None
    assert fresh == [gp.ENTRY_POINT_GROUP]


def test_the_key_names_the_entry_point_the_registry_loads_when_two_distributions_declare_one_name(fresh, tmp_path,
                                                                                                 monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    install(first, "ep_dist_a", "[gpucompiler.plugins]\nep_dup = ep_test_a:P\n", {"ep_test_a": "ep_dup"})
    install(second, "ep_dist_b", "[gpucompiler.plugins]\nep_dup = ep_test_b:P\n", {"ep_test_b": "ep_dup"})
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    importlib.invalidate_caches()
    named = entrypoints.installed("ep_dup")
    loaded = gp.enabled(["ep_dup"])[0]
    assert named is not None and (named.module, named.dist) == (type(loaded).__module__, "ep_dist_a==1.0") == \
        ("ep_test_a", "ep_dist_a==1.0")
    monkeypatch.setattr(gp, "_manager", None)  # from the memo: the same one
    assert entrypoints.installed("ep_dup") == named


def test_a_malformed_line_of_another_distribution_breaks_neither_the_key_nor_the_plugins(fresh, tmp_path,
                                                                                         monkeypatch):
    site = tmp_path / "site"
    install(site, "ep_dist", "[gpucompiler.plugins]\nep_ok = ep_test_ok:P\n", {"ep_test_ok": "ep_ok"})
    install(site, "ep_other", "[console_scripts]\nthis line has no equals sign\n")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    assert entrypoints.installed("ep_ok") == entrypoints.Installed("ep_ok", "ep_test_ok", "P", "ep_dist==1.0")
    assert [p.name for p in gp.enabled(["ep_ok"])] == ["ep_ok"]


def test_a_malformed_entry_point_value_is_a_plugin_error_naming_it(fresh, tmp_path, monkeypatch):
    install(tmp_path / "site", "ep_dist", "[gpucompiler.plugins]\nep_bad = not a module reference\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    with pytest.raises(PluginError, match=r"ep_bad.*discovery.*not a module reference"):
        entrypoints.installed("ep_bad")
    with pytest.raises(PluginError, match=r"ep_bad.*discovery.*not 'module' or 'module:attribute'"):
        gp.enabled(["ep_bad"])


def test_an_entry_points_file_added_in_place_reaches_the_next_process(fresh, tmp_path, monkeypatch):
    """The memo's stamp holds each metadata directory: a file created in one (no directory of sys.path
    changes) makes the next process read the distributions again."""
    info = install(tmp_path / "site", "ep_dist", "", {"ep_test_late": "ep_late"})
    (info / "entry_points.txt").unlink()
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    assert entrypoints.installed("ep_late") is None
    (info / "entry_points.txt").write_text("[gpucompiler.plugins]\nep_late = ep_test_late:P\n")
    monkeypatch.setattr(gp, "_manager", None)
    assert entrypoints.installed("ep_late") == entrypoints.Installed("ep_late", "ep_test_late", "P", "ep_dist==1.0")
    assert len(fresh) == 2


def test_a_version_edited_in_place_reaches_the_next_process(fresh, tmp_path, monkeypatch):
    info = install(tmp_path / "site", "ep_dist", "[gpucompiler.plugins]\nep_v = ep_test_v:P\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    assert (entrypoints.installed("ep_v") or entrypoints.Installed("", "", None, None)).dist == "ep_dist==1.0"
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ep_dist\nVersion: 1.1\n")
    monkeypatch.setattr(gp, "_manager", None)
    assert (entrypoints.installed("ep_v") or entrypoints.Installed("", "", None, None)).dist == "ep_dist==1.1"


def test_a_read_through_importlib_metadata_is_made_once_and_not_memoised(tmp_path, monkeypatch):
    """A zip on ``sys.path``: importlib.metadata lists its distributions, once per process; no memo, and no
    fresh read for one on each later key."""
    monkeypatch.setattr(gp, "_manager", None)
    monkeypatch.setenv("GPUC_CACHE_DIR", str(tmp_path / "cache"))
    zipped = tmp_path / "dists.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("ep_zipped-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: ep_zipped\nVersion: 1.0\n")
        z.writestr("ep_zipped-1.0.dist-info/entry_points.txt", "[gpucompiler.plugins]\nep_zip = ep_test_zip:P\n")
    monkeypatch.syspath_prepend(str(zipped))
    calls = []
    real = importlib.metadata.entry_points
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: calls.append(kw) or real(**kw))
    for _ in range(3):
        assert entrypoints.installed("ep_zip") == entrypoints.Installed("ep_zip", "ep_test_zip", "P", "ep_zipped==1.0")
    assert len(calls) == 1
    assert not list((tmp_path / "cache").rglob("entry-points-*.json"))


def test_a_plugin_in_a_directory_added_to_sys_path_later_is_found_by_its_key_and_its_job(fresh, tmp_path,
                                                                                          monkeypatch):
    install(tmp_path / "site", "ep_dist", "[gpucompiler.plugins]\nep_later = ep_test_later:P\n",
            {"ep_test_later": "ep_later"})
    assert entrypoints.installed("ep_later") is None and gp.entry_point("ep_later") is None
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    assert [type(p).__module__ for p in gp.enabled(["ep_later"])] == ["ep_test_later"]
    assert entrypoints.installed("ep_later") == entrypoints.Installed("ep_later", "ep_test_later", "P", "ep_dist==1.0")
    assert fresh[:2] == [gp.ENTRY_POINT_GROUP] * 2  # read again once sys.path changed
    gp.enabled(["ep_later"])
    assert gp.entry_point("ep_later") is not None
    assert len(fresh) == 3  # and a third for the key's memo (the registry's read was not made by that key)
