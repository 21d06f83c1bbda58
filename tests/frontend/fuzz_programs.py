"""Differential fuzzer: random typed Python programs, CPython as the oracle.

Each program is a small module (helpers, a recursive function, the entry
``f(i, j, x, y, arr)``) mixing the constructs where compiled code most easily
departs from Python: ints and floats at the 2**53 edge, float -> int of NaN,
infinities and huge values, every ``math`` function at its domain edges,
``**``, names unbound on a taken path, recursion (shallow, and unbounded),
tuple returns of mixed types, loops, branches, helper calls and arrays. Each
program runs on several inputs under CPython and compiled (``@jit``); the
outcomes are classified as

* ``right``: the same values (or the same exception type) on every input;
* ``typed``: a typed compile error (:class:`GPUCompilerError`), or a loud
  documented divergence (CPython's result is an int beyond int64 or a
  complex number and compiled code raised);
* ``wrong``: a different value, or a value where CPython raised, or another
  exception type than CPython's;
* ``untyped``: an internal exception escaped the compiler;
* ``crash`` / ``hang``: the process died / stopped making progress.

Programs run in batches in subprocesses; each program announces itself
before it runs, so a crash or a hang is attributed to its program and the
batch goes on with the next one.

    python -m tests.frontend.fuzz_programs --programs 10000 [--seed 0] [--json out.json]

``--family dtypes`` generates programs over NumPy scalars of every integer
type, float32 and float64 (NumPy 2 is the oracle: promotion, wrap-around)
and Python complex numbers (CPython is); ``--family arrays`` NumPy programs on
arrays (fuzz_arrays.py: reductions along axes, products, masks).
"""

from __future__ import annotations

import argparse
import ast
import collections
import importlib.util
import json
import math
import os
import random
import re
import select
import subprocess
import sys
import tempfile
import time

KINDS = ("right", "typed", "wrong", "untyped", "crash", "hang")
BIG_INTS = [2**53, 2**53 + 1, 2**53 - 1, -(2**53) - 1, 2**62 + 1, 2**63 - 1, -(2**63)]
BIG_FLOATS = ["9007199254740992.0", "9007199254740994.0", "-9007199254740992.0", "9.223372036854776e18",
              "1e19", "-1e19", "4.611686018427388e18"]
EDGE_FLOATS = ["0.0", "-0.0", "0.5", "-1.5", "2.0", "1e308", "710.0", "1e-300", "-1.0", "1.0", "3.0",
               "math.inf", "-math.inf", "math.nan"]
UNARY = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
         "exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "fabs", "erf", "erfc"] + \
    [n for n in ("exp2", "cbrt") if hasattr(math, n)]
BINARY = ["pow", "atan2", "hypot", "fmod", "copysign"]
INT_INPUTS = [0, 1, -1, 2, 3, 7, -5, 12, 100, -1000]
FLOAT_INPUTS = [0.0, -0.0, 0.5, -1.5, 2.0, 1e308, math.inf, -math.inf, math.nan, 9007199254740992.0,
                1e19, 710.0, -2.5, 1e-300]
MOD = 1000003  # int accumulators stay far from int64 overflow (documented to wrap)


# -- generation ----------------------------------------------------------------------------------

