"""The LLVM IR of a function holding arrays is the same in every process.

The references a function holds are released in the IR's order, not in the order a set of values
happens to iterate (their addresses), so the object code of a cache key is reproducible across
processes and machines.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROGRAM = r"""
import numpy as np
from gpucompiler import jit


def f(x, y, n):
    a = np.zeros(n)
    b = x * 2.0
    c = y + 1.0
    for i in range(n):
        if x[i] > 0:
            a[i] = b[i] + c[i]
        else:
            d = np.ones(n)
            a[i] = d[i] - b[i]
    e = a * b
    return e + c


j = jit(f, cache=False)
got = j(np.array([1.0, -2.0, 3.0]), np.array([0.5, 0.25, 0.125]), 3)
print(repr(got.tolist()))
ir = j.inspect_llvm()
print(ir if isinstance(ir, str) else "\n".join(ir.values()))
"""


def test_the_ir_of_a_function_holding_arrays_is_the_same_in_every_process():
    outputs = set()
    for seed in range(4):  # hash seeds and address layouts differ from process to process
        env = {**os.environ, "PYTHONHASHSEED": str(seed), "GPUC_CACHE": "0"}
        done = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, check=True)
        first, _, ir = done.stdout.partition("\n")
        x, y = [1.0, -2.0, 3.0], [0.5, 0.25, 0.125]
        want = [(2 * a + b + 1) * 2 * a + b + 1 if a > 0 else (1 - 2 * a) * 2 * a + b + 1 for a, b in zip(x, y)]
        assert eval(first) == pytest.approx(want, rel=1e-15)
        assert "call" in ir
        outputs.add(ir)
    assert len(outputs) == 1
