"""Neighbouring atomic adds combined in a warp (``gpucompiler.targets.ptx_neighbouradds``).

The stencil gradient's PTX (assembled by ptxas) shuffles each lane's adjoints to the lane owning the element;
hand-written kernels pin which groups of adds are combined and which stay as written. The pass is PTX-only:
its output runs here in a lockstep simulation of one warp (shuffles, ``activemask``, branches), every lane's
every share checked to reach its element once, and on a CUDA device (marked ``gpu``) the stencil gradient
is checked against NumPy at sizes and block sizes that take the warp's path and (blocks of 48 threads) the
lanes' path.
"""

from __future__ import annotations

import math
import re
import struct

import numpy as np
import pytest

from enzyme_plugin import Const, Duplicated, Reverse, autodiff
from gpucompiler import device as gd, kernel, types as T
from gpucompiler.llvm import Argument, Instruction, Module, parse, parse_ir
from gpucompiler.targets.ptx import PTXTarget
from gpucompiler.targets.ptx_neighbouradds import neighbour_adds

P = ("enzyme",)
A = T.ArrayType(T.float64, 1, "C")
WARP = PTXTarget().warp_intrinsics()
assert WARP is not None


def sten(x, i):
    return math.tanh(0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1])


def sten_grad(x, dx):
    i = gd.grid(1)
    if i > 0 and i < x.shape[0] - 1:
        autodiff(Reverse, sten, Duplicated(x, dx), Const(i))


def _want(x: np.ndarray) -> np.ndarray:
    """The stencil's exact gradient: interior element ``i`` adds ``w * (1 - tanh(s_i)^2)`` to ``i - 1, i, i + 1``."""
    s = 0.25 * x[:-2] + 0.5 * x[1:-1] + 0.25 * x[2:]
    d = 1.0 - np.tanh(s) ** 2
    dx = np.zeros_like(x)
    dx[:-2] += 0.25 * d
    dx[1:-1] += 0.5 * d
    dx[2:] += 0.25 * d
    return dx


def _lines(ptx: str) -> list[str]:
    return [ln.strip() for ln in ptx.splitlines()]


def _global_adds(ptx: str) -> int:
    return len(re.findall(r"^\s*(?:atom|red)\.global\.add\.f64", ptx, re.M))


def test_the_stencil_gradient_shuffles_each_adjoint_to_the_lane_of_its_element(check_ptx):
    k = kernel(sten_grad, plugins=P)
    ptx = k.inspect_asm(A, A)
    check_ptx(ptx)
    body = _lines(ptx)
    # x[i - 1]'s and x[i + 1]'s adjoints, 64 bits each: two 32-bit shuffles from a lane in a register
    by_lane = [ln for ln in body if re.match(r"shfl\.sync\.idx\.b32\s+%r\d+(?:\|%p\d+)?, %r\d+, %r\d+, 31, -1;", ln)]
    assert len(by_lane) == 4, by_lane
    assert "%laneid" in ptx and sum(ln.startswith("activemask") for ln in body) >= 1
    assert re.search(r"and\.b32\s+%r\d+, %r\d+, 31;", ptx)  # ntid.x a multiple of 32
    # the lane's own element by a plain add where the warp alone adds into it, on a one-dimensional launch
    assert "%nctaid.y" in ptx and re.search(r"st\.global\.b64", ptx)
    # the warp's path: one add of the lane's own element and one per edge; the lanes' path: the three as written
    # (beside their warp-summed forms, gpucompiler.targets.warpatomics, which LLVM partly merges)
    assert _global_adds(ptx) >= 3 + 3, ptx


def test_no_combining_without_aggregation(check_ptx):
    ptx = kernel(sten_grad, plugins=P).inspect_asm(A, A, target=PTXTarget(aggregate_atomics=False))
    check_ptx(ptx)
    assert "shfl" not in ptx and "activemask" not in ptx and _global_adds(ptx) == 3


