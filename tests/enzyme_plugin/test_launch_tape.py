"""Reverse-mode AD across kernel launches (``LaunchTape``): gradients against analytic derivatives and
central finite differences of the host program, on the CPU grid emulation (and, marked ``gpu``, on the
device); the kernels' written arrays read from their typed IR; the errors of misuse."""

from __future__ import annotations

import ctypes
import gc
import warnings
from typing import Any

import numpy as np
import pytest

import launch_programs as P
from enzyme_plugin import (Active, CustomRuleError, KernelGradientError, LaunchTape, LaunchTapeError, Reverse,
                           autodiff, custom_rule, register_gradient)
from enzyme_plugin.launches.gradients import GRADIENT_ATTRIBUTE
from enzyme_plugin.launches.writes import written_parameters
from gpucompiler import types as gtypes
from gpucompiler.targets import PTXTarget
from gpucompiler.errors import ArgumentTypeError, LaunchError, TypeInferenceError

CPU = "cpu"


def run_program(x, w, device=CPU, split=False):
    y, out = np.zeros_like(x), np.zeros(1)
    tape = LaunchTape(split=split)
    with tape:
        P.program(x, y, w, out, 4, 32, device)
    return tape, y, out


def program_value(x, w) -> float:
    y, out = np.zeros_like(x), np.zeros(1)
    P.program(x, y, w, out, 4, 32, CPU)
    return float(out[0])


@pytest.mark.parametrize("split", [False, True], ids=["recompute", "split"])
def test_three_launch_program_gradient_matches_analytic_and_finite_differences(split):
    x, w = np.linspace(0.1, 1.2, 100), np.array([3.0])
    tape, y, out = run_program(x, w, split=split)
    assert np.isclose(out[0], 3.0 * np.sum(np.sin(x * x)))
    y_end = y.copy()
    tape.backward(loss=out)
    assert np.allclose(tape.gradient(x), 3.0 * np.cos(x * x) * 2 * x, rtol=1e-13)
    assert np.isclose(tape.gradient(w)[0], np.sum(np.sin(x * x)), rtol=1e-13)
    assert np.array_equal(y, y_end)             # the program's arrays keep their values from the recording
    h = 1e-6
    for k in (0, 37, 99):
        e = np.zeros_like(x)
        e[k] = h
        fd = (program_value(x + e, w) - program_value(x - e, w)) / (2 * h)
        assert abs(tape.gradient(x)[k] - fd) < 1e-6 * max(1.0, abs(fd))


@pytest.mark.parametrize("split", [False, True], ids=["recompute", "split"])
def test_input_overwritten_by_a_later_launch_still_gives_its_gradient(split):
    # square reads x; zero_out then overwrites x: the replay of square must see x as it was
    x = np.linspace(-1.0, 1.0, 64)
    x0, y, out, w = x.copy(), np.zeros(64), np.zeros(1), np.array([1.0])
    tape = LaunchTape(split=split)
    with tape:
        P.square[2, 32, CPU](x, y)
        P.zero_out[2, 32, CPU](x)
        P.weighted_total[2, 32, CPU](y, w, out)
    tape.backward(loss=out)
    assert np.allclose(tape.gradient(x), 2 * x0)   # without the snapshot of x: zeros
    assert not x.any()                             # x as the recording left it


@pytest.mark.parametrize("split", [False, True], ids=["recompute", "split"])
def test_loop_kernel_gradient_matches_finite_differences(split):
    x, y = np.linspace(-0.9, 0.9, 50), np.zeros(50)
    tape = LaunchTape(split=split)
    with tape:
        P.power_steps[2, 32, CPU](x, y, 5)
    dy = np.linspace(1.0, 2.0, 50)
    tape.backward(grads=[(y, dy)])

    def f(v):
        acc = np.ones_like(v)
        for _ in range(5):
            acc = acc * v + 0.5
        return acc
    fd = (f(x + 1e-6) - f(x - 1e-6)) / 2e-6
    assert np.allclose(tape.gradient(x), dy * fd, rtol=1e-7)


@pytest.mark.parametrize("split", [False, True], ids=["recompute", "split"])
def test_two_dimensional_grid_gradient(split):
    a, s = np.arange(1.0, 1.0 + 6 * 10).reshape(6, 10) / 10, np.zeros(6)
    tape = LaunchTape(split=split)
    with tape:
        P.rows[(2, 3), (4, 4), CPU](a, s)
    assert np.allclose(s, (a * a * np.arange(1, 11)).sum(axis=1))
    seed = np.arange(1.0, 7.0)
    tape.backward(grads=[(s, seed)])
    assert np.allclose(tape.gradient(a), seed[:, None] * 2 * a * np.arange(1, 11), rtol=1e-13)


