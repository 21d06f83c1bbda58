"""Errors stop execution: a failed check returns at once, through every call level, as in CPython."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from gpucompiler import jit


def _outcome(fn, *args):
    """``(result, exception type, message)`` of ``fn(*args)``."""
    try:
        return fn(*args), None, None
    except Exception as exc:
        return None, type(exc), str(exc)


def _same_outcome(fn, *args):
    """Run CPython and the compiled function on copies of the arrays; results and arrays agree."""
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want = _outcome(fn, *ref)
    got = _outcome(jit(fn), *mine)
    if want[1] is ZeroDivisionError:  # CPython's wording differs between versions and types
        want, got = want[:2], got[:2]
    assert got == want
    for r, m in zip(ref, mine):
        if isinstance(r, np.ndarray):
            np.testing.assert_array_equal(m, r)
    return got


def test_divide_then_loop_raises_promptly(tmp_path):
    # without the early return the loop below runs forever on a garbage quotient
    script = tmp_path / "spin.py"
    script.write_text(textwrap.dedent("""
        from gpucompiler import jit

        @jit
        def spin(x, y):
            q = x // y
            n = 0
            while q != x + 1:
                n += 1
            return n

        try:
            spin(3, 0)
        except ZeroDivisionError as exc:
            print("raised", type(exc).__name__)
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "raised ZeroDivisionError"


def write_around_division(out, x, y):
    out[0] = 1
    out[1] = x // y
    out[2] = 3
    return out[1]


def test_writes_after_the_failing_point_are_not_performed():
    _, exc = _same_outcome(write_around_division, np.zeros(3, np.int64), 7, 0)
    assert exc is ZeroDivisionError
    assert _same_outcome(write_around_division, np.zeros(3, np.int64), 7, 2)[0] == 3


def reciprocals(x, out):
    for i in range(x.shape[0]):
        out[i] = 1.0 / float(x[i])
    return 0


def test_loop_stops_at_the_first_failing_iteration():
    x = np.array([1.0, 2.0, 4.0, 0.0, 5.0, 8.0])
    _, exc = _same_outcome(reciprocals, x, np.full(6, -1.0))
    assert exc is ZeroDivisionError


def level3(a, d):
    return a % d


def level2(a, d, out):
    r = level3(a, d)
    out[1] = r
    return r + 1


def level1(a, d, out):
    out[0] = 5
    r = level2(a, d, out)
    out[2] = r
    return r


def test_error_propagates_through_call_levels():
    assert _same_outcome(level1, 9, 0, np.zeros(3, np.int64))[1] is ZeroDivisionError
    assert _same_outcome(level1, 9, 4, np.zeros(3, np.int64))[0] == 2


def countdown(n, out):
    if n == 0:
        return 1 // n
    r = countdown(n - 1, out)
    out[n] = r
    return r + n


def test_error_propagates_through_recursion():
    _, exc = _same_outcome(countdown, 5, np.zeros(6, np.int64))
    assert exc is ZeroDivisionError


def pair_after_error(x, y):
    q = x / y
    return q, x


def void_after_error(out, x, y):
    out[0] = x / y


def test_tuple_and_none_results_raise():
    assert _same_outcome(pair_after_error, 1.0, 0.0)[1] is ZeroDivisionError
    assert _same_outcome(pair_after_error, 1.0, 2.0)[0] == (0.5, 1.0)
    assert _same_outcome(void_after_error, np.zeros(1), 1.0, 0.0)[1] is ZeroDivisionError


def index_in_callee(a, i):
    return a[i]


def bounds_in_callee(a, i, out):
    v = index_in_callee(a, i)
    out[0] = v
    return v


def test_index_error_in_callee_stops_the_caller():
    _, exc, msg = _same_outcome(bounds_in_callee, np.arange(4.0), 4, np.zeros(1))
    assert exc is IndexError and msg == "index 4 is out of bounds for axis 0 with size 4"


def test_error_paths_are_cold():
    from gpucompiler import types as T

    text = jit(level1).inspect_llvm(T.int64, T.int64, T.ArrayType(T.int64, 1, "C"))
    assert "branch_weights" in text and "PyErr_SetString" in text


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
