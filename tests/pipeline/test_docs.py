"""The example of docs/plugins.md runs as printed and does what the guide says."""

from __future__ import annotations

import re
from pathlib import Path

import llvmlite.binding as llvm

import gpucompiler.plugin as gp
from gpucompiler import pipeline

from .conftest import make_job

DOC = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_guide_example_runs_and_internalizes():
    blocks = python_blocks(DOC.read_text())
    assert len(blocks) >= 1  # the first block is the guide's plugin; later ones run in tests/test_docs.py
    namespace: dict = {}
    try:
        exec(compile(blocks[0], str(DOC), "exec"), namespace)  # the block asserts its own effect too
        ir = namespace["result"].artifacts["llvm"]
        assert [f.name for f in llvm.parse_assembly(ir).functions] == ["entry"]
        without = pipeline.compile(make_job(namespace["IR"], "entry")).artifacts["llvm"]
        assert {f.name for f in llvm.parse_assembly(without).functions} == {"entry", "helper"}
    finally:
        gp.unregister("internalize")