def test_float_scalar_arguments_are_constants_and_arrays_get_gradients():
    x, y = np.linspace(0.0, 1.0, 40), np.ones(40)
    tape = LaunchTape()
    with tape:
        P.axpy[2, 32, CPU](2.5, x, y)
    tape.backward(grads=[(y, np.ones(40))])
    assert np.allclose(tape.gradient(x), 2.5) and np.allclose(tape.gradient(y), 1.0)


def test_zero_then_backward_again_gives_the_same_gradient():
    x, w = np.linspace(0.1, 1.0, 30), np.array([1.0])
    tape, _, out = run_program(x, w)
    tape.backward(loss=out)
    once = tape.gradient(x).copy()
    tape.zero()
    assert not tape.gradient(x).any() and not tape.gradient(out).any()
    tape.backward(loss=out)
    assert np.array_equal(tape.gradient(x), once)


def test_split_tape_is_consumed_by_backward_and_reset_frees_unreversed_tapes():
    x, w = np.linspace(0.1, 1.0, 30), np.array([1.0])
    tape, _, out = run_program(x, w, split=True)
    tape.backward(loss=out)
    with pytest.raises(LaunchTapeError, match="already reversed"):
        tape.backward(loss=out)
    other, _, _ = run_program(x, w, split=True)
    assert all(r.holders is not None and r.holders.any() for r in other.records)
    other.reset()
    assert other.records == []


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]


def heap_in_use() -> int:
    """Bytes glibc's malloc has handed out (all arenas): what the emulation's per-thread tapes take."""
    mallinfo2 = getattr(ctypes.CDLL(None), "mallinfo2", None)
    if mallinfo2 is None:
        pytest.skip("counting the heap needs glibc's mallinfo2 (glibc >= 2.33)")
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return info.uordblks + info.hblkhd


@pytest.mark.slow  # many rounds of a recorded program: with the slow set
def test_split_tapes_are_freed_by_backward_and_reset_the_heap_does_not_grow():
    x, y = np.linspace(0.1, 1.0, 4096), np.zeros(4096)

    def record():
        tape = LaunchTape(split=True)
        with tape:
            P.power_steps[16, 256, CPU](x, y, 64)   # a loop per thread: a tape of 64 steps each
        return tape

    record().backward(grads=[(y, np.ones_like(y))])   # compiled, caches filled
    growth = {}
    for how in ("backward", "reset", "dropped"):
        before = heap_in_use()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(4):
                tape = record()
                if how == "backward":
                    tape.backward(grads=[(y, np.ones_like(y))])
                elif how == "reset":
                    tape.reset()
                del tape
                gc.collect()
        growth[how] = (heap_in_use() - before) / 4
        warned = [w for w in caught if issubclass(w.category, ResourceWarning)]
        assert len(warned) == (4 if how == "dropped" else 0)
    # a dropped tape keeps 4096 loop arrays of 64 steps on the heap (the measure sees a leak; the stacks live in
    # the tape's per-thread rows, freed with it); backward and reset free them
    assert growth["dropped"] > 4096 * 64
    assert growth["backward"] < growth["dropped"] / 8 and growth["reset"] < growth["dropped"] / 8


def test_hand_written_gradient_replaces_the_generated_one():
    x, y = np.array([-3.0, -0.5, 0.25, 2.0]), np.zeros(4)
    register_gradient(P.clip, P.clip_straight_through)
    tape = LaunchTape()
    with tape:
        P.clip[1, 32, CPU](x, y)
    tape.backward(grads=[(y, np.array([1.0, 2.0, 3.0, 4.0]))])
    assert np.array_equal(tape.gradient(x), [1.0, 2.0, 3.0, 4.0])   # generated: [0, 2, 3, 0]


def test_hand_written_gradient_with_wrong_parameters_is_refused_at_registration():
    def too_few(x, y, dx):
        pass

    def swapped(y, x, dy, dx):
        pass

    for bad in (too_few, swapped):
        with pytest.raises(KernelGradientError, match=r"takes its 2 parameters then one adjoint each") as info:
            register_gradient(P.square, bad)
        assert info.value.filename == __file__ and info.value.line == bad.__code__.co_firstlineno
        assert "def " in info.value.hint


def test_custom_rule_of_a_kernel_is_a_typed_error_pointing_to_register_gradient():
    def square_grad(x, dx, y, dy):
        pass

    with pytest.raises(CustomRuleError, match="square is a @kernel") as info:
        custom_rule(P.square, reverse=square_grad)
    assert isinstance(info.value, TypeError) and info.value.filename == __file__
    assert "register_gradient(square, square_grad)" in info.value.hint
    with pytest.raises(CustomRuleError, match="expected a Python function, got int"):
        custom_rule(3, reverse=square_grad)


