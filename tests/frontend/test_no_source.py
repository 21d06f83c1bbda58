"""Functions without a source file (gpucompiler/frontend/bytecode/): the plain REPL through a
pseudo-terminal, ``python -c``, standard input, ``exec`` of a string, ``gradient`` of a lambda typed at
the prompt; the decompiler checked against CPython on the differential fuzzer's programs."""

from __future__ import annotations

import ast
import os
import pty
import re
import select
import subprocess
import sys
import time

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler.errors import UnsupportedError
from gpucompiler.frontend.bytecode import decompile
from tests.frontend import fuzz_programs as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = {**os.environ, "PYTHONPATH": ROOT, "PYTHON_BASIC_REPL": "1", "TERM": "dumb"}


def _exec(src: str) -> dict:
    ns: dict = {}
    exec(compile(src, "<string>", "exec"), ns)
    return ns


def _decompiled(fn, ns: dict):
    """``fn`` rebuilt by CPython from its decompiled ``def``, in the same globals."""
    node = decompile(fn)
    node.name = fn.__name__
    module = ast.fix_missing_locations(ast.Module([node], []))
    out: dict = {}
    exec(compile(module, "<decompiled>", "exec"), ns, out)
    return out[fn.__name__]


def _outcome(fn, args):
    try:
        return ("ok", fn(*args), args)
    except RecursionError:
        return ("raises", RecursionError)
    except Exception as exc:
        return ("raises", type(exc))


def _same(a, b) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "raises":
        return a[1] is b[1]
    return F._same_value(a[1], b[1]) and F._same_value(tuple(a[2][-1]), tuple(b[2][-1]))


def check_decompiled_like_cpython(seed: int) -> str:
    """``""`` when every function of fuzz program ``seed``, decompiled and run by CPython, gives the
    original's outcome on the program's inputs; else what differs."""
    src, inputs = F.generate(seed)
    original, rebuilt = _exec(src), _exec(src)
    for name, fn in list(rebuilt.items()):
        if callable(fn) and getattr(fn, "__code__", None) is not None and fn.__code__.co_filename == "<string>":
            rebuilt[name] = _decompiled(fn, rebuilt)
    for i, j, x, y, arr in inputs:
        want = _outcome(original["f"], (i, j, x, y, list(arr)))
        got = _outcome(rebuilt["f"], (i, j, x, y, list(arr)))
        if not _same(want, got):
            return f"seed {seed} at {(i, j, x, y, arr)}: CPython {want[:2]}, decompiled {got[:2]}"
    return ""


def test_decompiled_fuzz_programs_run_like_the_originals_under_cpython():
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    bad = [r for r in map(check_decompiled_like_cpython, range(300)) if r]
    assert not bad, bad[:5]


def run_compiled_from_string(seed: int) -> tuple[str, str]:
    """The fuzzer's program ``seed`` exec'd from a string (no file: the bytecode route) and compiled,
    against CPython on the oracle's source (fuzz_programs.classify)."""
    src, inputs = F.generate(seed)
    mod = _exec(src)
    oracle = _exec(F._oracle_source(src))
    compiled = jit(mod["f"])
    py, jt = [], []
    for i, j, x, y, arr in inputs:
        lst = list(arr)
        notes = F._Notes()
        oracle["_pow"], oracle["_toint"] = notes.pow, notes.toint
        out = F._outcome(oracle["f"], (i, j, x, y, lst))
        py.append((("ok", (out[1], lst)) if out[0] == "ok" else out) + (notes.beyond,))
        a = np.array(arr)
        out = F._outcome(compiled, (i, j, x, y, a))
        jt.append(("ok", (out[1], a.tolist())) if out[0] == "ok" else out)
        if out[0] == "raises" and F._is_compile_error(out):
            break
    return F.classify(py, jt)


def _compiled_batch(seeds: list[int]) -> dict[int, tuple[str, str]]:
    """Each seed in a subprocess batch (a crash names its seed)."""
    code = ("import sys, json; sys.setrecursionlimit(1000)\n"
            "from tests.frontend.test_no_source import run_compiled_from_string as r\n"
            "for s in json.loads(sys.argv[1]):\n"
            "    print('start', s, flush=True); k, d = r(s); print('done', s, k, json.dumps(d), flush=True)\n")
    import json
    out = subprocess.run([sys.executable, "-c", code, json.dumps(seeds)], capture_output=True, text=True,
                         timeout=600, cwd=ROOT, env=ENV)
    results: dict[int, tuple[str, str]] = {}
    started = None
    for line in out.stdout.splitlines():
        parts = line.split(" ", 3)
        if parts[0] == "start":
            started = int(parts[1])
        elif parts[0] == "done":
            results[int(parts[1])] = (parts[2], json.loads(parts[3]))
    if started is not None and started not in results:
        results[started] = ("crash", out.stderr[-500:])
    return results


