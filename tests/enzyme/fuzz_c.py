"""The ``clang`` family of the differential fuzzer (tests/frontend/fuzz_programs.py): random C functions
through clang-19 at -O0, -O1, -O2 and -O3, differentiated through Enzyme's C interface, against finite
differences.

Each program is ``double f(double *x, int n)``: a loop over ``x`` with branches, inner loops with
constant and data-dependent trip counts, a ``while`` on data, ``libm`` calls (``sin``, ``exp``,
``pow``, ``fmin``, ``floor``...), a ``noinline`` helper, a recursive function, a struct returned by
value, a ``malloc``'d copy of ``x`` (``memcpy``) written in place and a global
array written with values of ``x``. Three entry points call Enzyme's markers: ``grad``
(``__enzyme_autodiff``, ``enzyme_dup``), ``fwd`` (``__enzyme_fwddiff``) and ``split``
(``__enzyme_augmentfwd`` then ``__enzyme_reverse`` with the tape). The differentiated module is loaded
into this process; the gradient must match central differences of ``f`` where three step sizes agree
(a kink nearby gives no verdict), the split gradient the combined one, and the forward tangent along a
random direction the gradient's dot product with it. Every optimisation level must be right; an
``ADError`` is ``typed``.

    python -m tests.frontend.fuzz_programs --family clang --programs 300
"""

from __future__ import annotations

import ctypes
import math
import os
import random
import shutil
import subprocess

LEVELS = ("-O0", "-O1", "-O2", "-O3")
HEADER = """#include <math.h>
#include <stdlib.h>
#include <string.h>
int enzyme_dup, enzyme_const, enzyme_out;
void __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);
void *__enzyme_augmentfwd(void *, ...);
void __enzyme_reverse(void *, ...);
double G[8];
__attribute__((noinline)) static double helper(double a, double b) { return a * sin(b) + b * b * 0.25; }
static double rec(double a, int k) { return k <= 0 ? a : rec(a * 0.9 + 0.1 * sin(a), k - 1); }
typedef struct { double a, b; } pair;
static pair mk(double a, double b) { pair p = {a * b, a - b}; return p; }
"""
ENTRIES = """
void grad(double *x, double *dx, int n) { __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, n); }
double fwd(double *x, double *vx, int n) { return __enzyme_fwddiff((void *)f, enzyme_dup, x, vx, enzyme_const, n); }
void split(double *x, double *dx, int n) {
  void *tape = __enzyme_augmentfwd((void *)f, enzyme_dup, x, dx, enzyme_const, n);
  __enzyme_reverse((void *)f, enzyme_dup, x, dx, enzyme_const, n, 1.0, tape);
}
"""
UNARY = ("sin({})", "cos({})", "tanh({})", "exp(fmin({}, 5.0))", "log(fabs({}) + 1.0)", "sqrt(fabs({}) + 0.1)",
         "atan({})", "fabs({})")


def clang() -> str | None:
    return os.environ.get("CLANG") or shutil.which("clang-19")


def _expr(rng: random.Random, d: int, names: list[str]) -> str:
    if d == 0 or rng.random() < 0.25:
        return rng.choice([*names, "0.5", "1.25", "2.0", "x[(i + 1) % n]", "(double)i", "w[i]", "G[i % 8]",
                           "floor(x[i] * 3.0)"])
    a, b = _expr(rng, d - 1, names), _expr(rng, d - 1, names)
    k = rng.random()
    if k < 0.4:
        return f"({a} {rng.choice('+-*')} {b})"
    if k < 0.5:
        return f"({a} / (fabs({b}) + 1.0))"
    if k < 0.75:
        return rng.choice(UNARY).format(a)
    if k < 0.85:
        return f"{rng.choice(['fmin', 'fmax'])}({a}, {b})"
    if k < 0.88:
        return f"({a} > {b} ? {a} : {b})"
    if k < 0.91:
        return f"helper({a}, {b})"
    if k < 0.93:
        return f"rec({a}, {rng.choice(['2', 'i % 3'])})"
    if k < 0.96:
        return f"mk({a}, {b}).{rng.choice('ab')}"
    return f"pow(fabs({a}) + 0.5, {rng.choice(['2.0', '1.5', '3.0', '0.5'])})"


