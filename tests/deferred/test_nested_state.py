"""A plugin's state of a nested job is linked to its parent's (``new_state(job, parent)``), and ``report``
gets the compile's state (``report(job, state)``); hooks written without those arguments still work."""

from __future__ import annotations

import attrs
import pytest

import deferred_funcs as F
import gpucompiler.plugin as gp
from gpucompiler import CompilerConfig, CompilerJob, NativeTarget
from gpucompiler import types as T
from gpucompiler.pipeline import compile
from gpucompiler.source import FunctionSpec


@attrs.define(eq=False)
class Node:
    job: str
    parent: Node | None
    irgen_done: bool = False

    def depth(self) -> int:
        return 0 if self.parent is None else 1 + self.parent.depth()


class Tree(gp.Plugin):
    name, version = "state_tree", "1"
    made: list = []  # noqa: RUF012  (a test's log)

    def new_state(self, job, parent):
        node = Node(job.name, parent)
        Tree.made.append(node)
        return node

    @gp.callback("post_irgen")
    def seen(self, state):
        state.irgen_done = True

    def report(self, job, state):
        return [(n.job, n.depth()) for n in Tree.made if n.irgen_done and (n is state or n.parent is not None)]


class OldStyle(gp.Plugin):
    name, version = "state_old", "1"

    def new_state(self, job):
        return {"job": job.name}

    def report(self, job):
        return "old"


@pytest.fixture
def plugins():
    for p in (Tree, OldStyle):
        gp.register(p, replace=True)
    yield
    for p in (Tree, OldStyle):
        gp.unregister(p.name)


def job_of(fn, *argtypes):
    return CompilerJob(FunctionSpec(fn, argtypes),
                       CompilerConfig(NativeTarget(), plugins=("mock_enzyme", "state_tree", "state_old")))


def test_nested_states_link_to_the_deferring_jobs_state(plugins):
    Tree.made = []
    result = compile(job_of(F.outer, T.float64))
    by_job = {n.job: n for n in Tree.made}
    root = by_job[result.job.name]
    assert root.parent is None
    middle = next(n for n in Tree.made if ".middle.deferred." in n.job)
    inner = next(n for n in Tree.made if ".inner.deferred." in n.job)
    assert middle.parent is root and inner.parent is middle  # the job that deferred it, not the root
    assert {(j.split(".deferred.")[0].rsplit(".", 1)[-1], d) for j, d in result.reports["state_tree"]} >= {
        ("middle", 1), ("inner", 2)}
    assert (result.job.name, 0) in result.reports["state_tree"]  # report got this compile's state
    assert result.reports["state_old"] == "old"
