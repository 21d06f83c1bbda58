"""The CUDA launch path up to the driver, against a fake driver that runs kernels on the host.

The fake ``cuda.bindings.driver`` hands out host memory as "device" memory and
executes ``cuLaunchKernel`` by decoding the parameter buffers it receives (with
the layout the PTX declares) and running the kernel through the CPU grid
emulation. Results are right only if marshalling, copies and lookups are.
"""

import ctypes
import re

import numpy as np
import pytest

from gpucompiler import types as T
from gpucompiler.errors import CudaError, LaunchError
from gpucompiler.runtime import cuda
from kernel_corpus import CASES, run_case, saxpy


class _Attr:
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = "major"
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = "minor"


class FakeDriver:
    CUdevice_attribute = _Attr

    def __init__(self):
        self.memory, self.modules, self.calls = {}, [], []
        #: per launch that ran, each parameter's bytes as the driver received them
        self.params: list[list[bytes]] = []
        self.native, self.native_launches = None, 0
        self.ctx = 0

    # context and device
    def cuInit(self, flags):
        return (0,)

    def cuCtxGetCurrent(self):
        return (0, self.ctx)

    def cuDeviceGetCount(self):
        return (0, 1)

    def cuDeviceGet(self, ordinal):
        return (0, ordinal)

    def cuDevicePrimaryCtxRetain(self, dev):
        return (0, 0xC7)

    def cuCtxSetCurrent(self, ctx):
        self.ctx = ctx
        return (0,)

    def cuCtxGetDevice(self):
        return (0, 0)

    def cuDeviceGetAttribute(self, attr, dev):
        return (0, {"major": 8, "minor": 0}[attr])

    def cuGetErrorName(self, err):
        return (0, {1: b"CUDA_ERROR_INVALID_VALUE"}.get(int(err), b"CUDA_ERROR_UNKNOWN"))

    def cuGetErrorString(self, err):
        return (0, b"invalid argument")

    # modules
    def cuModuleLoadData(self, image):
        assert image.endswith(b"\0")
        self.modules.append(image[:-1].decode())
        return (0, len(self.modules))

    def cuModuleGetFunction(self, module, name):
        assert re.search(rf"\.entry {name.decode()}\(", self.modules[module - 1])
        return (0, (module, name.decode()))

    # memory
    def cuMemAlloc(self, nbytes):
        buf = (ctypes.c_uint8 * nbytes)()
        self.memory[ctypes.addressof(buf)] = buf
        return (0, ctypes.addressof(buf))

    def cuMemFree(self, ptr):
        del self.memory[int(ptr)]
        return (0,)

    def cuMemcpyHtoDAsync(self, dst, src, nbytes, stream):
        self.calls.append(("HtoD", nbytes, stream))
        ctypes.memmove(dst, src, nbytes)
        return (0,)

    def cuMemcpyDtoHAsync(self, dst, src, nbytes, stream):
        self.calls.append(("DtoH", nbytes, stream))
        ctypes.memmove(dst, src, nbytes)
        return (0,)

    def cuStreamSynchronize(self, stream):
        self.calls.append(("sync", stream))
        return (0,)

    # launch: decode the parameters as the kernel's signature says, run the emulation
    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.calls.append(("launch", (gx, gy, gz), (bx, by, bz), stream))
        if bx * by * bz > 1024:
            return (1,)
        kernel, argtypes = next((hit[2], key[1]) for key, hit in cuda._functions.items() if hit[0] == fn)
        pointers = (ctypes.c_void_p * len(argtypes)).from_address(params)
        self.params.append([ctypes.string_at(p, 8 * (1 + 2 * t.ndim) if isinstance(t, T.ArrayType) else 8)
                            for p, t in zip(pointers, argtypes)])
        args = [_decode(p, t) for p, t in zip(pointers, argtypes)]
        kernel.emulated(argtypes).launch((gx, gy, gz), (bx, by, bz), args)
        return (0,)


    def native_launch(self):
        """``(address, handle)``: a C ``cuLaunchKernel`` over this driver (a ctypes callback, made once and kept
        with the driver: entries hold its address) and the int handle of a function, as the runtime's native
        launch entries call the driver; ``native_launches`` counts the launches made through it."""
        if self.native is None:
            handles: dict[int, object] = {}

            def handle(fn) -> int:
                handles[id(fn)] = fn
                return id(fn)

            def launch(fn, gx, gy, gz, bx, by, bz, shared, stream, params, extra) -> int:
                self.native_launches += 1
                return int(self.cuLaunchKernel(handles[fn], gx, gy, gz, bx, by, bz, shared, stream or 0, params,
                                               extra)[0])

            self.native = (_LAUNCH_KERNEL(launch), handle)
        return ctypes.cast(self.native[0], ctypes.c_void_p).value, self.native[1]