def program(seed: int) -> str:
    """The C source of one seed."""
    rng = random.Random(seed)
    names = ["v", "s"]
    body = ["  double s = 0.0;", "  double *w = (double *)malloc(sizeof(double) * (n + 1));",
            "  memcpy(w, x, sizeof(double) * n);", "  w[n] = 0.0;",
            "  for (int i = 0; i < n; i++) G[i % 8] = x[i] * 0.5;",
            "  for (int i = 0; i < n; i++) {", "    double v = x[i];"]
    for k in range(rng.randint(1, 4)):
        t = f"t{k}"
        r = rng.random()
        if r < 0.5:
            body.append(f"    double {t} = {_expr(rng, 2, names)};")
        elif r < 0.75:
            trips = rng.choice(["3", "i % 3", "n - i"])
            body += [f"    double {t} = 0.0;",
                     f"    for (int j = 0; j < {trips}; j++) {t} = {t} * 0.5 + {_expr(rng, 1, [*names, '(double)j'])};"]
        elif r < 0.85:
            body += [f"    double {t} = {_expr(rng, 1, names)};",
                     f"    if ({_expr(rng, 1, names)} > {_expr(rng, 1, names)}) {t} = {_expr(rng, 2, names)}; "
                     f"else {t} = {t} * {_expr(rng, 1, names)};"]
        else:
            body += [f"    double {t} = w[i] * G[(i + 3) % 8];", f"    w[i + 1] += {_expr(rng, 1, names)};",
                     f"    {{ int q = 0; while ({t} > 0.3 && q < 4) {{ {t} = {t} * 0.7 - 0.01; q++; }} }}"]
        names.append(t)
    body += [f"    s += {_expr(rng, 2, names)};", "  }", "  s += w[n] * 0.5;", "  free(w);"]
    if rng.random() < 0.3:
        body.append("  s = s * s;")
    body.append("  return s;")
    return HEADER + "double f(double *x, int n) {\n" + "\n".join(body) + "\n}\n" + ENTRIES


def _check(text: str, seed: int, level: str) -> tuple[str, str]:
    """One optimisation level's module: differentiated, loaded, checked."""
    import numpy as np

    import enzyme_plugin
    from gpucompiler.runtime import CPULibrary

    try:
        out = enzyme_plugin.differentiate(text)
    except enzyme_plugin.ADError as exc:
        return "typed", f"{level}: {str(exc).splitlines()[0][:200]}"
    lib = CPULibrary.from_ir(out)
    D, Int = ctypes.POINTER(ctypes.c_double), ctypes.c_int
    f = ctypes.CFUNCTYPE(ctypes.c_double, D, Int)(lib.address("f"))
    grad = ctypes.CFUNCTYPE(None, D, D, Int)(lib.address("grad"))
    fwd = ctypes.CFUNCTYPE(ctypes.c_double, D, D, Int)(lib.address("fwd"))
    split = ctypes.CFUNCTYPE(None, D, D, Int)(lib.address("split"))
    rng = np.random.default_rng(seed)

    def ptr(a):
        return a.ctypes.data_as(D)

    for n in (1, 4, 7):
        x = rng.uniform(-1.5, 1.5, n)
        dx, ds = np.zeros(n), np.zeros(n)
        grad(ptr(x), ptr(dx), n)
        split(ptr(x), ptr(ds), n)
        if not np.allclose(ds, dx, rtol=1e-12, atol=1e-14):
            return "wrong", f"{level} n={n}: split gradient {ds.tolist()} != combined {dx.tolist()}"
        rounding = 2.3e-16 * abs(f(ptr(x), n)) / 1e-6  # a difference quotient's rounding error at the finest step
        for k in range(n):
            steps = []
            for h in (1e-4, 1e-5, 1e-6):
                xp, xm = x.copy(), x.copy()
                xp[k] += h
                xm[k] -= h
                steps.append((f(ptr(xp), n) - f(ptr(xm), n)) / (2 * h))
            if max(steps) - min(steps) > 1e-3 * (1 + abs(steps[1])) or rounding > 1e-4 * (1 + abs(dx[k])):
                continue  # a kink or a branch near x, or a value too large for differences: no verdict
            if not math.isclose(dx[k], steps[1], rel_tol=1e-4, abs_tol=1e-6):
                return "wrong", f"{level} n={n}: gradient[{k}] {dx[k]!r}, finite differences {steps[1]!r}"
        v = rng.uniform(-1, 1, n)
        tangent, want = fwd(ptr(x), ptr(v), n), float(np.dot(dx, v))
        if not math.isclose(tangent, want, rel_tol=1e-8, abs_tol=1e-10):
            return "wrong", f"{level} n={n}: forward tangent {tangent!r}, gradient . v {want!r}"
    return "right", ""


def run_c_program(seed: int, workdir: str) -> tuple[str, str]:
    """A C program at every optimisation level, classified (in this process)."""
    cc = clang()
    if cc is None:
        return "typed", "clang-19 not found (set CLANG)"
    src = os.path.join(workdir, f"fuzz_c_{seed}.c")
    with open(src, "w") as fh:
        fh.write(program(seed))
    typed = ""
    for level in LEVELS:
        proc = subprocess.run([cc, "--target=x86_64-pc-linux-gnu", "-S", "-emit-llvm", "-g0", "-fno-ident",
                               "-ffp-contract=off", level, src, "-o", "-"], capture_output=True, text=True)
        if proc.returncode != 0:
            return "untyped", f"harness: clang {level}: {proc.stderr[:200]}"
        kind, detail = _check(proc.stdout, seed, level)
        if kind == "wrong":
            return kind, detail
        typed = typed or (detail if kind == "typed" else "")
    return ("typed", typed) if typed else ("right", "")


__all__ = ["LEVELS", "clang", "program", "run_c_program"]
