"""Array functions through the index key: a fresh process's cached hit of ``np.tanh(x)``, ``np.arange``,
reductions, slices, a loop over ``x.shape[0]``... runs no type inference, loads neither the language's
rules nor llvmlite's binding, and returns the cold process's numbers; every change inference would see
(a rebound global, a patched NumPy attribute, a patched overlay helper, a closure cell, an edited helper
module) misses and gives what a compile from an empty cache gives.

The language's overlays (``gpucompiler.language.numpy.npimpl``...) are reached by inference through its
rules, not through a read the record can follow: their reads are recorded as ``["module", name]``
(``FunctionSpec.verify_record``).
"""

from __future__ import annotations

import ast
import importlib
import json
import math
import os
import pathlib
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import gpucompiler
from gpucompiler import types as T
import gpucompiler.source.spec as spec_module
from gpucompiler.source import FunctionSpec
from gpucompiler.source.spec import sorted_reads
from gpucompiler.targets import sharedlink
from tests.cache.servers import ROOT

needs_linker = pytest.mark.skipif(sharedlink.find_linker() is None, reason="no linker (ld.lld, ld, cc) on PATH: "
                                  "no shared objects are made")

CORPUS = textwrap.dedent("""
    import math
    import numpy as np
    from gpucompiler import jit
    import arrhelp
    from arrhelp import bump

    SCALE = 0.5

    def plain(a):
        return a * 2.0 + 1.0

    @jit
    def jitted(a):
        return a - 1.0

    def make(k):
        def scaled(x):
            return x * k
        return scaled

    scaled_by = make(3.0)

    @jit
    def tanh(x):
        return np.tanh(x)

    @jit
    def ramp(n):
        return np.arange(n) * SCALE

    @jit
    def walk(x):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i] * i
        return s

    @jit
    def reduce(x):
        return np.sum(x) + x.max()

    @jit
    def fill(n):
        a = np.zeros(n)
        b = np.empty(n)
        for i in range(n):
            b[i] = i * i
        return a + b

    @jit
    def diff(x):
        return x[1:] - x[:-1]

    @jit
    def mathy(a):
        return math.exp(a) + math.sqrt(a) + math.pi

    @jit
    def calls(a):
        return plain(a) + jitted(a) + bump(a) + arrhelp.OFFSET

    @jit
    def closure(x):
        return scaled_by(x) + np.abs(x)

    @jit
    def ordered(x):
        return np.sort(x)

    @jit
    def spread(x):
        return np.mean(x) + x.var()

    @jit
    def listed(n):
        out = []
        for i in range(n):
            out.append(i * i - 3)
        return out
""")

HELPER = "OFFSET = 7.0\n\ndef bump(a):\n    return a * a\n"

X = [0.25, -1.5, 2.0, 3.5, 0.125]
XS = np.array(X)
CALLS = {"tanh": "x", "ramp": "6", "walk": "x", "reduce": "x", "fill": "5", "diff": "x", "mathy": "2.0",
         "calls": "1.5", "closure": "x"}

SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    {before}
    import arrmod
    x = np.array({x})
    out = {{}}
    for name, arg in json.loads(sys.argv[2]).items():
        value = getattr(arrmod, name)(eval(arg))
        out[name] = value.tolist() if hasattr(value, "tolist") else value
    loaded = {{m: m in sys.modules for m in ("llvmlite.binding", "gpucompiler.language",
                                              "gpucompiler.interpreter.infer")}}
    inferred = [n for n in out for e in getattr(arrmod, n)._entries.values()
                if any(not (isinstance(k, tuple) and k and k[0] in ("verified", "python")) for k in e.spec._cache)]
    from gpucompiler.cache.default import default_cache
    stats = dict(default_cache().stats)  # the calls' (the references below call `jitted` too)
    expected = {{}}
    for name, arg in json.loads(sys.argv[2]).items():
        value = getattr(arrmod, name).py_func(eval(arg))
        expected[name] = value.tolist() if hasattr(value, "tolist") else value
    print(json.dumps({{"out": out, "expected": expected, "loaded": loaded, "inferred": inferred,
                      "stats": stats}}))
