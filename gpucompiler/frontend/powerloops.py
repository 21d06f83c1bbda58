"""Loop versioning for powers: ``x ** n`` in a loop without a branch per element.

Under the Python error model ``x ** n`` (``n`` a small integral constant)
raises where CPython does (``1e200 ** 2.0`` is an OverflowError), and the
compensated powers (``|n| >= 3``) take libm's ``pow`` where their products
stop being exact; either is a branch per element, which stops LLVM's
vectorizer. A ``for v in range(...)`` loop whose body is straight-line
arithmetic on floats is lowered with a copy whose powers only record
whether any of them needs the checked operator (an OR over the elements)::

    flag = not powers_unchecked(...)   # a compile-time constant: the types allow it
    if not flag:
        <the loop, powers unchecked, flag |= power_outside(x, n)>
    if flag:                           # rare: a big, tiny, zero-division or libm result
        <the names the loop assigns, as before it>
        <the loop, every power checked>   # raises exactly where CPython does

A loop that stores array elements cannot run twice. When the elements of
successive iterations are adjacent in memory (C-ordered arrays, the loop
variable in the last index only, step 1) it runs in blocks of ``block``
iterations (16 for a small body), each lowered as straight-line code: the
iterations one after another, their stores held back::

    for each whole block of values of v:
        <the block's iterations, powers flagged, stores held back>
        if not flag: <the block's stores, in order>
        else: <the names the loop assigns, as before the block>; <the block's loop, checked>
    <the iterations after the last whole block, checked>

so on an overflow the elements before the failing one are written, the rest
untouched, and the error raised at the user's line. Each element is loaded
once (the SLP vectorizer, which the module asks for, makes a block a few
vector operations and one branch). Holding the stores back changes nothing
only if no store changes a later read: every array stored is read, if at
all, in its own store statement at the index it is stored to (an index
that moves with the loop variable, versioning.py), and it lies in memory
disjoint from every other array the loop reads (a run-time test; an
overlap runs the checked loop); the stores keep their order. Otherwise (a
vector of such elements is a gather) it runs in chunks of ``CHUNK``
iterations, each scanned first, its stores dropped, then run unchecked or,
when a power needs it, checked.

Nothing in the body may raise in the unchecked copy (a later error would hide
an earlier overflow): the body is assignments of ``+``, ``-``, ``*``, unary
signs, powers with small integral constant exponents, number constants,
names and array elements in bounds (versioning.py); the types are checked at
compile time (``powers_unchecked``: floats, ints and bools, float arrays of
as many dimensions as indices).
"""

from __future__ import annotations

import ast
import operator
from typing import TYPE_CHECKING

from . import intrinsics as K
from .builder import LoweringState
from .ir import Const, Global, Phi, Undef, Value

#: the largest ``|n|`` whose power is multiplications (language/python/powers.py)
SMALL = 8
#: loop iterations per block of a storing loop whose body has at most ``SMALL_BODY`` syntax nodes (a
#: vector of 16 float32 or two of 8 float64 under AVX-512); 8 for a larger body (code size; 4 left most
#: of a block's time to its loop and test: 1.6x the chunks' time for a body of three powers)
BLOCK = 16
SMALL_BODY = 40
#: loop iterations per chunk of a storing loop whose elements are apart in memory (its reads stay in the
#: L1 cache between scan and stores)
CHUNK = 512
#: the largest ``stop`` of a loop run in blocks (beyond: the checked loop); a block's first value is
#: clamped to it, a no-op that tells LLVM ``v + k`` does not wrap (no select for Python's negative
#: indices: consecutive addresses)
LARGEST = 2 ** 62
_ARITH = (ast.Add, ast.Sub, ast.Mult)


