"""Programs the gradient fuzzer (fuzz_gradients.py) found differentiated wrongly or not at all, minimised;
each derivative against central finite differences of the CPython-run function."""

import math
import os

import numpy as np

from enzyme_plugin import Active, Const, Duplicated, Forward, Reverse, autodiff


def _fd(f, x, *rest, h=1e-6):
    return (f(x + h, *rest) - f(x - h, *rest)) / (2 * h)


def _nested_while_on_an_invariant(y, n):
    for _ in range(n):
        k = 0
        while k < n + 1 and n >= 2:  # unswitched and unrolled: a switch reaches one exit by two cases
            y = math.cos(y)
            k += 1
    return y


def test_reverse_through_a_switch_with_two_cases_to_one_block():
    for n in (0, 1, 2, 3, 5):
        (dy,) = autodiff(Reverse, _nested_while_on_an_invariant, Active(0.7), Const(n))
        assert abs(dy - _fd(_nested_while_on_an_invariant, 0.7, n)) < 1e-8, n
        (t,) = autodiff(Forward, _nested_while_on_an_invariant, Duplicated(0.7, 1.0), Const(n))
        assert abs(t - dy) < 1e-12, n


def _inverse_hyperbolic(x, y):
    return math.asinh(x * y) + math.acosh(1.5 + x * x) * math.atanh(0.5 * math.tanh(y))


def test_inverse_hyperbolic_functions_have_derivatives():
    x, y = 0.7, -0.4
    dx, dy = autodiff(Reverse, _inverse_hyperbolic, Active(x), Active(y))
    assert abs(dx - _fd(_inverse_hyperbolic, x, y)) < 1e-8
    assert abs(dy - _fd(lambda v: _inverse_hyperbolic(x, v), y)) < 1e-8
    (t,) = autodiff(Forward, _inverse_hyperbolic, Duplicated(x, 1.0), Duplicated(y, 2.0))
    assert abs(t - (dx + 2.0 * dy)) < 1e-12


def _store_and_reduce(x, y, b, n):
    s = 1.0
    for i in range(n):
        b[(i + 1) % 2] = math.sin(x / (1.5 + x * x))  # a scatter when the loop is vectorised
        s = s + (x if i < 3 else y) * 1.25
    return s + b[0]


def test_a_loop_the_vectorizer_scattered_is_differentiated():
    """The host's cost model vectorised this loop with a masked scatter before AD (an ADError); the
    pipeline before AD now runs no vectorizer."""
    b, db = np.zeros(2), np.zeros(2)
    dx, dy = autodiff(Reverse, _store_and_reduce, Active(0.3), Active(0.2), Duplicated(b, db), Const(20))
    fx = _fd(lambda v: _store_and_reduce(v, 0.2, np.zeros(2), 20), 0.3)
    assert abs(dx - fx) < 1e-7 and abs(dy - 17 * 1.25) < 1e-9


def _floored(x, y):
    return x * float(math.floor(3.0 * y)) + y * int(x * 2.0) + math.fmod(x, 0.75)


def test_float_to_int_conversions_carry_no_derivative():
    x, y = 0.9, 0.55  # floor(1.65) = 1, int(1.8) = 1, fmod(0.9, 0.75) = 0.15
    dx, dy = autodiff(Reverse, _floored, Active(x), Active(y))
    assert (dx, dy) == (2.0, 1.0)
    (t,) = autodiff(Forward, _floored, Duplicated(x, 1.0), Duplicated(y, 1.0))
    assert t == 3.0


def test_an_ad_error_inside_a_compiler_builtin_names_the_users_line():
    import gpucompiler
    from gpucompiler import llvm as ir
    from enzyme_plugin.ad.errors import python_line

    own = os.path.join(os.path.dirname(os.path.abspath(gpucompiler.__file__)), "interpreter", "builtins", "pyhelpers.py")
    m = ir.parse(f"""
define double @f(double %x) {{
entry:
  %a = fmul double %x, 2.0, !gpuc.loc !0
  %b = call double @weird(double %a), !gpuc.loc !1
  ret double %b
}}
declare double @weird(double)
!0 = !{{!"/home/user/prog.py", i32 7}}
!1 = !{{!"{own}", i32 37}}
""")
    call = next(i for i in m.functions["f"].blocks[0].instructions if i.opcode == "call")
    assert python_line(call) == ("/home/user/prog.py", 7)  # it was the builtin's own file and line


def _poly(x, c, n):
    s = 0.0
    for k in range(n):
        s += c[k] * x ** k  # x ** 0 at x = 0: its derivative 0 * 0 ** -1 was NaN
    return s


