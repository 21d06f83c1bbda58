"""Kernels the GPU cannot run are rejected with a typed error naming the line; bad launches too."""

import inspect

import numpy as np
import pytest

from gpucompiler import device as gd
from gpucompiler import jit, kernel
from gpucompiler.device import KernelOnlyError
from gpucompiler.errors import (ArgumentBindingError, ArgumentTypeError, EmulationError, KernelError, LaunchError,
                                TypeInferenceError)


def _line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if text in line)


def returns_value(x):
    x[0] = 1.0
    return x[0]  # the offending line


def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)  # recursive call


def recursive(x):
    x[0] = fact(5)


def host_call(x):
    x[0] = 1.0
    x[1] = id(x)  # host-only


def allocates(x):
    y = np.zeros(10)  # dynamic allocation
    x[0] = y[0]


def divergent(x):
    t = gd.threadIdx.x
    if t < 2:
        gd.syncthreads()
    else:
        gd.syncthreads()
    x[t] = t


@pytest.mark.parametrize("device", ["cpu", "ptx"])
def test_return_value_rejected_with_line(device):
    k = kernel(returns_value)
    with pytest.raises(KernelError) as info:
        _launch_or_compile(k, device, np.zeros(4))
    assert info.value.kind == "RETURN_VALUE"
    assert info.value.line == _line_of(returns_value, "the offending line")


@pytest.mark.parametrize("device", ["cpu", "ptx"])
def test_recursion_rejected_with_line(device):
    k = kernel(recursive)
    with pytest.raises(KernelError) as info:
        _launch_or_compile(k, device, np.zeros(4))
    assert info.value.kind == "RECURSION"
    assert info.value.line == _line_of(fact, "recursive call")
    assert "loop" in str(info.value)


@pytest.mark.parametrize("fn, marker", [(host_call, "host-only"), (allocates, "dynamic allocation")])
@pytest.mark.parametrize("device", ["cpu", "ptx"])
def test_host_only_calls_rejected_with_line(fn, marker, device):
    k = kernel(fn)
    with pytest.raises(TypeInferenceError) as info:
        _launch_or_compile(k, device, np.zeros(4))
    assert info.value.line == _line_of(fn, marker)
    assert any(m in str(info.value) for m in ("no implementation", "has no attribute", "allocates an array"))


def _launch_or_compile(k, device, *args):
    if device == "cpu":
        k[1, 1, "cpu"](*args)
    else:
        k.inspect_asm(*args)


def test_divergent_barriers_are_an_error_not_a_result():
    x = np.zeros(8)
    with pytest.raises(EmulationError, match="different syncthreads"):
        kernel(divergent)[1, 8, "cpu"](x)


def test_early_return_before_barrier_is_fine():
    @kernel
    def k(x, out):
        sh = gd.shared_array(8, np.float64)
        t = gd.threadIdx.x
        if t >= x.shape[0]:
            return
        sh[t] = x[t]
        gd.syncthreads()
        out[t] = sh[x.shape[0] - 1 - t]

    x, out = np.arange(5.0), np.zeros(5)
    k[1, 8, "cpu"](x, out)
    np.testing.assert_array_equal(out, x[::-1])


def test_intrinsics_outside_kernels():
    with pytest.raises(KernelOnlyError, match="inside a @kernel"):
        gd.syncthreads()

    @jit
    def f(x):
        x[0] = gd.grid(1)

    with pytest.raises(TypeInferenceError) as info:
        f(np.zeros(2))
    assert "grid" in str(info.value)


def test_shared_array_needs_constant_shape():
    @kernel
    def k(x):
        sh = gd.shared_array(x.shape[0], np.float32)
        sh[0] = 1.0
        x[0] = sh[0]

    with pytest.raises(TypeInferenceError, match="constant shape"):
        k[1, 1, "cpu"](np.zeros(2, np.float32))


@pytest.mark.parametrize("config", [(0, 1), ((1, 2, 3, 4), 1), (1.5, 2), (1,), (1, 2, 3, 4)])
def test_bad_launch_configurations(config):
    k = kernel(divergent)
    with pytest.raises(LaunchError):
        k[config]


@pytest.mark.parametrize("config, message", [((2**40, 8), "grid.x is at most 2147483647"),
                                             (((1, 65536), 8), "grid.y is at most 65535"),
                                             ((1, (1, 1, 65)), "block.z is at most 64"),
                                             ((1, 2048), "block.x is at most 1024")])
