"""What ``import gpucompiler`` loads: what decorating needs, the compiler at the first compile.

Each check runs in a fresh interpreter (``sys.modules`` of this one holds everything).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap

import pytest

import gpucompiler

#: modules that ``import gpucompiler`` and decorating with ``@jit`` / ``@kernel`` must not load
HEAVY = ("llvmlite", "numpy", "networkx", "importlib.metadata", "gpucompiler.frontend.lower",
         "gpucompiler.interpreter.infer", "gpucompiler.language", "gpucompiler.codegen",
         "gpucompiler.llvm", "gpucompiler.targets.native", "gpucompiler.pipeline", "gpucompiler.cache",
         "gpucompiler.cache.default", "gpucompiler.identity", "gpucompiler.runtime.cpu", "gpucompiler.device",
         "gpucompiler.service", "gpucompiler.cli")


def _run(tmp_path, code: str, **env: str) -> str:
    """The output of ``code`` run as a script in a fresh interpreter (a file: the compiler reads its source),
    the compile cache off unless ``env`` sets it."""
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(code))
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GPUC_")}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True,
                         env={**environ, "GPUC_CACHE": "off", **env})
    return out.stdout.strip()


def test_import_and_decorating_load_no_compiler_module_and_the_first_call_loads_them(tmp_path):
    out = _run(tmp_path, f"""
        import json, sys
        import gpucompiler
        from gpucompiler import jit, kernel

        @jit
        def add(a, b):
            return a + b

        @kernel
        def fill(a):
            pass

        loaded = lambda: sorted(m for m in {HEAVY!r} if m in sys.modules)
        before = loaded()
        print(json.dumps([before, add(2, 3), loaded()]))
    """)
    before, value, after = json.loads(out)
    assert before == []
    assert value == 5
    assert {"llvmlite", "gpucompiler.pipeline", "gpucompiler.interpreter.infer"} <= set(after)


#: what a cold first compile loads and a first call served from the disk cache must not: the pipeline, the
#: interpreter, the lowering, the code generators (the Python entry's too: the runtime takes the words it
#: fills from :mod:`gpucompiler.codegen.entrywords`) and the language's rules (a hit infers nothing)
COMPILER = ("gpucompiler.pipeline", "gpucompiler.interpreter.infer", "gpucompiler.interpreter.rules",
            "gpucompiler.frontend.lower", "gpucompiler.codegen.function", "gpucompiler.codegen.pyentry",
            "gpucompiler.codegen.wrapper", "gpucompiler.stages", "gpucompiler.language",
            "gpucompiler.language.precedence", "gpucompiler.language.math.mathlib", "gpucompiler.cache.serialisable",
            "gpucompiler.core.facts")
#: what a hit does not load either, though a cold compile may not: the math calls' vector variants, NumPy's BLAS
#: names (for a symbol not found in the process), the math table; for a job that names no plugin, the plugin
#: registry and the plugins' identity; without a shared tier's secret, the MACs
NOT_ON_A_HIT = COMPILER + ("gpucompiler.llvm.vector_variants", "gpucompiler.targets.hostblas", "gpucompiler.core.mathfns",
                           "gpucompiler.plugin", "gpucompiler.identity.keys", "gpucompiler.identity.entrypoints",
                           "gpucompiler.identity.hookprobe", "gpucompiler.identity.imports", "gpucompiler.cache.trust")
#: every gpucompiler module a first call served from the disk cache may load beyond ``import gpucompiler``: the
#: key's (documents, code digest, LLVM version, the native target), the cache's tiers and records, the source's
#: index key and dependency record, the loader (docs/benchmarks.md "A cached function's or kernel's first call")
ON_A_HIT = frozenset({
    "gpucompiler.cache", "gpucompiler.cache.core", "gpucompiler.cache.default", "gpucompiler.cache.entry",
    "gpucompiler.cache.files", "gpucompiler.cache.later", "gpucompiler.cache.report", "gpucompiler.cache.tiers", "gpucompiler.cache.wiring",
    "gpucompiler.codegen", "gpucompiler.codegen.entrywords", "gpucompiler.frontend", "gpucompiler.frontend.fingerprint",
    "gpucompiler.hashing", "gpucompiler.identity", "gpucompiler.identity.codeprint", "gpucompiler.identity.documents",
    "gpucompiler.identity.llvmversion", "gpucompiler.identity.hostmachine", "gpucompiler.runtime.shared_object",
    "gpucompiler.runtime.pyentry", "gpucompiler.source", "gpucompiler.source.spec",
    "gpucompiler.targets", "gpucompiler.targets.libmvec", "gpucompiler.targets.native"})
#: what a hit loads beyond :data:`ON_A_HIT` where no linker made its entry's shared object: LLVM and the LLJIT
LLJIT_LOADER = frozenset({"gpucompiler.llvm", "gpucompiler.llvm.binding", "gpucompiler.runtime.cpu",
                          "gpucompiler.runtime.lljit", "gpucompiler.runtime.threadpool"})


def _hit_modules() -> frozenset[str]:
    """:data:`ON_A_HIT`, and the LLJIT's modules without a linker."""
    from gpucompiler.targets.sharedlink import find_linker

    return ON_A_HIT if find_linker() is not None else ON_A_HIT | LLJIT_LOADER
