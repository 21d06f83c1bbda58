"""benchmarks/plot_first_call.py: first_call.py's JSON drawn as an SVG, parts that add up to the first call."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import plot_first_call as P  # noqa: E402  # pyright: ignore[reportMissingImports]


def _record(first, pipeline, after, codegen, before):
    return {"first_ms": first, "import_ms": 100.0, "cpu_ms": first, "values": [],
            "stages_ms": {"pipeline": pipeline, "llvm: O<n> after AD": after, "llvm: code generation": codegen,
                          "llvm: O<n> before AD": before, "irgen": 7.0}}


def _data():
    rows = {"newton|/tree": [_record(130, 100, 20, 13, 9), _record(150, 110, 22, 15, 11), _record(140, 104, 21, 14, 9)],
            "newton|jax": [{"first_ms": 60.0}, {"first_ms": 58.0}, {"first_ms": 62.0}],
            "lse|/tree": [_record(200, 150, 40, 21, 20)],
            "lse|jax": [{"first_ms": 100.0}],
            "mlp|/tree": [_record(600, 500, 200, 130, 40)]}  # no JAX row: left out
    return {"rounds": 3, "load": [1.5, 1.2], "trees": ["/tree", "/old"], "rows": rows}


def test_the_parts_are_medians_and_add_up_to_the_first_call():
    programs, columns, jax = P.parts(_data())
    assert programs == ["lse", "newton"] and jax == [100.0, 60.0]
    assert [c[1] for c in columns] == [35.0, 9.0, 60.0, 36.0]               # Newton: the median of each part
    assert [sum(c[0] for c in columns)] == [200.0]                                   # log-sum-exp: one run


def test_a_json_of_another_shape_is_refused_with_what_to_run():
    with pytest.raises(P.PlotError, match=r"first_call\.py --jax --json"):
        P.parts({"rows": {}})
    old = _data()
    del old["rows"]["newton|/tree"][0]["stages_ms"]["pipeline"]
    with pytest.raises(P.PlotError, match="pipeline"):
        P.parts(old)


def test_the_svg_is_drawn_and_the_same_for_the_same_numbers(tmp_path):
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    source = tmp_path / "first_call.json"
    source.write_text(json.dumps(_data()))
    outs = []
    for k in range(2):
        out = tmp_path / f"plot{k}.svg"
        done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "plot_first_call.py"), str(source), str(out)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        outs.append(out.read_bytes())
    root = ET.fromstring(outs[0])
    assert root.tag.endswith("svg") and b"Newton while" in outs[0] and b"2.3\xc3\x97 JAX" in outs[0]
    assert outs[0] == outs[1]


def test_a_missing_file_is_one_line_and_a_failure(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "plot_first_call.py"), str(tmp_path / "none.json"),
                           str(tmp_path / "x.svg")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stderr.startswith("plot_first_call: ") and "Traceback" not in done.stderr
