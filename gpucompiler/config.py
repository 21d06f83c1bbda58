"""Compiler configuration: frozen, hashable, part of every job key."""

from __future__ import annotations

from typing import Any
from collections.abc import Mapping

import attrs

from .errors import ConfigError, ErrorModel
from .targets import Target


_FRONTEND_FIELDS = ("python_abi", "boundscheck", "error_model")


def _params(value: Mapping[str, Any] | tuple | None) -> tuple[tuple[str, Any], ...]:
    if value is None:
        return ()
    items = value.items() if isinstance(value, Mapping) else value
    params = tuple(sorted((str(k), v) for k, v in items))
    for k, _ in params:
        if k in _FRONTEND_FIELDS:
            raise ConfigError(f"{k!r} is a frontend option, not a param: pass "
                              f"CompilerConfig(..., frontend=FrontendOptions({k}=...))")
    return params


def _plugins(value) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    return tuple(sorted(set(value)))


def _opt_level(value: int) -> int:
    if value not in (0, 1, 2, 3):
        raise ConfigError(f"opt_level must be 0, 1, 2 or 3, got {value!r}")
    return value


@attrs.frozen
class FrontendOptions:
    """How the Python frontend compiles a function: part of the job key (plugin settings stay in
    :attr:`CompilerConfig.params`)."""

    python_abi: bool = False
    """the entry is called from Python: errors set the Python exception, a wrapper takes Python's arguments"""
    boundscheck: bool = False
    """check every array index (an error under the Python ABI and in the emulation; a trap on the GPU)"""
    error_model: ErrorModel = attrs.field(default=ErrorModel.PYTHON,
                                          validator=attrs.validators.instance_of(ErrorModel))
    """what math errors do (:class:`~gpucompiler.errors.ErrorModel`)"""


@attrs.frozen
class CompilerConfig:
    """How to compile: the target plus everything that is not the source.

    ``plugins`` names the plugins enabled for this job (entry points of the
    group ``gpucompiler.plugins``); their names and versions enter the job
    key. ``frontend``: how Python source is compiled; ``params`` a mapping of
    plugin settings (``enzyme_atomic``, ``loader_symbols``...), stored sorted.
    """

    target: Target = attrs.field(validator=attrs.validators.instance_of(Target))
    params: tuple[tuple[str, Any], ...] = attrs.field(default=(), converter=_params)
    frontend: FrontendOptions = attrs.field(factory=FrontendOptions,
                                            validator=attrs.validators.instance_of(FrontendOptions))
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
