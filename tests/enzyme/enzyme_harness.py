"""Harness of the clang corpus: fixtures, differentiation, loading, the cases.

Every program in ``c/`` exposes ``NAME_primal(x, n)``, ``NAME_grad(x, dx, n)``
and ``NAME_fwd(x, vx, n)`` (see ``c/enzyme.h``); a :class:`Case` says how to
sample its inputs and what its gradient should be. Finite differences run the
primal natively through the JIT on the differentiated module.
"""

from __future__ import annotations

import ctypes
import functools
import math
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable

import numpy as np

from enzyme_corpus import LEVELS, MATH_OPS

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"


def fixture_path(name: str, level: str) -> Path:
    return FIXTURES / f"{name}.{level}.ll"


def fixture_text(name: str, level: str) -> str:
    return fixture_path(name, level).read_text()


@functools.cache
def _differentiate(name: str, level: str) -> tuple[str | None, BaseException | None]:
    import enzyme_plugin

    try:
        return enzyme_plugin.differentiate(fixture_text(name, level)), None
    except Exception as exc:  # re-raised by differentiated(), once per test
        return None, exc


def differentiated(name: str, level: str) -> str:
    """The fixture after ``enzyme_plugin.differentiate`` (computed once per session)."""
    text, exc = _differentiate(name, level)
    if exc is not None:
        raise exc
    return text


@functools.cache
def library(name: str, level: str):
    """The differentiated fixture loaded into this process."""
    from gpucompiler.runtime import CPULibrary

    return CPULibrary.from_ir(differentiated(name, level))


_DECL = re.compile(r"^declare (.*?) ?@(__enzyme_\w+)\((.*)\)[^\n]*$", re.M)


def stub_enzyme(text: str) -> str:
    """``text`` with every ``__enzyme_*`` declaration defined as a stub returning
    zero: the primal entry points of an undifferentiated fixture then link, so
    the corpus can be checked without the engine. (Stubs live in the module
    only: nothing is registered process-wide.)"""

    def define(m: re.Match) -> str:
        prefix, name, params = m.groups()
        ret = prefix[prefix.rindex("{"):] if prefix.endswith("}") else prefix.split()[-1]
        if ret == "void":
            body = "ret void"
        else:
            body = f"ret {ret} zeroinitializer"
        return f"define {ret} @{name}({params}) {{\n  {body}\n}}"

    return _DECL.sub(define, text)


@functools.cache
def primal_library(name: str, level: str):
    """The *undifferentiated* fixture with stubbed markers (primal entries only)."""
    from gpucompiler.runtime import CPULibrary

    return CPULibrary.from_ir(stub_enzyme(fixture_text(name, level)))


# --------------------------------------------------------------------------- cases

Grad = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Case:
    """One differentiated entry point of a program."""

    program: str
    """fixture name (``arrays``, ``math_sqrt``...)"""
    name: str
    """entry prefix: ``NAME_primal`` / ``NAME_grad`` / ``NAME_fwd``"""
    sizes: tuple[int, ...] = (2, 9, 40)
    """array lengths n to test"""
    domain: tuple[float, float] | tuple[tuple[float, float], ...] = (-1.0, 1.0)
    """uniform sampling interval, or one interval per index (length fixes n)"""
    dtype: str = "f8"
    rtol: float = 1e-6
    analytic: Grad | None = None
    """exact gradient as a function of x"""
    fd: bool = True
    """compare with finite differences of the primal (False: custom rules)"""
    inactive: Callable[[int], np.ndarray] | None = field(default=None, compare=False)
    """n -> boolean mask of constant inputs whose gradient must stay 0"""

    @property
    def id(self) -> str:
        return f"{self.program}:{self.name}"

    def sample(self, n: int, salt: int = 0) -> np.ndarray:
        rng = np.random.default_rng(zlib.crc32(f"{self.id}/{n}/{salt}".encode()))
        if isinstance(self.domain[0], tuple):
            lo, hi = np.array(self.domain).T
            return (lo + (hi - lo) * rng.random(len(lo))).astype(self.dtype)
        lo, hi = self.domain
        return (lo + (hi - lo) * rng.random(n)).astype(self.dtype)

    def ns(self) -> tuple[int, ...]:
        return (len(self.domain),) if isinstance(self.domain[0], tuple) else self.sizes


