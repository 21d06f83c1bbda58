"""CPython's ``builtins`` and ``math`` as they were when gpucompiler was imported.

The compiler's rules key on these functions (``abs``, ``min``, ``math.sin``...) and its
tables hold them (a ufunc's scalar function, a named reduction). The modules that hold
them load at the first compile, when a program may already have rebound ``builtins.abs``
or ``math.sin`` to a function of its own; a call of that name must then compile the
program's function (the value it reads), never the built-in's rule. So those modules
take the functions from here (``from ..pristine import builtins, math``), a snapshot
taken by ``import gpucompiler`` (``tests/test_imports.py`` pins it).
"""

from __future__ import annotations

import builtins as _builtins
import math as _math
from types import SimpleNamespace

builtins = SimpleNamespace(**vars(_builtins))
"""The ``builtins`` namespace as gpucompiler's import found it."""
math = SimpleNamespace(**vars(_math))
"""The ``math`` module's namespace as gpucompiler's import found it."""
