"""IR generation: turn the job's source into the module under compilation.

The source generates its own text (``source.generate_ir(job)``: LLVM IR as
given, or the Python frontend's output); here it is parsed and verified, its
entry function checked and renamed to ``job.name``, and the target prepares
it (triple, data layout).
"""

from __future__ import annotations

from ..errors import CompileError
from ..module import IRModule
from .context import CompileContext


def generate(ctx: CompileContext) -> None:
    """Build ``ctx.module`` from the job's source, then let the target prepare it."""
    job, source = ctx.job, ctx.job.source
    module = IRModule(source.generate_ir(job))
    ref = module.ref  # parses and verifies; raises IRParseError with the line
    defined = {f.name for f in ref.functions if not f.is_declaration}
    if source.entry not in defined:
        raise CompileError(f"stage irgen: entry function @{source.entry} is not defined in the module "
                           f"of job {job.name!r}; it defines: {', '.join(sorted(defined)) or '(nothing)'}")
    if job.name != source.entry:
        ref.get_function(source.entry).name = job.name
    ctx.module = module
    job.target.prepare(job, module)