def test_autodiff_of_a_kernel_object_points_to_the_launch_tape():
    for f in (P.square, P.square[1, 32]):
        with pytest.raises(ArgumentTypeError, match="LaunchTape") as info:
            autodiff(Reverse, f, Active(1.0))
        assert info.value.filename == __file__


def test_misuse_is_a_typed_error_at_the_users_line():
    x, w = np.linspace(0.1, 1.0, 30), np.array([1.0])
    tape, _, out = run_program(x, w)
    with pytest.raises(LaunchTapeError, match="no recorded launch took") as info:
        tape.backward(grads=[(np.zeros(1), np.ones(1))])
    assert info.value.filename == __file__
    with pytest.raises(LaunchTapeError, match=r"gradient\(\) of a ndarray that no recorded launch took"):
        tape.gradient(np.zeros(3))
    with pytest.raises(LaunchTapeError, match="inside the tape's `with` block"), tape:
        tape.backward(loss=out)
    with pytest.raises(LaunchError, match="already being recorded"), LaunchTape(), LaunchTape():
        pass
    buf = np.zeros(40)
    with pytest.raises(LaunchTapeError, match="overlap in memory"), LaunchTape():
        P.square[1, 32, CPU](buf[:30], buf[10:])


def test_written_parameters_come_from_the_typed_ir_through_calls():
    t = P.through_helper
    argtypes = t.argument_types((np.ones(3), np.ones(3), np.ones(3)))
    frame = t.specialization(argtypes).infer(PTXTarget(), ())[1]
    assert written_parameters(frame) == {1, 2}           # y directly, z through helper_store; x only read
    s = P.weighted_total
    frame = s.specialization(s.argument_types((np.ones(3), np.ones(1), np.ones(1)))).infer(PTXTarget(), ())[1]
    assert written_parameters(frame) == {2}              # the atomic add writes out


def test_gradient_kernels_compile_to_ptx_that_ptxas_accepts(check_ptx):
    from enzyme_plugin.launches.gradients import gradient_kernel, split_kernel

    x = np.ones(8)
    for k in (gradient_kernel(P.power_steps, (True, True, False)),):
        check_ptx(k.inspect_asm(x, x, x, x, 3))
    s = split_kernel(P.power_steps, (True, True, False))
    check_ptx(s.inspect_asm(0, np.zeros((4, 1), dtype=np.int64), x, x, x, x, 3))
    rows = np.zeros((4, 32), dtype=np.int64)          # split tapes in per-thread rows (the launch tape's)
    check_ptx(split_kernel(P.square, (True, True)).inspect_asm(0, rows, x, x, x, x))
    check_ptx(split_kernel(P.weighted_total, (True, True, True)).inspect_asm(0, rows, x, x, x, x, x, x))


@pytest.mark.gpu
@pytest.mark.parametrize("split", [False, True], ids=["recompute", "split"])
def test_three_launch_program_on_the_gpu_matches_the_emulation(split):
    cp = pytest.importorskip("cupy")
    x, w = np.linspace(0.1, 1.2, 1000), np.array([3.0])
    dx, y, out = cp.asarray(x), cp.zeros(1000), cp.zeros(1)
    dw = cp.asarray(w)
    tape = LaunchTape(split=split)
    with tape:
        P.program(dx, y, dw, out, 8, 128, None)
    tape.backward(loss=out)
    assert np.allclose(cp.asnumpy(tape.gradient(dx)), 3.0 * np.cos(x * x) * 2 * x, rtol=1e-12)
    assert np.isclose(float(tape.gradient(dw)[0]), np.sum(np.sin(x * x)), rtol=1e-12)


def test_cuda_guide_host_program_split_tape_on_the_emulation():
    x, y = np.array([1.4]), np.zeros(1)
    with LaunchTape(split=True) as tape:
        P.guide_host(x, y, CPU)
    tape.backward(grads=[(y, np.ones(1))])
    assert y[0] == 1.4 * 1.4 and tape.gradient(x)[0] == 2 * 1.4


@pytest.mark.gpu
def test_cuda_guide_host_program_split_tape_on_the_gpu():
    cp = pytest.importorskip("cupy")
    x, y = cp.asarray([1.4]), cp.zeros(1)
    with LaunchTape(split=True) as tape:
        P.guide_host(x, y, None)
    tape.backward(grads=[(y, cp.ones(1))])
    assert float(y[0]) == 1.4 * 1.4 and float(tape.gradient(x)[0]) == 2 * 1.4


def test_arrays_of_an_unknown_library_are_a_typed_error_at_the_users_line():
    class Foreign:                      # array-like, but no library the tape knows to allocate shadows with
        def __init__(self):
            self.buffer = np.zeros(8)
            self.__array_interface__ = self.buffer.__array_interface__

    x, y = Foreign(), np.zeros(8)
    with pytest.raises(ArgumentTypeError, match="NumPy arrays") as info, LaunchTape():
        P.square[1, 32, CPU](x, y)
    assert info.value.filename == __file__


