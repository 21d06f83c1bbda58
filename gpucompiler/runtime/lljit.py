"""The process's ``LLJIT``, made in a background thread while a first call's modules load.

Creating it (with the host target's initialisation) costs about 1.3 ms, the
largest single step of a fresh process's first call served from the cache.
:func:`prepare` starts it in a background thread: LLVM runs without the GIL,
so it overlaps the first call's imports (the cache's, the runtime's) and the
cache lookup instead of following them. It starts after the key has asked
LLVM for the host machine: llvmlite's calls take one lock, which the creation
holds. The first load (:func:`lljit`) waits for it. A fork or the
interpreter's exit waits for it too; a failure there is raised by the load
that needs the LLJIT.
"""

from __future__ import annotations

import atexit
import os
import threading
import _thread
from typing import Any

import llvmlite.binding as llvm

from ..llvm.binding import initialize_native

_JIT: llvm.LLJIT | None = None
_pending: Any = None  # a lock the background thread holds until the LLJIT is made
_jit_lock = threading.Lock()


def _create() -> llvm.LLJIT:
    initialize_native()
    return llvm.create_lljit_compiler()


def _create_in_background(done: Any) -> None:
    global _JIT
    try:
        jit = _create()
        with _jit_lock:
            if _JIT is None:
                _JIT = jit
    except BaseException:
        pass
    finally:
        done.release()


def prepare() -> None:
    """Start creating the process's LLJIT in a background thread, if it is not made yet.

    Called when code is about to be loaded (``@jit``'s first call per signature),
    before the imports and the cache lookup that it then overlaps. A failure is
    raised by the load that needs the LLJIT, not here. (``_thread`` directly:
    ``threading``'s start-up handshake costs more than a quarter of what it overlaps.)
    """
    global _pending
    if _JIT is not None or _pending is not None:
        return
    with _jit_lock:
        if _JIT is not None or _pending is not None:
            return
        done = _thread.allocate_lock()
        done.acquire()
        try:
            _thread.start_new_thread(_create_in_background, (done,))
        except RuntimeError:  # no thread to be had: lljit() creates it when needed
            return
        _pending = done


def _wait() -> None:
    """Until the background creation, if one was started, has finished."""
    done = _pending
    if done is not None:
        done.acquire()
        done.release()


# a fork while the thread is inside LLVM would leave the child's LLVM lock held, and an
# exit would tear LLVM down under it: both wait for it (a millisecond at most)
os.register_at_fork(before=_wait)
atexit.register(_wait)


def lljit() -> llvm.LLJIT:
    """The process's LLJIT (one per process; each library is its own JIT dylib in it)."""
    global _JIT
    if _JIT is None:
        _wait()
        with _jit_lock:
            if _JIT is None:
                _JIT = _create()
    return _JIT
