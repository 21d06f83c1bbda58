"""The stages of the pipeline (one module per stage) and the stage table.

The table itself, with the hook points plugin callbacks attach to, is part
of the plugin interface (:data:`gpucompiler.interface.STAGES`); it is
re-exported here for the driver.
"""

from ..interface import HOOK_POINTS, STAGE_INDEX, STAGE_NAMES, STAGE_OF_HOOK, STAGES, Stage, hook_spec_name

__all__ = ["HOOK_POINTS", "STAGE_INDEX", "STAGE_NAMES", "STAGE_OF_HOOK", "STAGES", "Stage", "hook_spec_name"]