def test_fuzz_programs_compiled_from_strings_are_right_or_typed():
    results = _compiled_batch(list(range(60)))
    bad = {s: r for s, r in results.items() if r[0] not in ("right", "typed")}
    assert len(results) == 60 and not bad, bad
    assert sum(r[0] == "right" for r in results.values()) >= 0.6 * len(results), results


# -- real processes: python -c, standard input, the plain REPL on a pseudo-terminal ----------------

PROGRAM = """\
import numpy as np
from gpucompiler import jit
from enzyme_plugin import gradient
def total(a, n):
    s = 0.0
    for i in range(n):
        if a[i] > 0 and i != 1:
            s += a[i] * a[i]
        elif a[i] < -5.0:
            break
    k = 0
    while k < 3:
        k += 1
    return s + k
print("total", jit(total)(np.array([1.0, 2.0, 3.0, -9.0, 4.0]), 5))
print("grad", gradient(lambda x: x * x * x, 2.0))
"""


def _check(stdout: str) -> None:
    assert "total 13.0" in stdout  # 1 + 9 (a[1] skipped, stops at -9) + 3
    assert "grad 12.0" in stdout  # d/dx x**3 at 2


def test_python_dash_c_compiles_and_differentiates():
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=300, env=ENV)
    assert out.returncode == 0, out.stderr
    _check(out.stdout)


def test_a_program_piped_on_standard_input_compiles_and_differentiates():
    out = subprocess.run([sys.executable, "-"], input=PROGRAM, capture_output=True, text=True, timeout=300,
                         env=ENV)
    assert out.returncode == 0, out.stderr
    _check(out.stdout)


def _repl(lines: list[str], timeout: float = 300.0) -> str:
    """The plain interactive ``python`` on a pseudo-terminal, typed into line by line."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the REPL, with the pty as its terminal
        os.chdir(ROOT)
        os.execve(sys.executable, [sys.executable, "-q"], ENV)
    out, deadline = b"", time.monotonic() + timeout
    try:
        for line in [*lines, "print('END' + 'MARK')", "exit()"]:
            os.write(fd, line.encode() + b"\r")
            time.sleep(0.05)
        while time.monotonic() < deadline and b"ENDMARK" not in out.replace(b"'END' + 'MARK'", b""):
            ready, _, _ = select.select([fd], [], [], 1.0)
            if ready:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    break
    finally:
        os.close(fd)
        os.waitpid(pid, 0)
    return out.decode(errors="replace").replace("\r", "")


def test_functions_typed_at_the_plain_repl_compile_and_differentiate():
    lines = [line for line in PROGRAM.splitlines()]
    # the REPL ends a block at an empty line
    block = [*lines[:3], *lines[3:14], "", *lines[14:]]
    _check(_repl(block))


def test_an_unsupported_construct_at_the_repl_is_a_typed_error_naming_the_line():
    shown = _repl(["from gpucompiler import jit", "def g(n):", "    return [i for i in range(n)]", "",
                   "try:", "    jit(g)(3)", "except Exception as e:", "    print(f'{type(e).__name__} {e}')", ""])
    # one write for the message: the terminal echoes the lines typed ahead between a print's separate writes
    # 3.10-3.12 keep no source (the decompiler names the construct); 3.13's REPL keeps it in linecache
    assert "UnsupportedError <stdin>" in shown and ":2: unsupported construct" in shown, shown


# -- the decompiler's hard cases: order of evaluation, stack juggling, control flow --------------

CASES = """\
def swap(a, b):
    a, b = b, a
    return a - 2 * b
def rotate(a, b, c):
    a, b, c = c, a, b
    return a * 100 + b * 10 + c
def chained(a, b, c):
    return 1.0 if a < b <= c else -1.0
def values(a, b):
    x = a and b
    y = a or b
    z = (a if a > b else b) + (0 if not a else 1)
    return x + y * 10 + z * 100
def loops(n):
    s = 0
    i = 0
    while True:
        i += 1
        if i % 3 == 0:
            continue
        if i > n:
            break
        for j in range(i):
            if j == 2:
                break
            s += j * i
    else_part = 0
    for k in range(n):
        if k > 100:
            return -1
        else_part += k
    return s * 1000 + else_part
def early(n):
    for i in range(n):
        if i * i > n:
            return i
    return -1
def augmented(a, i):
    a[i] += 1.5
    a[i + 1] *= a[i]
    a[0] -= a[1] if i else 2.0
    return a[0] + a[1] + a[2]
