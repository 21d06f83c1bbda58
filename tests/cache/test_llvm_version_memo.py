"""The LLVM version of job keys, memoised in the cache directory by the stat of llvmlite's library
(gpucompiler/identity/llvmversion.py): a fresh process finds it without loading the library.

Each step runs in a fresh process (the version is kept once per process). The reference is what
llvmlite's binding reports in this process; a fake ``llvmlite`` package (a library file and a binding
reporting a version of the test's choice) shows which of the memo and the binding answered.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import llvmlite.binding
import pytest

_PROBE = """
import json, sys
{prelude}
from gpucompiler.identity.llvmversion import library_file, llvm_version
print(json.dumps([llvm_version(), "llvmlite.binding" in sys.modules, library_file()]))
"""


def _run(tmp_path: Path, prelude: str = "", **env: str) -> tuple[str, bool, str | None]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GPUC_")}
    environ.update({"GPUC_CACHE_DIR": str(tmp_path / "cache"), **env})
    code = _PROBE.format(prelude=prelude)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environ)
    version, loaded, library = json.loads(out.stdout)
    return version, loaded, library


def _memos(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / "code").glob("llvm-version-*.json"))


REAL = ".".join(map(str, llvmlite.binding.llvm_version_info))


def _loaded_library() -> str:
    """The file of the library this process's llvmlite binding loaded."""
    return llvmlite.binding.ffi.lib._lib_handle._name  # pyright: ignore


def test_the_first_process_asks_llvmlite_and_the_next_reads_the_memo_without_loading_the_library(tmp_path):
    version, loaded, library = _run(tmp_path)
    assert (version, loaded) == (REAL, True)
    assert library is not None and os.path.samefile(library, _loaded_library())
    (memo,) = _memos(tmp_path)
    assert json.loads(memo.read_text())["version"] == REAL
    assert _run(tmp_path)[:2] == (REAL, False)


def test_the_key_document_holds_the_binding_s_version_and_a_second_process_loads_no_llvm(tmp_path):
    """The memo's value is the binding's: a key document's ``llvm`` is the same in both processes, and the
    second one imports the key's module without llvmlite's library (nor the native target's module)."""
    from gpucompiler.llvm.binding import llvm_version

    code = ("import json, sys; from gpucompiler.identity import documents; "
            "print(json.dumps([documents.llvm_version(), 'llvmlite.binding' in sys.modules]))")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GPUC_")}
    for expect_loaded in (True, False):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**environ, "GPUC_CACHE_DIR": str(tmp_path / "cache")})
        assert json.loads(out.stdout) == [llvm_version(), expect_loaded] and llvm_version() == REAL
    assert len(_memos(tmp_path)) == 1


@pytest.mark.parametrize("planted", [{"version": "22.1.0\n1"}, {"version": ["22", "1"]}, {"version": ""},
                                     {"stat": [0, 0, 0, 0]}, {"library": "/elsewhere/libllvmlite.so"}, None])
def test_a_memo_that_does_not_describe_the_library_is_not_read(tmp_path, planted):
    _run(tmp_path)
    (memo,) = _memos(tmp_path)
    if planted is None:
        memo.write_text("{not json")
    else:
        memo.write_text(json.dumps({**json.loads(memo.read_text()), **planted}))
    assert _run(tmp_path)[:2] == (REAL, True)  # asked of llvmlite
    assert _run(tmp_path)[:2] == (REAL, False)  # and the memo written again


def test_without_a_cache_directory_the_version_is_asked_and_nothing_is_written(tmp_path):
    assert _run(tmp_path, GPUC_CACHE="off")[:2] == (REAL, True)
    assert not (tmp_path / "cache").exists()


def _fake_llvmlite(root: Path, version: tuple[int, int, int]) -> None:
    """A package ``llvmlite`` under ``root``: ``utils.get_library_name`` and a binding whose library
    file is a few bytes and whose ``llvm_version_info`` is ``version``."""
    binding = root / "llvmlite" / "binding"
    binding.mkdir(parents=True, exist_ok=True)
    (root / "llvmlite" / "__init__.py").write_text("")
    (root / "llvmlite" / "utils.py").write_text("def get_library_name():\n    return 'libllvmlite.so'\n")
    (binding / "__init__.py").write_text(f"llvm_version_info = {version!r}\n")
    fresh = binding / "libllvmlite.so.new"
    fresh.write_bytes(b"\x7fELF" + bytes(version))
    os.replace(fresh, binding / "libllvmlite.so")  # as pip does: a new file


def test_a_replaced_library_is_asked_again_and_the_same_file_is_not(tmp_path):
    """With a fake llvmlite: the memo answers while the file is the same (a binding now reporting another
    version is not asked); a new file is asked, and its version memoised."""
    root = tmp_path / "site"
    _fake_llvmlite(root, (1, 2, 3))
    prelude = textwrap.dedent(f"""
        sys.path.insert(0, {str(root)!r})
        import llvmlite
        assert llvmlite.__file__.startswith({str(root)!r})
    """)
    version, loaded, library = _run(tmp_path, prelude)
    assert (version, loaded, library) == ("1.2.3", True, str(root / "llvmlite" / "binding" / "libllvmlite.so"))
    (root / "llvmlite" / "binding" / "__init__.py").write_text("llvm_version_info = (7, 7, 7)\n")
    assert _run(tmp_path, prelude)[:2] == ("1.2.3", False)
    _fake_llvmlite(root, (4, 5, 6))
    assert _run(tmp_path, prelude)[:2] == ("4.5.6", True)
    assert _run(tmp_path, prelude)[:2] == ("4.5.6", False)
