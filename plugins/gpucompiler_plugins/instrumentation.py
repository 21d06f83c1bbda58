"""Instrumentation: time every stage and record the size of the IR after it.

Enable with ``CompilerConfig(plugins=("instrumentation",))``; the report is
``CompileResult.reports["instrumentation"]`` (an :class:`InstrumentationReport`),
one row per stage in running order.
"""

from __future__ import annotations

from typing import Any

import attrs

import gpucompiler.plugin as gp
from gpucompiler.module import IRModule


@attrs.frozen
class StageRecord:
    """One stage of one compile."""

    stage: str
    seconds: float
    """Wall time of the stage body (as measured by the driver)."""
    functions: int
    """Functions defined or declared in the module after the stage."""
    instructions: int
    """Instructions in all function bodies after the stage."""


@attrs.frozen
class InstrumentationReport:
    """Stage records of one job, in running order."""

    job_name: str
    stages: tuple[StageRecord, ...]

    def stage(self, name: str) -> StageRecord:
        """The record of stage ``name``."""
        return next(r for r in self.stages if r.stage == name)

    @property
    def total_seconds(self) -> float:
        return sum(r.seconds for r in self.stages)

    def table(self) -> str:
        """A plain-text table: stage, milliseconds, functions, instructions."""
        rows = [f"{'stage':<14}{'ms':>10}{'functions':>11}{'instructions':>14}"]
        rows += [f"{r.stage:<14}{r.seconds * 1e3:>10.3f}{r.functions:>11}{r.instructions:>14}"
                 for r in self.stages]
        return "\n".join(rows)


def ir_size(module: IRModule) -> tuple[int, int]:
    """``(functions, instructions)`` of ``module``."""
    functions = list(module.ref.functions)
    return len(functions), sum(len(list(b.instructions)) for f in functions for b in f.blocks)


class InstrumentationPlugin(gp.Plugin):
    """Records time and IR size per stage; ``report(job)`` hands the record over once."""

    name = "instrumentation"
    version = "1.0"

    def __init__(self) -> None:
        self._records: dict[Any, list[StageRecord]] = {}

    @gp.listener
    def stage_finished(self, job, stage, module, seconds):
        functions, instructions = ir_size(module) if module is not None else (0, 0)
        self._records.setdefault(job, []).append(StageRecord(stage, seconds, functions, instructions))

    def report(self, job) -> InstrumentationReport | None:
        records = self._records.pop(job, None)
        return None if records is None else InstrumentationReport(job.name, tuple(records))

    def load_report(self, data) -> InstrumentationReport:
        """The report of a cache hit, from the JSON data its entry keeps (``attrs.asdict`` of it)."""
        stages = tuple(StageRecord(str(r["stage"]), float(r["seconds"]), int(r["functions"]), int(r["instructions"]))
                       for r in data["stages"])
        return InstrumentationReport(str(data["job_name"]), stages)