#: ``CUresult cuLaunchKernel(CUfunction, unsigned x 7, CUstream, void **, void **)``
_LAUNCH_KERNEL = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                                  ctypes.c_void_p, ctypes.c_void_p)

_NP = {T.float32: np.float32, T.float64: np.float64, T.int32: np.int32, T.int64: np.int64,
       T.boolean: np.bool_}


def _decode(address, t):
    if isinstance(t, T.ArrayType):
        fields = (ctypes.c_int64 * (1 + 2 * t.ndim)).from_address(address)
        ptr, shape, strides = fields[0], tuple(fields[1:1 + t.ndim]), tuple(fields[1 + t.ndim:])
        if not all(shape):
            return np.zeros(shape, _NP[t.dtype])
        low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)  # negative strides: bytes below ptr
        span = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0) - low + t.dtype.itemsize
        raw = np.frombuffer((ctypes.c_uint8 * span).from_address(ptr + low), np.uint8)
        return np.ndarray(shape, _NP[t.dtype], buffer=raw, offset=-low, strides=strides)
    return _NP[t](np.frombuffer((ctypes.c_uint8 * 8).from_address(address), _NP[t])[0]).item()


class DeviceArray:
    """A minimal __cuda_array_interface__ object over (fake device = host) memory."""

    def __init__(self, host):
        self.host = host

    @property
    def __cuda_array_interface__(self):
        contiguous = self.host.flags.c_contiguous
        return {"shape": self.host.shape, "typestr": self.host.dtype.str,
                "strides": None if contiguous else self.host.strides,
                "data": (self.host.ctypes.data, False), "version": 3}


@pytest.fixture
def fake(monkeypatch):
    driver = FakeDriver()
    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    monkeypatch.setattr(cuda, "_functions", {})
    monkeypatch.setattr(cuda, "_launchers", {})
    monkeypatch.setattr(cuda, "_capability", {})
    monkeypatch.setattr(cuda, "_state", {"init": False})
    return driver


@pytest.mark.parametrize("name", ["saxpy_f32", "stencil2d", "sum_shared", "minmax_atomic_i64", "math_f64",
                                  "index3d"])
def test_numpy_arguments_are_copied_in_and_out(name, fake):
    run_case(name, None)
    kinds = [c[0] for c in fake.calls]
    assert kinds.count("launch") == 1 and kinds[-1] == "sync"
    assert kinds.index("launch") > max(i for i, k in enumerate(kinds) if k == "HtoD")
    assert fake.memory == {}  # every staging buffer freed
    assert re.search(r"^\.target sm_80$", fake.modules[0], re.M)


