"""A launch tape's backward replayed as one CUDA graph.

A training loop records the same launches on the same arrays round after
round, and its ``backward`` makes the same seeds, copies and gradient
launches each time: a dozen host calls of 5-25 µs each, where the kernels
themselves take a few µs. So ``backward`` on a GPU keys its work by what
it touches: every gradient launch (its launcher, grid and block), the
address, shape, strides and dtype of every array it takes and of the tape's
own copies (reused from round to round), every scalar's value, the shadows
it zeroes first (those reused from the last recording), the seeds and the device. A backward whose key repeats the previous one's is captured
from a stream of its own (CuPy's stream capture) into a graph, launched at
once, and every later backward with that key is one launch of that graph;
any other key runs launch by launch and is remembered.

An address in the key is the memory the graph reads and writes, so a graph
never runs on memory its arrays no longer own: an array freed and another
allocated at the same address with the same layout is, to the graph, the
same memory, and anything else changes the key. The graph's stream waits
for CUDA's legacy default stream and is waited for by it (a blocking stream), as
the tape's copies and launches on the legacy stream are ordered. What takes
the launch-by-launch path instead: split mode (its reverse sweeps free the
tapes the recording made), the CPU grid emulation, arrays of another
library than CuPy or on a stream of their own, launches on a chosen device,
adjoints that are host arrays or arrays of another dtype or shape than their
array's (CuPy may add them through a temporary), and a backward whose gradient kernels
allocate on the device heap (their exhaustion flags are read after each
backward: a graph would hide them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gpucompiler.runtime import device_heap
from gpucompiler.runtime.arguments import SCALAR_TYPES

from .arrays import CupyOps
from .gradients import registered_gradient


def _memories(xs, ndarray: type) -> tuple | None:
    """What a graph takes of each of ``xs``: a CuPy array's address and layout, a scalar's type and value; None
    when one is anything else."""
    out = []
    for x in xs:
        tp = type(x)
        if tp is ndarray:
            out.append((x.data.ptr, x.shape, x.strides, x.dtype))
        elif tp in SCALAR_TYPES:
            out.append((tp, x))
        else:
            return None
    return tuple(out)


def graph_key(records: list, args_of: Callable[[Any], tuple], unzeroed: list, seeds: list, finals: list,
              repeats: Sequence = (), generation: int | None = None) -> tuple | None:
    """The key of a backward (see the module docstring), or None when it is not replayed as a graph.
    ``records``: the tape's; ``args_of``: a record's gradient arguments; ``unzeroed``: ``(array, shadow)`` the
    backward zeroes first; ``seeds``: ``(array, shadow, adjoint)``; ``finals``: ``(array, its copy, record)``; ``repeats``: the tape's ``Repeat`` of each
    record (None: none), each keeping the part of the key its record gave (``graph_part``) with the tape's
    ``generation`` then (None: keep none): the tape moves it on every launch that is not a repeat and every
    shadow or copy it makes anew, so while it stays, each repeated launch's record takes the same objects
    (no reference to them is kept: the tape reuses a shadow or copy only when nothing else holds it)."""
    if not records:
        return None
    ops = records[0].ops
    if type(ops) is not CupyOps or ops.current_stream() != 0:
        return None
    ndarray = ops.module.ndarray
    parts: list = []
    for i, r in enumerate(records):
        if r.split or r.stream != 0 or r.ops is not ops or r.launch.device is not None \
                or (r.reverse is not None and r.gradient is None) or registered_gradient(r.launch.kernel) is not r.hand:
            return None  # (a gradient registered since the recording: the backward launch by launch takes it)
        m = repeats[i] if i < len(repeats) and generation is not None else None
        known = m.graph_part if m is not None else None
        if known is not None and known[0] == generation and known[1] is r.gradient and known[2] is r.launch:
            parts.append(known[3])
            continue
        memory = _memories(args_of(r), ndarray) if r.reverse is not None else ()
        copies = _memories([v for _, v in r.snapshots], ndarray) if r.snapshots else ()
        if memory is None or copies is None:
            return None
        part = (r.gradient, r.launch.grid, r.launch.block, memory, tuple(j for j, _ in r.snapshots), copies)
        if m is not None:
            m.graph_part = (generation, r.gradient, r.launch, part)
        parts.append(part)
    part = _memories([shadow for _, shadow in unzeroed], ndarray)
    if part is None:
        return None
    parts.append(part)
    for _, shadow, g in seeds:
        if type(g) is ndarray and (g.dtype != shadow.dtype or g.shape != shadow.shape):
            return None  # (CuPy could make a temporary for it, which the graph would outlive)
        part = _memories((shadow, g), ndarray)
        if part is None:
            return None
        parts.append(part)
    for a, copy, _ in finals:
        part = _memories((a, copy), ndarray)
        if part is None:
            return None
        parts.append(part)
    return ops.module.cuda.Device().id, tuple(parts)


class GraphReplay:
    """The graph of the last backward key seen twice (see the module docstring)."""

    __slots__ = ("seen", "key", "graph", "streams", "refused")

    def __init__(self):
        self.seen: tuple | None = None  # the key of the last backward run launch by launch
        self.key: tuple | None = None  # the key of ``graph``
        self.graph: Any = None
        self.streams: dict[int, Any] = {}  # device -> the blocking stream graphs are captured from and run on
        self.refused: tuple | None = None  # a key whose capture launched kernels that use the device heap

    def run(self, key: tuple, cupy: Any, work: Callable[[int], None]) -> bool:
        """Replay the backward of ``key`` when its graph exists, or capture ``work`` (the backward's work,
        given a stream handle) into one when ``key`` repeats the last key seen (``cupy``: the module of the
        key's arrays); True when the graph ran, False when the caller runs the backward launch by launch."""
        if key == self.key:
            self.graph.launch(self.streams[key[0]])
            return True
        if key != self.seen or key == self.refused:
            self.seen = key
            return False
        stream = self.streams.get(key[0])
        if stream is None:
            stream = self.streams[key[0]] = cupy.cuda.Stream(non_blocking=False)
        noted = sum(c[3] for c in device_heap.PENDING.checks.values())
        with stream:
            stream.begin_capture()
            try:
                work(stream.ptr)
            except BaseException:
                try:
                    stream.end_capture()
                except Exception:  # the capture was invalidated by the error being raised
                    pass
                raise
            graph = stream.end_capture()
        if sum(c[3] for c in device_heap.PENDING.checks.values()) != noted:  # a launch with a heap flag
            self.refused, self.seen = key, None
            return False
        graph.launch(stream)
        self.key, self.graph, self.seen = key, graph, None
        return True


__all__ = ["GraphReplay", "graph_key"]
