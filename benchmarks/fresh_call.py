"""The first call of a fresh process served from the disk cache, as a user meets it.

    python benchmarks/fresh_call.py [--json benchmarks/results/fresh_call.json] [-n 7] [--tree OLD ...] [--bytecode]
                                    [--programs jit,kernel,zeros,slices,where]

Programs: ``@jit`` of ``frontend_kernels.loop20`` (no plugin), a kernel with ``autodiff``
inside (``ad_kernels.elem_grad``, the Enzyme plugin) launched on the CPU grid emulation, and ``@jit``
of three array functions (``np.zeros`` returned, slices, ``np.where``: their inference reads the
language's NumPy overlays); ``--programs`` picks some. For each
tree (this checkout, and every ``--tree`` directory: an older tree exported with ``git archive REV |
tar -x -C OLD``) one process compiles both into an empty cache; then ``n`` rounds, each running
every tree's fresh processes alternated, timed inside them (perf_counter): the imports (``import
gpucompiler`` and the program's module), the first call (a disk hit: the compiler's cache and runtime
modules imported on first use, the key, the entry read and checked, the object linked), and the
second call. Each program runs twice a round:

* ``warm``: the cache directory as the compiling process left it, the key's code digests memoised
  in ``<cache dir>/code/`` (docs/cache.md "Keys");
* ``cold``: a copy of the cache holding the entries alone (no ``code/``), as a process meets entries
  that came from elsewhere (a shared tier, another machine's copy): the code digests, the plugin's
  import closure and whether it defines ``cache_settings`` found anew.

``identity``: ``keys.plugin_identity(("enzyme",))`` alone in a fresh process with an empty cache
directory (no memo: the plugin's entry point, import closure, code digest and hooks found anew).
Each row also records how many ``enzyme_plugin`` modules the call imported (the program's module
imports its API: 4 modules; a hit should import none) and, per round, ``import llvmlite.binding``
in a fresh process after ``import gpucompiler`` and the program's module (NumPy with it, which makes
llvmlite's import slower; the kernel program's module imports the Enzyme plugin's API, which loads
llvmlite already: its call has no llvmlite import in it): the goal (docs/benchmarks.md) counts the
first call beyond that import. ``llvmlite_first``: ``llvmlite.binding`` imported before the timed call
(the jit program, warm): the first call beyond llvmlite's import measured in one process, not as a
difference of two processes' medians. ``preimported``: every module a hit loads (:data:`HIT_MODULES`,
those a tree has) imported before the timed call, as benchmarks/cache.py does (the jit program,
warm): the hit alone. ``--bytecode``: Python
writes and reads ``__pycache__`` whatever ``PYTHONDONTWRITEBYTECODE`` says, as for an installed
package (the compiling process writes it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = {
    "jit": ("frontend_kernels", "f = gpucompiler.jit(M.loop20)\ncall = lambda: f(10, 1.5)"),
    "kernel": ("ad_kernels", "import numpy as np\nk = gpucompiler.kernel(M.elem_grad, plugins=('enzyme',))\n"
               "x, dx = np.linspace(-2.0, 2.0, 256), np.zeros(256)\n"
               "def call():\n    dx[:] = 0.0\n    k[4, 64, 'cpu'](x, dx)\n    return float(dx.sum())"),
    # array functions, whose inference reads the language's NumPy overlays
    "zeros": ("arrays_kernels", "f = gpucompiler.jit(M.small_new)\ncall = lambda: float(f(1000).sum())"),
    "slices": ("idioms_kernels", "import numpy as np\nf = gpucompiler.jit(M.diff_slices)\n"
               "a = np.linspace(0.0, 1.0, 1000) ** 2\ncall = lambda: f(a)"),
    "where": ("idioms_kernels", "import numpy as np\nf = gpucompiler.jit(M.where_sum)\n"
              "a = np.linspace(0.0, 1.0, 1000)\ncall = lambda: f(a)"),
}
#: the modules a cached ``@jit`` call loads (an older tree has some of them: those it has are imported)
HIT_MODULES = ("gpucompiler.cache.default", "gpucompiler.cache.report", "gpucompiler.identity.documents",
               "gpucompiler.identity", "gpucompiler.source.spec", "gpucompiler.runtime.cpu", "gpucompiler.runtime.pyentry")
CHILD = """
import sys, time, json
sys.path.insert(0, {bench!r})
t0 = time.perf_counter()
import gpucompiler
import {module} as M
t1 = time.perf_counter()
{setup}
import importlib, importlib.util
for name in {pre!r}:
    if importlib.util.find_spec(name) is not None:
        importlib.import_module(name)
