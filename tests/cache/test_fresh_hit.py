"""The fresh-process hit path: the code-digest stamp, the loader made in the background."""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

import gpucompiler.identity.codeprint as codeprint
from gpucompiler.runtime import cpu, lljit

_KEEP: list = []
IR = "define i64 @twice(i64 %x) {\n  %y = mul i64 %x, 2\n  ret i64 %y\n}\n"


@pytest.fixture
def fakepkg(tmp_path, monkeypatch):
    package = tmp_path / "fakepkg2"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("X = 1\n")
    (package / "sub" / "mod.py").write_text("Y = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("GPUC_CACHE_DIR", str(tmp_path / "cache"))
    importlib.import_module("fakepkg2")
    codeprint.code_digest.cache_clear()
    yield package
    sys.modules.pop("fakepkg2", None)
    codeprint.code_digest.cache_clear()


def _digest() -> str | None:
    codeprint.code_digest.cache_clear()
    return codeprint.code_digest("fakepkg2")


def test_same_size_edit_with_restored_mtime_misses_the_memo(fakepkg):
    first = _digest()
    assert _digest() == first
    target = fakepkg / "sub" / "mod.py"  # a module that was never imported
    st = os.stat(target)
    target.write_text("Y = 2\n")  # same size
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))  # as rsync -t or an archive would
    assert _digest() != first


def test_new_and_removed_files_change_the_digest(fakepkg):
    first = _digest()
    (fakepkg / "sub" / "extra.py").write_text("")
    second = _digest()
    assert second != first
    (fakepkg / "sub" / "extra.py").unlink()
    assert _digest() == first


def test_digest_equals_the_hash_of_the_files(fakepkg, tmp_path, monkeypatch):
    first = _digest()
    monkeypatch.setenv("GPUC_CACHE", "off")  # no memo: hashed from the files
    assert _digest() == first == codeprint._content_digest(codeprint._scan(str(fakepkg), True))


def test_loader_made_in_the_background(monkeypatch):
    monkeypatch.setattr(lljit, "_JIT", None)
    monkeypatch.setattr(lljit, "_pending", None)
    lljit.prepare()
    lljit.prepare()  # once
    lib = cpu.CPULibrary.from_ir(IR)
    assert lljit._JIT is not None
    assert lib.function("twice", ctypes.c_int64, ctypes.c_int64)(21) == 42
    _KEEP.append((lljit._JIT, lib))  # the LLJIT outlives its libraries


def test_a_failure_in_the_background_is_raised_by_the_load(monkeypatch):
    def broken():
        raise RuntimeError("no LLJIT here")

    monkeypatch.setattr(lljit, "_JIT", None)
    monkeypatch.setattr(lljit, "_pending", None)
    monkeypatch.setattr(lljit, "_create", broken)
    lljit.prepare()
    with pytest.raises(RuntimeError, match="no LLJIT here"):
        lljit.lljit()


_PROGRAM = """
import json, sys
from gpucompiler import jit

def poly(x, n):
    s = 0.0
    for i in range(n):
        s += x * i
    return s

value = jit(poly, tier=False)(1.5, 4)
from gpucompiler.cache.default import default_cache
print(json.dumps([value, dict(default_cache().stats), "gpucompiler.plugin" in sys.modules]))
"""


def test_an_edit_in_place_of_a_module_a_hit_does_not_import_is_a_miss(tmp_path):
    """A cached call loads neither the plugin registry nor the plugins' identity, so nothing checks their
    ``.pyc``: an edit in place of ``gpucompiler/plugin.py`` (same inode and directory, as an editor writing
    over the file leaves them) must still change the compiler's code digest, and the next fresh process
    compiles again instead of serving the other build's code."""
    src = tmp_path / "src"
    shutil.copytree(os.path.dirname(codeprint.__file__).rsplit(os.sep, 1)[0], src / "gpucompiler",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUC_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(src), GPUC_CACHE_DIR=str(tmp_path / "cache"))

    def run() -> tuple[float, dict, bool]:
        out = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, cwd=tmp_path, capture_output=True,
                             text=True, check=True)
        value, stats, plugin = json.loads(out.stdout)
        return value, stats, plugin

    assert run()[1].get("compile") == 1
    run()  # the stamps settle (the first process wrote bytecode after its memo)
    value, stats, plugin = run()
    assert (value, stats.get("hit.disk"), "compile" in stats, plugin) == (9.0, 1, False, False)
    target = src / "gpucompiler" / "plugin.py"
    inode = os.stat(target).st_ino
    time.sleep(0.02)  # past the file system's timestamp granularity
    with open(target, "a") as fh:
        fh.write("# edited in place\n")
    assert os.stat(target).st_ino == inode
    value, stats, _ = run()
    assert value == 9.0 and stats.get("compile") == 1 and "hit.disk" not in stats
