"""What travels between a client and ``gpuc serve``: JSON, no pickle.

A request carries a *serialisable job*: the module after the front half of the
pipeline (:func:`gpucompiler.pipeline.prepare`: IR generation, ``post_irgen``,
deferred jobs linked in: plugin markers are still in it, references to the
client's process are not), the name of its entry function, the config as JSON,
the requested emit kinds and the client's plugins with their versions::

    {"protocol": 2, "nonce": "<32 random hex digits>", "ir": "...", "entry": "f", "emit": ["obj"],
     "config": {"target": {"name": "native", "cpu": "znver3", "features": "+avx2,..."},
                "params": [], "frontend": {"python_abi": true, "boundscheck": true, "error_model": "python",
                             "parallel_threads": 0, "nogil": false, "fastmath": false},
                "kernel": false, "name": null,
                "opt_level": 2, "plugins": ["mock_enzyme"], "validate": true},
     "plugins": [["mock_enzyme", "1.0", null, "<sha256 of its source>"]]}

The answer holds the artifacts (text as is, bytes in base64) and metadata,
and a MAC (:meth:`~gpucompiler.cache.trust.Signer.answer_mac`) that covers
them (the metadata with the key and origin: :func:`answer_about`) and binds them
to the request: the :func:`request_digest` of the job it compiled (SHA-256 of
the canonical JSON of every field that decides the compile) and the
client's fresh ``nonce``. The client computes both itself and refuses any
answer signed for another request: one made for another job (a token
holder's own IR) or an old one replayed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from typing import Any, TypeGuard, cast
from collections.abc import Iterable, Sequence

import attrs

from .. import plugin as gp
from ..cache.serialisable import check_serialisable
from ..cache.trust import Signer
from ..core import CompilerConfig, CompilerJob, FrontendOptions
from ..errors import ConfigError, ErrorModel, PluginMismatchError, ServiceError
from ..identity import plugin_identity
from ..pipeline import PreparedSource, prepare
from ..targets import target_classes

PROTOCOL = 2
EMIT_KINDS = ("llvm", "bc", "asm", "obj")


class RequestError(ServiceError):
    """A request the service refuses (malformed, unknown kind...); carries its HTTP status."""


# -- config <-> JSON -------------------------------------------------------------

def config_to_json(config: CompilerConfig) -> dict[str, Any]:
    """The config as JSON; the target pinned to this host (a native target's CPU and features)."""
    target = config.target.pinned()
    fields = attrs.asdict(target, recurse=False)
    fields = {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()}
    frontend = config.frontend
    return {"target": {"name": target.name, **fields}, "params": [[k, _json_value(k, v)] for k, v in config.params],
            "frontend": {"python_abi": frontend.python_abi, "boundscheck": frontend.boundscheck,
                         "error_model": frontend.error_model.value, "parallel_threads": frontend.parallel_threads,
                         "nogil": frontend.nogil, "fastmath": frontend.fastmath},
            "kernel": config.kernel, "name": config.name, "opt_level": config.opt_level,
            "plugins": list(config.plugins), "validate": config.validate}


def _is_list(value: Any) -> TypeGuard[list[Any]]:
    return isinstance(value, list)


def _is_object(value: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(value, dict)


def _json_value(key: str, value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return [_json_value(key, v) for v in cast("Sequence[Any]", value)]
    raise ConfigError(f"config param {key!r} = {value!r} cannot be sent to the compile service "
                      "(only JSON scalars and tuples of them)")


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if _is_list(value) else value


_SCALARS = {"str": str, "int": int, "bool": bool, "float": (int, float), "None": type(None)}


def _matches(value: Any, annotation: str) -> bool:
    """Whether a JSON value fits a target field's annotation (``str``, ``int | None``, ``tuple[int, int]``)."""
    for option in (a.strip() for a in annotation.split("|")):
        if option.startswith("tuple[") and isinstance(value, tuple):
            items = cast("tuple[Any, ...]", value)
            inner = [i.strip() for i in option[6:-1].split(",")]
            if len(inner) == len(items) and all(_matches(v, i) for v, i in zip(items, inner)):
                return True
        elif option in _SCALARS and isinstance(value, _SCALARS[option]) and (
                option == "bool" or not isinstance(value, bool)):
            return True
    return False


def config_from_json(data: Any) -> CompilerConfig:
    """Inverse of :func:`config_to_json`; malformed data raises :class:`RequestError` (400)."""
    try:
        target = dict(data["target"])
        cls = target_classes().get(target.pop("name"))
        if cls is None:
            raise RequestError(f"unknown target {data['target']['name']!r}; known: {', '.join(target_classes())}",
                               400, "bad_request")
        if not all(_is_list(p) and len(p) == 2 and isinstance(p[0], str) for p in data["params"]):
            raise ValueError("params must be [name, value] pairs with string names")
        config = CompilerConfig(cls(**{k: _tuples(v) for k, v in target.items()}),
                                params=tuple((k, _tuples(v)) for k, v in data["params"]),
                                frontend=_frontend_from_json(data["frontend"]),
                                kernel=bool(data["kernel"]), name=data["name"], opt_level=data["opt_level"],
                                plugins=tuple(data["plugins"]), validate=bool(data["validate"]))
        for field in attrs.fields(cls):
            value = getattr(config.target, field.name)
            if not _matches(value, str(field.type)):
                raise TypeError(f"target field {field.name!r} must be {field.type}, not {value!r}")
        hash(config)
        # JSON may send 2.0 (equal to 2, so the config's converter keeps it): not an int
        if not isinstance(config.opt_level, int) or not 0 <= config.opt_level <= 3:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"opt_level {config.opt_level!r} is not 0-3")
        return config
    except RequestError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RequestError(f"malformed config: {type(exc).__name__}: {exc}", 400, "bad_request") from None


def _frontend_from_json(data: Any) -> FrontendOptions:
    fields = {"python_abi", "boundscheck", "error_model", "parallel_threads", "nogil", "fastmath"}
    if not _is_object(data) or set(data) != fields:
        raise ValueError("frontend must be an object with " + ", ".join(sorted(fields)))
    flags = ("python_abi", "boundscheck", "nogil", "fastmath")
    if not all(isinstance(data[k], bool) for k in flags):
        raise TypeError("frontend " + ", ".join(flags) + " must be booleans")
    return FrontendOptions(python_abi=data["python_abi"], boundscheck=data["boundscheck"],
                           error_model=ErrorModel(data["error_model"]), parallel_threads=data["parallel_threads"],
                           nogil=data["nogil"], fastmath=data["fastmath"])


# -- requests -----------------------------------------------------------------------

#: deepest nesting of arrays and objects a request may have (a real one has 4)
MAX_DEPTH = 16


def parse_body(body: bytes) -> Any:
    """The JSON of a request body; not JSON, nested deeper than :data:`MAX_DEPTH`, or a string that is
    not Unicode text (a lone surrogate escape such as ``"\\ud800"``) is a 400."""
    try:
        data = json.loads(body)
    except RecursionError:
        raise RequestError(f"the body is nested too deeply (the limit is {MAX_DEPTH})", 400, "too_deep") from None
    except ValueError as exc:
        raise RequestError(f"the body is not JSON: {exc}", 400, "bad_request") from None
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (list, dict)):
            if depth > MAX_DEPTH:
                raise RequestError(f"the body is nested too deeply (the limit is {MAX_DEPTH})", 400, "too_deep")
            children = cast("Iterable[Any]", [*value, *value.values()] if isinstance(value, dict) else value)
            stack.extend((v, depth + 1) for v in children)
        elif isinstance(value, str):
            _check_text(value)
    return data


def _check_text(text: str) -> None:
    try:
        text.encode()
    except UnicodeEncodeError as exc:
        raise RequestError(f"the body holds a string that is not Unicode text: {exc.reason} "
                           f"({text[exc.start]!a} at offset {exc.start}); send the IR as UTF-8", 400,
                           "bad_request") from None


def prepared_ir(job: CompilerJob) -> str:
    """The front half of the pipeline run here (IR generation, ``post_irgen``, deferred linking)."""
    return prepare(job).text


def make_request(job: CompilerJob, emit: tuple[str, ...]) -> dict[str, Any]:
    """The request body for ``job``, with a fresh nonce; refuses IR that is not serialisable."""
    text = prepared_ir(job)
    check_serialisable(text, job.name)
    return {"protocol": PROTOCOL, "nonce": os.urandom(16).hex(), "ir": text, "entry": job.name,
            "emit": list(emit), "config": config_to_json(job.config), "plugins": plugin_identity(job.config.plugins)}


#: the fields of a request that decide what is compiled (all but the nonce)
_JOB_FIELDS = ("protocol", "ir", "entry", "emit", "config", "plugins")
_NONCE = re.compile(r"[0-9a-f]{32,128}")


def request_digest(data: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the request's job fields: what an answer is bound to.

    Both ends compute it from the same JSON values (the client from what it
    sends, the service from what it parsed), so it names exactly the job
    that was compiled; finding another request with the same digest means
    a SHA-256 collision.
    """
    job = {k: data.get(k) for k in _JOB_FIELDS}
    text = json.dumps(job, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(b"gpuc request\0" + text.encode()).hexdigest()


def binding(data: dict[str, Any]) -> tuple[str, str]:
    """``(request digest, nonce)`` of a request; a missing or malformed nonce is a 400."""
    nonce = data.get("nonce")
    if not isinstance(nonce, str) or not _NONCE.fullmatch(nonce):
        raise RequestError("'nonce' must be 32 to 128 lowercase hex digits, fresh for each request", 400,
                           "bad_request")
    return request_digest(data), nonce


def parse_request(data: Any) -> tuple[CompilerJob, tuple[str, ...]]:
    """The job and emit kinds of a request body; raises :class:`RequestError` or :class:`PluginMismatchError`."""
    if not _is_object(data):
        raise RequestError("the request body must be a JSON object", 400, "bad_request")
    if data.get("protocol") != PROTOCOL:
        raise RequestError(f"protocol {data.get('protocol')!r} is not supported; this service speaks "
                           f"{PROTOCOL}", 400, "bad_request")
    ir, entry, emit = data.get("ir"), data.get("entry"), data.get("emit")
    if not isinstance(ir, str) or not isinstance(entry, str) or not entry:
        raise RequestError("'ir' and 'entry' must be strings", 400, "bad_request")
    if not _is_list(emit) or not emit or any(k not in EMIT_KINDS for k in emit):
        raise RequestError(f"'emit' must be a non-empty list of {', '.join(EMIT_KINDS)}", 400, "bad_request")
    config = config_from_json(data.get("config"))
    check_plugins(config.plugins, data.get("plugins"))
    return CompilerJob(PreparedSource(ir, entry), config), tuple(emit)


def check_plugins(names: tuple[str, ...], claimed: Any) -> None:
    """The client's plugins must be installed here at the same versions and settings."""
    if not _is_list(claimed) or sorted(str(c[0]) for c in claimed if _is_list(c) and c) != list(names):
        raise RequestError("'plugins' must list [name, version, settings, code] of every plugin in "
                           "config.plugins", 400, "bad_request")
    installed = gp.discovered()
    for name, version, settings, code in (tuple(c[:4]) + (None,) * (4 - len(c[:4])) for c in claimed):
        have = installed.get(name)
        if have is None:
            has = ", ".join(f"{n} {p.version}" for n, p in installed.items()) or "(none)"
            raise PluginMismatchError(f"plugin {name!r} {version} is not installed on the compile service; "
                                      f"it has: {has}",
                                      409, "plugin_mismatch")
        mine = plugin_identity((name,))[0]
        if mine[1] != version or mine[2] != settings:
            raise PluginMismatchError(f"plugin {name!r}: the client has version {version} (settings "
                                      f"{settings}), the compile service {mine[1]} (settings {mine[2]}); "
                                      "install the same version on both", 409, "plugin_mismatch")
        if mine[3] != code:
            raise PluginMismatchError(f"plugin {name!r} {version}: the client's code (digest {str(code)[:12]}) "
                                      f"differs from the compile service's ({str(mine[3])[:12]}); install the "
                                      "same build on both", 409, "plugin_mismatch")


# -- answers ---------------------------------------------------------------------------

def answer_signer(secret: bytes | None, token: str | None) -> Signer | None:
    """The key of answer MACs: the deployment's secret, else one derived from the bearer token."""
    if secret:
        return Signer(secret)
    if token:
        return Signer(b"gpuc service token\0" + token.encode())
    return None


def answer_about(key: str, origin: str, meta: dict[str, Any]) -> dict[str, Any]:
    """What an answer's MAC covers beside its request and artifacts: everything else the client keeps
    (the entry's key and origin; its metadata, the plugins' reports and warnings included), so that a
    party without the secret can change none of it."""
    return {"key": key, "origin": origin, "meta": meta}


def encode_artifacts(artifacts: dict[str, str | bytes]) -> dict[str, dict[str, str]]:
    return {k: {"text": v} if isinstance(v, str) else {"base64": base64.b64encode(v).decode()}
            for k, v in artifacts.items()}


def decode_artifacts(data: dict[str, dict[str, str]]) -> dict[str, str | bytes]:
    return {k: v["text"] if "text" in v else base64.b64decode(v["base64"]) for k, v in data.items()}