before = {{m for m in sys.modules if m.startswith("enzyme_plugin")}}
t = time.perf_counter(); value = call(); dt = time.perf_counter() - t
plugin = len({{m for m in sys.modules if m.startswith("enzyme_plugin")}} - before)
loaded = [m in sys.modules for m in ("gpucompiler.language", "llvmlite.binding")]
t2 = time.perf_counter(); call(); dt2 = time.perf_counter() - t2
from gpucompiler.cache.default import default_cache
print(json.dumps([t1 - t0, dt, dt2, plugin, value, dict(default_cache().stats), loaded]))
"""
IDENTITY = """
import time, json, sys
from gpucompiler.identity import keys
t = time.perf_counter(); keys.plugin_identity(("enzyme",)); dt = time.perf_counter() - t
print(json.dumps([dt, len([m for m in sys.modules if m.startswith("enzyme_plugin")])]))
"""
LLVMLITE = """
import sys, time, json
sys.path.insert(0, {bench!r})
import gpucompiler
import {module} as M
t = time.perf_counter()
import llvmlite.binding
print(json.dumps(time.perf_counter() - t))
"""


def child(tree: str, env: dict, code: str) -> Any:
    done = subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONPATH": tree}, cwd=tree, capture_output=True,
                          text=True)  # cwd: `python -c` puts it first on sys.path
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def program(name: str, pre: tuple[str, ...] = ()) -> str:
    module, setup = PROGRAMS[name]
    return CHILD.format(bench=HERE, module=module, setup=setup, pre=pre)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=os.path.join(HERE, "results", "fresh_call.json"))
    ap.add_argument("-n", type=int, default=7)
    ap.add_argument("--tree", action="append", default=[], help="an older tree to alternate with")
    ap.add_argument("--bytecode", action="store_true", help="write and read __pycache__ (an installed package)")
    ap.add_argument("--programs", default=",".join(PROGRAMS), help="which programs, comma-separated")
    opts = ap.parse_args()
    programs = {name: PROGRAMS[name] for name in opts.programs.split(",")}
    trees = [os.path.dirname(HERE), *opts.tree]
    tmp = tempfile.mkdtemp(prefix="gpuc-fresh-")
    env = {k: v for k, v in os.environ.items()
           if k not in ("GPUC_SERVICE_URL", "GPUC_CACHE_URL", "GPUC_CACHE_SHARED_DIR")
           and not (opts.bytecode and k == "PYTHONDONTWRITEBYTECODE")}
    load = os.getloadavg()
    rows: dict[str, list] = {}
    try:
        filled = {}
        for k, tree in enumerate(trees):  # fill each tree's cache; a second run settles the memos' stamps
            filled[tree] = os.path.join(tmp, f"filled-{k}")
            for _ in range(2):
                for name in programs:
                    child(tree, {**env, "GPUC_CACHE_DIR": filled[tree]}, program(name))
            shutil.copytree(filled[tree], filled[tree] + "-entries", ignore=shutil.ignore_patterns("code"))
        for r in range(opts.n):
            for k, tree in enumerate(trees):
                for name, (module, _) in programs.items():
                    rows.setdefault(f"{k}|{name}|llvmlite", []).append(
                        child(tree, env, LLVMLITE.format(bench=HERE, module=module)))
                empty = os.path.join(tmp, f"empty-{r}-{k}")
                rows.setdefault(f"{k}|identity", []).append(child(tree, {**env, "GPUC_CACHE_DIR": empty}, IDENTITY))
                for name in programs:
                    for memo in ("warm", "cold"):
                        cache = filled[tree]
                        if memo == "cold":
                            cache = os.path.join(tmp, f"cold-{r}-{k}-{name}")
                            shutil.copytree(filled[tree] + "-entries", cache)
                        got = child(tree, {**env, "GPUC_CACHE_DIR": cache}, program(name))
                        assert "hit.disk" in got[5] and "compile" not in got[5], (tree, name, memo, got[5])
                        rows.setdefault(f"{k}|{name}|{memo}", []).append(got)
                for row, pre in (("preimported", HIT_MODULES), ("llvmlite_first", ("llvmlite.binding",))):
                    got = child(tree, {**env, "GPUC_CACHE_DIR": filled[tree]}, program("jit", pre=pre))
                    assert "hit.disk" in got[5] and "compile" not in got[5], (tree, row, got[5])
                    rows.setdefault(f"{k}|{row}", []).append(got)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = statistics.median
    out: dict = {"trees": trees, "n": opts.n, "bytecode": opts.bytecode, "cpus": os.cpu_count(),
                 "loadavg_before": load, "loadavg_after": os.getloadavg(), "rows": {}}
    for k, tree in enumerate(trees):
        llvmlites = {n: med(rows[f"{k}|{n}|llvmlite"]) * 1e3 for n in programs}
        print(f"{tree}: llvmlite.binding's import after gpucompiler's and the program's module's: "
              + ", ".join(f"{n} {v:.1f} ms" for n, v in llvmlites.items()))
        for key in (f"{k}|{n}|{m}" for n in programs for m in ("warm", "cold")):
            llvmlite = llvmlites[key.split("|")[1]]
            got = rows[key]
            first = [g[1] * 1e3 for g in got]
            values = {g[4] for g in got}
            row = out["rows"][key] = {
                "import_ms": med(g[0] for g in got) * 1e3, "first_call_ms": med(first),
                "first_call_range_ms": [min(first), max(first)], "beyond_llvmlite_ms": med(first) - llvmlite,
                "second_call_us": med(g[2] for g in got) * 1e6, "plugin_modules_imported": max(g[3] for g in got),
                "values": len(values), "language_loaded": any(g[6][0] for g in got if len(g) > 6),
                "llvmlite_loaded": any(g[6][1] for g in got if len(g) > 6)}
            print(f"  {key.split('|', 1)[1]:12} import {row['import_ms']:6.1f}  first call {row['first_call_ms']:6.1f} "
                  f"({min(first):.1f}-{max(first):.1f}), beyond llvmlite {row['beyond_llvmlite_ms']:6.1f}, "
                  f"second {row['second_call_us']:.1f} us, enzyme_plugin modules imported {row['plugin_modules_imported']}, "
                  f"language/llvmlite binding loaded {row['language_loaded']}/{row['llvmlite_loaded']}")
            assert len(values) == 1, (key, values)
        for row in ("preimported", "llvmlite_first"):
            pre = [g[1] * 1e3 for g in rows[f"{k}|{row}"]]
            out["rows"][f"{k}|{row}"] = {"first_call_ms": med(pre), "first_call_range_ms": [min(pre), max(pre)]}
            print(f"  {row:14} first call {med(pre):6.1f} ({min(pre):.1f}-{max(pre):.1f})")
        for n, v in llvmlites.items():
            out["rows"][f"{k}|{n}|llvmlite"] = {"import_ms": v}
        ident = rows[f"{k}|identity"]
        out["rows"][f"{k}|identity"] = {"ms": med(g[0] for g in ident) * 1e3,
                                        "plugin_modules_imported": max(g[1] for g in ident)}
        print(f"  the enzyme plugin's identity, empty cache directory {med(g[0] for g in ident) * 1e3:6.1f} ms, "
              f"enzyme_plugin modules imported {max(g[1] for g in ident)}")
    print(f"load average {load[0]:.1f} before, {out['loadavg_after'][0]:.1f} after; {os.cpu_count()} CPUs")
    os.makedirs(os.path.dirname(opts.json), exist_ok=True)
    with open(opts.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
