"""The base rule sets: numbers, ``math`` (with the PTX overlay), tuples and arrays, NumPy."""

# NumPy's functions first: their call handlers claim keyword calls before the constructors' refuse the rest
from . import arrayexpr, npcast, npcumul, npjoin, npmethods, npnonzero, npsort, npsorted, reductions, selection, ufuncs  # noqa: F401  (registration)
from . import blas, nplinalg  # noqa: F401  (np.linalg; the BLAS and LAPACK intrinsics)
from . import nprandom, nprandomstate  # noqa: F401  (np.random: its handler and its state's intrinsics)
from . import dicts, fancy, lists, numbatyped  # noqa: F401  (compiled lists and dicts, Numba's spellings)
from . import complexes, containers, creation, mathlib, numbers, output, parallel, pyfuncs, records, views  # noqa: F401
