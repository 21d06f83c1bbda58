"""The attacks of docs/cache.md's threat model, run as the attacker would run them.

* a token holder without the deployment's secret has the service sign its own IR, and an impostor on
  the victim's ``GPUC_SERVICE_URL`` serves that answer (or an old answer of the victim's own job);
* a second local user (uid 65534, through ``setuid`` in a forked child) plants links and entries in
  directories the victim's cache or ``gpuc serve`` would use.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import threading
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import httpx
import pytest

import gpucompiler
from gpucompiler import identity as keys
from gpucompiler.cache import Cache, DiskTier, decode
from gpucompiler.cache.core import CachedResult, shared_disk
from gpucompiler.cache.entry import Entry
from gpucompiler.cache.default import compile_cached
from gpucompiler.cli import main
from gpucompiler.errors import CacheError, CacheForgeryError, CacheWarning
from gpucompiler.pipeline import compile as compile_job
from gpucompiler.service import ServiceClient
from gpucompiler.service.protocol import decode_artifacts, make_request, parse_request
from tests.cache import jobs
from tests.cache.attackers import TEAM_GID, as_another_user, public_directory, run_as_another_user
from tests.cache.servers import ROOT, SECRET, start_service, stop
from tests.cache.test_trust import evil_job

TOKEN = "attack-tests-token-3b1e"


@pytest.fixture
def public(tmp_path):
    yield from public_directory()


@pytest.fixture(scope="module")
def signed_service(tmp_path_factory):
    """``gpuc serve`` with a token and the deployment's secret (its answers are MACed under the secret)."""
    cache_dir = tmp_path_factory.mktemp("signed-service")
    token_file = cache_dir.parent / "signed-token"
    token_file.write_text(TOKEN)
    url, proc = start_service(cache_dir, "--token-file", str(token_file), env={"GPUC_CACHE_SECRET": SECRET.decode()})
    try:
        yield url
    finally:
        stop(proc)