class _Gen:
    """One program: statements of ``f`` over typed variables (``int``, ``float``, ``bool``)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.helpers: list[str] = []
        self.helper_sigs: list[tuple[str, str]] = []  # (name, result kind)
        self.undefined = 0
        self.fresh = 0
        self.shape = rng.choice([("int",), ("float",), ("bool",), ("int", "float"), ("float", "int", "float")])

    def name(self) -> str:
        self.fresh += 1
        return f"v{self.fresh}"

    # expressions: (text, kind)
    def int_e(self, scope, d) -> str:
        r = self.rng.random()
        ints = [v for v, k in scope.items() if k == "int"]
        if d <= 0 or r < 0.25:
            return self.rng.choice(ints) if ints and self.rng.random() < 0.7 else str(self.rng.randint(-9, 12))
        a, b = self.int_e(scope, d - 1), self.int_e(scope, d - 1)
        if r < 0.40:
            return f"({a} {self.rng.choice(['+', '-'])} {b})"
        if r < 0.47:
            return f"({a} * {self.rng.randint(-9, 9)})"
        if r < 0.55:
            return f"({a} {self.rng.choice(['//', '%'])} {b})"
        if r < 0.60:
            return f"({a} {self.rng.choice(['&', '|', '^'])} {b})"
        if r < 0.65:
            return f"{self.rng.choice(['min', 'max'])}({a}, {b})"
        if r < 0.70:
            return f"abs({a})"
        if r < 0.78:  # float -> int, special values included
            return f"{self.rng.choice(['int', 'math.floor', 'math.ceil', 'math.trunc'])}({self.float_e(scope, d - 1)})"
        if r < 0.82:
            return "len(arr)"
        if r < 0.88 and self.helper_sigs:
            name, kind = self.rng.choice(self.helper_sigs)
            return f"{name}({a}, {self.float_e(scope, d - 1)})" if kind == "int" else f"int({name}({a}, 0.5))"
        if r < 0.92:
            return f"rec({self.rng.choice(['abs(' + a + ') % 30', '3', a + ' + 100000'])}, 0)"
        return f"({a} if {self.bool_e(scope, d - 1)} else {b})"

    def float_e(self, scope, d) -> str:
        r = self.rng.random()
        floats = [v for v, k in scope.items() if k == "float"]
        if d <= 0 or r < 0.25:
            if floats and self.rng.random() < 0.6:
                return self.rng.choice(floats)
            return self.rng.choice(EDGE_FLOATS + BIG_FLOATS[:2])
        a, b = self.float_e(scope, d - 1), self.float_e(scope, d - 1)
        if r < 0.40:
            return f"({a} {self.rng.choice(['+', '-', '*', '/'])} {b})"
        if r < 0.45:
            return f"({a} {self.rng.choice(['//', '%'])} {b})"
        if r < 0.50:
            return f"({a} ** {self.rng.choice([b, '2.0', '-1.0', '0.5', '400.0'])})"
        if r < 0.65:
            return f"math.{self.rng.choice(UNARY)}({a})"
        if r < 0.70:
            return f"math.{self.rng.choice(BINARY)}({a}, {b})"
        if r < 0.75:
            return f"float({self.int_e(scope, d - 1)})"
        if r < 0.80:
            return f"arr[{self.rng.randint(-4, 3)}]"
        if r < 0.85 and self.helper_sigs:
            name, kind = self.rng.choice(self.helper_sigs)
            return f"{name}({self.int_e(scope, d - 1)}, {a})" if kind == "float" else f"float({name}(1, {a}))"
        if r < 0.90:
            return f"{self.rng.choice(['min', 'max'])}({a}, {b})"
        return f"({a} if {self.bool_e(scope, d - 1)} else {b})"

    def bool_e(self, scope, d) -> str:
        r = self.rng.random()
        op = self.rng.choice(["==", "!=", "<", "<=", ">", ">="])
        if r < 0.3:  # the 2**53 edge: big ints against floats near them
            i = self.rng.choice([str(v) for v in BIG_INTS] + [self.int_e(scope, d - 1)])
            x = self.rng.choice(BIG_FLOATS + [self.float_e(scope, d - 1)])
            return f"({i} {op} {x})" if self.rng.random() < 0.5 else f"({x} {op} {i})"
        if r < 0.5:
            return f"({self.int_e(scope, d - 1)} {op} {self.int_e(scope, d - 1)})"
        if r < 0.7:
            return f"({self.float_e(scope, d - 1)} {op} {self.float_e(scope, d - 1)})"
        if r < 0.8:
            return f"math.{self.rng.choice(['isnan', 'isinf', 'isfinite'])}({self.float_e(scope, d - 1)})"
        if d > 0 and r < 0.95:
            return f"({self.bool_e(scope, d - 1)} {self.rng.choice(['and', 'or'])} {self.bool_e(scope, d - 1)})"
        return f"(not {self.bool_e(scope, d - 1)})"

    def expr(self, kind, scope, d=2) -> str:
        return {"int": self.int_e, "float": self.float_e, "bool": self.bool_e}[kind](scope, d)

    # statements: lines at ``ind`` indentation; ``scope`` maps variables to kinds
    def block(self, scope, ind, n, depth, in_loop=False) -> list[str]:
        lines = []
        pad = " " * ind
        for _ in range(n):
            r = self.rng.random()
            if r < 0.35 or depth >= 2:
                kind = self.rng.choice(["int", "float", "float", "bool"])
                same = [v for v, k in scope.items() if k == kind and not v.startswith("p")]
                var = self.rng.choice(same) if same and self.rng.random() < 0.5 else self.name()
                e = self.expr(kind, scope)
                if kind == "int" and var in scope:
                    e = f"({e}) % {MOD}"
                lines.append(f"{pad}{var} = {e}")
                scope[var] = kind
            elif r < 0.55:
                lines.append(f"{pad}if {self.bool_e(scope, 2)}:")
                inner = dict(scope)
                lines += self.block(inner, ind + 4, self.rng.randint(1, 3), depth + 1, in_loop)
                if self.rng.random() < 0.6:
                    lines.append(f"{pad}else:")
                    other = dict(scope)
                    lines += self.block(other, ind + 4, self.rng.randint(1, 3), depth + 1, in_loop)
                    for v in inner:  # bound after the if on both paths only when of one kind
                        if v in other and inner[v] == other[v]:
                            scope[v] = inner[v]
                elif self.rng.random() < 0.3:  # a variable bound on one path only, read later
                    new = [v for v in inner if v not in scope]
                    if new:
                        scope[new[0]] = inner[new[0]]
            elif r < 0.72:
                i = self.name()
                acc = self.rng.choice([v for v, k in scope.items() if k in ("int", "float")] or ["p_i"])
                lines.append(f"{pad}for {i} in range({self.rng.choice(['3', '0', 'p_i % 5', 'len(arr)', '-2, 4', '5, 0, -2'])}):")
                inner = dict(scope, **{i: "int"})
                body = self.block(inner, ind + 4, self.rng.randint(0, 2), depth + 1, True)
                e = self.expr(scope[acc] if scope.get(acc) in ("int", "float") else "int", inner)
                upd = f"({acc} + {e}) % {MOD}" if scope.get(acc, "int") == "int" else f"{acc} + {e}"
                body.append(f"{pad}    {acc} = {upd}")
                if self.rng.random() < 0.2:
                    body.append(f"{pad}    if {self.bool_e(inner, 1)}:")
                    body.append(f"{pad}        {self.rng.choice(['break', 'continue'])}")
                lines += body
                if self.rng.random() < 0.15:
                    scope[i] = "int"  # the loop variable after the loop: unbound if it never ran
            elif r < 0.80:
                lines.append(f"{pad}arr[{self.rng.choice(['0', '-1', '2', 'p_i % 4', '7'])}] = float({self.float_e(scope, 2)})")
            elif r < 0.86:
                self.undefined += 1
                lines.append(f"{pad}if {self.bool_e(scope, 1)}:")
                lines.append(f"{pad}    p_x = p_x + UNDEFINED_{self.undefined}")
            elif r < 0.93:
                lines.append(f"{pad}if {self.bool_e(scope, 2)}:")
                lines.append(f"{pad}    return {self.ret(scope)}")
            else:
                c = self.name()
                lines.append(f"{pad}{c} = 0")
                lines.append(f"{pad}while {c} < {self.rng.randint(0, 4)}:")
                lines.append(f"{pad}    {c} = {c} + 1")
                scope[c] = "int"
        return lines or [pad + "pass"]

    def ret(self, scope) -> str:
        """A return of the function's shape; now and then of another one (a union: a typed error)."""
        shape = self.shape
        if self.rng.random() < 0.08:
            shape = self.rng.choice([("int",), ("float",), ("bool",), ("int", "float"), ("int", "int")])
        items = [self.expr(k, scope, 1 if len(shape) > 1 else 2) for k in shape]
        return items[0] if len(shape) == 1 else "(" + ", ".join(items) + ")"

    def helper(self, k) -> None:
        kind = self.rng.choice(["int", "float"])
        name = f"helper{k}"
        scope = {"a": "int", "b": "float"}
        body = self.block(scope, 4, self.rng.randint(1, 3), 1)
        e = self.expr(kind, scope, 2)
        self.helpers.append(f"def {name}(a, b):\n" + "\n".join(body) + f"\n    return {e}\n")
        self.helper_sigs.append((name, kind))

    def program(self) -> str:
        for k in range(self.rng.randint(0, 2)):
            self.helper(k)
        rec = ("def rec(n, acc):\n    if n <= 0:\n        return acc\n"
               f"    return rec(n - 1, acc + {self.rng.choice(['1', 'n % 3'])})\n")
        scope = {"p_i": "int", "p_j": "int", "p_x": "float", "p_y": "float"}
        body = self.block(scope, 4, self.rng.randint(2, 6), 0)
        body.append(f"    return {self.ret(scope)}")
        return ("import math\n\n" + rec + "\n" + "\n".join(self.helpers) +
                "\ndef f(p_i, p_j, p_x, p_y, arr):\n" + "\n".join(body) + "\n")


