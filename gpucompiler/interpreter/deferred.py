"""Deferred calls: a call handler turns a call into a nested compile job.

This is GPUCompiler.jl's ``gpuc.deferred(meta, f, args...)`` (PRs #582,
#634, #636). A plugin's call handler returns :func:`deferred_call`; the
interpreter then

* infers ``f(args...)`` under the *nested rules*: the parent's rules (base,
  target overlay, enabled plugins) plus the rule sets of ``meta``, which
  apply inside the nested job and nowhere else (the "double extension":
  PTX overlays and a plugin's rules together);
* records a :class:`DeferredJob` under a content hash (its *job id*, the
  same in every process);
* returns a :class:`DeferredCall`, which the code generator
  (:mod:`gpucompiler.codegen.deferred`) lowers to
  ``%f = call ptr @gpuc.lookup(ptr @"gpuc.job.<id>")`` and the plugin's
  marker call ``@<marker>(ptr %f, args...)``.

The ``link_deferred`` stage later compiles each nested job
(:class:`gpucompiler.source.deferred.DeferredSpec` is its source) and
replaces the lookups.

Example (the interpreter half of ``gpucompiler_plugins.mock_enzyme``)::

    @attrs.frozen
    class AutodiffMeta(DeferredMeta):
        rules = (nested_rules,)          # apply only inside the nested job

    @rules.handler
    def _autodiff(interp, fn, args):
        if fn is mock_autodiff and args and is_function(args[0]):
            return deferred_call(interp, AutodiffMeta(), args[0].value, args[1:], marker="__autodiff")
        return None
"""

from __future__ import annotations

import types as pytypes
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from .. import types as T
from ..errors import CompileError, TypeInferenceError
from ..arguments import cell_filled
from ..frontend.fingerprint import encode_value, python_function
from ..hashing import stable_hash
from ..core import GRID_EMULATION
from .infer import Interpreter, spec_argtypes
from .lattice import BOTTOM, Const, pyobj, widen
from .rules import CallResult, RuleSet

if TYPE_CHECKING:
    from ..core import Target

LOOKUP = "gpuc.lookup"
"""Name of the function whose calls the ``link_deferred`` stage replaces."""
JOB_GLOBAL_PREFIX = "gpuc.job."
"""``@"gpuc.job.<id>"``: the constant naming a nested job, the argument of a lookup."""


class DeferredMeta:
    """Base class of a plugin's meta: what the nested job is for (an ``attrs.frozen`` subclass).

    Its fields are part of the job id. ``rules`` are the rule sets that
    apply inside the nested job (in addition to the parent's), nowhere else.
    """

    rules: ClassVar[tuple[RuleSet, ...]] = ()
    error_slot: ClassVar[bool] = False
    """whether the nested functions may take an error slot (plain signatures that still stop on
    errors; see :class:`gpucompiler.codegen.ModuleCodegen`); whether a job does is
    :attr:`DeferredJob.takes_error_slot`, the one rule its callers and its code generation follow"""
    source_lines: ClassVar[bool] = False
    """whether the nested job's instructions carry ``!gpuc.loc !{!"file", i32 line}`` (their Python
    source line), so that the plugin's errors about them can name it"""


@attrs.frozen
class DeferredJob:
    """A nested job as the interpreter records it: ``fn(argtypes)`` under ``meta``, in a context."""

    fn: Any = attrs.field(metadata={"hash": False})
    argtypes: tuple = attrs.field(converter=tuple)
    meta: Any
    target: Target
    rules: tuple[str, ...]
    """names of the plugin rule sets of the nested context (the parent's and the meta's)"""
    python_errors: bool
    function: Any = None
    """stable encoding of ``fn``: qualified name, code, closure and the globals its code names,
    through the functions it reaches (two copies of one code over other globals, such as
    ``exec``'d copies, are different jobs)"""
    plugin_sets: tuple = attrs.field(default=(), eq=False, repr=False, metadata={"hash": False})
    """the rule sets named by ``rules``, in the order the nested interpreter consults them"""
    _id: str | None = attrs.field(default=None, init=False, eq=False, repr=False, metadata={"hash": False})

    @property
    def id(self) -> str:
        """Content hash: equal in every process for the same function, types, meta and context (hashed
        once: the job's name, its lookups and its lowering each ask for it)."""
        known = self._id
        if known is None:
            known = stable_hash(self)
            object.__setattr__(self, "_id", known)
        return known

    @property
    def takes_error_slot(self) -> bool:
        """The nested job's calling convention, decided by the job alone: whether its entry takes a
        leading ``ptr`` to an ``i8`` error slot.

        True when the meta asks for one (:attr:`DeferredMeta.error_slot`) and the job's checks stop
        it (Python errors, or the CPU grid emulation). Every caller follows it, whatever its own
        module has: :func:`gpucompiler.codegen.deferred.emit_deferred` passes
        ``FunctionCodegen.call_slot()`` first (a local slot where the caller has none), and a
        plugin that lowers its own marker call does the same; the nested module is generated
        with the slot exactly then (:func:`gpucompiler.source.deferred.nested_checks`). So nested
        jobs of several plugins compose in any order and depth."""
        return bool(getattr(self.meta, "error_slot", False)) and self.stops_on_errors

    @property
    def stops_on_errors(self) -> bool:
        """Whether a failed check stops the nested job (Python errors, or the CPU grid emulation's
        reports) rather than trapping."""
        return self.python_errors or GRID_EMULATION in self.rules

    @property
    def name(self) -> str:
        """The LLVM name of the nested entry function."""
        return f"{self.fn.__module__}.{self.fn.__qualname__}.deferred.{self.id[:16]}"


