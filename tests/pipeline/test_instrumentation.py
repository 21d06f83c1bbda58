"""The instrumentation plugin: a record per stage with time and IR size."""

from __future__ import annotations

from gpucompiler.pipeline import compile
from gpucompiler.stages import STAGE_NAMES

from .conftest import make_job

TWO_FUNCTIONS = """\
define internal i32 @helper(i32 %a) {
  %p = alloca i32
  store i32 %a, ptr %p
  %v = load i32, ptr %p
  ret i32 %v
}

define i32 @main_fn(i32 %a) {
  %r = call i32 @helper(i32 %a)
  %s = add i32 %r, 1
  ret i32 %s
}
"""


def test_report_has_every_stage_with_sizes():
    result = compile(make_job(TWO_FUNCTIONS, "main_fn", plugins=("instrumentation",)))
    report = result.reports["instrumentation"]
    assert [r.stage for r in report.stages] == list(STAGE_NAMES)
    assert [r.seconds for r in report.stages] == list(result.stage_times.values())
    # before optimisation: two functions, 4 + 3 instructions; after: helper inlined and dropped
    assert (report.stage("post_irgen").functions, report.stage("post_irgen").instructions) == (2, 7)
    assert (report.stage("optimize").functions, report.stage("optimize").instructions) == (1, 2)
    assert report.table().splitlines()[0].split() == ["stage", "ms", "functions", "instructions"]
    assert len(report.table().splitlines()) == len(STAGE_NAMES) + 1


def test_report_is_per_job_and_handed_over_once():
    first = compile(make_job(plugins=("instrumentation",)))
    second = compile(make_job(TWO_FUNCTIONS, "main_fn", plugins=("instrumentation",)))
    assert first.reports["instrumentation"].job_name == "add"
    assert second.reports["instrumentation"].stage("irgen").functions == 2
    assert "instrumentation" not in compile(make_job()).reports
