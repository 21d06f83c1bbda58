"""The one plugin interface: target overlays of plugins, errors in call handlers, per-job state, the docs."""

from __future__ import annotations

import math
import re
from typing import ClassVar
from pathlib import Path

import pytest

import gpucompiler.interface as gi
import gpucompiler.plugin as gp
from gpucompiler import jit, types as T
from gpucompiler.errors import PluginError
from gpucompiler.interpreter.rules import Float, RuleSet
from gpucompiler.pipeline import compile

from .conftest import make_job

DOCS = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"

# -- a plugin's RuleSet(target=...) is an overlay: it applies on that target only ----------
PTX_ONLY = RuleSet("ptx_sin_overlay", target="ptx")


@PTX_ONLY.define(math.sin, Float, restype=lambda x: x)
def _forty_two(cg, args, argtypes, restype):
    return cg.const(T.float64, 42.0)


class PTXOverlayPlugin(gp.Plugin):
    name, version, rules = "ptx_sin_overlay", "1", PTX_ONLY


def sine(x):
    return math.sin(x)


@pytest.fixture
def registered():
    made = []

    def register(plugin):
        made.append(gp.register(plugin, replace=True).name)

    yield register
    for name in made:
        gp.unregister(name)


def test_a_plugin_overlay_for_ptx_does_not_apply_to_native_jobs(registered):
    registered(PTXOverlayPlugin)
    f = jit(sine, plugins=("ptx_sin_overlay",))
    assert f(0.5) == math.sin(0.5)  # the overlay's 42.0 belongs to PTX jobs


def test_a_plugin_overlay_for_ptx_applies_to_ptx_jobs(registered):
    from gpucompiler import kernel

    registered(PTXOverlayPlugin)

    def k(x, out):
        out[0] = math.sin(x)

    ir = kernel(k, plugins=("ptx_sin_overlay",)).inspect_llvm(T.float64, T.ArrayType(T.float64, 1, "C"))
    assert "4.200000e+01" in ir and "__nv_sin" not in ir


# -- an exception in a call handler names the plugin, the hook and the user's line ----------
BROKEN = RuleSet("broken_handler")


@BROKEN.handler
def _explode(interp, fn, args):
    if fn is math.cos:
        raise ValueError("boom")
    return None


class BrokenHandlerPlugin(gp.Plugin):
    name, version, rules = "broken_handler", "1", BROKEN


def cosine(x):
    y = x + 1.0
    return math.cos(y)  # the failing call's line


def test_an_exception_in_a_call_handler_is_a_plugin_error_at_the_users_line(registered):
    registered(BrokenHandlerPlugin)
    with pytest.raises(PluginError) as info:
        jit(cosine, plugins=("broken_handler",))(1.0)
    err = info.value
    line = cosine.__code__.co_firstlineno + 2
    assert (err.plugin, err.stage, err.callback) == ("broken_handler", "call handler", "_explode")
    assert err.loc[:2] == (__file__, line) and isinstance(err.cause, ValueError)
    assert str(err).startswith(f"{__file__}:{line}: plugin 'broken_handler' failed in call handler")


# -- per-job state: made by new_state, handed to the callbacks that take it --------------
class Counting(gp.Plugin):
    name, version = "counting_state", "1"

    def new_state(self, job):
        return {"job": job, "seen": []}

    @gp.callback("post_irgen")
    def first(self, job, module, state):
        assert state["job"] is job
        state["seen"].append("post_irgen")
        self.states.append(state)

    @gp.callback("emit")
    def last(self, state):
        state["seen"].append("emit")

    states: ClassVar[list] = []


def test_each_compile_has_its_own_plugin_state(registered):
    registered(Counting)
    Counting.states = []
    compile(make_job(plugins=("counting_state",)))
    compile(make_job(plugins=("counting_state",)))
    a, b = Counting.states
    assert a is not b and a["seen"] == b["seen"] == ["post_irgen", "emit"]


# -- one declared interface, every hook listed in docs/plugins.md --------------------------
def test_every_hook_and_hook_point_is_in_the_plugin_docs():
    text = DOCS.read_text()
    hooks = [n for n in vars(gi.Plugin) if not n.startswith("_")]
    assert sorted(hooks) == sorted(gi._HOOKS)
    missing = [h for h in (*hooks, *gi.HOOK_POINTS, *gi.EVENTS) if not re.search(rf"`{re.escape(h)}\b", text)]
    assert missing == []


def test_a_plain_class_plugin_gets_the_declared_defaults():
    class Plain:
        name, version = "plain", "1"

    p = Plain()
    assert gi.hook(p, "rules") is None and gi.hook(p, "report")(None) is None
    assert gi.hook(p, "cache_settings")() is None and gi.hook(p, "new_state")(None) is None
