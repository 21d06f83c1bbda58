"""``DuplicatedNoNeed`` (Enzyme's ``enzyme_dupnoneed``) in reverse mode with ``EnzymeOptions(noneed_writes=
True)``: the derivative leaves out the function's writes into an argument's memory when nothing in the function
reads or passes on that memory (``enzyme_plugin.ad.memory.unneeded_writes``): the array keeps its old values,
the gradients are the same. Without the option (the caller cannot promise that no other argument reaches that
memory) the writes are made, as with ``Duplicated``. Which writes go, on IR; the gradients against the exact
ones; the launch tape's gradient kernels, which mark the arrays a kernel only stores or adds into."""

from __future__ import annotations

import math

import numpy as np
import pytest

from enzyme_plugin import Duplicated, DuplicatedNoNeed, EnzymeOptions, Reverse, autodiff
from enzyme_plugin.ad.memory import unneeded_writes
from enzyme_plugin.launches.gradients import gradient_kernel
from gpucompiler import device as gd
from gpucompiler import jit, kernel
from gpucompiler import types as T
from gpucompiler.llvm import parse
from gpucompiler.targets import PTXTarget

HEADER = "declare void @g(ptr)\n"


def _named(writes) -> list[tuple[str, str]]:
    """Each write as (its opcode, the name of the address it writes)."""
    return [(w.opcode, (w.pointer_operand if w.opcode == "store" else w.operands[0]).name) for w in writes]


def _writes(body: str, args: str = "ptr %x, ptr %y, i64 %i, double %v") -> list[tuple[str, str]]:
    fn = parse(HEADER + f"define void @f({args}) {{\nentry:\n{body}  ret void\n}}\n").functions["f"]
    return _named(unneeded_writes(fn, {1}))


def test_stores_through_addresses_of_the_argument_go():
    got = _writes("  %p = getelementptr double, ptr %y, i64 %i\n  store double %v, ptr %p\n"
                  "  %q = getelementptr i8, ptr %p, i64 8\n  store double %v, ptr %q\n"
                  "  %old = atomicrmw fadd ptr %y, double %v monotonic\n")
    assert sorted(got) == [("atomicrmw", "y"), ("store", "p"), ("store", "q")]


@pytest.mark.parametrize("use", [
    "  %r = load double, ptr %p\n",                         # read back
    "  call void @g(ptr %p)\n",                             # passed on
    "  store ptr %p, ptr %x\n",                             # its address stored
    "  %old = atomicrmw fadd ptr %p, double %v monotonic\n  store double %old, ptr %x\n",  # the old value used
    "  store volatile double %v, ptr %p\n",                 # volatile
    "  %k = ptrtoint ptr %p to i64\n",                      # an integer of it
])
def test_any_other_use_of_the_memory_keeps_every_write(use):
    assert _writes("  %p = getelementptr double, ptr %y, i64 %i\n  store double %v, ptr %p\n" + use) == []


def test_only_the_arguments_named_lose_writes():
    fn = parse(HEADER + "define void @f(ptr %x, ptr %y, double %v) {\nentry:\n  store double %v, ptr %x\n"
               "  store double %v, ptr %y\n  ret void\n}\n").functions["f"]
    assert _named(unneeded_writes(fn, {1})) == [("store", "y")]
    assert unneeded_writes(fn, set()) == []


def _square_into(x, y):
    for i in range(x.shape[0]):
        y[i] = math.sin(x[i]) * x[i]


def _accumulate_into(x, y):
    for i in range(x.shape[0]):
        y[i] = y[i] + math.sin(x[i]) * x[i]


def _total_into(x, out):
    for i in range(x.shape[0]):
        out[0] += x[i] * x[i]


def _grad_square(x, dx, y, dy):
    autodiff(Reverse, _square_into, Duplicated(x, dx), DuplicatedNoNeed(y, dy))


def _grad_accumulate(x, dx, y, dy):
    autodiff(Reverse, _accumulate_into, Duplicated(x, dx), DuplicatedNoNeed(y, dy))


def _grad_total(x, dx, out, dout):
    autodiff(Reverse, _total_into, Duplicated(x, dx), DuplicatedNoNeed(out, dout))


NONEED = EnzymeOptions(noneed_writes=True)


