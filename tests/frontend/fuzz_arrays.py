"""The ``arrays`` family of the differential fuzzer (fuzz_programs.py): NumPy programs, NumPy as the oracle.

Each program is ``f(a, b, v)``: a few statements of reductions (with and
without ``axis=``, ``keepdims=``), elementwise and logical expressions (``~`` of masks, ``np.where``), matrix products (``@``, ``np.dot`` of
matrices and vectors), selections (``a[mask]``, ``v[index]``), assignments into
views of a copy (overlapping their source, broadcast) and fused
expressions over them, returning every value it made. The arguments take
random dtypes, layouts (C, F, strided, reversed) and shapes, sizes 0 and 1
and shapes that do not fit included. A program is ``right`` when compiled
code returns NumPy's values (floats within rounding: sums are ordered
differently), dtypes and shapes, or raises NumPy's exception class; a typed
compile error is ``typed``; anything else is wrong.

    python -m tests.frontend.fuzz_programs --family arrays --programs 500
"""

from __future__ import annotations

import os
import random

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint32", "uint64", "float32", "float64"]
LAYOUTS = ["C", "F", "strided", "reversed"]
REDUCTIONS = ["sum", "prod", "min", "max", "mean", "argmin", "argmax", "any", "all"]


class _Gen:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.lines: list[str] = []
        self.results: list[str] = []

    def operand(self) -> str:
        """A 2-d array or an expression of ``a`` (with ``v`` broadcast along its rows)."""
        return self.rng.choice(["a", "a", "a * 2", "a + v", "np.abs(a) - 1", "(a > 1) * a"])

    def statement(self, k: int) -> None:
        rng, name = self.rng, f"r{k}"
        kind = rng.random()
        if kind < 0.45:
            fn = rng.choice(REDUCTIONS)
            axis = rng.choice([None, 0, 1, -1, -2])
            keep = rng.random() < 0.2 and fn not in ("argmin", "argmax")
            args = [self.operand()]
            if axis is not None:
                args.append(f"axis={axis}")
            if keep:
                args.append("keepdims=True")
            call = f"np.{fn}({', '.join(args)})" if rng.random() < 0.6 else \
                f"({args[0]}).{fn}({', '.join(args[1:])})"
            self.lines.append(f"    {name} = {call}")
        elif kind < 0.6:
            self.lines.append(f"    {name} = " + rng.choice(["~(a > 1)", "np.invert(a > 0) & (a < 3)", "(a > 0) ^ (v > 1)",
                                                            "np.logical_not(a)", "~(a >= 1) | (a == 2)",
                                                            "np.maximum(a, v) - np.minimum(a, 1)",
                                                            "np.where(a > 1, a, v)", "a * (v < 2)"]))
        elif kind < 0.7:
            self.lines.append(f"    {name} = " + rng.choice(["a @ b", "np.dot(a, b)", "a @ v", "np.dot(a, v)",
                                                            "v @ b", "np.dot(v, b)", "np.sum(a @ b, axis=0)",
                                                            "(a * 2) @ b"]))
        elif kind < 0.85:  # writes into a copy: overlapping and broadcast assignments into views
            self.lines.append(f"    {name} = a.copy()")
            self.lines.append(f"    {name}" + rng.choice(["[:] = {0}[::-1]", "[1:, :] = {0}[:-1, :] + v",
                                                          "[:, ::-1] = {0}", "[0:1] = {0}[-1:] * 2",
                                                          "[:, 1:] = {0}[:, :1]", "[...] = np.where({0} > 1, {0}, 0)",
                                                          "[:] = np.fmod({0}, v)", "[1:] = {0}[:-1] - v"]).format(name))
        else:
            self.lines.append(f"    {name} = " + rng.choice(["a[a > 1]", "np.sum(a[a > 1])", "v[v > 0]",
                                                            "a[(a > 0) & (a < 3)]", "np.max(a[a >= 0])",
                                                            "v[np.abs(v) > 1] * 2"]))
        self.results.append(name)