def test_autodiff_of_a_host_function_that_launches_kernels_points_to_the_launch_tape():
    from enzyme_plugin import Duplicated

    for host in (P.host_program, P.host_program_prepared):
        x, y = np.ones(4), np.zeros(4)
        with pytest.raises(TypeInferenceError, match="in compiled code") as info:
            autodiff(Reverse, host, Duplicated(x, np.zeros(4)), Duplicated(y, np.ones(4)))
        assert "LaunchTape" in info.value.hint and info.value.filename == P.__file__


def test_read_parameters_leave_out_arrays_the_kernel_only_stores_into():
    from enzyme_plugin.launches.writes import accumulated_parameters, read_parameters

    def frame(k, *args):
        return k.specialization(k.argument_types(args)).infer(PTXTarget(), ())[1]

    x = np.ones(3)
    assert read_parameters(frame(P.square, x, x)) == {0}                  # y[i] = ...: y only stored into
    assert read_parameters(frame(P.zero_out, x)) == set()
    assert read_parameters(frame(P.sin_in_place, x)) == {0}               # y[i] = sin(y[i])
    assert read_parameters(frame(P.weighted_total, x, x[:1], x[:1])) == {0, 1}   # out only added into
    assert accumulated_parameters(frame(P.weighted_total, x, x[:1], x[:1])) == {2}
    assert read_parameters(frame(P.ticket_scaled, x, x[:1], x)) == {0, 1}      # the old value used: a read
    assert accumulated_parameters(frame(P.square, x, x)) == set()
    assert read_parameters(frame(P.through_helper, x, x, x)) == {0}       # z stored through helper_store


def test_a_launch_that_only_stores_into_a_fresh_array_takes_no_snapshot_and_the_gradient_holds():
    x, w = np.linspace(0.1, 1.2, 100), np.array([3.0])
    tape, y, out = run_program(x, w)
    first = tape.records[0]
    assert first.launch.kernel is P.square and first.snapshots == []     # y: stored, never read before
    assert tape.records[-1].snapshots == []                                # out: only added into
    y_end = y.copy()
    for _ in range(2):  # the gradient kernel adds into out again: backward puts its final value back
        tape.zero()
        tape.backward(loss=out)
        assert np.allclose(tape.gradient(x), 3.0 * np.cos(x * x) * 2 * x, rtol=1e-13)
        assert np.array_equal(y, y_end) and np.isclose(out[0], 3.0 * np.sum(np.sin(x * x)), rtol=1e-14)


@pytest.mark.parametrize("split", [False, True], ids=["recompute", "split"])
def test_arrays_added_into_keep_their_values_and_a_snapshot_where_an_earlier_launch_read_them(split):
    """Two launches add into out, a third reads it between them: the first needs no snapshot, the second one
    (an earlier launch took out), and after backward out holds its final value."""
    x, w = np.linspace(0.1, 1.2, 64), np.array([1.5])
    y, out, z = np.zeros(64), np.zeros(1), np.zeros(64)
    tape = LaunchTape(split=split)
    with tape:
        P.weighted_total[2, 32, CPU](x, w, out)           # out = 1.5 * sum(x)
        P.square[2, 32, CPU](x, y)                        # y = x * x  (out unchanged)
        P.scale_by[2, 32, CPU](y, out, z)                 # z = y * out[0]: reads out
        P.weighted_total[2, 32, CPU](z, w, out)           # out += 1.5 * sum(z)
    assert tape.records[0].snapshots == [] and [j for j, _ in tape.records[3].snapshots] == [2]
    s = 1.5 * np.sum(x)
    final = s + 1.5 * np.sum(x * x) * s
    assert np.isclose(out[0], final, rtol=1e-14)
    tape.backward(loss=out)
    # d final / d x_i = 1.5 + 1.5 * (2 x_i s + sum(x^2) * 1.5)
    expected = 1.5 + 1.5 * (2 * x * s + np.sum(x * x) * 1.5)
    assert np.allclose(tape.gradient(x), expected, rtol=1e-12)
    assert np.isclose(out[0], final, rtol=1e-14) and np.allclose(z, x * x * s, rtol=1e-14)