def generate(seed: int) -> tuple[str, list[tuple]]:
    """The source of program ``seed`` and its inputs ``(i, j, x, y, arr values)``."""
    rng = random.Random(seed)
    src = _Gen(rng).program()
    inputs = []
    for _ in range(4):
        inputs.append((rng.choice(INT_INPUTS), rng.choice(INT_INPUTS), rng.choice(FLOAT_INPUTS),
                       rng.choice(FLOAT_INPUTS), [rng.choice([0.5, -2.0, 3.0, 0.0, 1e300]) for _ in range(4)]))
    return src, inputs


# -- the dtype family: NumPy scalars of every integer and float type, complex numbers ------------

DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]


class _DtypeGen:
    """One program over NumPy scalars (NumPy 2's promotion and wrap-around is the oracle) and
    Python complex numbers (CPython's): ``f(p_a, p_b, p_c, p_z, p_y, arr)``.

    Only what both sides define alike is generated: divisors that cannot be zero, shift counts
    in range, no float -> int conversions (C leaves those undefined out of range), no negative
    literals with unsigned operands (NumPy raises), ``min``/``max`` of one type (CPython keeps the
    operand's type, compiled code promotes).
    """

    def __init__(self, rng: random.Random):
        import numpy as np

        self.np, self.rng = np, rng
        self.types = {"p_a": rng.choice(DTYPES), "p_b": rng.choice(DTYPES)}
        self.types["p_c"] = self.types["p_a"]
        self.types["arr"] = rng.choice(DTYPES)
        self.fresh = 0

    def _type(self, *parts) -> str:
        np = self.np
        return str(np.result_type(*[np.dtype(p) if isinstance(p, str) else p for p in parts]))

    def leaf(self, scope) -> tuple[str, str]:
        names = [v for v in scope if v != "arr"]
        if self.rng.random() < 0.75:
            v = self.rng.choice(names)
            return v, scope[v]
        return f"arr[{self.rng.randint(-4, 3)}]", scope["arr"]

    def num(self, scope, d) -> tuple[str, str]:
        """``(text, dtype)`` of a numeric expression."""
        rng, np = self.rng, self.np
        if d <= 0 or rng.random() < 0.2:
            return self.leaf(scope)
        a, ta = self.num(scope, d - 1)
        b, tb = self.num(scope, d - 1)
        r = rng.random()
        kind_a, kind_b = np.dtype(ta).kind, np.dtype(tb).kind
        if r < 0.35:
            op = rng.choice(["+", "-", "*"])
            return f"({a} {op} {b})", self._type(ta, tb)
        if r < 0.45:  # a weak literal, in range of the other operand's type
            k = rng.randint(0, 9) if kind_a == "u" or rng.random() < 0.5 else -rng.randint(1, 9)
            op = rng.choice(["+", "-", "*"])
            return f"({a} {op} {k})", self._type(ta, k)
        if r < 0.55 and kind_a in "iu" and kind_b in "iu":
            op = rng.choice(["//", "%"])
            return f"({a} {op} ({b} | 1))", self._type(ta, tb)
        if r < 0.62:
            if kind_b in "iu":
                return f"({a} / ({b} | 1))", self._type(ta, tb, "float64") if kind_a in "iu" else self._type(ta, tb)
            return f"({a} / ({b} * {b} + 1))", self._type(ta, tb)
        if r < 0.70 and kind_a in "iu" and kind_b in "iu" and self._type(ta, tb)[0] in "iu":
            op = rng.choice(["&", "|", "^"])
            return f"({a} {op} {b})", self._type(ta, tb)
        if r < 0.76 and kind_a in "iu" and kind_b in "iu" and self._type(ta, tb)[0] in "iu":
            op = rng.choice([">>", "<<"])
            return f"({a} {op} ({b} & 3))", self._type(ta, tb)
        if r < 0.82:
            return rng.choice([f"abs({a})", f"(-{a})"]), ta
        if r < 0.88 and kind_a in "iu":  # conversions from integers (float ones are undefined out of range)
            t = rng.choice(DTYPES)
            return f"np.{t}({a})", t
        c, tc = self.num(scope, d - 1)
        if r < 0.93 and tc == ta:
            return f"{rng.choice(['min', 'max'])}({a}, {c})", ta
        if (np.dtype(tc).kind == "f") != (kind_b == "f"):  # int64 against a float: CPython's exact rule here,
            c = b  # NumPy's rounding there (a documented difference): compare ints with ints, floats with floats
        return f"({a} if {c} {rng.choice(['<', '<=', '>', '==', '!='])} {b} else {a} * 2)", self._type(ta, 2)

    def complex_e(self, d) -> str:
        rng = self.rng
        if d <= 0 or rng.random() < 0.25:
            return rng.choice(["p_z", "p_y", "(1.5 - 2j)", "2", "p_z.conjugate()", "complex(p_y, 0.5)"])
        a, b = self.complex_e(d - 1), self.complex_e(d - 1)
        r = rng.random()
        if r < 0.6:
            return f"({a} {rng.choice(['+', '-', '*', '/'])} {b})"
        if r < 0.8:
            return f"complex(abs({a}), ({a}).imag)"
        return f"complex(({a}).real, -({b}).imag)"

    def program(self) -> str:
        scope = dict(self.types)
        lines = []
        for _ in range(self.rng.randint(2, 5)):
            r = self.rng.random()
            if r < 0.55:
                e, t = self.num(scope, 2)
                self.fresh += 1
                v = f"v{self.fresh}"
                lines.append(f"    {v} = {e}")
                scope[v] = t
            elif r < 0.75:  # a loop over the array, accumulating in a typed variable
                acc = self.rng.choice([v for v in scope if v != "arr"])
                t = self._type(scope[acc], scope["arr"])
                lines.append("    for i, v in enumerate(arr):")
                lines.append(f"        {acc} = {acc} + v * np.{scope['arr']}(i)")
                scope[acc] = t
            else:  # a store of a value the array's type holds (NumPy raises on a narrowing store,
                e, t = self.num(scope, 2)  # compiled code wraps: a documented difference)
                if self.np.can_cast(t, scope["arr"], "safe"):
                    lines.append(f"    arr[{self.rng.randint(-4, 3)}] = {e}")
        e, _ = self.num(scope, 2)
        lines.append(f"    return ({e}, {self.complex_e(2)})")
        return "import numpy as np\n\n\ndef f(p_a, p_b, p_c, p_z, p_y, arr):\n" + "\n".join(lines) + "\n"


