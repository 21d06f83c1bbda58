"""The AMD code object's tools: ``ld.lld`` links it, ``llvm-readobj`` and ``llvm-objdump`` check it.

Each tool is looked for as ``<name>-NN`` (newest LLVM first), then ``<name>``, on ``PATH``, then in
``$ROCM_PATH/llvm/bin`` and ``/opt/rocm/llvm/bin``; a miss is a :class:`ToolNotFoundError`
listing the places. :func:`metadata` reads the code object's AMDGPU metadata note (kernel names,
arguments, ``.kernarg_segment_size``, register counts) back as data.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ...errors import ToolchainError, ToolNotFoundError
from ...settings import ROCmSettings

_VERSIONS = tuple(range(30, 13, -1))


@functools.cache
def find_tool(name: str) -> str:
    """Path of LLVM tool ``name`` (``ld.lld``, ``llvm-readobj``, ``llvm-objdump``)."""
    looked = []
    for candidate in (*(f"{name}-{v}" for v in _VERSIONS), name):
        found = shutil.which(candidate)
        if found:
            return found
    looked.append(f"{name}[-NN] on PATH")
    for root in (*ROCmSettings.from_env().roots, Path("/opt/rocm")):
        path = root / "llvm" / "bin" / name
        looked.append(str(path))
        if os.access(path, os.X_OK):
            return str(path)
    raise ToolNotFoundError(f"{name} (needed by the amdgpu target) was not found; install LLVM's tools "
                            f"(Debian: lld-19, llvm-19) or ROCm. Looked for: {', '.join(looked)}")


def _run(args: list[str], what: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, capture_output=True)
    if proc.returncode != 0:
        raise ToolchainError(f"{what} failed (exit {proc.returncode}): {proc.stderr.decode(errors='replace')}")
    return proc


def link_code_object(obj: bytes) -> bytes:
    """The loadable code object (``ld.lld -shared``) of relocatable object ``obj``."""
    with tempfile.TemporaryDirectory(prefix="gpuc-amdgpu-") as tmp:
        src, out = Path(tmp) / "kernel.o", Path(tmp) / "kernel.hsaco"
        src.write_bytes(obj)
        _run([find_tool("ld.lld"), "-shared", "--no-undefined", str(src), "-o", str(out)], "ld.lld")
        return out.read_bytes()


def _with_file(code: bytes, args: list[str], what: str) -> str:
    with tempfile.TemporaryDirectory(prefix="gpuc-amdgpu-") as tmp:
        path = Path(tmp) / "kernel.hsaco"
        path.write_bytes(code)
        return _run([*args, str(path)], what).stdout.decode()


def metadata(code: bytes) -> dict:
    """The AMDGPU metadata note of code object ``code`` as data (``llvm-readobj --notes``): the
    ``amdhsa.kernels`` list (each kernel's ``.name``, ``.args``, ``.kernarg_segment_size``...),
    ``amdhsa.target`` and ``amdhsa.version``."""
    text = _with_file(code, [find_tool("llvm-readobj"), "--notes", "--elf-output-style=JSON"], "llvm-readobj")
    found = _find_key(json.loads(text), "AMDGPU Metadata")
    note = _yaml(found) if isinstance(found, str) else None
    if isinstance(note, dict):
        return note
    raise ToolchainError("the code object has no AMDGPU metadata note")


def _find_key(tree, key: str):
    """The first value under ``key`` anywhere in a JSON tree (readobj's nesting differs by version)."""
    if isinstance(tree, dict):
        if key in tree:
            return tree[key]
        tree = list(tree.values())
    if isinstance(tree, list):
        for item in tree:
            found = _find_key(item, key)
            if found is not None:
                return found
    return None


def _scalar(text: str):
    text = text.strip()
    if text.startswith("!str "):
        text = text[5:].strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text, 0)
    except ValueError:
        return [] if text == "[]" else text


def _yaml(text: str):
    """The block-style YAML subset LLVM prints for the metadata: maps, lists, scalars."""
    lines: list[str] = []
    for line in text.splitlines():
        if line.strip() in ("---", "...", ""):
            continue
        indent = _indent(line)
        while line.lstrip().startswith("- "):  # "- key: v" is a list item opening a map: split it
            lines.append(" " * indent + "-")
            indent += 2
            line = " " * indent + line.lstrip()[2:]
        lines.append(line)
    value, _ = _block(lines, 0)
    return value


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _block(lines: list[str], at: int):
    """The value whose first line is ``lines[at]``; returns it and the index of the line after it."""
    indent, head = _indent(lines[at]), lines[at].strip()
    if head == "-":
        items = []
        while at < len(lines) and _indent(lines[at]) == indent and lines[at].strip() == "-":
            item, at = _block(lines, at + 1)
            items.append(item)
        return items, at
    if ":" not in head:
        return _scalar(head), at + 1
    mapping: dict = {}
    while at < len(lines) and _indent(lines[at]) == indent and lines[at].strip() != "-":
        key, _, rest = lines[at].strip().partition(":")
        at += 1
        if rest.strip():
            mapping[key] = _scalar(rest)
        elif (at < len(lines) and _indent(lines[at]) >= indent and lines[at].strip() == "-") or \
                (at < len(lines) and _indent(lines[at]) > indent):
            mapping[key], at = _block(lines, at)
        else:
            mapping[key] = None
    return mapping, at


def disassemble(code: bytes) -> str:
    """``llvm-objdump -d`` of code object ``code``."""
    return _with_file(code, [find_tool("llvm-objdump"), "-d"], "llvm-objdump")