@pytest.mark.parametrize("split", [False, True], ids=["recompute", "split"])
def test_an_array_stored_into_after_an_earlier_launch_read_it_is_snapshot(split):
    x = np.linspace(-1.0, 1.0, 64)
    x0, y, out, w = x.copy(), np.zeros(64), np.zeros(1), np.array([2.0])
    tape = LaunchTape(split=split)
    with tape:
        P.square[2, 32, CPU](x, y)
        P.zero_out[2, 32, CPU](x)                 # only stores into x, but square read it before
        P.square[2, 32, CPU](y, y)                # the same array as input and output: y = y * y in place
        P.weighted_total[2, 32, CPU](y, w, out)
    assert [j for j, _ in tape.records[1].snapshots] == [0] and [j for j, _ in tape.records[2].snapshots] == [1]
    tape.backward(loss=out)
    assert np.allclose(tape.gradient(x), 2.0 * 4 * x0 ** 3)    # out = 2 * sum(x^4)
    assert not x.any() and np.allclose(y, x0 ** 4)


def _rows_kept_their_tapes(holders) -> bool:
    """Every thread's stack is still the block after its row's header (base == the row's fixed block): no
    thread's tape grew onto the heap."""
    rows = np.asarray(holders)
    return bool(np.array_equal(rows[:, 0], rows[:, 3]))


@pytest.mark.parametrize("n", [1, 100, 128])
def test_split_tapes_live_in_one_array_of_rows_and_give_the_recompute_gradient(n):
    x, w = np.linspace(0.1, 1.2, n), np.array([3.0])
    grads = {}
    for split in (False, True):
        tape, _, out = run_program(x, w, split=split)
        if split:
            for r in tape.records:
                threads = r.launch.grid[0] * r.launch.block[0]
                assert r.holders.shape[0] == threads and r.holders.shape[1] * 8 >= 40
                base = r.holders.ctypes.data + 32 + 8 * r.holders.shape[1] * np.arange(threads)
                assert np.array_equal(r.holders[:, 3], base)          # each stack starts in its own row
                assert _rows_kept_their_tapes(r.holders)
        tape.backward(loss=out)
        grads[split] = (tape.gradient(x).copy(), tape.gradient(w).copy())
    assert np.array_equal(grads[True][0], grads[False][0]) and np.allclose(grads[True][1], grads[False][1], rtol=1e-14)
    assert np.allclose(grads[True][0], 3.0 * np.cos(x * x) * 2 * x, rtol=1e-13)
    h, k = 1e-6, n // 2
    e = np.zeros_like(x)
    e[k] = h
    fd = (program_value(x + e, w) - program_value(x - e, w)) / (2 * h)
    assert abs(grads[True][0][k] - fd) < 1e-6 * max(1.0, abs(fd))


def test_split_tape_rows_too_small_grow_onto_the_heap_and_the_gradient_holds():
    x, w = np.linspace(0.1, 1.2, 100), np.array([3.0])
    tape, _, _ = run_program(x, w, split=True)   # the plans exist (and have measured their tapes)
    tape.reset()
    plans = {id(r.plan): r.plan for r in run_program(x, w, split=True)[0].records}.values()
    saved = [dict(p.tapes._bytes) for p in plans]
    try:
        for p in plans:
            p.tapes._bytes[True] = 40          # the header and 8 bytes: every stack outgrows its row
        tape, _, out = run_program(x, w, split=True)
        assert not any(_rows_kept_their_tapes(r.holders) for r in tape.records)
        tape.backward(loss=out)
        assert np.allclose(tape.gradient(x), 3.0 * np.cos(x * x) * 2 * x, rtol=1e-13)
        assert np.isclose(tape.gradient(w)[0], np.sum(np.sin(x * x)), rtol=1e-13)
    finally:
        for p, b in zip(plans, saved):
            p.tapes._bytes.clear()
            p.tapes._bytes.update(b)


def test_split_tape_rows_take_the_size_the_first_reverse_launch_found():
    x = np.linspace(-0.9, 0.9, 64).astype(np.float32)   # a signature no other test records in split mode
    sizes, used = [], []
    for _ in range(2):
        y = np.ones(64, dtype=np.float32)
        tape = LaunchTape(split=True)
        with tape:
            P.axpy[2, 32, CPU](2.5, x, y)
        sizes.append(tape.records[0].holders.shape[1] * 8)
        used.append(int(tape.records[0].holders[:, 1].max()))
        tape.backward(grads=[(y, np.full(64, 2.0, dtype=np.float32))])
        assert np.array_equal(tape.gradient(x), np.full(64, 5.0, dtype=np.float32))
    assert sizes[0] == 256 and used[0] == used[1] > 0
    assert sizes[1] == 32 + (used[0] + 16 + 15) // 16 * 16


