"""``gpuc serve``: the cache-backed compile service on loopback.

    gpuc serve                             127.0.0.1:8765, 2 workers, the default cache directory,
                                           a generated token in a user-only file (printed)
    gpuc serve --port 9000 --workers 4 --token-file token.txt --max-request-mb 8 --timeout 60
    gpuc serve --no-auth                   loopback only: no token
    gpuc serve --host 0.0.0.0 --allow-remote --token-file token.txt
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
from pathlib import Path

import attrs

from ..errors import ConfigError
from ..settings import CacheSettings, is_loopback, private_directory_problem, runtime_dir


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "serve", help="run the cache-backed compile service",
        description="Serve POST /compile (serialisable jobs), GET /health and GET /stats over HTTP.")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1; anything else needs --allow-remote)")
    parser.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    parser.add_argument("--port", type=_port, default=8765)
    parser.add_argument("--workers", type=_positive(int), default=2, help="compile worker processes (default 2)")
    parser.add_argument("--token-file", type=Path,
                        help="require 'Authorization: Bearer <token>' (token read from this file; "
                             "GPUC_SERVICE_TOKEN works too)")
    parser.add_argument("--no-auth", action="store_true",
                        help="serve without a token (loopback only; by default a token is generated)")
    parser.add_argument("--max-request-mb", type=_positive(float), default=16.0, help="largest request body (MiB)")
    parser.add_argument("--timeout", type=_positive(float), default=120.0,
                        help="longest compile a request waits for (s)")
    parser.add_argument("--cache-dir", help="disk tier (default: GPUC_CACHE_DIR or the per-user cache)")
    parser.set_defaults(func=run)


def _port(text: str) -> int:
    """A TCP port number (0: any free port)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is not in 0..65535")
    return port


def _positive(kind):
    """An argparse type: a number of ``kind`` above zero (a finite one for floats)."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not 0 < value < float("inf"):
            raise argparse.ArgumentTypeError(f"{text} must be a positive number")
        return value
    return parse


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn  # optional dependency (gpucompiler[service])
    except ImportError:
        raise ConfigError("gpuc serve needs starlette and uvicorn: pip install 'gpucompiler[service]'") from None
    from ..service.app import ServiceConfig, create_app  # optional dependency (starlette)

    loopback = is_loopback(args.host)
    if not loopback and not args.allow_remote:
        raise ConfigError(f"--host {args.host} is not loopback; pass --allow-remote to serve other machines "
                          "(with --token-file)")
    settings = CacheSettings.from_env()
    try:
        token = args.token_file.read_text().strip() if args.token_file else settings.service_token
    except OSError as exc:
        raise ConfigError(f"--token-file {args.token_file}: {exc.strerror}") from None
    if args.no_auth and not loopback:
        raise ConfigError("--no-auth is for loopback only: other machines need a token (--token-file)")
    if not loopback and not token:
        raise ConfigError("--allow-remote needs a token: --token-file FILE (or GPUC_SERVICE_TOKEN)")
    sock = _listen(args.host, args.port)  # a busy port fails here, before a word is printed or a token written
    port = sock.getsockname()[1]
    generated = None
    if args.no_auth:
        token = None
    elif not token:
        token, generated = _generate_token(port)
    cache = attrs.evolve(settings, directory=Path(args.cache_dir) if args.cache_dir else settings.directory)
    config = ServiceConfig(cache=cache, workers=args.workers, token=token or None,
                           generated_token_file=str(generated) if generated else None,
                           max_request_bytes=int(args.max_request_mb * (1 << 20)), timeout_s=args.timeout,
                           loopback_hosts=loopback)
    app = create_app(config)  # checks the cache directory: one another user can write is not used (warned)
    disk = app.state.service.cache.disk
    print(f"gpuc serve: http://{args.host}:{port} ({args.workers} workers, cache "
          f"{disk.root if disk is not None else 'memory only'}{', redis' if cache.redis_url else ''}"
          f"{', token required' if token else ''})", flush=True)
    if generated is not None:
        print(f"gpuc serve: token in {generated} (clients: GPUC_SERVICE_TOKEN_FILE={generated})", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_keep_alive=30)).run(sockets=[sock])
    return 0


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (0: a free port), handed to the server; a typed error when the
    address is taken or cannot be used."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart right after a stop binds
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; another process (an earlier "
                          "gpuc serve?) has it: choose another --port, or --port 0 for any free one") from None
    return sock


def _generate_token(port: int) -> tuple[str, Path]:
    """A fresh token, written to a file only this user can read (as Jupyter does); the service
    removes it when it stops."""
    token = secrets.token_hex(24)
    directory = runtime_dir()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    problem = private_directory_problem(str(directory))
    if problem is not None:  # another user could replace the token file there
        raise ConfigError(f"cannot write the generated token into {directory}: {problem}; give --token-file FILE "
                          "(or set XDG_RUNTIME_DIR to a directory only you can write)")
    path = directory / f"serve-{port}.token"
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token, path
