"""A kept cache's shared object is linked after the compile returns (cache/later.py, cache/default.py's
``link_later``): the call does not wait for the linker; the entry is published again with it, signed in a
shared tier; the process waits for the link before it forks and before it exits; a failed link keeps the
entry as it was."""

from __future__ import annotations

import os
import subprocess
import threading

import pytest

from gpucompiler.cache import Cache, decode, later
from gpucompiler.cache.core import shared_disk
from gpucompiler.cache.default import _compile, link_later
from gpucompiler.targets import sharedlink
from tests.cache import jobs
from tests.runtime.test_shared_object import _load, needs_linker

#: the shared object is made only where LLVM binds libm's names as the loader does (tests/conftest.py)
pytestmark = pytest.mark.loader_symbols

SECRET = b"a-deployment-secret-of-32-bytes!"


def _gate_linker(monkeypatch) -> tuple[threading.Event, list[bool]]:
    """The linker's run waits (10 s at most) for the returned event; whether it came is recorded."""
    returned, came = threading.Event(), []
    run = subprocess.run

    def gated(*args, **kwargs):
        came.append(returned.wait(10.0))
        return run(*args, **kwargs)

    monkeypatch.setattr(subprocess, "run", gated)
    return returned, came


@needs_linker
def test_the_call_returns_before_the_link_and_the_signed_entry_gets_its_shared_object(tmp_path, monkeypatch):
    shared = shared_disk(tmp_path / "shared")
    returned, came = _gate_linker(monkeypatch)
    cache = Cache(None, shared=shared, secret=SECRET, compiler=_compile, later=link_later)
    first = cache.compile(jobs.job(71), ("obj",))
    returned.set()
    later.wait()
    assert came == [True], "the compile waited for the linker"
    assert sharedlink.KIND not in first.artifacts and jobs.run(first, 71) == pytest.approx(jobs.expected(71))
    again = Cache(None, shared=shared, secret=SECRET, compiler=_compile)  # a later process: its MAC checked
    hit = again.compile(jobs.job(71), ("obj",))
    assert hit.origin == "shared" and "compile" not in again.stats
    assert _load(hit) == ("so", pytest.approx(jobs.expected(71)))
    assert hit.artifacts["obj"] == first.artifacts["obj"] and hit.meta == first.meta  # the same entry, plus one
    tampered = Cache(None, shared=shared, secret=b"another-secret-of-thirty-two-byt", compiler=_compile)
    with pytest.warns(Warning, match="MAC does not verify"):
        assert tampered.compile(jobs.job(71), ("obj",)).origin == "compiled"


@needs_linker
def test_a_fork_waits_for_the_link_under_way(tmp_path, monkeypatch):
    from gpucompiler.cache import DiskTier

    disk = DiskTier(tmp_path / "private")
    returned, came = _gate_linker(monkeypatch)
    first = Cache(disk, compiler=_compile, later=link_later).compile(jobs.job(72), ("obj",))
    threading.Timer(0.3, returned.set).start()  # the link goes on only after the fork began
    pid = os.fork()
    if pid == 0:  # the child: no thread of the parent's to wait for
        later.wait()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and came == [True]
    entry = decode(disk.path(first.key).read_bytes(), "test")  # complete when fork() returned
    assert sharedlink.KIND in entry.artifacts


@needs_linker
def test_a_failed_link_keeps_the_entry_whole_and_the_numbers_right(tmp_path, monkeypatch, caplog):
    from gpucompiler.cache import DiskTier

    def broken(*args, **kwargs):
        raise MemoryError("no memory for the link")

    monkeypatch.setattr(subprocess, "run", broken)
    disk = DiskTier(tmp_path / "private")
    first = Cache(disk, compiler=_compile, later=link_later).compile(jobs.job(73), ("obj",))
    later.wait()
    assert "no later artifact" in caplog.text
    hit = Cache(disk, compiler=_compile).compile(jobs.job(73), ("obj",))
    assert hit.origin == "disk" and sharedlink.KIND not in hit.artifacts
    assert _load(hit) == ("lljit", pytest.approx(jobs.expected(73))) and hit.key == first.key


