"""What a gradient's compile does not do: parse a module into the Python model where a callback has
nothing to change in it, or again where the model of the stage before is still current (the results
checked against exact derivatives)."""

from __future__ import annotations

import ctypes
import math
import sys

import numpy as np
import pytest

from enzyme_plugin import Active, Const, Duplicated, Forward, Reverse, autodiff
from gpucompiler import CompilerConfig, CompilerJob, LLVMSource, jit
from gpucompiler.llvm.binding import parse_ir
from gpucompiler.module import IRModule
from gpucompiler.pipeline import compile
from gpucompiler.runtime.cpu import CPULibrary
from gpucompiler.stages import link_deferred
from gpucompiler.targets import NativeTarget
from enzyme_plugin import ad_stage
from enzyme_plugin.plugin import _restores
from tests.enzyme_plugin.ho_funcs import cube_sum_hvp


def sq_loss(w, xs):
    acc = 0.0
    for i in range(xs.shape[0]):
        r = math.tanh(w * xs[i])
        acc += r * r
    return acc


def grad_sq_loss(w, xs):
    return autodiff(Reverse, sq_loss, Active(w), Const(xs))


def weighted(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i] * y
    return s


def grad_weighted(x, y):
    dx = np.zeros_like(x)
    autodiff(Reverse, weighted, Duplicated(x, dx), Const(y))
    return dx


@pytest.fixture
def model_parses(monkeypatch):
    """The names of the functions that asked for a module's Python model where it had none, or parsed
    one themselves (``link_deferred`` parses the linked module lazily)."""
    callers: list[str] = []
    prop = IRModule.model
    read, write = prop.fget, prop.fset
    assert read is not None and write is not None

    def getter(self):
        if self._model is None:
            callers.append(sys._getframe(1).f_code.co_name)
        return read(self)

    real_parse = link_deferred.ir_model.parse

    def parse(text, **kwargs):
        caller = sys._getframe(1).f_code.co_name
        if caller != "model":  # the getter's own parse, counted above
            callers.append(caller)
        return real_parse(text, **kwargs)

    monkeypatch.setattr(IRModule, "model", property(getter, write))
    monkeypatch.setattr(link_deferred.ir_model, "parse", parse)
    return callers


def test_a_reverse_gradient_parses_no_module_after_ad(model_parses):
    xs = np.linspace(-1.0, 2.0, 7)
    g = jit(grad_sq_loss, plugins=("enzyme",))
    for w in (0.3, -1.1):
        (dw,) = g(w, xs)
        want = sum(2.0 * math.tanh(w * x) * (1.0 - math.tanh(w * x) ** 2) * x for x in xs)
        assert dw == pytest.approx(want, rel=1e-12)
    # one model of the linked module, made where the lookups are replaced and taken as it is by the marker lowering;
    # none where a callback has nothing to change (post_irgen: no constant address called; after AD)
    assert model_parses == ["replace_lookups"]


def test_an_array_gradient_parses_no_module_after_ad(model_parses):
    x = np.array([0.5, -2.0, 3.0])
    got = jit(grad_weighted, plugins=("enzyme",))(x, 1.5)
    np.testing.assert_allclose(got, 2.0 * x * 1.5, rtol=1e-15)
    assert "restore" not in model_parses and "preserve_nvvm" not in model_parses


@pytest.mark.parametrize("text, expected", [
    ("define double @f(double %x) {\n  ret double %x\n}\n", False),
    ("declare double @__enzyme_autodiff(...)\n", True),
    ("@enzyme_dup = external global i8\n", True),
    ('@__enzyme_register_gradient_f = global [1 x ptr] [ptr @f]\ndeclare void @f()\n', True),
    ("define void @f() #0 {\n  ret void\n}\nattributes #0 = { noinline \"gpuc.enzyme.noinline\" }\n", True),
    ("declare i32 @gpuc.inactive.omp_get_thread_num()\n", True),
])
def test_restore_is_skipped_only_where_it_has_nothing_to_change(text, expected):
    assert _restores(parse_ir(text), NativeTarget()) is expected


def scaled_sines(x, y, w):
    for i in range(x.shape[0]):
        y[i] = math.sin(x[i]) * w


def grad_scaled_sines(x, dx, y, dy, w):
    autodiff(Reverse, scaled_sines, Duplicated(x, dx), Duplicated(y, dy), Const(w))


