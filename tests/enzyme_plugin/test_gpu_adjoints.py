"""Adjoints inside GPU kernels: warp-aggregated atomic adds, the reverse of an atomic add into
shadowed memory, global address space of shadows, and the benchmark's gradient check.

Values are checked on the CPU grid emulation against analytic gradients and finite differences;
IR properties by parsing the PTX target's final LLVM IR; the PTX by ptxas.
"""

from __future__ import annotations

import math
import os
import re
import sys

import numpy as np
import pytest

import enzyme_plugin
from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from enzyme_plugin.ad import gpu
from gpucompiler import device as gd
from gpucompiler import kernel
from gpucompiler import types as T
from gpucompiler.core import CompilerConfig, CompilerJob, LLVMSource
from gpucompiler.llvm import parse
from gpucompiler.pipeline import compile
from gpucompiler.targets import PTXTarget

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import ad_gpu
import ad_kernels as K

P = ("enzyme",)
A = T.ArrayType(T.float64, 1, "C")


# -- kernels -----------------------------------------------------------------------------
def red_term(x, w, out, i):
    v = x[i]
    gd.atomic_add(out, 0, w[0] * v * v + w[1] * v)


def red_term_grad(x, dx, w, dw, out, dout):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, red_term, Duplicated(x, dx), Duplicated(w, dw), Duplicated(out, dout), Const(i))


def sub_term(x, out, i):
    gd.atomic_add(out, i % 2, -3.0 * x[i] * x[i])


def sub_term_grad(x, dx, out, dout):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, sub_term, Duplicated(x, dx), Duplicated(out, dout), Const(i))


def _final_ir(fn, *types):
    return parse(kernel(fn, plugins=P).inspect_llvm(*types))


def _defined(model):
    return [f for f in model.functions.values() if not f.is_declaration]


def _base_argument(p, fn):
    """The index of the kernel argument whose array pointer ``p`` addresses (None if it is another)."""
    for _ in range(64):
        op = getattr(p, "opcode", None)
        if op in ("getelementptr", "addrspacecast", "bitcast", "freeze") or op == "extractvalue":
            p = p.operands[0]
        else:
            break
    args = list(fn.args)
    return args.index(p) if p in args else None