def test_a_cache_in_memory_alone_links_nothing(monkeypatch):
    called = []
    cache = Cache(compiler=_compile, later=lambda job, entry: called.append(job))  # type: ignore[arg-type]
    result = cache.compile(jobs.job(74), ("obj",))
    later.wait()
    assert called == [] and jobs.run(result, 74) == pytest.approx(jobs.expected(74))


@needs_linker
def test_a_jit_functions_first_call_runs_before_its_link_starts_and_a_later_process_loads_it(tmp_path, monkeypatch):
    import numpy as np

    from gpucompiler import jit
    from gpucompiler.cache.core import Cache as CacheClass
    from gpucompiler.cache.default import default_cache

    monkeypatch.setenv("GPUC_CACHE_DIR", str(tmp_path / "cache"))
    out = np.zeros(3)
    seen: list[float] = []
    publish = CacheClass._publish_later

    def probe(self, entry, work):
        seen.append(float(out[0]))  # the call's store, done or not, when the link's thread begins
        publish(self, entry, work)

    monkeypatch.setattr(CacheClass, "_publish_later", probe)

    def fill(a, v):  # no loop: no tiered compile
        a[0], a[1], a[2] = v, 2.0 * v, 3.0 * v
        return a.sum()

    assert jit(fill)(out, 2.5) == 15.0 and out.tolist() == [2.5, 5.0, 7.5]
    later.wait()
    assert seen == [2.5], "the link's thread began before the call ran"
    entries = [decode(p.read_bytes(), str(p)) for p in (tmp_path / "cache").rglob("*") if p.is_file()
               and p.read_bytes().startswith(b"GPUCENT1")]
    assert any(sharedlink.KIND in e.artifacts for e in entries)
    assert default_cache().stats["write.disk"] == 3  # the entry, its index entry, the entry again with its link


def test_work_given_inside_a_held_block_starts_when_the_outermost_block_ends():
    ran: list[str] = []
    with later.held():
        with later.held():
            later.start(lambda: ran.append("inner"), "inner")
        later.start(lambda: ran.append("outer"), "outer")
        later.wait()
        assert ran == []
    later.wait()
    assert sorted(ran) == ["inner", "outer"]


def test_a_compiling_calls_eviction_pass_runs_after_the_call_and_bounds_the_directory(tmp_path, monkeypatch):
    import numpy as np

    from gpucompiler import jit
    from gpucompiler.cache import DiskTier

    later.wait()  # work an earlier test left on a thread of its own (a native entry's compile) finishes first
    cache = tmp_path / "cache"
    monkeypatch.setenv("GPUC_CACHE_DIR", str(cache))
    monkeypatch.setenv("GPUC_CACHE_SIZE", "1M")
    old = DiskTier(cache)
    stale = [f"{k:02x}" * 32 for k in range(6)]
    for k, key in enumerate(stale):  # older entries filling the bound
        old.put(key, b"x" * 200_000)
        os.utime(old.path(key), (1_000_000 + k, 1_000_000 + k))
    out = np.zeros(3)
    seen: list[float] = []
    evict = DiskTier.evict

    def probe(self, keep=None):
        seen.append(float(out[0]))  # the call's store, done or not, when the pass begins
        return evict(self, keep)

    monkeypatch.setattr(DiskTier, "evict", probe)

    def fill(a, v):  # no loop: no tiered compile
        a[0], a[1], a[2] = v, 2.0 * v, 3.0 * v
        return a.sum()

    assert jit(fill)(out, 1.5) == 9.0
    later.wait()
    assert seen and all(v == 1.5 for v in seen), "an eviction pass ran before the call"
    left = {key for key, _, _ in DiskTier(cache).files()}
    assert sum(size for _, size, _ in DiskTier(cache).files()) <= 1 << 20
    assert not set(stale[:2]) & left and len(left - set(stale)) >= 2  # the oldest went; the new entries stayed
