"""Targets by name: every module of this package is a target's file, and its classes register themselves.

``parse_target("native" | "ptx" | "ptx:sm_90")`` turns a command-line
spelling into a target object (:meth:`Target.from_spelling
<gpucompiler.core.Target.from_spelling>` of the class registered under the
name before the colon).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil

from ..core.target import TARGET_CLASSES, Target
from ..errors import ConfigError, UnknownTargetError


@functools.cache
def _load_all() -> tuple[str, ...]:
    """Import every module of ``gpucompiler.targets`` (each target class registers itself when defined);
    the modules that could not be imported, described (such a target is unknown; errors naming one say why)."""
    package = __name__.rpartition(".")[0]
    failures = []
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        try:
            importlib.import_module(f"{package}.{info.name}")
        except Exception as exc:  # a target that cannot be imported is unknown: said when asked for
            failures.append(f"{package}.{info.name}: {type(exc).__name__}: {exc}")
    return tuple(failures)


def target_classes() -> dict[str, type[Target]]:
    """Every registered target class by name, in name order."""
    _load_all()
    return dict(sorted(TARGET_CLASSES.items()))


def _unknown(spec: str, known) -> UnknownTargetError:
    failures = _load_all()
    hint = "write e.g. ptx:sm_90 for compute capability 9.0"
    if failures:
        hint += f"; target modules that could not be imported: {'; '.join(failures)}"
    return UnknownTargetError(spec, known, hint=hint)


def known_targets() -> tuple[str, ...]:
    """How the command line spells every target (``native``, ``ptx``, ``ptx:sm_XY``...)."""
    return tuple(s for cls in target_classes().values() for s in (cls.spellings or (cls.name,)))


def target_class(name: str) -> type[Target]:
    """The target class registered as ``name``; an UnknownTargetError lists the known ones."""
    found = target_classes().get(name)
    if found is None:
        raise _unknown(name, tuple(target_classes()))
    return found


def parse_target(spec: str | Target) -> Target:
    """The target spelt ``spec`` (``native``, ``ptx``, ``ptx:sm_XY``..., see :func:`known_targets`)."""
    if isinstance(spec, Target):
        return spec
    name, _, arg = spec.partition(":")
    cls = target_classes().get(name)
    target = cls.from_spelling(arg) if cls is not None else None
    if target is None:
        raise _unknown(spec, known_targets())
    return target


KERNEL_DEFAULT_MODULE = "gpucompiler.targets.ptx"
"""The module of the target ``@kernel`` compiles for when none is named, imported alone for it
(``tests/targets`` checks that its class is the one registered target with ``kernel_default``)."""


def default_kernel_target() -> Target:
    """The target ``@kernel`` compiles for when none is named: the registered one that says so."""
    module = importlib.import_module(KERNEL_DEFAULT_MODULE)
    named = [cls for cls in vars(module).values()
             if isinstance(cls, type) and issubclass(cls, Target) and cls.__module__ == module.__name__
             and cls.kernel_default]
    if len(named) == 1:
        return named[0]()
    defaults = [cls for cls in target_classes().values() if cls.kernel_default]
    if len(defaults) != 1:
        failures = _load_all()
        detail = f" (target modules that could not be imported: {'; '.join(failures)})" if failures else ""
        raise ConfigError("exactly one target class must set kernel_default = True, found "
                          f"{', '.join(c.name for c in defaults) or 'none'}{detail}; name the target: "
                          "@kernel(target=...)")
    return defaults[0]()