#: what a hit of a job naming plugins loads beyond :data:`ON_A_HIT`: the plugins' identity, read from their files
#: (the entry points' scan is the registry module's; the registry itself is not built)
PLUGIN_IDENTITY = frozenset({"gpucompiler.discovery", "gpucompiler.plugin", "gpucompiler.identity.keys",
                             "gpucompiler.identity.entrypoints", "gpucompiler.identity.hookprobe",
                             "gpucompiler.identity.imports"})


def test_a_first_call_served_from_the_disk_cache_loads_neither_the_pipeline_nor_the_interpreter(tmp_path):
    code = f"""
        import json, sys
        from gpucompiler import jit
        from gpucompiler.cache.default import default_cache

        def poly(x, n):
            s = 0.0
            for i in range(n):
                s += x * i
            return s

        value = jit(poly, tier=False)(1.5, 4)  # the full level at once: its call entry generated
        print(json.dumps([value, dict(default_cache().stats), [m for m in {NOT_ON_A_HIT!r} if m in sys.modules]]))
    """
    env = {"GPUC_CACHE": "", "GPUC_CACHE_DIR": str(tmp_path / "cache")}
    value, stats, loaded = json.loads(_run(tmp_path, code, **env))
    assert value == 9.0 and stats.get("compile") == 1 and set(COMPILER) <= set(loaded)
    value, stats, loaded = json.loads(_run(tmp_path, code, **env))
    assert value == 9.0 and "compile" not in stats and stats.get("hit.disk") == 1
    assert loaded == []


def test_a_first_call_served_from_the_disk_cache_loads_only_the_keys_the_caches_and_the_loaders_modules(tmp_path):
    """The modules a hit loads are pinned: a module added to the path of a fresh process's cache hit must be
    listed in :data:`ON_A_HIT` (its cost measured: docs/benchmarks.md); neither the plugin registry nor the
    plugins' identity load for a function without plugins, nor the MACs without a shared tier."""
    code = """
        import json, sys
        from gpucompiler import jit

        def poly(x, n):
            s = 0.0
            for i in range(n):
                s += x * i
            return s

        f = jit(poly, tier=False)
        before = set(sys.modules)
        value = f(1.5, 4)
        loaded = sorted(m for m in set(sys.modules) - before if m.startswith("gpucompiler"))
        from gpucompiler.cache.default import default_cache
        print(json.dumps([value, dict(default_cache().stats), loaded]))
    """
    env = {"GPUC_CACHE": "", "GPUC_CACHE_DIR": str(tmp_path / "cache")}
    value, stats, compiled = json.loads(_run(tmp_path, code, **env))
    assert value == 9.0 and stats.get("compile") == 1 and "gpucompiler.pipeline" in compiled
    value, stats, loaded = json.loads(_run(tmp_path, code, **env))
    assert value == 9.0 and "compile" not in stats and stats.get("hit.disk") == 1
    assert sorted(set(loaded) - _hit_modules()) == []
    assert {"gpucompiler.cache.core", "gpucompiler.identity.documents", "gpucompiler.runtime.shared_object"} <= set(loaded)


