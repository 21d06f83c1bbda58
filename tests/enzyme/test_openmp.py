"""OpenMP parallel regions (enzyme_plugin/ad/openmp.py): ``#pragma omp parallel for`` with static schedules,
``reduction(+:s)``, ``firstprivate``, ``critical`` sums, a collapsed nest and a region inside a loop,
differentiated through both routes (clang's optimised IR, and ``gpuc cc``'s AD inside the pipeline) and
run with libomp at 1, 2 and 4 threads: gradients match central differences of the primal and the
serial build (the same source without -fopenmp). Regions the engine does not model are ADErrors
naming the C line."""

from __future__ import annotations

import ctypes
import functools
import os
import re
import subprocess

import numpy as np
import pytest

import enzyme_plugin
from clang_levels import C_DIR, clang, compile_c, needs_clang
from enzyme_plugin.cc import clang_ir
from enzyme_plugin.cpipeline import differentiate_in_pipeline
from gpucompiler.cli import main as gpuc
from gpucompiler.llvm import parse
from gpucompiler.runtime import CPULibrary


def _libomp() -> str | None:
    cc = clang()
    if cc is None:
        return None
    path = subprocess.run([cc, "-print-file-name=libomp.so"], capture_output=True, text=True,
                          check=False).stdout.strip()
    return path if os.path.isabs(path) and os.path.exists(path) else None


LIBOMP = _libomp()
pytestmark = [needs_clang, pytest.mark.skipif(LIBOMP is None, reason="libomp (libomp-19-dev) is not installed")]

CASES = {"scale": 37, "dot": 38, "axpy": 37, "critical": 37, "nest": 36, "repeat": 29, "barrier": 41, "chunks": 34, "matvec": 16, "shared": 33, "split": 30, "global": 30}
THREADS = (1, 2, 4)
ROUTES = ("optimised", "pipeline")
_P = ctypes.POINTER(ctypes.c_double)


@functools.cache
def _omp() -> ctypes.CDLL:
    import llvmlite.binding as llvm

    assert LIBOMP is not None
    llvm.load_library_permanently(LIBOMP)  # the JIT resolves __kmpc_* in it
    return ctypes.CDLL(LIBOMP)


def _ir(route: str, openmp: bool) -> str:
    flags = ("-fopenmp",) if openmp else ()
    if route == "optimised":
        return compile_c("openmp.c", "O2", False, flags)
    return clang_ir(C_DIR / "openmp.c", 2, [f"-I{C_DIR}", "--target=x86_64-pc-linux-gnu", "-ffp-contract=off",
                                            *flags])


@functools.cache
def _differentiated(route: str, openmp: bool = True) -> str:
    text = _ir(route, openmp)
    return enzyme_plugin.differentiate(text) if route == "optimised" else differentiate_in_pipeline(text, 2)


@functools.cache
def _lib(route: str, openmp: bool = True):
    _omp()
    return CPULibrary.from_ir(_differentiated(route, openmp))


def _point(n: int) -> np.ndarray:
    return np.array([0.3 + 0.05 * i - 0.001 * i * i for i in range(n)])


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(_P)


def _gradient(lib, name: str, x: np.ndarray, threads: int) -> np.ndarray:
    _omp().omp_set_num_threads(threads)
    grad = lib.function(f"{name}_grad", None, _P, _P, ctypes.c_int)
    dx = np.zeros_like(x)
    grad(_ptr(x), _ptr(dx), len(x))
    return dx


