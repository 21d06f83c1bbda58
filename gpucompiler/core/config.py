"""Compiler configuration: frozen, hashable, part of every job key."""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar
from collections.abc import Mapping

import attrs

from ..errors import ConfigError, ErrorModel, error_model_option
from .target import Target

OptionsT = TypeVar("OptionsT", bound="PluginOptions")
GRID_EMULATION = "gpuc_grid"
"""The name of the builtin plugin that enables the CPU grid emulation's rules (:mod:`gpucompiler.device`);
:attr:`CompilerConfig.emulates_grid` asks for it."""


_FRONTEND_FIELDS = ("python_abi", "boundscheck", "error_model")


@attrs.frozen
class PluginOptions:
    """Base of a plugin's typed options (GPUCompiler.jl's ``AbstractCompilerParams``): an ``attrs.frozen``
    subclass, every field with a default, whose ``plugin`` names the plugin. Users pass instances as
    ``@jit(options=...)`` / ``@kernel(options=...)``; they travel in ``CompilerConfig.params`` under the
    plugin's name, so they are part of the job key; the plugin reads them with
    :meth:`CompilerConfig.options`."""

    plugin: ClassVar[str] = ""


def plugin_options(value: Any) -> tuple[PluginOptions, ...]:
    """``options=`` of ``@jit`` and ``@kernel`` checked: one :class:`PluginOptions` or several, at most one
    per plugin, sorted by plugin name."""
    items = (value,) if isinstance(value, PluginOptions) else tuple(value) if isinstance(value, (tuple, list)) \
        else (value,)
    for o in items:
        if not isinstance(o, PluginOptions) or not o.plugin:
            raise ConfigError(f"options must be plugin options (instances of a PluginOptions subclass naming its "
                              f"plugin, e.g. EnzymeOptions(atomic_adjoints=True)), got {o!r}")
    names = [o.plugin for o in items]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"options for plugin(s) {', '.join(twice)} given more than once")
    return tuple(sorted(items, key=lambda o: o.plugin))


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


def _threads(_instance, _attribute, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 4096:
        raise ConfigError(f"parallel_threads must be an int from 0 to 4096, got {value!r}")


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
    parallel_threads: int = attrs.field(default=0, validator=_threads)
    """``prange`` loops run on up to this many threads (0: serially, as ``range``); ``@jit(parallel=True)``"""
    nogil: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    """the Python ABI wrapper releases the GIL for the call (``@jit(nogil=True)``)"""
    fastmath: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    """floating-point instructions carry LLVM's ``fast`` flags (``@jit(fastmath=True)``)"""


@attrs.frozen
class CompilerConfig:
    """How to compile: the target plus everything that is not the source.

    ``plugins`` names the plugins enabled for this job (entry points of the
    group ``gpucompiler.plugins``); their names and versions enter the job
    key. ``frontend``: how Python source is compiled; ``params`` a mapping of
    plugin settings (``loader_symbols``; a plugin's typed :class:`PluginOptions` under
    its name, read with :meth:`options`), stored sorted.
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

    @property
    def emulates_grid(self) -> bool:
        """Whether this job compiles for the CPU grid emulation (the ``gpuc_grid`` plugin is enabled):
        host code that runs a GPU kernel's semantics (threads, atomics, a device's tape)."""
        return GRID_EMULATION in self.plugins

    def param(self, key: str, default: Any = None) -> Any:
        """The value of ``params[key]``, or ``default``."""
        for k, v in self.params:
            if k == key:
                return v
        return default

    def options(self, cls: type[OptionsT]) -> OptionsT:
        """The plugin options of class ``cls`` this job carries (``params[cls.plugin]``), else ``cls()``,
        the defaults; a value of another class there is a ConfigError."""
        value = self.param(cls.plugin)
        if value is None:
            return cls()
        if not isinstance(value, cls):
            raise ConfigError(f"params[{cls.plugin!r}] must be {cls.__qualname__} options, got {value!r}")
        return value


def _flag(_instance, attribute, value) -> None:
    if not isinstance(value, bool):
        raise ConfigError(f"jit option {attribute.name} must be True or False, got {value!r}")


@attrs.frozen
class JitOptions:
    """The options of ``@jit`` (Numba's meaning), checked: a wrong name or value is a ConfigError."""

    opt_level: int = attrs.field(default=2, converter=_opt_level)
    plugins: tuple[str, ...] = attrs.field(default=(), converter=_plugins)
    boundscheck: bool = attrs.field(default=True, validator=_flag)
    """array indices are checked (``IndexError``)"""
    error_model: ErrorModel = attrs.field(default=ErrorModel.PYTHON, converter=error_model_option)
    """math errors raise (``"python"``) or give IEEE results (``"numpy"``)"""
    parallel: bool = attrs.field(default=False, validator=_flag)
    """``prange`` loops run on threads (:class:`~gpucompiler.settings.ParallelSettings`)"""
    nogil: bool = attrs.field(default=False, validator=_flag)
    """the call releases the GIL once its arguments are unpacked"""
    fastmath: bool = attrs.field(default=False, validator=_flag)
    """LLVM's ``fast`` flags on floating-point instructions (reassociation, no NaN/inf assumed)"""
    cache: bool = attrs.field(default=True, validator=_flag)
    """keep compiled code in the on-disk cache tiers (False: this process's memory only)"""
    options: tuple[PluginOptions, ...] = attrs.field(default=(), converter=plugin_options)
    """plugins' typed options (:class:`PluginOptions`), part of the job key"""

    @classmethod
    def from_keywords(cls, options: Mapping[str, Any]) -> JitOptions:
        """The options of ``@jit(**options)``; an unknown name is a ConfigError listing the known ones."""
        known = [f.name for f in attrs.fields(cls)]
        for name in options:
            if name not in known:
                raise ConfigError(f"unknown jit option {name!r}; known: {', '.join(known)}")
        return cls(**options)

    def frontend(self, threads: int) -> FrontendOptions:
        """The frontend options of this function's jobs; ``threads``: of its parallel loops."""
        return FrontendOptions(python_abi=True, boundscheck=self.boundscheck, error_model=self.error_model,
                               parallel_threads=threads if self.parallel else 0, nogil=self.nogil,
                               fastmath=self.fastmath)