def test_the_engine_reads_rolled_scalar_loops(monkeypatch):
    """The optimisation before AD leaves the loop rolled and scalar (the engine differentiated each
    unrolled and vectorized copy of its body: an MLP loss's derivative was 6,200 instructions); the
    optimisation after AD vectorizes the derivative, and the gradient is exact."""
    read: list[str] = []
    nested = ad_stage.differentiate_nested

    def recording(ir, optimize, options):
        read.append(str(ir))  # text, or the module LLVM holds (printed before the engine's cleanup changes it)
        return nested(ir, optimize, options)

    monkeypatch.setattr(ad_stage, "differentiate_nested", recording)
    x = np.linspace(-2.0, 2.0, 37)
    dx, y, dy = np.zeros_like(x), np.zeros_like(x), np.linspace(0.5, 1.5, 37)
    jit(grad_scaled_sines, plugins=("enzyme",), cache=False, tier=False)(x, dx, y, dy, 0.75)
    np.testing.assert_allclose(dx, np.cos(x) * 0.75 * np.linspace(0.5, 1.5, 37), rtol=1e-15)
    (text,) = read
    (header,) = [line for line in text.splitlines() if line.startswith("define") and "scaled_sines.deferred" in line]
    body = text[text.index(header):]
    body = body[:body.index("\n}\n")]
    assert " x double>" not in body, "a vectorized loop reached the engine"
    blocks = body.split("\n\n")  # the bounds-checked loop and the unchecked one: one sin in each body
    assert max(b.count("@llvm.sin.f64(") for b in blocks) == 1, "an unrolled loop reached the engine"



def sine_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.sin(x[i])
    return s


def sine_sum_gradient(x, dx):
    autodiff(Reverse, sine_sum, Duplicated(x, dx))


def sine_sum_hvp(x, v, dx, hv):
    autodiff(Forward, sine_sum_gradient, Duplicated(x, v), Duplicated(dx, hv))


def test_the_outer_level_reads_rolled_loops(monkeypatch):
    """Between levels of nested AD the inner derivative is optimised without the unroller and the
    vectorizers (the outer level differentiated each unrolled copy); the second derivative is exact."""
    between: list[str] = []
    scalar = ad_stage.optimize

    def recording(job, text, vectorize=True):
        ref = scalar(job, text, vectorize)
        between.append(str(ref))
        return ref

    monkeypatch.setattr(ad_stage, "optimize", recording)
    x, v = np.linspace(-2.0, 2.0, 37), np.linspace(1.0, -1.0, 37)
    dx, hv = np.zeros_like(x), np.zeros_like(x)
    jit(sine_sum_hvp, plugins=("enzyme",), cache=False, tier=False)(x, v, dx, hv)
    np.testing.assert_allclose(dx, np.cos(x), rtol=1e-15)
    np.testing.assert_allclose(hv, -np.sin(x) * v, rtol=1e-15)
    (text,) = between
    assert " x double>" not in text, "a vectorized loop reached the outer level"
    assert max(b.count("@llvm.cos.f64(") for b in text.split("\n\n")) == 1, "an unrolled loop reached the outer level"


def gathered(x, idx, n):
    s = 0.0
    for i in range(n):
        s += math.sin(x[idx[i]])
    return s


@jit(boundscheck=False, plugins=("enzyme",), cache=False, tier=False)
def grad_gathered(x, dx, idx, n):
    autodiff(Reverse, gathered, Duplicated(x, dx), Const(idx), Const(n))


def test_a_loop_through_an_index_array_is_differentiated_once(monkeypatch):
    """The loop vectorizer made a gather of this loop before AD, which the engine refused: the whole
    module was optimised and differentiated a second time, from a copy printed before the pipeline."""
    calls: list[str] = []
    nested = ad_stage.differentiate_nested

    def counting(text, optimize, options):
        calls.append(text)
        return nested(text, optimize, options)

    monkeypatch.setattr(ad_stage, "differentiate_nested", counting)
    x = np.linspace(-1.0, 1.0, 64)
    idx = np.arange(64)[::-1].copy()
    dx = np.zeros_like(x)
    grad_gathered(x, dx, idx, 64)
    np.testing.assert_allclose(dx, np.cos(x), rtol=1e-15)
    assert len(calls) == 1