""")


def write(directory, corpus=CORPUS, helper=HELPER):
    directory.mkdir(exist_ok=True)
    (directory / "arrmod.py").write_text(corpus)
    (directory / "arrhelp.py").write_text(helper)


def run(directory, cache, calls=CALLS, before=""):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUC_")}
    env.update(GPUC_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    script = SCRIPT.format(before=before, x=X)
    proc = subprocess.run([sys.executable, "-c", script, str(directory), json.dumps(calls)], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def close(a, b) -> bool:
    return a == pytest.approx(b, rel=1e-14, abs=1e-15)


@needs_linker
def test_a_cached_array_function_hit_infers_nothing_and_loads_no_llvmlite(tmp_path):
    write(tmp_path / "src")
    cold = run(tmp_path / "src", tmp_path / "cache")
    # every compile (a tiered first call's quick code included) has a record
    assert cold["stats"].get("index.write") == cold["stats"]["compile"] >= len(CALLS)
    assert "index.unrecordable" not in cold["stats"]
    for name in CALLS:
        assert close(cold["out"][name], cold["expected"][name]), name
    # the corpus against NumPy here, not only against its own Python
    assert close(cold["out"]["tanh"], np.tanh(XS).tolist())
    assert close(cold["out"]["reduce"], float(np.sum(XS) + XS.max()))
    assert close(cold["out"]["mathy"], math.exp(2.0) + math.sqrt(2.0) + math.pi)
    hit = run(tmp_path / "src", tmp_path / "cache")
    assert "compile" not in hit["stats"] and hit["stats"].get("index.hit.disk") == len(CALLS)
    assert hit["inferred"] == []
    assert hit["loaded"] == {"llvmlite.binding": False, "gpucompiler.language": False,
                             "gpucompiler.interpreter.infer": False}
    assert hit["out"] == cold["out"]


@pytest.mark.parametrize("name", ["ordered", "spread"])
def test_reads_through_overlay_namespaces_and_constants_infer_nothing(tmp_path, name):
    """``np.mean`` and ``x.var()`` read ``math.nan`` through the language's snapshot of ``math``
    (``gpucompiler.pristine``), named in the record, not by its ``repr`` (which holds addresses: such a
    record never verified in another process); ``np.sort`` reads its overlay module's constants
    (``RUN``, ``INDEX``...). The hit of either loads nothing of the language."""
    calls = {name: "x"}
    write(tmp_path / "src")
    cold = run(tmp_path / "src", tmp_path / "cache", calls)
    want = np.sort(XS).tolist() if name == "ordered" else float(np.mean(XS) + XS.var())
    assert close(cold["out"][name], want) and "index.unrecordable" not in cold["stats"]
    hit = run(tmp_path / "src", tmp_path / "cache", calls)
    assert "compile" not in hit["stats"] and hit["stats"].get("index.hit.disk") == 1
    assert hit["inferred"] == [] and hit["out"] == cold["out"]
    assert not any(hit["loaded"].values())


# each edit of a hit process (code run before the corpus is imported, or the sources edited between
# processes) must give what a compile from an empty cache gives, never the cached code's numbers
PATCHES = {  # what the patched process must compute, from NumPy here
    "numpy attribute": ("np.tanh = np.sin", {"tanh": "x"}, np.sin(XS).tolist()),
    "numpy reduction": ("np.sum = np.prod", {"reduce": "x"}, float(np.prod(XS) + XS.max())),
    "overlay helper": ("import gpucompiler.language.numpy.npimpl as npimpl\n"
                       "npimpl.fmaximum = lambda a, b: a if a <= b else b", {"reduce": "x"},
                       float(np.sum(XS) + XS.min())),
}

EDITS = {
    "rebound global": (("SCALE = 0.5", "SCALE = 0.25"), None, {"ramp": "6"}),
    "closure cell": (("make(3.0)", "make(4.0)"), None, {"closure": "x"}),
    "helper module constant": (None, ("OFFSET = 7.0", "OFFSET = 8.0"), {"calls": "1.5"}),
    "helper module body": (None, ("a * a", "a * a * a"), {"calls": "1.5"}),
    "plain callee body": (("a * 2.0 + 1.0", "a * 2.0 + 2.0"), None, {"calls": "1.5"}),
}


def _first_fast(cases) -> list:
    """The first case in the default set, the others with the slow sweeps (each is four fresh processes)."""
    names = list(cases)
    return names[:1] + [pytest.param(n, marks=pytest.mark.slow) for n in names[1:]]


@pytest.mark.parametrize("case", _first_fast(PATCHES))
def test_a_patch_before_the_call_misses(tmp_path, case):
    before, calls, want = PATCHES[case]
    write(tmp_path / "src")
    cold = run(tmp_path / "src", tmp_path / "cache", calls)
    again = run(tmp_path / "src", tmp_path / "cache", calls)
    assert "compile" not in again["stats"] and again["out"] == cold["out"]
    patched = run(tmp_path / "src", tmp_path / "cache", calls, before)
    fresh = run(tmp_path / "src", tmp_path / "empty", calls, before)  # the reference: a compile, no cache
    name = next(iter(calls))
    assert patched["out"] == fresh["out"] and close(fresh["out"][name], want)
    assert patched["out"][name] != cold["out"][name]
    assert patched["stats"].get("compile") == 1 and patched["stats"].get("index.stale") == 1


@pytest.mark.parametrize("case", _first_fast(EDITS))
def test_an_edit_between_processes_misses(tmp_path, case):
    corpus_edit, helper_edit, calls = EDITS[case]
    write(tmp_path / "src")
    cold = run(tmp_path / "src", tmp_path / "cache", calls)
    corpus = CORPUS.replace(*corpus_edit) if corpus_edit else CORPUS
    helper = HELPER.replace(*helper_edit) if helper_edit else HELPER
    assert (corpus, helper) != (CORPUS, HELPER)
    write(tmp_path / "src", corpus, helper)
    edited = run(tmp_path / "src", tmp_path / "cache", calls)
    write(tmp_path / "ref", corpus, helper)
    fresh = run(tmp_path / "ref", tmp_path / "empty", calls)
    name = next(iter(calls))
    assert edited["out"] == fresh["out"] != cold["out"] and close(fresh["out"][name], fresh["expected"][name])
    assert edited["stats"].get("compile") == 1


WORLD_AGE = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import arrmod
    from gpucompiler.cache.default import default_cache
    first = arrmod.ramp(4).tolist()
    hit = dict(default_cache().stats)
    arrmod.SCALE = 0.25                    # rebound after the hit: the next call compiles again
    second = arrmod.ramp(4).tolist()
    print(json.dumps([first, hit, second, dict(default_cache().stats)]))
""")


