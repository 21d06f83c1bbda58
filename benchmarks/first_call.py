"""A cached ``@jit`` gradient's first call in a fresh process, and the plugin modules it imports; with
``--jax``, six gradient programs' cold first calls next to JAX's first ``jit(grad)`` call.

    python benchmarks/first_call.py [--rounds 9] [--tree OLD ...]
    python benchmarks/first_call.py --jax [--rounds 3] [--tree OLD ...] [--json OUT] [--bytecode] [--memo | --installed]
                                    [--profile N] [--warm N] [--cached] [--no-jax]

``--jax``: six programs a JAX user writes (:data:`GRADIENTS`: an MLP loss with ``tanh`` in loops,
log-sum-exp, a softplus regression with ``Active`` scalars, a Rosenbrock Hessian-vector product
(forward over reverse), the Jacobian of an RK4 step (forward sweeps), a Newton ``while`` loop), each
written once with ``autodiff`` inside ``@jit`` and once in ``jax.numpy`` under ``jax.jit``
(``grad``, ``jvp`` of ``grad``, ``jacfwd``; the Newton loop by ``jacfwd``, as JAX's reverse mode
refuses ``while_loop``). Every round runs each program's two fresh processes, alternated, with
our compile cache empty and JAX's persistent cache off; the first call is timed after the
imports (wall, and the process's CPU time), its result checked against JAX's. Prints the medians,
the ratios, the load, and where our cold compile went, stage by stage, with the parts the child
times inside the stages: LLVM's own work on the final module (the ``O<n>`` pipeline after AD,
:func:`gpucompiler.stages.optimize.after_ad`, and the code generation) and the cache key's plugin
identity; then a table per tree splitting each first call into LLVM's own work on the final module and
the rest, with the rest's imports (Python modules loaded during the call) and its time outside the
pipeline (the key with inference, the cache, loading), and the cyclic collector's passes during the call (the last
runs when the compile's pause of the collector ends: its time and the objects it freed). ``--profile N``: each program's first call once
more under ``cProfile``, its ``N`` functions with the most time of their own. ``--warm N``: each program's
first call ``N`` more times with the modules it loaded imported before it (medians), split into the pipeline (LLVM on
the final module, its ``O<n>`` before AD, the rest) and what is outside it. ``--cached``: our first calls from the disk
cache (each filled by an uncounted cold process of the same program) against JAX's cold first calls. With ``--tree``, each
older tree's process joins the round (ours, each tree's, JAX's). ``--no-jax``: the trees' processes alone (no JAX process),
each older tree's first call against this tree's in the same round (the median of the per-round ratios of the process's CPU
time, less moved by other work on the machine than the wall time).

The program is the MLP-free case of a JAX user's first gradient: a
least-squares loss over a loop, differentiated by ``autodiff(Reverse, ...)``
inside ``@jit``. Each tree (this checkout, and every ``--tree`` directory: an
older tree exported with ``git archive REV | tar -x -C OLD``) gets its own
cache directory, filled by one run; then the trees' fresh processes alternate,
``--rounds`` each, and the medians are printed: the imports (``gpucompiler``,
``enzyme_plugin``'s API, NumPy), the first call from the disk cache, and how
many ``enzyme_plugin`` modules the process holds after it (importing the API alone loads 10);
then where the cold compile's time went, stage by stage (the ``gpucompiler.stages``
log records, summed over the gradient's jobs: a nested job's stages run inside its
parent's ``link_deferred``, so the sum exceeds the wall time when there are several).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROGRAM = r"""
import json, logging, sys, time
t0 = time.perf_counter()
import numpy as np
from gpucompiler import jit
from enzyme_plugin import Active, Const, Reverse, autodiff
t1 = time.perf_counter()
stages = {}


class Stages(logging.Handler):
    def emit(self, record):  # "<job>: stage <name> <ms> ms": summed over the gradient's nested jobs
        _, name, ms = record.args[:3]
        stages[name] = stages.get(name, 0.0) + ms


if sys.argv[1:] == ["--stages"]:
    logging.getLogger("gpucompiler.stages").addHandler(Stages())
    logging.getLogger("gpucompiler.stages").setLevel(logging.INFO)