def test_the_stencil_gradient_matches_numpy_in_the_emulation():
    n = 300
    x = np.linspace(-2.0, 2.0, n) ** 3
    dx = np.zeros(n)
    kernel(sten_grad, plugins=P)[(n + 127) // 128, 128, "cpu"](x, dx)
    np.testing.assert_allclose(dx, _want(x), rtol=1e-12, atol=1e-15)


# -- hand-written kernels -----------------------------------------------------------------------------------
_HEAD = """
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.y()
declare void @opaque(ptr)

define void @k({ ptr, [1 x i64], [1 x i64] } %a, { ptr, [1 x i64], [1 x i64] } %b, i64 %s, double %v) {
entry:
  %c = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %n = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ty = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %cw = zext i32 %c to i64
  %nw = zext i32 %n to i64
  %tw = zext i32 %t to i64
  %tyw = zext i32 %ty to i64
  %m = mul i64 %cw, %nw
  %g = add i64 %m, %tw
  %off = shl i64 %g, 3
  %g4 = shl i64 %g, 2
  %g8 = shl i64 %g, 3
  %rows = mul i64 %g, %s
  %row = add i64 %rows, %tyw
  %pa = extractvalue { ptr, [1 x i64], [1 x i64] } %a, 0
  %pb = extractvalue { ptr, [1 x i64], [1 x i64] } %b, 0
"""


def _add(k: int, c: int, base: str = "%pa", order: str = "monotonic", index: str | None = None) -> str:
    """Add ``k``: ``base[G + c] += v`` (bytes ``(G << 3) + 8c``), or at ``index`` (an ``i64`` over ``%g``)."""
    at = index if index is not None else f"add i64 %off, {8 * c}"
    return (f"  %o{k} = {at}\n  %p{k} = getelementptr i8, ptr {base}, i64 %o{k}\n"
            f"  %r{k} = atomicrmw fadd ptr %p{k}, double %v {order}, align 8\n")


def _kernel(*adds: str, tail: str = "", value: str = "double %v") -> str:
    return _HEAD + "".join(adds).replace("double %v", value) + tail + "  ret void\n}\n"


def _run(text: str) -> tuple[Module, list[Instruction]]:
    module = parse(text)
    made = neighbour_adds(module, WARP, module.functions["k"])
    parse_ir(str(module)).verify()
    return module, made


def test_three_neighbours_make_one_add_per_element_and_one_per_edge():
    module, made = _run(_kernel(_add(0, -1), _add(1, 0), _add(2, 1)))
    text = str(module)
    assert len(made) == 3  # the lane's own element, the edges at -1 and +1
    assert text.count("atomicrmw fadd") == 6  # the three as written stay on the lanes' path
    assert text.count("@llvm.nvvm.shfl.sync.idx.i32(i32 -1") == 4  # offsets -1 and +1, two halves each
    assert text.count("call i32 @llvm.nvvm.activemask()") == 1 and "@llvm.nvvm.read.ptx.sreg.laneid()" in text
    own = made[0]
    assert own.operands[0].name == "p1"  # the lane's own element: the address of the add at offset 0
    assert {m.operands[0].name for m in made[1:]} == {"p0", "p2"} and all(m.operands[1].name == "v" for m in made[1:])


def _doubles(add: str) -> str:
    return add.replace("getelementptr i8", "getelementptr double")


@pytest.mark.parametrize("adds, made, own, guarded", [
    ((_add(0, 0), _add(1, 1)), 2, "%p0", False),
    # element-typed addresses (G + 1, G - 1): the own element's address made from the first add's
    ((_doubles(_add(0, 1, index="add i64 %g, 1")), _doubles(_add(1, -1, index="sub i64 %g, 1"))), 3,
     "getelementptr i8, ptr %p0, i64 -8", False),
    # a chain of geps: element G, then 8 bytes on
    (("  %q0 = getelementptr double, ptr %pa, i64 %g\n" + _add(0, 0, base="%q0", index="add i64 0, 0"),
      "  %q1 = getelementptr double, ptr %pa, i64 %g\n" + _add(1, 1, base="%q1", index="add i64 0, 8")), 2, "%p0", False),
    # offsets of one sign: lanes 0 and 1 own no share, and add nothing to their own element
    ((_add(0, 2), _add(1, 3)), 3, "getelementptr i8, ptr %p0, i64 -16", True),
])
def test_other_spellings_and_offsets_are_combined(adds, made, own, guarded):
    module, out = _run(_kernel(*adds))
    text = str(module)
    assert len(out) == made
    assert f"atomicrmw fadd ptr {own}" in text if own.startswith("%") else own in text
    # warp or lanes; each edge; the share's guard; a plain or an atomic add of the lane's own element
    assert text.count("\n  br i1 ") == 1 + (made - 1) + guarded + 1


@pytest.mark.parametrize("value, step, op", [("float 1.0", 4, "fadd"), ("i64 3", 8, "add"), ("i32 3", 4, "add")])
def test_other_element_types_are_combined(value, step, op):
    adds = [_add(k, c, index=f"add i64 %g{step}, {step * c}").replace("fadd", op).replace("align 8", f"align {step}")
            for k, c in enumerate((-1, 0, 1))]
    module, made = _run(_kernel(*adds, value=value))
    assert len(made) == 3 and all(str(m.operands[1].type) == value.split()[0] for m in made)
    assert str(module).count("@llvm.nvvm.shfl.sync.idx.i32(i32 -1") == (2 if step == 4 else 4)


@pytest.mark.parametrize("adds, tail", [
    ((_add(0, 0), "  br label %next\nnext:\n", _add(1, 1)), ""),  # different blocks
    ((_add(0, 0, index="add i64 %g, %s"), _add(1, 1, index="add i64 %g, %s")), ""),  # no constant offset
    ((_add(0, 0, index="add i64 %row, 0"), _add(1, 1, index="add i64 %row, 1")), ""),  # 2-D: g * s + tid.y
    ((_add(0, 0), _add(1, 1, base="%pb")), ""),  # two arrays
    ((_add(0, 0), _add(1, 1).replace("atomicrmw", "atomicrmw volatile")), ""),
    ((_add(0, 0), _add(1, 1, order="seq_cst")), ""),
    ((_add(0, 0), _add(1, 1)), "  %u = fadd double %r1, 1.0\n"),  # an old value used
    ((_add(0, 0, index="shl i64 %g, 2"), _add(1, 1, index="add i64 %g4, 4")), ""),  # 4-byte steps, 8-byte adds
    ((_add(0, 0), _add(1, 32)), ""),  # beyond the warp
    ((_add(0, 0), _add(1, 1)), "  call void @opaque(ptr %pa)\n"),  # an unknown call
    ((_add(0, 0), "  %l = load double, ptr %pb\n", _add(1, 1)), ""),  # a read between the adds
    ((_add(0, 0), _add(1, 1)), "  %q = inttoptr i64 4096 to ptr\n  %w = load double, ptr %q\n"),  # unknown reach
    ((_add(0, 0), _add(1, 0)), ""),  # one offset twice
    (tuple(a.replace("align 8", "align 16") for a in (_add(0, 0), _add(1, 1))), ""),  # aligned beyond the element
])
def test_which_groups_stay_as_written(adds, tail):
    module, made = _run(_kernel(*adds, tail=tail))
    assert made == [] and "shfl" not in str(module)


def test_other_arrays_read_are_checked_to_lie_elsewhere():
    tail = "  %l = load double, ptr %pb\n"
    module, made = _run(_kernel(_add(0, 0), _add(1, 1), tail=tail))
    text = str(module)
    assert len(made) == 2
    # b's span read in the flags: the warp's, and the plain add's (which checks the launch one-dimensional)
    assert text.count("extractvalue { ptr, [1 x i64], [1 x i64] } %b, 1, 0") == 2
    assert text.count("call i32 @llvm.nvvm.read.ptx.sreg.nctaid.y()") == 1


_B_SPAN = "extractvalue { ptr, [1 x i64], [1 x i64] } %b, 1, 0"


def test_an_array_read_only_before_the_group_is_not_checked():
    """Nothing follows the group and ``b`` is only read: no view of ``b`` can miss a moved add, and a read by
    another thread races with the atomics as much as with the plain add: only the launch is checked."""
    module, made = _run(_kernel("  %l = load double, ptr %pb\n", _add(0, 0), _add(1, 1)))
    text = str(module)
    assert len(made) == 2 and _B_SPAN not in text and "store double" in text
    assert text.count("call i32 @llvm.nvvm.read.ptx.sreg.nctaid.y()") == 1


def test_a_read_in_a_later_iteration_is_checked():
    """The group in a loop whose next iteration reads ``b`` first: the read follows the group."""
    loop = ("  br label %loop\nloop:\n  %l = load double, ptr %pb\n" + _add(0, 0) + _add(1, 1)
            + "  %again = fcmp olt double %l, 0.0\n  br i1 %again, label %loop, label %done\ndone:\n")
    module, made = _run(_kernel(loop))
    assert len(made) == 2 and str(module).count(_B_SPAN) == 2


@pytest.mark.parametrize("where", ["before", "after"])
def test_an_array_written_elsewhere_is_checked_for_the_plain_add(where):
    """An atomic add into ``b`` (a view of ``a``'s buffer, perhaps) could reach a lane's element between its
    plain load and store: ``b``'s span is checked before the plain add; the warp's path, all atomics, is not."""
    other = _add(9, 0, base="%pb")
    adds = (other, _add(0, 0), _add(1, 1)) if where == "before" else (_add(0, 0), _add(1, 1), other)
    module, made = _run(_kernel(*adds))
    text = str(module)
    assert len(made) == 2 and text.count(_B_SPAN) == 1 and "store double" in text


def test_the_plain_add_reads_its_element_at_the_start_of_the_block():
    """The own element's old value is loaded (volatile: the code generator keeps it there) before the block's
    work, its address's computation moved up with it; the plain path adds to that value."""
    module, made = _run(_kernel(_add(0, -1), _add(1, 0), _add(2, 1)))
    fn = module.functions["k"]
    loads = [i for i in fn.instructions() if i.opcode == "load"]
    assert len(made) == 3 and len(loads) == 1 and loads[0].is_volatile and loads[0].parent is fn.blocks[0]
    assert loads[0].operands[0].name == "p1"  # the add at offset 0's address
    entry = fn.blocks[0].instructions
    assert entry.index(loads[0]) < min(entry.index(i) for i in entry if i.name in ("pb", "rows", "g4"))
    stored = next(i for i in fn.instructions() if i.opcode == "store")
    assert loads[0] in stored.operands[0].operands  # old value + the lanes' total


def test_an_array_added_into_elsewhere_too_keeps_atomic_adds():
    """Another add into the array (outside the group): another thread's may reach a lane's element, so the
    lane's own element takes its total atomically, and no one-dimensional launch is checked."""
    module, made = _run(_kernel(_add(0, 0), _add(1, 1), tail="  br label %more\nmore:\n" + _add(2, 5)))
    text = str(module)
    assert len(made) == 2 and "sreg.nctaid.y" not in text and "store double" not in text


# -- one warp, simulated ------------------------------------------------------------------------------------
def _lanes_kernel(offsets: tuple[int, ...]) -> str:
    """Add ``k`` adds ``G * 10^k`` at element ``G + offsets[k]``: every lane's every share tells apart."""
    adds = "".join(f"  %x{k} = uitofp i64 %g to double\n  %v{k} = fmul double %x{k}, {10.0 ** k:.1f}\n"
                   + _add(k, c).replace("double %v", f"double %v{k}") for k, c in enumerate(offsets))
    return _kernel(adds)


_MASK = {"i1": 1, "i32": (1 << 32) - 1, "i64": (1 << 64) - 1}
_BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
           "shl": lambda a, b: a << b, "lshr": lambda a, b: a >> b, "and": lambda a, b: a & b,
           "or": lambda a, b: a | b, "fadd": lambda a, b: a + b, "fmul": lambda a, b: a * b}
