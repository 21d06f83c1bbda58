"""``print``, ``raise`` and ``assert`` in ``@jit`` functions and kernels, against CPython."""

import numpy as np
import pytest

from gpucompiler import device as gd, jit, kernel
from gpucompiler.errors import TypeInferenceError, UnsupportedError


class GridError(Exception):
    """A user exception class: compiled code raises this very class."""


def report(x, n, z):
    print("start", x, n)
    print(x > 0, np.float32(0.1), np.uint8(n), z, None)
    print()
    total = 0.0
    for i in range(n):
        total += x * i
        print("step", i, total)
    return total


def test_print_matches_cpython_and_interleaves_with_python_output(capsys):
    print("before")
    got = jit(report)(1.5, 3, 1 - 2.5j)
    print("after")
    compiled = capsys.readouterr().out
    print("before")
    want = report(1.5, 3, 1 - 2.5j)
    print("after")
    assert got == want and compiled == capsys.readouterr().out


def checked(x, n):
    assert x >= 0, "x must be non-negative"
    if n > 10:
        raise ValueError("n is too large")
    if n < 0:
        raise GridError("negative n")
    if n == 7:
        raise KeyError
    assert n != 3
    return x * n


def _line(text):
    import inspect

    lines, first = inspect.getsourcelines(checked)
    return first + next(k for k, line in enumerate(lines) if text in line)


# (pytest rewrites the asserts of this module, so CPython's AssertionError arguments are spelled out)
@pytest.mark.parametrize("args,exc,text,want", [
    ((-1.0, 1), AssertionError, "assert x >= 0", ("x must be non-negative",)),
    ((1.0, 11), ValueError, 'raise ValueError("n is too large")', None),
    ((1.0, -1), GridError, 'raise GridError("negative n")', None),
    ((1.0, 7), KeyError, "raise KeyError", None),
    ((1.0, 3), AssertionError, "assert n != 3", ())])
def test_raise_and_assert_raise_the_real_class_with_the_message_and_the_line(args, exc, text, want):
    if want is None:
        with pytest.raises(exc) as ref:
            checked(*args)
        want = ref.value.args
    with pytest.raises(exc) as info:
        jit(checked)(*args)
    assert type(info.value) is exc and info.value.args == want
    assert info.value.__notes__ == [f"raised at {__file__}:{_line(text)} (in {checked.__qualname__})"]
    assert jit(checked)(2.0, 4) == 8.0


def formatted(x):
    raise ValueError(f"bad {x}")


def not_a_class(x):
    raise x


def test_messages_that_are_not_constants_and_non_classes_are_typed_errors():
    with pytest.raises(UnsupportedError, match="one constant string"):
        jit(formatted)(1.0)
    with pytest.raises(TypeInferenceError, match="exception class"):
        jit(not_a_class)(1.0)


@kernel
def guarded(x, out):
    i = gd.grid(1)
    if i < x.shape[0]:
        if x[i] < 0:
            raise GridError("negative input")
        assert x[i] < 100.0, "input too large"
        out[i] = x[i] * 2.0
        if i == 0:
            print("thread", i, "value", x[i], out[i] > 1)


def test_kernel_raise_print_on_the_emulation_and_vprintf_in_ptx(capfd, check_ptx):
    x, out = np.arange(4.0), np.zeros(4)
    guarded[1, 8, "cpu"](x, out)
    np.testing.assert_array_equal(out, 2 * x)
    assert capfd.readouterr().out == "thread 0 value 0.0 False\n"
    with pytest.raises(GridError, match="negative input"):
        guarded[1, 8, "cpu"](np.array([1.0, -1.0]), np.zeros(2))
    with pytest.raises(AssertionError, match="input too large"):
        guarded[1, 8, "cpu"](np.array([1.0, 200.0]), np.zeros(2))
    ptx = guarded.inspect_asm(x, out)
    assert "vprintf" in ptx and "trap" in ptx
    for text in ("GridError: negative input", "AssertionError: input too large"):  # printed, then the trap
        assert ",".join(str(b) for b in text.encode()) in ptx.replace(" ", "")
    check_ptx(ptx)


def prints_while_differentiated(x):
    print("x", x)
    return x * x


def test_print_in_a_differentiated_function_is_a_typed_error_and_assert_raises_there():
    from enzyme_plugin import Active, Reverse, autodiff

    with pytest.raises(UnsupportedError, match="print in a function that is differentiated"):
        autodiff(Reverse, prints_while_differentiated, Active(2.0))

    def positive(x):
        assert x > 0, "x must be positive"
        return x * x

    assert autodiff(Reverse, positive, Active(3.0)) == (6.0,)
    with pytest.raises(AssertionError, match="x must be positive"):
        autodiff(Reverse, positive, Active(-3.0))