def _central_differences(lib, name: str, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    primal = lib.function(f"{name}_primal", ctypes.c_double, _P, ctypes.c_int)
    out = np.zeros_like(x)
    for i in range(len(x)):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        out[i] = (primal(_ptr(up), len(x)) - primal(_ptr(down), len(x))) / (2 * h)
    return out


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_finite_differences_at_1_2_4_threads(route, name):
    lib = _lib(route)
    x = _point(CASES[name])
    _omp().omp_set_num_threads(2)
    fd = _central_differences(lib, name, x)
    assert np.abs(fd).max() > 1.0  # the case has a gradient to get wrong
    for threads in THREADS:
        np.testing.assert_allclose(_gradient(lib, name, x, threads), fd, rtol=1e-6, atol=1e-7,
                                   err_msg=f"{name}, {route}, {threads} threads")


FORWARD = ("scale", "dot", "axpy", "critical", "barrier")


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", FORWARD)
def test_forward_mode_matches_finite_differences_along_a_direction(route, name):
    lib = _lib(route)
    primal = lib.function(f"{name}_primal", ctypes.c_double, _P, ctypes.c_int)
    fwd = lib.function(f"{name}_fwd", ctypes.c_double, _P, _P, ctypes.c_int)
    x = _point(CASES[name])
    v = np.cos(np.arange(len(x)) * 1.7)
    h = 1e-6
    _omp().omp_set_num_threads(2)
    fd = (primal(_ptr(x + h * v), len(x)) - primal(_ptr(x - h * v), len(x))) / (2 * h)
    assert abs(fd) > 0.1
    for threads in THREADS:
        _omp().omp_set_num_threads(threads)
        assert fwd(_ptr(x), _ptr(v.copy()), len(x)) == pytest.approx(fd, rel=1e-6), (name, route, threads)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_parallel_gradient_matches_the_serial_build(route, name):
    x = _point(CASES[name])
    serial = _gradient(_lib(route, openmp=False), name, x, 1)
    for threads in THREADS:  # reductions add in another order: rounding only
        np.testing.assert_allclose(_gradient(_lib(route), name, x, threads), serial, rtol=1e-12, atol=1e-12,
                                   err_msg=f"{name}, {route}, {threads} threads")


@functools.cache
def _lib_at(level: int):
    """c/openmp.c with -g through the pipeline at ``level`` (at -O0 clang outlines each body once more, into
    a ``*_debug__`` function the outlined one calls)."""
    _omp()
    text = clang_ir(C_DIR / "openmp.c", level, [f"-I{C_DIR}", "--target=x86_64-pc-linux-gnu", "-ffp-contract=off",
                                                "-fopenmp"], debug=True)
    return CPULibrary.from_ir(differentiate_in_pipeline(text, level))


@pytest.mark.parametrize("level", [0, 1, 3])
def test_gradients_through_the_pipeline_at_other_levels(level):
    lib = _lib_at(level)
    for name, n in sorted(CASES.items()):
        x = _point(n)
        _omp().omp_set_num_threads(2)
        fd = _central_differences(lib, name, x)
        for threads in (1, 4):
            np.testing.assert_allclose(_gradient(lib, name, x, threads), fd, rtol=1e-6, atol=1e-7,
                                       err_msg=f"{name}, -O{level}, {threads} threads")


def test_the_reverse_is_a_parallel_region_with_atomic_adjoints():
    """The gradient of the collapsed nest forks twice (forward, then reverse with the forward's team size);
    the reverse body adds the adjoint of the shared column a[j] atomically."""
    module = parse(_differentiated("optimised"))
    grad = module.functions["nest_grad"]
    forks = [i for i in grad.instructions() if i.opcode == "call" and _callee(i) == "__kmpc_fork_call"]
    wrappers = [i.args[2].name for i in forks]
    assert len(forks) == 2 and wrappers[0].startswith("augmented_") and wrappers[1].startswith("diffe_"), wrappers
    text = str(module)
    assert "@__kmpc_push_num_threads" in text
    reverse = module.functions[wrappers[1]]  # the reverse of the body, inlined into it by O2 or called
    callees = [i.callee for i in reverse.instructions() if i.opcode == "call" and _callee(i).startswith("diffe_")]
    assert any(i.opcode == "atomicrmw" and i.type.kind == "float" for f in [reverse, *callees] for i in f.instructions())


def _reverse_region(module, grad: str):
    """The functions of the reverse parallel region of ``grad``'s differentiated call: the wrapper the
    second fork calls and the reverse bodies it calls (O2 may have inlined them)."""
    forks = [i for i in module.functions[grad].instructions() if i.opcode == "call" and _callee(i) == "__kmpc_fork_call"]
    reverse = forks[-1].args[2]
    return [reverse, *(i.callee for i in reverse.instructions() if i.opcode == "call" and _callee(i).startswith("diffe_"))]


def test_a_barrier_is_mirrored_in_the_reverse_region():
    """Two worksharing loops: the reverse of the second adds into adjoints of y that other threads' reverse
    of the first loop reads, so a barrier separates them in the reverse too."""
    module = parse(_differentiated("optimised"))
    calls = [_callee(i) for f in _reverse_region(module, "barrier_grad") for i in f.instructions() if i.opcode == "call"]
    assert calls.count("__kmpc_barrier") >= 2, calls  # the barrier between the loops, and the one ending the second


def test_vectors_of_adjoints_into_shared_memory_are_added_lane_by_lane_atomically():
    """clang vectorizes matvec's inner loop over the shared w: the reverse region adds each lane's adjoint
    with its own atomic add; no plain vector store (a read-modify-write other threads race with) is left."""
    module = parse(_differentiated("optimised"))
    insts = [i for f in _reverse_region(module, "matvec_grad") for i in f.instructions()]
    assert any(i.type.kind == "vector" for i in insts)  # the region is vectorized
    assert not [i for i in insts if i.opcode == "store" and i.value_operand.type.kind == "vector"]
    assert sum(i.opcode == "atomicrmw" for i in insts) >= 16


DOCS = C_DIR.parents[2] / "docs" / "enzyme.md"


def test_the_docs_example_runs_through_gpuc_cc(tmp_path):
    """docs/enzyme.md's OpenMP example, compiled with the command the page gives (gpuc cc -O2 -fopenmp):
    the gradient of a dot product at 1, 2 and 4 threads is (y, x)."""
    text = DOCS.read_text()
    section = text[text.index("## OpenMP parallel regions"):]
    source = re.search(r"^```c\n(.*?)^```", section, re.S | re.M)
    assert source is not None
    (tmp_path / "dot.c").write_text(source.group(1))
    assert gpuc(["cc", "-O2", "--clang-flag=-fopenmp", str(tmp_path / "dot.c"), "-o", str(tmp_path / "dot.ll")]) == 0
    _omp()
    lib = CPULibrary.from_ir((tmp_path / "dot.ll").read_text())
    grad = lib.function("dot_grad", None, _P, _P, _P, _P, ctypes.c_int)
    x, y = _point(50), np.linspace(-1.0, 2.0, 50)
    for threads in THREADS:
        _omp().omp_set_num_threads(threads)
        dx, dy = np.zeros(50), np.zeros(50)
        grad(_ptr(x), _ptr(dx), _ptr(y), _ptr(dy), 50)
        np.testing.assert_allclose(dx, y, rtol=1e-15)
        np.testing.assert_allclose(dy, x, rtol=1e-15)


def _callee(inst) -> str:
    return getattr(inst.callee, "name", "")


REFUSED = {
    1: (9, "dynamic, guided or runtime schedule"),
    2: (15, "depends on the thread number"),
    3: (24, "critical section"),
    4: (33, "num_threads"),
    5: (39, "integer load from memory holding double"),
    6: (46, "__kmpc_single"),
    7: (55, "batch mode through an OpenMP parallel region"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_unmodeled_regions_are_errors_naming_the_c_line(case):
    line, what = REFUSED[case]
    text = compile_c("openmp_refused.c", "O2", True, ("-fopenmp", f"-DCASE={case}"))
    with pytest.raises(enzyme_plugin.ADError, match=rf"openmp_refused\.c:{line}:.*{re.escape(what)}"):
        enzyme_plugin.differentiate(text)


