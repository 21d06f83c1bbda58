"""Every instruction of the LLVM LangRef is either modeled by the AD engine or an ``ADError`` naming it:
never inactive by default (a ``freeze`` of an array pointer, which the engine did not know, gave an
all-zero gradient). The LangRef's list is written out here, so an instruction the engine's tables do not
account for cannot slip in unnoticed."""

import ctypes

import pytest

import enzyme_plugin
from enzyme_plugin.ad import analysis, calls, memory, recompute, sweep
from enzyme_plugin.ad.rules import ARITH_FORWARD, ARITH_REVERSE
from gpucompiler.llvm import Function, Instruction, types as T
from gpucompiler.runtime import CPULibrary

#: the LLVM 19 LangRef's "Instruction Reference", section by section
LANGREF = {
    "terminator": "ret br switch indirectbr invoke callbr resume catchswitch catchret cleanupret unreachable",
    "unary": "fneg",
    "binary": "add fadd sub fsub mul fmul udiv sdiv fdiv urem srem frem",
    "bitwise binary": "shl lshr ashr and or xor",
    "vector": "extractelement insertelement shufflevector",
    "aggregate": "extractvalue insertvalue",
    "memory": "alloca load store fence cmpxchg atomicrmw getelementptr",
    "conversion": "trunc zext sext fptrunc fpext fptoui fptosi uitofp sitofp ptrtoint inttoptr bitcast addrspacecast",
    "other": "icmp fcmp phi select freeze call va_arg landingpad catchpad cleanuppad",
}
ALL = {op for ops in LANGREF.values() for op in ops.split()}
#: instructions whose floating-point result has a derivative rule in the tables
FLOAT_RULES = set("fneg fadd fsub fmul fdiv frem fptrunc fpext bitcast select freeze extractelement insertelement "
                  "shufflevector extractvalue insertvalue".split())


def test_every_langref_instruction_is_modeled_or_refused():
    modeled, refused = set(analysis.MODELED), set(analysis.NOT_MODELED)
    assert not modeled & refused
    assert modeled | refused == ALL, (sorted(ALL - modeled - refused), sorted((modeled | refused) - ALL))
    assert all(analysis.MODELED[op] for op in modeled)  # each says how


def test_rule_tables_dispatch_only_on_modeled_instructions():
    tables = {"PASSIVE": sweep.PASSIVE, "ARITH_REVERSE": ARITH_REVERSE, "ARITH_FORWARD": ARITH_FORWARD,
              "memory.FORWARD": memory.FORWARD, "memory.REVERSE": memory.REVERSE, "recompute.PURE": recompute.PURE}
    for name, table in tables.items():
        assert set(table) <= set(analysis.MODELED), (name, sorted(set(table) - set(analysis.MODELED)))
    assert not FLOAT_RULES - set(ARITH_REVERSE), sorted(FLOAT_RULES - set(ARITH_REVERSE))


#: every intrinsic family the engine copies without a rule, and why no derivative is lost there
IGNORED_INTRINSICS = {
    **{name: "returns nothing: a marker or a hint" for name in (
        "llvm.lifetime.", "llvm.dbg.", "llvm.assume", "llvm.experimental.noalias.scope.decl", "llvm.prefetch",
        "llvm.donothing", "llvm.sideeffect", "llvm.stackrestore", "llvm.trap", "llvm.var.annotation")},
    "llvm.invariant.": "a token-like pointer (start) or nothing (end)",
    "llvm.stacksave": "the stack pointer: no memory with a shadow behind it",
    **{name: "integer or boolean result" for name in (
        "llvm.expect", "llvm.annotation", "llvm.umax", "llvm.umin", "llvm.smax", "llvm.smin", "llvm.abs.i",
        "llvm.ctpop", "llvm.ctlz", "llvm.cttz", "llvm.fshl", "llvm.fshr", "llvm.bswap", "llvm.is.fpclass",
        "llvm.objectsize", "llvm.fptosi.sat.", "llvm.fptoui.sat.", "llvm.lround.", "llvm.llround.", "llvm.lrint.",
        "llvm.llrint.")},
}


def test_every_ignored_intrinsic_family_is_accounted_for():
    """An intrinsic family added to the ignored list must say here why it carries no derivative."""
    assert set(calls._IGNORED_PREFIXES) == set(IGNORED_INTRINSICS)
    # the passed-through ones and the vectorizers' memory operations are not ignored
    for name in ("llvm.ptr.annotation.p0.p0", "llvm.launder.invariant.group.p0", "llvm.arithmetic.fence.f64"):
        assert calls.classify(_call_to(name)) == "passthrough", name
    for name in ("llvm.masked.gather.v4f64.v4p0", "llvm.experimental.constrained.fadd.f64"):
        assert calls.classify(_call_to(name)) == "unknown", name


