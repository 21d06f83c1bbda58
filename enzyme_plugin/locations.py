"""Where an error of the API points: the user's call, found past the frames of the compiler and this plugin.

:func:`caller_location` finds the user's frame; :func:`user_errors` makes an API function raise the
compiler's typed errors from there, naming that line (:func:`at_call`).
"""

from __future__ import annotations

import functools
import sys

from gpucompiler import settings
from gpucompiler.errors import GPUCompilerError, SourceError, for_user

_NOT_THE_USER = ("enzyme_plugin", "gpucompiler", "torch", "jax", "jaxlib")
"""Packages whose frames stand between the user's call and an error (the autograd and JAX machinery too)."""

ENTRY = "autodiff_entry"
"""The name of the compiled entry ``autodiff`` makes from Python (an error there is located at the user's
call)."""


def caller_location() -> tuple[str, int, int] | None:
    """``(file, line, 0)`` of the innermost frame outside the compiler and this plugin: the user's call."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] in _NOT_THE_USER:
        frame = frame.f_back
    return (frame.f_code.co_filename, frame.f_lineno, 0) if frame is not None else None


def user_errors(fn, name: str = ""):
    """Raise the compiler's typed errors from ``fn`` with the caller's frame on top (the internal chain
    kept when ``GPUC_DEBUG_TRACEBACKS`` is set), naming the caller's line (:func:`at_call`) and the API
    ``name`` (default: ``fn``'s)."""
    api = name or fn.__name__

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        call = caller_location()
        try:
            return fn(*args, **kwargs)
        except GPUCompilerError as exc:
            raise for_user(at_call(exc, call, api), settings.debug_tracebacks())
    return wrapper


def at_call(exc: GPUCompilerError, call, api: str) -> GPUCompilerError:
    """``exc`` naming the user's call ``call`` (``(file, line, col)``) of ``api``: an error located nowhere or
    in generated code is located there; one located in the user's code (the differentiated function) says
    where ``api`` was called from too."""
    if call is None or getattr(exc, "_gpuc_called_at", False):
        return exc
    exc._gpuc_called_at = True  # pyright: ignore[reportAttributeAccessIssue]  (nested API calls add it once)
    filename = exc.filename if isinstance(exc, SourceError) else None
    if isinstance(exc, SourceError) and (filename is None or filename.startswith("<")):
        function = api if filename or exc.function in (ENTRY, "") else exc.function
        SourceError.__init__(exc, exc.message, call, function, exc.hint)
    elif exc.args and isinstance(exc.args[0], str):
        exc.args = (f"{exc.args[0]}\n  in {api} called at {call[0]}:{call[1]}", *exc.args[1:])
    return exc


__all__ = ["ENTRY", "at_call", "caller_location", "user_errors"]
