"""Finding the installed plugins in a fresh process beside many installed distributions.

    python benchmarks/plugin_discovery.py [--dists 600] [-n 5] [--tree OLD ...] [--json PATH]

A synthetic site directory of ``--dists`` distributions (``*.dist-info`` with a ``METADATA``; a third
with an ``entry_points.txt`` of other groups, ``console_scripts`` and ``pytest11``; one with a
``gpucompiler.plugins`` group) goes first on ``sys.path`` of every process, as a user's environment
with torch, JAX and CuPy installed holds hundreds (``--dists 0``: the environment's own alone, as on
the GPU machine). For each tree (this checkout, and every ``--tree`` directory: an older tree exported
with ``git archive REV | tar -x -C OLD``), ``n`` rounds of fresh processes, the trees alternated,
timed inside them (perf_counter):

* ``key``: the entry point a cache key names (``identity.entrypoints.installed("enzyme")``) in an
  empty cache directory (no memo: found and memoised), then ``memo``: the same in a second process
  that finds the memo;
* ``registry``: then, in the first process, loading the plugin (``plugin._load(["enzyme"])``), its
  modules imported before the timed part so that the row is the discovery alone;
* ``first launch``: a kernel with ``autodiff`` inside (``ad_kernels.elem_grad``) compiled into an
  empty cache and launched on the CPU grid emulation, the whole first call.

Each row also says how often ``importlib.metadata.entry_points`` and ``distributions`` were called (and
``gpucompiler.discovery.scan``, in a tree that has it) and whether ``importlib.metadata`` was imported. The peer reference: ``importlib.metadata``'s import and
``importlib.metadata.entry_points(group="gpucompiler.plugins")``, first and second call in a process.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
GROUP = "gpucompiler.plugins"

#: counts the calls of importlib.metadata's scans without importing it: a finder that wraps them once imported
SPY = """
import sys, time, json, os
calls = {"entry_points": 0, "distributions": 0}
class _Spy:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "importlib.metadata":
            return None
        sys.meta_path.remove(_Spy)
        import importlib.util
        spec = importlib.util.find_spec(name)
        real = spec.loader.exec_module
        def exec_module(module):
            real(module)
            for fn in calls:
                def counted(*a, _real=getattr(module, fn), _fn=fn, **k):
                    calls[_fn] += 1
                    return _real(*a, **k)
                setattr(module, fn, counted)
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, _Spy)
if os.path.exists(os.path.join("gpucompiler", "discovery.py")):  # the tree's own read (the working directory)
    import gpucompiler.discovery as _discovery
    calls["discovery.scan"] = 0
    def _scan(group, _real=_discovery.scan):
        calls["discovery.scan"] += 1
        return _real(group)
    _discovery.scan = _scan
"""
KEY = SPY + """
import gpucompiler.plugin as gp
from gpucompiler.identity import entrypoints
import enzyme_plugin.plugin  # the plugin's own modules: not discovery
t = time.perf_counter(); found = entrypoints.installed("enzyme"); key = time.perf_counter() - t
metadata = "importlib.metadata" in sys.modules
t = time.perf_counter(); gp._load(["enzyme"]); registry = time.perf_counter() - t
assert gp.loaded("enzyme") is not None and found is not None and found[1] == "enzyme_plugin.plugin"
read = getattr(gp, "read_entry_points", lambda: None)()  # None: a tree without the read
own = None if read is None else read.rows is not None  # False: read through importlib.metadata
print(json.dumps([key, registry, calls, metadata, "importlib.metadata" in sys.modules, own]))
"""
MEMO = SPY + """
from gpucompiler.identity import entrypoints
t = time.perf_counter(); found = entrypoints.installed("enzyme"); key = time.perf_counter() - t
assert found is not None
print(json.dumps([key, calls, "importlib.metadata" in sys.modules]))
"""
LAUNCH = SPY + """
sys.path.insert(0, BENCH)
import numpy as np
import gpucompiler
import ad_kernels as M
k = gpucompiler.kernel(M.elem_grad, plugins=("enzyme",))
x, dx = np.linspace(-2.0, 2.0, 256), np.zeros(256)
t = time.perf_counter(); k[4, 64, "cpu"](x, dx); dt = time.perf_counter() - t
from gpucompiler.cache.default import default_cache
assert default_cache().stats.get("compile") == 1
print(json.dumps([dt, calls, "importlib.metadata" in sys.modules, float(dx.sum())]))
"""
PEER = """
import sys, time, json
t = time.perf_counter(); import importlib.metadata; imported = time.perf_counter() - t
t = time.perf_counter(); first = importlib.metadata.entry_points(group={group!r}); one = time.perf_counter() - t
t = time.perf_counter(); importlib.metadata.entry_points(group={group!r}); two = time.perf_counter() - t
dists = len(list(importlib.metadata.distributions()))
print(json.dumps([imported, one, two, sorted(ep.name for ep in first), dists]))
"""


def make_site(root: str, count: int, seed: int = 0) -> None:
    """``count`` distributions as pip installs them: a third with other groups' entry points, one a plugin."""
    rng = random.Random(seed)
    for k in range(count):
        name = f"synthetic_dist{k}"
        info = os.path.join(root, f"{name}-1.{k}.0.dist-info")
        os.makedirs(info)
        with open(os.path.join(info, "METADATA"), "w") as f:
            f.write(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.{k}.0\nSummary: a synthetic distribution\n\n"
                    + "A long description.\n" * 40)
        with open(os.path.join(info, "RECORD"), "w") as f:
            f.write(f"{name}/__init__.py,,\n")
        if k == count // 2:
            with open(os.path.join(info, "entry_points.txt"), "w") as f:
                f.write(f"[console_scripts]\n{name} = {name}.cli:main\n\n[{GROUP}]\nsynthetic = {name}.plugin:Plugin\n")
        elif rng.random() < 0.35:
            with open(os.path.join(info, "entry_points.txt"), "w") as f:
                f.write(f"[console_scripts]\n{name} = {name}.cli:main\n\n[pytest11]\n{name} = {name}.testing\n")


