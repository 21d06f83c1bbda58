"""A kernel's PTX linked to a cubin by the driver and kept in the cache tiers (gpucompiler/runtime/cubins.py).

The fake driver of tests/kernels/test_cuda_launch.py, given a linker: its "cubin" is a header naming the
capability and driver version it was made for, then the PTX; its ``cuModuleLoadData`` takes PTX or such a
cubin (refusing one made for another device or driver), and ``cuLinkDestroy`` overwrites the linker's
output. A "process" here is the runtime's and the cache's in-memory state emptied, over the same cache
directory; every launch runs through the CPU grid emulation and is compared with NumPy.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import struct
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest

from gpucompiler import device as gd
from gpucompiler.cache import DiskTier, Entry, decode
from gpucompiler.cache.default import default_cache
from gpucompiler.errors import CacheWarning, DeviceHeapError
from gpucompiler.identity import digest
from gpucompiler.kernel import Kernel
from gpucompiler.runtime import cubins, cuda

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "kernels"))
from test_cuda_launch import FakeDriver  # pyright: ignore[reportMissingImports]

MAGIC = b"FAKECUBIN\0"
INVALID_IMAGE, INVALID_PTX = 200, 218


class LinkingDriver(FakeDriver):
    """:class:`FakeDriver` with the driver's linker and ``cuDriverGetVersion``."""

    CUjitInputType = types.SimpleNamespace(CU_JIT_INPUT_PTX="ptx-input")

    def __init__(self, capability=(8, 0), version=12040, refuse_cubins=False, link_error=0):
        super().__init__()
        self.capability, self.version = capability, version
        self.refuse_cubins, self.link_error = refuse_cubins, link_error
        self.links, self.loads = 0, []

    def cuDeviceGetAttribute(self, attr, dev):
        return (0, self.capability[0] if attr == "major" else self.capability[1])

    def cuGetErrorName(self, err):
        names = {INVALID_IMAGE: b"CUDA_ERROR_INVALID_IMAGE", INVALID_PTX: b"CUDA_ERROR_INVALID_PTX"}
        return (0, names.get(int(err), b"CUDA_ERROR_UNKNOWN"))

    def cuDriverGetVersion(self):
        return (0, self.version)

    def cuLinkCreate(self, n, options, values):
        assert (n, options, values) == (0, [], [])
        return (0, {"inputs": [], "out": None})

    def cuLinkAddData(self, state, kind, data, size, name, n, options, values):
        assert kind == "ptx-input" and size == len(data) and data.endswith(b"\0") and name.endswith(b".ptx")
        assert (n, options, values) == (0, [], [])
        state["inputs"].append(bytes(data))
        return (0,)

    def cuLinkComplete(self, state):
        self.links += 1
        if self.link_error:
            return (self.link_error, 0, 0)
        (ptx,) = state["inputs"]
        image = MAGIC + struct.pack("<iii", *self.capability, self.version) + ptx[:-1]
        state["out"] = ctypes.create_string_buffer(image, len(image))
        return (0, ctypes.addressof(state["out"]), len(image))

    def cuLinkDestroy(self, state):
        if state["out"] is not None:  # the linker's memory is gone: a cubin read after this is garbage
            ctypes.memset(state["out"], 0xAB, len(state["out"]))
        return (0,)

    def cuModuleLoadData(self, image):
        image = bytes(image)
        if not image.startswith(MAGIC):
            self.loads.append("ptx")
            return super().cuModuleLoadData(image)
        made_for = struct.unpack_from("<iii", image, len(MAGIC))
        if self.refuse_cubins or made_for != (*self.capability, self.version):
            self.loads.append("refused")
            return (INVALID_IMAGE, None)
        self.loads.append("cubin")
        return super().cuModuleLoadData(image[len(MAGIC) + 12:] + b"\0")


def _scale_add(a, x, y):
    i = gd.grid(1)
    if i < y.shape[0]:
        y[i] = a * x[i] + y[i]


