"""Every Python example in README.md and docs/*.md runs as printed.

Fences: ```python blocks run (in order, sharing one namespace per file);
```python gpu blocks run only where a CUDA device is visible, ```python amd blocks only where LLVM's
linker for AMD code objects (ld.lld) is installed (CI installs lld-19). Blocks assert
their own results. Plugins a doc registers are unregistered afterwards.
"""

from __future__ import annotations

import linecache
import re
from pathlib import Path

import pytest

import gpucompiler.device  # noqa: F401  (registers the built-in grid-emulation plugin: not a doc's to unregister)
import gpucompiler.plugin as gp
from gpucompiler.errors import ToolNotFoundError
from gpucompiler.targets.amdgpu.tools import find_tool

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(python(?: gpu| amd)?)\n(.*?)^```", re.S | re.M)


def amd_linker_installed() -> bool:
    try:
        find_tool("ld.lld")
    except ToolNotFoundError:
        return False
    return True


def blocks(path: Path) -> list[tuple[str, str, int]]:
    """``(info, code, first line index)`` of each runnable block."""
    text = path.read_text()
    return [(m.group(1), m.group(2), text.count("\n", 0, m.start(2))) for m in FENCE.finditer(text)]


def register_source(path: Path) -> str:
    """Make ``inspect.getsource`` see the doc's code at its own line numbers.

    The jit reads function sources through linecache; the doc's prose lines
    are blanked so that only the examples are Python.
    """
    lines = ["\n"] * len(path.read_text().splitlines())
    for _, code, start in blocks(path):
        for k, line in enumerate(code.splitlines(keepends=True)):
            lines[start + k] = line
    name = str(path)
    linecache.cache[name] = (sum(map(len, lines)), None, lines, name)
    return name


@pytest.mark.parametrize("path", [p for p in DOCS if blocks(p)], ids=lambda p: p.name)
def test_doc_examples_run(path, cuda_available):
    before = set(gp.discovered())
    filename = register_source(path)
    namespace: dict = {"__name__": f"doc_{path.stem}"}
    try:
        for info, code, start in blocks(path):
            if (info == "python gpu" and not cuda_available) or (info == "python amd" and not amd_linker_installed()):
                continue
            # dont_inherit: this file's `from __future__ import annotations` would make the examples' annotations
            # strings (a dataclass then looks its module up in sys.modules, where the docs are not)
            exec(compile("\n" * start + code, filename, "exec", dont_inherit=True), namespace)
    finally:
        linecache.cache.pop(filename, None)
        for name in set(gp.discovered()) - before:
            gp.unregister(name)
