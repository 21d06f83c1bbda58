"""Differential fuzzer of derivatives: random differentiable programs, finite differences as the oracle.

Each program is a small module: helpers (one of them recursive with a depth
bound, one reading and writing an array, one returning a tuple) and the entry
``f(x, y, a, b, n, p)`` of two float64 scalars, two float64 arrays of one length,
an int and an int64 index array ``p`` into them, returning a float. Its statements mix arithmetic, ``**`` with int
and float exponents, ints and floats mixed (an int operand, ``//`` of floats,
``int()`` of a float), ``math`` functions, ``abs``/``min``/``max``, ``if``/``else``
on comparisons, ``for`` loops over constant and runtime trip counts with
loop-carried accumulators and ``break``, ``while`` loops, tuples, array reads
and writes (``a[i] += ...``, ``b[i] = ...``, whole arrays and slices in place:
``b += 0.5 * a``, ``a[1:] += ...``) and ``np.sum``/``np.dot``. Array indices are the
expressions users write: periodic (``(i + 1) % len(a)``, ``(i - 2) % a.shape[0]``),
clamped (``min(i + 1, len(a) - 1)``, ``max(i - 1, 0)``), reversed (``len(a) - 1 - i``, loops
``range(len(a) - 1, -1, -1)``), strided (``(2 * i) % len(a)``, ``range(0, len(a), 2)``),
gathered through ``p`` (``p[i]``, ``p[p[i]]``), with ``if`` on the index (``i % 2 == 0``,
``p[i] > i``), in loops that write the result into another array (``b[i] = 2 * a[(i + 1) % len(a)]``)
or sum it. Program ``seed``'s ``@jit`` wrappers and kernel are compiled at ``opt_level = seed % 4``.

On several random inputs the derivatives of

* ``autodiff(ReverseWithPrimal, f, Active(x), Active(y), Duplicated(a, da),
  Duplicated(b, db), Const(n))``: the gradient of ``L = f + wa.a_out + wb.b_out``
  (``da``, ``db`` seeded with the cotangents ``wa``, ``wb`` of what ``f`` leaves
  in the arrays), and
* ``autodiff(ForwardWithPrimal, f, Duplicated(x, vx), ...)``: the tangents of
  ``f``'s result and of the arrays along a random direction ``v``,

called from Python and from a ``@jit`` function, are compared with central
finite differences of the CPython-run function along ``v`` at several step
sizes, and the primal values (result and arrays) with CPython's. Forward and
reverse are also compared with each other (the tangent of ``L`` against the
reverse gradient along ``v``, to 1e-9 of the terms' size), also where finite
differences give no verdict. A program that writes no argument array and
makes none is differentiated in a ``@kernel`` on the CPU grid emulation too: each of four
threads takes ``Reverse`` at its own ``x`` with ``da``, ``db`` shared, whose
adjoints must add up to what ``autodiff`` from Python gives per thread. A sample is
used only where every branch decision (each comparison, ``abs``, ``min``,
``max``, ``atan2``'s cut, ``%``, ``//``, ``int()``) is the same at every finite-difference point, and
the finite differences agree with each other at two consecutive step sizes.
Outcomes, per program:

* ``right``: every checked derivative and primal agrees;
* ``typed``: a typed error (:class:`GPUCompilerError`) naming the program's
  ``file:line``;
* ``wrong``: a derivative or a primal disagrees, or compiled code raised where
  CPython did not;
* ``untyped``: an internal exception, or a typed one without the program's line;
* ``crash`` / ``hang``: the process died / stopped making progress;
* ``skipped``: no input was away from a non-differentiable point.

    python -m tests.enzyme_plugin.fuzz_gradients --programs 2000 [--seed 0] [--jobs 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import ast
import math
import os
import random
import re
import sys
import time

from tests.frontend import fuzz_programs as F

KINDS = ("right", "typed", "wrong", "untyped", "crash", "hang", "skipped")
CONSTS = ["0.5", "1.5", "-0.75", "2.0", "0.25", "-1.25", "0.125", "3.0"]
STEPS = (1e-3, 1e-4, 1e-5, 1e-6)
SAMPLES = 4
BOUND = 1e6  # inputs where a value assigned or returned leaves [-BOUND, BOUND] are not used (overflow, ill conditioning)


# -- generation ----------------------------------------------------------------------------------

class _Gen:
    """One program over float variables, int variables (``n``, loop counters) and two arrays."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.m = rng.choice([1, 2, 3, 4, 5, 5, 9, 40])  # the arrays' length (40: tapes past their inline segment)
        self.fresh = 0
        self.helpers: list[str] = []
        self.calls: list[str] = []  # kinds of helpers: "ff" (float, float) -> float, "rec", "arr", "tup"

    def name(self, prefix="v") -> str:
        self.fresh += 1
        return f"{prefix}{self.fresh}"

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def index(self, scope) -> str:
        loops = [v for v, k in scope.items() if k == "idx"]
        if loops and self.chance(0.6):
            i = self.rng.choice(loops)
            return self.rng.choice([i, i, f"({i} + 1) % {self.m}", f"{self.m - 1} - {i}"]) if self.chance(0.4) \
                else self.index_e(i)
        if self.chance(0.1):
            return f"p[{self.rng.randint(0, self.m - 1)}]"  # a gather at a constant position
        return str(self.rng.randint(-self.m, self.m - 1))

    def index_e(self, i: str) -> str:
        """An index of the arrays from loop index ``i`` (0 <= i < length) as users write them: periodic,
        clamped, reversed, strided, gathered through the index array ``p``."""
        size = self.rng.choice(["len(a)", "a.shape[0]", "b.shape[0]"])  # all the same length
        k = self.rng.randint(1, 3)
        family = self.rng.choice(["periodic", "periodic", "clamped", "clamped", "reversed", "strided", "gathered"])
        return self.rng.choice({
            "periodic": [f"({i} + {k}) % {size}", f"({i} - {k}) % {size}", f"({size} - 1 - {i} + {k}) % {size}"],
            "clamped": [f"min({i} + {k}, {size} - 1)", f"max({i} - {k}, 0)", f"max(min({i} + {k}, {size} - 1), {i} // 2)"],
            "reversed": [f"{size} - 1 - {i}"],
            "strided": [f"(2 * {i}) % {size}", f"({k} * {i} + 1) % {size}"],
            "gathered": [f"p[{i}]", f"p[({i} + {k}) % {size}]", f"p[p[{i}]]", f"(p[{i}] + {i}) % {size}"],
        }[family])

    def int_e(self, scope) -> str:
        ints = [v for v, k in scope.items() if k in ("int", "idx")]
        return self.rng.choice(ints + ["2", "3"]) if ints else self.rng.choice(["1", "2", "3"])

    def cmp(self, scope, d) -> str:
        op = self.rng.choice(["<", "<=", ">", ">="])
        if self.chance(0.2):
            return f"{self.int_e(scope)} {op} {self.rng.randint(0, 3)}"
        return f"{self.float_e(scope, d)} {op} {self.float_e(scope, d)}"

    def cond(self, scope, d=1) -> str:
        if self.chance(0.15):
            return f"{self.cmp(scope, d)} {self.rng.choice(['and', 'or'])} {self.cmp(scope, d)}"
        return self.cmp(scope, d)

    def leaf(self, scope) -> str:
        floats = [v for v, k in scope.items() if k == "float"]
        arrays = [v for v, k in scope.items() if k == "arr"]
        r = self.rng.random()
        if floats and r < 0.55:
            return self.rng.choice(floats)
        if arrays and r < 0.8:
            return f"{self.rng.choice(arrays + arrays[:1])}[{self.index(scope)}]"
        return self.rng.choice(CONSTS)

    def float_e(self, scope, d=2) -> str:
        r = self.rng.random()
        if d <= 0 or r < 0.2:
            return self.leaf(scope)
        a, b = self.float_e(scope, d - 1), self.float_e(scope, d - 1)
        rng = self.rng
        if r < 0.40:
            return f"({a} {rng.choice(['+', '-', '*', '*'])} {b})"
        if r < 0.45:
            return f"({a} / {rng.choice(['(1.5 + ' + b + ' * ' + b + ')', '(2.0 + math.sin(' + b + '))', '1.75'])})"
        if r < 0.53:
            return rng.choice([f"{a} ** 2", f"{a} ** 3", f"(1.0 + {a} * {a}) ** -1", f"({a} * {a} + 0.5) ** 1.5",
                               f"({a} * {a} + 0.25) ** 0.5", f"({a} * {a} + 0.5) ** {self.int_e(scope)}",
                               f"(0.5 + {a} * {a}) ** math.sin({b})", f"{a} ** {self.int_e(scope)}"])
        if r < 0.68:
            return rng.choice([f"math.sin({a})", f"math.cos({a})", f"math.tanh({a})", f"math.atan({a})",
                               f"math.exp(math.sin({a}))", f"math.exp(0.5 * math.tanh({a}))",
                               f"math.log({a} * {a} + 0.5)", f"math.sqrt({a} * {a} + 0.1)",
                               f"math.log1p({a} * {a})", f"math.expm1(math.tanh({a}))", f"math.erf({a})",
                               f"math.sinh(math.tanh({a}))", f"math.cosh(math.sin({a}))", f"math.asinh({a})",
                               f"math.log2(1.5 + math.cos({a}))", f"math.log10({a} * {a} + 1.0)"])
        if r < 0.76:
            return rng.choice([f"math.atan2({a}, {b})", f"math.hypot({a}, {b} + 0.5)",
                               f"math.pow({a} * {a} + 0.5, {b})", f"math.pow(1.25 + math.sin({a}), 1.5)"])
        if r < 0.84:
            return rng.choice([f"abs({a})", f"min({a}, {b})", f"max({a}, {b})", f"math.fabs({a})"])
        if r < 0.92 and self.calls:
            kind = rng.choice(self.calls)
            if kind == "ff":
                return f"h_ff({a}, {b})"
            if kind == "rec":
                return f"h_rec({a}, {rng.choice(['2', '3', '0'] + ['n'] * ('n' in scope))})"
            if kind == "arr" and "a" in scope:
                return f"h_arr({rng.choice(['a', 'b'])}, {a}, {self.index(scope)})"
            if kind == "loop" and "a" in scope:
                return f"h_loop({rng.choice(['a', 'b'])}, {a}, {rng.choice(['n', 'n', str(self.m)])})"
            if kind == "reca" and "a" in scope:
                return f"h_reca({rng.choice(['a', 'b'])}, {a}, {rng.choice(['n', '2'])})"
            if kind in ("arr", "loop", "reca"):
                return a
            return f"h_tup({a}, {b})[{rng.randint(0, 1)}]"
        if r < 0.96:
            return f"({a} if {self.cmp(scope, 0)} else {b})"
        return rng.choice([f"(float({self.int_e(scope)}) * {a})", f"math.fmod({a}, 1.75)", f"({a} % 1.25)",
                           f"float(math.floor({a}))", f"math.copysign({a}, {b})", f"({a} ** -2 if {a} != 0.0 else 1.0)",
                           # ints and floats mixed: an int operand, a float floor division, int() of a float
                           f"({a} * {self.int_e(scope)})", f"({self.int_e(scope)} / (1.5 + {a} * {a}))",
                           f"({self.int_e(scope)} - {a})", f"({a} // 0.75)", f"(int({a} * 2.0) * {b})",
                           f"({a} * (n % 3) + {b})" if "n" in scope else f"({a} * 2 + {b})"])

    # statements: lines at ``ind`` indentation; ``scope`` maps names to "float", "int" or "idx"
    def block(self, scope, ind, n, depth, loop=False) -> list[str]:
        pad = " " * ind
        lines: list[str] = []
        rng = self.rng
        for _ in range(n):
            r = rng.random()
            floats = [v for v, k in scope.items() if k == "float"]
            if r < 0.1 and "a" in scope and depth < 2:
                lines += self.index_loop(scope, pad)
            elif r < 0.25 or depth >= 2:
                var = rng.choice(floats) if floats and self.chance(0.4) else self.name()
                lines.append(f"{pad}{var} = {self.float_e(scope)}")
                scope[var] = "float"
            elif r < 0.37 and floats:
                var = rng.choice(floats)
                lines.append(rng.choice([f"{pad}{var} += {self.float_e(scope)}", f"{pad}{var} -= {self.float_e(scope)}",
                                         f"{pad}{var} *= 1.0 + 0.25 * math.sin({self.float_e(scope, 1)})"]))
            elif r < 0.50:
                loops = [v for v, k in scope.items() if k == "idx"]
                cond = self.cond(scope)
                if loops and self.chance(0.5):  # a branch on the index
                    i = rng.choice(loops)
                    cond = rng.choice([f"{i} % 2 == 0", f"{i} % 3 == 1", f"{i} < len(a) // 2", f"{i} == 0",
                                       f"{i} + 1 == len(a)", f"p[{i}] > {i}", f"p[{i}] % 2 == 1"])
                lines.append(f"{pad}if {cond}:")
                inner, other = dict(scope), dict(scope)
                lines += self.block(inner, ind + 4, rng.randint(1, 2), depth + 1, loop)
                if self.chance(0.6):
                    lines.append(f"{pad}else:")
                    lines += self.block(other, ind + 4, rng.randint(1, 2), depth + 1, loop)
                else:
                    other = scope
                for v, k in inner.items():
                    if other.get(v) == k:
                        scope[v] = k
            elif r < 0.68:
                i = self.name("i")
                acc = rng.choice(floats) if floats and self.chance(0.7) else None
                if acc is None:
                    acc = self.name("s")
                    lines.append(f"{pad}{acc} = {rng.choice(['0.0', '1.0', self.leaf(scope)])}")
                    scope[acc] = "float"
                bound = rng.choice(["n", "n", f"{self.m}", "len(a)", "a.shape[0]", "n, 0, -1", "0, len(a), 2",
                                    "len(a) - 1, -1, -1", "a.shape[0] - 1, -1, -2", "1, n, 3"] if "a" in scope
                                   else ["2", "3", "1, 3"])
                lines.append(f"{pad}for {i} in range({bound}):")
                inner = dict(scope, **{i: "idx"})
                if bound in ("n, 0, -1", "1, 3"):
                    inner[i] = "int"  # 1..n: not an index
                if bound in ("1, n, 3",):
                    inner[i] = "idx"  # 1, 4, ... < n <= the length
                body = self.block(inner, ind + 4, rng.randint(0, 2), depth + 1, True)
                upd = rng.choice([f"{acc} + {self.float_e(inner)}", f"{acc} * (1.0 + 0.125 * math.sin({self.float_e(inner, 1)}))",
                                  f"0.5 * {acc} + {self.float_e(inner)}", f"math.sin({acc}) + {self.float_e(inner, 1)}"])
                body.append(f"{pad}    {acc} = {upd}")
                if self.chance(0.2):
                    body.append(f"{pad}    if {self.cmp(inner, 1)}:")
                    body.append(f"{pad}        {rng.choice(['break', 'continue'])}")
                lines += body
            elif r < 0.71:  # a trip count known only as the loop runs
                k, acc = self.name("k"), self.name("w")
                lines.append(f"{pad}{k} = 0")
                lines.append(f"{pad}{acc} = {self.float_e(scope, 1)}")
                lines.append(f"{pad}while {acc} < {rng.choice(['2.0', '4.0', '0.5'])} and {k} < {rng.choice(['60', '200'])}:")
                lines.append(f"{pad}    {acc} = {acc} + 0.0625 * (1.5 + math.sin({self.float_e(scope, 1)}))")
                lines.append(f"{pad}    {k} += 1")
                if self.chance(0.2):
                    lines.append(f"{pad}    if {self.cmp(scope, 1)}:")
                    lines.append(f"{pad}        break")
                scope[k], scope[acc] = "int", "float"
            elif r < 0.74:
                k = self.name("k")
                acc = rng.choice(floats) if floats else "x"
                lines.append(f"{pad}{k} = 0")
                lines.append(f"{pad}while {k} < {rng.choice(['n', '3', 'n + 1'] if 'n' in scope else ['2', '3'])}"
                             f"{' and ' + self.cmp(scope, 1) if self.chance(0.4) else ''}:")
                lines.append(f"{pad}    {acc} = {rng.choice(['0.75 * ' + acc, 'math.cos(' + acc + ')', acc + ' * ' + acc + ' * 0.25'])}"
                             f" + {self.float_e(scope, 1)}")
                lines.append(f"{pad}    {k} += 1")
                scope[k] = "int"
            elif r < 0.84 and "a" in scope:
                arr = rng.choice(["a", "b", "b"] + ["c"] * 2 * ("c" in scope))
                op = rng.choice(["=", "=", "+=", "*="])
                e = self.float_e(scope)
                if op == "*=":
                    e = f"(1.0 + 0.25 * math.sin({e}))"
                if self.chance(0.25):  # the whole array in place (from the other array: no overlap)
                    other = "a" if arr != "a" else "b"
                    lines.append(pad + rng.choice([f"{arr} *= (1.0 + 0.25 * math.sin({e}))",
                                                   f"{arr} += 0.5 * {other}", f"{arr}[1:] += 0.5 * {other}[:-1]",
                                                   f"{arr}[::2] = np.sin({other}[::2]) * {e}"]))
                else:
                    lines.append(f"{pad}{arr}[{self.index(scope)}] {op} {e}")
            elif r < 0.90:
                p, q = self.name(), self.name()
                if "tup" in self.calls and self.chance(0.5):
                    lines.append(f"{pad}{p}, {q} = h_tup({self.float_e(scope, 1)}, {self.float_e(scope, 1)})")
                elif len(floats) >= 2 and self.chance(0.5):
                    u, w = rng.sample(floats, 2)
                    lines.append(f"{pad}{u}, {w} = {w}, {u}")
                    continue
                else:
                    lines.append(f"{pad}{p}, {q} = ({self.float_e(scope, 1)}, {self.float_e(scope, 1)})")
                scope[p] = scope[q] = "float"
            elif r < 0.95 and "a" in scope:
                var = self.name()
                lines.append(f"{pad}{var} = " + rng.choice(["np.sum(a)", "np.dot(a, b)", "np.sum(b)", "a.sum()",
                                                            "np.sum(a * b)", "np.dot(b, b)", "np.sum(np.sin(a) * b)",
                                                            "np.dot(a, np.exp(0.5 * b))", "np.sum(a[1:] * a[:-1])",
                                                            "np.mean(a * a)", "float(np.sum(np.sqrt(a * a + 0.5)))"]))
                scope[var] = "float"
            elif not loop or self.chance(0.3):
                lines.append(f"{pad}if {self.cond(scope)}:")
                lines.append(f"{pad}    return {self.float_e(scope)}")
        return lines or [pad + "pass"]

    def index_loop(self, scope, pad) -> list[str]:
        """A loop over the arrays through one index family: ``b[i] = 2 * a[(i + 1) % len(a)]`` (the result in
        another array) or a sum, now and then under an ``if`` on the index."""
        rng = self.rng
        i, acc = self.name("i"), self.name("s")
        src = rng.choice(["a", "b"] + ["c"] * ("c" in scope))
        lines = [f"{pad}{acc} = {rng.choice(['0.0', self.leaf(scope)])}",
                 f"{pad}for {i} in range({rng.choice(['len(a)', 'a.shape[0]', 'n'])}):"]
        body = pad + "    "
        if self.chance(0.4):
            lines.append(f"{body}if {rng.choice([f'{i} % 2 == 0', f'{i} % 3 != 1', f'{i} < len(a) // 2', f'p[{i}] >= {i}'])}:")
            body += "    "
        read = f"{src}[{self.index_e(i)}]"
        if self.chance(0.35):  # the result in another array
            dst = rng.choice([d for d in ("a", "b", "c") if d in scope and d != src])
            lines.append(f"{body}{dst}[{i}] {rng.choice(['=', '+='])} {rng.choice(['2 *', '0.5 * x *', '-'])} {read}")
        lines.append(f"{body}{acc} += {rng.choice(['', 'x * ', '0.25 * '])}{read}"
                     f"{rng.choice(['', ' * ' + read, ' * ' + self.leaf(scope)])}")
        scope[acc] = "float"
        return lines

    def helper_sources(self) -> None:
        rng = self.rng
        kinds = ["ff", "rec", "arr", "tup", "loop"] + ["reca"] * self.chance(0.2)
        for kind in rng.sample(kinds, rng.randint(0, 3)):
            if kind == "ff":
                scope = {"u": "float", "w": "float"}
                body = self.block(scope, 4, rng.randint(1, 3), 1)
                self.helpers.append("def h_ff(u, w):\n" + "\n".join(body) + f"\n    return {self.float_e(scope)}\n")
            elif kind == "rec":
                step = rng.choice(["math.sin(u) + 0.5 * u", "0.5 * u * u - 0.25", "math.tanh(u) * 1.5", "u + math.cos(u)"])
                tail = rng.choice(["* 0.75", "+ math.sin(u)", "+ u", ""])
                self.helpers.append(f"def h_rec(u, d):\n    if d <= 0:\n        return u\n"
                                    f"    return h_rec({step}, d - 1) {tail}\n")
            elif kind == "arr":
                i = "j"
                write = rng.choice(["", f"    v[{i}] += 0.5 * u\n", f"    v[{i}] = math.sin(v[{i}]) * u\n"])
                self.helpers.append(f"def h_arr(v, u, {i}):\n{write}    return v[{i}] * u + math.cos(v[{i}])\n")
            elif kind == "loop":
                write = rng.choice(["", "        v[i] = s\n", "        v[i] += 0.25 * s\n"])
                self.helpers.append(f"def h_loop(v, u, k):\n    s = u\n    for i in range(k):\n"
                                    f"        s = {rng.choice(['s * 0.5 + v[i] * math.sin(s)', 'math.tanh(s + v[i]) * v[i]'])}\n"
                                    f"{write}    return s\n")
            elif kind == "reca":  # recursive over an array: documented as a typed error
                self.helpers.append("def h_reca(v, u, d):\n    if d <= 0:\n        return u * v[0]\n"
                                    "    return h_reca(v, math.sin(u) + v[0], d - 1)\n")
            else:
                scope = {"u": "float", "w": "float"}
                self.helpers.append(f"def h_tup(u, w):\n    return {self.float_e(scope)}, {self.float_e(scope)}\n")
            self.calls.append(kind)

    def program(self) -> str:
        self.helper_sources()
        scope = {"x": "float", "y": "float", "n": "int", "a": "arr", "b": "arr"}  # and p: indices into them
        body = []
        if self.chance(0.25):  # an array made in the function
            body.append("    c = " + self.rng.choice(["np.zeros(len(a))", "a * 0.5 + b", "np.copy(b)", "np.sin(a)",
                                                      "np.empty(a.shape[0])\n    c[:] = a"]))
            scope["c"] = "arr"
        body += self.block(scope, 4, self.rng.randint(2, 6), 0)
        floats = [v for v, k in scope.items() if k == "float"]
        extra = self.rng.sample(floats, min(len(floats), self.rng.randint(1, 3)))
        body.append(f"    return {' + '.join([self.float_e(scope)] + extra)}")
        return ("import math\n\nimport numpy as np\n\nfrom enzyme_plugin import (Active, Const, Duplicated, "
                "ForwardWithPrimal, Reverse, ReverseWithPrimal, autodiff)\nfrom gpucompiler import device as gd\n\n\n"
                + "\n\n".join(self.helpers) +
                "\n\ndef f(x, y, a, b, n, p):\n" + "\n".join(body) + "\n\n" + WRAPPERS)


