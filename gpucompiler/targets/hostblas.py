# llvmlite ships no type information: its members are untyped
# pyright: reportUnknownMemberType=false, reportMissingTypeStubs=false
"""The BLAS and LAPACK NumPy ships, for the host code that calls them (``a @ b``, ``np.linalg``).

NumPy 2's wheels bundle OpenBLAS built as scipy-openblas64 (64-bit integers,
every symbol prefixed ``scipy_`` and suffixed ``64_``: ``scipy_cblas_dgemm64_``,
``scipy_LAPACKE_dgesv64_``) in ``numpy.libs/`` beside the package (Linux,
Windows) or ``numpy/.dylibs/`` (macOS); NumPy built from source against the
``scipy-openblas64`` package finds it in that package's ``lib/``. NumPy loads it
privately, so the JIT does not see its names until the library is loaded again
with ``load_library_permanently`` (the same handle: no second copy). That
happens the first time a name of it is looked up, never at start-up: compiled
code names the symbols, and a fresh process loading it from the cache resolves
them the same way. Finding no such library is a :class:`~gpucompiler.errors.ConfigError`
saying what is missing.
"""

from __future__ import annotations

import functools
import glob
import importlib.util
import os

import llvmlite.binding as llvm

from ..errors import ConfigError

PREFIX = ("scipy_cblas_", "scipy_LAPACKE_")
"""The names this library defines that compiled code calls."""
_PATTERNS = ("numpy.libs/*scipy_openblas64_*", "numpy/.dylibs/*scipy_openblas64_*", "scipy_openblas64/lib/*scipy_openblas64_*")


def provides(name: str) -> bool:
    """Whether ``name`` is one of NumPy's BLAS and LAPACK symbols."""
    return name.startswith(PREFIX)


def candidates() -> list[str]:
    """The files that may be NumPy's OpenBLAS, in the order they are tried."""
    site = set()
    for package in ("numpy", "scipy_openblas64"):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin:
            site.add(os.path.dirname(os.path.dirname(spec.origin)))
    return [path for root in sorted(site) for pattern in _PATTERNS
            for path in sorted(glob.glob(os.path.join(root, pattern))) if ".so" in path or path.endswith((".dylib", ".dll"))]


@functools.cache
def load() -> str:
    """Load NumPy's OpenBLAS into the process (once); its path. ConfigError when there is none."""
    tried = candidates()
    for path in tried:
        try:
            llvm.load_library_permanently(path)
        except RuntimeError:  # llvmlite reports a failed dlopen so
            continue
        return path
    raise ConfigError("matrix products and np.linalg in compiled code call the OpenBLAS NumPy 2 ships "
                      "(libscipy_openblas64_ in numpy.libs/ or numpy/.dylibs/), and "
                      + (f"none of {', '.join(tried)} could be loaded" if tried else
                         "there is none beside this NumPy (a NumPy built against another BLAS)")
                      + ": install NumPy's wheel (pip install numpy), or the scipy-openblas64 package")


__all__ = ["PREFIX", "provides", "candidates", "load"]