@pytest.mark.parametrize("options", [(), NONEED], ids=["default", "noneed_writes"])
def test_a_written_only_array_keeps_its_old_values_with_the_option_and_the_gradient_either_way(options):
    x = np.linspace(0.1, 1.2, 7)
    y, dx, dy = np.full(7, 7.0), np.zeros(7), np.linspace(1.0, 2.0, 7)
    jit(_grad_square, plugins=("enzyme",), options=options)(x, dx, y, dy)
    np.testing.assert_allclose(dx, np.linspace(1.0, 2.0, 7) * (np.cos(x) * x + np.sin(x)), rtol=1e-14)
    np.testing.assert_array_equal(dy, np.zeros(7))
    if options:
        np.testing.assert_array_equal(y, np.full(7, 7.0))  # not written
    else:  # DuplicatedNoNeed is Duplicated: the writes are made
        np.testing.assert_allclose(y, np.sin(x) * x, rtol=1e-15)


def test_python_autodiff_makes_the_writes():
    x = np.linspace(0.1, 1.2, 7)
    y, dx, dy = np.full(7, 7.0), np.zeros(7), np.ones(7)
    autodiff(Reverse, _square_into, Duplicated(x, dx), DuplicatedNoNeed(y, dy))
    np.testing.assert_allclose(y, np.sin(x) * x, rtol=1e-15)
    np.testing.assert_allclose(dx, np.cos(x) * x + np.sin(x), rtol=1e-14)


def test_an_array_the_function_reads_is_written_with_the_option_too():
    x = np.linspace(0.1, 1.2, 7)
    y, dx, dy = np.full(7, 7.0), np.zeros(7), np.ones(7)
    jit(_grad_accumulate, plugins=("enzyme",), options=NONEED)(x, dx, y, dy)
    np.testing.assert_allclose(y, 7.0 + np.sin(x) * x, rtol=1e-15)
    np.testing.assert_allclose(dx, np.cos(x) * x + np.sin(x), rtol=1e-14)
    # `out[0] += ...` reads out: kept too
    out, dx, dout = np.array([1.0]), np.zeros(7), np.array([2.0])
    jit(_grad_total, plugins=("enzyme",), options=NONEED)(x, dx, out, dout)
    np.testing.assert_allclose(out, [1.0 + x @ x], rtol=1e-15)
    np.testing.assert_allclose(dx, 2.0 * 2 * x, rtol=1e-15)


@kernel
def _kernel_square(x, y):
    i = gd.grid(1)
    if i < x.shape[0]:
        y[i] = math.sin(x[i]) * x[i]


@kernel
def _kernel_total(y, w, out):
    i = gd.grid(1)
    if i < y.shape[0]:
        gd.atomic_add(out, 0, w[0] * y[i] * y[i])


def test_the_tapes_gradient_kernels_leave_out_the_stores_and_adds_they_need_not_redo():
    a = T.ArrayType(T.float64, 1, "C")
    ptx = {nn: gradient_kernel(_kernel_square, (True, True), nn).inspect_asm(a, a, a, a, target=PTXTarget())
           for nn in ((), (1,))}
    assert ptx[()].count("st.global") == ptx[(1,)].count("st.global") + 1  # y = sin(x)·x not stored again
    adds = {nn: gradient_kernel(_kernel_total, (True, True, True), nn).inspect_llvm(a, a, a, a, a, a,
                                                                                  target=PTXTarget())
            for nn in ((), (2,))}
    assert adds[()].count("atomicrmw fadd") > adds[(2,)].count("atomicrmw fadd")  # out's adds not made again


@kernel
def _double_then_square(x, y, out):  # y only stored, x read after the store: the same array passed twice
    i = gd.grid(1)
    if i < x.shape[0]:
        y[i] = 2.0 * x[i]
        gd.atomic_add(out, 0, x[i] * x[i])


def test_a_launch_passing_one_array_twice_has_the_gradient_kernel_that_writes_it():
    """``y``'s writes are left out of the gradient kernel only where ``y`` is no other parameter's array: in
    place (``x`` and ``y`` the same array) the second read of ``x`` sees the store, in the gradient too."""
    from enzyme_plugin import LaunchTape

    a0 = np.linspace(0.5, 1.5, 40)
    for same in (True, False):
        a, out = a0.copy(), np.zeros(1)
        b = a if same else np.zeros(40)
        tape = LaunchTape()
        with tape:
            _double_then_square[3, 16, "cpu"](a, b, out)
        x_after = 2 * a0 if same else a0
        np.testing.assert_allclose(out, [x_after @ x_after], rtol=1e-13)
        tape.backward(loss=out)
        np.testing.assert_allclose(tape.gradient(a), 8 * a0 if same else 2 * a0, rtol=1e-13)
        assert (tape.records[0].gradient is gradient_kernel(_double_then_square, (True, True, True))) == same