def _post(url: str, request: dict) -> dict:
    r = httpx.post(url + "/compile", content=json.dumps(request).encode(), timeout=60,
                   headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    return r.json()


class _Replayer(BaseHTTPRequestHandler):
    """An impostor on the victim's GPUC_SERVICE_URL: answers every request with a recorded answer."""

    recorded: ClassVar[dict] = {}
    tokens: ClassVar[list[str]] = []

    def do_POST(self):  # http.server's name
        self.tokens.append(self.headers.get("authorization", ""))
        self.rfile.read(int(self.headers["content-length"]))
        body = json.dumps(self.recorded).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _impostor(recorded: dict) -> tuple[ThreadingHTTPServer, str]:
    handler = type("Replayer", (_Replayer,), {"recorded": recorded, "tokens": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def _assert_refused_here_and_nothing_stored(url: str, variant: int, tmp_path, evil_obj: bytes | None) -> None:
    victim = ServiceClient(url, token=TOKEN, secret=SECRET)
    with pytest.raises(CacheForgeryError, match="not for this request"):
        victim.compile(jobs.job(variant), ("obj",))
    private = DiskTier(tmp_path / "victim-private")
    cache = Cache(private, service=victim, compiler=compile_job)
    with pytest.warns(CacheWarning, match="not for this request"):
        res = cache.compile(jobs.job(variant), ("obj",))
    assert res.origin == "compiled" and jobs.run(res, variant) == pytest.approx(jobs.expected(variant), rel=1e-12)
    stored = [decode(private.get(k) or b"", "check", expect_key=k) for k, _, _ in private.files()]
    assert [e.artifacts["obj"] for e in stored] == [res.artifacts["obj"]]  # ours alone, never the answer's
    if evil_obj is not None:
        assert res.artifacts["obj"] != evil_obj


def test_a_token_holder_without_the_secret_gets_its_own_ir_signed_and_an_impostor_serves_it(
        signed_service, tmp_path):
    # the token holder: its own function under the victim's name, compiled and signed by the real service
    variant = 400
    evil = make_request(evil_job(variant), ("obj",))
    recorded = _post(signed_service, evil)
    assert jobs.run(_as_result(recorded, evil_job(variant)), variant) != pytest.approx(jobs.expected(variant))
    server, url = _impostor(recorded)
    try:
        _assert_refused_here_and_nothing_stored(url, variant, tmp_path, _as_result(recorded, evil_job(variant)).artifacts["obj"])
    finally:
        server.shutdown()


def test_an_old_answer_of_the_victims_own_job_replayed_is_refused(signed_service, tmp_path):
    variant = 401
    old = _post(signed_service, make_request(jobs.job(variant), ("obj",)))  # a genuine answer, recorded
    assert jobs.run(_as_result(old, jobs.job(variant)), variant) == pytest.approx(jobs.expected(variant), rel=1e-12)
    server, url = _impostor(old)
    try:
        _assert_refused_here_and_nothing_stored(url, variant, tmp_path, None)
    finally:
        server.shutdown()


def test_the_genuine_service_answer_is_accepted_and_bound_to_the_request(signed_service):
    res = ServiceClient(signed_service, token=TOKEN, secret=SECRET).compile(jobs.job(402), ("obj",))
    assert res.origin == "compiled" and jobs.run(res, 402) == pytest.approx(jobs.expected(402), rel=1e-12)
    other = ServiceClient(signed_service, token=TOKEN, secret=b"another-deployment-secret!")
    with pytest.raises(CacheForgeryError, match="valid MAC"):
        other.compile(jobs.job(402), ("obj",))


def _as_result(answer: dict, job) -> CachedResult:
    """The code a recorded answer holds, as the client would load it."""
    return CachedResult(job, decode_artifacts(answer["artifacts"]), answer["key"], "service")


@pytest.mark.parametrize("url", ["http://10.1.2.3:8765", "http://compile.example.org", "http://[2001:db8::1]:80"])
def test_the_token_is_never_sent_over_plain_http_to_another_host(url, monkeypatch, tmp_path):
    with pytest.raises(CacheError, match=r"https://.*loopback"):
        ServiceClient(url, token=TOKEN, secret=SECRET)
    for name, value in {"GPUC_SERVICE_URL": url, "GPUC_SERVICE_TOKEN": TOKEN, "GPUC_CACHE_SECRET": SECRET.decode(),
                        "GPUC_CACHE_DIR": str(tmp_path / "c")}.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(CacheError, match="clear text"):
        compile_cached(jobs.job(403), ("obj",))


@pytest.mark.parametrize("url", ["https://compile.example.org", "http://127.0.0.1:1", "http://localhost:1",
                                 "http://[::1]:1"])
def test_tls_or_loopback_urls_may_carry_the_token(url):
    ServiceClient(url, token=TOKEN, secret=SECRET).close()


# -- a second local user ------------------------------------------------------------------------------

def test_a_second_user_links_shared_subdirectories_to_the_victims_files_and_nothing_is_deleted(
        public, tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    id_rsa = home / ".ssh" / "id_rsa"
    id_rsa.write_text("PRIVATE KEY\n")
    project = home / "project.py"
    project.write_text("print('work')\n")
    shared = public / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # others may write: entries there are signed

    def plant():
        entries = shared / "entries"
        entries.mkdir()
        os.chmod(entries, 0o777)
        os.symlink(home / ".ssh", entries / "id")  # "entries/id/id_rsa" looks like an entry file
        os.symlink(home, entries / "pr")
        (entries / "ab").mkdir(mode=0o777)
        os.symlink(project, entries / "ab" / ("ab" + "0" * 62))  # an entry name linked to a project file

    as_another_user(plant)
    tier = shared_disk(shared, max_bytes=1)  # every publish evicts all it can
    cache = Cache(DiskTier(tmp_path / "private"), shared=tier, secret=SECRET, compiler=compile_job)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CacheWarning)
        res = cache.compile(jobs.job(410), ("obj",))  # publishing evicts
    assert id_rsa.read_text() == "PRIVATE KEY\n" and project.read_text() == "print('work')\n"
    assert any("never followed" in str(w.message) for w in caught)
    assert jobs.run(res, 410) == pytest.approx(jobs.expected(410), rel=1e-12)
    for name, value in {"GPUC_CACHE_DIR": str(tmp_path / "private"), "GPUC_CACHE_SHARED_DIR": str(shared),
                        "GPUC_CACHE_SECRET": SECRET.decode()}.items():
        monkeypatch.setenv(name, value)
    for name in ("GPUC_CACHE_URL", "GPUC_SERVICE_URL", "GPUC_CACHE"):
        monkeypatch.delenv(name, raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheWarning)
        main(["cache", "verify", "--evict"])
        main(["cache", "clear"])
    assert id_rsa.read_text() == "PRIVATE KEY\n" and project.read_text() == "print('work')\n"
    assert (shared / "entries" / "id").is_symlink()  # left alone, not followed


_MEMBER = """
import json, sys
from gpucompiler.cache import Cache
from gpucompiler.cache.core import shared_disk
from gpucompiler.pipeline import compile as compile_job
from tests.cache import jobs
from tests.cache.servers import SECRET

theirs = Cache(None, shared=shared_disk(sys.argv[1]), secret=SECRET, compiler=compile_job)
found = theirs.compile(jobs.job(420), ("obj",))  # the victim's entry, read
mine = Cache(compiler=compile_job).compile(jobs.job(420), ("obj",))
theirs.compile(jobs.job(421), ("obj",))  # and one of its own, published
print(json.dumps({"origin": found.origin, "same": found.artifacts["obj"] == mine.artifacts["obj"]}))
"""


def test_the_shared_tier_is_shareable_by_its_group_and_the_private_tier_stays_owner_only(public, tmp_path):
    shared = public / "team"
    shared.mkdir()
    if os.getuid() == 0:
        os.chown(shared, 0, TEAM_GID)
    os.chmod(shared, 0o2770)
    mine = Cache(DiskTier(tmp_path / "private"), shared=shared_disk(shared), secret=SECRET, compiler=compile_job)
    first = mine.compile(jobs.job(420), ("obj",))
    entry = shared_disk(shared).path(first.key)
    for d in (shared / "entries", entry.parent):
        st = os.stat(d)
        assert stat.S_IMODE(st.st_mode) == 0o2770 and st.st_gid == os.stat(shared).st_gid
    assert stat.S_IMODE(os.stat(entry).st_mode) == 0o660
    private = DiskTier(tmp_path / "private").path(first.key)
    assert stat.S_IMODE(os.stat(private.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o600

    out = run_as_another_user(_MEMBER, str(shared), groups=(TEAM_GID,))
    assert json.loads(out) == {"origin": "shared", "same": True}
    again = Cache(None, shared=shared_disk(shared), secret=SECRET, compiler=compile_job).compile(jobs.job(421), ("obj",))
    assert again.origin == "shared" and jobs.run(again, 421) == pytest.approx(jobs.expected(421), rel=1e-12)


def test_gpuc_serve_never_uses_a_world_writable_cache_dir_a_second_user_filled(public, tmp_path):
    directory = public / "service-cache"
    directory.mkdir()
    os.chmod(directory, 0o777)
    variant = 430
    job, _ = parse_request(json.loads(json.dumps(make_request(jobs.job(variant), ("obj",)))))
    document = keys.key_document(job)  # the key the service's workers look the job up by
    key = keys.digest(document)
    evil = Cache(compiler=compile_job).compile(evil_job(variant), ("obj",))
    data = Entry(key, document, dict(evil.artifacts), dict(evil.meta)).encode()
    as_another_user(lambda: DiskTier(directory).put(key, data))
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    url, proc = start_service(directory, "--token-file", str(token_file), env={"GPUC_CACHE_SECRET": SECRET.decode()})
    try:
        res = ServiceClient(url, token=TOKEN, secret=SECRET).compile(jobs.job(variant), ("obj",))
        assert jobs.run(res, variant) == pytest.approx(jobs.expected(variant), rel=1e-12)
    finally:
        stop(proc)
    out = proc.stdout.read() if proc.stdout else ""
    owners = {p.lstat().st_uid for p in directory.rglob("*")}
    assert owners == {65534}  # nothing of the service's was written there
    assert "is not used: others can write to it" in out and "cache memory only" in out


_MEMO_VICTIM = """
import sys
sys.stdin.readline()  # the attacker plants its links once this process's id is known
from gpucompiler.identity import codeprint
print(codeprint.code_digest("gpucompiler"))
"""


def test_a_refused_cache_dir_gets_no_code_digest_memo_through_a_planted_link(public, tmp_path):
    directory = public / "cache"
    directory.mkdir()
    os.chmod(directory, 0o777)
    victim_file = tmp_path / "victim.txt"
    victim_file.write_text("the victim's data\n")
    env = {**os.environ, "GPUC_CACHE_DIR": str(directory), "PYTHONPATH": str(ROOT)}
    env.pop("GPUC_CACHE", None)
    proc = subprocess.Popen([sys.executable, "-c", _MEMO_VICTIM], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    root = os.path.dirname(gpucompiler.__file__)
    memo = directory / "code" / f"gpucompiler-{hashlib.sha256(os.path.abspath(root).encode()).hexdigest()[:16]}.json"

    def plant():
        memo.parent.mkdir(mode=0o777)
        os.symlink(victim_file, f"{memo}.{proc.pid}.tmp")  # the name the memo was written through

    try:
        as_another_user(plant)
    finally:
        out, err = proc.communicate("go\n", timeout=120)
    assert proc.returncode == 0, err
    assert len(out.strip()) == 64
    assert victim_file.read_text() == "the victim's data\n"
    assert not memo.exists()  # no memo kept in a directory another user can write


@pytest.mark.parametrize("planted", ["entries-dir-link", "entry-file-link"])
def test_a_publish_never_writes_through_a_planted_link(public, tmp_path, planted):
    victim_dir = tmp_path / "project"
    victim_dir.mkdir()
    victim_file = victim_dir / "main.py"
    victim_file.write_text("print('mine')\n")
    shared = public / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    variant = 440
    key = keys.digest(keys.key_document(jobs.job(variant)))

    def plant():
        if planted == "entries-dir-link":
            os.symlink(victim_dir, shared / "entries")
        else:
            (shared / "entries" / key[:2]).mkdir(parents=True, mode=0o777)
            os.chmod(shared / "entries", 0o777)
            os.symlink(victim_file, shared / "entries" / key[:2] / key)

    as_another_user(plant)
    cache = Cache(None, shared=shared_disk(shared), secret=SECRET, compiler=compile_job)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always", CacheWarning)
        res = cache.compile(jobs.job(variant), ("obj",))
    assert jobs.run(res, variant) == pytest.approx(jobs.expected(variant), rel=1e-12)
    assert sorted(p.name for p in victim_dir.iterdir()) == ["main.py"]  # nothing written into it
    assert victim_file.read_text() == "print('mine')\n"
    if planted == "entry-file-link":  # the link was replaced by the signed entry, not written through
        again = Cache(None, shared=shared_disk(shared), secret=SECRET, compiler=compile_job).compile(
            jobs.job(variant), ("obj",))
        assert again.origin == "shared" and not (shared / "entries" / key[:2] / key).is_symlink()


def test_gpuc_serve_writes_no_generated_token_into_a_runtime_directory_another_user_controls(public, tmp_path):
    runtime = public / "run"
    runtime.mkdir()
    os.chmod(runtime, 0o777)

    def plant():  # the directory the token would go to, made by the other user
        (runtime / "gpucompiler").mkdir(mode=0o777)
        os.chmod(runtime / "gpucompiler", 0o777)

    as_another_user(plant)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "PYTHONPATH": str(ROOT)}
    env.pop("GPUC_SERVICE_TOKEN", None)
    proc = subprocess.run([sys.executable, "-m", "gpucompiler", "serve", "--port", "0", "--cache-dir",
                           str(tmp_path / "c")], env=env, capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert proc.returncode != 0 and "--token-file" in proc.stderr and "Traceback" not in proc.stderr
    assert list((runtime / "gpucompiler").iterdir()) == []
