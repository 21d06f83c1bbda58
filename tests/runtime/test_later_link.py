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
