"""A cached native function's hit loads its entry's shared object without LLVM (runtime/shared_object.py,
targets/sharedlink.py); without a linker, with a tampered entry or an import LLVM binds elsewhere, the LLJIT
loads the object code; the key's host machine comes from its memo (identity/hostmachine.py)."""

from __future__ import annotations

import json
import logging
import math
import os
import subprocess
import sys
import textwrap

import pytest

from gpucompiler.cache import Cache, DiskTier, decode, later
from gpucompiler.cache.core import shared_disk
from gpucompiler.cache.default import _compile, link_later
from gpucompiler.errors import CacheWarning
from gpucompiler.targets import sharedlink
from tests.cache import jobs

#: the shared object is made only where LLVM binds libm's names as the loader does (tests/conftest.py)
pytestmark = pytest.mark.loader_symbols

needs_linker = pytest.mark.skipif(sharedlink.find_linker() is None, reason="no linker (ld.lld, ld, cc) on PATH: "
                                  "no shared objects are made")

GRADIENT = """
    import json, sys
    import numpy as np
    from gpucompiler import jit
    from enzyme_plugin import Active, Const, Reverse, autodiff

    def loss(w, b, xs, ys, n):
        acc = 0.0
        for i in range(n):
            r = w * xs[i] + b - ys[i]
            acc += r * r
        return acc / n

    def grad(w, b, xs, ys, n):
        return autodiff(Reverse, loss, Active(w), Active(b), Const(xs), Const(ys), Const(n))

    def picks(a, i, d):
        return a[i] / d + np.tanh(a[0])

    xs = np.linspace(0.0, 1.0, 50)
    ys = 3.0 * xs + 1.0
    out = {"grad": list(jit(grad, plugins=("enzyme",))(2.0, 0.5, xs, ys, 50))}
    f = jit(picks, boundscheck=True)
    out["picks"] = f(xs, 7, 4.0)
    for args in ((xs, 50, 1.0), (xs, -51, 1.0), (xs, 3, 0.0)):
        try:
            f(*args)
            out.setdefault("raised", []).append(None)
        except Exception as exc:
            out.setdefault("raised", []).append(type(exc).__name__)
    from gpucompiler.cache.default import default_cache
    out["stats"] = dict(default_cache().stats)
    out["llvmlite"] = "llvmlite.binding" in sys.modules
    print(json.dumps(out))
"""


def _run(tmp_path, code: str, **env: str) -> dict:
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(code))
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GPUC_")}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True,
                         env={**environ, "GPUC_CACHE_DIR": str(tmp_path / "cache"), **env}, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _want() -> dict:
    n = 50
    xs = [k / (n - 1) for k in range(n)]
    res = [2.0 * x + 0.5 - (3.0 * x + 1.0) for x in xs]
    return {"grad": [sum(2.0 * r * x for r, x in zip(res, xs)) / n, sum(2.0 * r for r in res) / n],
            "picks": xs[7] / 4.0 + math.tanh(0.0), "raised": ["IndexError", "IndexError", "ZeroDivisionError"]}


@needs_linker
def test_a_cached_gradient_hit_loads_no_llvmlite_binding_and_gives_the_cold_numbers(tmp_path):
    cold = _run(tmp_path, GRADIENT)
    hit = _run(tmp_path, GRADIENT)
    want = _want()
    assert cold["grad"] == pytest.approx(want["grad"], rel=1e-13) and cold["picks"] == pytest.approx(want["picks"])
    assert cold["raised"] == want["raised"] and cold["stats"].get("compile", 0) >= 2
    assert "compile" not in hit["stats"] and hit["stats"].get("hit.disk", 0) >= 2
    assert not hit["llvmlite"], "a hit whose entries hold shared objects imports llvmlite's binding"
    assert (hit["grad"], hit["picks"], hit["raised"]) == (cold["grad"], cold["picks"], cold["raised"])


def test_without_a_linker_there_is_no_shared_object_and_the_hit_loads_through_the_lljit(tmp_path):
    env = {"GPUC_LINKER": str(tmp_path / "no-such-linker")}
    cold = _run(tmp_path, GRADIENT, **env)
    hit = _run(tmp_path, GRADIENT, **env)
    want = _want()
    assert hit["grad"] == cold["grad"] and hit["grad"] == pytest.approx(want["grad"], rel=1e-13)
    assert hit["raised"] == cold["raised"] == want["raised"] and hit["picks"] == cold["picks"]
    assert "compile" not in hit["stats"] and hit["llvmlite"]
    entries = [decode(p.read_bytes(), str(p)) for p in (tmp_path / "cache").rglob("*") if p.is_file()
               and p.read_bytes().startswith(b"GPUCENT1")]
    assert entries and not any(sharedlink.KIND in e.artifacts for e in entries)


