"""Compiled code beside Numba in one process: Numba registers ``PyExc_<name>`` in LLVM's process-wide
symbol table as the class object itself (CPython's ``PyExc_<name>`` is a pointer variable), so code
that read the class through that name raised with a garbage pointer: a segfault at the first error
(``x ** -8`` at the edge of the float range, after ``from numba import typed``). Each case runs in a
fresh process, so a crash fails one test."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

AS_NUMBA_DOES = textwrap.dedent("""
    import builtins, llvmlite.binding as llvm
    for obj in builtins.__dict__.values():  # what numba.core.base._load_global_helpers does
        if isinstance(obj, type) and issubclass(obj, BaseException):
            llvm.add_symbol("PyExc_%s" % obj.__name__, id(obj))
""")

ERRORS = textwrap.dedent("""
    from gpucompiler import jit

    def power(x):
        return x ** -8

    def index(a, i):
        return a[i]

    def div(a, b):
        return a // b

    import numpy as np
    for call, want in ((lambda: jit(power)(5e-324), OverflowError), (lambda: jit(power)(0.0), ZeroDivisionError),
                       (lambda: jit(index)(np.ones(3), 7), IndexError), (lambda: jit(div)(1, 0), ZeroDivisionError)):
        try:
            call()
        except want:
            pass
        else:
            raise SystemExit(f"no {want.__name__}")
    assert jit(power)(2.0) == 2.0 ** -8
    print("OK")
""")


def _run(prelude: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=f"{ROOT}:{ROOT / 'plugins'}")
    return subprocess.run([sys.executable, "-c", prelude + ERRORS], env=env, capture_output=True, text=True,
                          timeout=300)


def test_errors_raise_after_the_exception_names_are_registered_as_numba_does():
    run = _run(AS_NUMBA_DOES)
    assert run.returncode == 0 and run.stdout.strip().endswith("OK"), (run.returncode, run.stderr[-2000:])


def test_errors_raise_after_numba_compiled_something():
    pytest.importorskip("numba", reason="Numba is not installed")
    run = _run("import numba\nfrom numba import typed\ntyped.List.empty_list(numba.float64)\n")
    assert run.returncode == 0 and run.stdout.strip().endswith("OK"), (run.returncode, run.stderr[-2000:])