@attrs.frozen
class DeferredCall:
    """A call site deferred to a nested job, as the code generator lowers it.

    The lookup of ``job`` and the ``marker`` call with the last ``nargs``
    arguments of the call site, whose result has type ``restype``
    (:func:`gpucompiler.codegen.deferred.lower_deferred`).
    """

    job: DeferredJob
    marker: str
    nargs: int
    restype: Any


def is_function(v) -> bool:
    """Whether abstract value ``v`` is a known Python function (what can be deferred)."""
    return isinstance(v, Const) and v.type == pyobj and isinstance(v.value, pytypes.FunctionType)


def _encode_function(fn, seen=None) -> Any:
    """``fn``'s code and closure plus the values of the globals its code names (functions among
    them encoded the same way, once each: recursion ends at a function already being encoded)."""
    seen = set() if seen is None else seen
    if id(fn) in seen:
        return {"again": f"{fn.__module__}.{fn.__qualname__}"}
    seen.add(id(fn))

    def value(v):
        inner = python_function(v)
        return _encode_function(inner, seen) if inner is not None else encode_value(v)

    names = set()
    todo = [fn.__code__]
    while todo:  # the names of nested code objects (comprehensions, inner functions) count too
        code = todo.pop()
        names.update(code.co_names)
        todo.extend(c for c in code.co_consts if isinstance(c, pytypes.CodeType))
    env = {n: value(fn.__globals__[n]) for n in sorted(names) if n in fn.__globals__}
    cells = [value(c.cell_contents) for c in (fn.__closure__ or ()) if cell_filled(c)]
    return {"function": encode_value(fn), "closure": cells, "globals": env}



_REGISTRY: dict[str, DeferredJob] = {}
"""Every deferred job recorded in this process, by id (ids are content hashes)."""


_INFERRED: dict[str, tuple[Any, Any]] = {}
"""job id -> ``(interpreter, frame)`` of the last :func:`deferred_call` that inferred it: the nested job's
code generation takes it (:func:`take_inferred`) instead of inferring the function again"""
_INFERRED_KEPT = 64


def take_inferred(job_id: str) -> tuple[Any, Any] | None:
    """``(interpreter, frame)`` of the deferred call that last inferred job ``job_id`` in this process, once
    (None after, or when none did): the caller checks that the globals it read are still bound alike."""
    return _INFERRED.pop(job_id, None)


def resolve(job_id: str) -> DeferredJob:
    """The deferred job recorded under ``job_id`` in this process."""
    job = _REGISTRY.get(job_id)
    if job is None:
        raise CompileError(f"stage link_deferred: no deferred job with id {job_id} was recorded in this "
                           "process; compile the parent from its Python source here so its deferred calls "
                           "are inferred")
    return job


def nested_interpreter(interp, rule_sets: tuple[RuleSet, ...]):
    """The interpreter of a nested context: ``interp``'s rules plus ``rule_sets``.

    When ``interp`` already has them (a nested job deferring under the same
    meta), it is reused, so that a cycle of deferred calls is inferred like
    ordinary recursion.
    """
    extra = [rs for rs in rule_sets if rs not in interp.plugin_sets]
    if not extra:
        return interp
    children = interp.deferred_children
    key = tuple(rs.name for rs in extra)
    child = children.get(key)
    if child is None:
        child = Interpreter(interp.target, (), interp.python_errors)
        child.plugin_sets = [*interp.plugin_sets, *extra]
        children[key] = child
    return child


def borrowed(v):
    """``v`` (an abstract value) as a callee that only borrows its arrays sees it: no buffer field."""
    t = v if isinstance(v, T.Type) else None
    if isinstance(t, T.TupleType):
        return T.TupleType(borrowed(it) for it in t.items)
    if isinstance(t, T.RecordType):
        return T.RecordType(t.module, t.qualname, ((n, borrowed(it)) for n, it in t.fields), t.indexable)
    if isinstance(t, T.ArrayType) and t.managed:
        return T.ArrayType(t.dtype, t.ndim, t.layout, t.readonly)
    return v


def deferred_call(interp, meta, fn, args, *, marker: str) -> CallResult:
    """What a call handler returns to defer ``fn(*args)`` under ``meta``, lowered to ``marker``.

    ``args`` are the abstract values of the arguments passed on to ``fn``.
    The result type is ``fn``'s return type inferred under the nested rules.
    """
    if not isinstance(fn, pytypes.FunctionType):
        raise TypeInferenceError(f"{marker}: only Python functions can be deferred, got {fn!r}")
    args = tuple(borrowed(a) for a in args)  # the job borrows the caller's arrays for the call
    child = nested_interpreter(interp, tuple(getattr(meta, "rules", ())))
    frame = child.infer(fn, list(args))
    ret = frame.provisional if frame in child.stack else frame.rettype
    if child is not interp:
        interp.deps.update(child.deps)  # world age and job key cover the deferred code too
    job = DeferredJob(fn, spec_argtypes(args), meta, interp.target,
                      tuple(rs.name for rs in child.plugin_sets), interp.python_errors,
                      _encode_function(fn), tuple(child.plugin_sets))
    job_id = job.id
    _REGISTRY.setdefault(job_id, job)
    _INFERRED.pop(job_id, None)
    _INFERRED[job_id] = (child, frame)
    while len(_INFERRED) > _INFERRED_KEPT:
        del _INFERRED[next(iter(_INFERRED))]
    interp.deferred[job_id] = job
    if ret is BOTTOM:
        return CallResult(BOTTOM)
    restype = widen(ret)
    return CallResult(restype, deferred=DeferredCall(job, marker, len(args), restype))


__all__ = ["DeferredMeta", "DeferredJob", "DeferredCall", "deferred_call", "is_function", "resolve", "LOOKUP",
           "JOB_GLOBAL_PREFIX", "nested_interpreter", "take_inferred"]