class PowerPlan:
    """How a loop's powers are versioned (None from :func:`plan`: they are not; a plain class: an ``attrs``
    class took ~0.4 ms to make at a process's first compile)."""

    __slots__ = ("stores", "inputs", "written", "arrays", "overlaps", "block")

    def __init__(self, stores: bool, inputs: tuple[str, ...], written: tuple[str, ...],
                 arrays: tuple[tuple[str, int, bool], ...], overlaps: tuple[tuple[str, str], ...], block: int):
        #: the body stores array elements (blocks, their stores held back)
        self.stores = stores
        #: names the body reads before it assigns them, or never assigns: values from before the loop
        self.inputs = inputs
        #: names the body assigns (restored before a checked rerun)
        self.written = written
        #: ``(array, number of indices, stored)`` for each array the body indexes
        self.arrays = arrays
        #: ``(stored array, other array)`` pairs whose memory must be disjoint
        self.overlaps = overlaps
        #: iterations per block of a storing loop; 0: chunks (an index's last component is not the loop
        #: variable, or the step is not 1: the elements are apart in memory)
        self.block = block


def exponent(node) -> int | float | None:
    """The exponent a power versions: an integral int or float constant with ``|n| <= SMALL``."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        sign, node = -1, node.operand
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not (abs(value) <= SMALL and float(value).is_integer()):
        return None
    return sign * value


def _number(value) -> bool:
    """A constant the unchecked copy takes: a float, or an int (bool) that fits an int64."""
    return isinstance(value, float) or (isinstance(value, int) and abs(value) < 2 ** 63)


class _Walk:
    """The body's reads and writes in execution order; ``ok`` false at the first construct it refuses."""

    def __init__(self, var: str, covered: dict[int, ast.Subscript]):
        self.var, self.covered, self.ok = var, covered, True
        self.inputs: list[str] = []
        self.written: list[str] = []
        self.loads: dict[str, list[tuple[ast.Subscript, int]]] = {}
        self.stores: dict[str, list[tuple[ast.Subscript, int]]] = {}
        self.powers = 0
        self.stmt = 0

    def name(self, name: str) -> None:
        if name != self.var and name not in self.written and name not in self.inputs:
            self.inputs.append(name)

    def subscript(self, sub: ast.Subscript, table) -> None:
        if id(sub) not in self.covered:
            self.ok = False
            return
        assert isinstance(sub.value, ast.Name)
        for elt in ast.walk(sub.slice):
            if isinstance(elt, ast.Name):
                self.name(elt.id)
        table.setdefault(sub.value.id, []).append((sub, self.stmt))

    def expr(self, node) -> None:
        match node:
            case ast.Constant(value=v) if _number(v):
                pass
            case ast.Name(id=name):
                self.name(name)
            case ast.BinOp(op=ast.Pow()) if exponent(node.right) is not None:
                self.powers += 1
                self.expr(node.left)
            case ast.BinOp(op=op) if isinstance(op, _ARITH):
                self.expr(node.left)
                self.expr(node.right)
            case ast.UnaryOp(op=ast.USub() | ast.UAdd()):
                self.expr(node.operand)
            case ast.Subscript(ctx=ast.Load()):
                self.subscript(node, self.loads)
            case _:
                self.ok = False

    def target(self, node) -> None:
        if isinstance(node, ast.Name):
            if node.id not in self.written:
                self.written.append(node.id)
        elif isinstance(node, ast.Subscript):
            self.subscript(node, self.stores)
        else:
            self.ok = False

    def statement(self, stmt) -> None:
        self.stmt += 1
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            self.expr(stmt.value)
            self.target(stmt.targets[0])
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, _ARITH):
            if isinstance(stmt.target, ast.Subscript):  # a read of the element, then the store
                self.subscript(stmt.target, self.loads)
            else:
                self.expr(stmt.target)
            self.expr(stmt.value)
            self.target(stmt.target)
        elif not isinstance(stmt, ast.Pass):
            self.ok = False


def _same(a: ast.Subscript, b: ast.Subscript) -> bool:
    return ast.dump(a.slice) == ast.dump(b.slice)


