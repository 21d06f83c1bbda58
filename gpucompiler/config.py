"""Compiler configuration: frozen, hashable, part of every job key."""

from __future__ import annotations

from typing import Any
from collections.abc import Mapping

import attrs

from .errors import ConfigError
from .targets import Target


def _params(value: Mapping[str, Any] | tuple | None) -> tuple[tuple[str, Any], ...]:
    if value is None:
        return ()
    items = value.items() if isinstance(value, Mapping) else value
    return tuple(sorted((str(k), v) for k, v in items))


def _plugins(value) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    return tuple(sorted(set(value)))


def _opt_level(value: int) -> int:
    if value not in (0, 1, 2, 3):
        raise ConfigError(f"opt_level must be 0, 1, 2 or 3, got {value!r}")
    return value


@attrs.frozen
class CompilerConfig:
    """How to compile: the target plus everything that is not the source.

    ``plugins`` names the plugins enabled for this job (entry points of the
    group ``gpucompiler.plugins``); their names and versions enter the job
    key. ``params`` is a mapping of frontend/plugin settings, stored sorted.
    """

    target: Target = attrs.field(validator=attrs.validators.instance_of(Target))
    params: tuple[tuple[str, Any], ...] = attrs.field(default=(), converter=_params)
    kernel: bool = False
    name: str | None = None
    opt_level: int = attrs.field(default=2, converter=_opt_level)
    plugins: tuple[str, ...] = attrs.field(default=(), converter=_plugins)
    validate: bool = True

    def param(self, key: str, default: Any = None) -> Any:
        """The value of ``params[key]``, or ``default``."""
        for k, v in self.params:
            if k == key:
                return v
        return default
