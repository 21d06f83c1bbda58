"""Loops over variable-length lists in kernel gradients keep nothing on their tape when their reverse can
be rebuilt: on a device, a loop whose trip count is not a constant has its tape in memory, so the reverse
sweep recomputes what each iteration needs from the loop counter, values from before the loop and memory
the function never writes (the neighbour's index, its coordinates), divisions and math calls (``exp``,
``sqrt``) included, instead of a store and a load per iteration and thread.

The IR checks parse the PTX kernel's LLVM IR back: no store in a block on a cycle of its CFG, no tape
arena, no local memory in the PTX. The gradients are checked on the CPU grid emulation (which runs the
same tape code) against central differences of the loss run by CPython, with and without bounds checks
(with them, the error path writes memory: loads are then taped, not recomputed), including kernels where
the rule must not apply: a division of loop-carried values, a value used after its loop, a loop that
writes the memory it reads.
"""

from __future__ import annotations

import math
import re

import llvmlite.binding as llvm
import numpy as np
import pytest

from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from gpucompiler import device as gd
from gpucompiler import kernel
from gpucompiler import types as T

P = ("enzyme",)
A = T.ArrayType(T.float64, 1, "C")
IA = T.ArrayType(T.int64, 1, "C")


def pair_energy(px, py, pz, noffs, nbr, i):
    """The neighbour-list loop of benchmarks/ad_nested_kernels.py."""
    s = 0.0
    for k in range(noffs[i], noffs[i + 1]):
        j = nbr[k]
        dx = px[i] - px[j]
        dy = py[i] - py[j]
        dz = pz[i] - pz[j]
        r2 = dx * dx + dy * dy + dz * dz
        s += math.exp(-r2) / (r2 + 0.1)
    return s


def k_pair_energy(px, dpx, py, dpy, pz, dpz, noffs, nbr):
    i = gd.grid(1)
    if i < noffs.shape[0] - 1:
        autodiff(Reverse, pair_energy, Duplicated(px, dpx), Duplicated(py, dpy), Duplicated(pz, dpz), Const(noffs),
                 Const(nbr), Const(i))


def cutoff_force(x, noffs, nbr, i):
    """A square root, a power and a division by a value from before the loop, in a branch of the body;
    the last neighbour's term is used again after the loop (there it comes from the tape)."""
    s = 0.0
    c = x[i] * x[i] + 0.5
    q = 0.0
    for k in range(noffs[i], noffs[i + 1]):
        d = x[i] - x[nbr[k]]
        r2 = d * d
        if r2 < 2.0:
            q = math.sqrt(r2 + c) / c
            s += q * math.pow(r2 + 1.0, 1.5)
        else:
            q = math.log(r2) / (r2 + c)
            s -= q
    return s + q * x[i]


def k_cutoff_force(x, dx, noffs, nbr):
    i = gd.grid(1)
    if i < noffs.shape[0] - 1:
        autodiff(Reverse, cutoff_force, Duplicated(x, dx), Const(noffs), Const(nbr), Const(i))


def list_of_solves(x, noffs, nbr, i):
    """A Newton solve (``y**3 + y = b``, a while on data) per neighbour: the step's quotient depends on the
    loop-carried ``y`` and stays on the tape; the neighbour's terms around it are rebuilt."""
    s = 0.0
    for k in range(noffs[i], noffs[i + 1]):
        b = x[nbr[k]] + x[i] * 0.25
        y = b
        r = y * y * y + y - b
        while abs(r) > 1e-13:
            y = y - r / (3.0 * y * y + 1.0)
            r = y * y * y + y - b
        s += math.exp(-y * y) / (1.0 + b * b)
    return s


def k_list_of_solves(x, dx, noffs, nbr):
    i = gd.grid(1)
    if i < noffs.shape[0] - 1:
        autodiff(Reverse, list_of_solves, Duplicated(x, dx), Const(noffs), Const(nbr), Const(i))


def written_in_loop(x, y, z, noffs, nbr, i):
    """The loop writes ``z[i]`` and reads it again: the function writes memory, so loads are not rebuilt
    (an iteration may have changed what they read), and neither is what depends on them."""
    s = 0.0
    for k in range(noffs[i], noffs[i + 1]):
        j = nbr[k]
        t = math.exp(-x[j] * y[j]) / (1.0 + x[i] * x[i])
        z[i] = z[i] + 0.125 * t
        s += t * z[i]
    return s


def k_written_in_loop(x, dx, y, dy, z, dz, noffs, nbr):
    i = gd.grid(1)
    if i < noffs.shape[0] - 1:
        autodiff(Reverse, written_in_loop, Duplicated(x, dx), Duplicated(y, dy), Duplicated(z, dz), Const(noffs),
                 Const(nbr), Const(i))


D = 24


def aos_energy(x, noffs, nbr, i):
    """A loop of constant trip count in each iteration of a loop over a list (coordinates stored as rows of
    ``D``): the inner loop stores nothing, so it has no array, and the outer loop's frames do not record
    its (null) base on every iteration."""
    s = 0.0
    for k in range(noffs[i], noffs[i + 1]):
        j = nbr[k]
        for d in range(D):
            t = x[D * j + d] - x[D * i + d]
            s += math.exp(-t * t) / (1.0 + t * t)
    return s