def test_world_age_after_an_array_functions_hit(tmp_path):
    """After an index hit whose overlay reads were taken from the record, the user's globals are still
    the code's world-age dependencies."""
    write(tmp_path / "src")
    run(tmp_path / "src", tmp_path / "cache", {"ramp": "6"})
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUC_")}
    env.update(GPUC_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, "-c", WORLD_AGE, str(tmp_path / "src")], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    first, hit, second, stats = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "compile" not in hit and hit.get("index.hit.disk") == 1
    assert first == [0.0, 0.5, 1.0, 1.5] and second == [0.0, 0.25, 0.5, 0.75]
    assert stats.get("compile", 0) >= 1


def test_a_loaded_overlay_module_is_read_again():
    """In a process that imported the overlays, their reads are done on the live module: a hit when
    unchanged; a patched or deleted helper fails the check."""
    spec = FunctionSpec(lambda x: np.tanh(x), (T.typeof(np.zeros(3)),))
    record = spec.dependency_record(None)
    assert record is not None
    modules = {ref[1] for ref, _, _ in record["reads"] if ref[0] == "module"}
    assert modules and all(m.startswith("gpucompiler.language.") for m in modules)
    assert FunctionSpec(spec.fn, spec.argtypes).verify_record(None, record) == spec.fingerprint()
    ref, name, _ = next(r for r in record["reads"] if r[0][0] == "module")
    holder = vars(sys.modules[ref[1]])
    original = holder[name]
    try:
        holder[name] = lambda *a: None
        assert FunctionSpec(spec.fn, spec.argtypes).verify_record(None, record) is None
        del holder[name]
        assert FunctionSpec(spec.fn, spec.argtypes).verify_record(None, record) is None
    finally:
        holder[name] = original
    assert FunctionSpec(spec.fn, spec.argtypes).verify_record(None, record) == spec.fingerprint()


