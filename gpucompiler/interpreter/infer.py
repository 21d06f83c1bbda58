"""Type inference as abstract interpretation over the SSA IR.

A :class:`Frame` is one specialization (a Python function and the abstract
values of its arguments). Values start at ``BOTTOM`` and rise through the
lattice until nothing changes; only branches reachable under the constants
known so far are interpreted (so ``if DEBUG:`` on a captured ``False`` is
never typed). Recursive specializations iterate on their provisional return
type. Every global read is recorded in ``deps`` for world-age invalidation.
"""

from __future__ import annotations

import builtins
import gc
import operator
import os
import types as pytypes
from typing import TYPE_CHECKING

import attrs

from .. import types as T
from ..errors import PLUGIN_ATTRIBUTE, PluginError, PluginRequiredError, TypeInferenceError, UnsupportedError
from ..frontend import intrinsics as K, lower_function
from ..frontend.ir import Arg, Branch, Const as IRConst, Global, Inst, Return, Undef
from .lattice import BOTTOM, MISSING, Const, big_int, computed, const, join, pyobj, widen
from .rules import CallResult, claim, enabled_rule_sets

if TYPE_CHECKING:
    from ..core import Target


class Undefined:
    """The value of a global name that is not defined: reading it raises NameError."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    @property
    def message(self) -> str:
        return f"name {self.name!r} is not defined"


_CHECKS = (Const(K.check, pyobj), Const(K.check_bound, pyobj))
_RAISE, _ASSERT = Const(K.raise_exception, pyobj), Const(K.assert_, pyobj)


def exception_name(cls) -> str:
    """How compiled code names the exception class ``cls`` (an abstract value): a built-in one by its
    name, another by ``module:qualname`` (imported when raised)."""
    value = cls.value if isinstance(cls, Const) else None
    if not (isinstance(value, type) and issubclass(value, BaseException)):
        raise TypeInferenceError(f"raise needs an exception class, got {widen(cls)!r} "
                                 f"{getattr(value, '__qualname__', '')}".rstrip(),
                                 hint="raise SomeError('constant message') with a class named in the code")
    if value.__module__ == "builtins":
        return value.__name__
    if "<locals>" in value.__qualname__:
        raise TypeInferenceError(f"cannot raise {value.__qualname__}: a class defined inside a function",
                                 hint="define the exception class at module level")
    return f"{value.__module__}:{value.__qualname__}"
_MAX_ROUNDS = 64


class Frame:
    """The inference state and result of one specialization."""

    __slots__ = ("pyfunc", "argtypes", "ir", "types", "calls", "rettype", "returned", "provisional",
                 "recursive", "depth", "low", "edges", "name", "raising", "settled", "consts")

    def __init__(self, pyfunc, argtypes, ir, depth):
        self.pyfunc, self.argtypes, self.ir, self.depth = pyfunc, argtypes, ir, depth
        self.provisional = BOTTOM
        """return type assumed by recursive calls while this frame is inferred"""
        self.recursive = False
        self.name = ""
        """the LLVM name of the specialization (set by codegen)"""
        self.consts: dict = {}
        """literal -> its abstract value, made once (inference's rounds and codegen read each literal often)"""

    def typeof(self, v):
        if isinstance(v, Arg):
            return self.argtypes[v.index]
        if isinstance(v, IRConst):
            c = self.consts.get(v)
            if c is None:
                c = self.consts[v] = const(v.value)
            return c
        return self.types.get(v, BOTTOM)

    def where(self, v):
        return v.loc or (self.ir.filename, self.ir.line, 0)

    def executable(self, block) -> bool:
        return block is self.ir.entry or any((p, block) in self.edges for p in block.preds)


def spec_argtypes(argtypes) -> tuple:
    """Argument types a specialization is keyed on: numbers widened, objects kept."""
    return tuple(a if isinstance(a, Const) and a.type == pyobj else widen(a) for a in argtypes)


class Interpreter:
    """Abstract interpreter for one job: its target and enabled plugin rule sets."""

    def __init__(self, target: Target, plugins=(), python_errors: bool = False):
        self.target = target
        self.python_errors = python_errors
        self.plugins = tuple(plugins)
        self.plugin_sets, self.base_sets = enabled_rule_sets(target, plugins)
        self.done: dict = {}
        self.stack: list[Frame] = []
        self.deps: dict = {}
        """(id(holder), name) -> (holder, name, value) of every global read"""
        self.deferred: dict = {}
        """job id -> DeferredJob of every deferred call inferred (see interpreter.deferred)"""
        self.deferred_children: dict = {}
        self.inferred = 0
        """how many specializations :meth:`infer` was asked for (a call whose meaning asked none is settled)"""
        self.undefined: dict = {}
        """name -> the abstract value of an undefined global (one object: inference converges)"""
        self.list_items: dict = {}
        """(frame, site) -> the item type the first ``append`` gave an empty list made at ``site``
        (language/python/lists.py); a new entry makes the frame's inference run another round"""
        """names of extra rule sets -> the child interpreter that infers nested jobs under them"""

    # -- specializations ----------------------------------------------------
    def infer(self, pyfunc, argtypes) -> Frame:
        """Infer ``pyfunc`` for the abstract argument values ``argtypes``.

        Cyclic garbage collection is paused while the outermost specialization is inferred, as
        :func:`gpucompiler.pipeline.compile` pauses it: the frames, SSA IR and types built here live as long
        as the job, and the collector's passes would only rescan them (a pass of its second generation cost
        loop20's first call 1 ms)."""
        if self.stack or not gc.isenabled():
            return self._infer(pyfunc, argtypes)
        gc.disable()
        try:
            return self._infer(pyfunc, argtypes)
        finally:
            gc.enable()

    def _infer(self, pyfunc, argtypes) -> Frame:
        self.inferred += 1
        key = (pyfunc, spec_argtypes(argtypes))
        if key in self.done:
            return self.done[key]
        for fr in self.stack:
            if (fr.pyfunc, fr.argtypes) == key:
                fr.recursive = True
                self.stack[-1].low = min(self.stack[-1].low, fr.depth)
                return fr
        frame = Frame(pyfunc, key[1], lower_function(pyfunc), len(self.stack))
        self.stack.append(frame)
        try:
            for _ in range(_MAX_ROUNDS):
                frame.low, frame.recursive = frame.depth, False
                self._run(frame)
                if not frame.recursive or frame.rettype == frame.provisional:
                    break
                frame.provisional = frame.rettype
        finally:
            self.stack.pop()
        if frame.low < frame.depth:
            self.stack[-1].low = min(self.stack[-1].low, frame.low)
        else:
            self.done[key] = frame
        return frame

    def _run(self, frame: Frame) -> None:
        frame.types, frame.calls, frame.edges, frame.rettype = {}, {}, set(), BOTTOM
        frame.settled = {}
        """call -> (callee, argument values, typed lists) and the settled meaning they gave (:meth:`_settled`)"""
        frame.returned = {}
        """return terminator -> the abstract value it returns now (the return type joins these: a
        value that rose while a loop's types rose is not joined with its earlier, lower value)"""
        frame.raising = {}
        """instruction or terminator -> (exception name, message) it always raises"""
        for _ in range(_MAX_ROUNDS * 4):
            changed, typed = False, len(self.list_items)
            for block in frame.ir.blocks:
                if block is frame.ir.entry or frame.executable(block):
                    changed |= self._block(frame, block)
            if not changed and typed == len(self.list_items):
                return
        raise TypeInferenceError("types do not converge (a value grows on every loop iteration)",
                                 loc=(frame.ir.filename, frame.ir.line, 0), function=frame.ir.name)

    def _set(self, frame, v, new) -> bool:
        if frame.types.get(v, BOTTOM) == new:
            return False
        frame.types[v] = new
        return True

    def _block(self, frame: Frame, block) -> bool:
        changed = False
        for phi in block.phis:
            acc = BOTTOM
            for pred, val in phi.incoming.items():
                if (pred, block) in frame.edges:
                    new = self._value(frame, val)
                    if isinstance(new, Const) and isinstance(new.value, Undefined):
                        raise TypeInferenceError(f"name {new.value.name!r} is not defined", (),
                                                 frame.where(val), frame.ir.name)
                    acc = self._join(frame, acc, new, val, f"variable {phi.var!r}")
            changed |= self._set(frame, phi, acc)
        for inst in block.insts:
            changed |= self._set(frame, inst, self._call(frame, inst))
            if inst in frame.raising:
                return changed  # the rest of the block never runs
        term = block.term
        if isinstance(term, Return):
            frame.raising.pop(term, None)
            value = self._value(frame, term.value)
            if isinstance(value, Const) and isinstance(value.value, Undefined):
                frame.raising[term] = ("NameError", value.value.message)
                return changed
            frame.returned[term] = value
            rettype = BOTTOM
            for at, returned in frame.returned.items():
                rettype = self._join(frame, rettype, returned, at, "the return value")
            frame.rettype = rettype
            return changed
        targets = (term.target,) if not isinstance(term, Branch) else ()
        if isinstance(term, Branch):
            cond = frame.typeof(term.cond)
            if isinstance(cond, Const):
                targets = (term.then if cond.value else term.orelse,)
            elif cond is not BOTTOM:
                targets = (term.then, term.orelse)
        for t in targets:
            if (block, t) not in frame.edges:
                frame.edges.add((block, t))
                changed = True
        return changed

    def _join(self, frame, acc, new, at, what):
        out = join(acc, new)
        if out is None:
            raise TypeInferenceError(
                f"{what} would have two types: {widen(acc)!r} and {widen(new)!r}",
                (widen(acc), widen(new)), frame.where(at), frame.ir.name,
                "convert one side explicitly (float(...), int(...)) or use separate variables")
        return out

    # -- calls --------------------------------------------------------------
    def _call(self, frame: Frame, inst):
        fn = self._value(frame, inst.fn)
        args = [self._value(frame, a) for a in inst.args]
        frame.raising.pop(inst, None)  # a check may stop failing as types rise
        asked = (fn, tuple(args), len(self.list_items))
        kept = frame.settled.get(inst)
        if kept is not None and kept[0] == asked:  # the meaning this call settled in an earlier round
            frame.calls[inst] = kept[1]
            return kept[1].restype
        undefined = [v.value for v in (fn, *args) if isinstance(v, Const) and isinstance(v.value, Undefined)]
        if undefined:  # CPython raises NameError when the name is read
            frame.raising[inst] = ("NameError", undefined[0].message)
            return BOTTOM
        if fn is BOTTOM or any(a is BOTTOM for a in args):
            return BOTTOM
        if (fn in _CHECKS and isinstance(args[0], Const) and not args[0].value
                and isinstance(args[1], Const) and isinstance(args[2], Const)):
            frame.raising[inst] = (args[1].value, args[2].value)  # a check that always fails
            return BOTTOM
        if fn == _RAISE and isinstance(args[1], Const):  # a raise statement
            frame.raising[inst] = (self._located(frame, inst, exception_name, args[0]), args[1].value, True)
            return BOTTOM
        if fn == _ASSERT and isinstance(args[0], Const) and not args[0].value and isinstance(args[1], Const):
            frame.raising[inst] = ("AssertionError", args[1].value, True)  # an assert that always fails
            return BOTTOM
        method = isinstance(fn, T.BoundMethod)
        if method:  # receiver.name(args): call_method(receiver, name, *args)
            fn, args = Const(K.call_method, pyobj), [fn.receiver, const(fn.name), *args]
        if not isinstance(fn, Const) or fn.type != pyobj:
            raise TypeInferenceError(f"cannot call a value of type {widen(fn)!r}", (widen(fn),),
                                     frame.where(inst), frame.ir.name)
        owner = getattr(fn.value, PLUGIN_ATTRIBUTE, None)
        if owner is not None and owner not in self.plugins and all(rs.name != owner for rs in self.plugin_sets):
            raise PluginRequiredError(owner, fn.value, frame.where(inst), frame.ir.name)
        inferred, deferred = self.inferred, len(self.deferred)
        try:
            result = self.abstract_call(fn.value, args)
        except TypeInferenceError as exc:
            where = frame.where(inst)
            if exc.loc is None or (_inside_compiler(exc.loc) and not _inside_compiler(where)):
                # the user's line, not one of the compiler's own implementations (iteration, NumPy's)
                exc = type(exc)(exc.message, exc.types, where, frame.ir.name, exc.hint)
            raise exc from None
        except PluginError as exc:
            if exc.loc is not None:
                raise
            raise exc.located(frame.where(inst), frame.ir.name) from exc.cause
        if result is None and fn.value is K.call_method and isinstance(args[1], Const):
            raise TypeInferenceError(f"{widen(args[0])!r} has no method {args[1].value!r} in compiled code",
                                     [widen(args[0])], frame.where(inst), frame.ir.name,
                                     "see the supported Python table in docs/user_guide.md")
        if result is None and fn.value is K.call_kw:
            callee = args[0].value if isinstance(args[0], Const) else None
            shown = getattr(callee, "__qualname__", "this function")
            raise UnsupportedError(f"keyword arguments in a call of {shown}", frame.where(inst), frame.ir.name,
                                   "pass arguments by position")
        if result is None:
            big = [a.value for a in args if isinstance(a, Const) and big_int(a)]
            if big:
                raise TypeInferenceError(f"the integer {big[0]} does not fit in 64 bits: compiled integers are "
                                         "int64 (CPython's have no bound)", [widen(a) for a in args],
                                         frame.where(inst), frame.ir.name,
                                         "keep integers within -2**63 .. 2**63 - 1, or compute with floats (2.0 ** 100)")
            name = getattr(fn.value, "__qualname__", repr(fn.value))
            shown = ", ".join(repr(widen(a)) for a in args)
            raise TypeInferenceError(f"no implementation of {name}({shown})",
                                     [widen(a) for a in args], frame.where(inst), frame.ir.name)
        frame.calls[inst] = meaning = attrs.evolve(result, method=True) if method else result
        if self._settled(result, inferred, deferred):
            frame.settled[inst] = (asked, meaning)
        return result.restype

    def _settled(self, result: CallResult, inferred: int, deferred: int) -> bool:
        """Whether a call's meaning ``result`` is kept for the rest of this :meth:`_run` (asked before
        ``inferred`` specializations and ``deferred`` nested jobs): the rounds over the blocks after the
        first re-ask only the calls whose callee or arguments rose, or whose lists were typed since
        (:meth:`_call`). Kept is a known value (not ⊥) from the rules alone: no specialization inferred (a
        callee's type may rise while a recursion converges), no nested job deferred, no plugin's rules
        (which may look at the interpreter's stack)."""
        return (result.restype is not BOTTOM and result.callee is None and result.deferred is None
                and inferred == self.inferred and deferred == len(self.deferred) and not self.plugin_sets)

    def _value(self, frame: Frame, v):
        if isinstance(v, Global):
            frame.types[v] = value = self.resolve_global(frame, v)
            return value
        if isinstance(v, Undef):
            return BOTTOM
        return frame.typeof(v) if not isinstance(v, Inst) else frame.types.get(v, BOTTOM)

    def resolve_global(self, frame: Frame, v: Global):
        fn, name = frame.pyfunc, v.name
        if name in fn.__code__.co_freevars:
            cell = fn.__closure__[fn.__code__.co_freevars.index(name)]
            return self._located(frame, v, self.read, cell, "cell_contents")
        g = fn.__globals__
        if name in g:
            return self.read(g, name)
        b = g.get("__builtins__", builtins)
        b = b if isinstance(b, dict) else vars(b)
        if name not in b:  # NameError when (if) the read runs; defining it later recompiles
            self.deps[(id(g), name)] = (g, name, MISSING)
            return self.undefined.setdefault(name, Const(Undefined(name), pyobj))
        self.deps[(id(g), name)] = (g, name, MISSING)  # not shadowed by a module global...
        self.deps[(id(b), name)] = (b, name, b[name])  # ...and this very builtin (it can be rebound)
        return Const(b[name], pyobj)

    def _located(self, frame, at, fn, *args):
        try:
            return fn(*args)
        except TypeInferenceError as exc:
            raise TypeInferenceError(exc.message, exc.types, frame.where(at), frame.ir.name, exc.hint) from None

    def read(self, holder, name):
        """Read a global (dict item, module attribute or closure cell) and record it."""
        if isinstance(holder, dict):
            value = holder[name]
        else:
            try:
                value = getattr(holder, name)
            except (AttributeError, ValueError):
                raise TypeInferenceError(f"{holder!r} has no attribute {name!r}") from None
        self.deps[(id(holder), name)] = (holder, name, value)
        return const(value)

    def abstract_call(self, fn, args) -> CallResult | None:
        """What calling ``fn`` with abstract values ``args`` means, or None."""
        fn = getattr(fn, "py_func", fn) if hasattr(fn, "inspect_ir") else fn  # a @jit function
        if any(big_int(a) for a in args):
            return _exactly(fn, args)
        found = claim(self.plugin_sets, self, fn, args)
        if found is None:
            for rs in self.base_sets:
                for h in rs.handlers:
                    found = h(self, fn, args)
                    if found is not None:
                        return found
                hit = rs.lookup(fn, args)
                if hit is not None:
                    found = (hit, rs.name)
                    break
        if isinstance(found, tuple):
            (method, restype), owner = found
            if method.pure and not isinstance(restype, Const):
                restype = _fold(fn, args, restype)
            return CallResult(restype, method.lower, None, owner)
        if found is None and isinstance(fn, pytypes.FunctionType) and fn not in _RULES_ONLY:
            return self.invoke(fn, args)
        return found

    def invoke(self, fn, args) -> CallResult:
        """Call the Python function ``fn`` (compiled too): infer its specialization."""
        code = fn.__code__
        n = code.co_argcount
        if code.co_kwonlyargcount:
            raise TypeInferenceError(f"{fn.__qualname__}() has keyword-only parameters, which calls in compiled "
                                     "code cannot pass", hint="make them positional parameters")
        defaults = fn.__defaults__ or ()
        if not (n - len(defaults) <= len(args) <= n):
            raise TypeInferenceError(f"{fn.__qualname__}() takes {n} arguments, got {len(args)}")
        args = list(args) + [const(d) for d in defaults[len(defaults) - (n - len(args)):]][:n - len(args)]
        callee = self.infer(fn, args)
        ret = callee.provisional if callee in self.stack else callee.rettype
        return CallResult(ret, None, callee)


_COMPILER = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _inside_compiler(loc) -> bool:
    """Whether the location ``(file, line, column)`` is in the compiler's own source."""
    return str(loc[0]).startswith(_COMPILER)


_RULES_ONLY = (K.call_method, K.call_kw)
"""intrinsics that mean only what rules say (a method or keyword call nothing claims is an error)"""


#: functions computed by Python at compile time on number constants one of which is an integer outside
#: int64, so that constant expressions have CPython's value (``2**64 - 1``, ``float(2**70)``, ``-2**63``)
_EXACT = frozenset((operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
                    operator.pow, operator.neg, operator.pos, operator.invert, operator.lshift, operator.rshift,
                    operator.and_, operator.or_, operator.xor, operator.lt, operator.le, operator.gt, operator.ge,
                    operator.eq, operator.ne, builtins.abs, builtins.float, builtins.int, builtins.bool,
                    builtins.min, builtins.max))


def _exactly(fn, args) -> CallResult | None:
    """A call with an integer constant outside int64 computed by Python (see :data:`_EXACT`); None
    where it cannot be (the caller refuses the integer)."""
    c = computed(fn, args) if fn in _EXACT else None
    return CallResult(c) if c is not None else None


def _fold(fn, args, restype):
    """The constant result of a pure call of constants, computed by Python. An integer result outside
    int64 stays a constant (``-2**63`` folds exactly through ``2**63``; ``float(2**100)`` is CPython's)
    and is refused where it would run (it used to wrap: ``2**64`` was 0)."""
    if not all(isinstance(a, Const) and (a.type != pyobj or big_int(a)) for a in args):
        return restype
    try:
        value = fn(*[a.value for a in args])
    except Exception:
        return restype
    c = const(value)
    if c.type == widen(restype) or (big_int(c) and widen(restype) == T.int64):
        return c
    return restype


__all__ = ["Interpreter", "Frame", "T"]
