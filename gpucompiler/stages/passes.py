# llvmlite has no type stubs: its members are untyped (strict elsewhere)
# pyright: reportUnknownMemberType=false, reportMissingTypeStubs=false
"""LLVM pass pipelines by name, in the new pass manager's syntax, for plugin callbacks.

``run_pipeline(job, module, "function(sroa,instcombine),globaldce")`` runs the
passes on the module with the job's target machine. The syntax is ``opt
-passes=``'s: passes by name, separated by commas; ``function(...)`` and
``module(...)`` group passes (accepted and flattened: every pass runs over the
whole module, in the order written); ``default<O0>`` .. ``default<O3>`` is the
default module pipeline at that level. The names are those of the passes
llvmlite can add (:data:`PASSES`; llvmlite has no parser of pipeline text):
an unknown name, a pass parameter (``loop-unroll<O3>``) or unbalanced
parentheses raise :class:`ConfigError` before anything runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import attrs
import llvmlite.binding as llvm

from ..core import CompilerJob
from ..errors import ConfigError
from ..module import IRModule

PASSES: dict[str, str] = {
    "aa-eval": "add_aa_eval_pass", "adce": "add_aggressive_dce_pass",
    "aggressive-instcombine": "add_aggressive_instcombine_pass", "always-inline": "add_always_inliner_pass",
    "argpromotion": "add_argument_promotion_pass", "break-crit-edges": "add_break_critical_edges_pass",
    "constmerge": "add_constant_merge_pass", "deadargelim": "add_dead_arg_elimination_pass",
    "dce": "add_dead_code_elimination_pass", "dse": "add_dead_store_elimination_pass",
    "function-attrs": "add_post_order_function_attributes_pass", "globaldce": "add_global_dead_code_eliminate_pass",
    "globalopt": "add_global_opt_pass", "instcombine": "add_instruction_combine_pass",
    "instnamer": "add_instruction_namer_pass", "ipsccp": "add_ipsccp_pass", "jump-threading": "add_jump_threading_pass",
    "lcssa": "add_lcssa_pass", "loop-deletion": "add_loop_deletion_pass", "loop-extract": "add_loop_extract_pass",
    "loop-reduce": "add_loop_strength_reduce_pass", "loop-rotate": "add_loop_rotate_pass",
    "loop-simplify": "add_loop_simplify_pass", "loop-unroll": "add_loop_unroll_pass",
    "loop-unroll-and-jam": "add_loop_unroll_and_jam_pass", "lower-atomic": "add_lower_atomic_pass",
    "lower-invoke": "add_lower_invoke_pass", "lower-switch": "add_lower_switch_pass",
    "mem2reg": "add_register_to_memory_pass", "memcpyopt": "add_mem_copy_opt_pass",
    "mergefunc": "add_merge_functions_pass", "mergereturn": "add_unify_function_exit_nodes_pass",
    "newgvn": "add_new_gvn_pass", "partial-inliner": "add_partial_inliner_pass", "reassociate": "add_reassociate_pass",
    "rpo-function-attrs": "add_rpo_function_attrs_pass", "sccp": "add_sccp_pass", "simplifycfg": "add_simplify_cfg_pass",
    "sink": "add_sinking_pass", "sroa": "add_sroa_pass", "strip-dead-prototypes": "add_strip_dead_prototype_pass",
    "tailcallelim": "add_tail_call_elimination_pass", "verify": "add_verifier",
}
"""LLVM's pass names (as ``opt -passes=`` spells them) -> the llvmlite method adding the pass."""

_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z][\w.-]*(?:<[^<>()]*>)?)|(?P<punct>[(),]))")
_DEFAULT = re.compile(r"default<O([0-3])>")


@attrs.frozen
class Pipeline:
    """A parsed pipeline: steps in order, each a pass name or ``default<On>`` (an int level)."""

    text: str
    steps: tuple[str | int, ...]

    @classmethod
    def parse(cls, text: str) -> Pipeline:
        """``text`` checked and flattened; ConfigError names what is wrong and where."""
        steps: list[str | int] = []
        depth, expect_item, group = 0, True, False
        for pos, name, punct in _tokens(text):
            if punct == "(" and not group:
                raise _error(text, pos, "only function(...) and module(...) group passes")
            group = False
            if name is not None:
                if not expect_item:
                    raise _error(text, pos, "a comma or a parenthesis expected before this pass")
                default = _DEFAULT.fullmatch(name)
                if default is not None:
                    steps.append(int(default.group(1)))
                elif name in ("function", "module") and _next_is_open(text, pos + len(name)):
                    group = True  # its passes follow
                    continue
                elif name not in PASSES:
                    raise _error(text, pos, f"unknown pass {name!r} (pass parameters are not supported); "
                                            f"known: {', '.join(sorted(PASSES))}, default<O0..O3>")
                else:
                    steps.append(name)
                expect_item = False
            elif punct == "(":
                depth, expect_item = depth + 1, True
            elif punct == ")":
                if depth == 0 or expect_item:
                    raise _error(text, pos, "unbalanced or empty parentheses")
                depth -= 1
            elif expect_item:
                raise _error(text, pos, "a pass name expected")
            else:
                expect_item = True
        if depth or expect_item:
            raise _error(text, len(text), "the pipeline ends early (an open parenthesis, or a trailing comma)")
        return cls(text, tuple(steps))


def _tokens(text: str) -> Iterator[tuple[int, str | None, str | None]]:
    pos = 0
    while pos < len(text.rstrip()):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise _error(text, pos, "not a pass name")
        start = m.start("name") if m.group("name") is not None else m.start("punct")
        yield start, m.group("name"), m.group("punct")
        pos = m.end()


def _next_is_open(text: str, pos: int) -> bool:
    return text[pos:].lstrip().startswith("(")


def _error(text: str, pos: int, what: str) -> ConfigError:
    return ConfigError(f"pass pipeline {text!r}, at column {pos + 1}: {what}")


def run_pipeline(job: CompilerJob, module: IRModule, pipeline: str | Pipeline) -> None:
    """Run ``pipeline`` (text or :class:`Pipeline`) on ``module`` with ``job``'s target machine at its opt
    level; the module must verify afterwards."""
    parsed = Pipeline.parse(pipeline) if isinstance(pipeline, str) else pipeline
    opt = job.config.opt_level
    tm = job.target.target_machine(opt)
    ref = module.ref
    batch: list[str] = []

    def flush() -> None:
        if batch:
            mpm = llvm.create_new_module_pass_manager()
            for name in batch:
                getattr(mpm, PASSES[name])()
            mpm.run(ref, llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=opt)))
            batch.clear()

    for step in parsed.steps:
        if isinstance(step, int):
            flush()
            pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=step))
            pb.getModulePassManager().run(ref, pb)
        else:
            batch.append(step)
    flush()
    ref.verify()


__all__ = ["PASSES", "Pipeline", "run_pipeline"]