def test_a_kernel_launched_on_the_grid_emulation_from_the_disk_cache_loads_no_code_generator(tmp_path):
    """The grid emulation's source generates its driver at a compile; a launch served from the cache loads
    neither the code generator nor, with it, the interpreter and the frontend's lowering."""
    code = """
        import json, sys
        import numpy as np
        from gpucompiler import kernel, device as gd

        @kernel
        def scale(a, s):
            i = gd.grid(1)
            if i < a.shape[0]:
                a[i] = s * a[i] + i

        a = np.arange(8.0)
        before = set(sys.modules)  # the kernel language (gpucompiler.device) loads its rules at its import
        scale[2, 4, "cpu"](a, 0.5)
        loaded = sorted(m for m in set(sys.modules) - before if m.startswith("gpucompiler"))
        from gpucompiler.cache.default import default_cache
        print(json.dumps([a.tolist(), dict(default_cache().stats), loaded]))
    """
    env = {"GPUC_CACHE": "", "GPUC_CACHE_DIR": str(tmp_path / "cache")}
    expected = [0.5 * k + k for k in range(8)]
    values, stats, loaded = json.loads(_run(tmp_path, code, **env))
    assert values == expected and stats.get("compile") == 1 and "gpucompiler.codegen.function" in loaded
    values, stats, loaded = json.loads(_run(tmp_path, code, **env))
    assert values == expected and "compile" not in stats and stats.get("hit.disk") == 1
    assert [m for m in loaded if m in COMPILER] == []


#: what a GPU kernel's launch served from the cache loads neither at the CUDA runtime's import nor at the launch:
#: llvmlite's library, the IR model, the kernel language, the code generation (the PTX's and the host's), the
#: compiler; its PTX goes to the driver
NOT_ON_A_GPU_HIT = ("llvmlite.binding", "gpucompiler.llvm", "gpucompiler.language", "gpucompiler.device",
                    "gpucompiler.targets.ptx_codegen", "gpucompiler.targets.ptx_overlays", "gpucompiler.targets.libdevice",
                    "gpucompiler.targets.native", "gpucompiler.runtime.grid", "gpucompiler.codegen.function",
                    "gpucompiler.pipeline", "gpucompiler.interpreter.infer")


def _among(modules, names) -> list[str]:
    """The modules of ``modules`` that are, or are under, one of ``names``."""
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


def test_importing_the_cuda_runtime_loads_neither_llvm_nor_the_kernel_language(tmp_path):
    out = _run(tmp_path, f"""
        import json, sys
        import gpucompiler, numpy
        import gpucompiler.runtime.cuda
        print(json.dumps(sorted(m for m in sys.modules if any(m == n or m.startswith(n + ".") for n in {NOT_ON_A_GPU_HIT!r}))))
    """)
    assert json.loads(out) == []


def test_a_gpu_kernel_with_autodiff_launched_from_the_disk_cache_loads_neither_llvm_nor_the_kernel_language(tmp_path):
    """A kernel calling ``autodiff``, launched in a fresh process on the fake CUDA driver
    (tests/kernels/test_cuda_launch.py): the first process compiles; the second finds the PTX in the
    cache, and between the CUDA runtime's import (the first launch's) and the driver's
    ``cuLaunchKernel`` loads none of :data:`NOT_ON_A_GPU_HIT` (the program's ``gpucompiler.device`` loaded the
    kernel language and llvmlite before). The driver runs each launch through the grid emulation: the
    gradient is checked against the derivative."""
    tests = os.path.dirname(os.path.abspath(__file__))
    code = f"""
        import json, math, os, sys
        sys.path[:0] = [os.path.join({tests!r}, "kernels")]
        import numpy as np
        import gpucompiler
        from gpucompiler import device as gd
        from enzyme_plugin import Const, Duplicated, Reverse, autodiff

        def f(x, i):
            v = x[i]
            return math.sin(v) * v * v

        def grad(x, dx):
            i = gd.grid(1)
            if i < x.shape[0]:
                autodiff(Reverse, f, Duplicated(x, dx), Const(i))

        k = gpucompiler.kernel(grad, plugins=("enzyme",))
        before = set(sys.modules)
        from test_cuda_launch import FakeDriver  # it imports the CUDA runtime, as a first launch does
        from gpucompiler.cache.default import default_cache
        from gpucompiler.runtime import cuda

        class Probe(FakeDriver):
            def cuLaunchKernel(self, *args):
                self.at_launch = [sorted(set(sys.modules) - before), dict(default_cache().stats)]
                return super().cuLaunchKernel(*args)

        driver = Probe()
        cuda._driver = lambda: driver
        x, dx = np.linspace(-2.0, 2.0, 300), np.zeros(300)
        k[3, 128](x, dx)
        print(json.dumps([dx.tolist(), len(driver.modules), *driver.at_launch]))
    """
    env = {"GPUC_CACHE": "", "GPUC_CACHE_DIR": str(tmp_path / "cache")}
    np = pytest.importorskip("numpy")
    x = np.linspace(-2.0, 2.0, 300)
    want = np.cos(x) * x * x + 2 * x * np.sin(x)
    dx, loads, loaded, stats = json.loads(_run(tmp_path, code, **env))
    np.testing.assert_allclose(dx, want, rtol=1e-12, atol=1e-14)
    assert loads == 1 and stats.get("compile") == 1
    assert {"gpucompiler.llvm", "gpucompiler.codegen.function"} <= set(_among(loaded, NOT_ON_A_GPU_HIT))
    dx, loads, loaded, stats = json.loads(_run(tmp_path, code, **env))
    np.testing.assert_allclose(dx, want, rtol=1e-12, atol=1e-14)
    assert loads == 1 and "compile" not in stats and stats.get("hit.disk") == 1
    assert "gpucompiler.runtime.cuda" in loaded and _among(loaded, NOT_ON_A_GPU_HIT) == []


