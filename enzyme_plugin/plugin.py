"""The Enzyme plugin: ``autodiff`` in compiled code, differentiated at the pipeline's ``ad`` stage.

Stages (each callback marker-gated, so modules without ``autodiff`` are untouched):

=================  =========================================================
``post_irgen``     inttoptr preserve: calls through constant addresses -> named declarations
``link_deferred``  ``gpuc.enzyme.autodiff`` -> Enzyme's C interface; custom-rule functions noinline
``optimize``       the job's ``O<n>`` pipeline (the driver's), before AD (loops left rolled and scalar);
                   at ``optimize.last`` NVVM preserve: NVVM intrinsics / libdevice calls -> forms the
                   engine has rules for
``ad``             the engine (:func:`enzyme_plugin.ad.c_interface.differentiate_module`); the driver then
                   runs ``ad.late`` callbacks and ``O<n>`` again
``post_ad``        NVVM and noinline restore
=================  =========================================================
"""

from __future__ import annotations

import re

import gpucompiler.plugin as gp
from gpucompiler.llvm import parse_ir

from .passes import lower, noinline, nvvm
from . import cpipeline
from .ad_stage import run_ad
from .options import EnzymeOptions
from .language import MARKER, rules

AD_MARKERS = ("__enzyme_autodiff", "__enzyme_fwddiff", "__enzyme_augmentfwd", "__enzyme_reverse")
#: an ``inttoptr`` constant expression (``inttoptr (i64 N to ptr)``), which the instruction form
#: (``%p = inttoptr i64 %n to ptr``, common in the frontend's code) is not
_CONSTANT_INTTOPTR = re.compile(r"\binttoptr\s*\(")


class EnzymeJobState:
    """The plugin's state for one compile (``CompileContext.plugin_state["enzyme"]``; a plain class: an
    ``attrs`` class took ~0.3 ms to make at a process's first compile)."""

    __slots__ = ("ran_ad", "lowered")

    def __init__(self, ran_ad: bool = False):
        self.ran_ad = ran_ad
        """whether the ``ad`` stage differentiated this module (``post_ad`` restores only then)"""
        self.lowered: tuple[object, str] | None = None
        """the module LLVM parsed from the marker lowering's print, and that print (read again by
        :meth:`EnzymePlugin.keep_rules_out_of_line` while the module is that one, not printed again)"""