@pytest.fixture
def llvm_calls(monkeypatch):
    """``(what, frames)`` for every module LLVM printed, parsed or verified: ``frames`` the
    ``(file name, function)`` of the 8 callers around it."""
    import llvmlite.binding as llvm

    calls: list[tuple[str, list[tuple[str, str]]]] = []

    def counted(owner, attr, what):
        real = getattr(owner, attr)

        def run(*args, **kwargs):
            frame, frames = sys._getframe(1), []
            while frame is not None and len(frames) < 8:
                frames.append((frame.f_code.co_filename.replace("\\", "/"), frame.f_code.co_name))
                frame = frame.f_back
            calls.append((what, frames))
            return real(*args, **kwargs)
        monkeypatch.setattr(owner, attr, run)

    counted(llvm.ModuleRef, "__str__", "print")
    counted(llvm.ModuleRef, "verify", "verify")
    counted(llvm, "parse_assembly", "parse")
    return calls


def _in(frames, path: str, name: str | None = None) -> bool:
    return any(f.endswith(path) and (name is None or n == name) for f, n in frames)


def tanh_loss(w, xs):
    acc = 0.0
    for i in range(xs.shape[0]):
        acc += math.tanh(w * xs[i]) * xs[i]
    return acc


def grad_tanh_loss(w, xs):
    return autodiff(Reverse, tanh_loss, Active(w), Const(xs))


def test_no_module_printed_or_verified_twice_for_our_own_edits(llvm_calls):
    """The marker lowering's print is read again for the unoptimised-IR check (LLVM does not print the
    module it just parsed); the host target's libmvec edits of its own print are parsed unverified (the
    pipeline after AD verifies its result)."""
    xs = np.linspace(-1.0, 2.0, 33)
    (dw,) = jit(grad_tanh_loss, plugins=("enzyme",))(0.7, xs)
    want = sum((1.0 - math.tanh(0.7 * x) ** 2) * x * x for x in xs)
    assert dw == pytest.approx(want, rel=1e-12)
    prints = [f for what, f in llvm_calls if what == "print"]
    assert not any(_in(f, "enzyme_plugin/plugin.py", "keep_rules_out_of_line") for f in prints)
    verified = [f for what, f in llvm_calls if what == "verify"]
    assert _in([fr for f in verified for fr in f], "enzyme_plugin/plugin.py", "lower_autodiff")  # its output is checked
    assert not any(_in(f, "gpucompiler/targets/native.py") for f in verified)
    if NativeTarget().machine()["vector_math"]:  # the round trips these cover ran (tanh named its vector versions)
        parses = [f for what, f in llvm_calls if what == "parse"]
        assert _in([fr for f in parses for fr in f], "gpucompiler/targets/native.py", "before_optimize")


def test_the_engine_s_cleanup_takes_llvm_s_module_as_it_is(llvm_calls):
    """The cleanup before each level of AD runs on the module LLVM holds (after the ``optimize`` stage,
    and after the optimisation between levels), not on a print of it parsed again; the second
    derivative is exact."""
    x, v = np.linspace(-2.0, 2.0, 37), np.linspace(1.0, -1.0, 37)
    dx, hv = np.zeros_like(x), np.zeros_like(x)
    jit(cube_sum_hvp, plugins=("enzyme",), cache=False, tier=False)(x, v, dx, hv)
    np.testing.assert_allclose(dx, 3.0 * x * x, rtol=1e-15)
    np.testing.assert_allclose(hv, 6.0 * x * v, rtol=1e-15)
    cleanup = [what for what, f in llvm_calls if _in(f, "enzyme_plugin/ad/preprocess.py", "prepare")]
    assert cleanup == ["print", "print"], "a level's cleanup parsed or verified its module"  # its print: the engine's
    between = [f for what, f in llvm_calls if what == "print" and _in(f, "enzyme_plugin/ad_stage.py", "scalar")]
    assert not between, "the module optimised between the levels was printed for the next level's cleanup"


def sixth_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i] * x[i] * x[i] * x[i] * x[i]
    return s


def sixth_sum_gradient(x, dx):
    autodiff(Reverse, sixth_sum, Duplicated(x, dx))


def sixth_sum_hvp(x, v, dx, hv):
    autodiff(Forward, sixth_sum_gradient, Duplicated(x, v), Duplicated(dx, hv))


