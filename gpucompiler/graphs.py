"""Small directed-graph algorithms on successor maps (job graphs, call graphs, control flow).

A graph is a mapping ``node -> iterable of successors``; a node that only
appears as a successor has none. Every walk is iterative (no recursion limit
on long chains of blocks) and visits successors in the order given, so
results are deterministic. The graphs the compiler builds are small (a
module's functions, a function's blocks, a job's nested jobs): these few
functions replace networkx, whose import alone cost more than a small
function's whole first compile (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import TypeVar

__all__ = ["Graph", "find_cycle", "immediate_dominators", "postorder", "strongly_connected_components"]

N = TypeVar("N", bound=Hashable)
#: a directed graph: each node's successors
Graph = Mapping[N, Iterable[N]]


def postorder(graph: Graph, source: N) -> list[N]:
    """The nodes reachable from ``source`` in depth-first post-order (``source`` last)."""
    seen, order = {source}, []
    work = [(source, iter(graph.get(source, ())))]
    while work:
        node, successors = work[-1]
        for s in successors:
            if s not in seen:
                seen.add(s)
                work.append((s, iter(graph.get(s, ()))))
                break
        else:
            work.pop()
            order.append(node)
    return order


def strongly_connected_components(graph: Graph) -> list[set[N]]:
    """Every strongly connected component of ``graph`` (Tarjan's algorithm), each found once."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    on_stack: set = set()
    components: list[set[N]] = []
    for root in graph:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(graph.get(root, ())))]
        while work:
            node, successors = work[-1]
            for s in successors:
                if s not in index:
                    index[s] = low[s] = len(index)
                    stack.append(s)
                    on_stack.add(s)
                    work.append((s, iter(graph.get(s, ()))))
                    break
                if s in on_stack:
                    low[node] = min(low[node], index[s])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    components.append(component)
    return components


def find_cycle(graph: Graph, source: N) -> list[N] | None:
    """The nodes of the first cycle a depth-first walk from ``source`` closes (``[a, b]`` for
    ``a -> b -> a``), or ``None`` when no cycle is reachable from ``source``."""
    path, position, done = [source], {source: 0}, set()
    work = [iter(graph.get(source, ()))]
    while work:
        for s in work[-1]:
            if s in position:
                return path[position[s]:]
            if s not in done:
                position[s] = len(path)
                path.append(s)
                work.append(iter(graph.get(s, ())))
                break
        else:
            work.pop()
            node = path.pop()
            del position[node]
            done.add(node)
    return None


def immediate_dominators(graph: Graph, entry: N) -> dict[N, N]:
    """Each node reachable from ``entry`` -> its immediate dominator (``entry`` -> ``entry``).

    The iterative algorithm of Cooper, Harvey and Kennedy ("A Simple, Fast
    Dominance Algorithm", 2001) over reverse post-order."""
    order = postorder(graph, entry)
    number = {node: i for i, node in enumerate(order)}
    preds: dict = {node: [] for node in order}
    for node in order:
        for s in graph.get(node, ()):
            preds[s].append(node)
    idom = {entry: entry}

    def intersect(a, b):
        while a != b:
            while number[a] < number[b]:
                a = idom[a]
            while number[b] < number[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for node in reversed(order):
            if node == entry:
                continue
            new = None
            for p in preds[node]:
                if p in idom:
                    new = p if new is None else intersect(p, new)
            if idom.get(node) != new:
                idom[node] = new  # pyright: ignore[reportArgumentType]  (None until a predecessor is known)
                changed = True
    return idom