def test_a_cpu_gradient_served_from_the_disk_cache_imports_no_plugin_and_builds_no_registry(tmp_path):
    """A ``@jit`` gradient (``autodiff`` inside) in a fresh process: the first compiles; the second's first call,
    from the disk cache, loads only :data:`ON_A_HIT`'s modules and the plugins' identity
    (:data:`PLUGIN_IDENTITY`), imports no plugin module beyond the API's, and leaves the plugin registry unbuilt
    (no plugin is registered: the key reads the enzyme plugin's identity from its files). The gradient is the
    derivative's."""
    code = """
        import json, sys
        import numpy as np
        from gpucompiler import jit
        from gpucompiler.cache.default import default_cache
        from enzyme_plugin import Active, Const, Reverse, autodiff

        def loss(w, b, xs, ys, n):
            acc = 0.0
            for i in range(n):
                r = w * xs[i] + b - ys[i]
                acc += r * r
            return acc / n

        def grad(w, b, xs, ys, n):
            return autodiff(Reverse, loss, Active(w), Active(b), Const(xs), Const(ys), Const(n))

        g = jit(grad, plugins=("enzyme",))
        xs = np.linspace(0.0, 1.0, 50)
        ys = 3.0 * xs + 1.0
        before = set(sys.modules)
        dw, db = g(2.0, 0.5, xs, ys, 50)
        loaded = sorted(set(sys.modules) - before)
        registry = sys.modules.get("gpucompiler.plugin")
        built = registry is not None and registry._manager is not None
        print(json.dumps([[dw, db], dict(default_cache().stats), loaded, built]))
    """
    env = {"GPUC_CACHE": "", "GPUC_CACHE_DIR": str(tmp_path / "cache")}
    n = 50
    xs = [k / (n - 1) for k in range(n)]
    res = [2.0 * x + 0.5 - (3.0 * x + 1.0) for x in xs]
    want = [sum(2.0 * r * x for r, x in zip(res, xs)) / n, sum(2.0 * r for r in res) / n]
    grad, stats, loaded, built = json.loads(_run(tmp_path, code, **env))
    assert grad == pytest.approx(want, rel=1e-13) and stats.get("compile") == 1 and built
    grad, stats, loaded, built = json.loads(_run(tmp_path, code, **env))
    assert grad == pytest.approx(want, rel=1e-13) and "compile" not in stats and stats.get("hit.disk") == 1
    assert not built
    assert _among(loaded, ("enzyme_plugin",)) == []
    assert sorted(m for m in loaded if m.startswith("gpucompiler") and m not in _hit_modules() | PLUGIN_IDENTITY) == []


def test_the_registry_unbuilt_answers_no_plugin_but_a_built_in_one_by_its_name(tmp_path):
    """``plugin.loaded`` before the registry is built: an unknown name is None and builds nothing; a built-in
    plugin's name builds it and answers its instance; a plugin registered by hand is found."""
    out = _run(tmp_path, """
        import json
        import gpucompiler.device
        import gpucompiler.plugin as gp
        from gpucompiler.core.config import GRID_EMULATION

        class Mine(gp.Plugin):
            name = "mine"

        unknown = gp.loaded("mine") is None and gp._manager is None
        builtin = gp.loaded(GRID_EMULATION)
        mine = gp.register(Mine)
        print(json.dumps([unknown, getattr(builtin, "name", None), gp.loaded("mine") is mine]))
    """)
    assert json.loads(out) == [True, "gpuc_grid", True]