_COMPARE = {"eq": lambda a, b: a == b, "ult": lambda a, b: a < b, "uge": lambda a, b: a >= b,
            "slt": lambda a, b: _signed(a) < _signed(b), "sle": lambda a, b: _signed(a) <= _signed(b),
            "sgt": lambda a, b: _signed(a) > _signed(b)}


def _signed(v: int) -> int:
    return v - (1 << 64) if v >> 63 else v
_ARGUMENTS = {"s": 7, "v": 1.0, "a": 0, "b": 1 << 20}  # (an array: the byte its data starts at)


class _Warp:
    """The first warp of block 3 (``ntid`` threads) running kernel ``k``, lanes ``active`` of it, in lockstep:
    the lanes at one block run it together, instruction by instruction, the first block in the function's
    order first (the kernels here branch only forward), on a one-dimensional launch. ``memory``: element ->
    what was added into it; ``atomics``, ``plain``: how many atomic and plain adds (stores) the lanes made."""

    def __init__(self, ntid: int, active: range):
        self.ntid, self.active = ntid, active
        self.env: dict[int, dict[int, object]] = {lane: {} for lane in active}
        self.memory: dict[int, float] = {}
        self.atomics = self.plain = 0

    def run(self, fn) -> dict[int, float]:
        order = {id(b): n for n, b in enumerate(fn.blocks)}
        at = {lane: fn.blocks[0] for lane in self.active}
        while at:
            block = min(at.values(), key=lambda b: order[id(b)])
            lanes = [lane for lane, b in at.items() if b is block]
            for inst in block.instructions:
                values = {lane: self.step(inst, lane, lanes) for lane in lanes}
                for lane, value in values.items():
                    self.env[lane][id(inst)] = value
            for lane in lanes:
                if inst.opcode == "ret":
                    del at[lane]
                else:
                    taken = len(inst.operands) == 1 or self.value(inst.operands[0], lane)
                    at[lane] = inst.operands[-1] if len(inst.operands) == 1 else inst.operands[1 if taken else 2]
        return self.memory

    def value(self, v, lane: int):
        if id(v) in self.env[lane]:
            return self.env[lane][id(v)]
        if isinstance(v, Argument):
            return _ARGUMENTS[v.name]
        if str(v.type) in ("double", "float"):
            return float(v.ref)
        return {"true": 1, "false": 0}[v.ref] if v.ref in ("true", "false") else int(v.ref) & _MASK[str(v.type)]

    def step(self, inst, lane: int, lanes: list[int]):
        op, ops = inst.opcode, inst.operands
        if op in ("br", "ret"):
            return None
        if op == "extractvalue":
            return self.value(ops[0], lane)
        if op == "call":
            return self.call(inst.callee.name, inst.args, lane, lanes)
        val = [self.value(o, lane) for o in ops]
        if op in _BINARY:
            out = _BINARY[op](*val)
            return out if op.startswith("f") else out & _MASK[str(inst.type)]
        if op == "icmp":
            return int(_COMPARE[str(inst.predicate)](*val))
        if op == "select":
            return val[1] if val[0] else val[2]
        if op in ("zext", "trunc"):
            return val[0] & _MASK[str(inst.type)]
        if op == "ptrtoint":
            return val[0]
        if op == "load":
            return self.memory.get(val[0] // 8, 0.0)
        if op == "store":
            assert val[1] % 8 == 0, inst
            self.memory[val[1] // 8] = val[0]
            self.plain += 1
            return None
        if op == "uitofp":
            return float(val[0])
        if op == "bitcast":
            into, out = ("<d", "<Q") if str(inst.type) == "i64" else ("<Q", "<d")
            return struct.unpack(out, struct.pack(into, val[0]))[0]
        if op == "getelementptr":
            index = val[1] - (1 << 64) if val[1] >> 63 else val[1]
            return val[0] + {"i8": 1, "double": 8}[str(inst.source_element_type)] * index
        assert op == "atomicrmw" and val[0] % 8 == 0, inst
        self.memory[val[0] // 8] = self.memory.get(val[0] // 8, 0.0) + val[1]
        self.atomics += 1
        return None

    def call(self, name: str, args: list, lane: int, lanes: list[int]):
        if name == "llvm.nvvm.activemask":
            return sum(1 << n for n in lanes)
        if name.startswith("llvm.nvvm.shfl.sync.idx"):  # (mask, value, source lane, clamp 31)
            assert self.value(args[0], lane) == (1 << 32) - 1 and self.value(args[3], lane) == 31
            assert len(lanes) == 32, "a shuffle of the whole warp where part of it runs"
            return self.value(args[1], self.value(args[2], lane) & 31)
        sreg = name.removeprefix("llvm.nvvm.read.ptx.sreg.")
        return {"ctaid.x": 3, "ntid.x": self.ntid, "tid.x": lane, "tid.y": 0, "laneid": lane,
                "nctaid.y": 1, "nctaid.z": 1, "ntid.y": 1, "ntid.z": 1}[sreg]


@pytest.mark.parametrize("offsets", [(-1, 0, 1), (1, 0, -1), (-1, 1), (2, 3), (-3, 5, 0), (-31, 31)])
@pytest.mark.parametrize("ntid, active", [(64, range(32)), (48, range(32)), (64, range(5, 29))])
def test_a_warp_adds_each_share_once(offsets, ntid, active):
    """Every lane's every add reaches its element once, combined (blocks of 64, the whole warp) or as
    written (blocks of 48, or lanes missing); the elements never touched stay untouched."""
    module, made = _run(_lanes_kernel(offsets))
    assert made
    warp = _Warp(ntid, active)
    # the elements hold values before the kernel (a plain add reads its element's old value: early, at the start
    # of the group's block, on a one-dimensional launch)
    warp.memory = {e: 0.5 * e for e in range(3 * ntid - 40, 3 * ntid + 80)}
    want = dict(warp.memory)
    got = warp.run(module.functions["k"])
    for lane in active:
        g = 3 * ntid + lane
        for k, c in enumerate(offsets):
            want[g + c] = want.get(g + c, 0.0) + g * 10.0 ** k
    assert got == want
    combined = ntid % 32 == 0 and len(active) == 32
    edges = sum(not 0 <= lane + c < 32 for lane in active for c in offsets)
    owners = sum(any(0 <= lane - c < 32 for c in offsets) for lane in active)  # lanes with a share of their own
    alone = sum(all(0 <= lane - c < 32 for c in offsets) for lane in active)  # ... all of them from this warp
    assert warp.atomics == (owners - alone + edges if combined else len(active) * len(offsets))
    assert warp.plain == (alone if combined else 0)


# -- on a GPU ---------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("n", [1000, 4096 + 3, 1 << 20])
@pytest.mark.parametrize("block", [32, 128, 96, 48])  # 48: not a multiple of 32, the lanes' path
def test_the_stencil_gradient_on_the_gpu_matches_numpy(n, block):
    rng = np.random.default_rng(n + block)
    x = rng.uniform(-2.0, 2.0, n)
    dx = np.zeros(n)
    kernel(sten_grad, plugins=P)[(n + block - 1) // block, block](x, dx)
    np.testing.assert_allclose(dx, _want(x), rtol=1e-12)


@pytest.mark.gpu
def test_two_rows_of_threads_sharing_an_index_add_both():
    """Blocks of (64, 2): threads (i, 0) and (i, 1) both add into dx's elements around i; each warp lies in one
    row and combines its own shares, the rows' sums meet atomically: the gradient counts twice, nothing lost."""
    n = 4096 + 3
    x = np.random.default_rng(7).uniform(-2.0, 2.0, n)
    dx = np.zeros(n)
    kernel(sten_grad, plugins=P)[(n + 63) // 64, (64, 2)](x, dx)
    np.testing.assert_allclose(dx, 2.0 * _want(x), rtol=1e-12)
