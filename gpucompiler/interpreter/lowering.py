"""What a rule receives: the meaning of a call, the code generator a lowering emits with, the interpreter a
call handler asks.

A rule set's lowering is a function ``lower(cg, args, argtypes, restype)``
(:data:`Lowering`): ``cg`` is a :class:`CodeGen`, ``args`` the LLVM values of
the call's arguments, ``argtypes`` their abstract values and ``restype`` the
type of the result the rule declared. A call handler is a function
``handler(interp, callee, argtypes)`` (:data:`Handler`) that returns a
:class:`CallResult` or None. The protocols state what rules may rely on; the
classes that implement them (``FunctionCodegen`` and ``ModuleCodegen`` in
:mod:`gpucompiler.codegen`, :class:`~gpucompiler.interpreter.infer.Interpreter`)
sit above the rule machinery and have more members, which rules do not use.

Typed, a plugin's lowering reads::

    from llvmlite import ir
    from gpucompiler.interpreter.lowering import Args, ArgTypes, CodeGen, values

    def _fma3(cg: CodeGen, args: Args, argtypes: ArgTypes, restype: T.Type) -> ir.Value:
        return cg.call_intrinsic("llvm.fma", restype, values(args))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, overload, runtime_checkable

import attrs

from .. import types as T
from ..core import Target
from ..frontend.ir import Function as IRFunction, Value as IRValue
from .lattice import AbstractValue

if TYPE_CHECKING:  # annotations only: defining rules loads no llvmlite (code generation does)
    from llvmlite import ir  # pyright: ignore[reportMissingTypeStubs]  (llvmlite ships no stubs; its source is read)

Args: TypeAlias = "Sequence[ir.Value | None]"
"""The LLVM values of a call's arguments; None for an argument whose type has none (a compile-time object:
a function, a string, ``None``), which the rule's signature foresees."""
ArgTypes: TypeAlias = Sequence[AbstractValue]
"""The abstract values of a call's arguments (a type, or a constant of one: :func:`~.lattice.widen` gives
the type)."""
Lowering: TypeAlias = "Callable[[CodeGen, Args, ArgTypes, T.Type], ir.Value | None]"
"""``lower(cg, args, argtypes, restype)``: the LLVM value of the call (None for a result without one)."""
Handler: TypeAlias = "Callable[[Interp, Any, ArgTypes], CallResult | None]"
"""``handler(interp, callee, argtypes)``: what calling ``callee`` (any Python object) means, or None (not
this handler's call)."""
InlinePolicy: TypeAlias = "Callable[[Interp, Specialization], bool | None]"
"""``policy(interp, frame)``: whether calls of ``frame`` are inlined (True), never inlined (False), or left
to the next policy and then LLVM (None)."""


@runtime_checkable
class Specialization(Protocol):
    """A Python function inferred for abstract argument values (:class:`~.infer.Frame`)."""

    @property
    def pyfunc(self) -> Callable[..., Any]:
        """The Python function."""
        ...

    @property
    def argtypes(self) -> tuple[AbstractValue, ...]:
        """The abstract values of its arguments (numbers widened to their types)."""
        ...

    @property
    def ir(self) -> IRFunction:
        """Its SSA IR (``.name``, ``.filename``, ``.line``)."""
        ...

    def where(self, v: IRValue) -> tuple[str, int, int]:
        """``(file, line, column)`` of the SSA value ``v`` in the user's source (the function's when unknown)."""
        ...


@attrs.frozen(eq=False)
class CallResult:
    """What a call means: its result (an abstract value) and how to lower it.

    ``lower`` (a :data:`Lowering`) returns the LLVM value; ``callee`` instead
    names a specialization to call; ``deferred`` a
    :class:`~gpucompiler.interpreter.deferred.DeferredCall` (a nested job);
    ``rule_set`` is the claimant's name. ``method``: the call of a method value
    (:class:`~gpucompiler.types.BoundMethod`), which means
    ``call_method(receiver, name, *args)``: its lowering gets those arguments.
    """

    restype: AbstractValue
    """The result: a type, a constant (the call is folded), or ⊥ (a recursive call not inferred yet)."""
    lower: Lowering | None = None
    callee: Specialization | None = None
    rule_set: str = ""
    deferred: Any = None
    """A :class:`~gpucompiler.interpreter.deferred.DeferredCall` (typed ``Any``: that module infers the nested
    job, so it sits above the rules that name it here)."""
    method: bool = False


