# llvmlite and networkx have no type stubs: their members are untyped (strict elsewhere)
# pyright: reportUnknownMemberType=false, reportMissingTypeStubs=false
"""Linking deferred jobs into the module: every ``gpuc.lookup`` becomes a function pointer.

A module produced from a deferred call (see
:mod:`gpucompiler.interpreter.deferred`) holds
``call ptr @gpuc.lookup(ptr @"gpuc.job.<id>")``. This stage

1. walks the job graph (:class:`JobGraph`: an edge ``a -> b`` when job
   ``a``'s module looks up job ``b``) from the job under compilation,
   generating each nested job's module once: irgen and ``post_irgen``
   callbacks, under the parent's config (target, plugins, opt level). A
   nested job may defer again; an identical nested job (same id) is one
   node, so it is compiled once; a cycle ends where it meets a node
   already generated;
2. links every nested module into the parent (optimisation, AD, lowering
   and validation then run once, on the whole module, as in GPUCompiler.jl
   where nested jobs are compiled with ``toplevel=false``);
3. replaces every lookup by the nested entry function (internal linkage
   from then on) and drops ``@gpuc.lookup`` and the job constants;
4. runs the ``link_deferred`` callbacks.

``ctx.job``'s nested jobs are resolved by id among the deferred calls
inferred in this process (:func:`gpucompiler.interpreter.deferred.resolve`).
"""

from __future__ import annotations

import re

import attrs

from ..errors import CompileError
from ..interpreter.deferred import JOB_GLOBAL_PREFIX, LOOKUP, resolve
from ..core import CompilerJob
from .. import llvm as ir_model  # the model's classes load with the first deferred job
from ..module import IRModule
from ..source.deferred import DeferredSpec
from . import irgen
from .context import CompileContext, run_hooks, stage



class JobGraph:
    """The job under compilation (node ``"root"``) and its nested jobs, by id (a plain class: an ``attrs``
    class took ~0.3 ms to make at a process's first compile)."""

    __slots__ = ("edges", "jobs")

    def __init__(self, jobs: dict[str, CompilerJob]):
        #: node -> the job ids its module looks up, in order of first appearance
        self.edges: dict[str, list[str]] = {}
        #: node -> its compile job
        self.jobs = jobs


#: a lookup as LLVM prints one: ``@gpuc.lookup(ptr @gpuc.job.<id>)``
_LOOKUP_CALL = re.compile(re.escape(f"@{LOOKUP}(ptr @{JOB_GLOBAL_PREFIX}") + r"([0-9a-f]+)\)")


def lookups(module: IRModule) -> list[str]:
    """The job ids ``module`` looks up, in order of first appearance, without repeats.

    A module LLVM holds is read from its text when every mention of ``@gpuc.lookup`` but its
    declaration is a call spelled so (no body parsed); otherwise from the model, which names what is
    wrong."""
    if LOOKUP not in module.function_names():
        return []
    if not module.parsed:
        return _lookups_of(module.model)
    text = module.text
    ids = _LOOKUP_CALL.findall(text)
    if text.count(f"@{LOOKUP}") == len(ids) + 1 and f"declare ptr @{LOOKUP}(ptr)" in text:
        return list(dict.fromkeys(ids))
    # read, not changed: LLVM's module stays the authoritative form and only the bodies that call the lookup are parsed
    return _lookups_of(ir_model.parse(text, lazy=True))


def _lookups_of(model: ir_model.Module) -> list[str]:
    """:func:`lookups` of a Python model: every use of ``@gpuc.lookup`` must take a job's constant."""
    ids: list[str] = []
    for use in model.functions[LOOKUP].uses:
        call = use.user
        arg = call.args[0] if isinstance(call, ir_model.Instruction) and call.args else None
        name = getattr(arg, "name", "") or ""
        if not name.startswith(JOB_GLOBAL_PREFIX):
            fn = call.function if isinstance(call, ir_model.Instruction) else None
            where = fn.name if fn is not None else "a constant"
            raise CompileError(f"stage link_deferred: @{LOOKUP} in @{where} must take a "
                               f'@"{JOB_GLOBAL_PREFIX}<id>" constant, got {arg!r}')
        ids.append(name[len(JOB_GLOBAL_PREFIX):])
    return list(dict.fromkeys(ids))


def nested_job(parent: CompilerJob, job_id: str) -> CompilerJob:
    """The compile job of deferred job ``job_id`` under ``parent``'s config."""
    deferred = resolve(job_id)
    frontend = attrs.evolve(parent.config.frontend, python_abi=False)
    config = attrs.evolve(parent.config, frontend=frontend, kernel=False, name=None, validate=False)
    return CompilerJob(DeferredSpec(deferred), config)


def job_graph(ctx: CompileContext) -> tuple[JobGraph, dict[str, IRModule]]:
    """The graph of ``ctx.job`` (node ``"root"``) and its nested jobs, and each nested module."""
    graph = JobGraph(jobs={"root": ctx.job})
    contexts: dict[str, CompileContext] = {"root": ctx}
    todo = ["root"]
    while todo:
        parent = todo.pop(0)
        graph.edges[parent] = lookups(contexts[parent].ir)
        for job_id in graph.edges[parent]:
            if job_id in contexts:
                continue  # identical job, or a cycle: generated already
            job = nested_job(ctx.job, job_id)
            graph.jobs[job_id] = job
            contexts[job_id] = generate(contexts[parent], job)
            todo.append(job_id)
    return graph, {job_id: c.ir for job_id, c in contexts.items() if job_id != "root"}


