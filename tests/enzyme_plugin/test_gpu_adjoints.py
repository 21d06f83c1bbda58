"""Adjoints inside GPU kernels: warp-aggregated atomic adds, the reverse of an atomic add into
shadowed memory, global address space of shadows, and the benchmark's gradient check.

Values are checked on the CPU grid emulation against analytic gradients and finite differences;
IR properties by parsing the PTX target's final LLVM IR; the PTX by ptxas.
"""

from __future__ import annotations

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
from gpucompiler.llvm import parse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import ad_gpu  # noqa: E402
import ad_kernels as K  # noqa: E402

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
        if op in ("getelementptr", "addrspacecast", "bitcast", "freeze"):
            p = p.operands[0]
        elif op == "extractvalue":
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
    check_ptx(kernel(red_term_grad, plugins=P).inspect_ptx(A, A, A, A, A, A))


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


@pytest.mark.parametrize("aggregate", [False, True])
def test_no_atomic_on_thread_private_shadow(aggregate):
    with gpu.options(atomic_adjoints=True, warp_aggregate=aggregate):
        out = enzyme_plugin.differentiate(PRIVATE)
    rmw = _atomics_of(out)
    # x is shared: its adjoint is added atomically; the alloca's shadow is the thread's own
    assert rmw and all(getattr(i.pointer_operand, "opcode", None) != "alloca" for i in rmw)
    for i in rmw:
        p = i.pointer_operand
        while getattr(p, "opcode", None) in ("getelementptr", "bitcast", "addrspacecast"):
            p = p.operands[0]
        assert getattr(p, "opcode", None) != "alloca"


def test_warp_aggregation_only_on_ptx():
    """The emulation (CPU target) keeps one atomic per thread; no NVVM intrinsic reaches it."""
    with gpu.options(atomic_adjoints=True, warp_aggregate=False):
        out = enzyme_plugin.differentiate(PRIVATE)
    assert "llvm.nvvm" not in out
    with gpu.options(atomic_adjoints=True, warp_aggregate=True):
        out = enzyme_plugin.differentiate(PRIVATE)
    for name in ("llvm.nvvm.activemask", "llvm.nvvm.vote.all.sync", "llvm.nvvm.shfl.sync.bfly.i32"):
        assert name in out


def test_shared_parameter_adjoints_are_warp_aggregated_in_ptx(check_ptx):
    """dw: a full warp adding to one address sums with 5 butterfly shuffles, then one lane adds."""
    k = kernel(K.red_grad, plugins=P)
    ptx = k.inspect_ptx(A, A, A, A)
    check_ptx(ptx)
    body = [ln.strip() for ln in ptx.splitlines()]
    assert sum(ln.startswith("activemask") for ln in body) == 3  # dx[i], dw[0], dw[1]
    assert sum(ln.startswith("vote.sync.all") for ln in body) == 3
    assert sum(ln.startswith("shfl.sync.bfly") for ln in body) == 3 * 5 * 2  # 64-bit: two halves
    # every atomic is on global memory (kernel arrays), none generic
    atoms = [ln for ln in body if ln.startswith("atom.") or ln.startswith("red.")]
    assert atoms and all(".global." in ln for ln in atoms), atoms
    assert not any(ln.startswith(("ld.b", "st.b", "ld.f", "st.f")) for ln in body)


def test_benchmark_kernels_have_no_generic_memory_access(check_ptx):
    """Shadows of kernel arrays are global like the primal arrays, also through inlined loops."""
    for fn, nargs in ((K.nbody_grad, 6), (K.sten_grad, 2), (K.elem_grad, 2), (K.red_primal, 3)):
        ptx = kernel(fn, plugins=P).inspect_ptx(*([A] * nargs))
        check_ptx(ptx)
        generic = re.findall(r"^\s*(?:ld|st|atom|red)\.(?!global|param|shared|local)\S+", ptx, re.M)
        assert not generic, (fn.__name__, generic[:3])


def test_reduction_benchmark_kernels_in_emulation():
    """The warp-shuffle primal gives the sum; the gradient matches the analytic one (w shared)."""
    n = 1000
    x, w = np.linspace(-2.0, 2.0, n), np.array([0.7, -0.3])
    out = np.zeros(1)
    kernel(K.red_primal, plugins=P)[(n + 255) // 256, 256, "cpu"](x, w, out)
    np.testing.assert_allclose(out, [np.sum(w[0] * x * x + w[1] * x)], rtol=1e-12)
    dx, dw = np.zeros(n), np.zeros(2)
    kernel(K.red_grad, plugins=P)[(n + 255) // 256, 256, "cpu"](x, dx, w, dw)
    np.testing.assert_allclose(dx, 2 * w[0] * x + w[1], rtol=1e-14)
    np.testing.assert_allclose(dw, [np.sum(x * x), np.sum(x)], rtol=1e-12, atol=1e-12)


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
    assert cap.out.count("FAILED") == 4 and "GRADIENT CHECK FAILED" in cap.err


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
