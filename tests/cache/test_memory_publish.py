"""A cache kept in memory alone (``GPUC_CACHE=off``, ``@jit(cache=False)``) stores entries as they are, without
making the bytes that only a disk, shared or Redis tier writes; a cache with a tier still writes them."""

from __future__ import annotations


from gpucompiler.cache.core import Cache
from gpucompiler.cache.entry import Entry, decode
from gpucompiler.cache.tiers import DiskTier


def _entry() -> Entry:
    return Entry("ab" * 32, {"source": "x"}, {"llvm": "define void @f() {\n  ret void\n}\n", "obj": b"\x7fELF"},
                 {"name": "f"})


def test_memory_alone_makes_no_bytes(monkeypatch):
    made = []
    encode = Entry.encode
    monkeypatch.setattr(Entry, "encode", lambda self: (made.append(self.key), encode(self))[1])
    cache = Cache()
    entry = _entry()
    cache.publish(entry)
    assert cache.memory.get(entry.key) == entry and made == []


def test_a_tier_gets_the_entrys_bytes(tmp_path):
    cache = Cache(disk=DiskTier(tmp_path))
    entry = _entry()
    cache.publish(entry)
    assert cache.memory.get(entry.key) == entry
    stored = cache.disk.get(entry.key) if cache.disk is not None else None
    assert stored is not None and decode(stored, "disk", entry.key) == entry