WRAPPERS = """
def grad_reverse(x, y, a, da, b, db, n, p):
    return autodiff(ReverseWithPrimal, f, Active(x), Active(y), Duplicated(a, da), Duplicated(b, db), Const(n),
                    Const(p))


def grad_forward(x, vx, y, vy, a, va, b, vb, n, p):
    return autodiff(ForwardWithPrimal, f, Duplicated(x, vx), Duplicated(y, vy), Duplicated(a, va),
                    Duplicated(b, vb), Const(n), Const(p))


def grad_kernel(xs, dxs, y, a, da, b, db, n, p):
    i = gd.grid(1)
    if i < xs.shape[0]:
        dxs[i] = autodiff(Reverse, f, Active(xs[i]), Const(y), Duplicated(a, da), Duplicated(b, db), Const(n),
                          Const(p))[0]
"""

#: an assignment to an element of an argument array (``v``: a helper's): threads of a kernel would race
_WRITES_ARRAYS = re.compile(r"^\s*[abv](\[.*\])?\s*[-+*]?=", re.M)
THREADS = 4


def generate(seed: int) -> tuple[str, int]:
    """``(source, array length)`` of program ``seed``."""
    g = _Gen(random.Random(seed))
    return g.program(), g.m


def opt_level(seed: int) -> int:
    """The optimisation level of program ``seed``'s ``@jit`` wrappers and kernel: every level in turn."""
    return seed % 4