def test_cuda_array_interface_used_in_place_and_module_loaded_once(fake):
    n = 300
    x, y = np.random.rand(n).astype(np.float32), np.random.rand(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    for _ in range(3):
        saxpy[(n + 127) // 128, 128, 42](np.float32(2.0), DeviceArray(x), DeviceArray(y), DeviceArray(out))
    np.testing.assert_allclose(out, 2 * x + y, rtol=1e-6)
    assert len(fake.modules) == 1
    assert not any(c[0] in ("HtoD", "DtoH", "sync") for c in fake.calls)  # in place, asynchronous
    assert [c[3] for c in fake.calls if c[0] == "launch"] == [42] * 3


def test_streams_of_other_libraries():
    class CupyLike:
        ptr = 7

    class TorchLike:
        cuda_stream = 8

    class NumbaLike:
        handle = ctypes.c_void_p(9)

    class Protocol:
        def __cuda_stream__(self):
            return (0, 10)

    assert [cuda.stream_handle(s) for s in (None, 5, CupyLike(), TorchLike(), NumbaLike(), Protocol())] \
        == [0, 5, 7, 8, 9, 10]
    with pytest.raises(LaunchError):
        cuda.stream_handle(object())


def test_driver_errors_carry_the_cuda_error_name(fake):
    x = np.zeros(4, np.float32)
    with pytest.raises(CudaError) as info:
        saxpy[1, (64, 32)](1.0, x, x, x)
    assert info.value.name == "CUDA_ERROR_INVALID_VALUE" and info.value.call == "cuLaunchKernel"
    assert fake.memory == {}


def test_non_contiguous_numpy_array_is_staged_and_written_back(fake):
    base = np.arange(24.0)
    CASES["grid_stride"][0][1, 32](base[::2], 2.0)
    np.testing.assert_array_equal(base[::2], 2.0 * np.arange(24.0)[::2])
    np.testing.assert_array_equal(base[1::2], np.arange(24.0)[1::2])


def test_missing_driver_is_a_typed_error(monkeypatch):
    from gpucompiler.errors import ToolchainError

    class NoDriver:
        def cuInit(self, flags):
            raise OSError("libcuda.so.1: cannot open shared object file")

    monkeypatch.setattr(cuda, "_driver", lambda: NoDriver())
    monkeypatch.setattr(cuda, "_state", {"init": False})
    with pytest.raises(ToolchainError, match="CPU grid emulation"):
        saxpy[1, 1](1.0, np.zeros(1), np.zeros(1), np.zeros(1))


def test_fast_path_reuses_one_launcher_and_recompiles_when_types_change(fake):
    n = 200
    x = np.random.rand(n)
    x0 = x.copy()
    k = CASES["grid_stride"][0]
    launch = k[2, 64]
    assert k[2, 64] is launch  # the configuration object is cached
    for _ in range(3):
        launch(DeviceArray(x), 3.0)
    np.testing.assert_allclose(x, 27.0 * x0, rtol=1e-15)  # in place, three launches
    assert len(cuda._launchers) == 1 and len(fake.modules) == 1
    # another dtype, a Python int scalar, a strided array: each a new specialisation with right results
    x32 = np.arange(n, dtype=np.float32)
    launch(DeviceArray(x32), 2.0)
    np.testing.assert_array_equal(x32, 2 * np.arange(n, dtype=np.float32))
    xi = np.arange(n, dtype=np.float64)
    launch(DeviceArray(xi), 2)
    np.testing.assert_array_equal(xi, 2 * np.arange(n))
    base = np.arange(2.0 * n)
    launch(DeviceArray(base[::2]), 0.5)
    np.testing.assert_array_equal(base[::2], 0.5 * np.arange(2.0 * n)[::2])
    np.testing.assert_array_equal(base[1::2], np.arange(2.0 * n)[1::2])
    assert len(cuda._launchers) == 4 and len(fake.modules) == 4
    assert len({key[2] for key in cuda._launchers}) == 4
    # NumPy arrays after the fast path: still staged and copied back
    host = np.ones(n)
    launch(host, 4.0)
    np.testing.assert_array_equal(host, 4.0)
    assert fake.memory == {}


def test_fast_path_wrong_argument_count_and_type_are_typed_errors(fake):
    from gpucompiler.errors import ArgumentBindingError, ArgumentTypeError

    k = CASES["grid_stride"][0]
    with pytest.raises(ArgumentBindingError, match="missing a required argument: 'factor'"):
        k[1, 32](DeviceArray(np.zeros(4)))
    with pytest.raises(ArgumentTypeError):
        k[1, 32](DeviceArray(np.zeros(4, np.float16)), 1.0)
    assert cuda._launchers == {}


def test_read_only_numpy_input_is_uploaded_and_not_written_back(fake):
    n = 64
    base = np.random.rand(2 * n).astype(np.float32)
    x = base[::2]  # strided: staged through a contiguous copy
    x.flags.writeable = False
    y, out = np.random.rand(n).astype(np.float32), np.zeros(n, np.float32)
    saxpy[1, 64](np.float32(2.0), x, y, out)
    np.testing.assert_allclose(out, np.float32(2.0) * x + y, rtol=1e-6)
    assert "readonly" in repr(saxpy.argument_types((np.float32(2.0), x, y, out))[1])
