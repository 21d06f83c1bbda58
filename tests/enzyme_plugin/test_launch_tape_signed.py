"""A launch tape on CuPy arrays reads each launch's arguments once (``enzyme_plugin.launches.signed``): the CUDA
runtime's signature of them gives the types, the overlap check's spans, the stream and the launch's parameters.
A fake ``cupy`` module (tests/runtime/fake_cupy.py) over the fake driver of tests/kernels/test_cuda_launch.py,
which runs every launch through the CPU grid emulation: each round's gradient against the analytic one while
the arrays' buffers, lengths, strides, dtypes and ids, a global the kernel reads and CuPy's current stream
change between rounds."""

from __future__ import annotations

import gc
import os
import sys

import numpy as np
import pytest

import launch_programs as P
from enzyme_plugin import LaunchTape, LaunchTapeError
from enzyme_plugin.launches import tape as tape_module
from enzyme_plugin.launches.graphs import graph_key

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "runtime"))
import fake_cupy  # pyright: ignore[reportMissingImports]
from test_cuda_launch import FakeDriver  # pyright: ignore[reportMissingImports]

#: the kernels, as Kernel objects to the type checker too (it reads launch_programs' decorator as a function)
square, scaled_square = (getattr(P, name) for name in ("square", "scaled_square"))


@pytest.fixture
def fake(monkeypatch):
    driver = FakeDriver()
    with fake_cupy.on_driver(monkeypatch, driver) as module:
        yield module, driver


