"""Many processes on one cache directory; keys are the same in every process and cover the config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import attrs
import pytest

import gpucompiler.plugin as gp
from gpucompiler.identity.codeprint import code_digest
from gpucompiler.cache import DiskTier, decode, digest, key_document
from tests.cache import jobs
from tests.cache.servers import ROOT

WORKER = textwrap.dedent("""
    import json, os, sys, time
    from pathlib import Path
    from tests.cache import jobs
    from gpucompiler.cache import key_document, digest
    from gpucompiler.cache.default import compile_cached
    go = Path(sys.argv[1])
    deadline = time.monotonic() + 30
    while not go.exists() and time.monotonic() < deadline:   # start together
        time.sleep(0.002)
    res = compile_cached(jobs.job(50), emit=("obj",))
    print(json.dumps({"origin": res.origin, "value": jobs.run(res, 50), "key": res.key}))
""")


def test_concurrent_processes_compile_once_and_never_tear(cache_env, tmp_path):
    go = tmp_path / "go"
    env = {**os.environ, "GPUC_CACHE_DIR": str(cache_env), "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(go)], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(6)]
    import time
    time.sleep(1.0)  # let the interpreters import
    go.write_text("go")
    answers = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        answers.append(json.loads(out.strip().splitlines()[-1]))
    origins = sorted(a["origin"] for a in answers)
    assert origins == ["compiled"] + ["disk"] * 5
    assert len({a["key"] for a in answers}) == 1
    assert all(a["value"] == pytest.approx(jobs.expected(50), rel=1e-12) for a in answers)
    disk = DiskTier(cache_env)
    files = disk.files()
    assert len(files) == 1
    decode(disk.path(files[0][0]).read_bytes(), "check", expect_key=files[0][0])  # whole, verified
    leftovers = [p for p in (cache_env / "entries").rglob(".tmp-*")]
    assert leftovers == []


def test_key_is_equal_across_processes_and_hash_seeds():
    code = "from tests.cache import jobs; from gpucompiler.cache import key_document, digest; " \
           "print(digest(key_document(jobs.job(7))))"
    keys = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        keys.add(subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                                text=True, timeout=60, check=True).stdout.strip())
    assert keys == {digest(key_document(jobs.job(7)))}


def test_key_document_covers_config_target_machine_versions():
    base = key_document(jobs.job(0))
    assert base["llvm"] and base["gpucompiler"] and base["machine"]["cpu"]
    assert base["source"] == jobs.job(0).source.fingerprint()
    others = [jobs.job(1), jobs.job(0, opt_level=3),
              attrs.evolve(jobs.job(0), config=attrs.evolve(jobs.job(0).config, kernel=True))]
    assert len({digest(key_document(j)) for j in [jobs.job(0), *others]}) == 4


class _Versioned(gp.Plugin):
    name = "cache_test_plugin"
    version = "1.0"
    mode = "a"

    def cache_settings(self):
        return {"mode": self.mode}


def test_key_covers_plugin_name_version_and_settings():
    plugin = gp.register(_Versioned, replace=True)
    try:
        job = attrs.evolve(jobs.job(0), config=attrs.evolve(jobs.job(0).config, plugins=("cache_test_plugin",)))
        k1 = digest(key_document(job))
        (identity,) = key_document(job)["plugins"]
        assert identity[:3] == ["cache_test_plugin", "1.0", {"mode": "a"}]
        assert identity[3] == code_digest(__name__)  # the plugin's own source file
        plugin.mode = "b"
        k2 = digest(key_document(job))
        type(plugin).version = "2.0"
        k3 = digest(key_document(job))
        assert len({k1, k2, k3, digest(key_document(jobs.job(0)))}) == 4
    finally:
        type(plugin).version = "1.0"
        gp.unregister("cache_test_plugin")


def test_key_covers_the_compilers_own_code(tmp_path, monkeypatch):
    """An edited compiler (same version number) never reuses another build's entries."""
    import importlib
    import sys

    import gpucompiler.identity.codeprint as codeprint

    package = tmp_path / "fakepkg"
    package.mkdir()
    (package / "__init__.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("GPUC_CACHE_DIR", str(tmp_path / "cache"))
    importlib.import_module("fakepkg")
    try:
        first = codeprint.code_digest("fakepkg")
        codeprint.code_digest.cache_clear()
        assert codeprint.code_digest("fakepkg") == first  # memoised under the files' stamp
        assert list((tmp_path / "cache" / "code").iterdir())
        (package / "extra.py").write_text("Y = 2\n")  # a module the running code would import
        codeprint.code_digest.cache_clear()
        assert codeprint.code_digest("fakepkg") != first
    finally:
        sys.modules.pop("fakepkg", None)
        codeprint.code_digest.cache_clear()
    assert key_document(jobs.job(0))["gpucompiler"][1] == codeprint.code_digest("gpucompiler")


def test_ptx_keys_cover_the_libdevice_in_use(libdevice_path, tmp_path, monkeypatch):
    """PTX linked against one libdevice is never served for another."""
    import shutil

    from gpucompiler import CompilerConfig, CompilerJob, LLVMSource
    from gpucompiler.targets import PTXTarget
    from gpucompiler.targets import libdevice

    job = CompilerJob(LLVMSource("define void @k() {\n  ret void\n}\n", "k"), CompilerConfig(target=PTXTarget()))
    first = digest(key_document(job))
    other = tmp_path / "libdevice.10.bc"
    shutil.copy(libdevice_path, other)
    with open(other, "ab") as fh:
        fh.write(b"\0" * 4)  # another build of the library
    monkeypatch.setenv("GPUC_LIBDEVICE", str(other))
    for cached in (libdevice._bitcode, libdevice.libdevice_digest):
        cached.cache_clear()
    from gpucompiler import toolchain

    toolchain.find_libdevice.cache_clear()
    try:
        assert digest(key_document(job)) != first
    finally:
        monkeypatch.undo()
        for cached in (libdevice._bitcode, libdevice.libdevice_digest, toolchain.find_libdevice):
            cached.cache_clear()
    assert digest(key_document(job)) == first