def _kept(*tiers, **options) -> Cache:
    """A cache that links as the default kept cache does (``cache.default.link_later``, after the compile)."""
    return Cache(*tiers, compiler=_compile, later=link_later, **options)


def _linked(cache: Cache, job):
    """``job`` through ``cache``, read again once its shared object was published: what a later process reads."""
    cache.compile(job, ("obj",))
    later.wait()
    cache.memory.clear()
    return cache.compile(job, ("obj",))


def _load(result):
    """``result``'s ``wsum`` through the hit's loader: the shared object, else the LLJIT (as ``@jit``'s ``_entry``)."""
    import ctypes

    from gpucompiler.runtime import shared_object
    from gpucompiler.runtime.cpu import CPULibrary

    shared = result.artifacts.get(shared_object.KIND)
    lib = shared_object.load(shared, result.meta["symbols"]) if isinstance(shared, bytes) else None
    kind = "so" if lib is not None else "lljit"
    lib = lib or CPULibrary.from_cached(result)
    fn = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.POINTER(ctypes.c_double), ctypes.c_int64,
                          ctypes.c_double)(lib.address("wsum"))
    arr = (ctypes.c_double * len(jobs.XS))(*jobs.XS)
    return kind, fn(arr, len(jobs.XS), jobs.W)


@needs_linker
def test_a_forged_shared_object_in_a_signed_tier_is_refused_and_the_code_recompiled(tmp_path):
    secret = b"a-deployment-secret-of-32-bytes!"
    shared = shared_disk(tmp_path / "shared")
    first = _linked(_kept(None, shared=shared, secret=secret), jobs.job(61))
    other = _linked(_kept(DiskTier(tmp_path / "other")), jobs.job(62))  # another function's code
    assert sharedlink.KIND in first.artifacts and _load(first) == ("so", pytest.approx(jobs.expected(61)))
    path = shared.path(first.key)
    sealed = path.read_bytes()
    entry = decode(sealed[8 + 32:], "test")
    forged = entry._replace(artifacts={**entry.artifacts, sharedlink.KIND: other.artifacts[sharedlink.KIND]})
    path.write_bytes(sealed[:8 + 32] + forged.encode())  # checksums right, the MAC not
    again = _kept(None, shared=shared, secret=secret)
    with pytest.warns(CacheWarning, match="MAC does not verify"):
        result = again.compile(jobs.job(61), ("obj",))
    assert again.stats["forged"] == 1 and result.origin == "compiled"
    assert _load(result) == ("lljit", pytest.approx(jobs.expected(61)))  # its own link comes after the compile
    relinked = _linked(again, jobs.job(61))  # the forged entry replaced, signed
    assert relinked.origin == "shared" and _load(relinked) == ("so", pytest.approx(jobs.expected(61)))


@needs_linker
def test_a_bit_flipped_shared_object_on_the_private_disk_is_evicted_and_the_code_recompiled(tmp_path):
    disk = DiskTier(tmp_path / "private")
    first = _linked(_kept(disk), jobs.job(63))
    data = bytearray(disk.path(first.key).read_bytes())
    so = first.artifacts[sharedlink.KIND]
    assert isinstance(so, bytes)
    at = bytes(data).index(so) + len(so) // 2
    data[at] ^= 0xFF
    disk.path(first.key).write_bytes(bytes(data))
    again = _kept(disk)
    result = again.compile(jobs.job(63), ("obj",))
    assert again.stats["corrupt"] == 1 and result.origin == "compiled"
    assert _load(_linked(again, jobs.job(63))) == ("so", pytest.approx(jobs.expected(63)))


