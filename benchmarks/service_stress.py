"""The compile service under a hostile mix: valid jobs, malformed and hostile bodies, IR that makes LLVM abort.

    python benchmarks/service_stress.py [--requests 10000] [--concurrency 32] [--json benchmarks/results/service_stress.json]

Starts ``gpuc serve`` (2 workers, a token) on a loopback port, then sends
``--requests`` requests from ``--concurrency`` concurrent clients, each
request drawn (seeded) from: valid jobs (20 variants of a loop kernel;
checked against object code compiled here and against the answer's MAC),
hostile bodies (JSON nested 50,000 deep, ``config.target.cpu`` as a list,
not JSON, wrong types, oversized, no or a wrong token) and jobs whose IR
makes LLVM abort (5 variants). Pass criteria: every valid job answered
200 with the right code, every other request a JSON error with a code and
a 4xx status (422 for the aborting ones), no 5xx, the service alive at the
end. Exit status 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpucompiler.pipeline import compile as compile_job  # noqa: E402
from gpucompiler.service.protocol import (answer_about, answer_signer, binding, decode_artifacts,  # noqa: E402
                                          make_request)
from tests.cache import aborting, jobs  # noqa: E402
from tests.cache.servers import start_service, stop  # noqa: E402

TOKEN = "stress-token-4b9e1a7c"
VALID, ABORTING = 20, 5


def aborting_job(v: int):
    job = aborting.job()
    ir = job.source.ir_text.replace("ret i32 %t", f"%u = add i32 %t, {v}\n  ret i32 %u")
    return type(job)(type(job.source)(ir, "f"), job.config)


def hostile(good: dict, limit: int) -> dict[str, tuple[bytes, dict[str, str]]]:
    """name -> (body, extra headers)."""
    def edit(path, value):
        data = json.loads(json.dumps(good))
        node = data
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = value
        return json.dumps(data).encode()

    return {
        "nested 50,000 deep": (b"[" * 50000 + b"]" * 50000, {}),
        "object nested 30 deep": (b'{"a":' * 30 + b"1" + b"}" * 30, {}),
        "config.target.cpu a list": (edit(("config", "target", "cpu"), ["znver3"]), {}),
        "config a string": (edit(("config",), "native"), {}),
        "unknown target": (edit(("config", "target", "name"), "tpu"), {}),
        "opt_level a string": (edit(("config", "opt_level"), "3"), {}),
        "emit unknown": (edit(("emit",), ["exe"]), {}),
        "ir a number": (edit(("ir",), 42), {}),
        "ir not LLVM": (edit(("ir",), "define nonsense"), {}),
        "entry missing from the IR": (edit(("entry",), "nope"), {}),
        "plugins lie": (edit(("plugins",), [["enzyme", "0.0", None, "x"]]), {}),
        "protocol 99": (edit(("protocol",), 99), {}),
        "not JSON": (b"\xff\x00{{", {}),
        "empty": (b"", {}),
        "oversized": (b" " * (limit + 1), {}),
        "no token": (json.dumps(good).encode(), {"Authorization": ""}),
        "wrong token": (json.dumps(good).encode(), {"Authorization": "Bearer nope"}),
    }


async def run(url: str, total: int, concurrency: int, seed: int, limit: int) -> dict:
    import httpx

    signer = answer_signer(None, TOKEN)
    valid = {v: json.dumps(make_request(jobs.job(7000 + v), ("obj",))).encode() for v in range(VALID)}
    expected = {v: compile_job(jobs.job(7000 + v), ("obj",)).artifacts["obj"] for v in range(VALID)}
    crashing = {v: json.dumps(make_request(aborting_job(v), ("obj",))).encode() for v in range(ABORTING)}
    bad = hostile(make_request(jobs.job(7000), ("obj",)), limit)
    rng = random.Random(seed)
    plan = []
    for _ in range(total):
        r = rng.random()
        if r < 0.6:
            plan.append(("valid", rng.randrange(VALID)))
        elif r < 0.95:
            plan.append(("hostile", rng.choice(sorted(bad))))
        else:
            plan.append(("aborting", rng.randrange(ABORTING)))
    outcome: Counter[str] = Counter()
    failures: list[str] = []
    statuses: Counter[int] = Counter()
    queue: asyncio.Queue = asyncio.Queue()
    for item in plan:
        queue.put_nowait(item)

    async def client(http: httpx.AsyncClient) -> None:
        while not queue.empty():
            kind, which = queue.get_nowait()
            headers = {"Authorization": f"Bearer {TOKEN}"}
            if kind == "valid":
                body = valid[which]
            elif kind == "aborting":
                body = crashing[which]
            else:
                body, extra = bad[which]
                headers.update(extra)
            headers = {k: v for k, v in headers.items() if v}
            r = await http.post("/compile", content=body, headers=headers)
            statuses[r.status_code] += 1
            try:
                data = r.json()
            except ValueError:
                failures.append(f"{kind} {which}: {r.status_code} not JSON: {r.text[:80]!r}")
                continue
            if kind == "valid":
                ok = r.status_code == 200
                if ok:
                    arts = decode_artifacts(data["artifacts"])
                    about = answer_about(data["key"], data["origin"], data["meta"])
                    ok = arts.get("obj") == expected[which] and data.get("mac") == signer.answer_mac(
                        *binding(json.loads(body)), arts, about)
                if not ok:
                    failures.append(f"valid {which}: {r.status_code} {str(data)[:160]}")
            elif kind == "aborting":
                if r.status_code != 422 or data.get("error") != "compiler_crashed":
                    failures.append(f"aborting {which}: {r.status_code} {str(data)[:160]}")
            elif not (400 <= r.status_code < 500 and isinstance(data, dict) and data.get("error")):
                failures.append(f"hostile {which!r}: {r.status_code} {str(data)[:160]}")
            outcome[kind] += 1

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=300) as http:
        start = time.perf_counter()
        await asyncio.gather(*[client(http) for _ in range(concurrency)])
        elapsed = time.perf_counter() - start
        health = (await http.get("/health")).json()
        stats = (await http.get("/stats", headers={"Authorization": f"Bearer {TOKEN}"})).json()
    return {"requests": total, "concurrency": concurrency, "seconds": elapsed, "requests_per_s": total / elapsed,
            "sent": dict(outcome), "statuses": {str(k): v for k, v in sorted(statuses.items())},
            "failures": failures, "alive_after": health == {"status": "ok"},
            "server": {k: stats.get(k, 0) for k in ("requests", "compiles", "hits", "deduped", "retried",
                                                      "crashed", "crash_memo", "errors")}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gpuc-stress-"))
    (tmp / "token").write_text(TOKEN)
    limit_mb = 1.0
    url, proc = start_service(tmp / "cache", "--workers", "2", "--token-file", str(tmp / "token"),
                              "--max-request-mb", str(limit_mb), "--timeout", "120")
    try:
        out = asyncio.run(run(url, args.requests, args.concurrency, args.seed, int(limit_mb * (1 << 20))))
    finally:
        stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)
    ok = not out["failures"] and out["alive_after"] and not any(s.startswith("5") for s in out["statuses"])
    out["pass"] = ok
    print(f"{out['requests']} requests, {out['concurrency']} concurrent, {out['seconds']:.1f} s "
          f"({out['requests_per_s']:.0f}/s): sent {out['sent']}")
    print(f"statuses {out['statuses']}; server {out['server']}")
    print(f"failures: {len(out['failures'])}" + "".join(f"\n  {f}" for f in out["failures"][:20]))
    print("PASS" if ok else "FAIL")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