def generate(seed: int) -> tuple[str, list]:
    """``(source, inputs)``: the module text and a list of ``(dtype, layout, shapes)`` argument specs."""
    rng = random.Random(seed)
    gen = _Gen(rng)
    for k in range(rng.randint(1, 4)):
        gen.statement(k)
    src = ("import numpy as np\n\n\ndef f(a, b, v):\n" + "\n".join(gen.lines)
           + f"\n    return ({', '.join(gen.results)},)\n")
    dtype = rng.choice(DTYPES)
    inputs = []
    for _ in range(3):
        n, m, p = (rng.choice([0, 1, 2, 3, 5]) for _ in range(3))
        inner = m if rng.random() < 0.85 else m + 1  # sometimes shapes that do not fit
        inputs.append((dtype, rng.choice(LAYOUTS), rng.choice(LAYOUTS), (n, m), (inner, p), (m,), rng.random()))
    return src, inputs


def _array(dtype: str, shape, layout: str, seed: float):
    import numpy as np

    rng = np.random.default_rng(int(seed * 2**31))
    big = tuple(2 * s for s in shape)
    raw = np.floor(rng.uniform(-3.0, 4.0, size=big) * 2) / 2  # halves: sums exact in every float type
    if dtype == "bool":
        raw = raw > 0
    elif dtype.startswith("uint"):
        raw = np.abs(raw)
    from tests.frontend.numpy_data import laid_out

    return laid_out(raw.astype(dtype), shape, layout)


def _same(want, got) -> str:
    """'' when ``got`` (compiled) is ``want`` (NumPy), else what differs."""
    import numpy as np

    if isinstance(want, np.ndarray):
        if not isinstance(got, np.ndarray):
            return f"NumPy gave an array, compiled {type(got).__name__}"
        if want.dtype != got.dtype or want.shape != got.shape:
            return f"NumPy {want.dtype}{want.shape}, compiled {got.dtype}{got.shape}"
    else:
        want, got = np.asarray(want), np.asarray(got)
    if want.dtype.kind in "fc":
        ok = np.allclose(got.astype(want.dtype), want, rtol=1e-5 if want.dtype.itemsize <= 4 else 1e-12,
                         atol=0, equal_nan=True)
    else:
        ok = np.array_equal(got.astype(want.dtype), want)
    return "" if ok else f"NumPy {want!r}, compiled {got!r}"


def run_array_program(seed: int, workdir: str) -> tuple[str, str]:
    """An array program under NumPy and compiled, classified (in this process)."""
    import warnings

    import numpy as np

    import gpucompiler as gpuc
    from tests.frontend.fuzz_programs import _is_compile_error, _load, _outcome

    src, inputs = generate(seed)
    mod = _load(src, os.path.join(workdir, f"fuzz_array_{seed}.py"))
    compiled = gpuc.jit(mod.f)
    for dtype, la, lb, sa, sb, sv, s in inputs:
        args = (_array(dtype, sa, la, s), _array(dtype, sb, lb, s + 0.1), _array(dtype, sv, "C", s + 0.2))
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = _outcome(mod.f, args)
            got = _outcome(compiled, args)
        if got[0] == "raises" and _is_compile_error(got):
            return "typed", f"{got[1].__name__}: {str(got[2]).splitlines()[0][:200]}"
        if want[0] == "raises" or got[0] == "raises":
            if want[0] != got[0] or not issubclass(got[1], want[1]):
                shown = [f"{o[1].__name__}: {o[2]}" if o[0] == "raises" else "a value" for o in (want, got)]
                return "wrong", f"{dtype} {sa} {sb}: NumPy {shown[0]}, compiled {shown[1]}"[:300]
            continue
        for k, (w, g) in enumerate(zip(want[1], got[1])):
            diff = _same(w, g)
            if diff:
                return "wrong", f"{dtype} {la} {sa} {sb}: r{k}: {diff}"[:300]
    return "right", ""
