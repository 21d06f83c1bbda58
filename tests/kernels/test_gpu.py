"""The corpus kernels on a real GPU (marker ``gpu``: skipped without a CUDA device)."""

import numpy as np
import pytest

from gpucompiler.errors import CudaError
from gpucompiler.runtime import cuda
from kernel_corpus import CASES, run_case, saxpy, sum_shared

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_on_gpu_matches_numpy(name):
    run_case(name, None)  # NumPy arguments: copied to the device and back


def test_capability_and_name():
    major, _minor = cuda.capability()
    assert major >= 5
    assert cuda.device_name()


def test_cupy_arrays_in_place_on_a_stream():
    cp = pytest.importorskip("cupy")
    n = 1 << 20
    x = cp.random.random(n, dtype=cp.float32)
    y = cp.random.random(n, dtype=cp.float32)
    out = cp.zeros(n, dtype=cp.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    cp.cuda.Device().synchronize()  # the inputs were made on the default stream
    saxpy[(n + 255) // 256, 256, stream](np.float32(3.0), x, y, out)
    stream.synchronize()
    np.testing.assert_allclose(cp.asnumpy(out), 3.0 * cp.asnumpy(x) + cp.asnumpy(y), rtol=1e-6)


def test_torch_tensors_in_place():
    torch = pytest.importorskip("torch")
    n = 100_003
    x = torch.rand(n, dtype=torch.float64, device="cuda")
    out = torch.zeros(1, dtype=torch.float64, device="cuda")
    sum_shared[(n + 63) // 64, 64, torch.cuda.current_stream()](x, out)
    torch.cuda.synchronize()
    assert abs(out.item() - x.sum().item()) < 1e-9 * n


def test_cuda_error_name():
    x = np.zeros(4, np.float32)
    with pytest.raises(CudaError) as info:
        saxpy[1, (64, 32)](1.0, x, x, x)  # 2048 threads per block
    assert info.value.name.startswith("CUDA_ERROR_")