# -- the oracle: CPython with every branch decision recorded -------------------------------------

class _Trace(ast.NodeTransformer):
    """``a < b`` -> ``_br(a < b)``, ``abs``/``min``/``max``/``fabs``/``atan2`` -> recording versions."""

    def visit_Assign(self, node):
        self.generic_visit(node)
        node.value = ast.Call(ast.Name("_val", ast.Load()), [node.value], [])
        return node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        node.value = ast.Call(ast.Name("_val", ast.Load()), [node.value], [])
        return node

    def visit_Return(self, node):
        self.generic_visit(node)
        if node.value is not None:
            node.value = ast.Call(ast.Name("_val", ast.Load()), [node.value], [])
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, (ast.Mod, ast.FloorDiv)):
            name = "_mod" if isinstance(node.op, ast.Mod) else "_floordiv"
            node = ast.Call(ast.Name(name, ast.Load()), [node.left, node.right], [])
        return ast.Call(ast.Name("_val", ast.Load()), [node], [])  # intermediates stay in the bound too

    def visit_Compare(self, node):
        self.generic_visit(node)
        return ast.Call(ast.Name("_br", ast.Load()), [node], [])

    def visit_Call(self, node):
        self.generic_visit(node)
        fn = node.func
        if isinstance(fn, ast.Name) and fn.id in ("abs", "min", "max", "int"):
            node.func = ast.Name("_" + fn.id, ast.Load())
        elif isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and fn.value.id == "math":
            if fn.attr in ("fabs", "atan2", "hypot", "fmod", "floor", "copysign"):
                node.func = ast.Name("_" + fn.attr, ast.Load())
            return ast.Call(ast.Name("_val", ast.Load()), [node], [])
        return node


