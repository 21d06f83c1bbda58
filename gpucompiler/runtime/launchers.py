"""Which runtime loads and launches each target's kernels.

A runtime file of this package registers itself for its target class when
imported (``register_runtime(PTXTarget, CUDA)`` in :mod:`.cuda`);
:func:`runtime_for` imports the one a target names (``runtime_module``), or
else the package's modules once, and returns the runtime of a target, so ``k[grid, block, target_or_stream](...)`` launches
on any target that has one. A runtime imports its optional bindings (the
CUDA driver's, Vulkan's, HIP's) when it first launches, not when imported.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from ..core import Target
from ..errors import LaunchError


class Runtime(Protocol):
    """Loads a target's code and launches its kernels."""

    def stream_handle(self, stream: Any) -> int:
        """The handle of a stream given at launch (``k[grid, block, stream]``; None: the default one)."""
        ...

    def launch(self, kernel: Any, grid: tuple[int, int, int], block: tuple[int, int, int], hstream: int,
               args: tuple[Any, ...]) -> None:
        """Launch ``kernel`` (a :class:`gpucompiler.kernel.Kernel` compiling for this runtime's target; its
        ``compile(argtypes, target)`` gives the code) on ``grid`` x ``block`` threads."""
        ...

    def forget(self, kernel: Any) -> None:
        """Drop what was loaded for ``kernel`` (a global it read was rebound: it compiles again)."""
        ...


@runtime_checkable
class BindingRuntime(Runtime, Protocol):
    """A runtime that prepares the launch of one configuration once (the CUDA runtime does)."""

    def bind(self, kernel: Any, grid: tuple[int, int, int], block: tuple[int, int, int],
             stream: Any) -> Callable[[tuple[Any, ...]], None]:
        """``launch(args)``: :meth:`Runtime.launch` of this configuration (``stream`` as given at launch, None
        when none was), what depends only on it done here; it keeps no reference to ``stream``."""
        ...


def bound_launch(runtime: Runtime, kernel: Any, grid: tuple[int, int, int], block: tuple[int, int, int],
                 stream: Any) -> Callable[[tuple[Any, ...]], None]:
    """``launch(args)`` of ``kernel`` on ``grid``, ``block`` and ``stream`` (as given at launch) through
    ``runtime``: its own (:class:`BindingRuntime`), else its :meth:`~Runtime.launch` with the configuration
    and the stream's handle bound."""
    if isinstance(runtime, BindingRuntime):
        return runtime.bind(kernel, grid, block, stream)
    return functools.partial(runtime.launch, kernel, grid, block, runtime.stream_handle(stream))


RUNTIMES: dict[type[Target], Runtime] = {}
"""The runtime of each target class, as registered by the runtime files."""


def register_runtime(target_class: type[Target], runtime: Runtime) -> None:
    """Declare ``runtime`` the one that launches the kernels of ``target_class`` (and its subclasses)."""
    RUNTIMES[target_class] = runtime


@functools.cache
def _load_all() -> tuple[str, ...]:
    """Import every module of this package (runtimes register themselves); the import failures, described."""
    package = __name__.rpartition(".")[0]
    failures = []
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        try:
            importlib.import_module(f"{package}.{info.name}")
        except Exception as exc:  # a runtime that cannot be imported cannot launch: said when asked for
            failures.append(f"{package}.{info.name}: {type(exc).__name__}: {exc}")
    return tuple(failures)


def _registered(target: Target) -> Runtime | None:
    for cls in type(target).__mro__:
        found = RUNTIMES.get(cls)
        if found is not None:
            return found
    return None


def runtime_for(target: Target) -> Runtime:
    """The runtime that launches ``target``'s kernels (its :attr:`~gpucompiler.core.Target.runtime_module`
    imported alone when it names one); a LaunchError when none does."""
    found = _registered(target)
    if found is None and target.runtime_module:
        try:
            importlib.import_module(target.runtime_module)
        except Exception:  # said with the others' failures below
            pass
        found = _registered(target)
    if found is not None:
        return found
    failures = _load_all()
    found = _registered(target)
    if found is not None:
        return found
    detail = f" (runtimes that could not be imported: {'; '.join(failures)})" if failures else ""
    raise LaunchError(f"no runtime launches kernels for target {target.name!r}{detail}; compile with "
                      "Kernel.compile or inspect_asm, or launch on 'cpu' (the grid emulation)")
