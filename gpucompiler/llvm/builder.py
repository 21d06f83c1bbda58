"""A small instruction builder with an insertion point.

    b = Builder()
    b.position_at_end(fn.append_block("entry"))
    s = b.add(fn.args[0], fn.args[1], name="s", flags=("nsw",))
    b.ret(s)

Every instruction is checked as it is built: operand counts and types (a call's arguments against
the callee's function type, both operands of a binary operation, a float opcode's float operands,
a branch's ``i1`` condition, a return against its function...). A mismatch raises
:class:`~gpucompiler.errors.IRBuildError` at the line that built it, not a parse error a stage
later or, through an opaque pointer, a module LLVM accepts and runs wrongly.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from ..errors import IRBuildError
from . import types as T
from .instructions import BINARY, CASTS, CallSite, Instruction
from .module import BasicBlock, Function
from .parser_values import Emitter
from .values import Value


class _BinOp(Protocol):
    def __call__(self, a: Value, b: Value, name: str = "", flags: Iterable[str] = ()) -> Instruction: ...


class _Cast(Protocol):
    def __call__(self, v: Value, to: T.Type, name: str = "") -> Instruction: ...


class Builder:
    """Creates instructions and inserts them at the current position."""

    __slots__ = ("block", "before", "_at")

    # one method per binary opcode and per cast, made at the end of this module from binop() and cast()
    add: _BinOp
    and_: _BinOp
    ashr: _BinOp
    fadd: _BinOp
    fdiv: _BinOp
    fmul: _BinOp
    frem: _BinOp
    fsub: _BinOp
    lshr: _BinOp
    mul: _BinOp
    or_: _BinOp
    sdiv: _BinOp
    shl: _BinOp
    srem: _BinOp
    sub: _BinOp
    udiv: _BinOp
    urem: _BinOp
    xor: _BinOp
    addrspacecast: _Cast
    bitcast: _Cast
    fpext: _Cast
    fptosi: _Cast
    fptoui: _Cast
    fptrunc: _Cast
    inttoptr: _Cast
    ptrtoaddr: _Cast
    ptrtoint: _Cast
    sext: _Cast
    sitofp: _Cast
    trunc: _Cast
    uitofp: _Cast
    zext: _Cast

    def __init__(self, block: BasicBlock | None = None):
        self.block = block
        #: insert before this instruction; None means at the end of ``block``
        self.before: Instruction | None = None
        #: where ``before`` stood at the last insertion (checked before use): a run of
        #: insertions at one position costs no search of the block
        self._at = 0

    def position_at_end(self, block: BasicBlock) -> None:
        self.block, self.before = block, None

    def position_before(self, inst: Instruction) -> None:
        self.block, self.before = inst.parent, inst

    def position_after(self, inst: Instruction) -> None:
        block = inst.parent
        assert block is not None, "position after a detached instruction"
        insts = block.instructions
        k = self._at  # after a run of insertions before ``inst``, it stands at the hint
        if k >= len(insts) or insts[k] is not inst:
            k = insts.index(inst)
        k += 1
        self.block, self.before = inst.parent, insts[k] if k < len(insts) else None
        self._at = k

    def insert(self, inst: Instruction) -> Instruction:
        before = self.before
        if before is not None:
            block = before.parent
            assert block is not None, "insert before a detached instruction"
            insts = block.instructions
            k = self._at
            if k >= len(insts) or insts[k] is not before:
                k = insts.index(before)
            insts.insert(k, inst)
            inst.parent = block
            self._at = k + 1
        else:
            assert self.block is not None, "the builder has no position"
            self.block.append(inst)
        return inst

    def _make(self, opcode: str, type: T.Type, em: Emitter, name: str) -> Instruction:
        return self.insert(Instruction(opcode, type, em.done(), em.ops, name if type is not T.void else ""))

    @staticmethod
    def _typed(em: Emitter, v: Value) -> None:
        em.obj(v.type)
        em.slot(v)

    # -- arithmetic ----------------------------------------------------------
    def binop(self, opcode: str, a: Value, b: Value, name: str = "", flags=()) -> Instruction:
        """``opcode [flags] ty a, b`` for any binary opcode (``add``, ``fmul`` ...)."""
        _same(opcode, a, b)
        _kind(opcode, a, "float" if opcode in _FLOAT_OPS else "int")
        em = Emitter()
        for w in (opcode, *flags):
            em.raw(w)
        self._typed(em, a)
        em.raw(",")
        em.slot(b)
        return self._make(opcode, a.type, em, name)

    def fneg(self, a: Value, name: str = "", flags=()) -> Instruction:
        _kind("fneg", a, "float")
        em = Emitter()
        for w in ("fneg", *flags):
            em.raw(w)
        self._typed(em, a)
        return self._make("fneg", a.type, em, name)

    def _cmp(self, opcode: str, pred: str, a: Value, b: Value, name: str) -> Instruction:
        _same(opcode, a, b)
        _kind(opcode, a, "float" if opcode == "fcmp" else "int", "ptr")
        em = Emitter()
        em.raw(opcode)
        em.raw(pred)
        self._typed(em, a)
        em.raw(",")
        em.slot(b)
        t = a.type
        rt = T.vector(t.count, T.i1, t.scalable) if isinstance(t, T.VectorType) else T.i1
        return self._make(opcode, rt, em, name)

    def icmp(self, pred: str, a: Value, b: Value, name: str = "") -> Instruction:
        return self._cmp("icmp", pred, a, b, name)

    def fcmp(self, pred: str, a: Value, b: Value, name: str = "") -> Instruction:
        return self._cmp("fcmp", pred, a, b, name)

    def cast(self, opcode: str, v: Value, to: T.Type, name: str = "") -> Instruction:
        _check_cast(opcode, v, to)
        em = Emitter()
        em.raw(opcode)
        self._typed(em, v)
        em.raw("to")
        em.obj(to)
        return self._make(opcode, to, em, name)

    def select(self, cond: Value, a: Value, b: Value, name: str = "") -> Instruction:
        _kind("select", cond, "i1")
        _same("select", a, b)
        em = Emitter()
        em.raw("select")
        for k, v in enumerate((cond, a, b)):
            if k:
                em.raw(",")
            self._typed(em, v)
        return self._make("select", a.type, em, name)

    def phi(self, type: T.Type, incoming=(), name: str = "") -> Instruction:
        """``phi type [v, %bb], ...``; ``incoming`` is ``(value, block)`` pairs."""
        incoming = list(incoming)
        for v, _ in incoming:
            _is("phi", v, type, f"an incoming value of a phi of {type}")
        em = Emitter()
        em.raw("phi")
        em.obj(type)
        for k, (v, bb) in enumerate(incoming):
            em.raw(", [" if k else "[")
            em.slot(v)
            em.raw(",")
            em.slot(bb)
            em.raw("]")
        return self._make("phi", type, em, name)

    # -- memory --------------------------------------------------------------
    def alloca(self, type: T.Type, name: str = "", align: int | None = None) -> Instruction:
        em = Emitter()
        em.raw("alloca")
        em.obj(type)
        if align:
            em.raw(f", align {align}")
        return self._make("alloca", T.ptr(), em, name)

    def load(self, type: T.Type, ptr: Value, name: str = "", align: int | None = None) -> Instruction:
        _kind("load", ptr, "ptr")
        em = Emitter()
        em.raw("load")
        em.obj(type)
        em.raw(",")
        self._typed(em, ptr)
        if align:
            em.raw(f", align {align}")
        return self._make("load", type, em, name)

    def store(self, value: Value, ptr: Value, align: int | None = None) -> Instruction:
        _kind("store", ptr, "ptr")
        em = Emitter()
        em.raw("store")
        self._typed(em, value)
        em.raw(",")
        self._typed(em, ptr)
        if align:
            em.raw(f", align {align}")
        return self._make("store", T.void, em, "")

    def gep(self, type: T.Type, ptr: Value, indices, name: str = "", flags=()) -> Instruction:
        indices = list(indices)
        _kind("getelementptr", ptr, "ptr")
        for i in indices:
            _kind("getelementptr", i, "int")
        em = Emitter()
        for w in ("getelementptr", *flags):
            em.raw(w)
        em.obj(type)
        for v in (ptr, *indices):
            em.raw(",")
            self._typed(em, v)
        return self._make("getelementptr", ptr.type, em, name)

    # -- aggregates and vectors ----------------------------------------------
    def extractvalue(self, agg: Value, index: int | tuple[int, ...], name: str = "") -> Instruction:
        """``extractvalue`` at ``index``, one index or a path of them."""
        path = (index,) if isinstance(index, int) else tuple(index)
        em = Emitter()
        em.raw("extractvalue")
        self._typed(em, agg)
        em.raw(", " + ", ".join(map(str, path)))
        return self._make("extractvalue", _member(agg.type, path), em, name)

    def insertvalue(self, agg: Value, value: Value, index: int | tuple[int, ...], name: str = "") -> Instruction:
        """``insertvalue`` at ``index``, one index or a path of them."""
        path = (index,) if isinstance(index, int) else tuple(index)
        _is("insertvalue", value, _member(agg.type, path), f"member {list(path)} of {agg.type}")
        em = Emitter()
        em.raw("insertvalue")
        self._typed(em, agg)
        em.raw(",")
        self._typed(em, value)
        em.raw(", " + ", ".join(map(str, path)))
        return self._make("insertvalue", agg.type, em, name)

    def extractelement(self, vec: Value, index: Value, name: str = "") -> Instruction:
        em = Emitter()
        em.raw("extractelement")
        self._typed(em, vec)
        em.raw(",")
        self._typed(em, index)
        return self._make("extractelement", _element(vec.type), em, name)

    def insertelement(self, vec: Value, value: Value, index: Value, name: str = "") -> Instruction:
        em = Emitter()
        em.raw("insertelement")
        for k, v in enumerate((vec, value, index)):
            if k:
                em.raw(",")
            self._typed(em, v)
        return self._make("insertelement", vec.type, em, name)

    def shufflevector(self, a: Value, b: Value, mask: Value, name: str = "") -> Instruction:
        """``shufflevector``; ``mask`` is a vector-of-i32 constant."""
        em = Emitter()
        em.raw("shufflevector")
        for k, v in enumerate((a, b, mask)):
            if k:
                em.raw(",")
            self._typed(em, v)
        mt = mask.type
        assert isinstance(mt, T.VectorType)
        rt = T.vector(mt.count, _element(a.type))
        return self._make("shufflevector", rt, em, name)

    # -- calls and control flow ----------------------------------------------
    def call(self, callee: Value, args, name: str = "", fnty: T.FunctionType | None = None) -> Instruction:
        """``call`` a :class:`Function` (in its calling convention) or any pointer, given ``fnty``."""
        if fnty is None:
            if not isinstance(callee, Function):
                raise IRBuildError(f"call through {_shown(callee)}: a call through a pointer needs fnty=")
            fnty = callee.function_type
        args = list(args)
        _check_call(callee, fnty, args)
        em = Emitter()
        em.raw("call")
        cc = callee.calling_convention if isinstance(callee, Function) else "ccc"
        if cc != "ccc":  # a call in another convention than the callee's is undefined behaviour
            em.raw(cc)
        em.obj(fnty if fnty.vararg else fnty.ret)
        em.slot(callee)
        em.raw("(")
        for k, a in enumerate(args):
            if k:
                em.raw(",")
            self._typed(em, a)
        em.raw(")")
        inst = Instruction("call", fnty.ret, em.done(), em.ops, name if fnty.ret is not T.void else "",
                           CallSite(0, len(em.ops) - 1))
        return self.insert(inst)

    def ret(self, value: Value | None = None) -> Instruction:
        fn = self.block.parent if self.block is not None else None
        if isinstance(fn, Function):
            want = fn.return_type
            if value is None and want is not T.void:
                raise IRBuildError(f"ret void in @{fn.name}, which returns {want}")
            if value is not None:
                _is("ret", value, want, f"the return type of @{fn.name}")
        em = Emitter()
        em.raw("ret")
        if value is None:
            em.raw("void")
        else:
            self._typed(em, value)
        return self._make("ret", T.void, em, "")

    def br(self, target: BasicBlock) -> Instruction:
        em = Emitter()
        em.raw("br")
        self._typed(em, target)
        return self._make("br", T.void, em, "")

    def cond_br(self, cond: Value, if_true: BasicBlock, if_false: BasicBlock) -> Instruction:
        _is("br", cond, T.i1, "a branch condition")
        em = Emitter()
        em.raw("br")
        for k, v in enumerate((cond, if_true, if_false)):
            if k:
                em.raw(",")
            self._typed(em, v)
        return self._make("br", T.void, em, "")

    def switch(self, value: Value, default: BasicBlock, cases=()) -> Instruction:
        """``switch ty value, label %default [ ty c, label %bb ... ]``; ``cases`` is ``(const, block)`` pairs."""
        em = Emitter()
        em.raw("switch")
        self._typed(em, value)
        em.raw(",")
        self._typed(em, default)
        em.raw("[")
        for c, bb in cases:
            self._typed(em, c)
            em.raw(",")
            self._typed(em, bb)
        em.raw("]")
        return self._make("switch", T.void, em, "")

    def unreachable(self) -> Instruction:
        em = Emitter()
        em.raw("unreachable")
        return self._make("unreachable", T.void, em, "")


_FLOAT_OPS = frozenset(("fadd", "fsub", "fmul", "fdiv", "frem"))
_KIND_WORDS = {"float": "floating-point", "int": "integer", "ptr": "pointer", "i1": "i1"}
#: cast opcode -> (kind of the operand's scalar, kind of the result's scalar); bitcast: any sized
_CAST_KINDS = {"trunc": ("int", "int"), "zext": ("int", "int"), "sext": ("int", "int"),
               "fptrunc": ("float", "float"), "fpext": ("float", "float"), "fptosi": ("float", "int"),
               "fptoui": ("float", "int"), "sitofp": ("int", "float"), "uitofp": ("int", "float"),
               "ptrtoint": ("ptr", "int"), "ptrtoaddr": ("ptr", "int"), "inttoptr": ("int", "ptr"),
               "addrspacecast": ("ptr", "ptr")}


def _shown(v: Value) -> str:
    if isinstance(v.ref, str) and v.ref:
        return f"{v.type} {v.ref}"
    return f"{v.type} (an unnamed {v.opcode if isinstance(v, Instruction) else 'value'})"


def _same_type(a: T.Type, b: T.Type) -> bool:
    return a is b or str(a) == str(b)


def _same(opcode: str, a: Value, b: Value) -> None:
    if not _same_type(a.type, b.type):
        raise IRBuildError(f"{opcode}: operands of different types, {_shown(a)} and {_shown(b)}")


def _kind_of(t: T.Type) -> str:
    s = t.scalar
    return "i1" if s is T.i1 else s.kind


def _kind(opcode: str, v: Value, *kinds: str) -> None:
    """``v``'s type (a vector's element) is of one of ``kinds`` (``"int"`` includes ``i1``)."""
    k = _kind_of(v.type)
    if k in kinds or (k == "i1" and "int" in kinds):
        return
    want = " or ".join(_KIND_WORDS[x] for x in kinds)
    raise IRBuildError(f"{opcode} takes {want} operands (or vectors of them), got {_shown(v)}")


def _is(opcode: str, v: Value, want: T.Type, what: str) -> None:
    if not _same_type(v.type, want):
        raise IRBuildError(f"{opcode}: {what} is {want}, got {_shown(v)}")


def _check_cast(opcode: str, v: Value, to: T.Type) -> None:
    kinds = _CAST_KINDS.get(opcode)
    if kinds is None:
        return
    src, dst = v.type, to
    if (src.kind == "vector") != (dst.kind == "vector") or (
            isinstance(src, T.VectorType) and isinstance(dst, T.VectorType) and src.count != dst.count):
        raise IRBuildError(f"{opcode}: {_shown(v)} to {to}: a vector casts to a vector of as many elements")
    got = (_kind_of(src).replace("i1", "int"), _kind_of(dst).replace("i1", "int"))
    if got != kinds:
        raise IRBuildError(f"{opcode} casts a {_KIND_WORDS[kinds[0]]} to a {_KIND_WORDS[kinds[1]]}, "
                           f"got {_shown(v)} to {to}")


def _check_call(callee: Value, fnty: T.FunctionType, args: list[Value]) -> None:
    """The arguments against the function type: as many as its parameters (at least, when variadic),
    each of its parameter's type."""
    label = f"@{callee.name}" if isinstance(callee, Function) else _shown(callee)
    n = len(fnty.params)
    if len(args) < n or (len(args) > n and not fnty.vararg):
        raise IRBuildError(f"call of {label} ({fnty}) with {len(args)} argument(s); it takes "
                           f"{n}{' or more' if fnty.vararg else ''}")
    for k, (a, want) in enumerate(zip(args, fnty.params)):
        if not _same_type(a.type, want):
            raise IRBuildError(f"call of {label} ({fnty}): argument {k} is {want}, got {_shown(a)}")


def _element(t: T.Type) -> T.Type:
    assert isinstance(t, (T.VectorType, T.ArrayType)), f"{t} has no element type"
    return t.element


def _binop_method(opcode: str):
    def method(self, a: Value, b: Value, name: str = "", flags=()) -> Instruction:
        return self.binop(opcode, a, b, name, flags)

    method.__name__ = method.__qualname__ = opcode
    method.__doc__ = f"``{opcode} [flags] ty a, b``"
    return method


def _cast_method(opcode: str):
    def method(self, v: Value, to: T.Type, name: str = "") -> Instruction:
        return self.cast(opcode, v, to, name)

    method.__name__ = method.__qualname__ = opcode
    method.__doc__ = f"``{opcode} ty v to type``"
    return method


for _op in BINARY:
    setattr(Builder, f"{_op}_" if _op in ("and", "or") else _op, _binop_method(_op))
for _op in CASTS:
    setattr(Builder, _op, _cast_method(_op))

__all__ = ["Builder", "Function"]


def _member(t: T.Type, path) -> T.Type:
    """The type at ``path`` inside aggregate type ``t``."""
    for k in path:
        t = t.elements[k] if isinstance(t, T.StructType) and t.elements else _element(t)
    return t
