"""Errors at the API (a ``@jit`` call, a kernel launch, ``autodiff``) have the caller's frame on top
(were 13-27 frames of compiler internals); ``GPUC_DEBUG_TRACEBACKS=1`` keeps the internals."""

from __future__ import annotations

import inspect
import traceback

import numpy as np
import pytest

from enzyme_plugin import Active, Reverse, autodiff
from gpucompiler import device as gd, jit, kernel
from gpucompiler.errors import GPUCompilerError, TypeInferenceError


def bad(x):
    return x + "text"


def _bad_kernel(a):
    a[gd.grid(1)] = "text"


def _frames(call):
    with pytest.raises(GPUCompilerError) as info:
        call()
    return [f.name for f in traceback.extract_tb(info.tb)]


CALLS = {"jit": lambda: jit(bad)(1.0),
         "kernel": lambda: kernel(_bad_kernel)[1, 1, "cpu"](np.zeros(1)),
         "autodiff": lambda: autodiff(Reverse, bad, Active(1.0))}


@pytest.mark.parametrize("api", sorted(CALLS))
def test_the_callers_frame_is_on_top_of_a_compile_error(api, monkeypatch):
    monkeypatch.delenv("GPUC_DEBUG_TRACEBACKS", raising=False)
    frames = _frames(CALLS[api])
    assert frames[:2] == ["_frames", "<lambda>"] and len(frames) == 3  # the API's own entry, nothing below
    monkeypatch.setenv("GPUC_DEBUG_TRACEBACKS", "1")
    assert len(_frames(CALLS[api])) > 6


def sums_a_mixed_tuple(t):
    s = 0.0
    for v in t:  # the line the error names
        s += v
    return s


def test_an_error_inside_the_compilers_own_helpers_names_the_users_line():
    # iterating a tuple of mixed items raised at gpucompiler/frontend/intrinsics.py, a line of the compiler
    lines, first = inspect.getsourcelines(sums_a_mixed_tuple)
    line = first + next(k for k, text in enumerate(lines) if "the line the error names" in text)
    with pytest.raises(TypeInferenceError, match=rf"test_user_tracebacks.py:{line}: indexing tuple"):
        jit(sums_a_mixed_tuple)((1, 2.5))
