"""A plugin installed on both sides of the compile service (an entry point in a ``*.dist-info``): its report
and the warnings its callbacks emit, in the client (which prepares the job) and on the service, are shown
in the client once each, kept in the client's entry, and shown again on the client's later cache hits."""

from __future__ import annotations

import importlib
import os
import sys
import warnings

import pytest

import gpucompiler.cache.default as cached
from gpucompiler import CompilerConfig, CompilerJob, LLVMSource, NativeTarget
from gpucompiler.cache.core import Cache, private_disk
from gpucompiler.service import ServiceClient
from tests.cache.servers import start_service, stop

from installing import install

WARNER = '''
import warnings

import gpucompiler.plugin as gp


class Warner(gp.Plugin):
    name, version = "warner", "1"

    @gp.callback("post_irgen")
    def warn(self, job):  # runs in the client (it prepares the job)
        warnings.warn(f"{job.name}: the warner plugin warns here", UserWarning, stacklevel=1)

    @gp.callback("optimize.late")
    def warn_there(self, job):  # runs on the service
        warnings.warn(f"{job.name}: the warner plugin warns there", UserWarning, stacklevel=1)

    def report(self, job):
        return {"warned": job.name}
'''
IR = "define i32 @f(i32 %x) {\n  %y = mul i32 %x, 7\n  ret i32 %y\n}\n"
TOKEN = "warner-token"


@pytest.fixture
def warner_site(tmp_path, monkeypatch, fresh_registry):
    site = install(tmp_path / "site", "warner_dist", {"warner": "warner_pkg.plugin:Warner"})
    (site / "warner_pkg").mkdir()
    (site / "warner_pkg" / "__init__.py").write_text("")
    (site / "warner_pkg" / "plugin.py").write_text(WARNER)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    yield site
    for name in [m for m in sys.modules if m.startswith("warner_pkg")]:
        del sys.modules[name]


def test_a_warning_on_the_service_is_shown_here_and_on_every_later_hit(warner_site, tmp_path):
    token = tmp_path / "token"
    token.write_text(TOKEN)
    url, proc = start_service(tmp_path / "service-cache", "--workers", "1", "--token-file", str(token),
                              env={"PYTHONPATH": os.pathsep.join([str(warner_site), *sys.path])})
    try:
        def cache():
            return Cache(private_disk(tmp_path / "local"), service=ServiceClient(url, token=TOKEN, timeout=60),
                         compiler=cached._compile)  # pyright: ignore[reportPrivateUsage]

        job = CompilerJob(LLVMSource(IR, "f"), CompilerConfig(NativeTarget(), plugins=("warner",)))
        shown = []
        for _ in range(2):  # the service compiles; then the client's own disk tier (a fresh memory tier)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result = cache().compile(job, ("llvm",))
            shown.append((result.origin, [str(w.message) for w in caught if w.category is UserWarning],
                          result.reports))
    finally:
        stop(proc)
    assert [s[0] for s in shown] == ["service", "disk"]
    assert shown[0][1] == shown[1][1] == ["f: the warner plugin warns here", "f: the warner plugin warns there"]
    assert shown[0][2] == shown[1][2] == {"warner": {"warned": "f"}}