def plan(loop: ast.For, covered: list[ast.Subscript], sign: int | None) -> PowerPlan | None:
    """The versioning of ``loop`` (a range loop whose in-bounds accesses are ``covered``), or None."""
    if sign is None or not isinstance(loop.target, ast.Name):
        return None
    walk = _Walk(loop.target.id, {id(sub): sub for sub in covered})
    for stmt in loop.body:
        walk.statement(stmt)
    if not walk.ok or not walk.powers or loop.target.id in walk.written:
        return None
    overlaps = []
    for array, stores in walk.stores.items():
        sub, at = stores[0]
        # one store statement per array, its reads only there and at the stored index (each
        # iteration reads its element before writing it: holding the stores back changes no read)
        if len(stores) > 1 or any(k != at or not _same(s, sub) for s, k in walk.loads.get(array, [])):
            return None
        overlaps += [(array, other) for other in walk.loads if other != array]
    if walk.stores and sign < 0:
        return None
    arrays = {name: (name, len(_indices(subs[0][0])), name in walk.stores)
              for table in (walk.loads, walk.stores) for name, subs in table.items()}
    if any(len(_indices(s)) != arrays[name][1] for table in (walk.loads, walk.stores)
           for name, subs in table.items() for s, _ in subs):
        return None
    size = sum(1 for stmt in loop.body for _ in ast.walk(stmt))
    block = BLOCK if size <= SMALL_BODY else 8
    step = loop.iter.args[2] if isinstance(loop.iter, ast.Call) and len(loop.iter.args) == 3 else None
    if not (step is None or (isinstance(step, ast.Constant) and step.value == 1)) or not all(
            _consecutive(sub, loop.target.id) for table in (walk.loads, walk.stores)
            for subs in table.values() for sub, _ in subs):
        block = 0
    return PowerPlan(bool(walk.stores), tuple(walk.inputs), (loop.target.id, *walk.written),
                     tuple(arrays.values()), tuple(overlaps), block)


def _consecutive(sub: ast.Subscript, var: str) -> bool:
    """The loop variable is in the last index component only: successive iterations' elements are adjacent
    (in a C-ordered array)."""
    *rest, last = _indices(sub)
    return (any(isinstance(n, ast.Name) and n.id == var for n in ast.walk(last))
            and not any(isinstance(n, ast.Name) and n.id == var for r in rest for n in ast.walk(r)))


def _indices(sub: ast.Subscript) -> list:
    return sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]


