"""gpucompiler.graphs against networkx on random graphs (networkx is a test dependency only)."""

from __future__ import annotations

import random

import networkx as nx
import pytest

from gpucompiler import graphs


def random_graph(seed: int) -> dict[int, list[int]]:
    rng = random.Random(seed)
    n = rng.randint(1, 40)
    density = rng.choice([0.02, 0.05, 0.1, 0.3])
    return {a: [b for b in range(n) if rng.random() < density] for a in range(n)}


def as_networkx(graph: dict[int, list[int]]) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(graph)
    g.add_edges_from((a, b) for a, succ in graph.items() for b in succ)
    return g


SEEDS = range(150)


@pytest.mark.parametrize("seed", SEEDS)
def test_strongly_connected_components_match_networkx(seed):
    graph = random_graph(seed)
    ours = sorted(sorted(c) for c in graphs.strongly_connected_components(graph))
    theirs = sorted(sorted(c) for c in nx.strongly_connected_components(as_networkx(graph)))
    assert ours == theirs


@pytest.mark.parametrize("seed", SEEDS)
def test_postorder_matches_networkx(seed):
    graph = random_graph(seed)
    assert graphs.postorder(graph, 0) == list(nx.dfs_postorder_nodes(as_networkx(graph), 0))


@pytest.mark.parametrize("seed", SEEDS)
def test_immediate_dominators_match_networkx(seed):
    graph = random_graph(seed)
    theirs = dict(nx.immediate_dominators(as_networkx(graph), 0))
    theirs[0] = 0  # (networkx 3.5 leaves the entry out)
    assert graphs.immediate_dominators(graph, 0) == theirs


@pytest.mark.parametrize("seed", SEEDS)
def test_find_cycle_is_a_cycle_reachable_from_the_source_exactly_when_one_exists(seed):
    graph = random_graph(seed)
    g = as_networkx(graph)
    cycle = graphs.find_cycle(graph, 0)
    try:
        nx.find_cycle(g, source=0)
        expected = True
    except nx.NetworkXNoCycle:
        expected = False
    assert (cycle is not None) == expected
    if cycle is not None:
        assert len(set(cycle)) == len(cycle) and nx.has_path(g, 0, cycle[0])
        assert all(g.has_edge(a, b) for a, b in zip(cycle, cycle[1:] + cycle[:1]))


def test_walks_are_iterative_on_a_chain_longer_than_the_recursion_limit():
    n = 20_000
    chain = {i: [i + 1] for i in range(n)} | {n: [0]}
    assert graphs.postorder(chain, 0) == list(range(n, -1, -1))
    assert graphs.strongly_connected_components(chain) == [set(range(n + 1))]
    assert graphs.find_cycle(chain, 0) == list(range(n + 1))
    assert graphs.immediate_dominators(chain, 0)[n] == n - 1


def test_self_loop_is_a_cycle_and_a_lone_node_is_not():
    assert graphs.find_cycle({"a": ["a"]}, "a") == ["a"]
    assert graphs.find_cycle({"a": []}, "a") is None
    assert graphs.strongly_connected_components({"a": ["a"], "b": []}) == [{"a"}, {"b"}]