class Entry:
    """The three ctypes entry points of a case in a loaded library."""

    def __init__(self, lib, case: Case, with_derivatives: bool = True):
        self.case = case
        c = ctypes.c_double if case.dtype == "f8" else ctypes.c_float
        p = ctypes.POINTER(c)
        self._p = p
        self._primal = lib.function(f"{case.name}_primal", c, p, ctypes.c_int)
        if with_derivatives:
            self._grad = lib.function(f"{case.name}_grad", None, p, p, ctypes.c_int)
            self._fwd = lib.function(f"{case.name}_fwd", c, p, p, ctypes.c_int)

    def _ptr(self, a: np.ndarray):
        return a.ctypes.data_as(self._p)

    def primal(self, x: np.ndarray) -> float:
        x = np.array(x, dtype=self.case.dtype)  # the primal may overwrite its input
        return float(self._primal(self._ptr(x), len(x)))

    def grad(self, x: np.ndarray) -> np.ndarray:
        x = np.array(x, dtype=self.case.dtype)
        dx = np.zeros_like(x)
        self._grad(self._ptr(x), self._ptr(dx), len(x))
        return dx.astype("f8")

    def fwd(self, x: np.ndarray, v: np.ndarray) -> float:
        x = np.array(x, dtype=self.case.dtype)
        v = np.array(v, dtype=self.case.dtype)
        return float(self._fwd(self._ptr(x), self._ptr(v), len(x)))


