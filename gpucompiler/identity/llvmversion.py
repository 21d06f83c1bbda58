"""The version of the LLVM that llvmlite links, for job keys, without loading llvmlite's library.

Loading ``libllvmlite`` (what ``import llvmlite.binding`` does) costs ~20 ms of a fresh process, which a
GPU kernel's cache hit needs for nothing else: its PTX goes to the driver. The version is
therefore kept in the cache directory (``code/llvm-version-<path digest>.json``, beside the code
digests' memos of :mod:`.codeprint`) with the stat of the library file (size, modification and change
times, inode): a process that finds the same file reads the version there. A reinstalled llvmlite is a
new file (pip writes one): its version is asked of llvmlite, as it is without a private cache
directory or without the library file where llvmlite's binding loads it from, and the memo is
written again. The value is :func:`gpucompiler.llvm.binding.llvm_version`'s, so the keys are the same
either way.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re

from llvmlite.utils import get_library_name

from .codeprint import memo_path, publish, read_memo, stat_row

_VERSION = re.compile(r"\d+(?:\.\d+)*")


def library_file() -> str | None:
    """The shared library llvmlite's binding loads (``llvmlite/binding/libllvmlite.so``), found without
    importing the binding; None where there is no such file."""
    spec = importlib.util.find_spec("llvmlite.binding")
    locations = spec.submodule_search_locations if spec is not None else None
    if not locations:
        return None
    path = os.path.join(locations[0], get_library_name())
    return path if os.path.isfile(path) else None


@functools.cache
def llvm_version() -> str:
    """The version of the LLVM that llvmlite links, e.g. ``"22.1.0"``: the memo's when it describes the
    library file, else asked of llvmlite (and memoised); once per process."""
    library = library_file()
    stat = stat_row(library) if library is not None else None
    memo_file = memo_path("llvm-version", library) if library is not None and stat is not None else None
    if memo_file is not None:
        memo = read_memo(memo_file)
        version = memo.get("version") if memo is not None else None
        if (memo is not None and memo.get("library") == library and memo.get("stat") == stat
                and isinstance(version, str) and _VERSION.fullmatch(version)):
            return version
    from ..llvm.binding import llvm_version as asked  # import time: llvmlite's library (~20 ms), without a memo

    version = asked()
    if memo_file is not None and library is not None and stat_row(library) == stat:  # not replaced meanwhile
        publish(memo_file, json.dumps({"library": library, "stat": stat, "version": version}))
    return version
