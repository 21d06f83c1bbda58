"""``gpuc serve``: the cache-backed compile service on loopback.

    gpuc serve                             127.0.0.1:8765, 2 workers, the default cache directory
    gpuc serve --port 9000 --workers 4 --token-file token.txt --max-request-mb 8 --timeout 60
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ConfigError
from ..settings import CacheSettings


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "serve", help="run the cache-backed compile service",
        description="Serve POST /compile (serialisable jobs), GET /health and GET /stats over HTTP.")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1; anything else needs --allow-remote)")
    parser.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--workers", type=int, default=2, help="compile worker processes (default 2)")
    parser.add_argument("--token-file", type=Path,
                        help="require 'Authorization: Bearer <token>' (token read from this file; "
                             "GPUC_SERVICE_TOKEN works too)")
    parser.add_argument("--max-request-mb", type=float, default=16.0, help="largest request body (MiB)")
    parser.add_argument("--timeout", type=float, default=120.0, help="longest compile a request waits for (s)")
    parser.add_argument("--cache-dir", help="disk tier (default: GPUC_CACHE_DIR or the per-user cache)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn
    except ImportError:
        raise ConfigError("gpuc serve needs starlette and uvicorn: pip install 'gpucompiler[service]'") from None
    from ..service.app import ServiceConfig, create_app

    if args.host not in ("127.0.0.1", "localhost", "::1") and not args.allow_remote:
        raise ConfigError(f"--host {args.host} is not loopback; pass --allow-remote to serve other machines "
                          "(and set a token)")
    settings = CacheSettings.from_env()
    token = args.token_file.read_text().strip() if args.token_file else settings.service_token
    config = ServiceConfig(cache_dir=args.cache_dir or (str(settings.directory) if settings.directory else None),
                           max_cache_bytes=settings.max_bytes, redis_url=settings.redis_url,
                           redis_tls=settings.redis_tls, secret=settings.secret,
                           workers=args.workers, token=token or None,
                           max_request_bytes=int(args.max_request_mb * (1 << 20)), timeout_s=args.timeout)
    print(f"gpuc serve: http://{args.host}:{args.port} ({args.workers} workers, cache "
          f"{config.cache_dir or 'memory only'}{', redis' if config.redis_url else ''}"
          f"{', token required' if token else ''})", flush=True)
    uvicorn.run(create_app(config), host=args.host, port=args.port, log_level="warning",
                timeout_keep_alive=30)
    return 0