def _call_to(name):
    fn = Function(name, T.function(T.double, []))
    call = Instruction("call", T.double, ["call double @", 0, "()"], ())
    call.append_operand(fn)
    return call


_HEAD = """
declare void @__enzyme_autodiff(ptr, ...)
declare double @__enzyme_fwddiff(ptr, ...)
@enzyme_dup = global i32 0
@enzyme_const = global i32 0
"""

_GRAD = """
define void @grad(ptr %x, ptr %dx, i64 %n) {
  %m = load i32, ptr @enzyme_dup
  %c = load i32, ptr @enzyme_const
  call void (ptr, ...) @__enzyme_autodiff(ptr @f, i32 %m, ptr %x, ptr %dx, i32 %c, i64 %n)
  ret void
}
define double @tangent(ptr %x, ptr %dx, i64 %n) {
  %m = load i32, ptr @enzyme_dup
  %c = load i32, ptr @enzyme_const
  %t = call double (ptr, ...) @__enzyme_fwddiff(ptr @f, i32 %m, ptr %x, ptr %dx, i32 %c, i64 %n)
  ret double %t
}
"""

# f(x, n) = sum over i < n of 2 * x[(i + 1) % n] * x[i], the array pointer and the float both frozen
FREEZE = _HEAD + """
define double @f(ptr %x0, i64 %n) {
entry:
  %x = freeze ptr %x0
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %s = phi double [ 0.0, %entry ], [ %s1, %loop ]
  %i1 = add i64 %i, 1
  %j = urem i64 %i1, %n
  %pj = getelementptr double, ptr %x, i64 %j
  %pi = getelementptr double, ptr %x, i64 %i
  %a = load double, ptr %pj
  %b = load double, ptr %pi
  %ab = fmul double %a, %b
  %abf = freeze double %ab
  %t = fmul double %abf, 2.0
  %s1 = fadd double %s, %t
  %more = icmp ult i64 %i1, %n
  br i1 %more, label %loop, label %done
done:
  ret double %s1
}
""" + _GRAD

_ARR = ctypes.c_double * 5
_PROTO = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


def _library(ir):
    return CPULibrary.from_ir(enzyme_plugin.differentiate(ir))


def _want(x):
    n = len(x)
    g = [0.0] * n
    for i in range(n):
        j = (i + 1) % n
        g[j] += 2 * x[i]
        g[i] += 2 * x[j]
    return g


def test_a_frozen_array_pointer_carries_its_shadow():
    lib = _library(FREEZE)
    xs = [0.5, -1.25, 2.0, 0.75, 3.0]
    x, dx = _ARR(*xs), _ARR()
    ctypes.CFUNCTYPE(None, *_PROTO)(lib.address("grad"))(ctypes.addressof(x), ctypes.addressof(dx), 5)
    assert list(dx) == pytest.approx(_want(xs), rel=1e-15)  # was all zeros: the freeze had no shadow
    tangent = ctypes.CFUNCTYPE(ctypes.c_double, *_PROTO)(lib.address("tangent"))
    for k in range(5):
        e = _ARR(*[float(i == k) for i in range(5)])
        assert tangent(ctypes.addressof(x), ctypes.addressof(e), 5) == pytest.approx(_want(xs)[k], rel=1e-15)


def test_an_unknown_instruction_is_an_ad_error(monkeypatch):
    """What LLVM adds next (here freeze, taken out of the table) is an ADError naming it, never inactive."""
    monkeypatch.delitem(analysis.MODELED, "freeze")
    with pytest.raises(enzyme_plugin.ADError, match="does not know the instruction 'freeze'"):
        enzyme_plugin.differentiate(FREEZE)


_LOAD_SUM = """
  %p1 = getelementptr double, ptr %x, i64 1
  %a = load double, ptr %x
  %b = load double, ptr %p1
  %r = fmul double %a, %b
  ret double %r
"""

