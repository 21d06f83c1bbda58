"""Work a compile leaves for after its call returns: threads that publish an entry again, with an artifact
that only a later process reads (a native function's shared object, :mod:`gpucompiler.targets.sharedlink`).

The entry is published whole when its compile ends; the thread publishes it again under the same key,
with the same document and meta and one more artifact, encoded, signed and written atomically as any
entry: a reader sees the entry without the artifact or with it, never half of it. The process waits for
these threads before it exits (they are not daemons) and before it forks (a child gets no half-made
artifact and no lock held by a thread it does not have); :func:`wait` waits for them on demand.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

_threads: list[threading.Thread] = []
_guard = threading.Lock()


def start(work: Callable[[], None], name: str) -> None:
    """Run ``work`` on a thread of its own, waited for at exit and at fork (here, when no thread can start:
    at the interpreter's shutdown)."""
    thread = threading.Thread(target=work, name=name)  # not a daemon: the interpreter joins it at exit
    with _guard:  # started under the guard: wait() sees it alive
        _threads[:] = [t for t in _threads if t.is_alive()]
        try:
            thread.start()
        except RuntimeError:  # "can't create new thread at interpreter shutdown"
            thread = None
        else:
            _threads.append(thread)
    if thread is None:
        work()


def wait() -> None:
    """Wait until every thread :func:`start` began (and any they began) has ended."""
    me = threading.current_thread()
    while True:
        with _guard:
            pending = [t for t in _threads if t is not me and t.is_alive()]
        if not pending:
            return
        for thread in pending:
            thread.join()


def _forget() -> None:
    """In a forked child: the parent's threads are not there (wait() ran before the fork)."""
    global _guard
    _threads.clear()
    _guard = threading.Lock()


os.register_at_fork(before=wait, after_in_child=_forget)