class _Recorder:
    def __init__(self):
        self.trace: list = []

    def install(self, mod) -> None:
        t = self.trace
        mod._br = lambda c: t.append(bool(c)) or c
        mod._val = _bounded
        mod._abs = lambda v: t.append(v >= 0) or abs(v)
        mod._fabs = lambda v: t.append(v >= 0) or math.fabs(v)
        mod._min = lambda *v: t.append(v.index(min(v))) or min(v)
        mod._max = lambda *v: t.append(v.index(max(v))) or max(v)
        mod._atan2 = lambda p, q: t.append((q >= 0, p >= 0)) or math.atan2(_off_origin(p, q), q)
        mod._hypot = lambda p, q: math.hypot(_off_origin(p, q), q)
        mod._fmod = lambda p, q: t.append(math.trunc(p / q)) or math.fmod(p, q)
        mod._mod = lambda p, q: t.append(math.floor(p / q)) or p % q
        mod._floordiv = lambda p, q: t.append(math.floor(p / q)) or p // q
        mod._int = lambda v: (t.append(int(v)) if isinstance(v, float) else None) or int(v)
        mod._floor = lambda v: t.append(math.floor(v)) or math.floor(v)
        mod._copysign = lambda p, q: t.append((p >= 0, q >= 0)) or math.copysign(p, q)