def generate_dtypes(seed: int) -> tuple[str, list[tuple], dict]:
    """The source of dtype program ``seed``, its inputs ``(a, b, c, z, y, arr values)`` and its types."""
    import numpy as np

    rng = random.Random(seed)
    gen = _DtypeGen(rng)
    src = gen.program()
    inputs = []
    for _ in range(3):
        vals = []
        for name in ("p_a", "p_b", "p_c"):
            t = np.dtype(gen.types[name])
            if t.kind == "f":
                vals.append(rng.choice([0.5, -2.25, 3.0, 0.0, 1e6, -7.75, 1e-3]))
            else:
                info = np.iinfo(t)
                vals.append(rng.choice([int(info.min), int(info.max), 0, 1, int(info.max) // 3,
                                        rng.randint(int(info.min), int(info.max))]))
        t = np.dtype(gen.types["arr"])
        info = np.iinfo(t) if t.kind != "f" else None
        arr = [rng.randint(int(info.min), int(info.max)) if info else rng.uniform(-100, 100) for _ in range(4)]
        z = complex(rng.choice([0.0, 1.5, -2.0, 1e300]), rng.choice([0.0, -0.5, 3.0]))
        inputs.append((*vals, z, rng.choice([0.0, 2.5, -1.0]), arr))
    return src, inputs, gen.types


