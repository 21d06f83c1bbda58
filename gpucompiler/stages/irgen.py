# llvmlite and networkx have no type stubs: their members are untyped (strict elsewhere)
# pyright: reportUnknownMemberType=false, reportMissingTypeStubs=false
"""IR generation: turn the job's source into the module under compilation.

The source generates its own text (``source.generate_ir(job)``: LLVM IR as
given, or the Python frontend's output); here it is parsed and verified, its
entry function checked and renamed to ``job.name``, and the target prepares
it (triple, data layout).
"""

from __future__ import annotations

from llvmlite import binding as llvm

from ..errors import CompileError, ErrorKind, InvalidIRError
from ..module import IRModule
from .context import CompileContext


_LOCAL = (llvm.Linkage.internal, llvm.Linkage.private)


def generate(ctx: CompileContext) -> None:
    """Build ``ctx.module`` from the job's source, then let the target prepare it."""
    job, source = ctx.job, ctx.job.source
    text = source.generate_ir(job)
    if "vscale x" in text and not job.target.scalable_vectors():  # LLVM would abort, not report
        raise InvalidIRError([(ErrorKind.SCALABLE_VECTOR, f"scalable vector types (<vscale x ...>): the "
                               f"{job.target.name} target has none; use fixed-width vectors")], job.name)
    module = IRModule(text)
    ref = module.ref  # parses and verifies; raises IRParseError with the line
    defined: set[str] = {f.name for f in ref.functions if not f.is_declaration}
    if source.entry not in defined:
        raise CompileError(f"stage irgen: entry function @{source.entry} is not defined in the module "
                           f"of job {job.name!r}; it defines: {', '.join(sorted(defined)) or '(nothing)'}")
    entry = ref.get_function(source.entry)
    if entry.linkage in _LOCAL:  # the job exports its entry: the optimiser would delete a module-local one
        entry.linkage = llvm.Linkage.external
    if job.name != source.entry:
        entry.name = job.name
    ctx.module = module
    job.target.prepare(job, module)
