# llvmlite and networkx have no type stubs: their members are untyped (strict elsewhere)
# pyright: reportUnknownMemberType=false, reportMissingTypeStubs=false
"""The optimisation stage: LLVM's default new-pass-manager pipeline with three extension points.

1. ``optimize.early`` callbacks, before the default pipeline;
2. the default ``O<opt_level>`` module pipeline of the target machine;
3. ``optimize.late`` callbacks, then a short cleanup (instcombine +
   simplifycfg) when any ran and ``opt_level > 0``;
4. ``optimize.last`` callbacks, at the very end.
"""

from __future__ import annotations

import llvmlite.binding as llvm

from ..language.python.powers import SLP_MARKER
from ..module import IRModule
from .context import CompileContext, run_hooks


def _pass_builder(ctx: CompileContext, slp: bool = False, vectorize: bool = True,
                  unroll: bool = True) -> llvm.PassBuilder:
    """The job's pass builder; ``vectorize=False`` leaves out the loop vectorizer (and its interleaving),
    ``unroll=False`` the loop unroller."""
    opt = ctx.job.config.opt_level
    tm = ctx.job.target.target_machine(opt)  # initialises LLVM's target
    tuning = llvm.create_pipeline_tuning_options(speed_level=opt)
    tuning.slp_vectorization = slp
    if not vectorize:
        tuning.loop_interleaving = tuning.loop_vectorization = False
    if not unroll:
        tuning.loop_unrolling = False
    return llvm.create_pass_builder(tm, tuning)


def _device_tape(ctx: CompileContext) -> bool:
    """Whether the job's derivatives keep their tape as a GPU's does (a GPU target, or the CPU grid
    emulation): loops of a few iterations are unrolled before AD there, so that they need no tape."""
    return ctx.job.target.is_gpu or ctx.job.config.emulates_grid


def default_pipeline(ctx: CompileContext, module: IRModule) -> None:
    """Run the default module pipeline at the job's opt level: the last one, unless a plugin's marker is in
    the module (an AD engine may read the result). The SLP vectorizer runs in the last one of a host module
    that holds a power loop's straight-line blocks (frontend/powerloops.py).

    Before AD the pipeline runs no loop vectorizer and, on the host, no loop unroller: the engine would
    differentiate every unrolled or vectorized copy of a loop body (an MLP loss's derivative was 6,200
    instructions from its unrolled and vectorized primal, 2,400 from the rolled one), and the pipeline
    after AD (:func:`after_ad`) unrolls and vectorizes the derivative's loops itself. A kernel's loops
    are unrolled before AD (:func:`_device_tape`): a loop of at most three iterations inside a
    data-dependent one needs no tape once unrolled, where the device would take it from its heap."""
    final = not ctx.note_markers()
    ctx.job.target.before_optimize(ctx.job, module, final=final)
    slp = final and not ctx.job.target.is_gpu and SLP_MARKER in module.function_names()
    pb = _pass_builder(ctx, slp, vectorize=final, unroll=final or _device_tape(ctx))
    pb.getModulePassManager().run(module.ref, pb)
    if final:
        _drop_marker(ctx, module)


def after_ad(ctx: CompileContext, module: IRModule) -> None:
    """The default module pipeline again after the ``ad`` stage's engines, the SLP vectorizer on too (the
    straight-line code differentiation makes gains from it)."""
    opt = ctx.job.config.opt_level
    ctx.job.target.before_optimize(ctx.job, module, final=True)
    tm = ctx.job.target.target_machine(opt)
    tuning = llvm.create_pipeline_tuning_options(speed_level=opt)
    tuning.loop_vectorization = tuning.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, tuning)
    pb.getModulePassManager().run(module.ref, pb)
    _drop_marker(ctx, module)
    module.ref.verify()


def _drop_marker(ctx: CompileContext, module: IRModule) -> None:
    """Remove the SLP marker's declaration (never called: read above, then dead), which the pipelines of
    opt level 0 keep and the linker would find unresolved."""
    if SLP_MARKER in module.function_names():
        mpm = llvm.create_new_module_pass_manager()
        mpm.add_strip_dead_prototype_pass()
        mpm.run(module.ref, _pass_builder(ctx))


def cleanup(ctx: CompileContext, module: IRModule) -> None:
    """instcombine + simplifycfg: tidy what late callbacks left."""
    pb = _pass_builder(ctx)
    mpm = llvm.create_new_module_pass_manager()
    mpm.add_instruction_combine_pass()
    mpm.add_simplify_cfg_pass()
    mpm.run(module.ref, pb)


def optimize(ctx: CompileContext) -> None:
    """Early callbacks, default pipeline, late callbacks + cleanup, last callbacks."""
    run_hooks(ctx, "optimize.early")
    default_pipeline(ctx, ctx.ir)
    if run_hooks(ctx, "optimize.late") and ctx.job.config.opt_level > 0:
        cleanup(ctx, ctx.ir)
    run_hooks(ctx, "optimize.last")
