"""Host time per kernel launch: with a driver that returns at once (anywhere), and on a GPU beside CuPy.

::

    PYTHONPATH=.:plugins python benchmarks/launch_overhead.py [--launches 100000] [--json out.json]
        [--profile] [--baseline DIR]

The first rows launch through the CUDA runtime with the fake driver of
tests/kernels/test_cuda_launch.py whose ``cuLaunchKernel`` returns at once:
what remains is the Python work of a launch (the configuration, world-age
check, argument signature, packing), the part this project controls. Arrays
are CuPy-like: ``__cuda_array_interface__`` a property that builds its dict
at each access, as CuPy's does; the ``fake CuPy`` rows launch on the fake
CuPy arrays of tests/runtime/fake_cupy.py, which the runtime reads by their
attributes as it reads CuPy's. A launch object launched many times with one
signature on CuPy arrays and scalars gets a native entry (``gpucompiler/runtime/launch_entry.py``: the
launch's checks and ``cuLaunchKernel`` in compiled code; here the fake driver's C ``cuLaunchKernel`` is a
compiled function returning 0), so the ``fake CuPy`` rows are native launches; the ``fake CuPy, Python`` rows
after them launch the same arguments through ``Launch.__call__`` (what the entry falls back to, and what
every launch was before it). The CuPy-like arrays are read by their ``__cuda_array_interface__``: those
launches stay Python. Each figure is the CPU time of the launching
thread (all a launch does on this driver is CPU work; on a shared host its
wall time also counts the waits for a core), the best of 40 rounds of
``--launches / 10`` launches. ``--profile`` prints where the one-array launch spends its
time: cProfile by own time, then its parts timed alone in ``perf_counter_ns`` loops of ``--launches`` calls
(cProfile's own cost per call distorts code this short): the whole launch (native where the launch has an
entry), the Python launch, the argument signature, the bound launch given it (guards, packing, the driver
call) and the driver's ``cuLaunchKernel`` alone, on the fake driver's CuPy-like and fake CuPy arrays, and with
a GPU on a CuPy array. ``--baseline DIR`` times the same launches with
the ``gpucompiler`` package under DIR as well (e.g. an older commit:
``git archive <commit> gpucompiler | tar -x -C DIR``), in subprocesses
alternating with this checkout's, and prints the ratio.

With a GPU, CuPy and cuda-bindings, the last rows are real launches: host
wall time per launch of the same one-array kernel many times in a row, ours
(``touch[1, 32](x)``, the label saying whether it ran through its native entry) beside CuPy's
``RawKernel`` of the same body, then ours through the Python launch. Goal: ours no slower than CuPy's.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "kernels"))
sys.path.insert(0, os.path.join(ROOT, "tests", "runtime"))

from gpucompiler import device as gd  # noqa: E402
from gpucompiler.kernel import Kernel, Launch  # noqa: E402
try:
    from gpucompiler.cache.later import wait as wait_for_compiles
except ImportError:  # (a package from before the cache's threads: nothing to wait for)
    def wait_for_compiles() -> None:
        pass
from gpucompiler.runtime import cuda  # noqa: E402
from test_cuda_launch import FakeDriver  # pyright: ignore[reportMissingImports]  # noqa: E402
import fake_cupy  # pyright: ignore[reportMissingImports]  # noqa: E402


def _touch(x):
    if gd.grid(1) == 0:
        x[0] = x[0] + 1.0


touch = Kernel(_touch)


def _axpy(a, x, y, out):
    i = gd.grid(1)
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]


axpy = Kernel(_axpy)


class NullDriver(FakeDriver):
    """The test suite's fake driver, launching nothing; its C ``cuLaunchKernel`` (for native entries) a compiled
    function returning 0, its function handles their ``id``."""

    def cuLaunchKernel(self, *args):
        return (0,)

    def native_launch(self):
        return _null_launch(), id


@functools.cache
def _null_launch() -> int:
    """The address of ``int f(void *, unsigned x 7, void *, void **, void **) { return 0; }``, compiled here."""
    from gpucompiler.runtime.cpu import CPULibrary

    params = ", ".join(["ptr %f", *(f"i32 %d{k}" for k in range(7)), "i64 %s", "ptr %p", "ptr %e"])
    lib = _KEPT["null"] = CPULibrary.from_ir(f"define i32 @gpuc_null_launch({params}) {{\n  ret i32 0\n}}\n")
    return lib.address("gpuc_null_launch")


_KEPT: dict = {}  # the null function's library, loaded while the process runs


def _python_only(launch):
    """``launch``, asking for no native entry while its Python launch is timed (each ask, at most one per 1024
    launches, would make one, as the entry it has takes these launches when called as users do)."""
    if hasattr(launch, "_hits"):  # (a package from before native entries has no count)
        launch._hits = launch._every = 1 << 62
    return launch


def _until_native(launch, fn) -> None:
    """Call ``fn`` (a launch through ``launch``) until ``launch`` has a native entry, waiting for the entry's
    compile on its thread now and then; at most 4096 calls (a package without entries never has one)."""
    for count in range(4096):
        fn()
        if native(launch):
            return
        if count % 16 == 0:
            wait_for_compiles()


def native(launch) -> bool:
    """Whether ``launch`` (a launch object) runs through a native entry (its class replaced for it)."""
    return type(launch) is not Launch


class CupyLike:
    """Device memory as CuPy describes it: ``__cuda_array_interface__`` built at each access."""

    def __init__(self, host: np.ndarray):
        self.host, self.ptr = host, host.ctypes.data

    @property
    def __cuda_array_interface__(self):
        h = self.host
        return {"shape": h.shape, "typestr": h.dtype.str, "descr": [("", h.dtype.str)], "strides": None,
                "data": (self.ptr, False), "version": 3, "stream": 1}


def _best_ns(fn, launches: int) -> float:
    """Best of 40 rounds of ``launches // 10`` calls, in ns of this thread's CPU time per call."""
    count = max(launches // 10, 1)
    best = float("inf")
    for _ in range(40):
        t0 = time.thread_time_ns()
        for _ in range(count):
            fn()
        best = min(best, (time.thread_time_ns() - t0) / count)
    return best


def parts(label: str, launch, args: tuple, launches: int) -> list[tuple[str, float]]:
    """``(label, ns per call)`` of the parts of ``launch(*args)`` (launched before: bound to its runtime), each
    the median of 5 ``perf_counter_ns`` loops of ``launches`` calls."""
    run = launch._bound[1]  # BoundLaunch.launch, bound to the configuration by the first launch
    bound = run.__self__
    launcher = bound.bound[-1]
    sig = cuda.signature(args)
    driver = functools.partial(launcher.launch_kernel, launcher.fn, *bound.dims, bound.stream,
                               launcher.params_address, 0)

    def per_call(fn) -> float:
        fn()
        times = []
        for _ in range(5):
            t0 = time.perf_counter_ns()
            for _ in range(launches):
                fn()
            times.append((time.perf_counter_ns() - t0) / launches)
        return statistics.median(times)

    loop = per_call(lambda: None)  # the loop and the lambda's call, taken off each part
    return [(f"{label}: {what}", per_call(fn) - loop) for what, fn in (
        ("the whole launch", lambda: launch(*args)),
        ("the Python launch", functools.partial(Launch.__call__, _python_only(launch), *args)),
        ("signature(args)", lambda: cuda.signature(args)),
        ("the bound launch given the signature", lambda: run(args, sig)),
        ("cuLaunchKernel alone", driver))]


def print_parts(rows: list[tuple[str, float]]) -> None:
    print(f"{'part (perf_counter_ns loops, loop taken off)':70} ns per call", file=sys.stderr)
    for label, ns in rows:
        print(f"{label:70} {ns:8.0f}", file=sys.stderr)


def fake_rows(launches: int, profile: bool) -> list[tuple[str, float]]:
    """``(label, µs per launch)`` through the fake driver; with ``profile``, the one-array launch's profile."""
    driver = NullDriver()
    # from here on this process launches on the fake driver: what the real one loaded is forgotten, and
    # the kernels are new objects (no launch bound to the real driver)
    cuda._driver = lambda: driver
    cuda._state, cuda._functions, cuda._launchers, cuda._capability, cuda._contexts = {"init": False}, {}, {}, {}, {}
    fake_touch, fake_axpy = Kernel(_touch), Kernel(_axpy)
    x = CupyLike(np.zeros(32))
    a, b, out = CupyLike(np.zeros(1024)), CupyLike(np.zeros(1024)), CupyLike(np.zeros(1024))
    one = lambda: fake_touch[1, 32](x)  # noqa: E731
    four = lambda: fake_axpy[4, 256](2.0, a, b, out)  # noqa: E731
    one()
    four()
    rows = [("fake driver: touch[1, 32](x)", _best_ns(one, launches) / 1e3),
            ("fake driver: axpy[4, 256](2.0, x, y, out)", _best_ns(four, launches) / 1e3)]
    with fake_cupy.installed() as cp:
        cx, ca, cb, cout = cp.zeros(32), cp.zeros(1024), cp.zeros(1024), cp.zeros(1024)
        cp_one = lambda: fake_touch[1, 32](cx)  # noqa: E731
        cp_four = lambda: fake_axpy[4, 256](2.0, ca, cb, cout)  # noqa: E731
        _until_native(fake_touch[1, 32], cp_one)
        _until_native(fake_axpy[4, 256], cp_four)
        py_one = functools.partial(Launch.__call__, _python_only(fake_touch[1, 32]), cx)
        py_four = functools.partial(Launch.__call__, _python_only(fake_axpy[4, 256]), 2.0, ca, cb, cout)
        rows += [("fake driver, fake CuPy: touch[1, 32](x)", _best_ns(cp_one, launches) / 1e3),
                 ("fake driver, fake CuPy: axpy[4, 256](2.0, x, y, out)", _best_ns(cp_four, launches) / 1e3),
                 ("fake CuPy, Python: touch[1, 32](x)", _best_ns(py_one, launches) / 1e3),
                 ("fake CuPy, Python: axpy[4, 256](2.0, x, y, out)", _best_ns(py_four, launches) / 1e3)]
        if profile:
            split = parts("fake CuPy touch", fake_touch[1, 32], (cx,), launches)
    if profile:
        split = parts("CuPy-like touch", fake_touch[1, 32], (x,), launches) + split
    if profile:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(launches):
            one()
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(12)
        print(text.getvalue().split("\n", 4)[-1].strip("\n"), file=sys.stderr)
        print_parts(split)
    return rows


def baseline_rows(directory: str, launches: int) -> list[tuple[str, float]]:
    """:func:`fake_rows` with the ``gpucompiler`` package under ``directory``, in a subprocess."""
    script = ("import sys, runpy; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f)]; "
              f"sys.path.insert(0, {directory!r}); sys.argv = sys.argv[1:]; "
              "runpy.run_path(sys.argv[0], run_name='__main__')")
    out = subprocess.run([sys.executable, "-c", script, os.path.abspath(__file__), "--fake-only",
                          "--launches", str(launches), "--json", "-"], capture_output=True, text=True, check=True)
    found = json.loads(out.stdout)
    if not found["package"].startswith(os.path.abspath(directory)):
        raise SystemExit(f"--baseline: the subprocess imported {found['package']}, not the package under {directory}")
    return [tuple(r) for r in found["fake_us"]]


def gpu_rows(launches: int, profile: bool = False) -> list[tuple[str, float]]:
    """Real launches of the one-array kernel: ours and CuPy's RawKernel; none without a GPU and CuPy (with
    ``profile``, the parts of ours printed)."""
    try:
        import cupy as cp  # pyright: ignore[reportMissingImports]  (optional)
        cp.cuda.runtime.getDeviceCount()
    except Exception:  # no CuPy, no driver or no device: the fake-driver rows only
        return []

    def per_launch_us(fn):
        fn()
        cp.cuda.Device().synchronize()
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(launches // 5):
                fn()
            best = min(best, (time.perf_counter() - t0) / (launches // 5))
            cp.cuda.Device().synchronize()
        return best * 1e6

    x = cp.zeros(32, dtype=cp.float64)
    _until_native(touch[1, 32], lambda: touch[1, 32](x))
    raw = cp.RawKernel(r'''extern "C" __global__ void touch(double* x) {
        if (blockIdx.x * blockDim.x + threadIdx.x == 0) x[0] = x[0] + 1.0; }''', "touch")
    ours = per_launch_us(lambda: touch[1, 32](x))
    theirs = per_launch_us(lambda: raw((1,), (32,), (x,)))
    python = per_launch_us(functools.partial(Launch.__call__, _python_only(touch[1, 32]), x))
    x.fill(0)
    touch[1, 32](x)
    raw((1,), (32,), (x,))
    Launch.__call__(touch[1, 32], x)
    ok = float(x[0]) == 3.0
    if profile:
        print_parts(parts("GPU touch", touch[1, 32], (x,), launches))
        cp.cuda.Device().synchronize()
    how = "native entry" if native(touch[1, 32]) else "no native entry"
    return [(f"GPU: gpucompiler touch[1, 32](x), {how}" + ("" if ok else " WRONG RESULT"), ours),
            ("GPU: CuPy RawKernel((1,), (32,), (x,))", theirs),
            ("GPU: gpucompiler touch[1, 32](x), Python launch", python)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--launches", type=int, default=100000)
    parser.add_argument("--json", help="also write the figures to this file ('-': to stdout, no table)")
    parser.add_argument("--profile", action="store_true", help="print the profile of the one-array launch")
    parser.add_argument("--baseline", help="a directory holding another gpucompiler package to compare with")
    parser.add_argument("--fake-only", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    real = [] if opts.fake_only else gpu_rows(opts.launches, opts.profile)  # before the fake driver replaces the real one
    rows = fake_rows(opts.launches, opts.profile)
    base: list[tuple[str, float]] = []
    if opts.baseline:
        for _ in range(2):  # alternating, the best of each: the host's load moves
            base = [min(p, q, key=lambda r: r[1]) for p, q in zip(base, baseline_rows(opts.baseline, opts.launches))] \
                if base else baseline_rows(opts.baseline, opts.launches)
            rows = [min(p, q, key=lambda r: r[1]) for p, q in zip(rows, fake_rows(opts.launches, False))]
    result = {"package": os.path.dirname(cuda.__file__).rsplit(os.sep, 1)[0], "fake_us": rows,
              "baseline_us": base, "gpu_us": real}
    if opts.json == "-":
        print(json.dumps(result))
        return 0
    print(f"| {'launch':52} | µs per launch | note")
    print(f"|{'-' * 54}|---------------|------")
    for (label, us), old in zip(rows, base or [None] * len(rows)):
        note = f"baseline {old[1]:.2f} µs: {old[1] / us:.2f}x faster" if old else "host work only"
        print(f"| {label:52} | {us:13.2f} | {note}")
    for label, us in real:
        note = f"{us / real[1][1]:.2f}x CuPy's time" if label.startswith("GPU: gpuc") and len(real) > 1 else ""
        print(f"| {label:52} | {us:13.2f} | {note}")
    if not real:
        print(f"| {'GPU launches':52} | {'-':>13} | no GPU with CuPy here")
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