def test_launch_dimensions_past_nvidias_limits_are_refused(config, message):
    """The emulation keeps the GPU's limits: 2**40 blocks was an endless run instead of an error."""
    with pytest.raises(LaunchError, match=message):
        kernel(divergent)[(*config, "cpu")]


def test_launch_errors():
    k = kernel(divergent)
    with pytest.raises(LaunchError, match="configuration"):
        k(np.zeros(2))
    with pytest.raises(LaunchError, match="1024"):
        k[1, (64, 32), "cpu"](np.zeros(2))
    with pytest.raises(LaunchError, match="unknown device"):
        k[1, 1, "tpu"](np.zeros(2))
    with pytest.raises(ArgumentBindingError, match="too many positional arguments"):
        k[1, 1, "cpu"](np.zeros(2), 1)
    with pytest.raises(ArgumentTypeError):
        k[1, 1, "cpu"]("text")


def store_scalar(n, out):
    if gd.grid(1) == 0:
        out[0] = n


def test_integer_argument_out_of_range_is_an_overflow_not_a_wrap():
    k = kernel(store_scalar)
    out = np.zeros(1, dtype=np.int64)
    k[1, 1, "cpu"](2**62, out)
    assert out[0] == 2**62
    with pytest.raises(OverflowError, match="does not fit in int64"):
        k[1, 1, "cpu"](2**64 + 5, out)
    assert out[0] == 2**62


def read_at(x, i, out):
    if gd.grid(1) == 0:
        out[0] = x[i]


def test_index_errors_of_concurrent_launches_stay_with_their_launch():
    """Two threads launching checked kernels: each sees its own IndexError, no other's."""
    import threading

    bad = kernel(boundscheck=True)(read_at)
    good = kernel(boundscheck=True)(store_scalar)
    x, out, out2 = np.arange(4.0), np.zeros(1), np.zeros(1, dtype=np.int64)
    bad[1, 1, "cpu"](x, 1, out)
    good[1, 1, "cpu"](1, out2)
    failures = []

    def run_bad():
        for _ in range(200):
            try:
                bad[1, 1, "cpu"](x, 10, out)
                failures.append("missed IndexError")
            except IndexError:
                pass

    def run_good():
        for k in range(200):
            try:
                good[1, 1, "cpu"](k, out2)
            except IndexError as exc:
                failures.append(f"foreign IndexError: {exc}")

    threads = [threading.Thread(target=run_bad), threading.Thread(target=run_good)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


SCALE = 2.0


def scaled(x, out):
    i = gd.grid(1)
    if i < x.shape[0]:
        out[i] = SCALE * x[i]


def test_rebinding_a_global_recompiles_the_kernel():
    """World age, as for @jit: the next launch after a rebinding uses the new value."""
    global SCALE
    k = kernel(scaled)
    x, out = np.arange(4.0), np.zeros(4)
    try:
        k[1, 4, "cpu"](x, out)
        assert (out == 2.0 * x).all()
        SCALE = 3.0
        k[1, 4, "cpu"](x, out)
        assert (out == 3.0 * x).all()
        ptx = k.inspect_asm(x, out)
        assert "0d4008000000000000" in ptx  # 3.0 as a PTX double constant
    finally:
        SCALE = 2.0


def uses_abs(x, out):
    i = gd.grid(1)
    if i < x.shape[0]:
        out[i] = abs(x[i])


def test_rebinding_a_builtin_recompiles_the_kernel():
    import builtins

    k = kernel(uses_abs)
    x, out = np.array([-2.0, 3.0]), np.zeros(2)
    k[1, 2, "cpu"](x, out)
    assert (out == [2.0, 3.0]).all()
    original = builtins.abs

    def shifted(v):
        return v + 100.0

    builtins.abs = shifted
    try:
        k[1, 2, "cpu"](x, out)
        assert (out == [98.0, 103.0]).all()
    finally:
        builtins.abs = original
    k[1, 2, "cpu"](x, out)
    assert (out == [2.0, 3.0]).all()


@kernel
def _add_300(x, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = x[i] + 300


def test_a_python_int_a_numpy_type_cannot_hold_stops_the_kernel(check_ptx):
    """``uint8 + 300`` is NumPy's OverflowError: the emulation raises it, a GPU thread traps (it stored 0)."""
    x, out = np.arange(4, dtype=np.uint8), np.zeros(4, np.int64)
    with pytest.raises(OverflowError, match="Python integer 300 out of bounds for uint8"):
        _add_300[1, 4, "cpu"](x, out)
    ptx = _add_300.inspect_asm(x, out)
    assert "trap;" in ptx
    check_ptx(ptx)