def test_each_level_s_cleanup_reuses_the_process_s_target_machine(monkeypatch):
    """The cleanup before each level of AD builds its passes on a target machine made once per triple and
    level for the process (it made one per level, ~0.5 ms each); the second derivative is exact."""
    import llvmlite.binding as llvm

    made: list[str] = []
    real = llvm.Target.create_target_machine

    def counted(self, *args, **kwargs):
        if sys._getframe(1).f_code.co_filename.replace("\\", "/").endswith("enzyme_plugin/ad/preprocess.py"):
            made.append(self.triple)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(llvm.Target, "create_target_machine", counted)
    x, v = np.linspace(-2.0, 2.0, 9), np.linspace(1.0, -1.0, 9)
    # two compiles of two levels each: at most one machine, at the first cleanup
    for hvp, grad, hess in ((cube_sum_hvp, 3.0 * x * x, 6.0 * x), (sixth_sum_hvp, 6.0 * x ** 5, 30.0 * x ** 4)):
        dx, hv = np.zeros_like(x), np.zeros_like(x)
        jit(hvp, plugins=("enzyme",), cache=False, tier=False)(x, v, dx, hv)
        np.testing.assert_allclose(dx, grad, rtol=1e-14)
        np.testing.assert_allclose(hv, hess * v, rtol=1e-14)
    assert len(made) <= 1


def quartic_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i] * x[i] * x[i]
    return s


def quartic_sum_gradient(x, dx):
    autodiff(Reverse, quartic_sum, Duplicated(x, dx))


def quartic_sum_hvp(x, v, dx, hv):
    autodiff(Forward, quartic_sum_gradient, Duplicated(x, v), Duplicated(dx, hv))


def test_each_job_s_generated_module_is_printed_once_before_its_link(llvm_calls):
    """The Enzyme plugin's check for constant addresses after IR generation keeps its print of each job's
    module, from which the deferred linking reads the module's lookups (it printed the module again)."""
    x, v = np.linspace(-1.0, 1.5, 11), np.linspace(2.0, -1.0, 11)
    dx, hv = np.zeros_like(x), np.zeros_like(x)
    jit(quartic_sum_hvp, plugins=("enzyme",), cache=False, tier=False)(x, v, dx, hv)
    np.testing.assert_allclose(dx, 4.0 * x ** 3, rtol=1e-14)
    np.testing.assert_allclose(hv, 12.0 * x * x * v, rtol=1e-14)
    checked = [f for what, f in llvm_calls if what == "print" and _in(f, "enzyme_plugin/plugin.py", "preserve_inttoptr")]
    assert len(checked) == 3  # the job and its two nested jobs
    assert not any(what == "print" and _in(f, "gpucompiler/stages/link_deferred.py", "lookups") for what, f in llvm_calls)


_OPTNONE_IR = """
define double @f(double %x) #0 {
  %slot = alloca double
  store double %x, ptr %slot
  %v = load double, ptr %slot
  %y = fmul double %v, %v
  %z = fmul double %y, %v
  ret double %z
}
declare double @__enzyme_autodiff(ptr, ...)
define double @df(double %x) {
  %d = call double (ptr, ...) @__enzyme_autodiff(ptr @f, double %x)
  ret double %d
}
attributes #0 = { noinline optnone }
"""


@pytest.mark.parametrize("optnone", [True, False])
def test_a_module_spelling_optnone_is_cleaned_up_from_its_text(llvm_calls, optnone):
    """``optnone`` (clang -O0's) is dropped from the text before the engine's cleanup: such a module takes the
    text path (parsed again without it), any other the module LLVM holds; the derivative is exact either way."""
    ir = _OPTNONE_IR if optnone else _OPTNONE_IR.replace(" optnone", "")
    result = compile(CompilerJob(LLVMSource(ir, "df"), CompilerConfig(NativeTarget(), plugins=("enzyme",))), ("obj",))
    df = CPULibrary.from_result(result).function("df", ctypes.c_double, ctypes.c_double)
    assert df(0.7) == pytest.approx(3 * 0.49, rel=1e-15)
    parsed = [f for what, f in llvm_calls if what == "parse" and _in(f, "enzyme_plugin/ad/preprocess.py", "prepare")]
    assert len(parsed) == (1 if optnone else 0)