def loss(w, b, xs, ys, n):
    acc = 0.0
    for i in range(n):
        r = w * xs[i] + b - ys[i]
        acc += r * r
    return acc / n


def grad_loss(w, b, xs, ys, n):
    return autodiff(Reverse, loss, Active(w), Active(b), Const(xs), Const(ys), Const(n))


g = jit(grad_loss, plugins=("enzyme",))
xs = np.linspace(0.0, 1.0, 50)
ys = 3.0 * xs + 1.0
t2 = time.perf_counter()
dw, db = g(2.0, 0.5, xs, ys, 50)
t3 = time.perf_counter()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_call_ms": (t3 - t2) * 1e3, "grad": [dw, db],
                  "plugin_modules": sum(m.startswith("enzyme_plugin") for m in sys.modules),
                  "tier": getattr(getattr(g, "last_compile", None), "tier", None), "stages_ms": stages}))
"""


GRADIENTS = r"""
import math
import numpy as np
from enzyme_plugin import Active, Const, Duplicated, Forward, Reverse, autodiff


def mlp_loss(W1, b1, w2, xs, ys):
    m, d = xs.shape
    acc = 0.0
    for i in range(m):
        out = 0.0
        for j in range(b1.shape[0]):
            z = b1[j]
            for k in range(d):
                z += W1[j, k] * xs[i, k]
            out += w2[j] * math.tanh(z)
        r = out - ys[i]
        acc += r * r
    return acc / m


def mlp(W1, b1, w2, xs, ys):
    dW1, db1, dw2 = np.zeros_like(W1), np.zeros_like(b1), np.zeros_like(w2)
    autodiff(Reverse, mlp_loss, Duplicated(W1, dW1), Duplicated(b1, db1), Duplicated(w2, dw2), Const(xs), Const(ys))
    return dW1, db1, dw2


def lse_value(x):
    m = x[0]
    for i in range(x.shape[0]):
        m = max(m, x[i])
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(x[i] - m)
    return m + math.log(s)


def lse(x):
    dx = np.zeros_like(x)
    autodiff(Reverse, lse_value, Duplicated(x, dx))
    return dx


def softplus_loss(w, b, xs, ys):
    acc = 0.0
    for i in range(xs.shape[0]):
        z = w * xs[i] + b
        acc += math.log1p(math.exp(z)) - ys[i] * z
    return acc


def softplus(w, b, xs, ys):
    return autodiff(Reverse, softplus_loss, Active(w), Active(b), Const(xs), Const(ys))


