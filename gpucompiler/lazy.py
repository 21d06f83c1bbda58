"""Public names of a package loaded on first use (PEP 562), so importing a package or one of its
submodules does not import every module of the package.

A package facade declares ``_LAZY = {name: ".module"}`` (a literal: ``tests/test_layers.py``
reads it as the imports it is) and takes its module ``__getattr__`` and ``__dir__`` from
:func:`attach`::

    _LAZY = {"Interpreter": ".infer", "widen": ".lattice"}
    __getattr__, __dir__ = attach(__name__, _LAZY, globals())

A name is looked up once: its value is then a global of the package.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def attach(package: str, table: Mapping[str, str], namespace: MutableMapping[str, Any], *,
           submodules: bool = False) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` serving ``table``'s names from their modules
    (relative to ``package``); ``submodules``: any other name that is a submodule is imported, as after
    ``import package.name``."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            if (submodules and name.isidentifier() and not name.startswith("__")
                    and importlib.util.find_spec(f"{package}.{name}") is not None):
                return importlib.import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *table})

    return __getattr__, __dir__
