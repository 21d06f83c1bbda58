"""Which predecessor a block was entered from is rebuilt from the branch that decided it, not taped.

The reverse sweep of a block with two predecessors must go back the way the forward sweep came. When the
block's immediate dominator ends in a conditional branch and each predecessor is that dominator (one
side's edge) or reachable from one side of the branch only (an ``if`` without ``else``, a diamond, a loop
behind a guard), the way back is the branch's condition, which the reverse sweep recomputes like any other
value (or reads from the tape, in the slot the taped id took): a loop whose body branches on rebuilt values
then keeps nothing on its tape.

:meth:`CFG.deciding_branch` on parsed IR (shapes it must decide and shapes it must refuse); gradients of
branchy loops against central differences (kernels on the CPU grid emulation, with and without bounds
checks, and a ``@jit`` function on the host); the PTX kernel's IR parsed back: no store in its loop.
"""

from __future__ import annotations

import math
import re

import llvmlite.binding as llvm
import numpy as np
import pytest

from enzyme_plugin import Active, Const, Duplicated, Reverse, autodiff
from enzyme_plugin.ad.analysis import CFG
from gpucompiler import device as gd
from gpucompiler import jit, kernel
from gpucompiler import types as T
from gpucompiler.llvm import parse

P = ("enzyme",)
A = T.ArrayType(T.float64, 1, "C")
IA = T.ArrayType(T.int64, 1, "C")


def _cfg(body: str):
    fn = parse(f"define double @f(i1 %c, i1 %c2, i32 %n, double %x) {{\n{body}\n}}").functions["f"]
    return CFG(fn), {b.name: b for b in fn.blocks}


TRIANGLE = """entry:
  br i1 %c, label %t, label %j
t:
  br label %j
j:
  ret double %x"""

DIAMOND = """entry:
  br i1 %c, label %t, label %e
t:
  br label %j
e:
  br label %j
j:
  ret double %x"""

GUARDED_LOOP = """entry:
  br i1 %c, label %pre, label %j
pre:
  br label %loop
loop:
  br i1 %c2, label %loop, label %out
out:
  br label %j
j:
  ret double %x"""

# x is reached from both sides: coming from x says nothing about %c
BOTH_SIDES = """entry:
  br i1 %c, label %t, label %e
t:
  br i1 %c2, label %x, label %j
e:
  br label %x
x:
  br label %j
j:
  ret double %x"""

THREE_PREDS = """entry:
  br i1 %c, label %t, label %e
t:
  br i1 %c2, label %j, label %u
u:
  br label %j
e:
  br label %j
j:
  ret double %x"""

SWITCH = """entry:
  switch i32 %n, label %t [ i32 1, label %j ]
t:
  br label %j
j:
  ret double %x"""


@pytest.mark.parametrize(("body", "want"), [(TRIANGLE, ("entry", "t")), (DIAMOND, ("e", "t")),
                                             (GUARDED_LOOP, ("entry", "out"))],
                         ids=["triangle", "diamond", "guarded_loop"])
def test_the_dominators_branch_decides_the_predecessor(body, want):
    cfg, blocks = _cfg(body)
    found = cfg.deciding_branch(blocks["j"])
    assert found is not None
    cond, k_true, k_false = found
    assert cond.name == "c"
    preds = [p.name for p in cfg.preds(blocks["j"])]
    assert (preds[k_false], preds[k_true]) == want


@pytest.mark.parametrize("body", [BOTH_SIDES, THREE_PREDS, SWITCH], ids=["both_sides", "three_preds", "switch"])
def test_a_predecessor_the_branch_does_not_decide_is_taped(body):
    cfg, blocks = _cfg(body)
    assert cfg.deciding_branch(blocks["j"]) is None


def cutoff_sum(x, noffs, nbr, i):
    """Per neighbour an ``if/elif/else`` on its distance, then a ``while`` that may run zero times (behind
    its guard), an ``if`` without ``else`` and a ``continue``."""
    s = 0.0
    for k in range(noffs[i], noffs[i + 1]):
        d = x[nbr[k]] - x[i]
        if d > 0.3:
            s += math.sin(d) * x[nbr[k]]
        elif d < -0.3:
            s -= d * d * x[i]
        else:
            s += math.exp(d)
        t = x[nbr[k]] * 3.0
        while t > 0.5:
            t = t * 0.5 + 0.01 * x[i]
        if t < 0.35:
            s += t * t
        if d > 0.9:
            continue
        s += t * d
    return s


def k_cutoff_sum(x, dx, noffs, nbr):
    i = gd.grid(1)
    if i < noffs.shape[0] - 1:
        autodiff(Reverse, cutoff_sum, Duplicated(x, dx), Const(noffs), Const(nbr), Const(i))


