"""Loops of math functions on the host CPU call glibc's libmvec (SIMD), within its documented 4 ulp.

The compiled loop is checked twice: its optimised IR calls the vector function
(``_ZGVeN8v_sin``...), and over a sweep of inputs (signed zeros, infinities,
NaN, subnormals, huge arguments of sin/cos, the overflow and underflow
boundaries of exp) every result is within 4 ulp of the scalar libm function
(called through ctypes) and of CPython's ``math`` where CPython returns a value.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import re
import sys

import numpy as np
import pytest

from gpucompiler import jit
from gpucompiler.llvm.vector_variants import VectorVariant, keeper, name_variants
from gpucompiler.llvm.binding import parse_ir
from gpucompiler.targets import NativeTarget
from gpucompiler.targets import libmvec

ULPS = 4
"""glibc's bound for its vector math functions (its manual, "Known Maximum Errors in Math Functions")."""

UNARY = ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
         "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "cbrt", "erf", "erfc")
BINARY = ("atan2", "hypot")

pytestmark = pytest.mark.skipif(sys.platform != "linux" or libmvec.loaded() is None,
                                reason="glibc's libmvec is not in this process (non-glibc system)")


def _features() -> str:
    return NativeTarget().host_features()


def _libm():
    return ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")


def _sweep(n: int = 4096) -> np.ndarray:
    """Special values first (the vector loop covers them: ``n`` is a multiple of every width), then
    arguments spread over every magnitude and both signs."""
    tiny, sub = sys.float_info.min, 5e-324
    special = [0.0, -0.0, math.inf, -math.inf, math.nan, sub, -sub, tiny, -tiny, tiny / 3, -tiny / 3,
               1e-300, 1.0, -1.0, 0.5, -0.5, 0.999999, -0.999999, 1.000001, 2.0, math.pi, -math.pi,
               math.pi / 2, 1e5, 1e15, 1e22, -1e22, 2.0 ** 60, 1e300, -1e300, sys.float_info.max,
               -sys.float_info.max, 709.782712893384, 709.7827128933841, 709.79, 710.0, -708.3964185322641,
               -745.1332191019411, -745.1332191019412, -746.0, 1023.9999, 1024.0, -1022.0, -1074.0, -1075.0,
               308.2547155599167, 308.26, -323.6, 88.72, 89.0, -87.3, -103.97, 26.0, -26.0, 6.0, -6.0]
    rng = np.random.default_rng(5)
    rest = n - len(special)
    spread = np.concatenate([
        rng.uniform(-1.0, 1.0, rest // 4),
        rng.uniform(1.0, 100.0, rest // 4),
        np.exp(rng.uniform(np.log(1e-8), np.log(1e4), rest // 4)) * rng.choice([-1.0, 1.0], rest // 4),
        rng.uniform(-750.0, 750.0, rest - 3 * (rest // 4)),
    ])
    return np.concatenate([np.array(special), spread])


def _ordered(v: np.ndarray) -> list[int]:
    """Integers in the order of the floats ``v`` (adjacent floats differ by one; ``-0`` and ``0`` are one)."""
    bits = v.view(np.int64 if v.dtype == np.float64 else np.int32).astype(np.int64).tolist()
    top = (1 << 63) - 1 if v.dtype == np.float64 else (1 << 31) - 1
    return [-(b & top) if b < 0 else b for b in bits]


def _ulp_errors(got: np.ndarray, want: np.ndarray) -> list[tuple[int, float, float]]:
    """``(index, got, want)`` where they differ by more than :data:`ULPS` or in NaN-ness."""
    bad = []
    for k, (a, b, g, w) in enumerate(zip(_ordered(got), _ordered(want), got.tolist(), want.tolist())):
        if math.isnan(g) or math.isnan(w):
            if math.isnan(g) != math.isnan(w):
                bad.append((k, g, w))
        elif abs(a - b) > ULPS:
            bad.append((k, g, w))
    return bad


def _loop(fn, arity: int):
    def unary(x, out):
        for i in range(x.shape[0]):
            out[i] = fn(x[i])

    def binary(x, y, out):
        for i in range(x.shape[0]):
            out[i] = fn(x[i], y[i])

    return jit(unary if arity == 1 else binary, error_model="numpy", boundscheck=False)


def _scalar(name: str, dtype, args: list[np.ndarray]) -> np.ndarray:
    """libm's scalar function (``sin``, ``sinf``) at every element."""
    c = ctypes.c_double if dtype == np.float64 else ctypes.c_float
    f = getattr(_libm(), name if dtype == np.float64 else name + "f")
    f.restype, f.argtypes = c, [c] * len(args)
    return np.array([f(*vs) for vs in zip(*(a.tolist() for a in args))], dtype=dtype)


def _python(name: str, args: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """CPython's ``math.name`` at every element where it returns a value; the mask of those elements."""
    out, ok = [], []
    for vs in zip(*(a.tolist() for a in args)):
        try:
            out.append(getattr(math, name)(*vs))
            ok.append(True)
        except (ValueError, OverflowError):
            out.append(math.nan)
            ok.append(False)
    return np.array(out), np.array(ok)


def _vector_calls(ir: str, name: str) -> list[str]:
    return re.findall(r"call [^\n]*@(_ZGV\w+_" + name + r")\(", ir)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("name", UNARY + BINARY)
def test_loop_of_a_math_function_calls_libmvec_within_4_ulp_of_libm_and_cpython(name, dtype):
    fn = getattr(math, name)
    arity = 2 if name in BINARY else 1
    with np.errstate(all="ignore"):  # float32: the float64 sweep's huge values become infinities
        x = _sweep().astype(dtype)
        args = [x] if arity == 1 else [x, np.roll(x, 7)]
        f, out = _loop(fn, arity), np.zeros_like(x)
        f(*args, out)
    symbol = name if dtype == np.float64 else name + "f"
    assert _vector_calls(f.inspect_llvm(*args, out), symbol), f"the loop of math.{name} is not vectorized"
    assert _ulp_errors(out, _scalar(name, dtype, args)) == []
    want, ok = _python(name, [a.astype(np.float64) for a in args])
    with np.errstate(over="ignore"):
        want = want[ok].astype(dtype)
    assert _ulp_errors(out[ok], want) == []


def test_signed_zeros_keep_their_sign_through_the_vector_functions():
    x = np.array([0.0, -0.0] * 32)
    for name in ("sin", "tan", "asin", "atan", "sinh", "tanh", "asinh", "atanh", "expm1", "log1p", "cbrt", "erf"):
        f, out = _loop(getattr(math, name), 1), np.zeros_like(x)
        f(x, out)
        assert np.array_equal(np.signbit(out), np.signbit(x)), name


def test_variants_follow_the_features_widest_isa_per_width():
    assert libmvec.isas("+sse2,+avx,+avx2,+avx512f") == (("b", 2), ("d", 4), ("e", 8))
    assert libmvec.isas("+sse2,+avx,-avx2,-avx512f") == (("b", 2), ("c", 4))
    assert libmvec.isas("+sse2,-avx") == (("b", 2),)
    sin = libmvec.variants("+sse2,+avx,-avx2")["llvm.sin.f64"]
    assert [(v.name, v.lanes) for v in sin] == [("_ZGVbN2v_sin", 2), ("_ZGVcN4v_sin", 4)]
    assert [v.name for v in libmvec.variants("+sse2")["sinf"]] == ["_ZGVbN4v_sinf"]
    assert [v.name for v in libmvec.variants("+sse2,+avx2,+avx512f")["atan2"]] == [
        "_ZGVbN2vv_atan2", "_ZGVdN4vv_atan2", "_ZGVeN8vv_atan2"]


def test_code_for_a_cpu_without_avx_calls_the_sse_versions_and_matches():
    from gpucompiler.core import CompilerConfig, CompilerJob, LLVMSource
    from gpucompiler.pipeline import compile
    from gpucompiler.runtime import CPULibrary

    target = NativeTarget(cpu="x86-64", features="+sse2,+cx16")
    result = compile(CompilerJob(LLVMSource(_SIN_LOOP, "sins"), CompilerConfig(target=target)), ("llvm",))
    ir = str(result.artifacts["llvm"])
    assert set(re.findall(r"call [^\n]*@(_ZGV\w+)\(", ir)) == {"_ZGVbN2v_sin"}
    assert "llvm.compiler.used" not in ir
    lib = CPULibrary.from_ir(ir, target)
    sins = lib.function("sins", None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    x = _sweep(256)
    out = np.zeros_like(x)
    sins(x.ctypes.data, out.ctypes.data, len(x))
    assert _ulp_errors(out, _scalar("sin", np.float64, [x])) == []


_SIN_LOOP = """
declare double @llvm.sin.f64(double)

define void @sins(ptr noalias %x, ptr noalias %y, i64 %n) {
entry:
  %none = icmp sle i64 %n, 0
  br i1 %none, label %exit, label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %p = getelementptr double, ptr %x, i64 %i
  %v = load double, ptr %p
  %s = call double @llvm.sin.f64(double %v)
  %q = getelementptr double, ptr %y, i64 %i
  store double %s, ptr %q
  %i1 = add i64 %i, 1
  %c = icmp slt i64 %i1, %n
  br i1 %c, label %loop, label %exit
exit:
  ret void
}
"""


def test_without_libmvec_the_loop_stays_scalar_and_correct(monkeypatch):
    monkeypatch.setattr(libmvec, "loaded", lambda: None)
    libmvec.variants.cache_clear()
    try:
        f = _loop(math.exp, 1)
        x = _sweep(256)
        out = np.zeros_like(x)
        with np.errstate(all="ignore"):
            f(x, out)
        assert not _vector_calls(f.inspect_llvm(x, out), "exp")
        assert NativeTarget().machine()["vector_math"] is None  # part of the cache key
        assert _ulp_errors(out, _scalar("exp", np.float64, [x])) == []
    finally:
        libmvec.variants.cache_clear()


def test_calls_that_may_set_errno_stay_scalar():
    # clang's default on Linux (-fmath-errno): exp may write errno, which C code can read
    ir = _SIN_LOOP.replace("llvm.sin.f64", "exp").replace("declare double @exp(double)",
                                                           "declare double @exp(double) #0") \
        + "attributes #0 = { nounwind willreturn memory(write) }\n"
    from gpucompiler.core import CompilerConfig, CompilerJob, LLVMSource
    from gpucompiler.pipeline import compile

    out = compile(CompilerJob(LLVMSource(ir, "sins"), CompilerConfig(target=NativeTarget())), ("llvm",))
    assert not re.findall(r"call [^\n]*@(_ZGV\w+)\(", str(out.artifacts["llvm"]))


def test_the_gradient_of_a_loop_of_exp_calls_libmvec_and_is_exact():
    from enzyme_plugin import Duplicated, Reverse, autodiff

    def lse(x):
        s = 0.0
        for i in range(x.shape[0]):
            s += math.exp(x[i])
        return math.log(s)

    @jit(plugins=("enzyme",), error_model="numpy")
    def grad(x, dx):
        autodiff(Reverse, lse, Duplicated(x, dx))

    x = np.linspace(-3.0, 3.0, 4096)
    dx = np.zeros_like(x)
    grad(x, dx)
    assert _vector_calls(grad.inspect_llvm(x, dx), "exp")
    e = np.exp(x)
    np.testing.assert_allclose(dx, e / math.fsum(e.tolist()), rtol=1e-13)


def _released(ref) -> str:
    """The native target's ``finish`` on ``ref``: the module's text once the kept versions are let go."""
    from gpucompiler.core import CompilerConfig, CompilerJob, LLVMSource
    from gpucompiler.module import IRModule

    module = IRModule(ref=ref)
    NativeTarget().finish(CompilerJob(LLVMSource(str(ref), "f"), CompilerConfig(target=NativeTarget())), module)
    assert module.ref is ref  # let go in place: no print and parse of the module
    return module.text


def test_name_variants_follow_each_functions_features_and_rename_vector_intrinsics():
    sin = VectorVariant("llvm.sin.f64", "_ZGVdN4v_sin", 4, 1, "double")
    sse = VectorVariant("llvm.sin.f64", "_ZGVbN2v_sin", 2, 1, "double")
    text = """declare double @llvm.sin.f64(double)
declare <4 x double> @llvm.sin.v4f64(<4 x double>)
declare double @cos(double)

define double @f(double %x, <4 x double> %v, { ptr, i64 } %s) {
  %a = tail call double @llvm.sin.f64(double %x) #1
  %b = call <4 x double> @llvm.sin.v4f64(<4 x double> %v)
  %c = call double @cos(double %a)
  ret double %c
}

define double @g({ ptr, i64 } %s, double %x) #0 {
  %a = call double @llvm.sin.f64(double %x)
  ret double %a
}

define double @h(double %x) #2 {
  %a = call double @llvm.sin.f64(double %x)
  ret double %a
}

attributes #0 = { "target-cpu"="x86-64" }
attributes #1 = { nounwind }
attributes #2 = { nounwind "target-cpu"="x86-64" "target-features"="+cx8,+sse,+sse2" }
"""
    asked = []

    def table(features):
        asked.append(features)
        return {"llvm.sin.f64": (sin,)} if features is None else {"llvm.sin.f64": (sse,)}

    out, named = name_variants(text, table)
    assert asked == [None, "+cx8,+sse,+sse2"]  # g: a CPU without features of its own is left alone
    assert named == [sin, sse]
    ref = parse_ir(out + keeper(named, libmvec.KEEPER))
    f, g = (str(ref.get_function(n)) for n in ("f", "g"))
    assert '@llvm.sin.f64(double %x) "vector-function-abi-variant"="_ZGV_LLVM_N4v_llvm.sin.f64(_ZGVdN4v_sin)" #1' in out
    assert "call <4 x double> @_ZGVdN4v_sin(<4 x double> %v)" in f and "@cos(double %a)" in f
    assert "_ZGV" not in g
    assert '"_ZGV_LLVM_N2v_llvm.sin.f64(_ZGVbN2v_sin)"' in out.split("define double @h")[1]
    assert f"@{libmvec.KEEPER} = constant [2 x ptr] [ptr @_ZGVdN4v_sin, ptr @_ZGVbN2v_sin]" in str(ref)
    released = _released(ref)  # h names the SSE version (its call keeps the attribute), no call calls it
    assert f"@{libmvec.KEEPER}" not in released and "@_ZGVbN2v_sin(" not in released
    assert "declare <4 x double> @_ZGVdN4v_sin(<4 x double>)" in released
    assert str(parse_ir(released)) == released
    wide = VectorVariant("llvm.sin.f64", "_ZGVeN8v_sin", 8, 1, "double")  # named, never called
    out, named = name_variants(text, lambda features: {"llvm.sin.f64": (sin, wide)})
    ref = parse_ir(out + keeper(named, libmvec.KEEPER))
    released = _released(ref)
    assert "declare <4 x double> @_ZGVdN4v_sin" in released
    assert "@_ZGVeN8v_sin(" not in released and libmvec.KEEPER not in released
    assert name_variants(text, lambda features: {}) == (text, [])


def test_clang_code_for_its_own_cpu_calls_the_versions_its_features_allow():
    from gpucompiler.core import CompilerConfig, CompilerJob, LLVMSource
    from gpucompiler.pipeline import compile
    from gpucompiler.runtime import CPULibrary

    own = _SIN_LOOP.replace("define void @sins(ptr noalias %x, ptr noalias %y, i64 %n) {",
                            "define void @sins(ptr noalias %x, ptr noalias %y, i64 %n) #0 {") \
        + 'attributes #0 = { nounwind "target-cpu"="x86-64" "target-features"="+cx8,+fxsr,+mmx,+sse,+sse2,+x87" }\n'
    result = compile(CompilerJob(LLVMSource(own, "sins"), CompilerConfig(target=NativeTarget())), ("llvm",))
    ir = str(result.artifacts["llvm"])
    assert set(re.findall(r"call [^\n]*@(_ZGV\w+)\(", ir)) == {"_ZGVbN2v_sin"}
    lib = CPULibrary.from_ir(ir)
    sins = lib.function("sins", None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    x = _sweep(256)
    out = np.zeros_like(x)
    sins(x.ctypes.data, out.ctypes.data, len(x))
    assert _ulp_errors(out, _scalar("sin", np.float64, [x])) == []


def test_the_derivative_the_engine_writes_calls_libmvec_too():
    # sin's derivative is cos: a call only the AD engine makes (in vector form, from the loop the
    # optimiser vectorized before AD), turned into libmvec's cos after AD
    from enzyme_plugin import Duplicated, Reverse, autodiff

    def sines(x):
        s = 0.0
        for i in range(x.shape[0]):
            s += math.sin(x[i])
        return s

    @jit(plugins=("enzyme",), error_model="numpy")
    def grad(x, dx):
        autodiff(Reverse, sines, Duplicated(x, dx))

    x = _sweep(4096)[64:]  # finite arguments of every size
    dx = np.zeros_like(x)
    grad(x, dx)
    ir = grad.inspect_llvm(x, dx)
    assert _vector_calls(ir, "cos") and not re.search(r"@llvm\.cos\.v\d+f64\(", ir)
    assert _ulp_errors(dx, _scalar("cos", np.float64, [x])) == []


def _name_variants_reference(text, variants):
    """name_variants as a plain reading of its contract: every define block whole, every call in it."""
    call = re.compile(r"\bcall\b[^\n]*?@(?P<name>\"[^\"]+\"|[-\w.$]+)\((?:[^()\n]|\([^()\n]*\))*\)")
    groups = dict(re.findall(r"^attributes #(\d+) = \{([^\n]*)\}", text, re.M))
    used = {}

    def annotate(m, table):
        name = m.group("name").strip('"')
        if table.get(name):
            used.update((v.name, v) for v in table[name])
            return m.group(0) + ' "vector-function-abi-variant"="' + ",".join(v.mangled() for v in table[name]) + '"'
        vec = re.fullmatch(r"(llvm\.[\w.]+)\.v(\d+)(f64|f32)", name)
        one = vec and next((v for v in table.get(f"{vec.group(1)}.{vec.group(3)}", ()) if v.lanes == int(vec.group(2))),
                           None)
        if not one:
            return m.group(0)
        used[one.name] = one
        return m.group(0).replace("@" + m.group("name") + "(", "@" + one.name + "(", 1)

    def function(m):
        header = m.group(0).split("\n", 1)[0]
        attributes = header + "".join(groups.get(g, "") for g in re.findall(r"#(\d+)", header))
        features = re.search(r'"target-features"="([^"]*)"', attributes)
        if features is None and '"target-cpu"' in attributes:
            return m.group(0)
        table = variants(features.group(1) if features else None)
        return call.sub(lambda c: annotate(c, table), m.group(0)) if table else m.group(0)

    out = re.sub(r"^define\b[^\n]*\{\n.*?^\}\n", function, text, flags=re.M | re.S)
    if not used:
        return text, []
    declared = set(re.findall(r"^declare [^\n]*?@([-\w.$]+)\(", out, re.M))
    return out + "".join(f"\n{v.declaration()}\n" for v in used.values() if v.name not in declared), list(used.values())


_CALL_LINES = (
    "  %{n} = call double @sin(double %x)",
    "  %{n} = tail call double @llvm.sin.f64(double %x) #1",
    "  %{n} = call <4 x double> @llvm.sin.v4f64(<4 x double> %v)",
    "  %{n} = call <8 x double> @llvm.sin.v8f64(<8 x double> %w)",
    "  %{n} = call double @cos(double %x), !dbg !3",
    "  %{n} = call double @exp(double %x) #1 ; call @sin(double %x)",
    "  call void @use(ptr @sin, double %x)",
    "  %{n} = call double @\"odd name\"(double %x)",
    "  %{n} = call double @sinf_like(double %x)",
    "  %{n} = fadd double %x, %x",
    "  %{n} = call {{ double, double }} @pair(ptr nonnull @sin, {{ i64, i64 }} {{ i64 1, i64 2 }})",
    "  %{n} = invoke double @sin(double %x) to label %ok unwind label %bad",
)
_HEADERS = ("define double @f{i}(double %x, <4 x double> %v, <8 x double> %w) {{",
            "define double @f{i}(double %x, <4 x double> %v, <8 x double> %w) #0 {{",
            "define double @f{i}(double %x, <4 x double> %v, <8 x double> %w) #2 {{",
            "define internal double @sin(double %x) #1 {{")


@pytest.mark.parametrize("seed", range(40))
def test_name_variants_reads_only_math_calls_and_edits_as_the_whole_module_reading_does(seed):
    # the fast path reads only the lines that name a function the table has: every other line of every
    # function is left as the whole-module reading leaves it, on random modules of calls and headers
    rng = np.random.default_rng(seed)
    sin = VectorVariant("sin", "_ZGVdN4v_sin", 4, 1, "double")
    sin8 = VectorVariant("llvm.sin.f64", "_ZGVeN8v_sin", 8, 1, "double")
    cos = VectorVariant("cos", "_ZGVbN2v_cos", 2, 1, "double")
    tables = {None: {"sin": (sin,), "llvm.sin.f64": (sin8,)}, "+sse2": {"cos": (cos,), "sin": (sin,)}}
    parts = ["; ModuleID = 'm'", "declare double @llvm.sin.f64(double)", "declare double @cos(double)",
             "declare <8 x double> @llvm.sin.v8f64(<8 x double>)"]
    if rng.random() < 0.5:
        parts.append("declare double @sin(double)")
    for i in range(int(rng.integers(1, 6))):
        header = _HEADERS[int(rng.integers(0, len(_HEADERS)))].format(i=i)
        if "@sin(" in header and any("define internal double @sin" in p for p in parts):
            header = _HEADERS[0].format(i=i)
        body = [_CALL_LINES[int(k)].format(n=j) for j, k in enumerate(rng.integers(0, len(_CALL_LINES), 8))]
        parts.append("\n".join([header, "entry:", *body, "  ret double %x", "}"]))
    parts.append('attributes #0 = { "target-cpu"="x86-64" }\nattributes #1 = { nounwind }\n'
                 'attributes #2 = { "target-cpu"="x86-64" "target-features"="+sse2" }')
    text = "\n\n".join(parts) + "\n"
    asked, expected_asked = [], []

    def table(features):
        asked.append(features)
        return tables[features]

    def reference_table(features):
        expected_asked.append(features)
        return tables[features]

    assert name_variants(text, table) == _name_variants_reference(text, reference_table)
    assert asked == expected_asked


def test_name_variants_of_a_compiled_gradient_match_the_whole_module_reading():
    from gpucompiler.targets.native import NativeTarget as Native

    from enzyme_plugin import Duplicated, Reverse, autodiff

    def loss(x):
        s = 0.0
        for i in range(x.shape[0]):
            s += math.tanh(x[i]) * math.exp(x[i])
        return s

    @jit(plugins=("enzyme",), error_model="numpy", opt_level=0)
    def grad(x, dx):
        autodiff(Reverse, loss, Duplicated(x, dx))

    x = np.linspace(-1.0, 1.0, 64)
    text = grad.inspect_llvm(x, np.zeros_like(x))
    host = Native().host_features()

    def table(own):
        return libmvec.variants(host if own is None else own)

    out, named = name_variants(text, table)
    assert named and (out, named) == _name_variants_reference(text, table)


def test_the_kept_versions_are_let_go_when_no_scalar_math_call_is_left():
    # a loop vectorized whole leaves no call of the scalar name: the keeper goes all the same
    text = f"""declare <4 x double> @_ZGVdN4v_sin(<4 x double>)
declare <8 x double> @_ZGVeN8v_sin(<8 x double>)
@{libmvec.KEEPER} = constant [2 x ptr] [ptr @_ZGVdN4v_sin, ptr @_ZGVeN8v_sin]

define <4 x double> @f(<4 x double> %v) {{
  %r = call <4 x double> @_ZGVdN4v_sin(<4 x double> %v)
  ret <4 x double> %r
}}
"""
    released = _released(parse_ir(text))
    assert libmvec.KEEPER not in released and "_ZGVeN8v_sin" not in released
    assert "call <4 x double> @_ZGVdN4v_sin(<4 x double> %v)" in released


def test_a_loop_of_sin_calls_libmvec_and_its_code_keeps_no_keeper():
    @jit(error_model="numpy")
    def sines(x, out):
        for i in range(x.shape[0]):
            out[i] = math.sin(x[i])

    x = np.linspace(-4.0, 4.0, 1024)
    out = np.zeros_like(x)
    sines(x, out)
    ir = sines.inspect_llvm(x, out)
    assert _vector_calls(ir, "sin") and libmvec.KEEPER not in ir
    assert _ulp_errors(out, _scalar("sin", np.float64, [x])) == []


def test_naming_the_versions_parses_the_module_once(monkeypatch):
    import llvmlite.binding as llvm

    from gpucompiler.core import CompilerConfig, CompilerJob, LLVMSource
    from gpucompiler.module import IRModule

    module = IRModule(ref=parse_ir(_SIN_LOOP))
    parses = []
    parse = llvm.parse_assembly
    monkeypatch.setattr(llvm, "parse_assembly", lambda text, *a, **k: (parses.append(text), parse(text, *a, **k))[1])
    job = CompilerJob(LLVMSource(_SIN_LOOP, "sins"), CompilerConfig(target=NativeTarget()))
    NativeTarget().before_optimize(job, module, final=True)
    text = module.text
    assert len(parses) == 1  # the edited text with its declarations and keeper: no second module linked in
    assert '"vector-function-abi-variant"="_ZGV_LLVM_N' in text
    assert f"@{libmvec.KEEPER} = constant" in text and "declare <" in text
