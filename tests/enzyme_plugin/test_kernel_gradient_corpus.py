"""The kernel-gradient corpus (kernel_gradient_corpus.py): every gradient the CPU grid emulation
computes is checked against exact derivatives or central differences, and also compiles for PTX
without ``realloc`` (or any allocation but the AD tape's marked malloc/free) and through ptxas;
on a GPU (``gpu``) the device's numbers match the emulation's."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gpucompiler import kernel
from gpucompiler import types as T
from gpucompiler.llvm import parse

from kernel_gradient_corpus import CASES

P = ("enzyme",)
A = T.ArrayType(T.float64, 1, "C")
IDS = [c.name for c in CASES]


def emulated(case) -> np.ndarray:
    dx = np.zeros_like(case.x)
    blocks, threads = case.launch
    kernel(case.kernel, plugins=P)[blocks, threads, "cpu"](case.x.copy(), dx)
    return dx


def calls(text: str) -> list:
    """``(callee, metadata names)`` of every direct call in LLVM IR text, parsed back."""
    model = parse(text)
    return [(i.callee.name, set(i.metadata)) for f in model.functions.values() for i in f.instructions()
            if i.opcode == "call" and getattr(i.callee, "name", None)]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_emulated_kernel_gradient_matches_the_reference(case):
    got, want = emulated(case), case.reference()
    assert np.all(np.isfinite(got))
    if case.exact is not None:
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert np.any(got != 0.0)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_kernel_gradient_compiles_for_ptx_without_realloc(case, check_ptx):
    k = kernel(case.kernel, plugins=P)
    found = calls(k.inspect_llvm(A, A))
    names = {name for name, _ in found}
    assert "realloc" not in names
    for name, md in found:  # the only heap calls are the tape's, marked for the validator
        if name in ("malloc", "free"):
            assert "gpuc.ad.tape" in md, (name, md)
    ptx = k.inspect_asm(A, A)
    assert "realloc" not in ptx
    check_ptx(ptx)


def test_thirteen_step_branchy_map_keeps_its_tape_off_the_heap():
    """13 values and 13 branch decisions of a constant-trip loop: stack memory, no malloc."""
    names = {name for name, _ in calls(kernel(CASES[0].kernel, plugins=P).inspect_llvm(A, A))}
    assert not {"malloc", "free", "realloc"} & names


def test_break_out_of_a_counted_loop_is_sized_by_its_bound():
    """``for k in range(40)`` with a ``break``, ``for j in range(n)`` with a ``return``: the count is
    an upper bound, the array is allocated once before the loop and never grows (no copy)."""
    for name in ("break inside a loop", "return inside a loop"):
        case = next(c for c in CASES if c.name == name)
        text = kernel(case.kernel, plugins=P).inspect_llvm(A, A)
        found = [n for n, _ in calls(text)]
        assert "cpword" not in text and "realloc" not in found, (name, found)  # (cpword: a growth's copy)
        assert found.count("malloc") <= 1, (name, found)


def test_data_dependent_while_starts_in_the_arena():
    """A long ``while``'s growing array starts in an alloca; the heap is reached only by growth. The
    Newton solve's ``it < 60`` caps its loop: one array of 60 frames, no growth."""
    text = kernel(CASES[5].kernel, plugins=P).inspect_llvm(A, A)
    assert "alloca [1024 x i8]" in text  # the tape arena (EngineOptions.tape_arena)
    assert re.search(r"^cpword[.\w]*:", text, re.M)  # the copy of a growth step, 8 bytes at a time (no realloc)
    newton = kernel(CASES[4].kernel, plugins=P).inspect_llvm(A, A)
    assert not re.search(r"^cpword[.\w]*:", newton, re.M) and "malloc" not in newton


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_device_kernel_gradient_matches_the_emulation(case):
    dx = np.zeros_like(case.x)
    blocks, threads = case.launch
    kernel(case.kernel, plugins=P)[blocks, threads](case.x.copy(), dx)  # NumPy arrays: copied both ways
    np.testing.assert_allclose(dx, emulated(case), rtol=1e-9, atol=1e-12)


def _line_of(fn, marker: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, text in enumerate(lines) if marker in text)


@pytest.mark.parametrize("where", ["ptx", "cpu"])
def test_gradient_that_cannot_be_built_names_the_construct_and_the_python_line(where):
    """Never a wrong number: an ADError (inside the plugin's error) saying what and at which line."""
    from gpucompiler.errors import GPUCompilerError

    import kernel_gradient_corpus as C

    k = kernel(C.k_atomic_old_value, plugins=P)
    with pytest.raises(GPUCompilerError) as info:
        if where == "ptx":
            k.inspect_asm(A, A, A, A)
        else:
            x = np.ones(4)
            k[1, 4, "cpu"](x, np.zeros(4), np.zeros(1), np.zeros(1))
    text = str(info.value)
    line = _line_of(C.atomic_old_value, "the line the error names")
    assert "ADError" in text and "old value of an atomic add" in text
    assert f"kernel_gradient_corpus.py:{line}:" in text, text


def test_partially_unrolled_constant_loop_on_the_host_keeps_its_tape_on_the_stack():
    """On the host LLVM unrolls the 13-step loop 4 times, leaving its exit tests inside the body;
    their constant bound (13 iterations) sizes a stack array: no realloc, no malloc (was a tape
    grown by realloc), and the gradient is the exact one."""
    from gpucompiler import jit

    import kernel_gradient_corpus as C

    f = jit(C.grad_branchy_map_all, plugins=P)
    found = {name for name, _ in calls(f.inspect_llvm(A, A))}
    assert not {"realloc", "malloc", "free"} & found, found
    x = np.random.default_rng(3).uniform(-1.0, 1.5, 200)
    dx = np.zeros_like(x)
    f(x, dx)
    np.testing.assert_allclose(dx, [C.branchy_map_derivative(v) for v in x], rtol=1e-10, atol=1e-12)


_EXHAUST = """
import sys
import numpy as np
sys.path.insert(0, {here!r})
import kernel_gradient_corpus as C
from gpucompiler import kernel
from gpucompiler.errors import DeviceHeapError
x = np.zeros(1024)
try:
    kernel(C.k_endless_while, plugins=("enzyme",))[8, 128](x, np.zeros_like(x))
except DeviceHeapError as exc:
    print("DeviceHeapError:", exc)
else:
    print("no error")
"""


@pytest.mark.gpu
def test_device_heap_exhaustion_is_a_typed_error_naming_the_setting(tmp_path):
    """1024 threads each needing 64 MiB of tape: the device heap runs out, the tape's malloc returns
    null, the thread traps, and the host raises DeviceHeapError naming GPUC_DEVICE_HEAP (in a child
    process: the CUDA context is lost after a trap)."""
    import os
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run([sys.executable, "-c", _EXHAUST.format(here=here)], capture_output=True, text=True,
                          env={**os.environ, "GPUC_DEVICE_HEAP": "64M"}, timeout=600)
    assert "DeviceHeapError:" in proc.stdout and "GPUC_DEVICE_HEAP" in proc.stdout, (proc.stdout, proc.stderr)