def test_a_record_read_is_taken_unread_only_for_the_languages_functions(monkeypatch):
    """A read of a language module this process has not imported is taken from the record only when it
    found one of the language's functions; anything else imports the module and reads it, and a module
    outside the language is never imported by the check."""
    spec = FunctionSpec(lambda x: np.tanh(x), (T.typeof(np.zeros(3)),))
    record = spec.dependency_record(None)
    assert record is not None
    at = next(k for k, r in enumerate(record["reads"]) if r[0][0] == "module")
    module = record["reads"][at][0][1]
    loaded = sys.modules[module]
    imported: list[str] = []

    def import_module(name):  # what a fresh process's import would return, without running it again
        imported.append(name)
        return loaded

    monkeypatch.setattr(spec_module.importlib, "import_module", import_module)
    probe = lambda rec: FunctionSpec(spec.fn, spec.argtypes).verify_record(None, rec)  # noqa: E731
    monkeypatch.delitem(sys.modules, module)  # as in a fresh process
    assert probe(record) == spec.fingerprint() and imported == []  # taken from the record
    forged = json.loads(json.dumps(record))
    forged["reads"][at][2][2] = 42  # a constant there: not taken unread; the import reads the function
    assert probe(forged) is None and imported == [module]
    later = json.loads(json.dumps(record))  # a read through the value of that read imports it too
    later["reads"].append([["value", at], "__name__", ["closure", "__name__", record["reads"][at][1]]])
    assert probe(later) == {**spec.fingerprint(), "globals": sorted_reads(
        [r[2] for r in later["reads"]])} and imported == [module, module]
    outside = json.loads(json.dumps(record))
    outside["reads"][at][0][1] = "json.decoder"
    outside["reads"][at][2][0] = "globals:json.decoder"
    monkeypatch.delitem(sys.modules, "json.decoder")
    assert probe(outside) is None and imported == [module, module]


