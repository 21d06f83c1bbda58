"""Compiled code gives CPython's answer or CPython's exception: exact int/float comparisons,
checked float -> int conversions, math domain and range errors (and ErrorModel.NUMPY),
unbound locals, undefined globals, min/max of one number, mixed tuple returns."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import gpucompiler as gpuc
from gpucompiler import ErrorModel
from gpucompiler.errors import ConfigError, TypeInferenceError


def outcome(fn, *args):
    """``("ok", value)`` or ``("raises", exception type)``."""
    try:
        return "ok", fn(*args)
    except Exception as exc:
        return "raises", type(exc)


def same(a, b) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "raises":
        return a[1] is b[1]
    x, y = a[1], b[1]
    if isinstance(x, float) and math.isnan(x):
        return isinstance(y, float) and math.isnan(y)
    return x == y and type(x) is type(y)


# -- int == float ---------------------------------------------------------------------

def compare_all(a, b):
    return (a == b, a != b, a < b, a <= b, a > b, a >= b, b == a, b != a, b < a, b <= a, b > a, b >= a)


INTS = [2**53 + 1, 2**53, 2**53 - 1, -(2**53) - 1, 2**63 - 1, -(2**63), 0, 1, -1, 2**62 + 1]
FLOATS = [9007199254740992.0, 9007199254740994.0, -9007199254740992.0, 2.0**63, -(2.0**63),
          math.nan, math.inf, -math.inf, 0.5, 0.0, 4.611686018427388e18]


def test_int_float_comparisons_are_exact_as_in_cpython():
    compiled = gpuc.jit(compare_all)
    for i, f in itertools.product(INTS, FLOATS):
        assert compiled(i, f) == compare_all(i, f), (i, f)
    assert compiled(2**53 + 1, 9007199254740992.0)[0] is False


def compare_with_constant(i):
    return i == 9007199254740992.0, i < 9007199254740992.0, i <= 9007199254740992.0


def test_int_compared_with_a_float_constant_beyond_2_53_is_exact():
    compiled = gpuc.jit(compare_with_constant)
    for i in (2**53 - 1, 2**53, 2**53 + 1, 2**53 + 2):
        assert compiled(i) == compare_with_constant(i), i


# -- float -> int -------------------------------------------------------------------------

def to_int(x):
    return int(x)


def floor_(x):
    return math.floor(x)


def ceil_(x):
    return math.ceil(x)


def trunc_(x):
    return math.trunc(x)


@pytest.mark.parametrize("fn", [to_int, floor_, ceil_, trunc_])
@pytest.mark.parametrize("x", [math.nan, math.inf, -math.inf, 2.5, -2.5, -(2.0**63), 1e300])
def test_float_to_int_of_special_values_raises_like_cpython(fn, x):
    got, want = outcome(gpuc.jit(fn), x), outcome(fn, x)
    if want[0] == "ok" and not -(2**63) <= want[1] < 2**63:
        assert got == ("raises", OverflowError)  # CPython's int would not fit in int64: loud
    else:
        assert same(got, want), (got, want)


def int_plus_zero(x):
    return int(x) + 0


def test_int_of_1e19_is_an_overflow_error_not_a_garbage_number():
    with pytest.raises(OverflowError):
        gpuc.jit(int_plus_zero)(1e19)


# -- math domain and range errors ----------------------------------------------------------

UNARY = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
         "atanh", "exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "fabs", "erf", "erfc",
         ] + [n for n in ("exp2", "cbrt") if hasattr(math, n)]
BINARY = ["pow", "atan2", "hypot", "fmod", "copysign"]
EDGES = [-1.0, 0.0, -0.0, 0.5, 1.0, 2.0, -2.0, 710.0, 1000.0, -1000.0, 1e308, math.inf, -math.inf, math.nan]


@pytest.fixture(scope="module")
def math_fns(tmp_path_factory):
    # functions need a source file: write them to one and import it
    import importlib.util

    lines = ["import math"]
    for name in UNARY:
        lines.append(f"def m_{name}(x):\n    return math.{name}(x)")
    for name in BINARY:
        lines.append(f"def m_{name}(x, y):\n    return math.{name}(x, y)")
    lines.append("def m_power(x, y):\n    return x ** y")
    path = tmp_path_factory.mktemp("mathfns") / "mathfns_loud.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location("mathfns_loud", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", UNARY)
def test_math_function_domain_and_range_errors_are_cpythons(math_fns, name):
    fn = getattr(math_fns, "m_" + name)
    compiled = gpuc.jit(fn)
    for x in EDGES:
        got, want = outcome(compiled, x), outcome(fn, x)
        if want[0] == "ok" and got[0] == "ok":
            assert got[1] == pytest.approx(want[1], rel=1e-12, nan_ok=True), (name, x)
        else:
            assert same(got, want), (name, x, got, want)


@pytest.mark.parametrize("name", BINARY + ["power"])
def test_binary_math_and_power_errors_are_cpythons(math_fns, name):
    fn = getattr(math_fns, "m_" + name)
    compiled = gpuc.jit(fn)
    for x, y in itertools.product(EDGES, [-1.0, 0.0, 0.5, 2.0, 400.0, math.inf, -math.inf, math.nan]):
        got, want = outcome(compiled, x, y), outcome(fn, x, y)
        if want[0] == "ok" and isinstance(want[1], complex):
            assert got == ("raises", ValueError), (name, x, y)  # no complex numbers: loud
        elif want[0] == "ok" and got[0] == "ok":
            assert got[1] == pytest.approx(want[1], rel=1e-12, nan_ok=True), (name, x, y)
        else:
            assert same(got, want), (name, x, y, got, want)


def test_numpy_error_model_gives_ieee_results_without_checks(math_fns):
    sqrt = gpuc.jit(error_model=ErrorModel.NUMPY)(math_fns.m_sqrt)
    log = gpuc.jit(error_model=ErrorModel.NUMPY)(math_fns.m_log)
    power = gpuc.jit(error_model=ErrorModel.NUMPY)(math_fns.m_power)
    assert math.isnan(sqrt(-1.0)) and log(0.0) == -math.inf
    with np.errstate(all="ignore"):
        assert power(0.0, -1.0) == np.power(0.0, -1.0) == math.inf
        assert power(10.0, 400.0) == np.power(10.0, 400.0)


def divide(x, y):
    return x / y


def test_numpy_error_model_divides_by_zero_as_ieee():
    assert gpuc.jit(error_model=ErrorModel.NUMPY)(divide)(1.0, 0.0) == math.inf
    with pytest.raises(ZeroDivisionError, match="float division by zero"):
        gpuc.jit(divide)(1.0, 0.0)


def test_error_model_is_a_typed_option_and_part_of_the_key():
    with pytest.raises(ConfigError, match="ErrorModel"):
        gpuc.jit(error_model="ieee")(divide)
    assert gpuc.jit(error_model="numpy")(divide).error_model is ErrorModel.NUMPY  # Numba's spelling
    a = gpuc.jit(divide)._job((gpuc.types.float64, gpuc.types.float64))
    b = gpuc.jit(error_model=ErrorModel.NUMPY)(divide)._job((gpuc.types.float64, gpuc.types.float64))
    assert a.config != b.config and a.config.frontend.error_model is ErrorModel.PYTHON
    assert b.config.frontend.error_model is ErrorModel.NUMPY


# -- unbound locals, undefined globals -------------------------------------------------------

def bound_on_one_path(c):
    if c:
        y = 1
    return y


def loop_variable_after_loop(n):
    for i in range(n):  # noqa: B007 (read after the loop: the behaviour under test)
        pass
    return i


def read_before_assignment(n):
    y = y + n  # noqa: F821
    return y


@pytest.mark.parametrize("fn,args", [(bound_on_one_path, (1,)), (bound_on_one_path, (0,)),
                                     (loop_variable_after_loop, (3,)), (loop_variable_after_loop, (0,)),
                                     (read_before_assignment, (1,))])
def test_unbound_local_on_a_taken_path_raises_unbound_local_error(fn, args):
    assert same(outcome(gpuc.jit(fn), *args), outcome(fn, *args))


def calls_an_undefined_global(n):
    if n > 0:
        return not_defined_anywhere(n)  # noqa: F821
    return n


def returns_an_undefined_global(n):
    if n > 0:
        return NOT_DEFINED_EITHER  # noqa: F821
    return n


@pytest.mark.parametrize("fn", [calls_an_undefined_global, returns_an_undefined_global])
def test_undefined_global_raises_name_error_only_where_it_is_read(fn):
    compiled = gpuc.jit(fn)
    assert compiled(-3) == -3
    with pytest.raises(NameError, match="is not defined"):
        compiled(3)


LATE = None


def reads_late(n):
    return LATE_DEFINED + n  # noqa: F821


def test_defining_the_missing_global_later_recompiles():
    compiled = gpuc.jit(reads_late)
    with pytest.raises(NameError):
        compiled(1)
    globals()["LATE_DEFINED"] = 41
    try:
        assert compiled(1) == 42
    finally:
        del globals()["LATE_DEFINED"]


SCALE = 2.5


def returns_a_global(x):
    return SCALE


def test_a_global_returned_directly_is_its_value():
    assert gpuc.jit(returns_a_global)(1) == 2.5


# -- compile-time type errors ---------------------------------------------------------------

def min_of_one(n):
    return min(n)


def max_of_one(n):
    return max(n)


@pytest.mark.parametrize("fn", [min_of_one, max_of_one])
def test_min_or_max_of_one_number_is_a_type_error_at_its_line(fn):
    with pytest.raises(TypeError):
        fn(3)  # CPython
    with pytest.raises(TypeInferenceError, match=r"test_loud_semantics.py:\d+"):
        gpuc.jit(fn)(3)


def mixed_tuples(c):
    if c:
        return (1, 2.5)
    return (1, 2)


def test_tuples_of_different_item_types_on_two_paths_are_a_located_type_error():
    with pytest.raises(TypeInferenceError, match=r"test_loud_semantics.py:\d+.*two types"):
        gpuc.jit(mixed_tuples)(1)


def test_kernels_take_the_numpy_error_model_and_refuse_python_exceptions():
    def body(out):
        out[0] = math.sqrt(-1.0)

    k = gpuc.kernel(error_model=ErrorModel.NUMPY)(body)
    out = np.zeros(1)
    k[1, 1, "cpu"](out)
    assert math.isnan(out[0])
    with pytest.raises(ConfigError, match="kernels cannot raise"):
        gpuc.kernel(error_model=ErrorModel.PYTHON)(body)


def kernel_bound_on_one_path(out, n):
    if n > 0:
        y = 1.0
    out[0] = y


def kernel_reads_undefined(out, n):
    if n > 0:
        out[0] = UNDEFINED_IN_KERNEL  # noqa: F821


@pytest.mark.parametrize("boundscheck", [True, False])
def test_unbound_local_in_a_kernel_raises_under_the_emulation(boundscheck):
    k = gpuc.kernel(boundscheck=boundscheck)(kernel_bound_on_one_path)
    out = np.zeros(1)
    k[1, 1, "cpu"](out, 1)
    assert out[0] == 1.0
    with pytest.raises(UnboundLocalError, match=r"'y'.*test_loud_semantics.py:\d+"):
        k[1, 1, "cpu"](out, 0)


def test_undefined_global_in_a_kernel_raises_name_error_under_the_emulation():
    k = gpuc.kernel(kernel_reads_undefined)
    out = np.zeros(1)
    k[1, 1, "cpu"](out, 0)
    with pytest.raises(NameError, match="UNDEFINED_IN_KERNEL"):
        k[1, 1, "cpu"](out, 1)


def test_unbound_local_in_a_kernel_traps_on_the_gpu():
    from gpucompiler.llvm import parse

    k = gpuc.kernel(kernel_bound_on_one_path)  # no bounds checks: the trap is the unbound read's
    text = k.inspect_llvm(gpuc.types.array(gpuc.types.float64, 1), gpuc.types.int64)
    mod = parse(text)
    assert "kernel_bound_on_one_path" in mod.functions
    assert "tail call void @llvm.trap()" in text and "store double 1.0" in text


def unused_unbound_read(c):
    if c:
        v = 1
    v = v
    return 0


def unbound_read_before_another_error(c, y):
    if c:
        v = 1.0
    return v + 1.0 / y


@pytest.mark.parametrize("fn,args", [(unused_unbound_read, (0,)), (unused_unbound_read, (1,)),
                                     (unbound_read_before_another_error, (0, 0.0)),
                                     (unbound_read_before_another_error, (1, 0.0))])
def test_unbound_local_is_raised_at_the_read_as_in_cpython(fn, args):
    assert same(outcome(gpuc.jit(fn), *args), outcome(fn, *args))


def power_of_two_base(v):
    return 9007199254740992.0 ** v


def math_pow_of_two_base(v):
    return math.pow(9007199254740992.0, v)


@pytest.mark.parametrize("fn", [power_of_two_base, math_pow_of_two_base])
def test_power_of_a_power_of_two_is_libm_pow_not_a_rounded_exp2(fn):
    for v in (6.3967, 0.1234567, -3.3):
        assert gpuc.jit(fn)(v) == fn(v)  # LLVM's pow(2**53, v) -> exp2(53 * v) was 20 ulp off


# -- min and max keep their arguments' type ---------------------------------------------------

def extremes(a, b, c):
    return min(a, b), max(a, b), min(a, b, c), max(c, a, b)


@pytest.mark.parametrize("kinds", [(bool, bool, bool), (bool, bool, int), (bool, int, bool), (int, bool, float)])
def test_min_and_max_of_bools_are_bools_and_mixed_ones_numbers_like_cpython(kinds):
    # min(True, False) was the int 0: the bools were compared and returned as integers
    f = gpuc.jit(extremes)
    samples = {bool: (False, True), int: (-2, 0, 1, 7), float: (-0.5, 1.0, 2.5)}
    for args in itertools.product(*(samples[k] for k in kinds)):
        got, want = f(*args), extremes(*args)
        assert got == want, args
        # CPython returns one of the arguments; compiled code their common type: a bool only when
        # every argument is one
        common = [_common(args[:2]), _common(args[:2]), _common(args), _common(args)]
        assert [type(g) for g in got] == common, args


def _common(args) -> type:
    kinds = {type(a) for a in args}
    return bool if kinds == {bool} else float if float in kinds else int


# -- a negative number to a fractional power ----------------------------------------------------

def power(x, y):
    return x ** y


@pytest.mark.parametrize("x, y", [(-1e300, 1.5), (-1e10, 40.5), (-1e-300, -1.5)])
def test_a_negative_number_to_a_fractional_power_that_overflows_is_cpythons_overflow_error(x, y):
    # CPython's complex result overflows: OverflowError; compiled code raised its ValueError
    with pytest.raises(OverflowError):
        power(x, y)
    with pytest.raises(OverflowError, match="complex exponentiation"):
        gpuc.jit(power)(x, y)


def test_a_negative_number_to_a_fractional_power_is_a_value_error_where_cpython_gives_a_complex():
    assert isinstance(power(-2.0, 0.5), complex)
    with pytest.raises(ValueError, match="compiled code has no complex numbers"):
        gpuc.jit(power)(-2.0, 0.5)


# -- integer constants outside int64 ----------------------------------------------------------

def huge_sum(x):
    return x + 2**100


def shifted_mask(x):
    return x & (1 << 64) - 1


def below_two_to_the_64(x):
    y = 2**64
    return x < y


def float_of_huge(x):
    return float(2**100) + x


def exact_constants(x):
    return x + (-2**63), (2**64 - 1) // 2**62 + x, 2**100 - 2**100 + x, float(2**70) / 2**60


@pytest.mark.parametrize("fn", [huge_sum, shifted_mask, below_two_to_the_64])
def test_an_integer_constant_outside_int64_is_refused_at_its_line_not_wrapped(fn):
    # 2**100 and 2**64 folded to 0 and 1 << 64 to 0: x + 2**100 returned x, x < 2**64 was False
    with pytest.raises(TypeInferenceError, match=r"test_loud_semantics.py:\d+: the integer \d+ does not fit in 64"):
        gpuc.jit(fn)(3)


@pytest.mark.parametrize("x", [0, 3, 7])  # x + (-2**63) stays in int64 for x >= 0 (below, it wraps at run time)
def test_constant_expressions_have_cpythons_values_through_integers_outside_int64(x):
    # float(2**100) was 0.0: the power wrapped before the conversion
    assert gpuc.jit(float_of_huge)(x) == float_of_huge(x)
    assert gpuc.jit(exact_constants)(x) == exact_constants(x)


def _stepped_sum(n, k):
    s = 0
    for i in range(0, n, k):
        s += i
    return s


@pytest.mark.parametrize("parallel", [False, True])
def test_range_with_a_zero_step_is_cpythons_value_error(parallel):
    """``range(0, n, 0)`` raised nothing and ran no iteration (``prange`` raised already)."""
    compiled = gpuc.jit(parallel=parallel)(_parallel_stepped_sum if parallel else _stepped_sum)
    assert compiled(10, 3) == sum(range(0, 10, 3)) and compiled(10, -1) == 0
    with pytest.raises(ValueError, match="range\\(\\) arg 3 must not be zero"):
        compiled(3, 0)


def _parallel_stepped_sum(n, k):
    s = 0
    for i in gpuc.prange(0, n, k):
        s += i
    return s


def _bool_index(a, i):
    return a[i > 0]


def _bool_in_tuple(a):
    return a[True, :].sum()


def _bool_store(a):
    a[True] = 5.0
    return a


@pytest.mark.parametrize("fn, args", [(_bool_index, (np.arange(3.0), 1)), (_bool_in_tuple, (np.ones((2, 3)),)),
                                      (_bool_store, (np.arange(3.0),))])
def test_a_bool_array_index_is_refused_not_read_as_an_int(fn, args):
    """NumPy reads ``a[True]`` as ``a[np.newaxis]``; compiled code read ``a[1]`` (and wrote one element)."""
    with pytest.raises(TypeInferenceError, match="a bool index adds an axis in NumPy"):
        gpuc.jit(fn)(*args)