def run_dtype_program(seed: int, workdir: str) -> tuple[str, str]:
    """A dtype program under NumPy scalars and compiled, classified (in this process)."""
    import warnings

    import numpy as np

    import gpucompiler as gpuc

    src, inputs, types = generate_dtypes(seed)
    mod = _load(src, os.path.join(workdir, f"fuzz_dtype_{seed}.py"))
    compiled = gpuc.jit(mod.f)
    py, jt = [], []
    for a, b, c, z, y, arr in inputs:
        args = [np.dtype(types[n]).type(v) for n, v in (("p_a", a), ("p_b", b), ("p_c", c))]
        ref = np.array(arr, types["arr"])
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = _outcome(mod.f, (*args, z, y, ref))
        py.append((("ok", (_plain(out[1]), ref.tolist())) if out[0] == "ok" else out) + (False,))
        got_arr = np.array(arr, types["arr"])
        out = _outcome(compiled, (*args, z, y, got_arr))
        jt.append(("ok", (out[1], got_arr.tolist())) if out[0] == "ok" else out)
        if out[0] == "raises" and _is_compile_error(out):
            break
    kind, detail = classify(py, jt)
    if kind == "right":  # the kinds of the values too (int, float, bool, complex)
        for want, got in zip(py, jt):
            if want[0] == "ok" and [type(v) for v in want[1][0]] != [type(v) for v in got[1][0]]:
                return "wrong", f"CPython/NumPy types {want[1][0]!r}, compiled {got[1][0]!r}"
    return kind, detail


