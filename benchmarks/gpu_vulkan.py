"""Vulkan (SPIR-V target) benchmarks: an elementwise kernel against the device's copy, a reduction,
and a gradient kernel.

Runs wherever a Vulkan device is (Mesa's lavapipe on a CPU; the NVIDIA driver in
scripts/gpu_check.sh, which carries the Vulkan loader)::

    PYTHONPATH=.:plugins python benchmarks/gpu_vulkan.py [--log2n 26] [--json out.json]

Bandwidth is bytes moved / device time: Vulkan timestamps around ``--inner``
dispatches recorded in one command buffer (a pipeline barrier between them),
the median over ``--reps`` after a warm-up. ``out[i] = a * x[i]`` (float32,
a grid-stride loop), the same loop copying (``out[i] = x[i]``) and
``vkCmdCopyBuffer`` of ``x`` into ``out`` move the same bytes, in device-local
buffers; the goal compares with the faster copy (on the NVIDIA driver
``vkCmdCopyBuffer`` runs on a copy engine, far below the shaders). The reduction sums ``x`` with a
shared-memory tree per workgroup and one float32 atomic add per workgroup;
the gradient kernel is ``d/dx sum(sin(x) * w0 * x + w1 * x * x)`` with
``autodiff`` inside it (float32: shared parameters accumulated atomically).
Goal (issue 26): elementwise >= 80 % of the copy bandwidth.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics

import numpy as np

from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from gpucompiler import device as gd
from gpucompiler import kernel
from gpucompiler.runtime import vulkan

BLOCK = 256


@kernel
def scale(out, a, x):
    i = gd.grid(1)
    stride = gd.gridsize(1)
    while i < x.shape[0]:
        out[i] = a * x[i]
        i += stride


@kernel
def copy(out, x):
    i = gd.grid(1)
    stride = gd.gridsize(1)
    while i < x.shape[0]:
        out[i] = x[i]
        i += stride


@kernel
def block_sum(total, x):
    tile = gd.shared_array(BLOCK, np.float32)
    t = gd.threadIdx.x
    i = gd.grid(1)
    acc = np.float32(0)
    while i < x.shape[0]:
        acc += x[i]
        i += gd.gridsize(1)
    tile[t] = acc
    gd.syncthreads()
    step = BLOCK // 2
    while step > 0:
        if t < step:
            tile[t] += tile[t + step]
        gd.syncthreads()
        step //= 2
    if t == 0:
        gd.atomic_add(total, 0, tile[0])


def energy(x, w, i):
    return math.sin(x[i]) * w[0] * x[i] + w[1] * x[i] * x[i]


@kernel(plugins=("enzyme",))
def grad_energy(x, dx, w, dw):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, energy, Duplicated(x, dx), Duplicated(w, dw), Const(i))


def timed(measure, reps: int) -> float:
    """The median of ``reps`` device times after one warm-up."""
    measure()
    return statistics.median(measure() for _ in range(reps))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", type=int, default=26)
    ap.add_argument("--inner", type=int, default=20)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    dev = vulkan.device()
    n = 1 << args.log2n
    groups = min(n // BLOCK, dev.max_groups[0], 1 << 16)
    x = vulkan.VulkanArray(n, np.float32, host=False)
    out = vulkan.VulkanArray(n, np.float32, host=False)
    vulkan.transfer(dev, None, x, word=0x3F800000)  # 1.0f
    nbytes = 2 * n * 4
    rows = []

    copy_s = timed(lambda: vulkan.transfer(dev, x, out, args.inner), args.reps) / args.inner
    rows.append({"kernel": "vkCmdCopyBuffer", "ms": copy_s * 1e3, "GBps": nbytes / copy_s / 1e9})

    sh, buffers, _ = vulkan.prepare(copy, groups, BLOCK, (out, x), dev)
    shader_copy_s = timed(lambda: vulkan.run(dev, sh, (groups, 1, 1), buffers, args.inner), args.reps) / args.inner
    rows.append({"kernel": "out = x (SPIR-V copy shader)", "ms": shader_copy_s * 1e3,
                 "GBps": nbytes / shader_copy_s / 1e9})

    sh, buffers, _ = vulkan.prepare(scale, groups, BLOCK, (out, np.float32(2), x), dev)
    scale_s = timed(lambda: vulkan.run(dev, sh, (groups, 1, 1), buffers, args.inner), args.reps) / args.inner
    rows.append({"kernel": "out = a*x (SPIR-V)", "ms": scale_s * 1e3, "GBps": nbytes / scale_s / 1e9})
    check = vulkan.to_device(np.zeros(4096, np.float32))
    small = vulkan.to_device(np.arange(4096, dtype=np.float32))
    vulkan.launch(scale, 16, BLOCK, (check, np.float32(2), small))
    assert np.array_equal(check.view(), 2 * np.arange(4096, dtype=np.float32))

    total = vulkan.to_device(np.zeros(1, np.float32))
    sh, buffers, _ = vulkan.prepare(block_sum, groups, BLOCK, (total, x), dev)
    sum_s = timed(lambda: vulkan.run(dev, sh, (groups, 1, 1), buffers, args.inner), args.reps) / args.inner
    rows.append({"kernel": "sum (shared+atomic, SPIR-V)", "ms": sum_s * 1e3, "GBps": n * 4 / sum_s / 1e9})
    total.view()[...] = 0
    vulkan.run(dev, sh, (groups, 1, 1), buffers, 1)
    assert total.view()[0] == n, total.view()[0]  # n ones: exact in float32 up to 2**24 per partial sum

    m = min(n, 1 << 22)
    xs = vulkan.to_device(np.linspace(-2, 2, m, dtype=np.float32))
    dxs = vulkan.to_device(np.zeros(m, np.float32))
    w = vulkan.to_device(np.array([1.5, -0.25], np.float32))
    dw = vulkan.to_device(np.zeros(2, np.float32))
    sh, buffers, _ = vulkan.prepare(grad_energy, m // BLOCK, BLOCK, (xs, dxs, w, dw), dev)
    grad_s = timed(lambda: vulkan.run(dev, sh, (m // BLOCK, 1, 1), buffers, args.inner), args.reps) / args.inner
    rows.append({"kernel": f"gradient of energy (2^{int(math.log2(m))}, SPIR-V)", "ms": grad_s * 1e3,
                 "GBps": 3 * m * 4 / grad_s / 1e9})

    print(f"Vulkan device: {dev.name}; n = 2^{args.log2n} float32; {groups} workgroups of {BLOCK}")
    print(f"| {'kernel':40} | {'ms':>9} | {'GB/s':>8} |")
    print(f"|{'-' * 42}|{'-' * 11}|{'-' * 10}|")
    for r in rows:
        print(f"| {r['kernel']:40} | {r['ms']:9.4f} | {r['GBps']:8.1f} |")
    ratio = min(copy_s, shader_copy_s) / scale_s
    print(f"elementwise / best copy bandwidth (vkCmdCopyBuffer or the copy shader): {ratio:.0%} "
          f"(goal >= 80%: {'MET' if ratio >= 0.8 else 'not met'})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": dev.name, "log2n": args.log2n, "rows": rows, "elementwise_vs_copy": ratio}, f,
                      indent=1)


if __name__ == "__main__":
    main()