def _off_origin(p, q):
    """``p``, or ValueError at the origin, where atan2 and hypot have no derivative (0/0: NaN)."""
    if math.hypot(p, q) < 1e-9:
        raise ValueError("at the origin")
    return p


def _bounded(v):
    """``v`` (a value assigned or returned), or OverflowError when a float in it leaves the bound, or
    ValueError when it is complex (a negative base to a fractional power: NaN in compiled code)."""
    for u in v if isinstance(v, tuple) else (v,):
        if isinstance(u, complex):
            raise ValueError(u)
        if isinstance(u, float) and not abs(u) <= BOUND:
            raise OverflowError(u)
    return v


def _oracle(src: str) -> str:
    tree = _Trace().visit(ast.parse(src))
    return ast.unparse(ast.fix_missing_locations(tree))


def _evaluate(oracle, rec: _Recorder, x, y, a, b, n, p):
    """``(result, a_out, b_out, trace)`` of CPython's ``f``, or None when it raises or leaves the bound."""
    import numpy as np

    rec.trace.clear()
    a, b = a.copy(), b.copy()
    try:
        r = float(oracle.f(x, y, a, b, n, p))
    except (ArithmeticError, ValueError, IndexError, RecursionError):
        return None
    vals = np.concatenate([[r], a, b])
    if not np.all(np.isfinite(vals)) or np.max(np.abs(vals)) > BOUND:
        return None
    return r, a, b, list(rec.trace)


