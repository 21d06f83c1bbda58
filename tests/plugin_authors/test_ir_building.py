"""IR built through the model's Builder is checked as it is built, and every error in a plugin's pass or
rule lowering names the plugin with its own file:line (shown by default, not only under
GPUC_DEBUG_TRACEBACKS)."""

from __future__ import annotations

import inspect

import llvmlite.binding as llvm
import pytest
from llvmlite import ir

import gpucompiler.plugin as gp
from gpucompiler import CompilerConfig, CompilerJob, LLVMSource, NativeTarget, jit
from gpucompiler import types as PT
from gpucompiler.errors import IRBuildError, PluginError
from gpucompiler.interpreter import RuleSet
from gpucompiler.llvm import Builder, Function, constant, parse
from gpucompiler.llvm import types as T
from gpucompiler.pipeline import compile

DECLS = "declare double @llvm.sin.f64(double)\ndeclare i32 @printf(ptr, ...)\n"


def new_function():
    """A module with ``double @h(double, i64, ptr)`` and a builder at the end of its entry block."""
    m = parse(DECLS)
    fn = m.add_function(Function("h", T.function(T.double, [T.double, T.i64, T.ptr()])))
    return m, fn, Builder(fn.append_block("entry"))


def test_valid_instructions_build_and_llvm_verifies_them():
    m, fn, b = new_function()
    x, n, p = fn.args
    y = b.fadd(x, constant(T.double, "1.0"))
    s = b.call(m.functions["llvm.sin.f64"], [y])
    b.call(m.functions["printf"], [p, s, n])  # variadic: more arguments than parameters
    q = b.gep(T.double, p, [n])
    b.store(s, q)
    c = b.fcmp("olt", s, x)
    d = b.select(c, s, b.load(T.double, q))
    k = b.icmp("eq", p, p)  # pointers compare with icmp
    e = b.select(k, d, b.sitofp(n, T.double))
    agg = b.insertvalue(constant(T.struct((T.double, T.i64)), "poison"), e, 0)
    b.ret(b.fmul(b.extractvalue(agg, 0), x))
    llvm.parse_assembly(str(m)).verify()