def _plain(value):
    """A NumPy scalar (or a tuple of them) as the Python value compiled code returns."""
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value.item() if type(value).__module__ == "numpy" else value


# -- the oracle: CPython, noting where its values leave what compiled code can hold -----------------

class _Note(ast.NodeTransformer):
    """``a ** b`` -> ``_pow(a, b)``, ``int(x)``/``math.floor(x)``... -> ``_toint(fn, x)``: the
    oracle notes a complex result or an int beyond int64 (compiled code raises there, loudly)."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Pow):
            return ast.Call(ast.Name("_pow", ast.Load()), [node.left, node.right], [])
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        conv = (isinstance(f, ast.Name) and f.id == "int") or (
            isinstance(f, ast.Attribute) and f.attr in ("floor", "ceil", "trunc"))
        return ast.Call(ast.Name("_toint", ast.Load()), [f, *node.args], []) if conv else node


def _oracle_source(src: str) -> str:
    tree = ast.fix_missing_locations(_Note().visit(ast.parse(src)))
    return ast.unparse(tree)


class _Notes:
    def __init__(self):
        self.beyond = False

    def pow(self, a, b):
        r = a ** b
        self.beyond |= isinstance(r, complex)
        return r

    def toint(self, fn, x):
        r = fn(x)
        self.beyond |= not -(2**63) <= r < 2**63
        return r


# -- running one program (in the child) ----------------------------------------------------

def _outcome(fn, args):
    try:
        return ("ok", fn(*args))
    except RecursionError:
        return ("raises", RecursionError, None)
    except Exception as exc:
        return ("raises", type(exc), exc)


def _same_value(a, b) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)
                and all(_same_value(x, y) for x, y in zip(a, b)))
    if isinstance(a, complex) or isinstance(b, complex):  # part by part: NaN parts and signed zeros
        return (isinstance(a, complex) and isinstance(b, complex) and _same_value(a.real, b.real)
                and _same_value(a.imag, b.imag))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, float) or isinstance(b, float):
        return a == b and (a != 0 or math.copysign(1, a) == math.copysign(1, b))
    return a == b


def _representable(value) -> bool:
    """Whether compiled code can hold CPython's result (ints in int64, no complex)."""
    if isinstance(value, tuple):
        return all(map(_representable, value))
    if isinstance(value, complex):
        return False
    return not isinstance(value, int) or -(2**63) <= value < 2**63


def _from_compiler(exc) -> bool:
    """Whether ``exc`` was raised inside the compiler rather than by compiled code."""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    path = tb.tb_frame.f_code.co_filename
    return "gpucompiler" in path and not path.endswith(os.path.join("gpucompiler", "jit.py"))


