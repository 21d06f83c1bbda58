"""The records a first compile's modules define (the code generator's reference lifetimes, the deferred
linking's job graph, the language's tables of NumPy constructors and NumPy functions' parameters, the PTX
target's block sums) are plain classes: an ``attrs`` class took ~0.3 ms to make at a process's first
compile; they behave as the ``attrs`` classes did."""

from __future__ import annotations

from typing import Any

import attrs

from gpucompiler.codegen.lifetimes import Lifetimes
from gpucompiler.language.numpy.creation import CONSTRUCTORS, Constructor
from gpucompiler.language.numpy.npcalls import Signature
from gpucompiler.stages.link_deferred import JobGraph
from gpucompiler.targets.ptx_blocksums import BlockSums, Flush, Site


def test_the_records_are_not_attrs_classes():
    records = (Lifetimes, JobGraph, Constructor, Signature, Site, Flush, BlockSums)
    assert [cls.__name__ for cls in records if attrs.has(cls)] == []


def test_each_record_has_its_own_containers():
    a, b = Lifetimes(), Lifetimes(params=["x"])
    a.after["i"] = ["v"]
    a.borrowed.add("w")
    assert (b.after, b.at_start, b.on_edge, b.params, b.borrowed) == ({}, {}, {}, ["x"], set())
    assert not Lifetimes().any() and Lifetimes(params=["x"]).any() and a.any()
    job: Any = object()  # the graph holds jobs without reading them
    g, h = JobGraph(jobs={"root": job}), JobGraph(jobs={})
    g.edges["root"] = ["j"]
    assert (h.edges, h.jobs, g.jobs) == ({}, {}, {"root": job})


def test_the_tables_records_keep_their_fields():
    sig = Signature(("a", "axis"), frozenset({"a"}))
    assert (sig.params, sig.supported, sig.method, Signature((), frozenset(), method=True).method) == (
        ("a", "axis"), frozenset({"a"}), False, True)
    assert list(CONSTRUCTORS["zeros"].params.parameters) == ["shape", "dtype", "order"]