def test_a_compile_after_a_disk_hit_loads_the_language_and_its_rules_apply(tmp_path):
    """A hit leaves the language's rules unloaded; a later compile in the same process (its own first
    inference) registers them, and functions calling ``math``, NumPy and builtins compute what CPython does.
    The hit's key is the compiling process's: the second process finds the entry."""
    code = """
        import json, math, sys
        import numpy as np
        from gpucompiler import jit
        from gpucompiler.cache.default import default_cache

        def poly(x, n):
            s = 0.0
            for i in range(n):
                s += x * i
            return s

        def mixed(a, x):
            return float(np.sum(a * a)) + math.sin(x) + abs(-x) + max(a.shape[0], 2)

        hit = jit(poly, tier=False)(1.5, 4)
        before = "gpucompiler.language" in sys.modules
        a = np.linspace(-1.0, 2.0, 7)
        got = jit(mixed, cache=False)(a, 0.75)
        print(json.dumps([hit, before, "gpucompiler.language" in sys.modules, got, dict(default_cache().stats)]))
    """
    env = {"GPUC_CACHE": "", "GPUC_CACHE_DIR": str(tmp_path / "cache")}
    np = pytest.importorskip("numpy")
    a = np.linspace(-1.0, 2.0, 7)
    expected = float(np.sum(a * a)) + math.sin(0.75) + 0.75 + 7
    hit, before, after, got, stats = json.loads(_run(tmp_path, code, **env))
    assert hit == 9.0 and before and after and got == pytest.approx(expected, rel=1e-13)
    assert stats.get("compile") == 1
    hit, before, after, got, stats = json.loads(_run(tmp_path, code, **env))
    assert hit == 9.0 and stats.get("hit.disk") == 1 and "compile" not in stats
    assert not before and after and got == pytest.approx(expected, rel=1e-13)


def test_public_names_load_on_first_use_as_the_modules_objects():
    from gpucompiler import core, parallel, targets

    assert gpucompiler.CompilerConfig is core.CompilerConfig
    assert gpucompiler.LLVMSource is core.LLVMSource
    assert gpucompiler.NativeTarget is targets.NativeTarget
    assert gpucompiler.parallel_reduce is parallel.parallel_reduce
    assert gpucompiler.jit.__module__ == "gpucompiler.jit" and callable(gpucompiler.jit)
    assert gpucompiler.kernel.__module__ == "gpucompiler.kernel" and callable(gpucompiler.kernel)
    assert set(gpucompiler.__all__) <= set(dir(gpucompiler))
    with pytest.raises(AttributeError):
        _ = gpucompiler.no_such_name  # type: ignore[attr-defined]


def test_submodules_are_attributes_of_the_package_as_after_their_import(tmp_path):
    out = _run(tmp_path, """
        import gpucompiler
        print(gpucompiler.pipeline.__name__, gpucompiler.interpreter.Interpreter.__module__,
              type(gpucompiler.jit).__name__, type(gpucompiler.kernel).__name__)
    """)
    assert out == "gpucompiler.pipeline gpucompiler.interpreter.infer function function"


def test_the_decorators_stay_the_package_names_after_their_modules_are_imported(tmp_path):
    """``from gpucompiler import jit`` is the decorator also when ``gpucompiler.jit`` (the module) was imported
    first by name: the package binds the names at its import."""
    out = _run(tmp_path, """
        import gpucompiler.kernel, gpucompiler.jit, gpucompiler.parallel
        from gpucompiler import jit, kernel
        print(callable(jit) and jit.__name__, callable(kernel) and kernel.__name__)
    """)
    assert out == "jit kernel"