@needs_linker
def test_an_import_registered_with_add_symbol_gets_no_shared_object_and_runs(tmp_path):
    import ctypes

    import llvmlite.binding as llvm

    from gpucompiler.core import CompilerConfig, CompilerJob, LLVMSource
    from gpucompiler.runtime.cpu import CPULibrary
    from gpucompiler.targets.native import NativeTarget

    three = ctypes.c_double(3.0)
    llvm.add_symbol("gpuc_test_three", ctypes.addressof(three))
    text = """
        @gpuc_test_three = external global double
        define double @scaled(double %x) {
          %t = load double, ptr @gpuc_test_three
          %r = fmul double %x, %t
          ret double %r
        }"""
    job = CompilerJob(LLVMSource(textwrap.dedent(text), "scaled"), CompilerConfig(NativeTarget()))
    result = _linked(_kept(DiskTier(tmp_path / "cache")), job)
    assert result.origin == "disk" and sharedlink.KIND not in result.artifacts
    lib = CPULibrary.from_cached(result)
    assert ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(lib.address("scaled"))(2.5) == 7.5
    # a libc name registered elsewhere is refused too: LLVM binds it to the registration, the loader to libc's
    assert sharedlink._loader_name("l64a") == "l64a"
    llvm.add_symbol("l64a", ctypes.addressof(three))  # a libc function no compiled code calls
    assert sharedlink._loader_name("l64a") is None
    obj = result.artifacts["obj"]
    assert isinstance(obj, bytes)
    symbols = [["tanh", True, "external"], ["f", False, "external"]]
    assert sharedlink.link(obj, symbols) is not None
    assert sharedlink.link(obj, symbols, {"f": 1}) is None  # the module's address record binds names


def test_numpy_random_state_names_get_no_shared_object(tmp_path):
    code = """
        import json, sys
        import numpy as np
        from gpucompiler import jit

        def draw(n):
            np.random.seed(7)
            return np.random.random(n).sum()

        value = jit(draw)(5)
        from gpucompiler.cache.default import default_cache
        print(json.dumps({"value": float(value), "stats": dict(default_cache().stats)}))
    """
    import numpy as np

    cold = _run(tmp_path, code)
    hit = _run(tmp_path, code)
    entries = [decode(p.read_bytes(), str(p)) for p in (tmp_path / "cache").rglob("*") if p.is_file()
               and p.read_bytes().startswith(b"GPUCENT1")]
    coded = [e for e in entries if "obj" in e.artifacts]
    assert coded and not any(sharedlink.KIND in e.artifacts for e in coded)
    assert "compile" not in hit["stats"] and hit["value"] == cold["value"]
    np.random.seed(7)
    assert cold["value"] == pytest.approx(np.random.random(5).sum(), rel=1e-15)


def _object(text: str) -> bytes:
    from gpucompiler.llvm.binding import parse_ir
    from gpucompiler.targets.native import NativeTarget

    target = NativeTarget()
    ref = parse_ir(textwrap.dedent(text))
    ref.triple, ref.data_layout = target.triple(), target.data_layout()
    return target.target_machine(2).emit_object(ref)


def test_the_exception_names_are_renamed_in_place_and_a_shared_tail_is_refused():
    reads = """
        @"gpuc.pyexc.IndexError" = external global ptr
        define ptr @f() {
          %p = load ptr, ptr @"gpuc.pyexc.IndexError"
          ret ptr %p
        }"""
    obj = _object(reads)
    names = {"gpuc.pyexc.IndexError": "PyExc_IndexError"}
    renamed = sharedlink.rename_undefined(obj, names)
    assert renamed is not None and b"PyExc_IndexError\0" in renamed and b"gpuc.pyexc.IndexError" not in renamed
    assert len(renamed) == len(obj)
    assert sharedlink.rename_undefined(obj, {"f": "g"}) is None  # defined: not renamed
    assert sharedlink.rename_undefined(obj, {"nowhere": "x"}) is None
    assert sharedlink.rename_undefined(b"not an object", names) is None
    assert sharedlink.rename_undefined(obj[:200], names) is None  # truncated: its section table is gone
    assert sharedlink.link(b"\xcf\xfa\xed\xfe" + obj[4:], []) is None  # not ELF (a Mach-O magic): no link
    # a defined name that is the exception name's tail shares its bytes in the string table: not renamed
    tail = _object(reads + '\n@"pyexc.IndexError" = global i32 0')
    assert tail.count(b"pyexc.IndexError\0") == 1, "LLVM's string table merged no tail here"
    assert sharedlink.rename_undefined(tail, names) is None


def _target(cpu: str = "", features: str = ""):
    from gpucompiler.targets.native import NativeTarget

    return NativeTarget(cpu, features)


