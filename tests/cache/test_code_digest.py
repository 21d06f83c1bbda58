"""The compiler's code digest: computed once per installation, anew exactly when the code changes.

Each step runs in a fresh process (as a new Python run would see the
package); the reference digest is SHA-256 over the package's files written
out here, independent of the memo.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

_PROBE = """
import json, os, sys
sys.path.insert(0, {where!r})
import fakepkg.used, fakepkg.a.m0, fakepkg.a.m1, fakepkg.a.m2, fakepkg.a.m3, fakepkg.b.m0, fakepkg.b.m1
# imported before the digest, like most of gpucompiler's modules; fakepkg.b.m2 and m3 are not
from gpucompiler.identity import codeprint
computed, stats = [], [0]
content = codeprint._content_digest
codeprint._content_digest = lambda files: computed.append(1) or content(files)
real_stat = os.stat
def counting_stat(*a, **k):
    stats[0] += 1
    return real_stat(*a, **k)
os.stat = counting_stat
digest = codeprint.code_digest("fakepkg")
os.stat = real_stat
print(json.dumps([digest, len(computed), stats[0]]))
"""


def _reference(package: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(package.rglob("*.py"), key=lambda p: p.relative_to(package).as_posix()):
        h.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


@pytest.fixture
def tree(tmp_path):
    package = tmp_path / "src" / "fakepkg"
    for sub in ("", "a", "b"):
        (package / sub).mkdir(parents=True, exist_ok=True)
        (package / sub / "__init__.py").write_text(f"# {sub or 'top'}\n")
        for k in range(4):
            (package / sub / f"m{k}.py").write_text(f"VALUE = {k}\n")
    (package / "used.py").write_text("X = 1\n")
    return tmp_path, package


def _run(tmp_path: Path) -> tuple[str, int, int]:
    env = {**os.environ, "GPUC_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    out = subprocess.run([sys.executable, "-c", _PROBE.format(where=str(tmp_path / "src"))], env=env,
                         capture_output=True, text=True, check=True)
    digest, computed, stats = json.loads(out.stdout)
    return digest, computed, stats


def _edit(path: Path, text: str) -> None:
    time.sleep(0.02)  # past the file system's timestamp granularity
    with open(path, "a") as fh:  # in place: same inode, as some editors write
        fh.write(text)


def test_the_digest_is_computed_once_and_later_processes_stat_fewer_paths_than_files(tree):
    tmp_path, package = tree
    files = len(list(package.rglob("*.py")))
    first = _run(tmp_path)
    again = _run(tmp_path)
    assert first[0] == again[0] == _reference(package)
    assert again[1] == 0  # served by the memo: no file was read
    # a stat per directory and its __pycache__, one per module not imported, one of the cache directory
    # (a memo is used only from a private one)
    assert again[2] == 3 * 2 + 6 + 1 < files


def test_an_edit_of_an_imported_module_changes_the_digest_in_the_next_process(tree):
    tmp_path, package = tree
    before = _run(tmp_path)[0]
    _edit(package / "used.py", "Y = 2\n")
    after, computed, _ = _run(tmp_path)
    assert computed == 1 and after != before and after == _reference(package)


def test_an_edit_of_a_module_not_imported_changes_the_digest(tree):
    tmp_path, package = tree
    before = _run(tmp_path)[0]
    _edit(package / "b" / "m3.py", "EXTRA = 3\n")
    after, computed, _ = _run(tmp_path)
    assert computed == 1 and after != before and after == _reference(package)
    assert _run(tmp_path)[:2] == (after, 0)


def test_a_new_or_removed_file_changes_the_digest(tree):
    tmp_path, package = tree
    before = _run(tmp_path)[0]
    time.sleep(0.02)
    (package / "a" / "new.py").write_text("Z = 1\n")
    added = _run(tmp_path)[0]
    assert added != before and added == _reference(package)
    time.sleep(0.02)
    (package / "a" / "new.py").unlink()
    assert _run(tmp_path)[0] == before == _reference(package)


def test_an_installed_package_is_checked_by_its_directories_alone(tree):
    tmp_path, package = tree
    probe = _PROBE.replace("from gpucompiler.identity import codeprint",
                           "import site\nsite.getsitepackages = lambda: [{where!r}]\n"
                           "from gpucompiler.identity import codeprint")
    env = {**os.environ, "GPUC_CACHE_DIR": str(tmp_path / "cache"), "PYTHONDONTWRITEBYTECODE": "1"}
    code = probe.format(where=str(tmp_path / "src"))

    def run():
        return json.loads(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                         check=True).stdout)

    first = run()
    assert run()[1:] == [0, 3 * 2 + 1]  # no file read, a stat per directory and its __pycache__ (and the cache's)
    time.sleep(0.02)
    (package / "b" / "m3.py").unlink()  # pip replacing a file: removed, written anew
    (package / "b" / "m3.py").write_text("VALUE = 30\n")
    after = run()
    assert after[0] != first[0] and after[0] == _reference(package) and after[1] == 1


def test_the_memo_check_looks_up_the_package_modules_by_name_not_by_walking_every_loaded_module(tree):
    # a process that imported CuPy or PyTorch holds thousands of modules: a walk over them all cost 7 ms per
    # checked package on a GPU host, every cache hit
    tmp_path, package = tree
    _run(tmp_path)
    walks = _PROBE.replace("from gpucompiler.identity import codeprint", """from gpucompiler.identity import codeprint
class Modules(dict):
    walks = 0
    def items(self):
        Modules.walks += 1
        return super().items()
    def keys(self):
        Modules.walks += 1
        return super().keys()
    def __iter__(self):
        Modules.walks += 1
        return super().__iter__()
sys.modules = Modules(sys.modules)""").replace("print(json.dumps([digest, len(computed), stats[0]]))",
                                              "print(json.dumps([digest, len(computed), Modules.walks]))")
    env = {**os.environ, "GPUC_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    digest, computed, walked = json.loads(subprocess.run(
        [sys.executable, "-c", walks.format(where=str(tmp_path / "src"))], env=env, capture_output=True,
        text=True, check=True).stdout)
    assert (digest, computed, walked) == (_reference(package), 0, 0)
