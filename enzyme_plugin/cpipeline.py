"""AD at Enzyme's place in LLVM's pipeline, for IR that clang produced with its optimiser off.

Enzyme's clang plugin differentiates inside the optimisation pipeline: a pass at the pipeline's
start keeps the functions that carry custom rules out of line, the simplification pipeline (the
inliner included) runs, AD runs at the optimiser's early extension point, and the rest of the
pipeline optimises the derivative with the program. For IR from ``clang -O<N> -Xclang
-disable-llvm-optzns -emit-llvm`` (the level's attributes set, no pass run) the same happens here::

    clang IR (no pass ran)
      -> rule-carrying functions noinline      __enzyme_register_*, __enzyme_function_like
      -> LLVM's O<N> pipeline                  their callers simplified, inlined, vectorized
      -> AD                                    every __enzyme_* call replaced; the rules apply
      -> noinline undone, O<N> again           the rules' functions may now be inlined

Where the engine has no rule for what the pipeline made of the code (an ``ADError``: doubles moved
through integers, masked vector memory), AD runs right after the early simplification instead
(SROA, instcombine, simplifycfg: :func:`~enzyme_plugin.ad.preprocess.prepare`), before any
inlining; an error there is the one raised. An error handler sees both errors.

Already-optimised IR (``clang -O2 -emit-llvm``) goes the way it always has (AD, then O2), where a rule's
function the inliner removed is refused. :func:`looks_unoptimised` tells the two apart.
"""

from __future__ import annotations

import re

from gpucompiler.contain import contained

from gpucompiler.llvm import Module, parse

from .ad import batch, custom, leftover, preprocess, splitmode
from .ad.errors import ADError
from .ad.c_interface import differentiate_here, differentiate_nested, iterations_marked, iterations_resolved
from .passes import noinline

#: function attributes only LLVM's optimiser infers (clang alone never sets them)
_INFERRED = re.compile(r"\b(?:nosync|nofree|norecurse|willreturn|memory\()")
_ATTRIBUTE_GROUP = re.compile(r"^attributes (#\d+) = \{(.*)\}$", re.M)
#: the attribute groups of a definition (declarations of intrinsics carry inferred attributes anyway)
_DEFINED_GROUPS = re.compile(r"^define [^\n]*?(#\d+)[^\n]*\{$", re.M)
#: an argument spilled to its stack slot in an entry block: what clang emits before SROA ran
_SPILL = re.compile(r"^\s*store \S+ (?:noundef )?%\d+, ptr %\d+", re.M)


def looks_unoptimised(text: str) -> bool:
    """Whether no LLVM pass ran on clang's IR ``text``: no definition with ``optnone`` (clang -O0
    without ``-disable-O0-optnone``) or an attribute only the optimiser infers, and arguments still
    spilled to stack slots. IR from elsewhere with neither sign takes the optimised route, as before."""
    defined = set(_DEFINED_GROUPS.findall(text))
    groups = [body for group, body in _ATTRIBUTE_GROUP.findall(text) if group in defined]
    if any("optnone" in g or _INFERRED.search(g) for g in groups):
        return False
    return _SPILL.search(text) is not None


def differentiate_in_pipeline(text: str, level: int = 2) -> str:
    """LLVM IR ``text`` (no pass ran) differentiated at Enzyme's place in LLVM's ``O<level>`` pipeline
    (see the module docstring); the result is verified. Runs in a child process, as
    :func:`enzyme_plugin.differentiate` does."""
    return contained(lambda: differentiate_in_pipeline_here(text, level).encode(), "the differentiation").decode()


def differentiate_in_pipeline_here(text: str, level: int = 2) -> str:
    """:func:`differentiate_in_pipeline` in this process (for a caller that contains it already)."""
    text = batch.lower_text(text)
    text = iterations_marked(splitmode.virtual_reverse_pairs(text))
    leftover.refuse_unknown(text)
    module = parse(text)
    keep_rules_out_of_line(module)
    marked = str(module)
    optimize = lambda t: preprocess.optimize(t, level)  # noqa: E731
    try:
        out = differentiate_nested(optimize(marked), optimize)
    except ADError:
        # what the pipeline made of the code (doubles moved as integers, masked vector memory...) has no
        # rule: AD right after the early simplification instead (the rules' functions are still there)
        out = differentiate_nested(marked, optimize)
    module = parse(out)
    noinline.restore(module)
    return leftover.check_output(preprocess.optimize(iterations_resolved(str(module)), level))


def keep_rules_out_of_line(module: Module) -> None:
    """``noinline`` (recorded, so that :func:`noinline.restore` undoes it) on every function with a
    registered rule or an ``__enzyme_function_like`` declaration: the inliner must not dissolve them
    before AD has seen their calls. The engine's checks run first: a rule's function the optimiser inlined
    already (optimised IR taken for IR no pass ran on) is refused, never hidden behind ``noinline``."""
    custom.check_globals(module)
    noinline.mark(module)
    for name in custom.function_like(module):
        fn = module.functions.get(name)
        if fn is not None and not fn.is_declaration and not fn.has_attribute("noinline"):
            fn.remove_attribute("alwaysinline")
            fn.add_attribute("noinline")
            fn.add_attribute(f'"{noinline.RECORD}"')


def differentiate_auto(text: str, level: int = 2, pre_opt: bool | None = None) -> str:
    """Either route in this process: in the pipeline when ``pre_opt`` (None: :func:`looks_unoptimised`),
    else AD on optimised IR (then O2, as :func:`enzyme_plugin.differentiate`)."""
    if pre_opt if pre_opt is not None else looks_unoptimised(text):
        return differentiate_in_pipeline_here(text, level)
    return differentiate_here(text)