def negated(x, y):
    if not (x > 0 and y > 0):
        return -1
    elif x > y or y > 2 * x:
        return 1
    return 0
def unpack(x, y):
    q, r = divmod(x, y)
    return q * 10 + r
def rotated_continue(n):
    t = 0
    w = 0
    while w < 6 and t < 20:
        w += 1
        if n < w <= 2 * n:
            continue
        t += w
    return t * 100 + w
def nested(x, n):
    k = 3.0
    sq = lambda y: y * y + k
    def step(a, b=2.0):
        return a * b + k
    t = 0.0
    for i in range(n):
        t += step(sq(x), 0.5) + step(1.0)
    return t
def for_else(n):
    t = 0
    for i in range(n):
        t += i
        if t > 5:
            break
    else:
        t = -t
    t *= 2
    return t
"""
CASE_ARGS = {"swap": [(1, 2), (5.0, -3.0)], "rotate": [(1, 2, 3)], "chained": [(1, 2, 2), (2, 1, 3), (1, 2, 1)],
             "values": [(0, 5), (3, 0), (2, 7), (7, 2)], "loops": [(0,), (5,), (9,)], "early": [(0,), (10,), (50,)],
             "augmented": [(0, 0), (0, 1)], "negated": [(1, 1), (-1, 2), (1, 5), (3, 2), (2, 3)],
             "unpack": [(17, 5), (-7, 2)], "for_else": [(0,), (3,), (9,)],
             "rotated_continue": [(0,), (1,), (2,), (5,)], "nested": [(2.0, 3), (-1.5, 0)]}


def _array_args(name, args):
    return [np.array([1.0, 2.0, 3.0]), *args[1:]] if name == "augmented" else list(args)


@pytest.mark.parametrize("name", sorted(CASE_ARGS))
def test_hard_cases_decompile_and_compile_to_cpython_results(name):
    ns = _exec(CASES)
    rebuilt = _decompiled(ns[name], ns)
    compiled = jit(ns[name])
    for args in CASE_ARGS[name]:
        want = ns[name](*_array_args(name, args))
        assert rebuilt(*_array_args(name, args)) == want
        assert compiled(*_array_args(name, args)) == want


@pytest.mark.parametrize("src, what, line", [
    ("def g(n):\n    return [i for i in range(n)]\n", "nested|list|comprehension", 2),
    ("def g(x):\n    try:\n        return x\n    except ValueError:\n        return 0\n", "try|bytecode", 2),
    ("def g(x):\n    global G\n    G = x\n    return x\n", "global", 3),
    ("def g(x):\n    if x > 1:\n        raise ValueError(x)\n    return x\n", "raise", 3),
])
def test_what_the_decompiler_cannot_write_back_is_a_typed_error_with_the_line(src, what, line):
    ns = _exec(src)
    with pytest.raises(UnsupportedError, match=what) as info:
        jit(ns["g"])(2)
    assert info.value.filename == "<string>" and info.value.line >= line


def test_closures_slices_and_keywords_through_the_bytecode_route():
    ns = _exec("import numpy as np\n"
               "def factory(k):\n"
               "    def inner(a):\n"
               "        return a[1:].sum() * k + a[:2].sum()\n"
               "    return inner\n"
               "def setter(a, v):\n"
               "    a[:2] = v\n"
               "    a[1::2] = -v\n"
               "    return np.sum(a[::-1]) + np.zeros(3, dtype=np.float64)[0]\n")
    a = np.array([1.0, 2.0, 3.0, 4.0])
    inner = ns["factory"](3.0)  # its free variable k comes from __closure__
    assert jit(inner)(a) == inner(a) == 30.0
    b, c = a.copy(), a.copy()
    assert jit(ns["setter"])(b, 5.0) == ns["setter"](c, 5.0) == -2.0
    assert b.tolist() == c.tolist() == [5.0, -5.0, 3.0, -5.0]


# -- random control flow: nested if/elif/else, while, for, break, continue, early returns, and/or values -----

def control_flow_program(seed: int) -> str:
    """A random function ``g(a, b, n)`` of integers whose control flow nests every form the
    structurer writes back (each loop bounded)."""
    import random

    rng = random.Random(seed)
    names = ["a", "b", "n", "t"]

    def expr(depth=0) -> str:
        r = rng.random()
        if depth > 1 or r < 0.3:
            return rng.choice([*names, str(rng.randint(-3, 5))])
        if r < 0.5:
            return f"({expr(depth + 1)} {rng.choice(['+', '-', '*', '%', '//'])} {rng.randint(1, 4)})"
        if r < 0.65:
            return f"({expr(depth + 1)} if {cond(depth + 1)} else {expr(depth + 1)})"
        if r < 0.8:
            return f"({expr(depth + 1)} {rng.choice(['and', 'or'])} {expr(depth + 1)})"
        return f"max({expr(depth + 1)}, {expr(depth + 1)})"

    def cond(depth=0) -> str:
        r = rng.random()
        c = f"{expr(depth + 1)} {rng.choice(['<', '<=', '==', '!=', '>'])} {expr(depth + 1)}"
        if r < 0.25 and depth < 2:
            return f"({c} {rng.choice(['and', 'or'])} {cond(depth + 1)})"
        if r < 0.35:
            return f"not ({c})"
        if r < 0.45:
            return f"{expr(depth + 1)} < {expr(depth + 1)} <= {expr(depth + 1)}"
        return c

    def block(indent: int, depth: int, loops: int) -> list[str]:
        pad, out = "    " * indent, []
        for _ in range(rng.randint(1, 3)):
            r = rng.random()
            if r < 0.3 or depth > 2:
                out.append(f"{pad}{rng.choice(names[:2] + ['t'])} {rng.choice(['=', '+=', '-='])} {expr()}")
            elif r < 0.5:
                out.append(f"{pad}if {cond()}:")
                out += block(indent + 1, depth + 1, loops)
                for _ in range(rng.randint(0, 2)):
                    out.append(f"{pad}elif {cond()}:")
                    out += block(indent + 1, depth + 1, loops)
                if rng.random() < 0.5:
                    out.append(f"{pad}else:")
                    out += block(indent + 1, depth + 1, loops)
            elif r < 0.65:
                v = f"i{depth}"
                out.append(f"{pad}for {v} in range({rng.choice(['n', '3', 'a % 4'])}):")
                out.append(f"{pad}    t += {v}")
                out += block(indent + 1, depth + 1, loops + 1)
            elif r < 0.8:
                w = f"w{depth}"
                out.append(f"{pad}{w} = 0")
                out.append(f"{pad}while {w} < 4{rng.choice(['', ' and ' + cond()])}:")
                out.append(f"{pad}    {w} += 1")
                out += block(indent + 1, depth + 1, loops + 1)
            elif r < 0.9 and loops:
                out.append(f"{pad}if {cond()}:")
                out.append(f"{pad}    {rng.choice(['break', 'continue'])}")
            else:
                out.append(f"{pad}if {cond()}:")
                out.append(f"{pad}    return {expr()}")
        return out

    body = ["def g(a, b, n):", "    t = 0", *block(1, 0, 0), "    return a * 10000 + b * 100 + t"]
    return "\n".join(body) + "\n"


def check_control_flow(seed: int) -> str:
    """``""`` when program ``seed``, decompiled (or a typed error), runs like CPython's on a grid of inputs."""
    src = control_flow_program(seed)
    ns = _exec(src)
    try:
        rebuilt = _decompiled(ns["g"], ns)
    except UnsupportedError:
        return ""
    for a in (-2, 0, 1, 3, 7):
        for b in (-1, 0, 2, 5):
            for n in (0, 1, 4):
                want, got = _outcome(ns["g"], (a, b, n)), _outcome(rebuilt, (a, b, n))
                if want[:2] != got[:2]:
                    return f"seed {seed} at {(a, b, n)}: CPython {want[:2]}, decompiled {got[:2]}\n{src}"
    return ""


