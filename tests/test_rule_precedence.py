"""The precedence of the language's rules is stated once (gpucompiler/language/precedence.py), not by import order.

Each shuffled run imports the language's modules in another order (a fresh interpreter per seed, the
package's own imports bypassed) and prints the resolved order of the base rule set (its call handlers, each
function's definitions) and what a set of representative programs compile to and return; every run prints
the same as the package imported plainly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types

import pytest

from gpucompiler import types as T
from gpucompiler.errors import ConfigError
from gpucompiler.language.precedence import PRECEDENCE
from gpucompiler.interpreter.rules import RuleSet

_PROGRAM = textwrap.dedent('''
    import importlib, importlib.util, json, pathlib, random, sys
    seed, compiled = int(sys.argv[1]), sys.argv[2] == "compile"
    if seed >= 0:  # the package's __init__ (which imports every module) bypassed: the modules in a shuffled order
        spec = importlib.util.find_spec("gpucompiler.language")
        root = pathlib.Path(spec.origin).parent
        sys.modules["gpucompiler.language"] = importlib.util.module_from_spec(spec)  # not executed
        names = ["gpucompiler.language." + ".".join(p.relative_to(root).with_suffix("").parts)
                 for p in root.rglob("*.py") if p.name != "__init__.py"]
        names.append("gpucompiler.parallel")
        random.Random(seed).shuffle(names)
        for name in names:
            importlib.import_module(name)
        first = names[0]
    else:
        import gpucompiler.language, gpucompiler.parallel
        first = None
    import collections, math, operator
    import numpy as np
    from gpucompiler import jit
    from gpucompiler.language.precedence import base

    def name(f):
        return [f.__module__, f.__qualname__]

    order = {"handlers": [name(h) for h in base.handlers],
             "methods": sorted((getattr(fn, "__qualname__", repr(fn)), [name(m.lower) for m in ms])
                               for fn, ms in base.methods.items())}

    Point = collections.namedtuple("Point", "x y")

    def kw_zeros(n):
        return np.zeros(n, dtype=np.float32) + np.ones((n,), np.float32)
    def kw_full(n):
        return np.full((n, 2), 1.5, dtype=np.float64).sum(axis=0)
    def reductions(a):
        return np.sum(a, axis=0), a.max(), np.cumsum(a[0]), np.argsort(a[1]), len(a)
    def casts(a):
        return a.astype(np.float32).T.copy(), np.concatenate((a[0], a[1]), axis=0)
    def views(a):
        b = a.reshape(3, 2)
        b[0, :] = 7.0
        return a == a, b.ravel()
    def numbers(x, n):
        z = complex(x, 1.0) * complex(2.0, -x)
        return abs(z), min(n, 3, -n), max(x, 2.5), math.sin(x) + x ** 2, n // 3, -n % 5, divmod(n, 4)
    def containers(n):
        xs = [i * 0.5 for i in range(n)]
        d = {i: float(i) for i in range(n)}
        p = Point(n, 2.0)
        return sum(xs), len(d), d[1], p.x + p.y, xs[-1]
    def linalg(m):
        return np.linalg.det(m), np.linalg.inv(m) @ m, np.sort(m[0])
    def random(n):
        np.random.seed(42)
        return np.random.random(n)

    a = np.arange(6.0).reshape(2, 3)
    m = np.array([[2.0, 1.0], [1.0, 3.0]])
    calls = [(kw_zeros, (3,)), (kw_full, (2,)), (reductions, (a,)), (casts, (a,)), (views, (np.arange(6.0),)),
             (numbers, (0.75, 7)), (containers, (4,)), (linalg, (m,)), (random, (3,))]

    def shown(v):
        if isinstance(v, tuple):
            return [shown(x) for x in v]
        if isinstance(v, np.ndarray):
            return [str(v.dtype), v.shape, v.tolist()]
        return [type(v).__name__, repr(v)]

    results = {f.__name__: shown(jit(f)(*args)) for f, args in calls} if compiled else {}
    print(json.dumps({"first": first, "order": order, "results": results}, default=repr))
''')

SEEDS = (1, 2, 3, 4, 5, 6)
COMPILED = (1,)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """``run(seed)``: the program's output in a fresh interpreter (a file: the compiler reads its source), the
    compile cache off; seed -1 imports the package plainly. The seeds of ``COMPILED`` (and -1) compile and run
    the programs too (the others compare the resolved order alone)."""
    script = tmp_path_factory.mktemp("precedence") / "program.py"
    script.write_text(_PROGRAM)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GPUC_")}

    def run(seed: int) -> dict:
        what = "compile" if seed in (-1, *COMPILED) else "order"
        out = subprocess.run([sys.executable, str(script), str(seed), what], capture_output=True, text=True, timeout=300,
                             env={**environ, "GPUC_CACHE": "off"})
        assert out.returncode == 0, out.stderr[-3000:]
        return json.loads(out.stdout.strip().splitlines()[-1])
    return run


@pytest.fixture(scope="module")
def plain(run) -> dict:
    return run(-1)


@pytest.mark.parametrize("seed", [SEEDS[0], *(pytest.param(s, marks=pytest.mark.slow) for s in SEEDS[1:])])
def test_shuffled_imports_resolve_the_same_rules_and_compile_the_same_programs(run, plain, seed):
    shuffled = run(seed)
    assert shuffled["first"] != "gpucompiler.language.python.numbers"  # the order really differs
    assert shuffled["order"] == plain["order"]
    if seed in COMPILED:
        assert shuffled["results"] == plain["results"]


def test_the_plain_order_is_the_stated_one(plain):
    """The handlers follow PRECEDENCE's modules; every listed module adds rules, every rule's module is listed."""
    modules = [module for module, _ in plain["order"]["handlers"]]
    assert modules == sorted(modules, key=PRECEDENCE.index)
    defined = {module for _, methods in plain["order"]["methods"] for module, _ in methods}
    assert set(modules) | defined == set(PRECEDENCE)


def _rule(module: str, name: str):
    fn = types.FunctionType((lambda interp, f, args: None).__code__, {}, name)
    fn.__module__, fn.__qualname__ = module, name
    return fn


def test_a_rule_set_with_parts_orders_its_rules_by_them_whatever_the_registration_order():
    rules = RuleSet("ordered", parts=("m.first", "m.second"))
    late, early, early2 = _rule("m.second", "late"), _rule("m.first", "early"), _rule("m.first", "early2")
    for h in (late, early, early2):
        rules.handler(h)
    assert rules.handlers == [early, early2, late]
    for lower in (early, late, early2):
        rules.define(abs, T.int64, restype=T.int64)(lower)
    assert [m.lower for m in rules.methods[abs]] == [early, early2, late]  # lookup tries them from the last
    found = rules.lookup(abs, [T.int64])
    assert found is not None and found[0].lower is late


def test_a_rule_from_a_module_not_in_the_parts_is_refused():
    rules = RuleSet("ordered", parts=("m.first",))
    with pytest.raises(ConfigError, match=r"m\.elsewhere\.stray .*not in its precedence"):
        rules.handler(_rule("m.elsewhere", "stray"))