def child(tree: str, site: str, code: str, **env: str) -> Any:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GPUC_")}
    done = subprocess.run([sys.executable, "-c", code], env={**environ, "PYTHONPATH": os.pathsep.join([site, tree]),
                                                            **env}, cwd=tree, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=os.path.join(HERE, "results", "plugin_discovery.json"))
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--dists", type=int, default=600)
    ap.add_argument("--tree", action="append", default=[], help="an older tree to alternate with")
    ap.add_argument("--no-launch", action="store_true", help="leave out the kernel's first launch")
    opts = ap.parse_args()
    trees = [os.path.dirname(HERE), *opts.tree]
    tmp = tempfile.mkdtemp(prefix="gpuc-discovery-")
    site = os.path.join(tmp, "site")
    make_site(site, opts.dists)
    load = os.getloadavg()
    rows: dict[str, list] = {}
    try:
        for r in range(opts.n):
            rows.setdefault("peer", []).append(child(trees[0], site, PEER.format(group=GROUP)))
            for k, tree in enumerate(trees):
                cache = os.path.join(tmp, f"cache-{r}-{k}")
                rows.setdefault(f"{k}|key", []).append(child(tree, site, KEY, GPUC_CACHE_DIR=cache))
                rows.setdefault(f"{k}|memo", []).append(child(tree, site, MEMO, GPUC_CACHE_DIR=cache))
                if not opts.no_launch:
                    rows.setdefault(f"{k}|launch", []).append(
                        child(tree, site, LAUNCH.replace("BENCH", repr(HERE)), GPUC_CACHE_DIR=cache + "-launch"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = statistics.median
    out: dict = {"trees": trees, "n": opts.n, "dists": opts.dists, "cpus": os.cpu_count(), "loadavg_before": load,
                 "loadavg_after": os.getloadavg(), "python": sys.version.split()[0], "rows": {}}

    def show(key: str, label: str, times: list[float], calls: dict, metadata: bool) -> None:
        ms = [t * 1e3 for t in times]
        out["rows"][key] = {"ms": med(ms), "range_ms": [min(ms), max(ms)], "calls": calls,
                            "imports_importlib_metadata": metadata}
        ours = f", discovery.scan() {calls['discovery.scan']}" if "discovery.scan" in calls else ""
        print(f"  {label:34} {med(ms):7.2f} ms ({min(ms):.2f}-{max(ms):.2f})  entry_points() "
              f"{calls['entry_points']}, distributions() {calls['distributions']}{ours}, "
              f"importlib.metadata {'imported' if metadata else 'not imported'}")

    peer = rows["peer"]
    print(f"{opts.dists} synthetic distributions first on sys.path ({peer[0][4]} in all), Python "
          f"{out['python']}, median of {opts.n} fresh processes (min-max)")
    print("peer: importlib.metadata")
    for label, i in (("import", 0), ("entry_points(group=...) first", 1), ("entry_points(group=...) again", 2)):
        ms = [p[i] * 1e3 for p in peer]
        out["rows"][f"peer|{label}"] = {"ms": med(ms), "range_ms": [min(ms), max(ms)]}
        print(f"  {label:34} {med(ms):7.2f} ms ({min(ms):.2f}-{max(ms):.2f})")
    for k, tree in enumerate(trees):
        key, memo = rows[f"{k}|key"], rows[f"{k}|memo"]
        own = {None: "", True: " (distributions read by discovery itself)",
               False: " (distributions read through importlib.metadata: see gpucompiler/discovery.py)"}[key[0][5]]
        out["rows"][f"{k}|own_read"] = key[0][5]
        print(f"{tree}:{own}")
        assert all(g[2] == key[0][2] for g in key), key
        show(f"{k}|key", "key's entry point, no memo", [g[0] for g in key], key[0][2], key[0][3])
        show(f"{k}|registry", "then the registry's load", [g[1] for g in key], key[0][2], key[0][4])
        show(f"{k}|key+registry", "  together", [g[0] + g[1] for g in key], key[0][2], key[0][4])
        show(f"{k}|memo", "key's entry point from the memo", [g[0] for g in memo], memo[0][1], memo[0][2])
        if not opts.no_launch:
            launch = rows[f"{k}|launch"]
            assert len({g[3] for g in launch}) == 1, launch
            show(f"{k}|launch", "first launch, cold (CPU grid)", [g[0] for g in launch], launch[0][1], launch[0][2])
    print(f"load average {load[0]:.1f} before, {out['loadavg_after'][0]:.1f} after; {os.cpu_count()} CPUs")
    os.makedirs(os.path.dirname(opts.json), exist_ok=True)
    with open(opts.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