CASES = {
    "a call with too few arguments": lambda m, b, x, n, p: b.call(m.functions["llvm.sin.f64"], []),
    "a call with too many arguments": lambda m, b, x, n, p: b.call(m.functions["llvm.sin.f64"], [x, x]),
    "a call argument of another type": lambda m, b, x, n, p: b.call(m.functions["llvm.sin.f64"], [n]),
    "a variadic call without its fixed arguments": lambda m, b, x, n, p: b.call(m.functions["printf"], []),
    "a call through a pointer without its type": lambda m, b, x, n, p: b.call(p, [x]),
    "an integer constant given to fadd": lambda m, b, x, n, p: b.fadd(x, constant(T.i64, "1")),
    "fadd of integers": lambda m, b, x, n, p: b.fadd(n, n),
    "add of doubles": lambda m, b, x, n, p: b.add(x, x),
    "fcmp of integers": lambda m, b, x, n, p: b.fcmp("olt", n, n),
    "icmp of a double and an integer": lambda m, b, x, n, p: b.icmp("eq", x, n),
    "a select on a double": lambda m, b, x, n, p: b.select(x, x, x),
    "a select of two types": lambda m, b, x, n, p: b.select(constant(T.i1, "true"), x, n),
    "a load through an integer": lambda m, b, x, n, p: b.load(T.double, n),
    "a store through a double": lambda m, b, x, n, p: b.store(x, x),
    "a gep with a double index": lambda m, b, x, n, p: b.gep(T.double, p, [x]),
    "sitofp of a double": lambda m, b, x, n, p: b.sitofp(x, T.double),
    "fptosi to a double": lambda m, b, x, n, p: b.fptosi(x, T.double),
    "trunc of a pointer": lambda m, b, x, n, p: b.trunc(p, T.i32),
    "a scalar cast to a vector": lambda m, b, x, n, p: b.sext(n, T.vector(2, T.i64)),
    "a return of another type": lambda m, b, x, n, p: b.ret(n),
    "ret void from a function returning double": lambda m, b, x, n, p: b.ret(),
    "a branch on a double": lambda m, b, x, n, p: b.cond_br(x, b.block, b.block),
    "insertvalue of another type": lambda m, b, x, n, p: b.insertvalue(
        constant(T.struct((T.double,)), "poison"), n, 0),
    "a phi with an incoming value of another type": lambda m, b, x, n, p: b.phi(T.double, [(n, b.block)]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_ill_typed_instruction_raises_when_built(case):
    m, fn, b = new_function()
    before = str(m)
    with pytest.raises(IRBuildError):
        CASES[case](m, b, *fn.args)
    assert str(m) == before  # nothing was inserted


def test_the_message_names_the_callee_and_the_argument():
    m, fn, b = new_function()
    with pytest.raises(IRBuildError, match=r"call of @llvm.sin.f64 \(double \(double\)\): argument 0 is double, "
                                           r"got i64 \(an unnamed value\)"):
        b.call(m.functions["llvm.sin.f64"], [fn.args[1]])
    with pytest.raises(IRBuildError, match=r"fadd: operands of different types, double \(an unnamed value\) and i64 1"):
        b.fadd(fn.args[0], constant(T.i64, "1"))


def test_wrong_arity_calls_were_accepted_by_llvm():
    """Why the check is at build time: LLVM verifies a call of the wrong arity through opaque pointers."""
    text = ("declare double @sin(double)\ndefine double @h(double %x) {\n"
            "  %f = getelementptr i8, ptr @sin, i64 0\n  %y = call double %f(double %x, double %x)\n"
            "  ret double %y\n}\n")
    llvm.parse_assembly(text).verify()  # no complaint: silent undefined behaviour at run time


# -- errors in a plugin's pass name the plugin and its line -----------------------------------
IR = "declare double @__scaled(double)\ndefine double @f(double %x) {\n  %y = call double @__scaled(double %x)\n  ret double %y\n}\n"


def line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, ln in enumerate(lines) if text in ln)


class WrongArity(gp.Plugin):
    """Lowers ``__scaled(x)`` to ``sin(x, x)``: a call of the wrong arity."""

    name, version = "wrong_arity", "1"
    markers = ("__scaled",)

    @gp.callback("ad", markers=("__scaled",))
    def lower(self, module):
        model = module.model
        sin = model.add_function(Function("sin", T.function(T.double, [T.double])))
        (use,) = list(model.functions["__scaled"].uses)
        call = use.user
        b = Builder()
        b.position_before(call)
        call.replace_all_uses_with(b.call(sin, [call.args[0], call.args[0]]))  # the bad line


class IntConstant(WrongArity):
    """Lowers ``__scaled(x)`` to ``fadd x, i64 2``."""

    name = "int_constant"

    @gp.callback("ad", markers=("__scaled",))
    def lower(self, module):
        model = module.model
        (use,) = list(model.functions["__scaled"].uses)
        b = Builder()
        b.position_before(use.user)
        use.user.replace_all_uses_with(b.fadd(use.user.args[0], constant(T.i64, "2")))  # the bad line


@pytest.mark.parametrize("plugin", [WrongArity, IntConstant])
def test_an_ill_typed_pass_is_a_plugin_error_at_the_plugins_line(register, plugin):
    register(plugin)
    job = CompilerJob(LLVMSource(IR, "f"), CompilerConfig(NativeTarget(), plugins=(plugin.name,)))
    with pytest.raises(PluginError) as err:
        compile(job)
    e = err.value
    assert (e.plugin, e.stage, e.callback) == (plugin.name, "ad", "lower")
    assert isinstance(e.cause, IRBuildError)
    assert e.at == (__file__, line_of(plugin.lower, "# the bad line"))
    assert f"at {__file__}:{e.at[1]}" in str(e)


# -- errors in a plugin's rule lowering name the plugin, its line and the user's ---------------
lowering_rules = RuleSet("bad_lowering")


def twice(x):
    return 2.0 * x


@lowering_rules.define(twice, PT.float64, restype=PT.float64, pure=False)
def _twice(cg, args, argtypes, restype):
    return cg.b.fadd(args[0], ir.Constant(ir.IntType(64), 2))  # the bad lowering


class BadLowering(gp.Plugin):
    name, version = "bad_lowering", "1"
    rules = lowering_rules


def calls_twice(x):
    return twice(x) + 1.0


def test_a_failing_rule_lowering_is_a_plugin_error_naming_both_lines(register):
    register(BadLowering)
    f = jit(calls_twice, plugins=("bad_lowering",))
    with pytest.raises(PluginError) as err:
        f(1.0)
    e = err.value
    assert (e.plugin, e.stage, e.callback) == ("bad_lowering", "lowering", "_twice")
    assert e.at == (__file__, line_of(_twice, "# the bad lowering"))
    assert e.loc[:2] == (__file__, line_of(calls_twice, "return twice"))
    assert str(e).startswith(f"{__file__}:{e.loc[1]}: plugin 'bad_lowering' failed in lowering")
    assert e.__cause__ is None  # the user's traceback: no compiler internals, the lines in the message


class BreaksTheModel(WrongArity):
    """Rewrites the module into IR that LLVM rejects (a return of the wrong type)."""

    name = "breaks_the_model"

    @gp.callback("post_irgen")
    def lower(self, module):
        module.model = parse(module.text.replace("ret double %y", "ret i32 %y"))  # the model parses it, LLVM not


def test_a_module_a_callback_breaks_is_that_callbacks_error(register):
    register(BreaksTheModel)
    job = CompilerJob(LLVMSource(IR, "f"), CompilerConfig(NativeTarget(), plugins=("breaks_the_model",)))
    with pytest.raises(PluginError) as err:
        compile(job)
    assert (err.value.plugin, err.value.stage, err.value.callback) == ("breaks_the_model", "post_irgen", "lower")
    assert "'%y' defined with type 'double' but expected 'i32'" in str(err.value)


# -- errors in a plugin's call handler name the plugin's line too ----------------------------------
handler_rules = RuleSet("bad_handler")


@handler_rules.handler
def _claims_twice(interp, fn, args):
    if fn is twice:
        return {}["no such key"]  # the bad handler
    return None


class BadHandler(gp.Plugin):
    name, version = "bad_handler", "1"
    rules = handler_rules


def test_a_failing_call_handler_is_a_plugin_error_naming_both_lines(register):
    register(BadHandler)
    with pytest.raises(PluginError) as err:
        jit(calls_twice, plugins=("bad_handler",))(1.0)
    e = err.value
    assert (e.plugin, e.stage) == ("bad_handler", "call handler") and isinstance(e.cause, KeyError)
    assert e.at == (__file__, line_of(_claims_twice, "# the bad handler"))
    assert e.loc[:2] == (__file__, line_of(calls_twice, "return twice"))
    assert f"at {__file__}:{e.at[1]}" in str(e)
