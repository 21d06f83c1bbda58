"""Run LLVM work where an abort fails that work alone: a forked child process.

LLVM reports some invalid inputs (scalable vectors on a target without
them, some PTX lowering) with ``report_fatal_error`` or a failed assertion:
the process aborts, and with it an interpreter serving other jobs.
:func:`call_in_child` runs a function returning bytes in a fork of this
process and hands its bytes back; a child killed by a signal raises
:class:`~gpucompiler.errors.CompilerCrashError` with the signal's name and
the last lines the child wrote to stderr (LLVM's own message). Only bytes
cross the pipe. A fork of a process that has LLVM loaded costs a few
milliseconds (docs/cache.md); the child inherits everything already
imported and initialised.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable

from .errors import CompilerCrashError, GPUCompilerError

#: exit status of a child whose function raised something else than a typed error
_RAISED = 70


class ChildError(GPUCompilerError):
    """A typed error raised in the child, raised again here: ``kind`` is its class name, ``module`` its
    module and ``fields`` its attributes that JSON carries (:meth:`original` makes it again)."""

    def __init__(self, kind: str, message: str, module: str = "", fields: dict[str, object] | None = None):
        self.kind, self.module, self.fields = kind, module, fields or {}
        super().__init__(message)

    def original(self) -> GPUCompilerError:
        """The error as the child raised it (its class, message and attributes), or this one where its
        class is no typed error this process has imported."""
        cls = getattr(sys.modules.get(self.module), self.kind, None)
        if not (isinstance(cls, type) and issubclass(cls, GPUCompilerError)):
            return self
        exc = cls.__new__(cls)
        Exception.__init__(exc, str(self))
        exc.__dict__.update(self.fields)
        return exc


def contained(fn: Callable[[], bytes], what: str) -> bytes:
    """``fn()`` (work that hands foreign IR to LLVM, which may abort or exit) run by :func:`call_in_child`;
    a typed error it raised is raised again as its own class (:meth:`ChildError.original`)."""
    try:
        return call_in_child(fn, what)
    except ChildError as exc:
        raise exc.original() from None


def _report(exc: GPUCompilerError) -> bytes:
    """What the child sends of a typed error: class, message, module and attributes."""
    fields: dict[str, object] = {}
    for name, value in vars(exc).items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            continue
        fields[name] = value
    return json.dumps([type(exc).__name__, str(exc), type(exc).__module__, fields]).encode()


def _internal(exc: BaseException, what: str) -> bytes:
    """A child's untyped exception as a typed error: a bug of the compiler, not of the input's author."""
    return json.dumps(["InternalError", f"internal error ({type(exc).__name__}: {exc}) while compiling {what}: "
                                        "please report it with the input"]).encode()


def call_in_child(fn: Callable[[], bytes], what: str, *, timeout: float | None = None) -> bytes:
    """``fn()`` computed in a forked child; raises :class:`CompilerCrashError` when the child dies (a
    signal, or LLVM's ``exit`` of a fatal error), :class:`ChildError` (with the message) when ``fn``
    raised a typed error or another exception (an internal error, never a traceback).

    ``timeout`` (seconds) kills a child that runs longer (a crash named ``timeout``).
    """
    with tempfile.TemporaryFile() as err:
        r, w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 0
            try:
                os.close(r)
                os.dup2(err.fileno(), 2)
                try:
                    data = b"R" + fn()
                except GPUCompilerError as exc:
                    data = b"E" + _report(exc)
                except Exception as exc:  # reported as a typed error, never a traceback
                    data = b"E" + _internal(exc, what)
                view = memoryview(data)
                while view:
                    view = view[os.write(w, view):]
            except BaseException:
                traceback.print_exc()
                code = _RAISED
            finally:
                sys.stderr.flush()
                os._exit(code)
        os.close(w)
        timer = _Killer(pid, timeout) if timeout is not None else None
        try:
            chunks: list[bytes] = []
            with os.fdopen(r, "rb") as pipe:
                while chunk := pipe.read(1 << 16):
                    chunks.append(chunk)
            _, status = os.waitpid(pid, 0)
        finally:
            if timer is not None:
                timer.cancel()
        data = b"".join(chunks)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            if data[:1] == b"E":
                raise ChildError(*json.loads(data[1:]))
            return data[1:]
        err.seek(0)
        tail = err.read()[-4000:].decode(errors="replace").strip()
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            name = "timeout" if timer is not None and timer.fired else signal.Signals(sig).name
            raise CompilerCrashError(what, name, _llvm_lines(tail))
        raise CompilerCrashError(what, f"exit status {os.WEXITSTATUS(status)}", _llvm_lines(tail))


def _llvm_lines(tail: str) -> str:
    """LLVM's own message when it printed one, else the end of what the child wrote."""
    lines = [ln for ln in tail.splitlines() if ln.strip()]
    llvm = [ln for ln in lines if ln.startswith("LLVM ERROR") or "Assertion" in ln]
    return "\n".join(llvm[-3:] or lines[-3:])


class _Killer:
    """Kill ``pid`` after ``seconds`` unless cancelled."""

    def __init__(self, pid: int, seconds: float):
        self.fired = False
        self._pid = pid
        self._timer = threading.Timer(seconds, self._kill)
        self._timer.daemon = True
        self._timer.start()

    def _kill(self) -> None:
        self.fired = True
        try:
            os.kill(self._pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def cancel(self) -> None:
        self._timer.cancel()


__all__ = ["ChildError", "call_in_child", "contained"]
