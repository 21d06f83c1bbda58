"""Finding ptxas and libdevice: the explicit paths and CUDA_HOME first, then NVIDIA's ``cuda-pathfinder`` (a fake
module here: it is not installed), then our own search."""

from __future__ import annotations

import stat
import sys
import types
from pathlib import Path

import pytest

from gpucompiler import toolchain
from gpucompiler.errors import ToolNotFoundError


class BitcodeLibNotFoundError(RuntimeError):
    """As ``cuda.pathfinder`` raises on a miss."""


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def bitcode(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"BC\xc0\xde")
    return path


@pytest.fixture
def lookups(monkeypatch):
    """No explicit paths or CUDA_HOME in the environment; the memoised lookups forgotten before and after."""
    for var in ("GPUC_PTXAS", "GPUC_LIBDEVICE", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        monkeypatch.delenv(var, raising=False)
    toolchain.find_ptxas.cache_clear()
    toolchain.find_libdevice.cache_clear()
    yield monkeypatch
    toolchain.find_ptxas.cache_clear()
    toolchain.find_libdevice.cache_clear()


def fake_pathfinder(monkeypatch, ptxas=None, libdevice=None, *, knows=("ptxas",), bitcode_libs=("device",)):
    """A ``cuda.pathfinder`` whose lookups answer ``ptxas`` and ``libdevice`` (None: a miss); the calls are logged."""
    calls: list[str] = []
    module = types.ModuleType("cuda.pathfinder")

    def find_nvidia_binary_utility(name):
        calls.append(name)
        return None if ptxas is None else str(ptxas)

    def find_bitcode_lib(name):
        calls.append(name)
        if libdevice is None:
            raise BitcodeLibNotFoundError(name)
        return str(libdevice)

    module.SUPPORTED_BINARY_UTILITIES = ("nvcc", *knows)  # pyright: ignore[reportAttributeAccessIssue]
    module.SUPPORTED_BITCODE_LIBS = bitcode_libs  # pyright: ignore[reportAttributeAccessIssue]
    module.find_nvidia_binary_utility = find_nvidia_binary_utility  # pyright: ignore[reportAttributeAccessIssue]
    module.find_bitcode_lib = find_bitcode_lib  # pyright: ignore[reportAttributeAccessIssue]
    monkeypatch.setitem(sys.modules, "cuda.pathfinder", module)
    return calls


def without_pathfinder(monkeypatch) -> tuple[str | None, str | None]:
    """What our own search finds (``cuda.pathfinder`` made unimportable), None for a miss."""
    monkeypatch.setitem(sys.modules, "cuda.pathfinder", None)
    found = []
    for find in (toolchain.find_ptxas, toolchain.find_libdevice):
        find.cache_clear()
        try:
            found.append(find())
        except ToolNotFoundError:
            found.append(None)
        find.cache_clear()
    return found[0], found[1]


def test_pathfinder_is_asked_before_our_own_search(lookups, tmp_path):
    ours = without_pathfinder(lookups)
    ptxas = executable(tmp_path / "wheel" / "bin" / "ptxas")
    libdevice = bitcode(tmp_path / "wheel" / "nvvm" / "libdevice" / "libdevice.10.bc")
    calls = fake_pathfinder(lookups, ptxas, libdevice)
    assert toolchain.find_ptxas() == str(ptxas) != ours[0]
    assert toolchain.find_libdevice() == str(libdevice) != ours[1]
    assert calls == ["ptxas", "device"]


def test_explicit_paths_and_cuda_home_come_before_pathfinder(lookups, tmp_path):
    fake_pathfinder(lookups, executable(tmp_path / "wheel" / "bin" / "ptxas"),
                    bitcode(tmp_path / "wheel" / "nvvm" / "libdevice" / "libdevice.10.bc"))
    home = tmp_path / "cuda"
    home_ptxas = executable(home / "bin" / "ptxas")
    home_libdevice = bitcode(home / "nvvm" / "libdevice" / "libdevice.10.bc")
    lookups.setenv("CUDA_HOME", str(home))
    assert toolchain.find_ptxas() == str(home_ptxas)
    assert toolchain.find_libdevice() == str(home_libdevice)
    explicit = executable(tmp_path / "mine" / "ptxas")
    lookups.setenv("GPUC_PTXAS", str(explicit))
    toolchain.find_ptxas.cache_clear()
    assert toolchain.find_ptxas() == str(explicit)


def test_a_miss_or_an_older_pathfinder_falls_back_to_our_search(lookups, tmp_path):
    ours = without_pathfinder(lookups)
    calls = fake_pathfinder(lookups)  # knows both, finds neither (a miss: None, BitcodeLibNotFoundError)
    for find, want in zip((toolchain.find_ptxas, toolchain.find_libdevice), ours):
        if want is None:
            with pytest.raises(ToolNotFoundError):
                find()
        else:
            assert find() == want
    assert calls == ["ptxas", "device"]
    toolchain.find_ptxas.cache_clear()
    toolchain.find_libdevice.cache_clear()
    older = fake_pathfinder(lookups, tmp_path / "never", tmp_path / "never", knows=(), bitcode_libs=())
    for find, want in zip((toolchain.find_ptxas, toolchain.find_libdevice), ours):
        if want is not None:
            assert find() == want
    assert older == []  # a version without ptxas or libdevice in its catalogues is not asked

