"""The LLVM IR a function compiles to is the same text in every process: a variable that may be unbound gets
its bound flag (frontend/ssa.py) in the order of the variables' phis, not in the order of a set of phis
(their addresses). Results against CPython."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gpucompiler import jit
from gpucompiler.frontend import lower_function

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def five_maybe(n):
    if n > 0:
        a = 1.0
        b = 2.0
        c = 3.0
        d = 4.0
        e = 5.0
    s = 0.0
    for i in range(n):
        s += a * i + b - c + d * e  # pyright: ignore[reportOperatorIssue]  (maybe unbound: under test)
    return s


def seven_maybe(n, x):
    if n > 2:
        p = x
        q = x * 2.0
        r = x * 3.0
        t = n
        u = n + 1
        v = 0.5
        w = x - 1.0
    s = 0.0
    k = 0
    while k < n:
        s += p + q + r + t + u + v + w  # pyright: ignore[reportOperatorIssue]  (maybe unbound: under test)
        k += 1
    return s


def _flag_orders(fn):
    """Per block: the variables of its bound flags, and those of the phis they flag, in order."""
    out = []
    for block in lower_function(fn).blocks:
        names = [phi.var for phi in block.phis]
        flags = [n[len("$bound."):] for n in names if n.startswith("$bound.")]
        out.append((flags, [n for n in names if n in flags]))
    return out


@pytest.mark.parametrize("fn", [five_maybe, seven_maybe])
def test_bound_flags_follow_their_variables_phis(fn):
    orders = _flag_orders(fn)
    assert sum(len(flags) for flags, _ in orders) >= 5
    assert all(flags == phis for flags, phis in orders)


_TEXT = """
import json, sys
junk = [object() for _ in range(int(sys.argv[1]))]  # other addresses for what lowering makes
from gpucompiler import jit
from gpucompiler.core import CompilerJob
from tests.frontend.test_module_text_stable import five_maybe, seven_maybe
texts = []
for fn, args in ((five_maybe, (3,)), (seven_maybe, (4, 0.5))):
    d = jit(fn, tier=False)
    argtypes = d._argtypes(args)
    spec = d._spec(argtypes, args)
    texts.append(spec.generate_ir(CompilerJob(spec, d._config())))
print(json.dumps(texts))
"""


def test_the_module_text_is_the_same_in_every_process():
    env = {**os.environ, "PYTHONPATH": ROOT, "GPUC_CACHE": "off"}
    runs = [subprocess.run([sys.executable, "-c", _TEXT, str(n)], env=env, cwd=ROOT, capture_output=True, text=True,
                           timeout=300) for n in (0, 333, 4097)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr[-2000:]
    texts = [json.loads(r.stdout.strip().splitlines()[-1]) for r in runs]
    assert texts[0] == texts[1] == texts[2]


@pytest.mark.parametrize("fn, args", [(five_maybe, (3,)), (five_maybe, (0,)), (seven_maybe, (4, 0.5)),
                                      (seven_maybe, (2, 0.5)), (seven_maybe, (1, 0.5))])
def test_results_are_cpythons(fn, args):
    f = jit(fn, tier=False)
    try:
        want = fn(*args)
    except UnboundLocalError:
        with pytest.raises(UnboundLocalError):
            f(*args)
        return
    assert f(*args) == want