def _fd(values, sel, h):
    plus, minus = values[h]
    return (sel(plus) - sel(minus)) / (2 * h)


def _agrees(ad: float, fds: list[float]) -> str:
    """``ok``, ``noisy`` (finite differences never settle: no verdict) or ``wrong``."""
    scale = 1.0 + max(abs(v) for v in fds)
    settled = False
    for k in range(len(fds) - 1):
        gap = abs(fds[k] - fds[k + 1])
        if gap <= 1e-6 * scale:
            settled = True
            if abs(ad - fds[k + 1]) <= 1e-5 * scale + 10 * gap:
                return "ok"
    if not settled:
        return "noisy"
    return "ok" if any(abs(ad - v) <= 1e-5 * scale for v in fds) else "wrong"


def _same_primal(got: float, want: float) -> bool:
    return abs(got - want) <= 1e-9 * (1.0 + abs(want))


# -- one program ---------------------------------------------------------------------------------

def _location_ok(exc, path: str) -> bool:
    return os.path.basename(path) + ":" in str(exc)


def _failure(exc, path: str) -> tuple[str, str] | None:
    """How a raised exception classifies: a typed compile error, an internal one, or None (compiled code raised)."""
    from gpucompiler.errors import GPUCompilerError

    first = str(exc).splitlines()[0] if str(exc) else ""
    if isinstance(exc, GPUCompilerError):
        if _location_ok(exc, path):
            return "typed", f"{type(exc).__name__}: {re.sub(r'^.*?:[0-9]+: ', '', first)}"
        return "untyped", f"{type(exc).__name__} without the program's line: {first}"
    if F._from_compiler(exc) or "enzyme_plugin" in _last_frame(exc):
        return "untyped", f"{type(exc).__name__}: {first}"
    return None


def _last_frame(exc) -> str:
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename if tb is not None else ""