def generate(parent: CompileContext, job: CompilerJob) -> CompileContext:
    """IR generation and ``post_irgen`` callbacks of ``job``, nested in ``parent`` (whose module looks it
    up; plugins' ``new_state`` gets the parent's state), under stage names of the nested job."""
    nctx = CompileContext(job, parent.settings, parent.plugins, parent=parent)
    with stage(nctx, "irgen"):
        irgen.generate(nctx)
    with stage(nctx, "post_irgen"):
        run_hooks(nctx, "post_irgen")
    return nctx


#: a lookup's call as LLVM prints it, its result named: ``%f = call ptr @gpuc.lookup(ptr @gpuc.job.<id>)``
_LOOKUP_LINE = re.compile(r"^  (%[-a-zA-Z$._][-a-zA-Z$._0-9]*) = " + re.escape(f"call ptr @{LOOKUP}(ptr @{JOB_GLOBAL_PREFIX}")
                          + r"([0-9a-f]+)\)\n", re.MULTILINE)
#: a job's constant as LLVM prints it
_JOB_LINE = re.compile(r"^@" + re.escape(JOB_GLOBAL_PREFIX) + r"([0-9a-f]+) = [^\n]*\n", re.MULTILINE)
#: a name LLVM prints unquoted
_PLAIN_NAME = re.compile(r"[-a-zA-Z$._][-a-zA-Z$._0-9]*")


def _replaced_in_text(text: str, names: dict[str, str]) -> str | None:
    """LLVM's ``text`` with each lookup's result replaced by its nested function in the body that calls
    it, the calls, ``@gpuc.lookup`` and the job constants no longer named removed; None where the text
    shows anything else (a lookup not so spelled, a result unnamed, a function name LLVM quotes)."""
    calls = list(_LOOKUP_LINE.finditer(text))
    declaration = f"\ndeclare ptr @{LOOKUP}(ptr)\n"
    if not calls or text.count(f"@{LOOKUP}") != len(calls) + 1 or declaration not in text:
        return None
    if not all(m.group(2) in names and _PLAIN_NAME.fullmatch(names[m.group(2)]) for m in calls):
        return None
    out: list[str] = []
    done = k = 0
    while k < len(calls):  # one function at a time: its lookups' lines dropped, their results renamed
        first = text.rfind("\ndefine ", 0, calls[k].start()) + 1
        end = text.find("\n}\n", calls[k].end())
        if first <= done or end < 0:
            return None
        group: list[re.Match[str]] = []
        while k < len(calls) and calls[k].start() < end:
            group.append(calls[k])
            k += 1
        pieces: list[str] = []
        at = first
        for m in group:
            pieces.append(text[at:m.start()])
            at = m.end()
        body = "".join(pieces) + text[at:end]
        results = {m.group(1): f"@{names[m.group(2)]}" for m in group}
        result = re.compile(r'("[^"]*")|(' + "|".join(map(re.escape, results)) + r")(?![-a-zA-Z$._0-9])")
        out += [text[done:first], result.sub(lambda r, results=results: r.group(1) or results[r.group(2)], body)]
        done = end
    edited = "".join(out) + text[done:]
    edited = edited.replace(declaration, "\n", 1)
    return _JOB_LINE.sub(lambda j: "" if edited.count(f"@{JOB_GLOBAL_PREFIX}{j.group(1)}") == 1 else j.group(0), edited)


def replace_lookups(module: IRModule, names: dict[str, str]) -> None:
    """Point every lookup at its nested function; drop ``@gpuc.lookup`` and the job constants.

    Done on LLVM's text where it shows every lookup plainly (:func:`_replaced_in_text`), else on the
    model. The model is parsed lazily: the bodies that no callback reads (the nested functions, the
    Python entry, the caller itself) print as they were read."""
    text = module.text
    edited = _replaced_in_text(text, names)
    if edited is not None:
        module.model = ir_model.parse(edited, lazy=True)
        return
    model = module.model = ir_model.parse(text, lazy=True)
    lookup = model.functions[LOOKUP]
    for use in list(lookup.uses):
        call = use.user
        assert isinstance(call, ir_model.Instruction), "gpuc.lookup is only called"
        job_id = call.args[0].name[len(JOB_GLOBAL_PREFIX):]
        call.replace_all_uses_with(model.functions[names[job_id]])
        call.erase()
    model.remove_function(lookup)
    for name in [n for n in model.globals if n.startswith(JOB_GLOBAL_PREFIX)]:
        if not model.globals[name].uses:
            model.remove_global(model.globals[name])


def link(ctx: CompileContext) -> None:
    """Generate, link and resolve every nested job, then run the ``link_deferred`` callbacks."""
    if LOOKUP in ctx.ir.function_names():
        graph, modules = job_graph(ctx)
        names: dict[str, str] = {}
        for job_id in sorted(modules):  # a fixed order: byte-identical output
            names[job_id] = graph.jobs[job_id].name
            ctx.ir.ref.link_in(modules[job_id].ref)
        ref = ctx.ir.ref
        for name in names.values():
            ref.get_function(name).linkage = "internal"
        replace_lookups(ctx.ir, names)  # last: the callbacks take its Python model as it is (no print, no parse)
    run_hooks(ctx, "link_deferred")