def _powers(x, y):
    return math.pow(x, y) + x ** 0 + math.pow(x, 0.0) * y


def test_powers_at_zero_have_the_limits_derivatives_not_nan():
    c = np.array([1.0, 2.0, 3.0])
    assert autodiff(Reverse, _poly, Active(0.0), Const(c), Const(3)) == (2.0,)
    assert autodiff(Forward, _poly, Duplicated(0.0, 1.0), Const(c), Const(3)) == (2.0,)
    dx, dy = autodiff(Reverse, _powers, Active(0.0), Active(2.0))
    assert (dx, dy) == (0.0, 1.0)  # d/dy 0**y = 0 for y > 0 (was 0 * log(0) = NaN)
    (t,) = autodiff(Forward, _powers, Duplicated(0.0, 1.0), Duplicated(2.0, 1.0))
    assert t == 1.0


def _unused_zeros(x, a, n):
    c = np.zeros(len(a))  # noqa: F841 (made and never used: a memset of bytes no load or store types)
    for i in range(n):
        a[i] *= x
    return x * x


def test_an_array_made_and_never_used_does_not_stop_the_gradient():
    a, da = np.array([1.0, 2.0]), np.array([1.0, 1.0])  # da: the cotangent of a's final values
    (dx,) = autodiff(Reverse, _unused_zeros, Active(0.5), Duplicated(a, da), Const(2))
    assert dx == 2 * 0.5 + 1.0 + 2.0 and da.tolist() == [0.5, 0.5]


def _dead_copy(x, b):
    c = np.copy(b)  # noqa: F841 (the copy loop becomes a memcpy from b that nothing else types)
    return x * x


def _copy_then_write(x, b):
    c = np.copy(b)
    b[0] = x * b[1]
    return c[0] * x


def test_a_copy_of_an_argument_array_knows_the_arrays_element_type():
    """LLVM turns the typed copy loop of np.copy into an untyped memcpy; the array argument is typed
    before the optimiser (Enzyme's "enzyme_type" parameter attribute): it was an ADError, cannot deduce
    the type of the memory a memcpy writes (fuzzer seeds 3245, 3441, 3925, 3955, 4083, 6098, 6179, 6203)."""
    b, db = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])  # db: the cotangent of b's final values
    assert autodiff(Reverse, _dead_copy, Active(0.7), Duplicated(b, db)) == (2 * 0.7,)
    assert db.tolist() == [0.5, -1.0, 2.0]  # b_out = b: the cotangent passes through
    (t,) = autodiff(Forward, _dead_copy, Duplicated(0.7, 1.0), Duplicated(b, np.ones(3)))
    assert t == 2 * 0.7
    x, b, db = 0.7, np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    (dx,) = autodiff(Reverse, _copy_then_write, Active(x), Duplicated(b, db))
    # f = b0 * x, b_out = (x * b1, b1, b2): exact derivatives of f + db . b_out
    assert dx == 1.0 + 0.5 * 2.0 and db.tolist() == [x, -1.0 + 0.5 * x, 2.0]
    tb = np.array([0.1, 0.2, 0.3])
    b = np.array([1.0, 2.0, 3.0])
    (t,) = autodiff(Forward, _copy_then_write, Duplicated(x, 1.0), Duplicated(b, tb))
    assert abs(t - (1.0 + x * 0.1)) < 1e-15 and abs(tb[0] - (2.0 + x * 0.2)) < 1e-15


def _slice_update_of_a_new_array(x, a, n):
    c = np.zeros(len(a))
    if n <= 1:
        c[1:] += 0.5 * a[:-1]
    return x * c[1]


def test_a_slice_update_of_an_array_made_in_the_function():
    """The records of the array and of its temporary copy merged in one phi at their data slot (8 bytes in):
    the type analysis put that pointer anywhere in the record, over its reference count, and the count's
    integer store was an ADError (fuzzer seeds 10102, 10111, 10155)."""
    for n, want in ((0, 0.5), (3, 0.0)):
        a, da = np.array([1.0, 2.0, -1.0]), np.zeros(3)
        assert autodiff(Reverse, _slice_update_of_a_new_array, Active(1.5), Duplicated(a, da), Const(n)) == (want * a[0],)
        assert da.tolist() == [1.5 * want, 0.0, 0.0]
        (t,) = autodiff(Forward, _slice_update_of_a_new_array, Duplicated(1.5, 1.0), Duplicated(a, np.ones(3)), Const(n))
        assert t == want * a[0] + 1.5 * want