class EnzymePlugin(gp.Plugin):
    """Automatic differentiation of ``autodiff(mode, f, args...)`` calls (see the module docstring)."""

    name = "enzyme"
    version = "0.1"
    rules = rules
    markers = (MARKER, *AD_MARKERS)
    options = EnzymeOptions

    def new_state(self, job) -> EnzymeJobState:
        return EnzymeJobState()

    def add_commands(self, subparsers) -> None:
        from . import cli  # import time: the command line's modules and gpucompiler's (~11 ms uncompiled), for gpuc only

        cli.add_parser(subparsers)  # gpuc enzyme

    @gp.callback("post_irgen")
    def preserve_inttoptr(self, job, module):
        # a cheap text check (most modules call no constant address) on a print kept for the next reader: the
        # deferred linking reads the module's lookups from it
        if _CONSTANT_INTTOPTR.search(module.keep_text()):
            from .passes import inttoptr  # import time: ctypes.util and subprocess (~4 ms), for such a module only

            inttoptr.preserve(module.model)

    @gp.callback("link_deferred", markers=(MARKER,))
    def lower_autodiff(self, job, module, state: EnzymeJobState):
        model = module.model
        lower.lower_markers(model)
        noinline.mark(model)
        text = str(model)
        module.ref = parse_ir(text)  # verified, as the driver verifies a module left as model
        state.lowered = (module.ref, text)
        model.drop()  # freed now, not by a pass of the collector when the compile's pause ends

    @gp.callback("link_deferred", markers=AD_MARKERS)
    def keep_rules_out_of_line(self, job, module, state: EnzymeJobState):
        """IR no pass ran on (Enzyme's C interface from ``clang -O<N> -Xclang -disable-llvm-optzns``):
        functions with registered rules stay out of line until AD has seen their calls (undone by
        :meth:`restore`), as ``gpuc cc`` keeps them. Optimised IR is left alone: a rule's function
        clang inlined already must stay visible to the engine's check, which refuses it."""
        lowered = state.lowered
        same = lowered is not None and module.parsed and module.ref is lowered[0]
        if cpipeline.looks_unoptimised(lowered[1] if same and lowered is not None else module.text):
            cpipeline.keep_rules_out_of_line(module.model)

    @gp.callback("optimize.last", markers=AD_MARKERS)
    def preserve_nvvm(self, job, module):
        target = job.target
        if module.parsed and _rename_in_place(
                module.ref, lambda f: nvvm.preserved_name(f.name, target) if f.is_declaration else None):
            return  # renamed through LLVM (or nothing to rename): not printed and parsed into the Python model
        nvvm.preserve(module.model, target)

    @gp.callback("ad", markers=AD_MARKERS)
    def differentiate(self, job, module, state: EnzymeJobState):
        if module.function_names().isdisjoint(AD_MARKERS):
            return  # the optimiser deleted every marker call (dead code): nothing to differentiate
        run_ad(job, module)
        state.ran_ad = True

    @gp.callback("post_ad")
    def restore(self, job, module, state: EnzymeJobState):
        if not state.ran_ad and not any(n.startswith(nvvm.RESTORE_MARKERS_PREFIXES) for n in module.function_names()):
            return  # nothing differentiated, nothing renamed (contract.mark_inactive) to give back
        target = job.target
        if module.parsed and (not _restores(module.ref, target) or (not _drops(module.ref) and _rename_in_place(
                module.ref, lambda f: nvvm.restored_name(f.name, f.is_declaration, target)))):
            return  # nothing to give back or drop, or names alone, through LLVM: not parsed into the Python model
        model = module.model
        nvvm.restore(model, job.target)
        noinline.restore(model)
        for name in lower.ENZYME_MARKERS:
            g = model.globals.get(name)
            if g is not None and not g.uses:
                model.remove_global(g)
        for name in AD_MARKERS:  # differentiated: the declarations are dead (O0 keeps them)
            fn = model.functions.get(name)
            if fn is not None and not fn.uses:
                model.remove_function(fn)


def _rename_in_place(ref, new_name) -> bool:
    """Rename the functions of the LLVM module ``ref`` that ``new_name(function)`` names anew (the NVVM
    preserve's or restore's names) through LLVM, where each new name is one no global of ``ref`` has (LLVM
    would suffix a taken one; the Python model's passes point the uses at that global instead); False,
    renaming nothing, otherwise."""
    functions = list(ref.functions)
    renames = [(f, new) for f in functions if (new := new_name(f))]
    taken = {f.name for f in functions} | {g.name for g in ref.global_variables}
    new_names = {new for _, new in renames}
    if len(new_names) < len(renames) or new_names & taken:
        return False
    for f, new in renames:
        f.name = new
    return True


def _restores(ref, target) -> bool:
    """Whether :meth:`EnzymePlugin.restore` has anything to change in the LLVM module ``ref``: a renamed
    function, a device-library mapping, or what :func:`_drops` finds."""
    return _drops(ref) or any(nvvm.restored_name(f.name, f.is_declaration, target) is not None for f in ref.functions)


def _drops(ref) -> bool:
    """Whether :meth:`EnzymePlugin.restore` has more than names to change in the LLVM module ``ref`` (through the
    Python model): a function ``noinline`` marked, a registration or marker global, a marker declaration."""
    for f in ref.functions:
        if f.name in AD_MARKERS or any(noinline.RECORD in a.decode(errors="replace") for a in f.attributes):
            return True
    return any(noinline.REGISTER in g.name or g.name in lower.ENZYME_MARKERS for g in ref.global_variables)
