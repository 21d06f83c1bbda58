"""Fuzz test: generated functions and inputs; a result equal to CPython's or a typed error."""

import importlib.util
import random

import pytest
from hypothesis import given, settings, strategies as st

from gpucompiler import jit
from gpucompiler.errors import GPUCompilerError

# no `**`: int64 wraps where Python ints grow (the differential suite bounds exponents)
_OPS = ["+", "-", "*", "//", "%", "/", "<", "==", "and", "or", "&", ">="]


def _expr(rng, depth, names):
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(names + [str(rng.randint(-5, 9)), "2.5", "True"])
    kind = rng.random()
    a, b = _expr(rng, depth - 1, names), _expr(rng, depth - 1, names)
    if kind < 0.1:
        return f"({a} if {b} else {_expr(rng, depth - 1, names)})"
    if kind < 0.15:
        return f"{rng.choice(['min', 'max'])}({a}, {b})"
    if kind < 0.2:
        return f"abs({a})"
    return f"({a} {rng.choice(_OPS)} {b})"


def _program(seed):
    rng = random.Random(seed)
    lines = ["def f(x, y):", "    s = 0"]
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        e = _expr(rng, 3, ["x", "y", "s"])
        if r < 0.4:
            lines.append(f"    s = {e}")
        elif r < 0.7:
            lines += [f"    for i in range({rng.randint(0, 6)}):", f"        s = s + ({e}) * i"]
        else:
            lines += [f"    if {e}:", f"        return {_expr(rng, 2, ['x', 'y', 's'])}"]
    lines.append(f"    return {_expr(rng, 2, ['x', 'y', 's'])}")
    return "\n".join(lines) + "\n"


def _load(tmp_path, seed):
    path = tmp_path / f"fuzz_{seed}.py"
    path.write_text(_program(seed))
    spec = importlib.util.spec_from_file_location(f"fuzz_{seed}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.f


@pytest.mark.parametrize("seed", range(60))
def test_generated_function(tmp_path, seed):
    f = _load(tmp_path, seed)
    compiled = jit(f)

    @settings(max_examples=10, deadline=None)
    @given(st.integers(-50, 50), st.integers(-50, 50))
    def check(x, y):
        try:
            want = f(x, y)
        except (ZeroDivisionError, OverflowError, ValueError, TypeError):
            return  # CPython raised: the differential suite checks raising separately
        if isinstance(want, complex) or (isinstance(want, int) and abs(want) >= 2**62):
            return
        try:
            got = compiled(x, y)
        except GPUCompilerError:
            return  # a typed compile error is acceptable
        except ValueError as exc:  # int ** negative int at run time (documented limitation)
            assert "negative exponent" in str(exc)
            return
        if isinstance(want, float) and want != want:
            assert got != got
        elif isinstance(want, float):
            assert got == pytest.approx(want, rel=1e-9, abs=1e-9), _program(seed)
        else:
            assert got == want, _program(seed)

    check()
