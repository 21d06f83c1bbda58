"""Work a compile leaves for after its call returns: threads that publish an entry again, with an artifact
that only a later process reads (a native function's shared object, :mod:`gpucompiler.targets.sharedlink`).

The entry is published whole when its compile ends; the thread publishes it again under the same key,
with the same document and meta and one more artifact, encoded, signed and written atomically as any
entry: a reader sees the entry without the artifact or with it, never half of it. The process waits for
these threads before it exits (they are not daemons) and before it forks (a child gets no half-made
artifact and no lock held by a thread it does not have); :func:`wait` waits for them on demand. Inside
:func:`held` (a ``@jit`` function's call that compiles), the threads start when the block ends: a thread
that took the GIL at its start would delay the call's last steps by up to the interpreter's switch interval.
So does a disk tier's eviction pass (:func:`after`: a listing of the whole directory, ~11 ms at 3,000 entries).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager

log = logging.getLogger("gpucompiler.cache")

_threads: list[threading.Thread] = []
_guard = threading.Lock()


class _Held(threading.local):
    queue: list[tuple[Callable[[], object], str]] | None = None
    """The work held by this thread's :func:`held` block, else None."""


_local = _Held()


@contextmanager
def held() -> Generator[None, None, None]:
    """The work :func:`start` is given on this thread inside the block starts when the outermost block ends."""
    if _local.queue is not None:  # an outer block holds it
        yield
        return
    _local.queue = []
    try:
        yield
    finally:
        queue, _local.queue = _local.queue, None
        if queue:  # one thread, the work in the order given
            start(functools.partial(_each, queue), ", ".join(name for _, name in queue))


def _each(works: list[tuple[Callable[[], object], str]]) -> None:
    for work, name in works:
        try:
            work()
        except Exception as exc:  # the next work still runs; what failed is only not done
            log.warning("%s after the call failed (%s: %s)", name, type(exc).__name__, exc)


def after(work: Callable[[], object], name: str) -> None:
    """``work`` now; inside :func:`held`, on the thread that starts when the block ends."""
    if _local.queue is not None:
        _local.queue.append((work, name))
    else:
        work()


def start(work: Callable[[], object], name: str) -> None:
    """Run ``work`` on a thread of its own, waited for at exit and at fork (here, when no thread can start:
    at the interpreter's shutdown); inside :func:`held`, when its block ends."""
    queue = _local.queue
    if queue is not None:
        queue.append((work, name))
        return
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
    queue = _local.queue
    if queue:  # the parent starts the work its block holds
        queue.clear()


os.register_at_fork(before=wait, after_in_child=_forget)