def test_the_host_machine_memo_serves_a_fresh_process_and_misses_on_another_cpu(tmp_path, monkeypatch):
    from gpucompiler.identity import hostmachine

    monkeypatch.setenv("GPUC_CACHE_DIR", str(tmp_path / "cache"))
    asked = []
    real = type(_target()).machine

    def counted(self):
        asked.append(1)
        return real(self)

    monkeypatch.setattr(type(_target()), "machine", counted)
    truth = real(_target())
    assert hostmachine.host_machine(_target()) == truth and len(asked) == 1
    assert hostmachine.host_machine(_target()) == truth and len(asked) == 1  # from the memo
    # a forged answer in the memo is served only while every stamp matches: another CPU's misses
    memo = next((tmp_path / "cache" / "code").glob("host-machine-*"))
    forged = {**json.loads(memo.read_text()), "machine": {**truth, "features": "+forged"}}
    memo.write_text(json.dumps(forged))
    assert hostmachine.host_machine(_target())["features"] == "+forged"  # the private directory is trusted
    cpuinfo = tmp_path / "cpuinfo"
    with open(hostmachine.CPUINFO) as fh:
        text = fh.read()
    assert hostmachine.cpu_identity(str(cpuinfo)) is None  # no file: LLVM is asked
    cpuinfo.write_text(text.replace("flags\t\t:", "flags\t\t: gpuc_other_feature", 1))
    if hostmachine.cpu_identity() is None:
        pytest.skip("this host's /proc/cpuinfo has no x86 fields: its machine is always asked of LLVM")
    assert hostmachine.cpu_identity(str(cpuinfo)) not in (None, hostmachine.cpu_identity())
    assert hostmachine.host_machine(_target(), str(cpuinfo)) == truth and len(asked) == 2
    cpuinfo.write_text(text.replace("vendor_id", "vendor", 1))  # a field missing: not trusted
    assert hostmachine.cpu_identity(str(cpuinfo)) is None
    assert hostmachine.host_machine(_target(), str(cpuinfo)) == truth and len(asked) == 3
    # the target's own fields are part of the stamp
    assert hostmachine.host_machine(_target("x86-64", "+sse2"))["cpu"] == "x86-64" and len(asked) == 4


def test_a_forged_host_machine_memo_in_a_directory_another_user_can_write_is_ignored(tmp_path, monkeypatch):
    from gpucompiler.identity import hostmachine
    from gpucompiler.identity.codeprint import memo_path

    cache = tmp_path / "cache"
    monkeypatch.setenv("GPUC_CACHE_DIR", str(cache))
    truth = type(_target()).machine(_target())
    hostmachine.host_machine(_target())
    memo = next((cache / "code").glob("host-machine-*"))
    memo.write_text(json.dumps({**json.loads(memo.read_text()), "machine": {**truth, "features": "+forged"}}))
    os.chmod(cache, 0o777)  # another user could have planted it
    try:
        assert memo_path("host-machine-x", "/lib") is None
        assert hostmachine.host_machine(_target()) == truth
    finally:
        os.chmod(cache, 0o700)


@needs_linker
def test_only_a_cache_kept_beyond_the_process_links_and_blas_names_are_refused(tmp_path, monkeypatch):
    from gpucompiler.cache.default import cache_from_settings, memory_cache
    from gpucompiler.settings import CacheSettings

    assert sharedlink.KIND not in memory_cache().compile(jobs.job(64), ("obj",)).artifacts  # cache=False: no link
    monkeypatch.setenv("GPUC_CACHE_DIR", str(tmp_path / "cache"))
    kept = cache_from_settings(CacheSettings.from_env()).compile(jobs.job(65), ("obj",))
    assert sharedlink.KIND not in kept.artifacts  # linked after the compile returns (cache/later.py)
    later.wait()
    hit = cache_from_settings(CacheSettings.from_env()).compile(jobs.job(65), ("obj",))  # as a later process
    assert hit.origin == "disk" and _load(hit) == ("so", pytest.approx(jobs.expected(65)))
    # NumPy's BLAS names resolve in the compiling process only once the JIT's lookup opened OpenBLAS
    assert sharedlink._loader_name("scipy_cblas_ddot64_") is None


