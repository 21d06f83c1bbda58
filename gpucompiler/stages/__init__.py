"""The stages of the pipeline, in order: the table every other part reads.

Each stage has a name (used for timing, dumps and instrumentation) and the
*hook points* plugin callbacks can attach to. Most stages have one hook point
named after the stage; ``optimize`` has three extension points
(``optimize.early``, ``optimize.late``, ``optimize.last``) and ``irgen`` has
none (``post_irgen`` is where plugins first see the module).
"""

from __future__ import annotations

import attrs


@attrs.frozen
class Stage:
    """One row of the stage table."""

    name: str
    """Stage name: timing key, dump file component, instrumentation label."""
    hooks: tuple[str, ...]
    """Hook points callbacks may name, in the order they run within the stage."""
    summary: str
    """When the hook points run, for docs and ``gpuc plugins``."""


STAGES: tuple[Stage, ...] = (
    Stage("irgen", (), "source -> LLVM IR; then target.prepare (triple, data layout)"),
    Stage("post_irgen", ("post_irgen",), "callbacks on the freshly generated module"),
    Stage("link_deferred", ("link_deferred",), "deferred jobs linked (callbacks run after linking)"),
    Stage("optimize", ("optimize.early", "optimize.late", "optimize.last"),
          "early callbacks; default O-level pipeline; late callbacks + cleanup; last callbacks"),
    Stage("pre_ad", ("pre_ad",), "callbacks before automatic differentiation"),
    Stage("ad", ("ad",), "automatic differentiation (done by plugins, e.g. marker-gated)"),
    Stage("post_ad", ("post_ad",), "callbacks after automatic differentiation"),
    Stage("finish", ("finish",), "target.finish (lowering), then callbacks"),
    Stage("validate", ("validate",), "callbacks, then target.validate (raises InvalidIRError)"),
    Stage("emit", ("emit",), "callbacks, then target.emit for each requested kind"),
)

STAGE_NAMES: tuple[str, ...] = tuple(s.name for s in STAGES)
HOOK_POINTS: tuple[str, ...] = tuple(h for s in STAGES for h in s.hooks)
STAGE_INDEX: dict[str, int] = {s.name: i for i, s in enumerate(STAGES)}
STAGE_OF_HOOK: dict[str, str] = {h: s.name for s in STAGES for h in s.hooks}


def hook_spec_name(point: str) -> str:
    """The pluggy hook name of a hook point: ``optimize.late`` -> ``gpuc_optimize_late``."""
    return "gpuc_" + point.replace(".", "_")
