"""Kernel programs as a PyTorch ``autograd.Function`` and a JAX ``custom_vjp`` function: gradients checked
by ``torch.autograd.gradcheck`` (float64) and ``jax.test_util.check_grads`` against finite differences,
and against the analytic gradient. Each library is imported by its tests only (skipped without it)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import launch_programs as P
from gpucompiler.errors import ArgumentTypeError

NO_TORCH = ("PyTorch is not installed: PyPI's Linux wheel is the CUDA build (0.55 GB for torch 2.14.1, plus the "
            "CUDA toolkit, cuDNN, NCCL and NVSHMEM wheels it requires: several GB), too large for CI; "
            "scripts/gpu_check.sh runs these tests where PyTorch is")


def expected(x, w):
    return w[0] * np.cos(x * x) * 2 * x, np.sum(np.sin(x * x))


# -- PyTorch ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def torch():
    if importlib.util.find_spec("torch") is None:
        pytest.skip(NO_TORCH)
    import torch

    return torch


@pytest.fixture(scope="module")
def torch_f(torch):
    from enzyme_plugin.interop.pytorch import torch_function

    return torch_function(P.two_kernel_program, P.two_kernel_outputs)


def test_torch_function_gradient_matches_analytic_on_cpu_tensors(torch, torch_f):
    x = torch.linspace(0.1, 1.2, 100, dtype=torch.float64, requires_grad=True)
    w = torch.tensor([3.0], dtype=torch.float64, requires_grad=True)
    _, out = torch_f(x, w)
    assert np.allclose(out.detach().numpy(), 3.0 * np.sum(np.sin(x.detach().numpy() ** 2)))
    out.sum().backward()
    dx, dw = expected(x.detach().numpy(), [3.0])
    assert np.allclose(x.grad.numpy(), dx) and np.isclose(w.grad.numpy()[0], dw)


def test_torch_gradcheck_passes_in_float64(torch, torch_f):
    x = torch.linspace(0.1, 1.2, 20, dtype=torch.float64, requires_grad=True)
    w = torch.tensor([1.5], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(torch_f, (x, w), eps=1e-6, atol=1e-6)


@pytest.mark.gpu
def test_torch_function_on_cuda_tensors_matches_the_cpu(torch, torch_f):
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    x = torch.linspace(0.1, 1.2, 1000, dtype=torch.float64, device="cuda", requires_grad=True)
    w = torch.tensor([3.0], dtype=torch.float64, device="cuda", requires_grad=True)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):          # launched on the producer's (current) stream
        _, out = torch_f(x, w)
        out.sum().backward()
    torch.cuda.synchronize()
    dx, dw = expected(x.detach().cpu().numpy(), [3.0])
    assert np.allclose(x.grad.cpu().numpy(), dx) and np.isclose(w.grad.cpu().numpy()[0], dw)
    # atomics in another order on the device: sums equal to the last bits, hence nondet_tol
    assert torch.autograd.gradcheck(torch_f, (x[:20].detach().requires_grad_(), w), eps=1e-6, atol=1e-6,
                                    nondet_tol=1e-12)


# -- JAX ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def jax():
    jax = pytest.importorskip("jax", reason="JAX is not installed (pip install -e '.[jax]')")
    jax.config.update("jax_enable_x64", True)
    return jax


@pytest.fixture(scope="module")
def jax_f(jax):
    from enzyme_plugin.interop.jaxfunc import jax_function

    return jax_function(P.two_kernel_program, P.two_kernel_outputs)


def test_jax_grad_matches_analytic(jax, jax_f):
    import jax.numpy as jnp

    x, w = jnp.linspace(0.1, 1.2, 100), jnp.array([3.0])
    y, _ = jax_f(x, w)
    assert np.allclose(np.asarray(y), np.sin(np.asarray(x) ** 2))
    dx, dw = jax.grad(lambda x, w: jax_f(x, w)[1][0], argnums=(0, 1))(x, w)
    ex, ew = expected(np.asarray(x), [3.0])
    assert np.allclose(np.asarray(dx), ex) and np.isclose(float(dw[0]), ew)


def test_jax_grad_under_jit_matches_eager(jax, jax_f):
    import jax.numpy as jnp

    x, w = jnp.linspace(0.1, 1.2, 64), jnp.array([2.0])
    loss = lambda x, w: jnp.sum(jax_f(x, w)[0] * x) + jax_f(x, w)[1][0]  # noqa: E731
    eager = jax.grad(loss, argnums=(0, 1))(x, w)
    jitted = jax.jit(jax.grad(loss, argnums=(0, 1)))(x, w)
    for a, b in zip(eager, jitted):
        assert np.allclose(np.asarray(a), np.asarray(b), rtol=1e-13)


def test_jax_check_grads_passes_in_reverse_mode(jax, jax_f):
    import jax.numpy as jnp
    from jax.test_util import check_grads

    x, w = jnp.linspace(0.1, 1.2, 20), jnp.array([1.5])
    check_grads(lambda x, w: jax_f(x, w)[1], (x, w), order=1, modes=["rev"], eps=1e-6)
    check_grads(lambda x, w: jax_f(x, w)[0], (x, w), order=1, modes=["rev"], eps=1e-6)


class DeviceArray:
    """An array that says (DLPack) it lives on a CUDA device: the device choice reads only that."""

    def __init__(self, device_type: int):
        self.device_type = device_type

    def __dlpack_device__(self):
        return self.device_type, 0


class RecordingCuPy:
    """CuPy as the JAX wrapper uses it: ``from_dlpack`` refuses host memory as CuPy does."""

    def __init__(self):
        self.copied = []

    def from_dlpack(self, x):
        if x.__dlpack_device__()[0] in (1, 3):
            raise TypeError("CPU arrays cannot be directly imported to CuPy")
        return x

    def asarray(self, x):
        self.copied.append(x)
        return x


def test_jax_device_choice_reads_where_each_array_lives(jax):
    import jax.numpy as jnp
    from enzyme_plugin.interop.jaxfunc import placement

    cpu = jax.device_put(jnp.ones(3), jax.devices("cpu")[0])
    assert placement([cpu, np.ones(2)]) is False          # CPU arrays: the emulation, whatever else is present
    assert placement([DeviceArray(2), DeviceArray(2)]) is True
    with pytest.raises(ArgumentTypeError, match=r"input 1.*on the gpu \(input 0 is on the cpu\)") as info:
        placement([cpu, DeviceArray(2)])
    assert info.value.filename == __file__ and "jax.device_put" in info.value.hint


def test_jax_cotangents_on_the_host_are_copied_to_the_gpu_not_imported(jax, monkeypatch):
    """``check_grads`` gives NumPy cotangents for GPU inputs: CuPy's from_dlpack refuses host memory."""
    import enzyme_plugin.interop.jaxfunc as J

    cupy = RecordingCuPy()
    monkeypatch.setattr(J, "_cupy", lambda: cupy)
    ct, gpu_input = np.arange(3.0), DeviceArray(2)
    assert J._to_device(ct, True) is ct and len(cupy.copied) == 1
    assert J._to_device(gpu_input, True) is gpu_input and len(cupy.copied) == 1   # no copy