@pytest.mark.gpu
def test_split_tapes_of_a_million_threads_live_in_rows_on_the_gpu():
    cp = pytest.importorskip("cupy")
    n = 1 << 20
    x = np.linspace(0.1, 1.2, n)
    dx, y, out, dw = cp.asarray(x), cp.zeros(n), cp.zeros(1), cp.asarray([3.0])
    for _ in range(2):                                  # the second round uses the measured row size
        out[0] = 0.0
        tape = LaunchTape(split=True)
        with tape:
            P.program(dx, y, dw, out, n // 256, 256, None)
        assert all(_rows_kept_their_tapes(cp.asnumpy(r.holders)) for r in tape.records)
        tape.backward(loss=out)
    assert np.allclose(cp.asnumpy(tape.gradient(dx)), 3.0 * np.cos(x * x) * 2 * x, rtol=1e-12)


@pytest.mark.parametrize("split", [False, True], ids=["recompute", "split"])
def test_strided_views_get_shadows_of_their_layout_and_their_gradient(split):
    base = np.linspace(0.1, 1.2, 128)
    x, y = base[::2], np.zeros((64, 2))[:, 0]          # both strided (array layout "A")
    tape = LaunchTape(split=split)
    with tape:
        P.square[2, 32, CPU](x, y)
        P.sin_in_place[2, 32, CPU](y)
    tape.backward(grads=[(y, np.ones(64))])
    assert np.allclose(tape.gradient(x), np.cos(x * x) * 2 * x, rtol=1e-13)
    assert not tape.gradient(x).flags.c_contiguous       # the shadow has the view's layout


def test_split_tapes_too_large_for_memory_are_a_typed_error_at_the_users_line():
    x, y = np.ones(4), np.zeros(4)
    with pytest.raises(LaunchTapeError, match="no memory for the tapes") as info, LaunchTape(split=True):
        P.square[(65535, 65535, 64), 1024, CPU](x, y)
    assert info.value.filename == __file__ and "LaunchTape()" in info.value.hint


def test_reset_reuses_the_shadows_nobody_holds_and_leaves_held_gradients_alone():
    x, w = np.linspace(0.1, 1.2, 128), np.array([3.0])
    y, out = np.zeros(128), np.zeros(1)
    tape = LaunchTape()
    want = 3.0 * np.cos(x * x) * 2 * x

    def round_():
        out[0] = 0.0
        tape.reset()
        with tape:
            P.program(x, y, w, out, 4, 32, CPU)
        tape.backward(loss=out)

    round_()
    address = tape.gradient(x).ctypes.data
    round_()                                             # the same memory, zeroed first: not twice the gradient
    assert tape.gradient(x).ctypes.data == address and np.allclose(tape.gradient(x), want, rtol=1e-13)
    held, view = tape.gradient(x), tape.gradient(w)[:]   # the caller keeps a gradient and a view of another
    kept_x, kept_w = held.copy(), view.copy()
    round_()
    assert tape.gradient(x) is not held and tape.gradient(w).ctypes.data != view.ctypes.data
    assert np.array_equal(held, kept_x) and np.array_equal(view, kept_w)
    assert np.allclose(tape.gradient(x), want, rtol=1e-13) and np.isclose(tape.gradient(w)[0], np.sum(np.sin(x * x)))


def _recorded_square(x, y):
    tape = LaunchTape()
    with tape:
        P.square[1, 64, "cpu"](x, y)
    return tape


def test_seeds_that_do_not_fit_are_typed_errors_at_the_call_not_broadcasts():
    """``loss=`` of a 4-element array added 1 to every element; an adjoint of another shape raised NumPy's
    broadcast ValueError from inside the tape."""
    x, y = np.linspace(0.1, 1.2, 4), np.zeros(4)
    tape = _recorded_square(x, y)
    with pytest.raises(LaunchTapeError, match=r"loss= takes a one-element array, got one of shape \(4,\)") as info:
        tape.backward(loss=y)
    assert info.value.filename == __file__
    with pytest.raises(LaunchTapeError, match=r"adjoint of an array of shape \(4,\) has shape \(3,\)"):
        tape.backward(grads=[(y, np.ones(3))])
    assert not tape.gradient(x).any()  # nothing ran
    tape.backward(grads=[(y, np.ones(4))])
    np.testing.assert_allclose(tape.gradient(x), 2 * x, rtol=1e-15)


@pytest.mark.parametrize("dtype", [np.int64, np.complex128])
def test_an_array_without_a_shadow_says_why(dtype):
    x, y = np.arange(4).astype(dtype), np.zeros(4, dtype)
    tape = _recorded_square(x, y)
    with pytest.raises(LaunchTapeError, match=f"a {np.dtype(dtype).name} array, which has no shadow: launch "
                                              "tapes differentiate float32 and float64"):
        tape.backward(grads=[(y, np.ones(4, dtype))])
    with pytest.raises(LaunchTapeError, match="no recorded launch took"):
        tape.gradient(np.zeros(4))


def test_register_gradient_errors_name_the_call():
    with pytest.raises(KernelGradientError, match="expected a @kernel") as info:
        register_gradient(P.clip_straight_through, P.clip_straight_through)
    assert info.value.filename == __file__
    with pytest.raises(KernelGradientError, match="must be a Python function or a @kernel, got int") as info:
        register_gradient(P.clip, 3)
    assert info.value.filename == __file__


class _Sub(np.ndarray):
    """A plain NumPy subclass: typed as an array like NumPy's own, launched through the general path."""


def _square_round(tape, x, y, grid, block, dy=None):
    tape.reset()
    with tape:
        P.square[grid, block, CPU](x, y)
        P.sin_in_place[grid, block, CPU](y)
    tape.backward(grads=[(y, np.ones(y.shape[0]) if dy is None else dy)])
    return tape.gradient(x)


@pytest.mark.parametrize("split", [False, True], ids=["recompute", "split"])
def test_launches_of_other_layouts_after_a_cached_one_get_their_own_plans(split):
    """What a tape works out once per kernel and signature (the plan, the gradient kernel's argument types,
    the launches of a configuration) must not be reused for another signature or configuration: float64
    then strided, read-only, float32, subclass arrays and other grids, each against its exact derivative."""
    tape = LaunchTape(split=split)
    base = np.linspace(0.1, 1.2, 128)
    cases = [(base[:64].copy(), np.zeros(64), 2, 32),
             (base[::2], np.zeros((64, 2))[:, 1], 2, 32),               # strided views ("A" layout)
             (np.asfortranarray(base.reshape(2, 64))[0], np.zeros(64), 2, 32),
             (base[:64].copy(), np.zeros(64), 1, 64),                   # another grid and block
             (base[:64].astype(np.float32), np.zeros(64, np.float32), 2, 32),
             (base[:64].copy().view(_Sub), np.zeros(64).view(_Sub), 2, 32),
             (base[:64].copy(), np.zeros(64), 4, 16)]
    ro = base[:64].copy()
    ro.flags.writeable = False                                           # read-only: its shadow is writable
    cases.insert(3, (ro, np.zeros(64), 2, 32))
    for x, y, grid, block in cases * 2:                                  # twice: the second round hits the caches
        g = _square_round(tape, x, y, grid, block)
        want = np.cos(np.asarray(x, np.float64) ** 2) * 2 * np.asarray(x, np.float64)
        tol = 1e-5 if x.dtype == np.float32 else 1e-13
        assert g.dtype == x.dtype and g.shape == x.shape
        np.testing.assert_allclose(g, want, rtol=tol)
        np.testing.assert_allclose(y, np.sin(np.asarray(x) * np.asarray(x)), rtol=tol)


@pytest.mark.parametrize("split", [False, True], ids=["recompute", "split"])
def test_reset_then_recording_other_sizes_gives_each_its_gradient(split):
    """Shadows and split tape rows are reused across reset() only where they fit: other sizes (and the
    first size again) after a reset get their own, and the gradient of each round is its own."""
    tape = LaunchTape(split=split)
    for n in (64, 100, 16, 64, 1000, 64):
        x, y = np.linspace(-1.0, 1.2, n), np.zeros(n)
        dy = np.linspace(0.5, 1.5, n)
        g = _square_round(tape, x, y, (n + 31) // 32, 32, dy)
        np.testing.assert_allclose(g, dy * np.cos(x * x) * 2 * x, rtol=1e-13)
        assert g.shape == (n,)


def test_a_global_rebound_between_recordings_is_seen_by_the_launch_and_its_gradient():
    """Recorded launches on the emulation skip the second typing of their arguments, not world age: a
    rebound global recompiles the kernel and its gradient."""
    x, y = np.linspace(0.1, 1.2, 64), np.zeros(64)
    tape = LaunchTape()
    try:
        for scale in (2.0, 3.0):
            P.SCALE = scale
            tape.reset()
            with tape:
                P.scaled_square[2, 32, CPU](x, y)
            np.testing.assert_allclose(y, scale * x * x, rtol=1e-15)
            tape.backward(grads=[(y, np.ones(64))])
            np.testing.assert_allclose(tape.gradient(x), 2 * scale * x, rtol=1e-15)
    finally:
        P.SCALE = 2.0


def test_a_gradient_registered_after_the_launch_was_recorded_is_the_one_backward_launches():
    """A recorded launch builds its gradient's launch when it is recorded; a gradient registered between
    the recording and ``backward`` (device programs register a reduction's after launching it) replaces it."""
    x, y = np.array([-2.0, 0.5, 3.0]), np.zeros(3)
    tape = LaunchTape()
    with tape:
        P.clip_late[1, 32, CPU](x, y)
    try:
        register_gradient(P.clip_late, P.clip_straight_through)
        tape.backward(grads=[(y, np.ones(3))])
    finally:
        delattr(P.clip_late, GRADIENT_ATTRIBUTE)
    assert list(tape.gradient(x)) == [1.0, 1.0, 1.0]     # the generated gradient: [0, 1, 0]
    assert list(y) == [-1.0, 0.5, 1.0]


@pytest.mark.parametrize("dtype", [np.float16, ">f8", object])
def test_an_array_of_a_dtype_kernels_do_not_take_is_the_launchs_argument_error_under_a_tape(dtype):
    """Under a tape such an array was typed None and reached type inference: a TypeInferenceError about
    ``getattr(None, pyobject)`` inside the kernel. It is the error the launch gives without a tape."""
    x = np.arange(4).astype(dtype)
    with pytest.raises(ArgumentTypeError, match=r"parameter 'x' .* ndarray of dtype"), LaunchTape():
        P.square[1, 32, CPU](x, np.zeros(4))


def test_a_rebound_global_function_gets_a_new_plan_of_written_and_read_arrays():
    """Which arrays a launch copies is worked out once per kernel and signature: a global the kernel calls,
    rebound to a function that also reads the array it stores into, must give a new plan (the old one did
    not copy y, and the gradient read y as the launch left it: a wrong gradient)."""
    x, y0 = np.linspace(0.5, 1.5, 64), np.linspace(2.0, 3.0, 64)
    tape = LaunchTape()
    try:
        with tape:
            P.apply_step[2, 32, CPU](x, np.zeros(64))
        P.STEP = P.scale_step
        y = y0.copy()
        tape.reset()
        with tape:
            P.apply_step[2, 32, CPU](x, y)              # y = y0 * x
        np.testing.assert_allclose(y, y0 * x, rtol=1e-15)
        tape.backward(grads=[(y, np.ones(64))])
        np.testing.assert_allclose(tape.gradient(x), y0, rtol=1e-15)   # d(y0 * x)/dx = y0, not y0 * x
    finally:
        P.STEP = P.store_step


def test_a_recorded_round_types_each_array_argument_once(monkeypatch):
    """The tape's own typing is the only one: the emulation runs recorded launches and their gradient
    launches with the types worked out when they were recorded (the launch path typed every argument of
    every launch again, the gradient launches' shadows included)."""
    x, w = np.linspace(0.1, 1.2, 64), np.array([3.0])
    y, out = np.zeros(64), np.zeros(1)
    tape = LaunchTape()

    def round_():
        out[0] = 0.0
        tape.reset()
        with tape:
            P.program(x, y, w, out, 2, 32, CPU)
        tape.backward(loss=out)

    round_()
    typed = []
    real = gtypes.typeof
    monkeypatch.setattr(gtypes, "typeof", lambda v: typed.append(v) or real(v))
    round_()
    assert len(typed) == 6                          # square(x, y), sin_in_place(y), weighted_total(y, w, out)
    assert np.allclose(tape.gradient(x), 3.0 * np.cos(x * x) * 2 * x, rtol=1e-13)


def test_a_reused_shadow_reads_zero_before_backward_and_the_next_gradient_is_not_doubled():
    """Shadows reused after reset() are zeroed by backward (on a GPU inside its graph), or when read first."""
    x, w = np.linspace(0.1, 1.2, 100), np.array([3.0])
    y, out = np.zeros(100), np.zeros(1)
    tape = LaunchTape()
    want = 3.0 * np.cos(x * x) * 2 * x
    for _ in range(2):
        tape.reset()
        with tape:
            P.program(x, y, w, out, 4, 32, CPU)
        tape.backward(loss=out)
        assert np.allclose(tape.gradient(x), want, rtol=1e-13)
    shadow = tape.gradient(x)
    del shadow
    tape.reset()
    with tape:
        P.program(x, y, w, out, 4, 32, CPU)
    assert not tape.gradient(x).any() and not tape.gradient(w).any()  # read before backward: zeros
    tape.backward(loss=out)
    assert np.allclose(tape.gradient(x), want, rtol=1e-13)


def test_a_tape_entered_inside_another_ones_recording_can_record_after_it():
    """The refused inner ``with`` leaves the inner tape as it was: it records once the outer one ended."""
    x, y = np.linspace(0.1, 1.2, 64), np.zeros(64)
    square: Any = P.square  # (a Kernel: the type checker reads launch_programs' decorator as a function)
    outer, inner = LaunchTape(), LaunchTape()
    with outer:
        with pytest.raises(LaunchError, match="already being recorded"), inner:
            pass
        square[2, 32, CPU](x, y)
    with inner:
        square[2, 32, CPU](x, y)
    inner.backward(grads=[(y, np.ones(64))])
    np.testing.assert_allclose(inner.gradient(x), 2 * x, rtol=1e-15)
    assert len(outer.records) == len(inner.records) == 1