def _square(x, out):
    i = gd.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * x[i] - 1.0


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    for name in ("GPUC_CACHE", "GPUC_CACHE_URL", "GPUC_SERVICE_URL", "GPUC_CACHE_SHARED_DIR", "GPUC_CACHE_SECRET",
                 "GPUC_CACHE_SECRET_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GPUC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def process(monkeypatch, driver):
    """A fresh process on ``driver``: the runtime's and the cache's memory emptied (the tiers stay)."""
    monkeypatch.setattr(cuda, "_driver", lambda: driver)
    for name, value in (("_functions", {}), ("_launchers", {}), ("_capability", {}), ("_contexts", {}),
                        ("_state", {"init": False}), ("_heap_checked", set())):
        monkeypatch.setattr(cuda, name, value)
    cache = default_cache()
    cache.memory.clear()
    cache.stats.clear()
    return cache


def launch_both() -> None:
    """Launch both kernels (fresh objects) on NumPy arrays and check them against NumPy."""
    n = 300
    x, y = np.linspace(-1.0, 2.0, n), np.random.default_rng(3).random(n)
    want = 1.5 * x + y
    Kernel(_scale_add)[(n + 127) // 128, 128](1.5, x, y)
    np.testing.assert_allclose(y, want, rtol=1e-15)
    out = np.zeros(n)
    Kernel(_square)[(n + 127) // 128, 128](x, out)
    np.testing.assert_allclose(out, x * x - 1.0, rtol=1e-15)


def cubin_entries(directory) -> dict[str, Entry]:
    tier = DiskTier(directory)
    found = {}
    for key, _, _ in tier.files():
        data = tier.get(key)
        assert data is not None
        entry = decode(data, key)
        if entry.meta.get("name", "").startswith("cubin:"):
            found[key] = entry
    return found


def test_the_first_process_links_and_stores_and_the_next_loads_the_cubin_without_linking(cache_dir, monkeypatch):
    first = LinkingDriver()
    cache = process(monkeypatch, first)
    launch_both()
    assert (first.links, first.loads) == (2, ["cubin", "cubin"])
    assert cache.stats["cubin.linked"] == 2
    stored = cubin_entries(cache_dir)
    assert sorted(e.meta["name"] for e in stored.values()) == ["cubin:_scale_add", "cubin:_square"]
    for entry in stored.values():  # what the linker made, copied out before cuLinkDestroy overwrote it
        cubin = entry.artifacts["cubin"]
        assert isinstance(cubin, bytes) and cubin.startswith(MAGIC + struct.pack("<iii", 8, 0, 12040))
        assert entry.document == cubins.cubin_document(cubin[len(MAGIC) + 12:] + b"\0", (8, 0), 12040)

    second = LinkingDriver()
    cache = process(monkeypatch, second)
    launch_both()
    assert (second.links, second.loads) == (0, ["cubin", "cubin"])
    assert cache.stats["cubin.hit.disk"] == 2 and "compile" not in cache.stats
    assert {m.split(".entry ")[1].split("(")[0] for m in second.modules} == {"_scale_add", "_square"}


@pytest.mark.parametrize("other", [{"version": 12050}, {"capability": (8, 6)}])
def test_another_driver_version_or_capability_misses_and_links_its_own(cache_dir, monkeypatch, other):
    process(monkeypatch, LinkingDriver())
    launch_both()
    driver = LinkingDriver(**other)
    cache = process(monkeypatch, driver)
    launch_both()
    assert (driver.links, driver.loads) == (2, ["cubin", "cubin"])  # never another device's or driver's cubin
    assert not any(k.startswith("cubin.hit") for k in cache.stats)
    assert len(cubin_entries(cache_dir)) == 4
    again = LinkingDriver(**other)  # each finds its own
    process(monkeypatch, again)
    launch_both()
    assert (again.links, again.loads) == (0, ["cubin", "cubin"])


def test_the_key_holds_the_ptx_the_capability_the_driver_and_the_jit_options():
    ptx = b".version 8.0\n.target sm_80\n\0"
    base = cubins.cubin_document(ptx, (8, 0), 12040)
    assert base["jit_options"] == list(cubins.JIT_OPTIONS)
    assert base["ptx"] != cubins.cubin_document(b"x", (8, 0), 0)["ptx"]
    others = [cubins.cubin_document(ptx + b" ", (8, 0), 12040), cubins.cubin_document(ptx, (8, 6), 12040),
              cubins.cubin_document(ptx, (9, 0), 12040), cubins.cubin_document(ptx, (8, 0), 12041)]
    assert len({digest(d) for d in [base, *others]}) == 5


def test_the_same_ptx_for_another_capability_finds_no_cubin(cache_dir, monkeypatch):
    """The capability is in the key beside the PTX digest (the PTX alone would not tell sm_90 from sm_90a)."""
    driver = LinkingDriver()
    cache = process(monkeypatch, driver)
    ptx = Kernel(_square).inspect_asm(np.zeros(4), np.zeros(4))
    cubins.load_module(driver, ptx, (8, 0), "_square", cuda.check)
    driver.capability = (8, 6)
    cubins.load_module(driver, ptx, (8, 6), "_square", cuda.check)
    assert driver.links == 2 and driver.loads == ["cubin", "cubin"] and "cubin.hit.memory" not in cache.stats
    cubins.load_module(driver, ptx, (8, 6), "_square", cuda.check)
    assert driver.links == 2 and cache.stats["cubin.hit.memory"] == 1


def _flip(data: bytes) -> bytes:
    return data[:-5] + bytes([data[-5] ^ 1]) + data[-4:]


@pytest.mark.parametrize("damage", [_flip, lambda data: data[: len(data) // 2], lambda data: b""])
def test_a_corrupt_cubin_entry_on_disk_is_refused_and_the_ptx_linked_again(cache_dir, monkeypatch, caplog, damage):
    process(monkeypatch, LinkingDriver())
    launch_both()
    tier = DiskTier(cache_dir)
    for key in cubin_entries(cache_dir):
        path = tier.path(key)
        path.write_bytes(damage(path.read_bytes()))
    driver = LinkingDriver()
    cache = process(monkeypatch, driver)
    with caplog.at_level(logging.WARNING, "gpucompiler.cache"):
        launch_both()
    assert cache.stats["corrupt"] == 2 and "cubin.hit.disk" not in cache.stats
    assert (driver.links, driver.loads) == (2, ["cubin", "cubin"])
    assert sum("evicting it" in r.getMessage() for r in caplog.records) == 2
    assert len(cubin_entries(cache_dir)) == 2  # the new ones, stored again


def test_an_entry_swapped_under_another_cubins_key_is_refused(cache_dir, monkeypatch):
    process(monkeypatch, LinkingDriver())
    launch_both()
    tier = DiskTier(cache_dir)
    (a, _), (b, _) = cubin_entries(cache_dir).items()
    tier.path(a).write_bytes(tier.path(b).read_bytes())  # _scale_add's key now holds the other kernel's cubin
    driver = LinkingDriver()
    cache = process(monkeypatch, driver)
    launch_both()
    assert cache.stats["corrupt"] == 1 and cache.stats["cubin.hit.disk"] == 1 and driver.links == 1


def test_a_forged_cubin_in_the_shared_directory_is_refused_and_a_signed_one_is_used(cache_dir, tmp_path,
                                                                                       monkeypatch):
    shared = tmp_path / "shared"
    monkeypatch.setenv("GPUC_CACHE_SHARED_DIR", str(shared))
    monkeypatch.setenv("GPUC_CACHE_SECRET", "a deployment secret of 32 bytes")
    process(monkeypatch, LinkingDriver())
    launch_both()
    genuine = cubin_entries(cache_dir)
    # another machine of the deployment (its own private directory) reads the signed cubins
    monkeypatch.setenv("GPUC_CACHE_DIR", str(tmp_path / "machine2"))
    driver = LinkingDriver()
    cache = process(monkeypatch, driver)
    launch_both()
    assert cache.stats["cubin.hit.shared"] == 2 and driver.links == 0 and driver.loads == ["cubin", "cubin"]
    # an attacker who can write the shared directory, without the secret: the other kernel's cubin,
    # unsigned, under each key (valid entry checksums and key documents)
    (ka, ea), (kb, eb) = genuine.items()
    shared_tier = DiskTier(shared)
    for key, entry, evil in ((ka, ea, eb), (kb, eb, ea)):
        shared_tier.path(key).write_bytes(Entry(key, entry.document, dict(evil.artifacts), entry.meta).encode())
    monkeypatch.setenv("GPUC_CACHE_DIR", str(tmp_path / "machine3"))
    driver = LinkingDriver()
    cache = process(monkeypatch, driver)
    with pytest.warns(CacheWarning, match="unsigned"):
        launch_both()
    assert cache.stats["forged"] == 2 and not any(k.startswith("cubin.hit") for k in cache.stats)
    assert (driver.links, driver.loads) == (2, ["cubin", "cubin"])


def test_a_cubin_the_driver_refuses_is_dropped_and_the_ptx_loaded(cache_dir, monkeypatch, caplog):
    process(monkeypatch, LinkingDriver())
    launch_both()
    keys = set(cubin_entries(cache_dir))
    driver = LinkingDriver(refuse_cubins=True)
    cache = process(monkeypatch, driver)
    with caplog.at_level(logging.WARNING, "gpucompiler.cache"):
        launch_both()
    assert driver.loads == ["refused", "ptx", "refused", "ptx"] and driver.links == 0
    assert cache.stats["cubin.refused"] == 2
    assert sum("CUDA_ERROR_INVALID_IMAGE" in r.getMessage() for r in caplog.records) == 2
    assert len(keys) == 2 and cubin_entries(cache_dir) == {}  # dropped from disk and memory
    assert all(cache.memory.get(k) is None for k in keys)
    later = LinkingDriver()  # the next process links and stores them again
    process(monkeypatch, later)
    launch_both()
    assert (later.links, later.loads) == (2, ["cubin", "cubin"]) and len(cubin_entries(cache_dir)) == 2


def test_a_well_formed_entry_holding_text_instead_of_a_cubin_is_dropped_and_the_ptx_loaded(cache_dir, monkeypatch):
    process(monkeypatch, LinkingDriver())
    launch_both()
    tier = DiskTier(cache_dir)
    for key, entry in cubin_entries(cache_dir).items():  # valid checksums, the PTX text as the "cubin"
        cubin = entry.artifacts["cubin"]
        assert isinstance(cubin, bytes)
        text = cubin[len(MAGIC) + 12:].decode()
        tier.path(key).write_bytes(Entry(key, entry.document, {"cubin": text}, entry.meta).encode())
    driver = LinkingDriver()
    cache = process(monkeypatch, driver)
    launch_both()
    assert driver.loads == ["ptx", "ptx"] and cache.stats["cubin.refused"] == 2 and cubin_entries(cache_dir) == {}


def test_a_lost_context_is_reported_and_the_cached_cubin_kept(cache_dir, monkeypatch):
    """A trap of an earlier launch (a DeviceHeapError: the context is lost) says nothing of the image."""
    class LostContext(LinkingDriver):
        def cuModuleLoadData(self, image):
            return (719, None)

    process(monkeypatch, LinkingDriver())
    launch_both()
    process(monkeypatch, LostContext())
    cuda._heap_checked.add(0xC7)  # a kernel that allocates was loaded in this context
    with pytest.raises(DeviceHeapError):
        launch_both()
    assert len(cubin_entries(cache_dir)) == 2


def test_a_freshly_linked_cubin_the_driver_refuses_is_not_kept_and_the_ptx_loaded(cache_dir, monkeypatch):
    driver = LinkingDriver(refuse_cubins=True)
    cache = process(monkeypatch, driver)
    launch_both()
    assert driver.links == 2 and driver.loads == ["refused", "ptx", "refused", "ptx"]
    assert cache.stats["cubin.refused"] == 2 and "cubin.linked" not in cache.stats
    assert cubin_entries(cache_dir) == {}


def test_a_failing_link_loads_the_ptx(cache_dir, monkeypatch):
    driver = LinkingDriver(link_error=INVALID_PTX)
    cache = process(monkeypatch, driver)
    launch_both()
    assert driver.links == 2 and driver.loads == ["ptx", "ptx"] and cache.stats["cubin.link_failed"] == 2
    assert cubin_entries(cache_dir) == {}


def test_a_binding_that_refuses_the_call_loads_the_ptx_with_a_logged_warning(cache_dir, monkeypatch, caplog):
    class OtherBinding(LinkingDriver):
        def cuLinkCreate(self, *args):
            raise TypeError("cuLinkCreate() takes exactly 3 positional arguments")

    driver = OtherBinding()
    process(monkeypatch, driver)
    with caplog.at_level(logging.WARNING, "gpucompiler.cache"):
        launch_both()
    assert driver.loads == ["ptx", "ptx"]
    assert sum("TypeError" in r.getMessage() for r in caplog.records) == 2


def test_a_driver_binding_without_the_linker_loads_the_ptx(cache_dir, monkeypatch):
    driver = FakeDriver()
    process(monkeypatch, driver)
    launch_both()
    assert all(".entry" in m for m in driver.modules) and len(driver.modules) == 2
    assert cubin_entries(cache_dir) == {}


def test_with_the_cache_off_the_ptx_is_loaded_as_before(cache_dir, monkeypatch):
    monkeypatch.setenv("GPUC_CACHE", "off")
    driver = LinkingDriver()
    process(monkeypatch, driver)
    launch_both()
    assert (driver.links, driver.loads) == (0, ["ptx", "ptx"])


def _launch_warnings(monkeypatch, driver) -> list[str]:
    process(monkeypatch, driver)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        launch_both()
    return sorted(str(w.message) for w in caught)


def test_a_cache_directory_that_cannot_be_written_loads_the_ptx_with_no_new_warning(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("GPUC_CACHE_DIR", str(blocker / "cache"))  # under a regular file: nobody can write it
    before = _launch_warnings(monkeypatch, FakeDriver())  # as a launch did without the cubins
    driver = LinkingDriver()
    assert _launch_warnings(monkeypatch, driver) == before
    assert (driver.links, driver.loads) == (0, ["ptx", "ptx"])


def test_a_cubin_that_cannot_be_stored_is_used_without_a_warning(cache_dir, monkeypatch, caplog):
    process(monkeypatch, FakeDriver())
    launch_both()  # the PTX in the cache, no cubin yet

    def refuse(self, key, data):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(DiskTier, "put", refuse)
    driver = LinkingDriver()
    with caplog.at_level(logging.INFO, "gpucompiler.cache"):
        assert _launch_warnings(monkeypatch, driver) == []
    assert (driver.links, driver.loads) == (2, ["cubin", "cubin"]) and cubin_entries(cache_dir) == {}
    assert sum("is not kept" in r.getMessage() for r in caplog.records) == 2


GPU_MODULE = """
from gpucompiler import device as gd


def scale_add(a, x, y):
    i = gd.grid(1)
    if i < y.shape[0]:
        y[i] = a * x[i] + y[i]
"""

GPU_SCRIPT = """
import json, sys
sys.path.insert(0, {where!r})
import numpy as np
import kmod
from gpucompiler import kernel
from gpucompiler.cache.default import default_cache

n = 1000
x, y = np.linspace(-1.0, 2.0, n), np.arange(n, dtype=np.float64)
kernel(kmod.scale_add)[(n + 255) // 256, 256](1.5, x, y)
print(json.dumps({{"y": y.tolist(), "stats": dict(default_cache().stats)}}))
"""


@pytest.mark.gpu
def test_a_fresh_process_on_the_gpu_loads_the_cubin_the_first_one_linked(tmp_path):
    (tmp_path / "kmod.py").write_text(GPU_MODULE)
    env = {**os.environ, "GPUC_CACHE_DIR": str(tmp_path / "cache"), "CUDA_CACHE_DISABLE": "1"}
    for name in ("GPUC_CACHE", "GPUC_CACHE_URL", "GPUC_SERVICE_URL", "GPUC_CACHE_SHARED_DIR"):
        env.pop(name, None)
    answers = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", GPU_SCRIPT.format(where=str(tmp_path))], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        answers.append(json.loads(done.stdout.strip().splitlines()[-1]))
    n = 1000
    want = 1.5 * np.linspace(-1.0, 2.0, n) + np.arange(n)
    for answer in answers:
        np.testing.assert_allclose(answer["y"], want, rtol=1e-15)
    assert answers[0]["stats"]["cubin.linked"] == 1 and "cubin.hit.disk" not in answers[0]["stats"]
    assert answers[1]["stats"]["cubin.hit.disk"] == 1 and "cubin.linked" not in answers[1]["stats"]
    (entry,) = cubin_entries(tmp_path / "cache").values()
    cubin = entry.artifacts["cubin"]
    assert isinstance(cubin, bytes) and cubin[:4] == b"\x7fELF"  # the device's code, not PTX
