"""The two-level key of ``@jit``: a fresh process finds its code through the index key, without
type inference, and every change the full key covers still misses (never stale code).

Each case compiles a module in one process, runs it again in a second one (an index hit:
no compile, no inference) and then, after an edit, in a third; the result must always be
what CPython computes from the edited source.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.cache.servers import ROOT

BASE = textwrap.dedent("""
    import gpucompiler
    import jitconsts

    SCALE = 3

    def make(k):
        def scaled(x):
            return x * k
        return scaled

    scaled = make(3)

    def helper_a(x):
        return x + 1

    def helper_b(x):
        return x + 2

    helper = helper_a

    @gpucompiler.jit
    def jitted(x):
        return x - 1

    def with_default(x, k=3):
        return x * k

    @gpucompiler.jit
    def total(n):
        s = 0
        for i in range(n):
            s += i * SCALE + scaled(i) + helper(i) + jitted(i) + with_default(i) + jitconsts.OFFSET
            s += abs(i - 5)
        return s
""")

CONSTS = "OFFSET = 7\n"

# (module edit, jitconsts edit): each must change the result and be recompiled
EDITS = {
    "rebound constant": (("SCALE = 3", "SCALE = 4"), None),
    "closure cell": (("scaled = make(3)", "scaled = make(5)"), None),
    "rebound callee": (("helper = helper_a", "helper = helper_b"), None),
    "callee body": (("return x + 1", "return x + 10"), None),
    "jit callee body": (("return x - 1", "return x - 3"), None),
    "callee default": (("def with_default(x, k=3)", "def with_default(x, k=2)"), None),
    "module attribute": (None, ("OFFSET = 7", "OFFSET = 9")),
    "builtin shadowed": (("SCALE = 3\n", "SCALE = 3\n\ndef abs(x):\n    return x * 2\n"), None),
    "builtin rebound": (("SCALE = 3\n", "SCALE = 3\n\nimport builtins\n\ndef _abs2(x):\n    return x * 2\n\n"
                         "builtins.abs = _abs2\n"), None),
    "constant type": (("SCALE = 3", "SCALE = 3.0"), None),
}

SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import jitmod
    from gpucompiler.cache.default import default_cache
    value = jitmod.total(20)
    stats = dict(default_cache().stats)
    spec = next(iter(jitmod.total._entries.values())).spec
    inferred = any(not (isinstance(k, tuple) and k and k[0] in ("verified", "python")) for k in spec._cache)
    expected = jitmod.total.py_func(20)  # CPython (its call of `jitted` compiles that one too)
    print(json.dumps({"value": value, "expected": expected, "inferred": inferred, "stats": stats}))
""")


def write(tmp_path, module=BASE, consts=CONSTS):
    (tmp_path / "jitmod.py").write_text(module)
    (tmp_path / "jitconsts.py").write_text(consts)


def run(tmp_path, script=SCRIPT):
    env = {**os.environ, "GPUC_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT),
           "PYTHONDONTWRITEBYTECODE": "1"}  # no stale .pyc: edits land within one mtime second
    env.pop("GPUC_SERVICE_URL", None)
    env.pop("GPUC_CACHE_URL", None)
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", list(EDITS))
def test_index_hit_then_every_edit_misses(tmp_path, case):
    write(tmp_path)
    first = run(tmp_path)
    assert first["value"] == first["expected"] and first["stats"].get("compile") == 1
    assert first["stats"].get("index.write") == 1
    second = run(tmp_path)  # the index key finds the code: no compile, no inference
    assert second["value"] == first["value"]
    assert second["stats"].get("index.hit.disk") == 1 and second["stats"].get("hit.disk") == 1
    assert "compile" not in second["stats"] and not second["inferred"]
    module_edit, consts_edit = EDITS[case]
    module = BASE.replace(*module_edit) if module_edit else BASE
    consts = CONSTS.replace(*consts_edit) if consts_edit else CONSTS
    assert (module, consts) != (BASE, CONSTS)
    write(tmp_path, module, consts)
    third = run(tmp_path)
    typed = lambda v: (type(v).__name__, v)  # noqa: E731  (3 and 3.0 differ)
    assert typed(third["value"]) == typed(third["expected"]) != typed(first["value"])
    assert third["stats"].get("compile") == 1 and third["inferred"]
    fourth = run(tmp_path)  # and the new code is then found through the index as well
    assert typed(fourth["value"]) == typed(third["value"]) and "compile" not in fourth["stats"]
    assert not fourth["inferred"]
    write(tmp_path)  # back to the first source: its code is still in the cache
    fifth = run(tmp_path)
    assert typed(fifth["value"]) == typed(first["value"]) and "compile" not in fifth["stats"]


WORLD_AGE = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import jitmod
    from gpucompiler.cache.default import default_cache
    stats = default_cache().stats
    out = [jitmod.total(20), dict(stats)]
    jitmod.SCALE = 5                       # a rebound global recompiles at the next call
    out += [jitmod.total(20), jitmod.total.py_func(20), dict(stats)]
    jitmod.SCALE = 3                       # back: the first code, from memory
    out += [jitmod.total(20), dict(stats)]
    jitmod.scaled = jitmod.make(3)         # a new closure with an equal cell: same code
    out += [jitmod.total(20), dict(stats)]
    print(json.dumps(out))
""")


def test_world_age_after_an_index_hit(tmp_path):
    write(tmp_path)
    first = run(tmp_path)
    v0, s0, v1, e1, s1, v2, s2, v3, s3 = run(tmp_path, WORLD_AGE)
    assert v0 == first["value"] and "compile" not in s0 and s0.get("index.hit.disk") == 1
    assert v1 == e1 != v0 and s1.get("compile") == 1
    assert v2 == v0 and s2.get("compile") == 1 and s2.get("hit.memory", 0) >= 1
    assert v3 == v0 and s3.get("compile") == 1


def test_a_forged_record_is_checked_not_trusted(tmp_path):
    """An index entry whose record omits reads, or names another return type, never serves code."""
    from gpucompiler import jit
    from gpucompiler import types as T
    from gpucompiler import identity as keys
    from gpucompiler.cache import Cache, DiskTier, Entry, decode
    from gpucompiler.pipeline import compile as compile_job

    sys.path.insert(0, str(tmp_path))
    write(tmp_path)
    try:
        import jitmod
    finally:
        sys.path.remove(str(tmp_path))
    root = tmp_path / "forged"
    f = jit(jitmod.total.py_func)
    job = f._job((T.int64,))
    Cache(DiskTier(root), compiler=compile_job).compile(job, ("obj",))
    idoc = keys.index_document(job)
    ikey = keys.digest(idoc)
    tier = DiskTier(root)
    good = decode(tier.get(ikey), "index", expect_key=ikey)
    for forge in ("drop", "restype"):
        record = json.loads(json.dumps(good.meta["record"]))
        if forge == "drop":
            record["reads"] = record["reads"][:-1]  # still consistent, so it verifies
        else:
            record["restype"] = "float64"
        tier.put(ikey, Entry(ikey, idoc, {}, {**good.meta, "record": record}).encode())
        cache = Cache(DiskTier(root), compiler=compile_job)
        res = cache.compile(f._job(job.source.argtypes), ("obj",))
        assert res.key == good.meta["key"] and res.origin == "disk"
        assert cache.stats["index.nocode"] == 1 and "compile" not in cache.stats
        # and the index is rewritten from inference
        assert decode(tier.get(ikey), "index", expect_key=ikey).meta["record"] == good.meta["record"]
