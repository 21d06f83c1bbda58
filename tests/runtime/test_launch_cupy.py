"""CuPy arrays on the CUDA launch path, read by their attributes (a fake ``cupy`` module over the fake driver of
tests/kernels/test_cuda_launch.py, which runs each launch through the CPU grid emulation): a cached launch reads
no ``__cuda_array_interface__`` (CuPy builds that dict at each access) and still follows whatever changes
between launches: the buffer, the shape, the strides, the dtype, CuPy's current stream."""

from __future__ import annotations

import gc
import os
import sys

import numpy as np
import pytest

from gpucompiler import device as gd
from gpucompiler.errors import ArgumentTypeError
from gpucompiler.kernel import Kernel

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))
sys.path.insert(0, os.path.dirname(__file__))
import fake_cupy
from test_cuda_launch import FakeDriver  # pyright: ignore[reportMissingImports]


@pytest.fixture
def fake(monkeypatch):
    driver = FakeDriver()
    with fake_cupy.on_driver(monkeypatch, driver) as module:
        yield module, driver


def _axpy(a, x, y):
    i = gd.grid(1)
    if i < y.shape[0]:
        y[i] = a * x[i] + y[i]


axpy = Kernel(_axpy)


def _rows(x, out):
    i = gd.grid(1)
    if i < x.shape[0]:
        out[i] = x[i, 0] + 10.0 * x[i, x.shape[1] - 1]


rows = Kernel(_rows)


def _streams(driver) -> list:
    return [c[3] for c in driver.calls if c[0] == "launch"]


def test_cached_launches_read_no_array_interface_and_give_numpy_results(fake):
    cp, driver = fake
    x, y = cp.asarray(np.arange(100.0)), cp.asarray(np.ones(100))
    launch = axpy[4, 32]
    for _ in range(2):  # the first launches: the general path (context, types, module, launcher)
        launch(2.0, x, y)
    before = fake_cupy.READS[0]
    for _ in range(5):
        launch(2.0, x, y)
    assert fake_cupy.READS[0] == before
    np.testing.assert_array_equal(y.get(), 1.0 + 14.0 * np.arange(100.0))
    assert _streams(driver) == [0] * 7


def test_each_launch_takes_the_buffer_shape_strides_and_dtype_it_is_given(fake):
    """Nothing of an array but its layout's type is remembered: a new buffer, a longer or strided array of the
    same layout, another dtype, an array made where a freed one was (the same ``id``) are each launched on."""
    cp = fake[0]
    launch = axpy[8, 32]
    x = cp.asarray(np.arange(200.0))
    for n in (100, 100, 37, 200):  # new buffers, then other lengths of one layout
        y = cp.asarray(np.ones(n))
        launch(1.5, x[:n], y)
        np.testing.assert_array_equal(y.get(), 1.0 + 1.5 * np.arange(n))
    base = np.arange(300.0)
    y = cp.asarray(base.copy())
    launch(2.0, x[:100], y[::3])  # a strided view: its own strides, the elements between untouched
    expect = base.copy()
    expect[::3] += 2.0 * np.arange(100.0)
    np.testing.assert_array_equal(y.get(), expect)
    y32 = cp.asarray(np.ones(64, np.float32))
    launch(2.0, cp.asarray(np.arange(64, dtype=np.float32)), y32)  # 4-byte elements: float32 code
    np.testing.assert_array_equal(y32.get(), 1.0 + 2.0 * np.arange(64, dtype=np.float32))
    for k in range(6):  # arrays freed and made again: ids (and addresses) come back, each launch is its own
        y = cp.asarray(np.full(50, float(k)))
        launch(1.0, x[:50], y)
        np.testing.assert_array_equal(y.get(), k + np.arange(50.0))
        del y
        gc.collect()
    big = cp.asarray(np.zeros((6, 4)))
    out = cp.zeros(6)
    rows[1, 32](big, out)
    big[...] = np.arange(24.0).reshape(6, 4)
    rows[1, 32](big[:, 1:], out)  # a 2-D view of another shape, not contiguous
    grid = np.arange(24.0).reshape(6, 4)
    np.testing.assert_array_equal(out.get(), grid[:, 1] + 10.0 * grid[:, 3])


def test_the_launch_follows_cupys_current_stream(fake):
    """A CuPy array names CuPy's current stream (as its interface would): each launch goes to the stream current
    when it is made, also after cached launches on another one."""
    cp, driver = fake
    x, y = cp.asarray(np.arange(8.0)), cp.zeros(8)
    launch = axpy[1, 32]
    launch(1.0, x, y)
    with cp.cuda.Stream(ptr=0x51):
        launch(1.0, x, y)
        launch(1.0, x, y)
    launch(1.0, x, y)
    with cp.cuda.Stream(ptr=2):  # the per-thread default stream
        launch(1.0, x, y)
    assert _streams(driver) == [0, 0x51, 0x51, 0, 2]
    np.testing.assert_array_equal(y.get(), 5.0 * np.arange(8.0))


def test_cupy_imported_after_launches_and_gone_again_is_seen_by_the_next_launch(monkeypatch):
    """Launches before ``cupy`` is imported; then CuPy arrays, read by their attributes (no interface read);
    then ``cupy`` gone from ``sys.modules``: the same objects are arrays like any other, read by their
    ``__cuda_array_interface__``. Every launch gives its result."""
    driver = FakeDriver()
    with fake_cupy.on_driver(monkeypatch, driver) as cp:
        x, y = cp.asarray(np.arange(8.0)), cp.zeros(8)
    launch = axpy[1, 32]
    for _ in range(2):  # no cupy imported: read by the interface
        launch(1.0, x, y)
    with fake_cupy.installed():
        before = fake_cupy.READS[0]
        for _ in range(3):
            launch(1.0, x, y)
        assert fake_cupy.READS[0] == before
    before = fake_cupy.READS[0]
    for _ in range(2):
        launch(1.0, x, y)
    assert fake_cupy.READS[0] >= before + 2 * 2  # both arrays at each launch
    np.testing.assert_array_equal(y.get(), 7.0 * np.arange(8.0))


def test_an_unsupported_dtype_after_cached_launches_is_a_typed_error(fake):
    cp = fake[0]
    x, y = cp.asarray(np.arange(8.0)), cp.zeros(8)
    for _ in range(3):
        axpy[1, 32](1.0, x, y)
    with pytest.raises(ArgumentTypeError):
        axpy[1, 32](1.0, x, cp.asarray(np.zeros(8, np.float16)))
    np.testing.assert_array_equal(y.get(), 3.0 * np.arange(8.0))