def branch_in_list(x, noffs, nbr, i):
    """A diamond in each iteration of a loop over a list, its condition rebuilt from the neighbour's value."""
    s = 0.0
    for k in range(noffs[i], noffs[i + 1]):
        v = x[nbr[k]]
        if v > x[i]:
            s += math.sqrt(v - x[i] + 0.1)
        else:
            s -= math.log(x[i] - v + 0.5) * v
    return s


def k_branch_in_list(x, dx, noffs, nbr):
    i = gd.grid(1)
    if i < noffs.shape[0] - 1:
        autodiff(Reverse, branch_in_list, Duplicated(x, dx), Const(noffs), Const(nbr), Const(i))


def _problem(n: int, seed: int):
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, 7, n)
    noffs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    nbr = ((np.repeat(np.arange(n), lens) + rng.integers(1, n, int(noffs[-1]))) % n).astype(np.int64)
    return rng.uniform(-0.8, 1.6, n), noffs, nbr


def _central(total, x, h=1e-6):
    fd = np.zeros_like(x)
    for j in range(x.shape[0]):
        d = np.zeros_like(x)
        d[j] = h
        fd[j] = (total(x + d) - total(x - d)) / (2 * h)
    return fd


LOOPS = {"cutoff_sum": (cutoff_sum, k_cutoff_sum), "branch_in_list": (branch_in_list, k_branch_in_list)}


@pytest.mark.parametrize("boundscheck", [False, True])
@pytest.mark.parametrize("name", sorted(LOOPS))
def test_branchy_loops_give_the_finite_differences_on_the_emulation(name, boundscheck):
    loss, grad = LOOPS[name]
    n = 40
    x, noffs, nbr = _problem(n, seed=9)
    want = _central(lambda v: sum(loss(v, noffs, nbr, i) for i in range(n)), x)
    dx = np.zeros(n)
    kernel(grad, plugins=P, boundscheck=boundscheck)[2, 32, "cpu"](x, dx, noffs, nbr)
    np.testing.assert_allclose(dx, want, rtol=1e-6, atol=1e-6)


def host_sum(x, noffs, nbr):
    s = 0.0
    for i in range(noffs.shape[0] - 1):
        s += cutoff_sum(x, noffs, nbr, i)
    return s


def grad_host(x, dx, noffs, nbr):
    autodiff(Reverse, host_sum, Duplicated(x, dx), Const(noffs), Const(nbr))


def scalar_branches(a, n):
    """Branches on an active scalar in a loop on the host (a ``while`` whose count depends on the data)."""
    s = a
    k = 0
    while k < n:
        if s > 1.0:
            s = s * 0.5 + math.sin(s)
        elif s < 0.2:
            s = s * s + 0.3
        k += 1
    return s


def grad_scalar(a, n):
    return autodiff(Reverse, scalar_branches, Active(a), Const(n))[0]


def test_branchy_loops_give_the_finite_differences_on_the_host():
    n = 30
    x, noffs, nbr = _problem(n, seed=4)
    dx = np.zeros(n)
    jit(grad_host, plugins=P)(x, dx, noffs, nbr)
    np.testing.assert_allclose(dx, _central(lambda v: host_sum(v, noffs, nbr), x), rtol=1e-6, atol=1e-6)
    g = jit(grad_scalar, plugins=P)
    for a in (0.1, 0.7, 1.3, 2.5):
        h = 1e-6
        fd = (scalar_branches(a + h, 9) - scalar_branches(a - h, 9)) / (2 * h)
        assert abs(g(a, 9) - fd) < 1e-6 * max(1.0, abs(fd)), a


def test_a_diamond_in_a_list_loop_keeps_nothing_on_the_tape():
    """Was: the predecessor's id (an i32) stored per neighbour into the tape arena."""
    ir = kernel(k_branch_in_list, plugins=P).inspect_llvm(A, A, IA, IA)
    fn = llvm.parse_assembly(ir).get_function("k_branch_in_list")
    succ, body, label = {}, {}, None
    for line in str(fn).splitlines()[1:]:
        m = re.match(r"^([\w.$-]+):", line)
        if m:
            label = m.group(1)
            succ[label], body[label] = [], []
        elif label is not None and line.strip() and line.strip() != "}":
            body[label].append(line)
            succ[label] += re.findall(r"label %([\w.$-]+)", line)

    def on_cycle(start):
        seen, stack = set(), list(succ[start])
        while stack:
            b = stack.pop()
            if b == start:
                return True
            if b not in seen:
                seen.add(b)
                stack.extend(succ.get(b, []))
        return False

    looped = [b for b in succ if on_cycle(b)]
    assert looped, "the kernel has a loop"
    stores = [i for b in looped for i in body[b] if re.match(r"\s*store ", i)]
    assert stores == [], stores
    assert not re.search(r"alloca \[\d+ x i8\]", ir), "a tape arena"