# the instructions the engine does not model, each in a function to differentiate
UNMODELED = {
    "va_arg": """
define double @f(ptr %x, i64 %n) {
  %ap = alloca ptr
  %v = va_arg ptr %ap, double
  %a = load double, ptr %x
  %r = fmul double %a, %v
  ret double %r
}""",
    "invoke": """
declare i32 @__gxx_personality_v0(...)
declare void @may_throw()
declare void @log_unwind()
define double @f(ptr %x, i64 %n) personality ptr @__gxx_personality_v0 {
entry:
  invoke void @may_throw() to label %ok unwind label %bad
ok:""" + _LOAD_SUM + """
bad:
  %lp = landingpad { ptr, i32 } cleanup
  call void @log_unwind()
  resume { ptr, i32 } %lp
}""",
    "indirectbr": """
@targets = global [2 x ptr] [ptr blockaddress(@f, %one), ptr blockaddress(@f, %two)]
define double @f(ptr %x, i64 %n) {
entry:
  %slot = getelementptr [2 x ptr], ptr @targets, i64 0, i64 %n
  %to = load ptr, ptr %slot
  indirectbr ptr %to, [label %one, label %two]
one:""" + _LOAD_SUM + """
two:
  ret double 0.0
}""",
}


@pytest.mark.parametrize("op", sorted(UNMODELED))
def test_instructions_the_engine_does_not_model_are_ad_errors(op):
    with pytest.raises(enzyme_plugin.ADError, match=f"does not model the instruction '{op}'"):
        enzyme_plugin.differentiate(_HEAD + UNMODELED[op] + _GRAD)


def test_a_pointer_with_a_shadow_through_an_aggregate_is_an_ad_error():
    """A pointer taken out of a struct a callee returns would have no shadow: its loads were inactive (a
    zero gradient)."""
    ir = _HEAD + """
define { ptr, i64 } @view(ptr %x) noinline {
  %s = insertvalue { ptr, i64 } poison, ptr %x, 0
  %t = insertvalue { ptr, i64 } %s, i64 1, 1
  ret { ptr, i64 } %t
}
define double @f(ptr %x, i64 %n) {
  %s = call { ptr, i64 } @view(ptr %x)
  %q = extractvalue { ptr, i64 } %s, 0
  %a = load double, ptr %q
  %r = fmul double %a, %a
  ret double %r
}""" + _GRAD
    with pytest.raises(enzyme_plugin.ADError, match=r"holding pointers made from values with shadows \('call'\)"):
        enzyme_plugin.differentiate(ir)


# intrinsics that pass their first argument through: the shadow / tangent / adjoint follows
PASSTHROUGH = _HEAD + """
declare ptr @llvm.launder.invariant.group.p0(ptr)
declare ptr @llvm.ptr.annotation.p0.p0(ptr, ptr, ptr, i32, ptr)
declare double @llvm.arithmetic.fence.f64(double)
@.s = private constant [2 x i8] c"a\\00"
define double @f(ptr %x0, i64 %n) {
  %x1 = call ptr @llvm.launder.invariant.group.p0(ptr %x0)
  %x = call ptr @llvm.ptr.annotation.p0.p0(ptr %x1, ptr @.s, ptr @.s, i32 1, ptr null)
  %p1 = getelementptr double, ptr %x, i64 1
  %a = load double, ptr %x
  %b = load double, ptr %p1
  %m = fmul double %a, %b
  %r = call double @llvm.arithmetic.fence.f64(double %m)
  ret double %r
}
""" + _GRAD


def test_intrinsics_that_pass_a_value_through_carry_its_derivative():
    lib = _library(PASSTHROUGH)
    x, dx = _ARR(1.5, -2.0, 0, 0, 0), _ARR()
    ctypes.CFUNCTYPE(None, *_PROTO)(lib.address("grad"))(ctypes.addressof(x), ctypes.addressof(dx), 2)
    assert list(dx)[:2] == [-2.0, 1.5]
    t = ctypes.CFUNCTYPE(ctypes.c_double, *_PROTO)(lib.address("tangent"))
    assert t(ctypes.addressof(x), ctypes.addressof(_ARR(0.5, 2.0)), 2) == 0.5 * -2.0 + 2.0 * 1.5


def test_an_intrinsic_without_a_rule_is_an_ad_error():
    ir = _HEAD + """
declare double @llvm.experimental.constrained.fadd.f64(double, double, metadata, metadata)
define double @f(ptr %x, i64 %n) {
  %a = load double, ptr %x
  %r = call double @llvm.experimental.constrained.fadd.f64(double %a, double %a, metadata !"round.dynamic", metadata !"fpexcept.strict")
  ret double %r
}""" + _GRAD
    with pytest.raises(enzyme_plugin.ADError, match=r"no derivative rule for call to 'llvm\.experimental\.constrained\.fadd"):
        enzyme_plugin.differentiate(ir)
