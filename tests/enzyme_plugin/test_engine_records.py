"""The mutable records the Enzyme plugin makes while it differentiates (its per-compile state, a loop's tape,
a select chain, an OpenMP region's model) are plain classes: an ``attrs`` class took ~0.3 ms to make at a
process's first compile."""

from __future__ import annotations

from typing import Any

import attrs

from enzyme_plugin.ad.openmp import _Model
from enzyme_plugin.ad.tape import Chain, LoopState
from enzyme_plugin.plugin import EnzymeJobState


def test_the_records_are_not_attrs_classes():
    assert [cls.__name__ for cls in (EnzymeJobState, LoopState, Chain, _Model) if attrs.has(cls)] == []


def test_each_record_starts_as_the_attrs_class_did():
    state = EnzymeJobState()
    assert (state.ran_ad, state.lowered, EnzymeJobState(ran_ad=True).ran_ad) == (False, None, True)
    v: Any = object()  # the records hold IR values without reading them
    a, b = LoopState(v, v, None, v, v), LoopState(v, v, v, v, v)
    a.exit_base["exit"] = v
    assert (b.exit_base, b.base_iter, b.flush, b.free, b.trip, b.kslot) == ({}, None, None, None, v, v)
    c, d = Chain(v, True, v, v), Chain(v, False, v, v)
    c.exit_last["exit"] = v
    assert (d.exit_last, d.takes_true) == ({}, False)