def classify(py_outcomes, jit_outcomes) -> tuple[str, str]:
    """``(kind, detail)`` of one program from its outcomes on every input."""
    import numpy as np  # noqa: F401

    from gpucompiler.errors import GPUCompilerError

    kind = "right"
    for want, got in zip(py_outcomes, jit_outcomes):
        if got[0] == "raises" and isinstance(got[2], GPUCompilerError):
            return "typed", f"{got[1].__name__}: {re.sub(r'^.*?:[0-9]+: ', '', str(got[2]).splitlines()[0])}"
        if got[0] == "raises" and got[2] is not None and _from_compiler(got[2]):
            return "untyped", f"{got[1].__name__}: {got[2]}"
        beyond = want[-1] or (want[0] == "ok" and not _representable(want[1][0]))
        if beyond and got[0] == "raises" and got[1] in (OverflowError, ValueError):
            kind = "typed" if kind == "right" else kind  # documented: no bigints, no complex numbers
            continue
        if want[0] != got[0]:
            shown = lambda o: o[1][0] if o[0] == "ok" else o[1].__name__  # noqa: E731
            return "wrong", f"CPython {shown(want)!r}, compiled {shown(got)!r}"
        if want[0] == "raises":
            if want[1] is not got[1]:
                return "wrong", f"CPython raised {want[1].__name__}, compiled {got[1].__name__}: {got[2]}"
        elif not (_same_value(want[1][0], got[1][0]) and _same_value(tuple(want[1][1]), tuple(got[1][1]))):
            return "wrong", f"CPython {want[1]!r}, compiled {got[1]!r}"
    return kind, ""


def run_program(seed: int, workdir: str) -> tuple[str, str]:
    """Generate, run under CPython and compiled, classify (in this process)."""
    import numpy as np

    import gpucompiler as gpuc

    src, inputs = generate(seed)
    mod = _load(src, os.path.join(workdir, f"fuzz_prog_{seed}.py"))
    oracle = _load(_oracle_source(src), os.path.join(workdir, f"fuzz_oracle_{seed}.py"))
    compiled = gpuc.jit(mod.f)
    py, jt = [], []
    for i, j, x, y, arr in inputs:
        lst = list(arr)
        notes = _Notes()
        oracle._pow, oracle._toint = notes.pow, notes.toint
        out = _outcome(oracle.f, (i, j, x, y, lst))
        py.append((("ok", (out[1], lst)) if out[0] == "ok" else out) + (notes.beyond,))
        a = np.array(arr)
        out = _outcome(compiled, (i, j, x, y, a))
        jt.append(("ok", (out[1], a.tolist())) if out[0] == "ok" else out)
        if out[0] == "raises" and _is_compile_error(out):
            break
    return classify(py, jt)


def _load(src: str, path: str):
    with open(path, "w") as fh:
        fh.write(src)
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _is_compile_error(out) -> bool:
    from gpucompiler.errors import GPUCompilerError

    return isinstance(out[2], GPUCompilerError) or (out[2] is not None and _from_compiler(out[2]))


def _child(seeds: list[int], workdir: str, family: str = "python") -> None:
    """Run programs, one JSON line before (``start``) and after (``done``) each."""
    sys.setrecursionlimit(1000)
    if family == "arrays":
        from tests.frontend.fuzz_arrays import run_array_program as runner  # it uses this module's helpers
    elif family == "gradients":
        from tests.enzyme_plugin.fuzz_gradients import run_gradient_program as runner  # the same
    elif family == "kernels":
        from tests.kernels.fuzz_kernels import run_kernel_program as runner  # the same
    elif family == "clang":
        from tests.enzyme.fuzz_c import run_c_program as runner  # the same
    else:
        runner = run_dtype_program if family == "dtypes" else run_program
    for seed in seeds:
        print(json.dumps({"start": seed}), flush=True)
        try:
            kind, detail = runner(seed, workdir)
        except Exception as exc:
            kind, detail = "untyped", f"harness: {type(exc).__name__}: {exc}"
        print(json.dumps({"done": seed, "kind": kind, "detail": detail[:300]}), flush=True)


# -- batches in subprocesses (the parent) -------------------------------------------------------

def _run_chunk(chunk: list[int], timeout: float, workdir: str, done, progress, family: str = "python") -> dict:
    """Run the programs of ``chunk`` in child processes, restarting after a crash or a hang."""
    results: dict[int, tuple[str, str]] = {}
    todo = list(chunk)
    env = dict(os.environ, GPUC_CACHE="off", PYTHONFAULTHANDLER="0")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    while todo:
        cmd = [sys.executable, "-c", "import sys, json; from tests.frontend.fuzz_programs import _child; "
               "_child(json.loads(sys.argv[1]), sys.argv[2], sys.argv[3])", json.dumps(todo), workdir, family]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                cwd=root, env=env)
        current, last = None, time.monotonic()
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if ready:
                line = proc.stdout.readline()
                if not line:
                    break
                msg = json.loads(line)
                if "start" in msg:
                    current, last = msg["start"], time.monotonic()
                else:
                    results[msg["done"]] = (msg["kind"], msg["detail"])
                    current = None
                    done.append(1)
                    if progress:
                        progress(len(done))
            elif time.monotonic() - last > timeout and current is not None:
                proc.kill()
                results[current] = ("hang", f"no result in {timeout:.0f} s")
                done.append(1)
                break
        proc.wait()
        if current is not None and current not in results:
            results[current] = ("crash", f"process ended with status {proc.returncode}")
            done.append(1)
        todo = [s for s in todo if s not in results]
    return results


