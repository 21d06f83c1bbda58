"""The repository and the package as a user receives them: no large binaries tracked, a LICENSE that says what
pyproject.toml says, type information shipped (py.typed), the platform declared."""

from __future__ import annotations

import shutil
import subprocess
from importlib import resources
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11's")
ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _tracked() -> list[Path]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / p for p in out.decode().split("\0") if p]


def test_no_large_binary_is_tracked():
    big = [str(p.relative_to(ROOT)) for p in _tracked() if p.is_file() and p.stat().st_size > 1 << 20]
    assert big == [], f"files over 1 MiB tracked: {big}"


def test_the_license_file_matches_pyproject():
    declared = PYPROJECT["project"]["license"]["text"]
    assert (ROOT / "LICENSE").read_text().splitlines()[0] == f"{declared} License"
    assert f"License :: OSI Approved :: {declared} License" in PYPROJECT["project"]["classifiers"]


def test_the_packages_ship_their_types_and_say_linux():
    for package in ("gpucompiler", "enzyme_plugin"):
        assert resources.files(package).joinpath("py.typed").is_file(), package
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["*"]
    assert "Operating System :: POSIX :: Linux" in PYPROJECT["project"]["classifiers"]