# -- the reverse of an atomic add into shadowed memory ------------------------------------
def test_atomic_add_reduction_gradient_in_emulation():
    """out[0] += w0 x^2 + w1 x per thread: dx, dw scale with dout[0]; out gets the sum; dout is kept."""
    n = 300
    x, w = np.linspace(-1.5, 2.0, n), np.array([0.7, -0.3])
    dx, dw, out, dout = np.zeros(n), np.zeros(2), np.zeros(1), np.array([2.5])
    kernel(red_term_grad, plugins=P)[(n + 63) // 64, 64, "cpu"](x, dx, w, dw, out, dout)
    np.testing.assert_allclose(out, [np.sum(w[0] * x * x + w[1] * x)], rtol=1e-13)
    np.testing.assert_allclose(dx, 2.5 * (2 * w[0] * x + w[1]), rtol=1e-14)
    np.testing.assert_allclose(dw, 2.5 * np.array([np.sum(x * x), np.sum(x)]), rtol=1e-12)
    assert dout[0] == 2.5  # an atomic add leaves the adjoint of the element as it is
    # central differences of out[0] in w[0]
    h = 1e-6
    fd = (np.sum((w[0] + h) * x * x + w[1] * x) - np.sum((w[0] - h) * x * x + w[1] * x)) / (2 * h)
    assert dw[0] / 2.5 == pytest.approx(fd, rel=1e-8)


def test_atomic_add_of_negated_terms_at_two_addresses_in_emulation():
    n = 128
    x = np.linspace(0.1, 1.0, n)
    dx, out, dout = np.zeros(n), np.zeros(2), np.array([1.5, -4.0])
    kernel(sub_term_grad, plugins=P)[2, 64, "cpu"](x, dx, out, dout)
    seed = np.where(np.arange(n) % 2 == 0, 1.5, -4.0)
    np.testing.assert_allclose(dx, -6.0 * x * seed, rtol=1e-14)
    np.testing.assert_allclose(out, [-3 * np.sum(x[::2] ** 2), -3 * np.sum(x[1::2] ** 2)], rtol=1e-13)


def test_read_adjoint_of_atomic_add_is_a_plain_load(check_ptx):
    """The reverse of atomic_add(out, 0, v) reads dout[0]: no atomic on dout, one on out (the primal)."""
    model = _final_ir(red_term_grad, A, A, A, A, A, A)
    (fn,) = [f for f in _defined(model) if "red_term_grad" in f.name]
    rmw = [i for i in fn.instructions() if i.opcode == "atomicrmw"]
    written = {_base_argument(i.pointer_operand, fn) for i in rmw}
    assert 5 not in written, "an atomic add into dout, whose adjoint is only read"
    assert {1, 3, 4} <= written  # dx, dw (adjoints) and out (the primal's own atomic add)
    loads = {_base_argument(i.pointer_operand, fn) for i in fn.instructions() if i.opcode == "load"}
    assert 5 in loads
    check_ptx(kernel(red_term_grad, plugins=P).inspect_asm(A, A, A, A, A, A))


def test_used_old_value_of_active_atomic_add_raises():
    src = """
@enzyme_dup = global i32 0
declare double @__enzyme_autodiff(ptr, ...)
define double @h(ptr %x) {
  %v = load double, ptr %x
  %o = atomicrmw fadd ptr %x, double %v monotonic
  ret double %o
}
define void @grad(ptr %x, ptr %dx) {
  %d = call double (ptr, ...) @__enzyme_autodiff(ptr @h, ptr %x, ptr %dx)
  ret void
}
"""
    with pytest.raises(enzyme_plugin.ADError, match="old value of an atomic add"):
        enzyme_plugin.differentiate(src)


# -- atomics: thread-private memory, warp aggregation -------------------------------------
PRIVATE = """
@enzyme_dup = global i32 0
declare double @__enzyme_autodiff(ptr, ...)
define double @h(ptr %x) {
  %t = alloca double
  %v = load double, ptr %x
  %m = fmul double %v, %v
  store double %m, ptr %t
  %r = load double, ptr %t
  ret double %r
}
define void @grad(ptr %x, ptr %dx) {
  %d = call double (ptr, ...) @__enzyme_autodiff(ptr @h, ptr %x, ptr %dx)
  ret void
}
"""


def _atomics_of(text):
    model = parse(text)
    return [i for f in _defined(model) for i in f.instructions() if i.opcode == "atomicrmw"]


def test_no_atomic_on_thread_private_shadow():
    out = enzyme_plugin.differentiate(PRIVATE, options=gpu.EngineOptions(atomic_adjoints=True))
    rmw = _atomics_of(out)
    # x is shared: its adjoint is added atomically; the alloca's shadow is the thread's own
    assert rmw and all(getattr(i.pointer_operand, "opcode", None) != "alloca" for i in rmw)
    for i in rmw:
        p = i.pointer_operand
        while getattr(p, "opcode", None) in ("getelementptr", "bitcast", "addrspacecast"):
            p = p.operands[0]
        assert getattr(p, "opcode", None) != "alloca"


def test_the_engine_adds_plain_atomics_and_the_target_sums_warps():
    """The engine's adjoints are plain atomic adds on every target (the emulation keeps one per thread);
    the PTX target's finish sums a warp's (gpucompiler.targets.warpatomics)."""
    out = enzyme_plugin.differentiate(PRIVATE, options=gpu.EngineOptions(atomic_adjoints=True))
    assert "llvm.nvvm" not in out and "atomicrmw fadd" in out
    ptx = kernel(shared_term_grad, plugins=P).inspect_llvm(A, A, A, A)
    for name in ("llvm.nvvm.activemask", "llvm.nvvm.vote.all.sync", "llvm.nvvm.shfl.sync.bfly.i32"):
        assert name in ptx


def shared_term(x, w, i):
    v = x[i]
    return w[0] * v * v + w[1] * v


def shared_term_grad(x, dx, w, dw):
    i = gd.grid(1)
    if i < x.shape[0]:
        autodiff(Reverse, shared_term, Duplicated(x, dx), Duplicated(w, dw), Const(i))


def test_shared_parameter_adjoints_are_warp_aggregated_in_ptx(check_ptx):
    """dw: a full warp adding to one address sums with 5 butterfly shuffles, then one lane adds."""
    k = kernel(shared_term_grad, plugins=P)
    ptx = k.inspect_asm(A, A, A, A)
    check_ptx(ptx)
    body = [ln.strip() for ln in ptx.splitlines()]
    assert sum(ln.startswith("activemask") for ln in body) == 3  # dx[i], dw[0], dw[1]
    assert sum(ln.startswith("vote.sync.all") for ln in body) == 3
    assert sum(ln.startswith("shfl.sync.bfly") for ln in body) == 3 * 5 * 2  # 64-bit: two halves
    # every atomic is on global memory (kernel arrays), none generic; dw's two are summed per block in shared
    # memory first (gpucompiler.targets.ptx_blocksums), one thread a block adding each block's sum
    atoms = [ln for ln in body if ln.startswith("atom.") or ln.startswith("red.")]
    assert atoms and all(".global." in ln or ".shared." in ln for ln in atoms), atoms
    # dx[i]'s atomic (its warp's and a lane's own) beside its plain path (gpucompiler.targets.ptx_ownelements)
    assert sum(".shared." in ln for ln in atoms) == 2 and 3 <= sum(".global." in ln for ln in atoms) <= 4, atoms
    # (the old value loaded early in the block, volatile: ptx_ownelements.early_load)
    assert re.search(r"ld\.volatile\.global\.b64\s+(%\w+), \[(%\w+)\];.*?add\.rn\.f64\s+(%\w+), [^;]*\1[^;]*;"
                     r"\s+st\.global\.b64\s+\[\2\], \3;", ptx, re.S), ptx
    assert not any(ln.startswith(("ld.b", "st.b", "ld.f", "st.f")) for ln in body)
    x, w = np.linspace(-2.0, 2.0, 300), np.array([0.7, -0.3])
    dx, dw = np.zeros(300), np.zeros(2)
    k[3, 128, "cpu"](x, dx, w, dw)
    np.testing.assert_allclose(dx, 2 * w[0] * x + w[1], rtol=1e-14)
    np.testing.assert_allclose(dw, [np.sum(x * x), np.sum(x)], rtol=1e-12, atol=1e-12)


def _ptx_lines(fn, nargs, **options):
    return [ln.strip() for ln in kernel(fn, plugins=P, **options).inspect_asm(*([A] * nargs)).splitlines()]


def _loop_body(lines):
    """The lines of the innermost loop: from the last label that a backward branch targets to that branch."""
    labels = {ln[:-1]: k for k, ln in enumerate(lines) if ln.endswith(":")}
    loops = [(labels[m.group(1)], k) for k, ln in enumerate(lines)
             if (m := re.search(r"bra(?:\.uni)?\s+(\S+);", ln)) and m.group(1) in labels and labels[m.group(1)] < k]
    assert loops, "no loop"
    start, end = min(loops, key=lambda se: se[1] - se[0])
    return lines[start:end + 1]


def test_reduction_kernels_add_once_per_block(check_ptx):
    """Grid-stride primal and gradient: the shared sum of w's adjoints is one atomic per block and parameter."""
    primal = _ptx_lines(K.red_primal, 3)
    check_ptx("\n".join(primal))
    atoms = [ln for ln in primal if ln.startswith(("atom.", "red."))]
    assert len(atoms) == 1 and ".global.add.f64" in atoms[0]
    assert any(ln.startswith("bar.sync") for ln in primal)
    grad = _ptx_lines(K.red_grad, 4)
    check_ptx("\n".join(grad))
    # dw: two atomics after the block's sum, by thread 0 (its warp is not full there: one atomic, after
    # an activemask); dx[i] of the 3 autodiff call sites: a plain add each (the thread's own element,
    # gpucompiler.targets.ptx_ownelements, the block's barrier beside it) and, for other launches, a warp's
    # atomic and a lane's
    assert sum(ln.startswith("activemask") for ln in grad) == 5
    atoms = [ln for ln in grad if ln.startswith(("atom.", "red."))]
    assert len(atoms) == 2 + 3 * 2 and all(".global.add.f64" in ln for ln in atoms)
    assert sum(ln.startswith("st.global.b64") for ln in grad) == 3
    assert not any("malloc" in ln for ln in grad)


def test_nbody_kernels_use_rsqrt_under_fastmath_and_no_atomics_in_the_loop(check_ptx):
    """fastmath: 1/sqrt is libdevice's rsqrt; without it, sqrt.rn and a correctly rounded division."""
    exact = _ptx_lines(K.nbody_primal, 4)
    check_ptx("\n".join(exact))
    assert any(ln.startswith("sqrt.rn.f64") for ln in exact)
    assert not any("rsqrt" in ln for ln in exact)
    for fn, nargs in ((K.nbody_primal, 4), (K.nbody_grad, 6)):
        lines = _ptx_lines(fn, nargs, fastmath=True)
        check_ptx("\n".join(lines))
        assert any(ln.startswith("rsqrt.approx.f64") for ln in lines), fn.__name__
        assert not any(ln.startswith(("sqrt.", "div.rn.f64", "rcp.rn.f64")) for ln in lines), fn.__name__
        loop = _loop_body(lines)
        assert any(ln.startswith("rsqrt.approx.f64") for ln in loop)
        assert not any(ln.startswith(("atom.", "red.", "shfl.", "call")) for ln in loop), fn.__name__
        # body j: three loads; body i: in registers
        assert sum(ln.startswith("ld.global") for ln in loop) % 3 == 0
        assert not any("malloc" in ln for ln in lines)


def test_fastmath_rsqrt_rewrite_keeps_other_square_roots():
    """a / sqrt(x) -> a * rsqrt(x) only under fastmath; a sqrt used elsewhere stays."""
    def f(x, out):
        i = gd.grid(1)
        if i < x.shape[0]:
            s = math.sqrt(x[i])
            out[i] = 2.0 / s + s

    def ops(fast):
        mod = parse(kernel(f, fastmath=fast).inspect_llvm(A, A))
        fn = next(fn for fn in mod.functions.values() if not fn.is_declaration)
        return [(i.opcode, i.callee.name if i.opcode == "call" and i.callee is not None else "")
                for i in fn.instructions()]

    fast, exact = ops(True), ops(False)
    assert ("fdiv", "") in exact and not any("rsqrt" in c for _, c in exact)
    assert ("fdiv", "") not in fast
    assert any(c == "llvm.nvvm.rsqrt.approx.d" or "rsqrt" in c for _, c in fast)
    assert any(c == "llvm.sqrt.f64" or "sqrt.rn" in c for _, c in fast)  # s is still added


def test_benchmark_kernels_have_no_generic_memory_access(check_ptx):
    """Shadows of kernel arrays are global like the primal arrays, also through inlined loops."""
    for fn, nargs in ((K.nbody_grad, 6), (K.sten_grad, 2), (K.elem_grad, 2), (K.red_primal, 3)):
        ptx = kernel(fn, plugins=P).inspect_asm(*([A] * nargs))
        check_ptx(ptx)
        generic = re.findall(r"^\s*(?:ld|st|atom|red)(?:\.volatile)?\.(?!global|param|shared|local|volatile)\S+", ptx, re.M)
        assert not generic, (fn.__name__, generic[:3])


@pytest.mark.parametrize("blocks, block", [(4, 256), (2, 96)])
def test_reduction_benchmark_kernels_in_emulation(blocks, block):
    """Grid-stride sums (several elements per thread, a partial last warp): the primal gives the sum;
    the gradient matches the analytic one (w's adjoints summed in registers, then per block)."""
    n = 1000
    x, w = np.linspace(-2.0, 2.0, n), np.array([0.7, -0.3])
    out = np.zeros(1)
    kernel(K.red_primal, plugins=P)[blocks, block, "cpu"](x, w, out)
    np.testing.assert_allclose(out, [np.sum(w[0] * x * x + w[1] * x)], rtol=1e-12)
    dx, dw = np.zeros(n), np.zeros(2)
    kernel(K.red_grad, plugins=P)[blocks, block, "cpu"](x, dx, w, dw)
    np.testing.assert_allclose(dx, 2 * w[0] * x + w[1], rtol=1e-14)
    np.testing.assert_allclose(dw, [np.sum(x * x), np.sum(x)], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("slices", [1, 3, 4])
def test_nbody_benchmark_kernels_in_emulation(slices):
    """Bodies split over slices of the j range: energies and the gathered gradient against NumPy."""
    nb = 64
    rng = np.random.default_rng(3)
    p = [rng.uniform(-1.0, 1.0, nb) for _ in range(3)]
    d2 = sum((q[None, :] - q[:, None]) ** 2 for q in p)
    blocks = (nb * slices + 31) // 32
    out = np.zeros(nb)
    kernel(K.nbody_primal, plugins=P, fastmath=True)[blocks, 32, "cpu"](*p, out)
    np.testing.assert_allclose(out, np.sum(1.0 / np.sqrt(d2 + K.EPS), axis=1), rtol=1e-13)
    g = [np.zeros(nb) for _ in range(3)]
    kernel(K.nbody_grad, plugins=P, fastmath=True)[blocks, 32, "cpu"](p[0], g[0], p[1], g[1], p[2], g[2])
    f = -((d2 + K.EPS) ** -1.5)
    for got, q in zip(g, p):  # d/dq_i sum_ij f(p_i, p_j) = 2 sum_j -(d2 + eps)^-3/2 (q_i - q_j)
        np.testing.assert_allclose(got, 2 * np.sum(f * (q[:, None] - q[None, :]), axis=1), rtol=1e-12,
                                   atol=1e-12)


# -- the benchmark's gradient check -------------------------------------------------------
def _case(name, n=512, nbody=64):
    return ad_gpu.cases(n, nbody, np.random.default_rng(0))[name]


@pytest.mark.parametrize("name", ["elementwise (sin·exp+log)", "reduction (atomics)", "stencil (tanh, 3 points)",
                                  "n-body step (softened)"])
def test_localised_finite_differences_match_analytic(name):
    """The fallback check's differences agree with exact gradients to ~1e-9 (no 2^24-sum cancellation)."""
    case = _case(name)
    a = [np.asarray(v) for v in case["inputs"]]
    exact = _exact(name, a)
    for k, j, fd in ad_gpu.fd_gradients(case, a, probes=6):
        assert abs(fd - exact[k][j]) <= 1e-8 * max(1.0, abs(exact[k][j])), (k, j, fd, exact[k][j])


def _exact(name, a):
    if name.startswith("elementwise"):
        x = a[0]
        return [np.cos(x) * np.exp(-x * x / 2) - x * np.sin(x) * np.exp(-x * x / 2) + 2 * x / (1 + x * x)]
    if name.startswith("reduction"):
        x, w = a
        return [2 * w[0] * x + w[1], np.array([np.sum(x * x), np.sum(x)])]
    if name.startswith("stencil"):
        x = a[0]
        d = 1 - np.tanh(0.25 * x[:-2] + 0.5 * x[1:-1] + 0.25 * x[2:]) ** 2
        g = np.zeros_like(x)
        g[:-2] += 0.25 * d
        g[1:-1] += 0.5 * d
        g[2:] += 0.25 * d
        return [g]
    px, py, pz = a
    dxyz = [p[None, :] - p[:, None] for p in (px, py, pz)]  # [i, j] = p_j - p_i
    r3 = (sum(d * d for d in dxyz) + K.EPS) ** -1.5
    # E = sum_ij r_ij^-1: dE/dp_m = sum_i (p_m - p_i) * -r^-3 (as j) + sum_j (p_j - p_m) * r^-3 (as i)
    return [np.sum(-d * r3, axis=0) + np.sum(d * r3, axis=1) for d in dxyz]


def test_check_fails_loudly_on_a_wrong_gradient(capsys, monkeypatch):
    """A gradient off by 1e-5 in one element fails; the benchmark exits non-zero with a FAILED row."""
    case = _case("stencil (tanh, 3 points)")
    a = [np.asarray(v) for v in case["inputs"]]
    good = _exact("stencil (tanh, 3 points)", a)
    err, tol, _ = ad_gpu.check_gradients(case, a, good)
    assert err <= tol
    monkeypatch.setattr(ad_gpu, "fd_gradients", lambda case, a: [(0, 7, float(good[0][7]))])
    bad = [good[0].copy()]
    bad[0][7] *= 1 + 1e-5
    err, tol, _ = ad_gpu.check_gradients(case, a, bad)
    assert err > tol


def test_relative_error_is_elementwise():
    want = np.array([1.0, 1e-3, 5.0])
    assert ad_gpu._rel_err(want * (1 + 1e-13), want) < 1e-12
    off = want.copy()
    off[1] *= 1 + 1e-6  # a small element wrong: visible although the sum barely moves
    assert ad_gpu._rel_err(off, want) > 1e-7
    assert ad_gpu._rel_err(want[:2], want) == float("inf")


@pytest.mark.slow  # the whole benchmark in the emulation: with the slow set
def test_emulated_benchmark_passes_and_fails_loudly(monkeypatch, capsys):
    assert ad_gpu.main(["--emulate"]) == 0
    assert "FAILED" not in capsys.readouterr().out
    real = ad_gpu.check_gradients

    def broken(case, a, grads):
        grads = [g * (1 + 1e-5) for g in grads]  # every element: a probe of the FD check sees it
        return real(case, a, grads)

    monkeypatch.setattr(ad_gpu, "check_gradients", broken)
    assert ad_gpu.main(["--emulate"]) == 1
    cap = capsys.readouterr()
    ncases = len(ad_gpu.cases(64, 16, np.random.default_rng(0)))
    assert ncases == 6 and cap.out.count("FAILED") == ncases and "GRADIENT CHECK FAILED" in cap.err


def test_analytic_reference_catches_an_unprobed_element(monkeypatch):
    """Without JAX, a case with an analytic gradient is checked at every element, not only at the probes."""
    monkeypatch.setattr(ad_gpu, "jax_gradients", lambda case, a: None)
    case = _case("elementwise (sin·exp+log)")
    a = [np.asarray(v) for v in case["inputs"]]
    g = _exact("elementwise (sin·exp+log)", a)
    probed = {j for _, j, _ in ad_gpu.fd_gradients(case, a)}
    j = next(j for j in range(len(a[0])) if j not in probed)
    g[0][j] += 1e-6 * abs(g[0][j])
    err, tol, _ = ad_gpu.check_gradients(case, a, g)
    assert err > tol


VECTOR_LOAD = """
define double @f(ptr %x) {
  %v = load <2 x double>, ptr %x, align 16
  %a = extractelement <2 x double> %v, i64 0
  %b = extractelement <2 x double> %v, i64 1
  %m = fmul double %a, %b
  ret double %m
}
define void @k(ptr %x, ptr %dx) {
  %d = call double (ptr, ...) @__enzyme_autodiff(ptr @f, ptr %x, ptr %dx)
  ret void
}
declare double @__enzyme_autodiff(ptr, ...)
"""


def test_a_vector_adjoint_in_a_gpu_kernel_is_added_atomically_lane_by_lane():
    """Threads may share x: the adjoint of a <2 x double> load is two atomic adds (was a plain vector
    load, add and store into dx on PTX, which loses other threads' adds)."""
    job = CompilerJob(LLVMSource(VECTOR_LOAD, "k"), CompilerConfig(target=PTXTarget(), kernel=True, plugins=P,
                                                                  opt_level=0))
    model = parse(compile(job, ("llvm",)).artifacts["llvm"])
    atomics = [i for f in _defined(model) for i in f.instructions() if i.opcode == "atomicrmw"]
    assert len(atomics) == 2 and all(i.operation == "fadd" and str(i.type) == "double" for i in atomics)