def test_random_control_flow_decompiles_to_the_same_results():
    bad = [r for r in map(check_control_flow, range(400)) if r]
    assert not bad, bad[:3]


@pytest.mark.skipif(sys.version_info < (3, 13), reason="the new REPL (pyrepl) is 3.13's")
def test_functions_typed_at_the_new_repl_of_313_compile(monkeypatch):
    monkeypatch.delitem(ENV, "PYTHON_BASIC_REPL")
    monkeypatch.setitem(ENV, "TERM", "xterm")
    # it indents the body itself and keeps each input's source in linecache (<python-input-N>)
    out = _repl(["from gpucompiler import jit", "def h(x):", "return x * 3 + 1", "", "print('h', jit(h)(4))"])
    assert "h 13" in re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]|\x1b[=>]", "", out), out


def test_a_string_execd_under_python_dash_c_is_not_read_from_the_commands_text():
    # 3.13 registers the command's text in linecache as <string>, the name exec() gives a string too:
    # its line 2 is another `def f`, which parses, and was compiled in place of the exec'd one (105)
    code = ("from gpucompiler import jit\n"
            "def f(x):\n"
            "    return x + 100\n"
            "ns = {}\n"
            "exec('import math\\ndef f(x):\\n    return x * 2\\n', ns)\n"
            "print('exec', jit(ns['f'])(5), 'command', jit(f)(5))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=ENV)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["exec", "10", "command", "105"]