def central_fd(f: Callable[[np.ndarray], float], x: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Central finite differences of f at x (float64 steps sized for the dtype)."""
    eps = np.finfo(x.dtype).eps
    g = np.zeros(len(x))
    for i in range(len(x)):
        if mask is not None and mask[i]:
            continue
        h = eps ** (1 / 3) * max(1.0, abs(float(x[i])))
        xp, xm = x.astype("f8"), x.astype("f8")
        xp[i] += h
        xm[i] -= h
        num = f(xp.astype(x.dtype)) - f(xm.astype(x.dtype))
        g[i] = num / (float(xp.astype(x.dtype)[i]) - float(xm.astype(x.dtype)[i]))
    return g


def fd_tolerance(case: Case) -> float:
    return 2e-2 if case.dtype == "f4" else max(case.rtol, 2e-6)


def assert_close(actual: np.ndarray, expected: np.ndarray, rtol: float, what: str) -> None:
    scale = max(1.0, float(np.max(np.abs(expected))) if np.size(expected) else 1.0)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale, err_msg=what)


# --------------------------------------------------------------------------- analytic gradients


def _dot(x):
    h = len(x) // 2
    g = np.zeros(len(x))
    g[:h], g[h:2 * h] = x[h:2 * h], x[:h]
    return g


def _horner(x):
    c, t = x[:-1], x[-1]
    g = np.zeros(len(x))
    g[:-1] = t ** np.arange(len(c))
    g[-1] = sum(i * c[i] * t ** (i - 1) for i in range(1, len(c)))
    return g


def _memops(x):
    n = len(x)
    perm = (3 * np.arange(n)) % n
    g = 2 * x * x[perm]
    np.add.at(g, perm, x * x)
    return g


def _grow(x):
    s2 = x * x
    g = np.zeros(len(x))
    g[1:] += 2 * x[1:] * s2[:-1]
    g[:-1] += 2 * x[:-1] * s2[1:]
    return g


def _piecewise(x):
    def d(t):
        if t < 0.4:
            return 3 * t * t
        if t < 0.7:
            return 3 * math.cos(3 * t) + 1
        if t < 1.0:
            return math.exp(t - 0.7) * (1 + t)
        return 0.5 / math.sqrt(t)
    return np.array([d(t) for t in x])


def _until(x):
    s, g = 0.0, np.zeros(len(x))
    for i, t in enumerate(x):
        s += t * t * (1 + i)
        g[i] = 2 * t * (1 + i)
        if s > 2.0:
            break
    return g


def _wsum(active_w):
    def grad(x):
        n = len(x)
        h = n // 2
        w, v, b = x[:h - 1], x[h:2 * h - 1], x[-1]
        g = np.zeros(n)
        if active_w:
            g[:h - 1] = v * v
        g[h:2 * h - 1] = 2 * w * v
        g[-1] = 2 * b
        return g
    return grad


def _wsum_const_w(n):
    mask = np.zeros(n, bool)
    mask[: n // 2] = True
    return mask


def _heat(x, steps=20):
    n = len(x)
    a = np.eye(n)
    for i in range(1, n - 1):
        a[i, i - 1:i + 2] = (0.25, 0.5, 0.25)
    m = np.linalg.matrix_power(a, steps)
    w = 1.0 + 0.01 * np.arange(n)
    return 2 * m.T @ (w * (m @ x))


def _lse(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def _punned(x):
    n = len(x)
    g = np.zeros(n)
    for i in range(n):
        j = (3 * i) % n
        g[j] += 2 * x[j] * (i + 1)
    return g


def _math(op: str) -> Grad:
    fn = MATH_OPS[op][1]
    return lambda x: np.array(fn(float(x[0]), float(x[1])))


_A = ((0.3, 0.9), (1.1, 1.7))

CASES: list[Case] = [
    Case("arrays", "dot", analytic=_dot),
    Case("arrays", "horner", sizes=(2, 5, 12), analytic=_horner),
    Case("arrays", "overwrite", sizes=(1, 4, 17), rtol=1e-5),
    Case("arrays", "memops", sizes=(1, 6, 20), analytic=_memops),
    Case("realloc", "grow", sizes=(1, 2, 5, 33), analytic=_grow),
    Case("control", "branchy", sizes=(4, 5, 6, 7, 30), domain=(0.0, 1.2)),
    Case("control", "piecewise", sizes=(12,), domain=(0.2, 1.3), analytic=_piecewise),
    Case("control", "nested", sizes=(1, 7, 20)),
    Case("control", "until", sizes=(3, 8, 20), analytic=_until),
    Case("control", "whiles", domain=((0.5, 4.0), (-1.0, 2.0)),
         analytic=lambda x: np.array([0.5 / math.sqrt(x[0]), math.exp(x[1])])),
    Case("calls", "calls", sizes=(1, 5, 30), domain=(-0.8, 0.8)),
    Case("calls", "recursion", domain=((0.5, 1.2), (0.2, 0.9)), rtol=1e-5),
    Case("calls_g", "calls", sizes=(1, 5, 30), domain=(-0.8, 0.8)),
    Case("activity", "implicit", sizes=(4, 10), analytic=_wsum(True)),
    Case("activity", "consts", sizes=(4, 10), analytic=_wsum(False), inactive=_wsum_const_w),
    Case("activity", "noneed", sizes=(1, 9),
         analytic=lambda x: (np.arange(len(x)) + 1) * (2 * x * np.sin(x) + x * x * np.cos(x))),
    Case("structret", "out2", domain=((-1.0, 1.0), (-1.0, 1.0)),
         analytic=lambda x: np.array([math.cos(x[0]) * x[1] + 2 * x[0] * x[1], math.sin(x[0]) + x[0] ** 2])),
    Case("structret", "out3", domain=((-1.0, 1.0), (-1.0, 1.0), (0.5, 1.5)),
         analytic=lambda x: np.array([x[1] * x[2] + math.exp(x[0] - x[2]),
                                      x[0] * x[2] + 1 / x[2],
                                      x[0] * x[1] - math.exp(x[0] - x[2]) - x[1] / x[2] ** 2])),
    Case("custom", "custom", sizes=(1, 7), domain=(-2.0, 2.0), fd=False,
         analytic=lambda x: 2 * np.round(4 * x) / 4 + 1),
    Case("custom_g", "custom", sizes=(1, 7), domain=(-2.0, 2.0), fd=False,
         analytic=lambda x: 2 * np.round(4 * x) / 4 + 1),
    Case("custom_float", "fcustom", sizes=(1, 2, 7), domain=(-2.0, 2.0), dtype="f4", rtol=1e-5, fd=False,
         analytic=lambda x: 3 * x + np.roll(x, -1) + 2 * np.roll(x, 1)),
    Case("function_like", "like", sizes=(1, 6), domain=(0.3, 0.9), fd=False,
         analytic=lambda x: (np.arange(len(x)) + 1) / (1 + x)),
    Case("globals", "globals", sizes=(1, 5, 30)),
    Case("split_ret", "splitret", sizes=(1, 6, 25)),
    Case("ptrret", "ptrret", sizes=(1, 4, 13)),
    Case("libc", "libc", sizes=(1, 5, 17), domain=(0.2, 2.0)),
    Case("intmem", "intmem", sizes=(1, 6, 20)),
    Case("split", "split", sizes=(1, 6, 25)),
    Case("vec", "vnorm", sizes=(3, 37, 100), analytic=lambda x: x / np.linalg.norm(x), rtol=1e-9),
    Case("vec", "vdot", sizes=(2, 37, 100), rtol=1e-9,
         analytic=lambda x: _dot(x) * np.concatenate([np.arange(1, len(x) // 2 + 1)] * 2 + [[0] * (len(x) % 2)])),
    Case("math_float", "float_elem", sizes=(1, 11), domain=(0.2, 1.5), dtype="f4", rtol=1e-4),
    Case("math_float", "float_bin", domain=_A, dtype="f4", rtol=1e-4),
    Case("math_float", "float_scalar", domain=((0.3, 0.9),), dtype="f4", rtol=1e-4),
    Case("bench", "bdot", sizes=(2, 64), analytic=_dot),
    Case("bench", "bpoly", sizes=(9, 40), rtol=1e-5),
    Case("bench", "blse", sizes=(1, 30), domain=(-3.0, 3.0), analytic=_lse),
    Case("bench", "bheat", sizes=(3, 16, 40), analytic=_heat),
    Case("bench", "bmlp", sizes=(161,), domain=(-0.5, 0.5), rtol=1e-5),
    Case("bench", "bnbody", sizes=(6, 24), domain=(-2.0, 2.0), rtol=1e-5),
    Case("memtypes", "punned", sizes=(1, 5, 16), analytic=lambda x: _punned(x)),
    Case("memtypes", "structs", sizes=(1, 5, 16)),
    Case("memtypes", "mixed", sizes=(1, 6, 17)),
    Case("memtypes", "unions", sizes=(1, 6, 17), analytic=lambda x: 2 * x[::-1]),
    *(Case(f"math_{op}", "math", domain=_A, analytic=_math(op), rtol=1e-5) for op in MATH_OPS),
]

#: programs that must raise ADError, and what the message must name
UNSUPPORTED = {
    "unsup_asm": "asm",
    "unsup_extern": "mystery_kernel",
    "unsup_extern_g": "unsup_extern.c:7: ",
    "unsup_bits": "bit pattern",
    "unsup_rsqrt": "bit pattern",
    "unsup_fnptr_alloc": "call through a function pointer",
    "unsup_mixcpy": "floating-point values and pointers",
    "unsup_intptr": "inttoptr",
    "unsup_gather": "vector of addresses of memory with a shadow",
}

LEVEL_NAMES = tuple(LEVELS)
