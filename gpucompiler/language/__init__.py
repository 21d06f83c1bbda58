"""The language the compiler compiles: its rules for Python, ``math`` and NumPy.

* :mod:`.python`: numbers, tuples, arrays' indexing, records, lists and dicts,
  builtins, keyword calls, ``print``/``assert``, ``prange`` regions, Numba's
  typed containers;
* :mod:`.math`: the ``math`` module (LLVM intrinsics or libm; a target's device
  library through its overlay);
* :mod:`.numpy`: arrays the compiled code owns, expressions, ufuncs,
  constructors, reductions, views, casts, joins; :mod:`.numpy.linalg`,
  :mod:`.numpy.random`, :mod:`.numpy.sort`.

Importing the package registers the base rule set (:data:`.python.numbers.base`).
The kernel language (thread indices, barriers, atomics) is :mod:`gpucompiler.device`.
"""

# NumPy's functions first: their call handlers claim keyword calls before the constructors' refuse the rest
from .numpy import arrayexpr, npcast, npcumul, npjoin, npmethods, npnonzero, reductions, selection, ufuncs  # noqa: F401
from .numpy.sort import npsort, npsorted  # noqa: F401
from .numpy.linalg import blas, nplinalg  # noqa: F401  (np.linalg; the BLAS and LAPACK intrinsics)
from .numpy.random import nprandom, nprandomstate  # noqa: F401  (np.random: its handler and its state's intrinsics)
from .python import dicts  # noqa: F401  (compiled lists and dicts, Numba's spellings)
from .numpy import fancy  # noqa: F401
from .python import lists, numbatyped  # noqa: F401
from .python import complexes, containers, numbers, output, parallel, pyfuncs, records  # noqa: F401
from .numpy import creation, views  # noqa: F401
from .math import mathlib  # noqa: F401