def test_jax_cpu_arrays_take_the_emulation_when_the_default_backend_is_a_gpu(jax, jax_f, monkeypatch):
    import jax.numpy as jnp
    import enzyme_plugin.interop.jaxfunc as J
    from jax.test_util import check_grads

    def no_cupy():
        raise AssertionError("CuPy used for arrays that live on the CPU")

    monkeypatch.setattr(J, "_cupy", no_cupy)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")   # as on a machine with CUDA JAX
    cpu = jax.devices("cpu")[0]
    x, w = jax.device_put(jnp.linspace(0.1, 1.2, 20), cpu), jax.device_put(jnp.array([1.5]), cpu)
    dx, dw = jax.grad(lambda x, w: jax_f(x, w)[1][0], argnums=(0, 1))(x, w)
    ex, ew = expected(np.asarray(x), [1.5])
    assert np.allclose(np.asarray(dx), ex) and np.isclose(float(dw[0]), ew)
    check_grads(lambda x, w: jax_f(x, w)[1], (x, w), order=1, modes=["rev"], eps=1e-6)


@pytest.mark.gpu
def test_jax_function_on_gpu_arrays(jax, jax_f):
    pytest.importorskip("cupy")
    if jax.default_backend() != "gpu":
        pytest.skip("JAX sees no GPU")
    import jax.numpy as jnp

    from jax.test_util import check_grads

    x, w = jnp.linspace(0.1, 1.2, 1000), jnp.array([3.0])
    dx, dw = jax.grad(lambda x, w: jax_f(x, w)[1][0], argnums=(0, 1))(x, w)
    ex, ew = expected(np.asarray(x), [3.0])
    assert np.allclose(np.asarray(dx), ex) and np.isclose(float(dw[0]), ew)
    # NumPy cotangents for GPU inputs (check_grads makes them): copied to the GPU
    check_grads(lambda x, w: jax_f(x, w)[1], (x[:20], w), order=1, modes=["rev"], eps=1e-6)
    with pytest.raises(ArgumentTypeError, match="input 1"):
        jax_f(x, jax.device_put(w, jax.devices("cpu")[0]))