def k_aos_energy(x, dx, noffs, nbr):
    i = gd.grid(1)
    if i < noffs.shape[0] - 1:
        autodiff(Reverse, aos_energy, Duplicated(x, dx), Const(noffs), Const(nbr), Const(i))


def list_of_lists(x, noffs, nbr, i):
    """A list per neighbour (CSR of CSR: the neighbour's own list in ``noffs``): the inner loop's last
    counter is rebuilt from its trip count, not taped on every outer iteration, and so is the branch that
    skips an empty inner list."""
    s = 0.0
    for k in range(noffs[i], noffs[i + 1]):
        j = nbr[k]
        for q in range(noffs[j], noffs[j + 1]):
            s += math.exp(-x[nbr[q]] * x[j]) / (1.0 + x[i] * x[nbr[q]])
    return s


def inner_walks(x, noffs, nbr, i):
    """Inner lists walked backwards and by twos (other trip-count formulas; LLVM unrolls them with a
    remainder, whose values are taped)."""
    s = 0.0
    for k in range(noffs[i], noffs[i + 1]):
        j = nbr[k]
        for q in range(noffs[j + 1] - 1, noffs[j] - 1, -1):
            s += math.sin(x[nbr[q]] - x[i]) * x[j]
        for q in range(noffs[j], noffs[j + 1], 2):
            s -= math.sqrt(1.0 + x[nbr[q]] * x[nbr[q]]) * x[i]
    return s


def k_inner_walks(x, dx, noffs, nbr):
    i = gd.grid(1)
    if i < noffs.shape[0] - 1:
        autodiff(Reverse, inner_walks, Duplicated(x, dx), Const(noffs), Const(nbr), Const(i))


def k_list_of_lists(x, dx, noffs, nbr):
    i = gd.grid(1)
    if i < noffs.shape[0] - 1:
        autodiff(Reverse, list_of_lists, Duplicated(x, dx), Const(noffs), Const(nbr), Const(i))


def _lists(n: int, seed: int, lo: int = 0, hi: int = 6):
    rng = np.random.default_rng(seed)
    lens = rng.integers(lo, hi + 1, n)
    noffs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    nbr = ((np.repeat(np.arange(n), lens) + rng.integers(1, n, int(noffs[-1]))) % n).astype(np.int64)
    return rng, noffs, nbr


def _central(total, xs, c, h=1e-6):
    """Central differences of ``total(xs)`` with respect to ``xs[c]``."""
    fd = np.zeros_like(xs[c])
    for j in range(fd.shape[0]):
        up, dn = [v.copy() for v in xs], [v.copy() for v in xs]
        up[c][j] += h
        dn[c][j] -= h
        fd[j] = (total(up) - total(dn)) / (2 * h)
    return fd


def _blocks_on_cycles(ir: str, name: str) -> dict:
    """``{block label: [instruction text]}`` of the blocks of function ``name`` in ``ir`` (parsed and printed
    back by LLVM, which names every block) that lie on a cycle of its CFG."""
    succ, body, label = {}, {}, None
    for line in str(llvm.parse_assembly(ir).get_function(name)).splitlines()[1:]:
        m = re.match(r"^([\w.$-]+):", line)
        if m:
            label = m.group(1)
            succ[label], body[label] = [], []
        elif label is not None and line.strip() and line.strip() != "}":
            body[label].append(line)
            succ[label] += re.findall(r"label %([\w.$-]+)", line)
    on_cycle = {}
    for start in succ:
        seen, stack = set(), list(succ[start])
        while stack:
            b = stack.pop()
            if b == start:
                on_cycle[start] = body[start]
                break
            if b not in seen:
                seen.add(b)
                stack.extend(succ.get(b, []))
    return on_cycle


def test_the_neighbour_loop_keeps_nothing_on_its_tape():
    """Was: 40 bytes stored per neighbour into the 1 KiB arena (the wrap test of the index, the address of
    the list entry, the index, the quotient and the ``exp``), loaded back in the reverse sweep."""
    k = kernel(k_pair_energy, plugins=P)
    types = (A, A, A, A, A, A, IA, IA)
    ir = k.inspect_llvm(*types)
    looped = _blocks_on_cycles(ir, "k_pair_energy")
    assert looped, "the kernel has a loop"
    stores = [i for insts in looped.values() for i in insts if re.match(r"\s*store ", i)]
    assert stores == [], stores
    assert not re.search(r"alloca \[\d+ x i8\]", ir), "a tape arena"
    ptx = k.inspect_asm(*types)
    assert "__local_depot" not in ptx and "malloc" not in ptx
    # the quotient exp(-r2) / (r2 + 0.1), needed again in the reverse: its adjoints take 1 / (r2 + 0.1) and the
    # exp the reverse computes anyway, one division instead of the quotient's and the adjoint's
    assert ptx.count("div.rn.f64") == 0 and ptx.count("rcp.rn.f64") == 1, ptx
    # one loop is left, the reverse one: its three scatters into the neighbour's adjoints
    assert sum(i.count("atomicrmw fadd") for insts in looped.values() for i in insts) == 3