def test_functions_rebound_before_the_first_compile_compile_as_the_programs_functions(tmp_path):
    """The rules load at the first compile; a program that rebound ``builtins.abs``, ``math.sin`` or
    ``math.prod`` after ``import gpucompiler`` calls its own functions in compiled code, as CPython does,
    and the built-ins the compiler's tables hold (a ufunc's scalar function, a named reduction) stay
    the real ones."""
    out = _run(tmp_path, """
        import builtins, json, math
        import numpy as np
        import gpucompiler
        from gpucompiler import jit

        real_prod = math.prod
        builtins.abs = lambda x: 2 * x
        math.sin = lambda x: x + 100.0
        math.prod = lambda xs: 0

        def f(x, a):
            b = np.abs(a) + np.sin(a)
            return abs(x) + math.sin(x) + b[0]

        a = np.array([-0.5])
        print(json.dumps([jit(f)(-4.0, a), f(-4.0, a),
                          gpucompiler.parallel_reduce(4, lambda i: i + 1.0, real_prod)]))
    """)
    compiled, python, reduced = json.loads(out)
    assert compiled == python == -4.0 * 2 + (-4.0 + 100.0) + 0.5 + math.sin(-0.5)
    assert reduced == 24.0


def test_the_compiler_loaded_after_rebinding_holds_none_of_the_rebound_functions(tmp_path):
    """Every ``builtins``/``math`` function the compiler's modules keep (rule keys, tables) is the one
    ``import gpucompiler`` found: with every such function rebound before the compiler loads, no
    rebound one is referenced from a gpucompiler module, rule set or table."""
    out = _run(tmp_path, """
        import builtins, gc, importlib, json, math, sys, types
        import gpucompiler

        rebound, saved = {}, {}
        for ns in (builtins, math):
            for name, value in list(vars(ns).items()):
                # every public function, but those that read their caller's frame
                if (isinstance(value, types.BuiltinFunctionType) and not name.startswith("_")
                        and name not in ("locals", "globals", "vars", "dir", "exec", "eval", "breakpoint")):
                    def wrapper(*a, _f=value, **k):
                        return _f(*a, **k)
                    saved[ns, name] = value
                    rebound[id(wrapper)] = (f"{ns.__name__}.{name}", wrapper)
                    setattr(ns, name, wrapper)
        try:
            for module in ("gpucompiler.pipeline", "gpucompiler.parallel", "gpucompiler.runtime.grid",
                           "gpucompiler.language"):
                importlib.import_module(module)
        finally:
            for (ns, name), value in saved.items():
                setattr(ns, name, value)
        ours = {id(vars(m)) for name, m in list(sys.modules.items()) if name.startswith("gpucompiler")}

        def held(obj, depth=0):
            # a referrer that is, or is held by, a gpucompiler module's namespace, a rule set or a table in one
            if id(obj) in ours or type(obj).__name__ == "RuleSet":
                return True
            return depth < 3 and isinstance(obj, (dict, list, tuple, set, types.CellType)) and any(
                held(r, depth + 1) for r in gc.get_referrers(obj) if r is not rebound and not isinstance(r, types.FrameType))

        gc.collect()
        print(json.dumps(sorted(name for name, w in rebound.values()
                                if any(held(r) for r in gc.get_referrers(w) if r is not rebound))))
    """)
    assert json.loads(out) == []


def test_first_compiles_in_four_threads_at_once_load_the_compiler_once_and_each_is_right(tmp_path):
    """The compiler's modules load at the first compile: four threads compiling at once in a fresh
    process (``@jit`` on numbers and on an array, a kernel in the grid emulation) import them together."""
    out = _run(tmp_path, """
        import json, threading
        import numpy as np
        from gpucompiler import jit, kernel, device as gd

        def affine(x):
            return x * 2.0 + 1.0

        def total(a):
            s = 0.0
            for i in range(a.shape[0]):
                s += a[i]
            return s

        def squares(n):
            t = 0
            for i in range(n):
                t += i * i
            return t

        @kernel
        def double(a):
            i = gd.grid(1)
            if i < a.shape[0]:
                a[i] = 2.0 * a[i]

        a, b = np.arange(4.0), np.arange(4.0)
        jobs = {"affine": lambda: jit(affine)(1.5), "total": lambda: jit(total)(a),
                "squares": lambda: jit(squares)(10), "double": lambda: (double[1, 4, "cpu"](b), b.tolist())[1]}
        results, errors, barrier = {}, [], threading.Barrier(len(jobs))

        def run(name):
            barrier.wait()
            try:
                results[name] = jobs[name]()
            except BaseException as exc:
                errors.append(f"{name}: {type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=run, args=(name,)) for name in jobs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(json.dumps([results, errors]))
    """)
    results, errors = json.loads(out)
    assert errors == []
    assert results == {"affine": 4.0, "total": 6.0, "squares": 285, "double": [0.0, 2.0, 4.0, 6.0]}