DIFFERENTIAL = """
    import json, math, sys
    import numpy as np
    from gpucompiler import jit

    def vector_tanh(x):  # an array expression whose loop libmvec's vector tanh serves on AVX hosts
        return np.tanh(x)

    def fresh(n):  # an array made and handed back
        return np.arange(n) * 0.5

    def table(n):  # a dict and a tuple
        d = {i: i * i for i in range(n)}
        return d[n - 1], len(d), (n, 2.5)

    def lookup(n, k):
        d = {i: float(i) for i in range(n)}
        return d[k]

    def overflow(x):
        return math.exp(x)

    x = np.linspace(-3.0, 3.0, 1001)
    out = {"vector_tanh": jit(vector_tanh)(x).tolist(), "fresh": jit(fresh)(7).tolist(),
           "table": list(jit(table)(5)), "lookup": jit(lookup)(4, 3)}
    for f, args in ((lookup, (4, 9)), (overflow, (1000.0,))):
        try:
            jit(f)(*args)
            out[f.__name__ + "_raised"] = None
        except Exception as exc:
            out[f.__name__ + "_raised"] = type(exc).__name__
    loaded = [type(lib).__name__ for lib, _ in sys.modules["gpucompiler.jit"]._LOADED.values()]
    out["loaders"] = sorted(set(loaded)) if len(loaded) >= 5 else loaded  # 5 functions; a tier-up loads two
    print(json.dumps(out))
"""


@needs_linker
def test_the_shared_objects_and_the_lljit_give_the_same_bits_and_exceptions(tmp_path):
    """Differential: each function's hit through its shared object, against the same functions compiled and loaded
    with no linker (the LLJIT), against NumPy; vectorized libmvec calls, returned arrays, dicts, exceptions."""
    (tmp_path / "so").mkdir()
    (tmp_path / "jit").mkdir()
    cold = _run(tmp_path / "so", DIFFERENTIAL)
    hit = _run(tmp_path / "so", DIFFERENTIAL)
    missing = {"GPUC_LINKER": str(tmp_path / "no-linker")}
    _run(tmp_path / "jit", DIFFERENTIAL, **missing)
    lljit = _run(tmp_path / "jit", DIFFERENTIAL, **missing)
    # the compiling process loads through the LLJIT (its shared objects are linked after each call returns)
    assert hit.pop("loaders") == ["SharedLibrary"] and cold.pop("loaders") == lljit.pop("loaders") == ["CPULibrary"]
    assert hit == cold == lljit
    import numpy as np

    x = np.linspace(-3.0, 3.0, 1001)
    assert hit["vector_tanh"] == pytest.approx(np.tanh(x).tolist(), rel=4e-15, abs=1e-300)  # libmvec: 4 ulp at most
    from gpucompiler.targets import libmvec
    from gpucompiler.targets.native import NativeTarget

    if libmvec.variants(NativeTarget().host_features()).get("tanh"):  # the vector tanh's name is imported
        entries = [decode(p.read_bytes(), str(p)) for p in (tmp_path / "so" / "cache").rglob("*") if p.is_file()
                   and p.read_bytes().startswith(b"GPUCENT1")]
        imports = {row[0] for e in entries if sharedlink.KIND in e.artifacts for row in e.meta["symbols"] if row[1]}
        assert any(name.startswith(libmvec.PREFIX) for name in imports)
    assert hit["fresh"] == (np.arange(7) * 0.5).tolist() and hit["table"] == [16, 5, [5, 2.5]]
    assert hit["lookup"] == 3.0 and hit["lookup_raised"] == "KeyError" and hit["overflow_raised"] == "OverflowError"


@pytest.mark.parametrize("linker", ["ld", "ld.lld", "ld.lld-19", "cc", "clang-19"])
def test_each_kind_of_linker_makes_a_shared_object_that_loads_and_runs(linker, monkeypatch, caplog, tmp_path):
    import shutil

    if shutil.which(linker) is None:
        pytest.skip(f"no {linker} on PATH")
    monkeypatch.setenv("GPUC_LINKER", linker)
    sharedlink.find_linker.cache_clear()
    try:
        with caplog.at_level(logging.DEBUG, logger="gpucompiler.targets.sharedlink"):
            result = _linked(_kept(DiskTier(tmp_path / "cache")), jobs.job(66))
    finally:
        sharedlink.find_linker.cache_clear()
    assert sharedlink.KIND in result.artifacts, f"{linker} made no shared object: {caplog.messages}"
    assert _load(result) == ("so", pytest.approx(jobs.expected(66)))