def _round(tape, cp, x, w, y, out):
    out[...] = 0.0
    tape.reset()
    with tape:
        P.program(x, y, w, out, (x.shape[0] + 31) // 32, 32, None)
    tape.backward(loss=out)
    return tape.gradient(x).get(), float(tape.gradient(w).get()[0])


def _expected(x, w):
    return w[0] * np.cos(x * x) * 2 * x, np.sum(np.sin(x * x))


def test_recording_reads_no_array_interface_and_the_driver_sees_launches_only(fake):
    """Before, each recorded launch read every array's ``__cuda_array_interface__`` twice (the tape's types,
    then the launch's parameters): CuPy builds that dict at each access."""
    cp, driver = fake
    xh, w = np.linspace(0.1, 1.2, 100), np.array([3.0])
    x, dw, y, out = cp.asarray(xh), cp.asarray(w), cp.zeros(100), cp.zeros(1)
    tape = LaunchTape(graphs=False)
    for r in range(4):
        reads, start = fake_cupy.READS[0], len(driver.calls)
        gx, gw = _round(tape, cp, x, dw, y, out)
        ex, ew = _expected(xh, w)
        np.testing.assert_allclose(gx, ex, rtol=1e-13)
        assert np.isclose(gw, ew, rtol=1e-13) and np.isclose(float(out.get()[0]), 3.0 * ew, rtol=1e-13)
        if r >= 2:  # the first rounds: the launches' general path (context, types, modules, launchers)
            assert fake_cupy.READS[0] == reads
            assert [c[0] for c in driver.calls[start:]] == ["launch"] * 6


def test_each_round_takes_the_buffers_lengths_strides_dtypes_and_ids_it_is_given(fake):
    """What the tape remembers per signature (types, where each array sits among the launch's values, the
    bound launch) holds no buffer, length or object: new buffers, other lengths, strided views, float32 arrays
    and arrays made where freed ones were (the same ``id``) each get their own gradient and results."""
    cp, _ = fake
    tape = LaunchTape(graphs=False)
    w = np.array([0.5])
    cases = [(np.float64, n, step) for n, step in ((64, 1), (64, 1), (100, 1), (40, 3), (64, 1), (33, 2))]
    cases += [(np.float32, 64, 1), (np.float32, 50, 2), (np.float64, 64, 1)]
    for k, (dtype, n, step) in enumerate(cases):
        xh = np.linspace(-1.0 + 0.1 * k, 1.2, n).astype(dtype)
        base = cp.asarray(np.zeros(n * step, dtype))
        x = base[::step]
        x[...] = xh
        y, out, dw = cp.zeros(n, dtype), cp.zeros(1, dtype), cp.asarray(w.astype(dtype))
        gx, gw = _round(tape, cp, x, dw, y, out)
        ex, ew = _expected(xh.astype(np.float64), w)
        rtol = 1e-5 if dtype == np.float32 else 1e-13
        np.testing.assert_allclose(gx, ex, rtol=rtol, atol=rtol)
        assert gx.dtype == dtype and gx.shape == (n,)
        assert np.isclose(gw, ew, rtol=rtol)
        np.testing.assert_allclose(y.get(), np.sin(xh.astype(np.float64) ** 2), rtol=rtol, atol=rtol)
        if step > 1:  # the elements between the view's are untouched
            assert not np.any(base.get()[1::step])
        del x, base, y, out, dw
        gc.collect()


def test_overlaps_are_found_from_the_signatures_spans(fake):
    """The spans come from each launch's own pointer, shape and strides: two views that overlap only at their
    new length are refused, reversed views by their true span, and empty views overlap nothing. Values found
    clear are not checked again; values where the same object is passed twice are, with two objects."""
    cp, _ = fake
    base = cp.asarray(np.linspace(0.1, 1.2, 128))
    for _ in range(2):
        with LaunchTape(graphs=False):
            square[2, 32, None](base[:32], base[32:64])
    with pytest.raises(LaunchTapeError, match="overlap in memory"), LaunchTape(graphs=False):
        square[2, 32, None](base[:48], base[32:80])
    with LaunchTape(graphs=False):
        square[2, 32, None](base[:64][::-1], base[64:])  # reversed: elements 63 down to 0
    with pytest.raises(LaunchTapeError, match="overlap in memory"), LaunchTape(graphs=False):
        square[2, 32, None](base[:64][::-1], base[63:127])
    with LaunchTape(graphs=False):
        square[1, 32, None](base[5:5], base[5:5][::-1])  # two empty views at one address
    x = cp.asarray(np.linspace(0.1, 1.2, 64))
    for _ in range(2):  # the same object twice: allowed, and no reason to skip the check for these values
        with LaunchTape(graphs=False):
            square[2, 32, None](x, x)
    with pytest.raises(LaunchTapeError, match="overlap in memory"), LaunchTape(graphs=False):
        square[2, 32, None](x, x[:])  # the same values, two objects


def test_overlapping_arrays_are_refused_before_the_gradient_kernel_is_made(fake, monkeypatch):
    """The overlap check comes first: a configuration never launched before makes its gradient's launches only
    for arguments that passed it."""
    cp, _ = fake
    base = cp.asarray(np.linspace(0.1, 1.2, 128))

    def unreachable(*args):
        raise AssertionError("the gradient kernel was made for overlapping arrays")

    monkeypatch.setattr(tape_module, "gradient_kernel", unreachable)
    with pytest.raises(LaunchTapeError, match="overlap in memory"), LaunchTape(graphs=False):
        square[3, 16, None](base[:48], base[32:80])


def test_a_global_rebound_between_rounds_reaches_the_recorded_launch_and_its_gradient(fake):
    """The bound launch a recorded configuration keeps belongs to the kernel's world age: a rebound global gives
    a new plan, and its first launch goes the kernel's own way (which forgets the code loaded before)."""
    cp, _ = fake
    xh = np.linspace(0.1, 1.2, 64)
    x, y = cp.asarray(xh), cp.zeros(64)
    tape = LaunchTape(graphs=False)
    try:
        for scale in (2.0, 2.0, 2.0, 3.0, 3.0, 0.5):
            P.SCALE = scale
            tape.reset()
            with tape:
                scaled_square[2, 32, None](x, y)
            np.testing.assert_allclose(y.get(), scale * xh * xh, rtol=1e-15)
            tape.backward(grads=[(y, cp.asarray(np.ones(64)))])
            np.testing.assert_allclose(tape.gradient(x).get(), 2 * scale * xh, rtol=1e-15)
    finally:
        P.SCALE = 2.0


def test_a_recorded_launch_goes_to_cupys_current_stream(fake):
    """The stream of a recorded launch is the one CuPy's arrays name when it is recorded, round after round."""
    cp, driver = fake
    xh, w = np.linspace(0.1, 1.2, 64), np.array([2.0])
    x, dw, y, out = cp.asarray(xh), cp.asarray(w), cp.zeros(64), cp.zeros(1)
    tape = LaunchTape(graphs=False)
    for handle in (0, 0x51, 0, 0x51, 2):
        with cp.cuda.Stream(ptr=handle):
            start = len(driver.calls)
            gx, gw = _round(tape, cp, x, dw, y, out)
            launches = [c for c in driver.calls[start:] if c[0] == "launch"]
        assert [c[3] for c in launches] == [handle] * 6 and [r.stream for r in tape.records] == [handle] * 3
        assert "sync" not in [c[0] for c in driver.calls[start:]]  # copies and launches on one stream
        np.testing.assert_allclose(gx, _expected(xh, w)[0], rtol=1e-13)
        assert np.isclose(gw, _expected(xh, w)[1], rtol=1e-13)
    for given in (cp.cuda.Stream(ptr=0x77), 0x78, cp.cuda.Stream(ptr=0x77)):  # a stream given: the launch's own
        start = len(driver.calls)
        tape.reset()
        with tape:
            square[2, 32, given](x, y)
        handle = getattr(given, "ptr", given)
        assert [c[3] for c in driver.calls[start:] if c[0] == "launch"] == [handle]
        assert tape.records[0].stream == handle
        np.testing.assert_allclose(y.get(), xh * xh, rtol=1e-15)


def test_the_graph_key_names_each_arrays_memory(fake):
    """A backward's graph key (``launches.graphs``) repeats when a round launches on the same memory (the
    shadows and copies reused after ``reset()``) and changes with a buffer, a length or a dtype (the same
    element count in float32 and float64 differs)."""
    cp, _ = fake
    tape = LaunchTape(graphs=False)

    def key_of(x, y, w, out):
        tape.reset()
        with tape:
            P.program(x, y, w, out, 2, 32, None)
        return graph_key(tape.records, tape._gradient_args, [], [(out, tape.gradient(out), 1.0)], tape._final_values())

    arrays = [cp.asarray(np.linspace(0.1, 1.2, 64)), cp.zeros(64), cp.asarray([2.0]), cp.zeros(1)]
    key_of(*arrays)
    first = key_of(*arrays)
    assert first is not None and key_of(*arrays) == first
    assert key_of(cp.asarray(np.linspace(0.1, 1.2, 64)), *arrays[1:]) != first     # another buffer
    assert key_of(arrays[0][:48], arrays[1][:48], *arrays[2:]) != first             # another length
    x32 = [cp.asarray(np.linspace(0.1, 1.2, 64), np.float32), cp.zeros(64, np.float32),
           cp.asarray([2.0], np.float32), cp.zeros(1, np.float32)]
    assert key_of(*x32) != first


def test_the_graph_key_kept_by_repeated_launches_is_the_key_read_afresh(fake):
    """A repeated launch's part of the key is kept (``Repeat.graph_part``) and not read from the arrays again:
    round after round it equals the key read afresh, also when a shadow is replaced (the user holds the last
    gradient), an argument is another array of the same layout, or the memory is another length."""
    cp, _ = fake
    tape = LaunchTape(graphs=False)
    held = []

    def keys(x, y, w, out):
        tape.reset()
        with tape:
            P.program(x, y, w, out, 2, 32, None)
        seeds, finals = [(out, tape.gradient(out), 1.0)], tape._final_values()
        kept = graph_key(tape.records, tape._gradient_args, [], seeds, finals, tape._repeats, tape._generation)
        afresh = graph_key(tape.records, tape._gradient_args, [], seeds, finals)
        return kept, afresh

    arrays = [cp.asarray(np.linspace(0.1, 1.2, 64)), cp.zeros(64), cp.asarray([2.0]), cp.zeros(1)]
    seen = set()
    for step in range(8):
        args = list(arrays)
        if step == 3:
            held.append(tape.gradient(arrays[0]))  # this round's x gets a new shadow
        if step == 5:
            args[0] = cp.asarray(np.linspace(0.1, 1.2, 64))  # another buffer, same layout
        if step == 6:
            args = [arrays[0][:48], arrays[1][:48], *arrays[2:]]
        kept, afresh = keys(*args)
        assert kept is not None and kept == afresh
        seen.add(kept)
    assert len(seen) >= 3 and any(r is not None and r.graph_part is not None for r in tape._repeats)