def run_gradient_program(seed: int, workdir: str) -> tuple[str, str]:
    """Generate, differentiate in every way, compare with CPython's finite differences (in this process)."""
    import numpy as np

    from gpucompiler import jit

    src, m = generate(seed)
    path = os.path.join(workdir, f"fuzz_grad_{seed}.py")
    mod = F._load(src, path)
    oracle = F._load(_oracle(src), os.path.join(workdir, f"fuzz_grad_oracle_{seed}.py"))
    rec = _Recorder()
    rec.install(oracle)
    rng = np.random.default_rng(seed)
    opt = opt_level(seed)
    jit_rev = jit(mod.grad_reverse, plugins=("enzyme",), opt_level=opt)
    jit_fwd = jit(mod.grad_forward, plugins=("enzyme",), opt_level=opt)
    p = rng.integers(0, m, m)  # the index array (Const)
    checked, kernel_points = 0, []
    for _ in range(SAMPLES * 3):
        if checked >= SAMPLES:
            break
        x, y = (float(v) for v in rng.uniform(-1.5, 1.5, 2))
        a, b = rng.uniform(-1.5, 1.5, m), rng.uniform(-1.5, 1.5, m)
        n = int(rng.integers(0, m + 1))
        vx, vy = (float(v) for v in rng.normal(size=2))
        va, vb = rng.normal(size=m), rng.normal(size=m)
        wa, wb = rng.normal(size=m), rng.normal(size=m)
        base = _evaluate(oracle, rec, x, y, a, b, n, p)
        if base is None:
            continue
        values = {}
        for h in STEPS:
            pts = [_evaluate(oracle, rec, x + s * h * vx, y + s * h * vy, a + s * h * va, b + s * h * vb, n, p)
                   for s in (1, -1)]
            if any(p is None or p[3] != base[3] for p in pts):
                break
            values[h] = pts
        if len(values) < len(STEPS):
            continue  # near a branch point, a kink or the bound
        verdict = _check_sample(mod, jit_rev, jit_fwd, path, (x, y, a, b, n, p), (vx, vy, va, vb), (wa, wb),
                                base, values)
        if verdict is None:
            continue
        if verdict[0] != "right":
            return verdict
        checked += 1
        kernel_points.append((x, y, a, b, n, p))
    if not checked:
        return "skipped", "no input away from a branch point"
    if _WRITES_ARRAYS.search(src) or "\n    c = " in src:  # races between threads; kernels allocate no array
        return "right", ""
    return _check_kernel(mod, path, kernel_points[0], opt) or ("right", "")


def _check_kernel(mod, path, point, opt: int):
    """Each of :data:`THREADS` threads of a kernel on the CPU grid emulation differentiates ``f`` at its own
    ``x`` of checked inputs; the shared adjoints ``da``, ``db`` add up (atomically) to the sum of what
    ``autodiff`` from Python gives per thread (checked against finite differences above)."""
    import numpy as np

    from enzyme_plugin import Active, Const, Duplicated, Reverse, autodiff
    from gpucompiler.kernel import Kernel

    x0, y, a, b, n, p = point
    xs = x0 + 1e-3 * np.arange(THREADS)  # threads at nearby points (what Python gives there is the reference)
    want_dx, want_da, want_db = np.zeros(THREADS), np.zeros(len(a)), np.zeros(len(b))
    for k, x in enumerate(xs):
        da, db = np.zeros(len(a)), np.zeros(len(b))
        try:
            (want_dx[k],) = autodiff(Reverse, mod.f, Active(float(x)), Const(y), Duplicated(a.copy(), da),
                                     Duplicated(b.copy(), db), Const(n), Const(p))
        except Exception as exc:  # compiled code raised (a math domain error there): no verdict
            return _failure(exc, path)
        want_da += da
        want_db += db
    dxs, da, db = np.zeros(THREADS), np.zeros(len(a)), np.zeros(len(b))
    try:
        Kernel(mod.grad_kernel, plugins=("enzyme",), opt_level=opt)[1, THREADS, "cpu"](xs, dxs, y, a.copy(), da,
                                                                                       b.copy(), db, n, p)
    except Exception as exc:
        return _failure(exc, path) or ("wrong", f"the kernel raised {type(exc).__name__}: {exc}")
    where = f"at xs={xs.tolist()!r}, y={y!r}, a={a.tolist()!r}, b={b.tolist()!r}, n={n}, p={p.tolist()!r}"
    for what, got, want in (("dx", dxs, want_dx), ("da", da, want_da), ("db", db, want_db)):
        if not np.allclose(got, want, rtol=1e-9, atol=1e-9 * (1.0 + float(np.max(np.abs(want), initial=0.0)))):
            return "wrong", f"kernel: {what} {got.tolist()!r}, autodiff from Python per thread {want.tolist()!r} {where}"
    return None


