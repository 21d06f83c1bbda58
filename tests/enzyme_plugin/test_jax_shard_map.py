"""``jax_function`` inside ``jax.shard_map`` over several devices (two CPU devices here; GPUs alike):
the forward and gradients through the kernels' generated gradients equal the analytic ones, a parameter
replicated over the mesh gets every shard's contribution, and first compiles inside JAX's callback
threads work (they used to fail with CPython 3.11's ``SystemError`` from :mod:`ast` in foreign threads)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("jax", reason="JAX is not installed (the `jax` extra)")

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import numpy as np, jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    from jax.sharding import Mesh, PartitionSpec as P
    try:
        from jax import shard_map
    except ImportError:
        from jax.experimental.shard_map import shard_map
    from gpucompiler import kernel, device as gd
    from enzyme_plugin.interop.jaxfunc import jax_function

    @kernel
    def scale(x, w, y):
        i = gd.grid(1)
        if i < x.shape[0]:
            y[i] = w[0] * x[i] * x[i]

    def prog(device, x, w, y):
        scale[(x.shape[0] + 63) // 64, 64, device](x, w, y)

    f = jax_function(prog, lambda x, w: [(x.shape, x.dtype)])
    mesh = Mesh(np.array(jax.devices()[:2]), ("d",))
    g = shard_map(lambda x, w: f(x, w), mesh=mesh, in_specs=(P("d"), P()), out_specs=P("d"))
    x, w = jnp.linspace(0.1, 1.0, 128), jnp.array([3.0])
    xs = np.asarray(x)
    assert np.allclose(g(x, w), 3 * xs * xs)
    assert np.allclose(jax.jit(g)(x, w), 3 * xs * xs)
    loss = lambda x, w: (g(x, w) * jnp.cos(x)).sum()
    for grad in (jax.grad(loss, argnums=(0, 1)), jax.jit(jax.grad(loss, argnums=(0, 1)))):
        dx, dw = grad(x, w)
        want_dx = 6 * xs * np.cos(xs) - 3 * xs * xs * np.sin(xs)
        assert np.allclose(dx, want_dx, rtol=1e-12), np.max(np.abs(dx - want_dx))
        assert np.allclose(dw, [np.sum(xs * xs * np.cos(xs))], rtol=1e-12), dw  # both shards' parts
    print("OK")
""")


def test_jax_function_in_shard_map_over_two_devices(tmp_path):
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu",
               GPUC_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=f"{ROOT}:{ROOT / 'plugins'}")
    run = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip().endswith("OK"), run.stdout[-2000:] + run.stderr[-4000:]