def rosenbrock(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        a = x[i + 1] - x[i] * x[i]
        b = 1.0 - x[i]
        s += 100.0 * a * a + b * b
    return s


def rosen_grad(x, dx):
    autodiff(Reverse, rosenbrock, Duplicated(x, dx))


def hvp(x, v):
    dx, hv = np.zeros_like(x), np.zeros_like(x)
    autodiff(Forward, rosen_grad, Duplicated(x, v), Duplicated(dx, hv))
    return hv


def rk4_step(y, out, h):
    k1a = y[0] - y[0] * y[1]
    k1b = y[0] * y[1] - y[1]
    a, b = y[0] + 0.5 * h * k1a, y[1] + 0.5 * h * k1b
    k2a, k2b = a - a * b, a * b - b
    a, b = y[0] + 0.5 * h * k2a, y[1] + 0.5 * h * k2b
    k3a, k3b = a - a * b, a * b - b
    a, b = y[0] + h * k3a, y[1] + h * k3b
    k4a, k4b = a - a * b, a * b - b
    out[0] = y[0] + h / 6.0 * (k1a + 2.0 * k2a + 2.0 * k3a + k4a)
    out[1] = y[1] + h / 6.0 * (k1b + 2.0 * k2b + 2.0 * k3b + k4b)


def rk4(y, h):
    J = np.zeros((2, 2))
    out = np.zeros(2)
    for k in range(2):
        e = np.zeros(2)
        e[k] = 1.0
        col = np.zeros(2)
        autodiff(Forward, rk4_step, Duplicated(y, e), Duplicated(out, col), Const(h))
        J[0, k] = col[0]
        J[1, k] = col[1]
    return J


def newton_root(a):
    x = a
    while abs(x * x * x - a) > 1e-12 * a:
        x = x - (x * x * x - a) / (3.0 * x * x)
    return x


def newton(a):
    return autodiff(Reverse, newton_root, Active(a))[0]
"""

JAX_GRADIENTS = r"""
import jax
import jax.numpy as jnp
jax.config.update("jax_enable_x64", True)


def mlp_loss(W1, b1, w2, xs, ys):
    return jnp.mean((jnp.tanh(xs @ W1.T + b1) @ w2 - ys) ** 2)


def lse_value(x):
    m = jnp.max(x)
    return m + jnp.log(jnp.sum(jnp.exp(x - m)))


def softplus_loss(w, b, xs, ys):
    z = w * xs + b
    return jnp.sum(jnp.log1p(jnp.exp(z)) - ys * z)


def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rk4_step(y, h):
    f = lambda y: jnp.array([y[0] - y[0] * y[1], y[0] * y[1] - y[1]])  # noqa: E731
    k1 = f(y)
    k2 = f(y + 0.5 * h * k1)
    k3 = f(y + 0.5 * h * k2)
    k4 = f(y + h * k3)
    return y + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def newton_root(a):
    step = lambda x: x - (x * x * x - a) / (3.0 * x * x)  # noqa: E731
    return jax.lax.while_loop(lambda x: jnp.abs(x * x * x - a) > 1e-12 * a, step, a)


mlp = jax.jit(jax.grad(mlp_loss, argnums=(0, 1, 2)))
lse = jax.jit(jax.grad(lse_value))
softplus = jax.jit(jax.grad(softplus_loss, argnums=(0, 1)))
hvp = jax.jit(lambda x, v: jax.jvp(jax.grad(rosenbrock), (x,), (v,))[1])
rk4 = jax.jit(jax.jacfwd(rk4_step))
newton = jax.jit(jax.jacfwd(newton_root))
"""

#: a first compile of another gradient, whose memos (``code/``) ``--installed`` starts each cache directory with
FIRST_COMPILE = r"""
from enzyme_plugin import Active, Reverse, autodiff
from gpucompiler import jit


def square(x):
    return x * x


def grad(x):
    return autodiff(Reverse, square, Active(x))[0]


assert jit(grad, plugins=("enzyme",))(3.0) == 6.0
"""

#: each program's arguments (built from NumPy in the child)
ARGUMENTS = {
    "mlp": "rng.normal(size=(8, 3)), rng.normal(size=8), rng.normal(size=8), rng.normal(size=(16, 3)), "
           "rng.normal(size=16)",
    "lse": "rng.normal(size=10),",
    "softplus": "0.3, -0.1, rng.normal(size=16), (rng.normal(size=16) > 0).astype(float)",
    "hvp": "np.array([0.8, -0.3, 1.1, 0.5]), np.array([1.0, 2.0, -1.0, 0.5])",
    "rk4": "np.array([1.0, 0.5]), 0.1",
    "newton": "5.0,",
}

VERSUS = r"""
import json, logging, re, sys, time
engine, name, folder = sys.argv[1:4]
sys.path.insert(0, folder)
t0 = time.perf_counter()
import numpy as np
stages = {}
if engine == "ours":
    from gpucompiler import jit
    import grad_programs as P

    class Stages(logging.Handler):
        def emit(self, record):  # "<job>: stage <name> <ms> ms": summed over the gradient's nested jobs
            _, stage, ms = record.args[:3]
            stages[stage] = stages.get(stage, 0.0) + ms

    logging.getLogger("gpucompiler.stages").addHandler(Stages())
    logging.getLogger("gpucompiler.stages").setLevel(logging.INFO)

    def timed(owner, attr, part):  # LLVM's own work on the final module, and the cache key's plugin identity
        f = getattr(owner, attr)

        def run(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                stages[part] = stages.get(part, 0.0) + (time.perf_counter() - t) * 1e3
        setattr(owner, attr, run)

    from importlib import _bootstrap_external
    from llvmlite.binding import targets
    from gpucompiler import pipeline
    from gpucompiler.identity import keys
    from gpucompiler.stages import optimize
    timed(optimize, "after_ad", "llvm: O<n> after AD")
    timed(optimize, "default_pipeline", "llvm: O<n> before AD")
    timed(targets.TargetMachine, "emit_object", "llvm: code generation")
    timed(keys, "plugin_identity", "key: plugin identity")
    timed(pipeline, "compile", "pipeline")
    loading = _bootstrap_external._LoaderBasics.exec_module
    depth = [0]

    def exec_module(self, module):  # a Python module's import (compiled where no __pycache__ holds it), outermost
        depth[0] += 1
        t = time.perf_counter()
        try:
            return loading(self, module)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                stages["imports"] = stages.get("imports", 0.0) + (time.perf_counter() - t) * 1e3
    _bootstrap_external._LoaderBasics.exec_module = exec_module
    fn = jit(getattr(P, name), plugins=("enzyme",))
    block = lambda r: r  # noqa: E731
else:
    import jax_programs as P
    fn = getattr(P, name)
    block = lambda r: __import__("jax").block_until_ready(r)  # noqa: E731
rng = np.random.default_rng(0)
args = (ARGS)
top = int(sys.argv[4]) if len(sys.argv) > 4 else 0
if len(sys.argv) > 5:  # the modules a first call of this program loads, imported before it (not timed)
    import importlib
    for module in open(sys.argv[5]).read().split():
        importlib.import_module(module)
    stages.pop("imports", None)
before = set(sys.modules)
import gc
collector = {"ms": 0.0, "collected": 0, "passes": 0, "last_ms": 0.0, "last_collected": 0}


def collected(phase, info, start=[0.0]):  # the collector's passes during the call (the last: when the pause ends)
    if phase == "start":
        start[0] = time.perf_counter()
        return
    ms = (time.perf_counter() - start[0]) * 1e3
    collector.update(ms=collector["ms"] + ms, collected=collector["collected"] + info["collected"],
                     passes=collector["passes"] + 1, last_ms=ms, last_collected=info["collected"])


if top:
    import cProfile
    profile = cProfile.Profile()
    profile.enable()
gc.callbacks.append(collected)
t1 = time.perf_counter()
c1 = time.process_time()
out = block(fn(*args))
c2 = time.process_time()
t2 = time.perf_counter()
gc.callbacks.remove(collected)
functions = []
if top:  # the functions with the most time of their own (the profile's overhead included)
    import pstats
    profile.disable()
    own = sorted(pstats.Stats(profile).stats.items(), key=lambda kv: -kv[1][2])[:top]
    package = re.compile(r".*/(?=(?:gpucompiler|enzyme_plugin|llvmlite|numpy|importlib)/)")
    functions = [[f"{package.sub('', path)}:{line}({fn})", tt * 1e3, ct * 1e3]
                 for (path, line, fn), (_, _, tt, ct, _) in own]
flat = [float(v) for part in (out if isinstance(out, tuple) else (out,)) for v in np.ravel(np.asarray(part))]
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "first_ms": (t2 - t1) * 1e3, "cpu_ms": (c2 - c1) * 1e3,
                  "values": flat, "stages_ms": stages, "profile": functions, "collector": collector,
                  "loaded": sorted(m for m in set(sys.modules) - before if m.split(".")[0] != "__mp_main__")}))