def _check_sample(mod, jit_rev, jit_fwd, path, point, direction, weights, base, values):
    """``(kind, detail)`` of one input, or None when the finite differences never settle."""
    import numpy as np

    from enzyme_plugin import Active, Const, Duplicated, ForwardWithPrimal, ReverseWithPrimal, autodiff

    x, y, a, b, n, ix = point
    vx, vy, va, vb = direction
    wa, wb = weights
    r0, a0, b0, _ = base
    m = len(a)

    def loss(out):
        return out[0] + float(np.dot(wa, out[1])) + float(np.dot(wb, out[2]))

    want_dl = [_fd(values, loss, h) for h in STEPS]
    want_df = [_fd(values, lambda o: o[0], h) for h in STEPS]
    want_da = [[_fd(values, lambda o, k=k: o[1][k], h) for h in STEPS] for k in range(m)]
    want_db = [[_fd(values, lambda o, k=k: o[2][k], h) for h in STEPS] for k in range(m)]
    noisy = False
    where = f"at x={x!r}, y={y!r}, a={a.tolist()!r}, b={b.tolist()!r}, n={n}, p={ix.tolist()!r}"

    def compare(what, got, fds):
        nonlocal noisy
        v = _agrees(got, fds)
        noisy = noisy or v == "noisy"
        if v == "wrong":
            return "wrong", f"{what}: {got!r}, finite differences {fds[1]!r} .. {fds[-1]!r} {where}"
        return None

    def primal(what, got_r, got_a, got_b):
        if not _same_primal(got_r, r0):
            return "wrong", f"{what} primal {got_r!r}, CPython {r0!r} {where}"
        for nm, got, want in (("a", got_a, a0), ("b", got_b, b0)):
            if not all(_same_primal(float(g), float(w)) for g, w in zip(got, want)):
                return "wrong", f"{what} leaves {nm}={got.tolist()!r}, CPython {want.tolist()!r} {where}"
        return None

    calls = {
        "reverse": lambda aa, da, bb, db: autodiff(ReverseWithPrimal, mod.f, Active(x), Active(y),
                                                   Duplicated(aa, da), Duplicated(bb, db), Const(n), Const(ix)),
        "reverse in @jit": lambda aa, da, bb, db: jit_rev(x, y, aa, da, bb, db, n, ix),
    }
    rev: list = []  # (gradient of L along v, the sum of its terms' magnitudes) per reverse call
    for what, call in calls.items():
        aa, bb, da, db = a.copy(), b.copy(), wa.copy(), wb.copy()
        try:
            (gx, gy), p = call(aa, da, bb, db)
        except Exception as exc:
            return _failure(exc, path) or ("wrong", f"{what} raised {type(exc).__name__}: {exc} {where}")
        bad = primal(what, float(p), aa, bb)
        if bad:
            return bad
        got = gx * vx + gy * vy + float(np.dot(da, va)) + float(np.dot(db, vb))
        rev.append((got, abs(gx * vx) + abs(gy * vy) + float(np.dot(np.abs(da), np.abs(va)) + np.dot(np.abs(db), np.abs(vb)))))
        bad = compare(f"{what}: gradient along v", got, want_dl)
        if bad:
            return bad
    fcalls = {
        "forward": lambda ta, tb: autodiff(ForwardWithPrimal, mod.f, Duplicated(x, vx), Duplicated(y, vy),
                                           Duplicated(aa, ta), Duplicated(bb, tb), Const(n), Const(ix)),
        "forward in @jit": lambda ta, tb: jit_fwd(x, vx, y, vy, aa, ta, bb, tb, n, ix),
    }
    for what, call in fcalls.items():
        aa, bb, ta, tb = a.copy(), b.copy(), va.copy(), vb.copy()
        try:
            t, p = call(ta, tb)
        except Exception as exc:
            return _failure(exc, path) or ("wrong", f"{what} raised {type(exc).__name__}: {exc} {where}")
        bad = primal(what, float(p), aa, bb)
        if bad:
            return bad
        bad = compare(f"{what}: tangent of f", float(t), want_df)
        tl = float(t) + float(np.dot(wa, ta)) + float(np.dot(wb, tb))  # L's tangent: reverse's gradient along v
        scale = 1.0 + abs(float(t)) + float(np.dot(np.abs(wa), np.abs(ta)) + np.dot(np.abs(wb), np.abs(tb)))
        for g, gscale in rev:
            if not abs(tl - g) <= 1e-9 * (scale + gscale):
                return "wrong", f"{what}: tangent of L {tl!r}, reverse's gradient along v {g!r} {where}"
        for k in range(m):
            bad = bad or compare(f"{what}: tangent of a[{k}]", float(ta[k]), want_da[k])
            bad = bad or compare(f"{what}: tangent of b[{k}]", float(tb[k]), want_db[k])
        if bad:
            return bad
    return None if noisy else ("right", "")


# -- the driver ----------------------------------------------------------------------------------

def run(seeds: list[int], timeout: float = 60.0, batch: int = 50, progress=None,
        jobs: int = 1) -> dict[int, tuple[str, str]]:
    """``seed -> (kind, detail)``: batches of programs in child processes (fuzz_programs' driver)."""
    return F.run(seeds, timeout, batch, progress=progress, jobs=jobs, family="gradients")


def table(results) -> dict[str, int]:
    return F.table(results, KINDS)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--programs", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--jobs", type=int, default=1, help="batches run at once")
    ap.add_argument("--json", default=None, help="write counts and every failing program here")
    args = ap.parse_args(argv)
    seeds = list(range(args.seed, args.seed + args.programs))
    t0 = time.perf_counter()
    results = run(seeds, args.timeout, args.batch, jobs=args.jobs,
                  progress=lambda k: print(f"\r{k}/{len(seeds)}", end="", file=sys.stderr, flush=True))
    command = "python -m tests.enzyme_plugin.fuzz_gradients " + " ".join(argv or sys.argv[1:])
    return F.report(results, seeds, time.perf_counter() - t0, command, args.json, kinds=KINDS,
                    fine=("right", "typed", "skipped"), typed_words=r"@[\w.$]+|\b[0-9.]+\b")


if __name__ == "__main__":
    sys.exit(main())
