"""The language the compiler compiles: its rules for Python, ``math`` and NumPy.

* :mod:`.python`: numbers, tuples, arrays' indexing, records, lists and dicts,
  builtins, keyword calls, ``print``/``assert``, ``prange`` regions, Numba's
  typed containers;
* :mod:`.math`: the ``math`` module (LLVM intrinsics or libm; a target's device
  library through its overlay);
* :mod:`.numpy`: arrays the compiled code owns, expressions, ufuncs,
  constructors, reductions, views, casts, joins, structured arrays; :mod:`.numpy.linalg`,
  :mod:`.numpy.random`, :mod:`.numpy.sort`.

Importing the package registers the language's rules in :data:`.precedence.base`, the
rule set every job uses; their precedence is stated in :data:`.precedence.PRECEDENCE`,
not by the order of the imports below. The kernel language (thread indices, barriers,
atomics) is :mod:`gpucompiler.device`.
"""

from .math import mathlib  # noqa: F401  (registration, like every import below)
from .numpy import (arrayexpr, creation, fancy, npcast, npcumul, npjoin, npmatrix, npmethods,  # noqa: F401
                    npnonzero, npsearch, npstats, reductions, selection, structured, ufuncs, views)
from .numpy.linalg import blas, nplinalg  # noqa: F401
from .numpy.random import nprandom, nprandomstate  # noqa: F401
from .numpy.sort import npsort, npsorted  # noqa: F401
from .python import (complexes, containers, dicts, lists, numbatyped, numbers, output, parallel,  # noqa: F401
                     pyfuncs, records)
from .precedence import PRECEDENCE, base

__all__ = ["PRECEDENCE", "base"]