@runtime_checkable
class Interp(Protocol):
    """The interpreter inferring the job (:class:`~.infer.Interpreter`), as call handlers see it."""

    @property
    def target(self) -> Target:
        """The job's target (``interp.target.name``, ``.is_gpu``)."""
        ...

    @property
    def python_errors(self) -> bool:
        """Whether failed checks raise Python exceptions (``@jit`` code on the host)."""
        ...

    def abstract_call(self, fn: Any, args: ArgTypes) -> CallResult | None:
        """What calling ``fn`` with abstract values ``args`` means under the job's rules, or None."""
        ...

    def invoke(self, fn: Callable[..., Any], args: ArgTypes) -> CallResult:
        """A call of the Python function ``fn``, compiled too (its specialization inferred)."""
        ...

    def infer(self, pyfunc: Callable[..., Any], argtypes: ArgTypes) -> Specialization:
        """The specialization of ``pyfunc`` for ``argtypes``, inferred now."""
        ...


@runtime_checkable
class ModuleGen(Protocol):
    """The LLVM module being generated (``gpucompiler.codegen.module.ModuleCodegen``), as rules see it."""

    @property
    def module(self) -> ir.Module:
        """The llvmlite module."""
        ...

    @property
    def target(self) -> Target:
        ...

    @property
    def interp(self) -> Interp:
        """The interpreter that inferred the job."""
        ...

    @property
    def python_errors(self) -> bool:
        """Failed checks raise Python exceptions (``@jit`` code on the host)."""
        ...

    @property
    def math_errors(self) -> bool:
        """Math errors (division by zero, a domain error) raise: ``ErrorModel.PYTHON`` with Python errors."""
        ...

    @property
    def error_slot(self) -> bool:
        """Functions report errors through a leading slot pointer (code a plugin transforms, e.g. differentiates)."""
        ...

    @property
    def status(self) -> bool:
        """Functions return a failure flag beside their result."""
        ...

    @property
    def boundscheck(self) -> bool:
        """Array indices are checked."""
        ...

    @property
    def fastmath(self) -> bool:
        """Floating-point code gets LLVM's ``fast`` flags."""
        ...

    def declare(self, name: str, restype: ir.Type, argtypes: Sequence[ir.Type]) -> ir.Function:
        """The function ``name`` of this module, declared (by name) when missing."""
        ...

    def extern_global(self, name: str) -> ir.GlobalVariable:
        """The external pointer-sized global ``name``, declared when missing."""
        ...

    def cstring(self, text: str) -> ir.GlobalVariable:
        """A private NUL-terminated constant holding ``text`` (one per distinct text)."""
        ...

    def function_for(self, frame: Specialization, name: str | None = None, *, plain: bool = False) -> ir.Function:
        """The LLVM function of ``frame`` (declared now, emitted with the module); ``plain``: without the
        error slot even in a module with one."""
        ...