"""


#: the parts of our cold first call the child times itself (LLVM's own work on the final module: the
#: pipeline after AD and the code generation; the key's plugin identity), beside the stage records
LLVM_PARTS = ("llvm: O<n> after AD", "llvm: code generation")


def versus_jax(rounds: int, trees: list[str], out: str | None, bytecode: bool = False, memo: bool = False,
               profile: int = 0, warm: int = 0, cached: bool = False, jax: bool = True, installed: bool = False) -> None:
    """Each program's cold first call, ours (from each of ``trees``) and JAX's, in fresh processes
    alternated ``rounds`` times; with ``out``, the rows as JSON there. ``bytecode``: Python writes and
    reads ``__pycache__`` (as for an installed package) whatever ``PYTHONDONTWRITEBYTECODE`` says, after
    a first round, not counted, that writes it. ``memo``: each cache directory starts with the memos of
    the plugin's identity that the first compile of an installation leaves (docs/cache.md "Plugins in
    keys"), and nothing compiled: a new gradient's first call on an installed system. ``installed``: each
    cache directory starts with every memo a first compile of another gradient left (``code/``: the plugin's
    identity, the compiler's code digest, the host machine, LLVM's version), none of its entries: a new
    gradient's first call on a system where anything was compiled before. ``profile``: after the
    rounds, one more process of this tree per program runs its first call under ``cProfile`` and the
    ``profile`` functions with the most time of their own are printed (not counted in the medians).
    ``warm``: after the rounds, ``warm`` more processes of this tree per program import the modules its
    first call loaded in the first round, then make the call: the compile's parts without the imports
    (medians). ``cached``: our process's cache directory is filled first by an uncounted process of the same
    program, so ours is the first call from the disk cache, JAX's still its cold first call (the goal:
    ≤ 0.2× of it). ``jax=False``: no JAX process; each older tree against this tree, round by round."""
    import shutil

    import numpy as np

    rows: dict[tuple[str, str], list[dict]] = {}
    engines = [("ours", t) for t in trees] + ([("jax", ROOT)] if jax else [])
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        for fname, text in (("grad_programs.py", GRADIENTS), ("jax_programs.py", JAX_GRADIENTS)):
            with open(os.path.join(tmp, fname), "w") as f:
                f.write(text)
        with open(os.path.join(tmp, "first_compile.py"), "w") as f:
            f.write(FIRST_COMPILE)
        memo = memo or installed
        memos: dict[str, str] = {}
        for r in range(-1 if bytecode else 0, rounds):
            for name, arguments in ARGUMENTS.items():
                for k, (engine, tree) in enumerate(engines):
                    env = {**os.environ, "GPUC_CACHE_DIR": os.path.join(tmp, f"cache-{r}-{name}-{k}"),
                           "JAX_PLATFORMS": "cpu", "PYTHONPATH": os.pathsep.join([tree, os.path.join(tree, "plugins")])}
                    for var in ("GPUC_SERVICE_URL", "GPUC_CACHE_URL", "JAX_COMPILATION_CACHE_DIR",
                                *(("PYTHONDONTWRITEBYTECODE",) if bytecode else ())):
                        env.pop(var, None)
                    if memo and engine == "ours" and r >= 0:  # made after the bytecode: its stamp holds the tree
                        if tree not in memos:
                            memos[tree] = os.path.join(tmp, f"memo-{k}")
                            first = ([os.path.join(tmp, "first_compile.py")] if installed else
                                     ["-c", "from gpucompiler.identity import keys; keys.plugin_identity(('enzyme',))"])
                            subprocess.run([sys.executable, *first], env={**env, "GPUC_CACHE_DIR": memos[tree]},
                                           cwd=tmp, check=True)
                            for folder in os.listdir(memos[tree]) if installed else ():
                                if folder != "code":  # its entries, index and locks
                                    shutil.rmtree(os.path.join(memos[tree], folder))
                        shutil.copytree(memos[tree], env["GPUC_CACHE_DIR"])
                    child = [sys.executable, "-c", VERSUS.replace("(ARGS)", f"({arguments})"), engine, name, tmp]
                    if cached and engine == "ours":  # the cold compile that fills the cache, not counted
                        subprocess.run(child, env=env, cwd=tmp, capture_output=True, check=True)
                    done = subprocess.run(child, env=env, cwd=tmp, capture_output=True, text=True)
                    if done.returncode != 0:
                        raise RuntimeError(f"{engine} {tree} {name}: {done.stderr[-2000:]}")
                    key = "jax" if engine == "jax" else tree
                    if r < 0:
                        continue  # the round that wrote the bytecode
                    rows.setdefault((name, key), []).append(json.loads(done.stdout.strip().splitlines()[-1]))
        profiles = {name: _profiled(name, arguments, profile, tmp, bytecode) for name, arguments in ARGUMENTS.items()
                    if profile}
        warmed = {name: [_profiled(name, arguments, 0, tmp, bytecode, rows[(name, ROOT)][0]["loaded"], k)
                         for k in range(warm)] for name, arguments in ARGUMENTS.items() if warm}
    load.append(os.getloadavg()[0])
    med = statistics.median
    # the reference of the ratios: JAX's first call, or without JAX this tree's (by the process's CPU time)
    ref, ref_name, measure = ("jax", "JAX", "first_ms") if jax else (ROOT, "this tree (CPU)", "cpu_ms")
    print(f"{rounds} rounds, fresh processes alternated ({', '.join(t[-30:] for t in trees)}{', JAX' if jax else ''}) "
          "per program; "
          f"{'ours from the disk cache, JAX cold; ' if cached else ''}"
          f"{'bytecode read; ' if bytecode else ''}"
          f"{'every memo of a first compile; ' if installed else 'the plugin identity memoised; ' if memo else ''}load average {load[0]:.1f} -> {load[1]:.1f}; medians, ms "
          "(CPU time of the process in brackets)")
    print("| program | " + " | ".join(f"ours {t[-30:]}: first call (CPU) | / {ref_name}" for t in trees)
          + (" | JAX: first call (CPU)" if jax else "") + " | same values |")
    print("|---|" + "---:|---:|" * len(trees) + ("---:|" if jax else "") + "---|")
    for name in ARGUMENTS:
        ref_rows = rows[(name, ref)]
        cells = []
        same = True
        for t in trees:
            ours = rows[(name, t)]
            same = same and all(np.allclose(a["values"], b["values"], rtol=1e-9, atol=1e-12)
                                for a, b in zip(ours, ref_rows))
            ratio = med(a[measure] / b[measure] for a, b in zip(ours, ref_rows))
            cells.append(f"{med(o['first_ms'] for o in ours):.0f} ({med(o['cpu_ms'] for o in ours):.0f}) | "
                         f"{ratio:.{2 if jax else 3}f}")
        theirs = f" | {med(j['first_ms'] for j in ref_rows):.0f} ({med(j['cpu_ms'] for j in ref_rows):.0f})" if jax else ""
        print(f"| {name} | " + " | ".join(cells) + f"{theirs} | {'yes' if same else 'NO'} |")
    for t in trees:
        print(f"\n{t[-40:]}: our cold compile by part (ms, summed over the gradient's jobs, median over rounds; "
              "the stages, then what the child timed inside them):")
        for name in ARGUMENTS:
            parts: dict[str, list[float]] = {}
            for o in rows[(name, t)]:
                for k, v in o["stages_ms"].items():
                    parts.setdefault(k, []).append(v)
            medians = sorted(((k, med(v)) for k, v in parts.items()), key=lambda kv: -kv[1])
            llvm = med(sum(o["stages_ms"].get(p, 0.0) for p in LLVM_PARTS) for o in rows[(name, t)])
            first = med(o["first_ms"] for o in rows[(name, t)])
            unkeyed = med((o["first_ms"] - o["stages_ms"].get("key: plugin identity", 0.0)) / j["first_ms"]
                          for o, j in zip(rows[(name, t)], rows[(name, ref)]))
            print(f"  {name}: " + ", ".join(f"{k} {v:.0f}" for k, v in medians if v >= 1)
                  + f"; LLVM on the final module {llvm:.0f} of {first:.0f} ({llvm / first:.0%})"
                  + (f"; the first call less the plugin identity / JAX's {unkeyed:.2f}" if jax else ""))
        print(f"\n{t[-40:]}: LLVM's own work on the final module (its O<n> pipeline after AD and its code "
              "generation) and the rest (ms, medians; the imports are Python modules loaded during the call, compiled "
              "where no __pycache__ holds them; outside the pipeline: the cache key with inference, the cache, "
              "loading the code):")
        print("| program | first call | LLVM on the final module | the rest | of which imports | of which outside "
              "the pipeline |" + (" JAX |" if jax else ""))
        print("|---|---:|---:|---:|---:|---:|" + ("---:|" if jax else ""))
        for name in ARGUMENTS:
            ours = rows[(name, t)]

            def part(o: dict, key: str) -> float:
                return o["stages_ms"].get(key, 0.0)
            llvm = [sum(part(o, p) for p in LLVM_PARTS) for o in ours]
            print(f"| {name} | {med(o['first_ms'] for o in ours):.0f} | {med(llvm):.0f} | "
                  f"{med(o['first_ms'] - x for o, x in zip(ours, llvm)):.0f} | {med(part(o, 'imports') for o in ours):.0f} "
                  f"| {med(o['first_ms'] - part(o, 'pipeline') for o in ours):.0f} |"
                  + (f" {med(j['first_ms'] for j in rows[(name, 'jax')]):.0f} |" if jax else ""))
        print(f"\n{t[-40:]}: the collector's passes during the call (ms, the objects they freed; medians): "
              + ", ".join(f"{name} {med(o['collector']['ms'] for o in rows[(name, t)]):.1f} "
                          f"({med(o['collector']['collected'] for o in rows[(name, t)]):.0f}), the last "
                          f"{med(o['collector']['last_ms'] for o in rows[(name, t)]):.1f} "
                          f"({med(o['collector']['last_collected'] for o in rows[(name, t)]):.0f})"
                          for name in ARGUMENTS if "collector" in rows[(name, t)][0]))
    if warmed:
        print(f"\n{ROOT[-40:]}: each first call again, the modules it loads imported before it (ms, medians of {warm} "
              "processes; the rest of the pipeline: IR generation, deferred linking, the AD engine, the stages' checks):")
        print("| program | first call | the pipeline | LLVM on the final module | O<n> before AD | the rest of the "
              "pipeline | outside the pipeline | of which the plugin identity | imports left |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name, records in warmed.items():
            def each(f, records: list = records) -> float:
                return med(f(o["first_ms"], o["stages_ms"].get) for o in records)
            llvm = each(lambda _, got: sum(got(p, 0.0) for p in LLVM_PARTS))
            before = each(lambda _, got: got("llvm: O<n> before AD", 0.0))
            pipe = each(lambda _, got: got("pipeline", 0.0))
            rest = each(lambda _, got: got("pipeline", 0.0) - sum(got(p, 0.0) for p in LLVM_PARTS)
                        - got("llvm: O<n> before AD", 0.0))
            print(f"| {name} | {each(lambda first, _: first):.0f} | {pipe:.0f} | {llvm:.0f} | {before:.0f} | {rest:.0f} | "
                  f"{each(lambda first, got: first - got('pipeline', 0.0)):.0f} | "
                  f"{each(lambda _, got: got('key: plugin identity', 0.0)):.0f} | {each(lambda _, got: got('imports', 0.0)):.0f} |")
    for name, functions in profiles.items():
        print(f"\n{trees[0][-40:]}: {name}'s first call under cProfile, the functions with the most time of their own "
              "(ms own, ms with callees):")
        for fn, own, total in functions:
            print(f"  {own:7.1f} {total:7.1f}  {fn}")
    if out:
        with open(out, "w") as f:
            json.dump({"rounds": rounds, "load": load, "trees": trees, "bytecode": bytecode, "memo": memo, "installed": installed,
                       "rows": {f"{name}|{key}": v for (name, key), v in rows.items()}}, f, indent=1)


def _profiled(name: str, arguments: str, top: int, tmp: str, bytecode: bool, preload: list | None = None,
              run: int = 0):
    """The ``top`` functions by own time of ``name``'s first call in a fresh process of this tree; with
    ``preload`` (module names, imported before the call), the child's whole record (``run``: its number,
    for a cache directory of its own)."""
    env = {**os.environ, "GPUC_CACHE_DIR": os.path.join(tmp, f"cache-profile-{name}"), "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": os.pathsep.join([ROOT, os.path.join(ROOT, "plugins")])}
    for var in ("GPUC_SERVICE_URL", "GPUC_CACHE_URL", *(("PYTHONDONTWRITEBYTECODE",) if bytecode else ())):
        env.pop(var, None)
    extra = []
    if preload is not None:
        extra = [os.path.join(tmp, f"preload-{name}.txt")]
        with open(extra[0], "w") as f:
            f.write("\n".join(preload))
        env["GPUC_CACHE_DIR"] += f"-warm-{run}"
    done = subprocess.run([sys.executable, "-c", VERSUS.replace("(ARGS)", f"({arguments})"), "ours", name, tmp,
                           str(top), *extra], env=env, cwd=tmp, capture_output=True, text=True, check=True)
    record = json.loads(done.stdout.strip().splitlines()[-1])
    return record if preload is not None else record["profile"]


def run(tree: str, cache: str, *flags: str) -> dict:
    env = {**os.environ, "GPUC_CACHE_DIR": cache,
           "PYTHONPATH": os.pathsep.join([tree, os.path.join(tree, "plugins")])}
    env.pop("GPUC_SERVICE_URL", None)
    env.pop("GPUC_CACHE_URL", None)
    done = subprocess.run([sys.executable, "-c", PROGRAM, *flags], env=env, cwd=tree, capture_output=True, text=True,
                          check=True)  # cwd: `python -c` puts it first on sys.path
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description="a cached @jit gradient's first call in fresh processes")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--tree", action="append", default=[], help="an older tree to alternate with")
    parser.add_argument("--jax", action="store_true", help="six gradient programs' cold first calls next to JAX's")
    parser.add_argument("--json", help="with --jax: write every run's numbers there")
    parser.add_argument("--bytecode", action="store_true",
                        help="with --jax: write and read __pycache__ (a first round, not counted, writes it)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="with --jax: then each program's first call under cProfile, its N costliest functions")
    parser.add_argument("--warm", type=int, default=0, metavar="N",
                        help="with --jax: then N more first calls of each program, its modules imported before it")
    parser.add_argument("--memo", action="store_true",
                        help="with --jax: each cache starts with the plugin identity's memos, nothing compiled")
    parser.add_argument("--installed", action="store_true",
                        help="with --jax: each cache starts with every memo a first compile of another gradient left")
    parser.add_argument("--no-jax", action="store_true",
                        help="with --jax: no JAX process; each --tree against this tree by CPU time, round by round")
    parser.add_argument("--cached", action="store_true",
                        help="with --jax: ours from the disk cache (filled by an uncounted process), JAX's cold")
    args = parser.parse_args()
    trees = [ROOT, *args.tree]
    if args.jax:
        versus_jax(args.rounds, trees, args.json, args.bytecode, args.memo, args.profile, args.warm, args.cached,
                   not args.no_jax, args.installed)
        return
    with tempfile.TemporaryDirectory() as tmp:
        caches = {t: os.path.join(tmp, f"cache{k}") for k, t in enumerate(trees)}
        cold = {t: run(t, caches[t], "--stages") for t in trees}
        rows: dict[str, list[dict]] = {t: [] for t in trees}
        for _ in range(args.rounds):
            for t in trees:
                rows[t].append(run(t, caches[t]))
    print(f"{'tree':40} {'cold (ms)':>10} {'import (ms)':>12} {'cached first call (ms)':>23} {'plugin modules':>15}")
    for t in trees:
        first = [r["first_call_ms"] for r in rows[t]]
        assert all(r["grad"] == cold[t]["grad"] for r in rows[t]), "a cached gradient differs from the cold one"
        print(f"{t[-40:]:40} {cold[t]['first_call_ms']:10.0f} {statistics.median(r['import_ms'] for r in rows[t]):12.0f} "
              f"{statistics.median(first):10.0f} ({min(first):.0f}-{max(first):.0f}) "
              f"{rows[t][-1]['plugin_modules']:15d}")
    print("\nthe cold compile by stage (ms, summed over the gradient's jobs), then the warm runs' tiers:")
    for t in trees:
        parts = cold[t].get("stages_ms", {})
        print(f"{t[-40:]:40} " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1])
                                           if v >= 1) + f"; {sorted({str(r.get('tier')) for r in rows[t]})}")


if __name__ == "__main__":
    main()
