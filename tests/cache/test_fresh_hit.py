"""The fresh-process hit path: the code-digest stamp, the loader made in the background."""

from __future__ import annotations

import ctypes
import importlib
import os
import sys

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