def test_the_neighbour_gradient_matches_finite_differences_on_the_emulation():
    n = 48
    rng, noffs, nbr = _lists(n, seed=11, lo=0, hi=16)
    pos = [rng.uniform(0.0, 2.0, n) for _ in range(3)]

    def total(p):
        return sum(pair_energy(p[0], p[1], p[2], noffs, nbr, i) for i in range(n))

    for boundscheck in (False, True):
        grads = [np.zeros(n) for _ in range(3)]
        kernel(k_pair_energy, plugins=P, boundscheck=boundscheck)[2, 32, "cpu"](
            pos[0], grads[0], pos[1], grads[1], pos[2], grads[2], noffs, nbr)
        for c in range(3):
            np.testing.assert_allclose(grads[c], _central(total, pos, c), rtol=1e-6, atol=1e-6,
                                       err_msg=f"coordinate {c}, boundscheck={boundscheck}")


CASES = {
    "cutoff_force": (cutoff_force, k_cutoff_force),
    "list_of_solves": (list_of_solves, k_list_of_solves),
    "list_of_lists": (list_of_lists, k_list_of_lists),
    "inner_walks": (inner_walks, k_inner_walks),
}


@pytest.mark.parametrize("boundscheck", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_recomputed_math_gives_the_finite_differences(name, boundscheck):
    loss, grad = CASES[name]
    n = 40
    rng, noffs, nbr = _lists(n, seed=3)
    x = rng.uniform(0.2, 1.6, n)

    def total(v):
        return sum(loss(v[0], noffs, nbr, i) for i in range(n))

    dx = np.zeros(n)
    kernel(grad, plugins=P, boundscheck=boundscheck)[2, 32, "cpu"](x, dx, noffs, nbr)
    np.testing.assert_allclose(dx, _central(total, [x], 0), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("boundscheck", [False, True])
def test_a_loop_that_writes_what_it_reads_is_taped(boundscheck):
    n = 40
    rng, noffs, nbr = _lists(n, seed=5)
    x, y, z = (rng.uniform(0.2, 1.2, n) for _ in range(3))

    def total(v):
        zz = v[2].copy()
        return sum(written_in_loop(v[0], v[1], zz, noffs, nbr, i) for i in range(n))

    d = [np.zeros(n) for _ in range(3)]
    kernel(k_written_in_loop, plugins=P, boundscheck=boundscheck)[2, 32, "cpu"](
        x, d[0], y, d[1], z.copy(), d[2], noffs, nbr)
    for c in range(3):
        np.testing.assert_allclose(d[c], _central(total, [x, y, z], c), rtol=1e-6, atol=1e-6, err_msg=f"input {c}")


@pytest.mark.parametrize("name", sorted(CASES) + ["pair_energy"])
def test_the_gradients_compile_for_ptx(name):
    grad = k_pair_energy if name == "pair_energy" else CASES[name][1]
    types = (A, A, A, A, A, A, IA, IA) if name == "pair_energy" else (A, A, IA, IA)
    ptx = kernel(grad, plugins=P).inspect_asm(*types)
    assert ".entry" in ptx and "atom.global.add.f64" in ptx


def test_an_inner_loop_without_frames_records_no_base():
    """Was: the null base of the inner loop's (empty) array stored with its count on every outer iteration."""
    ir = kernel(k_aos_energy, plugins=P).inspect_llvm(A, A, IA, IA)
    looped = _blocks_on_cycles(ir, "k_aos_energy")
    stores = [i for insts in looped.values() for i in insts if re.match(r"\s*store ", i)]
    assert not [i for i in stores if re.match(r"\s*store ptr ", i)], stores


@pytest.mark.parametrize("boundscheck", [False, True])
def test_a_constant_loop_in_a_list_loop_gives_the_finite_differences(boundscheck):
    n = 24
    rng, noffs, nbr = _lists(n, seed=8, hi=4)
    x = rng.uniform(-1.0, 1.0, n * D)

    def total(v):
        return sum(aos_energy(v[0], noffs, nbr, i) for i in range(n))

    dx = np.zeros_like(x)
    kernel(k_aos_energy, plugins=P, boundscheck=boundscheck)[1, 32, "cpu"](x, dx, noffs, nbr)
    np.testing.assert_allclose(dx, _central(total, [x], 0), rtol=1e-6, atol=1e-6)


def test_inner_lists_keep_nothing_on_the_tape():
    """Was: the inner loop's last counter, its array's (null) base and the branch around it stored on every
    outer iteration, into a tape arena."""
    ir = kernel(k_list_of_lists, plugins=P).inspect_llvm(A, A, IA, IA)
    looped = _blocks_on_cycles(ir, "k_list_of_lists")
    assert looped
    stores = [i for insts in looped.values() for i in insts if re.match(r"\s*store ", i)]
    assert stores == [], stores
    assert not re.search(r"alloca \[\d+ x i8\]", ir), "a tape arena"
