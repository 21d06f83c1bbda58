"""Where the compiler finds a function's source: files, lambdas (were a raw SyntaxError), code
whose source only linecache holds (IPython cells), and none at all (`python -c`: a typed error)."""

from __future__ import annotations

import linecache
import subprocess
import sys

import pytest

from enzyme_plugin import Active, Reverse, autodiff
from gpucompiler import jit


def test_lambdas_compile_with_defaults_and_keywords():
    f = jit(lambda x, y=2.0: x * y + 1)
    assert f(3.0) == 7.0 and f(3.0, y=1.0) == 4.0
    fs = [jit(lambda x: x - 1), jit(lambda z: z * 10)]  # told apart by their parameters
    assert (fs[0](1), fs[1](1)) == (0, 10)
    assert autodiff(Reverse, lambda x: x * x * x, Active(2.0)) == (12.0,)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="columns of code objects are new in Python 3.11")
def test_lambdas_with_the_same_parameters_on_one_line_are_told_apart_by_column():
    g = [jit(lambda x: x - 1), jit(lambda x: x + 1)]
    assert (g[0](1), g[1](1)) == (0, 2)


def test_source_registered_in_linecache_is_used_as_ipython_cells_are():
    name = "<ipython-input-7-gpuc>"
    src = "def cell_fn(a, b):\n    return a * b - 1\n"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    ns: dict = {}
    exec(compile(src, name, "exec"), ns)
    assert jit(ns["cell_fn"])(3, 4) == 11


def test_exec_of_a_string_without_source_compiles_from_its_bytecode():
    ns: dict = {}
    exec(compile("def nosrc(a):\n    return a + 1\n", "<nowhere-gpuc>", "exec"), ns)
    assert jit(ns["nosrc"])(1) == 2  # was "function without source" (tests/frontend/test_no_source.py)


def test_python_dash_c_compiles():
    code = "from gpucompiler import jit\n@jit\ndef f(x):\n    return x + 1\nprint(f(1))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "2", out.stderr