class PowerLoops(LoweringState):
    """Mixin of the AST lowerer: the versioned copies of a loop :func:`plan` accepts."""

    if TYPE_CHECKING:  # defined by the statement and expression halves
        def _range_loop(self, node: ast.For, it: ast.Call, args: list) -> None: ...
        def _defined(self, name: str) -> bool: ...
        def assign_to(self, target, value: Value, node) -> None: ...

    def power_loop(self, node: ast.For, args: list, versioned: PowerPlan) -> None:
        """``node`` (a range loop over ``args``) with its powers versioned."""
        gate = self._gate(node, versioned)
        if gate is None:
            self._range_loop(node, node.iter, args)  # type: ignore[arg-type]
        elif versioned.stores and versioned.block:
            arrays = [self.read(name) for name, _, _ in versioned.arrays]
            blocked, chunked, after = self.ssa.new_block(), self.ssa.new_block(), self.ssa.new_block()
            self.branch(self.emit(K.unit_strides, arrays, node), blocked, chunked, node)  # a constant
            for block, lower in ((blocked, self._blocks), (chunked, self._chunks)):
                self.ssa.seal(block)
                self.block = block
                lower(node, args, versioned, gate)
                self.goto(after, node)
            self.ssa.seal(after)
            self.block = after
        elif versioned.stores:
            self._chunks(node, args, versioned, gate)
        else:
            self._twice(node, args, versioned, gate)

    def store(self, fn, args: list, node) -> None:
        """An array store (``setitem``): emitted, or held back while a block is lowered."""
        if self.held is None:
            self.emit(fn, args, node)
        else:
            self.held.append((fn, args, node))

    def power(self, node: ast.BinOp, n: int | float) -> Value:
        """``x ** n`` in an unchecked copy: its value, and whether it needs the checked operator
        ORed into the flag."""
        flag = self.power_flag
        assert flag is not None
        x, e = self.expr(node.left), Const(n, self.loc(node.right))
        outside = self.emit(K.power_outside, [x, e], node)
        self.write(flag, self.emit(operator.or_, [self.read(flag), outside], node))
        return self.emit(K.power_fast, [x, e], node)

    def _input(self, name: str, node: ast.For) -> Value | None:
        """The value ``name`` has before the loop, when it is surely bound (else None: no versioning,
        which would read it before CPython does)."""
        if name in self.params or name in self.range_vars:
            return self.read(name)
        if name not in self.locals:
            return Global(name, self.loc(node)) if self._defined(name) else None
        value = self.read(name)
        return None if isinstance(value, (Phi, Undef)) else value

    def _gate(self, node: ast.For, versioned: PowerPlan) -> Value | None:
        roles, values = [], []
        for name in versioned.inputs:
            value = self._input(name, node)
            if value is None:
                return None
            roles.append(0)
            values.append(value)
        for array, k, stored in versioned.arrays:
            roles.append(-k if stored else k)
            values.append(self.read(array))
        return self.emit(K.powers_unchecked, [Const(tuple(roles)), *values], node)

    def _copy(self, node: ast.For, args: list, flag: str | None) -> None:
        saved = self.power_flag
        self.power_flag = flag
        self._range_loop(node, node.iter, args)  # type: ignore[arg-type]
        self.power_flag = saved

    def _restore(self, saved: dict[str, Value]) -> None:
        for name, value in saved.items():
            self.write(name, value)

    def _twice(self, node: ast.For, args: list, versioned: PowerPlan, gate: Value) -> None:
        """A loop without stores: the unchecked copy, then the checked one if a power needs it."""
        flag = self.temp()
        self.write(flag, self.emit(operator.not_, [gate], node))
        saved = {name: self.read(name) for name in versioned.written}
        fast, join, slow, after = (self.ssa.new_block() for _ in range(4))
        self.branch(gate, fast, join, node)
        self.ssa.seal(fast)
        self.block = fast
        self._copy(node, args, flag)
        self.goto(join, node)
        self.ssa.seal(join)
        self.block = join
        self.branch(self.read(flag), slow, after, node)
        self.ssa.seal(slow)
        self.block = slow
        self._restore(saved)
        self._copy(node, args, None)
        self.goto(after, node)
        self.ssa.seal(after)
        self.block = after

    def _blocks(self, node: ast.For, args: list, versioned: PowerPlan, gate: Value) -> None:
        """A loop that stores: blocks of ``versioned.block`` iterations, straight-line code each, their
        stores held back until the block's powers are known to need no checked operator."""
        it, size = node.iter, versioned.block
        start, stop, step = (self.emit(fn, args, it) for fn in (K.range_start, K.range_stop, K.range_step))
        ok = self.emit(operator.and_, [gate, self.emit(operator.le, [stop, Const(LARGEST)], node)], node)
        after = self._checked_unless(self._apart(ok, versioned, node), node, args)
        span = self.emit(operator.mul, [Const(size), step], node)
        j = self.temp()
        self.write(j, start)
        header, body, done = self.ssa.new_block(), self.ssa.new_block(), self.ssa.new_block()
        self.goto(header, node)
        self.block = header
        last = self.emit(operator.add, [self.read(j), self.emit(operator.sub, [span, step], node)], node)
        self.branch(self.emit(K.range_cond, [last, stop, step], node), body, done, node)
        self.ssa.seal(body)
        self.block = body
        # the value itself (start <= v < stop <= LARGEST), clamped for LLVM's sake
        first = self.emit(min, [self.emit(max, [self.read(j), start], node), Const(LARGEST)], node)
        saved = {name: self.read(name) for name in versioned.written}
        flag = self.temp()
        self.write(flag, Const(False))
        outer = self.power_flag, self.held
        self.power_flag, self.held = flag, []
        for k in range(size):
            v = self.emit(operator.add, [first, self.emit(operator.mul, [Const(k), step], node)], node)
            self.assign_to(node.target, v, node)
            self.body(node.body)
        stores = self.held
        self.power_flag, self.held = outer
        end = self.emit(operator.add, [first, span], node)
        fast, slow, step_on = self.ssa.new_block(), self.ssa.new_block(), self.ssa.new_block()
        self.branch(self.emit(K.vector_block, [self.read(flag)], node), slow, fast, node)
        self.ssa.seal(fast)
        self.block = fast
        for fn, values, where in stores:
            self.emit(fn, values, where)
        self.goto(step_on, node)
        self.ssa.seal(slow)
        self.block = slow
        self._restore(saved)
        self._copy(node, [first, end, step], None)
        self.goto(step_on, node)
        self.ssa.seal(step_on)
        self.block = step_on
        self.write(j, end)
        self.goto(header, node)
        self.ssa.seal(header)
        self.ssa.seal(done)
        self.block = done
        self._copy(node, [self.read(j), stop, step], None)  # the last partial block
        self.goto(after, node)
        self.ssa.seal(after)
        self.block = after

    def _checked_unless(self, ok: Value, node: ast.For, args: list):
        """Branch on ``ok``: where it fails, the loop's checked copy, then the returned join block; the
        current block is then the one where it holds."""
        plain, fast, after = self.ssa.new_block(), self.ssa.new_block(), self.ssa.new_block()
        self.branch(ok, fast, plain, node)
        self.ssa.seal(plain)
        self.block = plain
        self._copy(node, args, None)
        self.goto(after, node)
        self.ssa.seal(fast)
        self.block = fast
        return after

    def _apart(self, ok: Value, versioned: PowerPlan, node: ast.For) -> Value:
        """``ok`` and, for each stored array that may overlap one read, that the two are disjoint."""
        for stored, other in versioned.overlaps:
            ok = self.emit(operator.and_, [ok, self.emit(K.disjoint, [self.read(stored), self.read(other)], node)],
                           node)
        return ok

    def _chunks(self, node: ast.For, args: list, versioned: PowerPlan, gate: Value) -> None:
        """A loop that stores, its elements apart in memory: chunks of ``CHUNK`` iterations, each scanned
        (its stores dropped) before it runs."""
        it = node.iter
        after = self._checked_unless(gate, node, args)
        ok = self._apart(Const(True), versioned, node)
        start, stop, step = (self.emit(fn, args, it) for fn in (K.range_start, K.range_stop, K.range_step))
        j = self.temp()
        self.write(j, start)
        header, body, done = self.ssa.new_block(), self.ssa.new_block(), self.ssa.new_block()
        self.goto(header, node)
        self.block = header
        self.branch(self.emit(K.range_cond, [self.read(j), stop, step], node), body, done, node)
        self.ssa.seal(body)
        self.block = body
        first = self.read(j)
        span = self.emit(operator.mul, [Const(CHUNK), step], node)
        end = self.emit(min, [self.emit(operator.add, [first, span], node), stop], node)
        # never below start (the step is positive): LLVM then knows an index from range(n) is not
        # negative (no wrap-around select, a vector load)
        chunk = [self.emit(max, [first, start], node), end, step]
        flag = self.temp()
        self.write(flag, self.emit(operator.not_, [ok], node))
        saved = {name: self.read(name) for name in versioned.written}
        scan, decide = self.ssa.new_block(), self.ssa.new_block()
        self.branch(ok, scan, decide, node)
        self.ssa.seal(scan)
        self.block = scan
        outer = self.held
        self.held = []  # the scan: its stores are dropped
        self._copy(node, chunk, flag)
        self.held = outer
        self.goto(decide, node)
        self.ssa.seal(decide)
        self.block = decide
        self._restore(saved)
        fast, slow, step_on = self.ssa.new_block(), self.ssa.new_block(), self.ssa.new_block()
        self.branch(self.read(flag), slow, fast, node)
        for block, how in ((fast, self.temp()), (slow, None)):
            self.ssa.seal(block)
            self.block = block
            if how is not None:
                self.write(how, Const(False))
            self._copy(node, chunk, how)
            self.goto(step_on, node)
        self.ssa.seal(step_on)
        self.block = step_on
        self.write(j, end)
        self.goto(header, node)
        self.ssa.seal(header)
        self.ssa.seal(done)
        self.block = done
        self.goto(after, node)
        self.ssa.seal(after)
        self.block = after
