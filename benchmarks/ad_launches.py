"""A two-kernel program's gradient through a launch tape, beside JAX and PyTorch on the same device.

The program: ``transform`` writes ``y = sin(x) * x``, ``energy`` adds
``w0 * y²`` of every element into ``out[0]`` (one atomic per thread); its
gradient ``(d out / d x, d out / d w)`` comes from ``LaunchTape``: the
recorded launches, then the two generated gradient kernels in reverse; one
tape, ``reset()`` before each recording
(``(split)``: split mode, the per-thread tapes in rows of one array per launch). Beside it:
``jax.jit(jax.grad(f))`` of the same function in ``jax.numpy`` and PyTorch's
``backward`` on the same device, when installed. Each gradient is checked
against the analytic one before it is timed. Times: median over ``--reps``
calls (synchronised on a GPU), primal and gradient; ``ratio`` =
gradient / primal of the same implementation. ``tape µs/launch``: the
launch tape's own host cost per recorded launch: the gradient's time minus
the time of the same kernel launches made directly (the two forward or
augmented launches and the two gradient or reverse launches, on arguments
typed once: on the CPU the emulation's compiled kernels called directly),
over the number of recorded launches.

    PYTHONPATH=.:plugins python benchmarks/ad_launches.py [--device cpu|gpu|fake] [--n N] [--json PATH]

On the CPU the kernels run on the grid emulation (one OS thread: blocks and
threads in order) and JAX on its CPU backend; on a GPU with CuPy (and JAX,
PyTorch when installed).

``--device fake`` times the host side of a round anywhere: the CUDA path with
the fake driver of tests/kernels/test_cuda_launch.py whose ``cuLaunchKernel``
returns at once (its C function, which native launch entries call, too:
benchmarks/launch_overhead.py's ``NullDriver``), on the fake CuPy of
tests/runtime/fake_cupy.py (its arrays' attributes and
``__cuda_array_interface__`` as costly as CuPy's to read, their copies and
memsets on the host, a captured graph replaying nothing). Per part of a round
(``out[0] = 0`` and ``reset()``, the two recorded launches, ``backward``) the
median and the best of ``--reps`` rounds, beside the same launches made
directly (the two kernels, then the two gradient kernels): the tape's own
work per recorded launch is the recording's time less the direct launches',
over two. Rounds run first until the launches made directly and the tape's
repeated launches have their native entries; the table says the path each
took (native or Python). ``--read-gradients``: each round also reads
``tape.gradient(x)`` and ``tape.gradient(w)`` after its timed parts, as a
training loop does (the next recording then checks those two shadows for
other holders before it takes them again).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

from enzyme_plugin import LaunchTape
from enzyme_plugin.launches.gradients import gradient_kernel, split_kernel
from enzyme_plugin.launches.tape import Repeat
from gpucompiler import device as gd
from gpucompiler import GPUCompilerError, kernel
from gpucompiler.cache import later
from gpucompiler.kernel import Launch
from gpucompiler.errors import DeviceHeapError

BLOCK = 256
LAUNCHES = 2
@kernel
def transform(x, y):
    i = gd.grid(1)
    if i < x.shape[0]:
        y[i] = math.sin(x[i]) * x[i]


@kernel
def energy(y, w, out):
    i = gd.grid(1)
    if i < y.shape[0]:
        gd.atomic_add(out, 0, w[0] * y[i] * y[i])


def program(x, y, w, out, dev):
    blocks = (x.shape[0] + BLOCK - 1) // BLOCK
    transform[blocks, BLOCK, dev](x, y)
    energy[blocks, BLOCK, dev](y, w, out)


def analytic(x, w):
    y = np.sin(x) * x
    return 2 * w[0] * y * (np.cos(x) * x + np.sin(x)), np.sum(y * y)


def timed(fn, reps, sync) -> float:
    fn()
    sync()
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def ours(x, w, xp, dev, split, reps, sync):
    y, out = xp.zeros_like(x), xp.zeros(1)

    def primal():
        out[0] = 0.0
        program(x, y, w, out, dev)

    tape = LaunchTape(split=split)   # one tape, reset before each recording (as Warp's tape.reset())

    def grad():
        out[0] = 0.0
        tape.reset()
        with tape:
            program(x, y, w, out, dev)
        grad.rows = [r.holders.shape[1] for r in tape.records] if split else None
        tape.backward(loss=out)
        return tape.gradient(x), tape.gradient(w)

    return primal, grad, timed(primal, reps, sync), timed(grad, reps, sync)


def prepared(k, blocks, dev, *args):
    """One launch of ``k`` on ``args`` typed once: on the CPU the grid emulation's compiled kernel called
    directly (the floor the tape's launches are measured against), on a GPU the bound launch."""
    if dev != "cpu":
        launch = k[blocks, BLOCK, dev]
        return lambda: launch(*args)
    em, grid, block = k.emulated(k.host_arguments(args)[0]), (blocks, 1, 1), (BLOCK, 1, 1)
    return lambda: em.launch(grid, block, args)


def launches_only(x, w, xp, dev, split, reps, sync, rows=None) -> float:
    """The kernel launches of a gradient made directly, without the tape (see the module docstring); split
    mode: per-thread tape rows of ``rows[k]`` words for launch ``k``, as the tape made them."""
    y, out = xp.zeros_like(x), xp.zeros(1)
    dx, dy, dw, dout = xp.zeros_like(x), xp.zeros_like(x), xp.zeros_like(w), xp.ones(1)
    blocks = (x.shape[0] + BLOCK - 1) // BLOCK
    if split:
        h = [xp.zeros((blocks * BLOCK, words), dtype=xp.int64) for words in rows or (1,) * LAUNCHES]
        ts, es = split_kernel(transform, (True, True)), split_kernel(energy, (True, True, True))
        calls = [prepared(ts, blocks, dev, 0, h[0], x, dx, y, dy), prepared(es, blocks, dev, 0, h[1], y, dy, w, dw, out, dout),
                 prepared(es, blocks, dev, 1, h[1], y, dy, w, dw, out, dout), prepared(ts, blocks, dev, 1, h[0], x, dx, y, dy)]
    else:
        tg, eg = gradient_kernel(transform, (True, True)), gradient_kernel(energy, (True, True, True))
        calls = [prepared(transform, blocks, dev, x, y), prepared(energy, blocks, dev, y, w, out),
                 prepared(eg, blocks, dev, y, dy, w, dw, out, dout), prepared(tg, blocks, dev, x, dx, y, dy)]

    def run():
        for call in calls:
            call()
    return timed(run, reps, sync)


def fake_rows(n: int, reps: int, read: bool = False) -> dict:
    """``--device fake``: µs per part of a round (median, best), see the module docstring."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [os.path.join(here, "..", "tests", "kernels"), os.path.join(here, "..", "tests", "runtime")]
    import fake_cupy  # pyright: ignore[reportMissingImports]
    from launch_overhead import NullDriver  # its C cuLaunchKernel (native entries') returns 0 too

    from gpucompiler.runtime import cuda

    driver = NullDriver()
    cuda._driver = lambda: driver
    cuda._state, cuda._functions, cuda._launchers, cuda._capability = {"init": False}, {}, {}, {}
    with fake_cupy.installed() as cp:
        return part_rows(cp, n, reps, lambda: None, read)


def part_rows(cp, n: int, reps: int, sync, read: bool = False) -> dict:
    """µs per part of a round (median, best) on the arrays of ``cp`` (CuPy or the fake one): host times, the
    launches queued and not waited for (a GPU round ends with ``sync()``, outside the parts; ``read``: then
    reads the gradients of ``x`` and ``w``)."""
    blocks = (n + BLOCK - 1) // BLOCK
    x, w, y, out = cp.asarray(np.linspace(0.1, 1.2, n)), cp.asarray([0.75]), cp.zeros(n), cp.zeros(1)
    dx, dy, dw, dout = cp.zeros(n), cp.zeros(n), cp.zeros(1), cp.asarray([1.0])
    tape = LaunchTape()
    tg, eg = gradient_kernel(transform, (True, True)), gradient_kernel(energy, (True, True, True))
    kernels: list[Any] = [transform, energy, eg, tg]
    launches = [k[blocks, BLOCK] for k in kernels]
    parts: dict[str, list[int]] = {k: [] for k in ("reset", "record", "backward", "program", "launches", "gradients")}
    clock = time.perf_counter_ns
    for count in range(4096):  # until the launches made directly and the recorded ones have native entries
        round_(tape, x, y, w, out, dx, dy, dw, dout, launches)
        sync()
        direct, recorded, replayed = _natives(tape, launches)
        if direct == len(launches) and (recorded == LAUNCHES or not hasattr(Repeat, "native")) \
                and replayed is not False:
            break  # (a tree without the tape's entries or its native recorder: those stay Python)
        if count % 16 == 15:
            later.wait()  # (entries compile on a thread of their own)
    for r in range(reps + 20):  # the first rounds compile, make the shadows and capture the graph
        t0 = clock()
        out[0] = 0.0
        tape.reset()
        t1 = clock()
        with tape:
            program(x, y, w, out, None)
        t2 = clock()
        tape.backward(loss=out)
        t3 = clock()
        program(x, y, w, out, None)  # the recorded statements again, without the tape
        t4 = clock()
        launches[0](x, y)
        launches[1](y, w, out)
        t5 = clock()
        launches[2](y, dy, w, dw, out, dout)
        launches[3](x, dx, y, dy)
        t6 = clock()
        sync()
        if read:
            tape.gradient(x)
            tape.gradient(w)
        if r >= 20:
            for key, ns in zip(parts, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5)):
                parts[key].append(ns)
    rows: dict[str, Any] = {k: (statistics.median(v) / 1e3, min(v) / 1e3) for k, v in parts.items()}
    # what recording adds to the same statements (``kernel[grid](...)``: the subscripts and the call of program()
    # are the program's, not the tape's); against the launch objects made beforehand as well
    (record, best), (plain, plain_best), (direct, direct_best) = rows["record"], rows["program"], rows["launches"]
    rows["tape per launch"] = ((record - plain) / LAUNCHES, (best - plain_best) / LAUNCHES)
    rows["tape per launch, against launch objects"] = ((record - direct) / LAUNCHES, (best - direct_best) / LAUNCHES)
    direct, recorded, replayed = _natives(tape, launches)
    rows["native"] = (direct, len(launches), recorded, replayed)  # the paths taken, printed with the parts
    return rows


def round_(tape, x, y, w, out, dx, dy, dw, dout, launches) -> None:
    """One untimed round of :func:`part_rows`."""
    out[0] = 0.0
    tape.reset()
    with tape:
        program(x, y, w, out, None)
    tape.backward(loss=out)
    launches[0](x, y)
    launches[1](y, w, out)
    launches[2](y, dy, w, dw, out, dout)
    launches[3](x, dx, y, dy)


def _natives(tape, launches) -> tuple[int, int, bool | None]:
    """(the launch objects of ``launches`` with a native entry, the launches of ``tape``'s recording that repeat
    the last one's through a native entry of the tape's, whether the next recording is the tape's native replay:
    None for a tree without one)."""
    direct = sum(type(launch) is not Launch for launch in launches)
    recorded = sum(getattr(m, "native", None) is not None for m in tape._repeats if m is not None)
    return direct, recorded, (tape._replay is not None) if hasattr(tape, "_replay") else None


def print_parts(n: int, reps: int, rows: dict, where: str = "the fake driver and fake CuPy") -> None:
    print(f"two-kernel program, n = {n}, {where} ({reps} rounds), load "
          f"{', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"| {'part of a round':44} | median (µs) | best (µs) |")
    print(f"|{'-' * 46}|-------------|-----------|")
    direct, made, recorded, replayed = rows["native"]
    path = {0: "Python", made: "native"}.get(direct, f"{direct} of {made} native")
    how = "native replay" if replayed else "native" if recorded == LAUNCHES else "Python"
    names = {"reset": "out[0] = 0, reset()",
             "record": f"recording the two launches ({how})",
             "backward": "backward", "program": "the program's statements without the tape",
             "launches": f"the two launches made directly ({path})",
             "gradients": f"the two gradient launches directly ({path})",
             "tape per launch": "tape's own work per recorded launch",
             "tape per launch, against launch objects": "the same, against the launch objects"}
    for key, name in names.items():
        median, best = rows[key]
        print(f"| {name:44} | {median:11.2f} | {best:9.2f} |")


def jax_rows(xh, wh, gpu, reps):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    dev = jax.devices("gpu" if gpu else "cpu")[0]
    x, w = jax.device_put(jnp.asarray(xh), dev), jax.device_put(jnp.asarray(wh), dev)

    def f(x, w):
        y = jnp.sin(x) * x
        return jnp.sum(w[0] * y * y)

    fp, fg = jax.jit(f), jax.jit(jax.grad(f, argnums=(0, 1)))
    dx, dw = fg(x, w)
    ex, ew = analytic(xh, wh)
    assert np.allclose(np.asarray(dx), ex, rtol=1e-10) and np.isclose(float(dw[0]), ew, rtol=1e-10)
    tp = timed(lambda: fp(x, w).block_until_ready(), reps, lambda: None)
    tg = timed(lambda: jax.block_until_ready(fg(x, w)), reps, lambda: None)
    return {"primal_s": tp, "grad_s": tg, "ratio": tg / tp, "version": jax.__version__}


def torch_rows(xh, wh, gpu, reps):
    try:
        import torch
    except ImportError:
        return None
    if gpu and not torch.cuda.is_available():
        return None
    dev = "cuda" if gpu else "cpu"
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    x0, w0 = torch.tensor(xh, device=dev), torch.tensor(wh, device=dev)

    def f(x, w):
        y = torch.sin(x) * x
        return torch.sum(w[0] * y * y)

    def primal():
        with torch.no_grad():
            f(x0, w0)

    def grad():
        x, w = x0.detach().requires_grad_(), w0.detach().requires_grad_()
        f(x, w).backward()
        return x.grad, w.grad

    gx, gw = grad()
    ex, ew = analytic(xh, wh)
    assert gx is not None and gw is not None
    assert np.allclose(gx.cpu().numpy(), ex, rtol=1e-10) and np.isclose(float(gw[0]), ew, rtol=1e-10)
    tp, tg = timed(primal, reps, sync), timed(grad, reps, sync)
    return {"primal_s": tp, "grad_s": tg, "ratio": tg / tp, "version": torch.__version__}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "gpu", "fake"), default="cpu")
    ap.add_argument("--n", type=int, default=None, help="elements (default: 2^18 on the CPU, 2^24 on a GPU)")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--read-gradients", action="store_true",
                    help="--device fake: each round also reads the gradients of x and w (outside the parts)")
    ap.add_argument("--parts", type=int, default=0, metavar="ROUNDS",
                    help="on a GPU, also the host time of each part of a round, as --device fake prints it")
    args = ap.parse_args()
    if args.device == "fake":
        n, reps = args.n or 1024, args.reps or 3000
        fake = fake_rows(n, reps, args.read_gradients)
        print_parts(n, reps, fake, "the fake driver and fake CuPy" + (", the gradients read" if args.read_gradients else ""))
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"device": "fake", "n": n, "reps": reps, "read_gradients": args.read_gradients,
                           "us_median_best": fake, "load": os.getloadavg(),
                           "machine": platform.processor() or platform.machine()}, fh, indent=1)
        return 0
    gpu = args.device == "gpu"
    n = args.n or (1 << 24 if gpu else 1 << 18)
    reps = args.reps or (50 if gpu else 7)
    rng = np.random.default_rng(0)
    xh, wh = rng.uniform(-2.0, 2.0, n), np.array([0.75])
    if gpu:
        import cupy as cp

        from gpucompiler.runtime import cuda

        xp, dev, sync, x, w = cp, None, cuda.synchronize, cp.asarray(xh), cp.asarray(wh)
        label = cuda.device_name()
    else:
        xp, dev, sync, x, w = np, "cpu", (lambda: None), xh, wh
        label = platform.processor() or platform.machine()
    rows: dict = {}
    ex, ew = analytic(xh, wh)
    lost = False  # a trap on the GPU (the device heap ran out) leaves the CUDA context unusable
    # the peers first: a trap in split mode (a tape grown onto a full device heap) loses the CUDA context
    others = (("JAX jit(grad)", lambda: jax_rows(xh, wh, gpu, reps)), ("PyTorch", lambda: torch_rows(xh, wh, gpu, reps)))
    for name, run in others:
        r = run()
        if r is not None:
            rows[name] = r
    for split in (False, True):
        name = "LaunchTape" + (" (split)" if split else "")
        try:
            _, grad, tp, tg = ours(x, w, xp, dev, split, reps, sync)
        except GPUCompilerError as exc:  # e.g. the device heap too small for a tape per thread: said, not hidden
            print(f"{name}: {type(exc).__name__}: {exc}")
            rows[name] = {"error": f"{type(exc).__name__}: {exc}"}
            lost = gpu and isinstance(exc, DeviceHeapError)
            if lost:
                break
            continue
        gx, gw = grad()
        gx = gx.get() if gpu else gx
        assert np.allclose(gx, ex, rtol=1e-10) and np.isclose(float(gw[0]), ew, rtol=1e-10), "wrong gradient"
        direct = launches_only(x, w, xp, dev, split, reps, sync, getattr(grad, "rows", None))
        rows[name] = {"primal_s": tp, "grad_s": tg, "ratio": tg / tp, "launches_s": direct,
                      "tape_per_launch_s": (tg - direct) / LAUNCHES}
    print(f"two-kernel program, n = {n}, float64, {args.device}: {label}")
    print(f"| {'implementation':22} | primal (ms) | gradient (ms) | gradient/primal | tape µs/launch |")
    print(f"|{'-' * 24}|-------------|---------------|-----------------|----------------|")
    for name, r in rows.items():
        if "error" in r:
            print(f"| {name:22} | {'-':>11} | {'-':>13} | {'failed' if not lost or 'LaunchTape' in name else 'not run':>15} "
                  f"| {'-':>14} |")
            continue
        per = f"{r['tape_per_launch_s'] * 1e6:14.1f}" if "tape_per_launch_s" in r else f"{'-':>14}"
        print(f"| {name:22} | {r['primal_s'] * 1e3:11.3f} | {r['grad_s'] * 1e3:13.3f} | {r['ratio']:15.2f} | {per} |")
    parts = None
    if gpu and args.parts and not lost:
        parts = part_rows(cp, n, args.parts, sync)  # pyright: ignore[reportPossiblyUnboundVariable]
        print_parts(n, args.parts, parts, f"host times on {label}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": args.device, "machine": label, "n": n, "reps": reps, "rows": rows,
                       "us_median_best": parts, "load": os.getloadavg(),
                       "device_heap": os.environ.get("GPUC_DEVICE_HEAP")}, fh, indent=1)
    if lost:  # CuPy's finalizers would free into the lost context at exit (errors printed during shutdown)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
