"""The checks every differentiated case goes through (shared by the test files)."""

from __future__ import annotations

import re

import numpy as np

from enzyme_harness import Case, Entry, assert_close, central_fd, differentiated, fd_tolerance, library
from gpucompiler.llvm.binding import parse_ir

_MARKER_CALL = re.compile(r"call [^\n]*@__enzyme_(autodiff|fwddiff|augmentfwd|reverse)\w*\(")


def check_output_module(program: str, level: str) -> None:
    """The differentiated module verifies under LLVM and no marker call is left."""
    out = differentiated(program, level)
    parse_ir(out)  # verifies
    left = _MARKER_CALL.findall(out)
    assert not left, f"{program}.{level}: marker calls left in the output: {left}"


def check_reverse(case: Case, level: str) -> None:
    """Reverse-mode gradient against analytic values and central finite differences."""
    entry = Entry(library(case.program, level), case)
    for n in case.ns():
        x = case.sample(n)
        g = entry.grad(x)
        assert np.all(np.isfinite(g)), f"{case.id} n={n}: non-finite gradient {g}"
        if case.analytic is not None:
            assert_close(g, case.analytic(x.astype("f8")), case.rtol, f"{case.id} n={n}: analytic")
        mask = case.inactive(n) if case.inactive else np.zeros(n, bool)
        if case.fd:
            fd = np.where(mask, 0.0, central_fd(entry.primal, x, mask))
            assert_close(g, fd, fd_tolerance(case), f"{case.id} n={n}: finite differences")
        assert np.all(g[mask] == 0.0), f"{case.id} n={n}: constant inputs got a gradient"
        again = entry.grad(x)
        np.testing.assert_array_equal(again, g, err_msg=f"{case.id} n={n}: a second call differs")


def check_forward(case: Case, level: str) -> None:
    """Forward-mode tangent along a random direction = reverse gradient . direction,
    and = the finite-difference directional derivative of the primal."""
    entry = Entry(library(case.program, level), case)
    for n in case.ns():
        x = case.sample(n)
        v = case.sample(n, salt=1) - case.sample(n, salt=2)
        t = entry.fwd(x, v)
        g = entry.grad(x)
        tol = 1e-4 if case.dtype == "f4" else 1e-9
        scale = float(np.abs(g) @ np.abs(v.astype("f8"))) + 1e-300
        assert abs(t - g @ v.astype("f8")) <= tol * max(1.0, scale), \
            f"{case.id} n={n}: forward {t!r} != reverse.v {g @ v!r}"
        if case.fd:
            mask = case.inactive(n) if case.inactive else np.zeros(n, bool)
            vv = np.where(mask, 0.0, v.astype("f8"))
            eps = np.finfo(case.dtype).eps ** (1 / 3)
            fd = (entry.primal((x + eps * vv).astype(case.dtype))
                  - entry.primal((x - eps * vv).astype(case.dtype))) / (2 * eps)
            assert abs(t - fd) <= fd_tolerance(case) * max(1.0, abs(fd), scale), \
                f"{case.id} n={n}: forward {t!r} != finite differences {fd!r}"