def _bound_by_constants(path: pathlib.Path, module: str) -> list[str]:
    """The upper-case names of ``module`` (source ``path``) whose value is a number, a string or a scalar
    type and that are not bound exactly once, at module level, by a constant expression (literals, the
    module's earlier such constants, attributes of ``gpucompiler.types`` as ``T``) or by an import from
    another module of the language (checked there); and the names of modules bound otherwise than by an
    import."""
    imported = vars(importlib.import_module(module))
    depth = module.count(".") + 1 - (path.name == "__init__.py")  # the package's depth, for relative imports
    known: set[str] = set()
    bound: dict[str, list[bool]] = {}

    def constant(e: ast.expr) -> bool:
        if isinstance(e, ast.Constant):
            return True
        if isinstance(e, ast.BinOp):
            return constant(e.left) and constant(e.right)
        if isinstance(e, ast.UnaryOp):
            return constant(e.operand)
        if isinstance(e, ast.Name):
            return e.id in known
        return (isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "T"
                and imported.get("T") is T)

    for node in ast.parse(path.read_text()).body:
        pairs: list[tuple[str, bool]] = []
        if isinstance(node, ast.ImportFrom):
            inside = node.level > 0 and depth - node.level + 1 >= 2  # still under gpucompiler.language
            pairs = [(a.asname or a.name, inside) for a in node.names]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    pairs.append((target.id, constant(node.value)))
                elif isinstance(target, ast.Tuple):
                    values = node.value.elts if isinstance(node.value, ast.Tuple) else []
                    ok = len(values) == len(target.elts)
                    pairs += [(t.id, ok and constant(v)) for t, v in zip(target.elts, values or target.elts)
                              if isinstance(t, ast.Name)]
        else:
            pairs = [(n.id, False) for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        for name, ok in pairs:
            bound.setdefault(name, []).append(ok)
            if ok:
                known.add(name)
    assigned = {n.id for node in ast.parse(path.read_text()).body if not isinstance(node, (ast.Import, ast.ImportFrom))
                for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return [f"{module}.{name}" for name, value in imported.items()
            if (spec_module.constant_name(name) and isinstance(value, (bool, int, float, str, T.Scalar))
                and bound.get(name) != [True])
            or (isinstance(value, types.ModuleType) and name in assigned)]  # a module: named by imports alone


def test_the_language_defines_its_functions_unconditionally():
    """What lets a hit take a read of an overlay module it has not imported from the record: importing it
    would bind the same names to the same functions (no definition under an ``if``, ``try``, loop or
    ``with``, no name chosen by a conditional expression) and its upper-case constants to the same values."""
    root = pathlib.Path(gpucompiler.__file__).parent / "language"
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.If, ast.Try, ast.For, ast.While, ast.With)):
                found += [(str(path), sub.lineno) for sub in ast.walk(node)
                          if isinstance(sub, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))]
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, (ast.IfExp, ast.BoolOp)):
                found.append((str(path), node.lineno))
        module = ".".join(("gpucompiler", *path.relative_to(root.parent).with_suffix("").parts)).removesuffix(".__init__")
        found += _bound_by_constants(path, module)
    assert found == []


def test_modules_that_register_names_for_compiled_code_are_always_imported():
    """A language module that registers a name with LLVM when imported (NumPy's random state) lies in a
    package whose reads are never taken from the record: a hit imports it, and its code links."""
    root = pathlib.Path(gpucompiler.__file__).parent / "language"
    registering = []
    for path in sorted(root.rglob("*.py")):
        module = ".".join(("gpucompiler", *path.relative_to(root.parent).with_suffix("").parts)).removesuffix(".__init__")
        top = [n for n in ast.parse(path.read_text()).body if not isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        if any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "add_symbol"
               for n in top for c in ast.walk(n)):
            registering.append(module)
    assert "gpucompiler.language.numpy.random.nprandomstate" in registering
    assert all(spec_module._registers(m) for m in registering)
    assert not spec_module._compiler_read(registering[0], "SLOTS", 128)


def test_the_constants_check_finds_a_computed_constant(tmp_path, monkeypatch):
    """The check above is not vacuous: a constant computed at import, one bound twice, a module chosen by an
    expression are found; literal constants are not."""
    package = tmp_path / "gpucompiler_probe_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text("import os\nfrom gpucompiler import types as T\nA = 1\nB = A * 2 + 1\n"
                                    "C = T.int64\nD = os.cpu_count()\nE = 1\nE = 2\nF = len('ab')\n"
                                    "import json\nG = os if D else json\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = _bound_by_constants(package / "mod.py", "gpucompiler_probe_pkg.mod")
    assert sorted(found) == [f"gpucompiler_probe_pkg.mod.{n}" for n in "DEFG"]


@needs_linker
def test_a_function_returning_a_typed_list_hits_without_inference(tmp_path):
    """The list's type (``list(int64)``) is rebuilt from the record to box the result, as an array's is."""
    calls = {"listed": "6"}
    write(tmp_path / "src")
    cold = run(tmp_path / "src", tmp_path / "cache", calls)
    assert cold["out"]["listed"] == [i * i - 3 for i in range(6)] == cold["expected"]["listed"]
    hit = run(tmp_path / "src", tmp_path / "cache", calls)
    assert "compile" not in hit["stats"] and hit["stats"].get("index.hit.disk") == 1
    assert hit["inferred"] == [] and hit["out"] == cold["out"]
    assert hit["loaded"]["gpucompiler.interpreter.infer"] is False and hit["loaded"]["llvmlite.binding"] is False