@runtime_checkable
class CodeGen(Protocol):
    """What a lowering emits with: the function being generated (``gpucompiler.codegen.function.FunctionCodegen``).

    ``b`` is the builder, positioned where the call's code goes; a lowering
    may add blocks (``cg.fn.append_basic_block``) and must leave ``b`` at the
    end of the block where execution continues.
    """

    @property
    def b(self) -> ir.IRBuilder:
        """The builder."""
        ...

    @property
    def mod(self) -> ModuleGen:
        """The module being generated."""
        ...

    @property
    def target(self) -> Target:
        """The job's target."""
        ...

    @property
    def fn(self) -> ir.Function:
        """The LLVM function being generated."""
        ...

    @property
    def frame(self) -> Specialization:
        """The specialization being generated (``frame.where(cg.inst)``: the user's ``file:line``)."""
        ...

    @property
    def inst(self) -> IRValue | None:
        """The SSA instruction being lowered."""
        ...

    # -- values and conversions
    def ll(self, t: T.Type) -> ir.Type:
        """The LLVM type of ``t``."""
        ...

    def const(self, t: AbstractValue, value: Any) -> ir.Constant:
        """The Python value ``value`` as a constant of type ``t``."""
        ...

    @overload
    def cast(self, v: ir.Value, frm: AbstractValue, to: AbstractValue) -> ir.Value: ...
    @overload
    def cast(self, v: None, frm: AbstractValue, to: AbstractValue) -> None: ...

    def cast(self, v: ir.Value | None, frm: AbstractValue, to: AbstractValue) -> ir.Value | None:
        """``v`` converted from ``frm`` to ``to``: Python's conversions between bool, int and float (float
        -> int truncates; NaN and overflow raise), NumPy's (C's) between the other numbers. A value of a
        type without one (None) stays None."""
        ...

    def truth(self, v: ir.Value, t: AbstractValue) -> ir.Value:
        """``bool(v)`` as an ``i1``."""
        ...

    def make_complex(self, re: ir.Value, im: ir.Value) -> ir.Value:
        """The complex number ``re + im*j`` of two floats of one type."""
        ...

    def complex_parts(self, v: ir.Value, t: AbstractValue, part: T.Type) -> tuple[ir.Value, ir.Value]:
        """``(real, imag)`` of the number ``v`` of type ``t``, as floats of type ``part``."""
        ...

    def float_to_int(self, v: ir.Value, to: ir.IntType) -> ir.Value:
        """Python's ``int()`` of a float (NaN: ValueError; an infinity or too large: OverflowError)."""
        ...

    def load_scalar(self, ptr: ir.Value, t: T.Type) -> ir.Value:
        """The number of type ``t`` at ``ptr`` (a bool is stored as a byte)."""
        ...

    def store_scalar(self, v: ir.Value, ptr: ir.Value, t: T.Type) -> None:
        """Store the number ``v`` of type ``t`` at ``ptr``."""
        ...

    def alloca(self, t: ir.Type, name: str = "", size: ir.Value | None = None) -> ir.AllocaInstr:
        """A stack slot of ``size`` (default one) values of type ``t``, made in the entry block."""
        ...

    # -- calls
    def call_intrinsic(self, name: str, restype: T.Type, args: Sequence[ir.Value]) -> ir.Value:
        """The overloaded LLVM intrinsic ``name`` (``llvm.sin``) at the float type ``restype``."""
        ...

    def call_extern(self, name: str, restype: T.Type, args: Sequence[ir.Value]) -> ir.Value:
        """A call of the external function ``name`` (declared by name)."""
        ...

    def call_result(self, res: CallResult, args: Args, argtypes: ArgTypes, restype: T.Type) -> ir.Value | None:
        """The call that ``res`` (from ``interp.abstract_call`` or another rule) means: its lowering, or
        its specialization's function."""
        ...

    def invoke(self, callee: Specialization, args: Args, argtypes: ArgTypes, t: AbstractValue) -> ir.Value | None:
        """A call of the specialization ``callee`` (arguments converted to its types; its errors stop this
        function as any compiled call's do)."""
        ...

    def call_slot(self) -> ir.Value:
        """The error slot to pass to a callee that takes one."""
        ...

    def stop_if_failed(self, slot: ir.Value) -> None:
        """After a call given ``slot`` (:meth:`call_slot`): return at once if the callee failed."""
        ...

    def print_values(self, items: Sequence[tuple[ir.Value | str | None, AbstractValue | None]]) -> None:
        """``print(*items)``: ``(value, type)`` pairs, ``str`` constants as themselves."""
        ...

    # -- checks: each failure path is cold; where and how it reports depends on the job
    def check(self, ok: ir.Value, exc_name: str, message: str, *values: ir.Value) -> None:
        """With Python errors: raise ``exc_name(message)`` unless ``ok`` (``values``, i64, fill ``%lld``)."""
        ...

    def check_value(self, ok: ir.Value, message: str, *values: ir.Value) -> None:
        """On every target: ``ValueError(message)`` unless ``ok`` (a trap where errors cannot be raised)."""
        ...

    def check_required(self, ok: ir.Value, exc_name: str, message: str, *values: ir.Value) -> None:
        """:meth:`check` that stops execution on every target (a trap where errors cannot be raised)."""
        ...

    def check_statement(self, ok: ir.Value, exc_name: str, message: str | None, *values: ir.Value) -> None:
        """:meth:`check` whose exception names the user's ``file:line`` (``raise``, ``assert``, NumPy's
        preconditions)."""
        ...

    def check_math(self, ok: ir.Value, exc_name: str, message: str) -> None:
        """:meth:`check` of a math error (division by zero...): only under ``ErrorModel.PYTHON``."""
        ...

    def check_cases(self, ok: ir.Value,
                    decide: Callable[[], tuple[ir.Value, Sequence[tuple[ir.Value | None, str, str]]]],
                    math: bool = False) -> None:
        """:meth:`check` with everything but ``ok`` on the cold path: ``decide()`` gives ``(fails, cases)``,
        the first case ``(cond, exc_name, message)`` whose ``cond`` holds is raised (the last's is ignored)."""
        ...

    def check_index(self, index: ir.Value, size: ir.Value, axis: int, original: ir.Value,
                    unsigned: bool = False) -> None:
        """With bounds checks on: ``index`` must lie in ``[0, size)`` (NumPy's IndexError names ``original``)."""
        ...


def values(args: Args) -> list[ir.Value]:
    """``args`` as LLVM values, for a rule whose signature admits only arguments that have one (numbers,
    arrays, tuples of them); an argument without one is an error in the rule."""
    out = [a for a in args if a is not None]
    if len(out) != len(args):
        raise TypeError(f"argument {[a is None for a in args].index(True)} has no LLVM value: the rule's "
                        "signature admits a compile-time-only object (a function, a string, None)")
    return out


__all__ = ["ArgTypes", "Args", "CallResult", "CodeGen", "Handler", "InlinePolicy", "Interp", "Lowering",
           "ModuleGen", "Specialization", "values"]
