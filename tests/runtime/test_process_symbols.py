"""gpucompiler.symbols: the addresses compiled code finds by name, kept until llvmlite's library loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap


def _fresh(code: str) -> list:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GPUC_")}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True,
                         env={**environ, "GPUC_CACHE": "off"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_language_and_the_pool_share_one_slot_and_llvm_finds_it_by_name():
    """The parallel pool's slot made by the language before llvmlite's library is loaded is the one the
    runtime's pool fills and the one LLVM resolves the name to (a second slot would leave compiled code
    reading a slot nothing fills)."""
    before, language, pool, llvm = _fresh("""
        import ctypes, json, sys
        from gpucompiler.language.python import parallel
        before = "llvmlite.binding" in sys.modules
        language = parallel.pool_slot()
        from gpucompiler.runtime import threadpool
        import gpucompiler.llvm.binding
        import llvmlite.binding as llvm
        pool = ctypes.addressof(threadpool._slot())
        print(json.dumps([before, language, pool, llvm.address_of_symbol(threadpool.POOL_SYMBOL)]))
    """)
    assert before is False
    assert language == pool == llvm


def test_an_address_given_after_the_library_loaded_reaches_llvm_at_once_and_the_first_address_wins():
    first, second, kept, found, late = _fresh("""
        import ctypes, json
        import gpucompiler.llvm.binding
        import llvmlite.binding as llvm
        from gpucompiler import symbols
        a, b = ctypes.c_int64(1), ctypes.c_int64(2)
        first = symbols.provide("gpuc_test_symbol", ctypes.addressof(a))
        second = symbols.provide("gpuc_test_symbol", ctypes.addressof(b))
        print(json.dumps([ctypes.addressof(a), second, first, llvm.address_of_symbol("gpuc_test_symbol"),
                          ctypes.addressof(b)]))
    """)
    assert kept == first and second == first and found == first and late != first