def run(seeds: list[int], timeout: float = 20.0, batch: int = 100, progress=None,
        jobs: int = 1, family: str = "python") -> dict[int, tuple[str, str]]:
    """``seed -> (kind, detail)`` for every seed: batches of ``batch`` programs in child
    processes, ``jobs`` of them at once. ``family``: ``python`` (CPython's ints and floats),
    ``dtypes`` (NumPy's scalar types and complex numbers) or ``arrays`` (NumPy programs on arrays)."""
    from concurrent.futures import ThreadPoolExecutor

    results: dict[int, tuple[str, str]] = {}
    done: list = []
    chunks = [seeds[k:k + batch] for k in range(0, len(seeds), batch)]
    with tempfile.TemporaryDirectory() as workdir, ThreadPoolExecutor(jobs) as pool:
        for part in pool.map(lambda c: _run_chunk(c, timeout, workdir, done, progress, family), chunks):
            results.update(part)
    return results


def table(results, kinds=KINDS) -> dict[str, int]:
    counts = collections.Counter(k for k, _ in results.values())
    return {k: counts.get(k, 0) for k in kinds}


def report(results, seeds: list[int], seconds: float, command: str, json_path: str | None, *,
           kinds=KINDS, fine=("right", "typed"), typed_words: str = r"\b(v|p_)\w*|'[^']*'|[0-9.]+") -> int:
    """Print the counts and the seeds whose programs are not ``fine``; write both to ``json_path`` (with
    the commonest typed errors, ``typed_words`` blanked); 0 when every program is fine."""
    counts = table(results, kinds)
    print(file=sys.stderr)
    print(f"{'kind':<10}{'programs':>10}")
    for k in kinds:
        print(f"{k:<10}{counts[k]:>10}")
    print(f"{'total':<10}{len(results):>10}   ({seconds:.0f} s, seeds {seeds[0]}..{seeds[-1]})")
    bad = {s: r for s, r in sorted(results.items()) if r[0] not in fine}
    for s, (k, d) in list(bad.items())[:30]:
        print(f"  seed {s}: {k}: {d}")
    if json_path:
        typed = collections.Counter(re.sub(typed_words, "_", d)[:120] for k, d in results.values() if k == "typed")
        with open(json_path, "w") as fh:
            json.dump({"command": command, "programs": len(results), "seconds": round(seconds, 1), "counts": counts,
                       "typed_reasons": dict(typed.most_common(20)),
                       "failures": {str(s): list(r) for s, r in bad.items()}}, fh, indent=1)
    return 0 if not bad else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--jobs", type=int, default=1, help="batches run at once")
    ap.add_argument("--family", choices=("python", "dtypes", "arrays", "kernels", "clang"), default="python",
                    help="python: ints, floats and math; dtypes: NumPy's int8-uint64, float32 and complex; "
                    "arrays: NumPy reductions along axes, products and masks (fuzz_arrays.py); kernels: "
                    "@kernel programs on the CPU grid emulation (tests/kernels/fuzz_kernels.py); clang: C functions through "
                    "clang-19 -O0..-O3 and Enzyme's C interface (tests/enzyme/fuzz_c.py)")
    ap.add_argument("--json", default=None, help="write counts and every non-right program here")
    args = ap.parse_args(argv)
    seeds = list(range(args.seed, args.seed + args.programs))
    t0 = time.perf_counter()
    results = run(seeds, args.timeout, args.batch, jobs=args.jobs, family=args.family,
                  progress=lambda n: print(f"\r{n}/{len(seeds)}", end="", file=sys.stderr, flush=True))
    command = "python -m tests.frontend.fuzz_programs " + " ".join(argv or sys.argv[1:])
    return report(results, seeds, time.perf_counter() - t0, command, args.json)


if __name__ == "__main__":
    sys.exit(main())
