"""The ``ad`` stage: the engine on the whole module (the driver optimises the result again)."""

from __future__ import annotations

import llvmlite.binding as llvm

from gpucompiler.llvm import initialize, parse_ir

from .ad import batch, leftover, preprocess
from .ad.gpu import EngineOptions
from .ad.c_interface import differentiate_nested
from .options import EnzymeOptions


def optimize(job, text: str, vectorize: bool = True) -> llvm.ModuleRef:
    """``O<opt_level>`` of ``job``'s target machine on ``text``; returns the verified module.

    Between levels of nested AD (``vectorize=False``) the loop and SLP vectorizers, and on the host
    the loop unroller, stay off (as before AD: :func:`gpucompiler.stages.optimize.default_pipeline`):
    the next level differentiates this code, the vectorizers' masked loads, stores, gathers and
    scatters (chosen by the host's cost model, so they differ between machines) have no derivative
    rules, and each unrolled copy of a loop body would be differentiated again; the final
    optimisation unrolls and vectorizes as usual."""
    ref = parse_ir(job.target.adapt_ir(text))
    opt = job.config.opt_level
    if opt > 0:
        initialize()
        tm = job.target.target_machine(opt)
        tuning = llvm.create_pipeline_tuning_options(speed_level=opt)
        tuning.loop_vectorization = tuning.loop_interleaving = vectorize
        tuning.loop_unrolling = vectorize or job.target.is_gpu or job.config.emulates_grid  # a device's tape
        tuning.slp_vectorization = vectorize
        pb = llvm.create_pass_builder(tm, tuning)
        pb.getModulePassManager().run(ref, pb)
    ref.verify()
    return ref


def run_ad(job, module) -> None:
    """Differentiate every Enzyme marker call of ``module`` in place (the ``ad`` stage then runs the
    ``ad.late`` callbacks and optimises the result at the job's level).

    The ``optimize`` stage left loops rolled and scalar (:func:`gpucompiler.stages.optimize.default_pipeline`):
    memory operations the engine has no rules for (masked loads and stores, gathers and scatters) come
    only from IR given vectorized, where the engine raises
    :class:`~enzyme_plugin.ad.errors.VectorizedCodeError` naming the instruction."""
    emulated = job.config.emulates_grid
    atomic = job.target.is_gpu or job.config.options(EnzymeOptions).atomic_adjoints or emulated
    device = job.target.is_gpu or emulated  # the emulation runs the tape code the device runs
    enzyme = job.config.options(EnzymeOptions)
    options = EngineOptions(atomic_adjoints=atomic, device_tape=device, thread_exit=job.target.thread_exit(),
                            tape_arena=enzyme.tape_arena, noneed_writes=enzyme.noneed_writes)

    def scalar(t: str) -> llvm.ModuleRef:  # prepared in place by the next level: not printed and parsed again
        return optimize(job, t, vectorize=False)

    # ADError names the instruction; the driver names the stage
    printed = module.text
    source = batch.lower_text(printed)
    leftover.refuse_unknown(source)
    if source is printed and module.parsed and not preprocess.has_optnone(printed):
        ref = module.ref  # prepared in place (replaced below): LLVM does not parse its own print again
        ref.verify()
        text = differentiate_nested(ref, scalar, options)
    else:
        text = differentiate_nested(source, scalar, options)
    module.ref = parse_ir(job.target.adapt_ir(leftover.check_output(text)))  # parsed and verified
