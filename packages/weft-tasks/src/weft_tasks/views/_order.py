"""The stable topological order that governs disclosure and execution (paper §3.1.2)."""

from __future__ import annotations

from weft_core.models import TaskGraph
from weft_tasks.views._errors import ViewError


def disclosure_order(graph: TaskGraph) -> list[str]:
    """The graph's `order` when it is a valid topological order of its nodes, else a stable
    Kahn order (ties broken by node position) so two runs disclose identically."""
    ids = [n.id for n in graph.nodes]
    if len(set(ids)) != len(ids):
        raise ViewError(f"task {graph.id!r}: duplicate node ids")
    known = set(ids)
    preds: dict[str, set[str]] = {i: set() for i in ids}
    for edge in graph.edges:
        if edge.source not in known or edge.target not in known:
            raise ViewError(
                f"task {graph.id!r}: edge {edge.source!r} -> {edge.target!r} names an unknown node"
            )
        preds[edge.target].add(edge.source)
    for node in graph.nodes:
        for inp in node.inputs:
            if inp.source == "upstream" and inp.from_node:
                if inp.from_node not in known:
                    raise ViewError(
                        f"task {graph.id!r}: node {node.id!r} input {inp.name!r} comes from "
                        f"unknown node {inp.from_node!r}"
                    )
                preds[node.id].add(inp.from_node)
    if graph.order and sorted(graph.order) == sorted(ids) and _respects(graph.order, preds):
        return list(graph.order)
    done: list[str] = []
    remaining = list(ids)
    while remaining:
        ready = [i for i in remaining if preds[i] <= set(done)]
        if not ready:
            raise ViewError(f"task {graph.id!r}: dependency cycle among {sorted(remaining)}")
        done.append(ready[0])
        remaining.remove(ready[0])
    return done


def _respects(order: list[str], preds: dict[str, set[str]]) -> bool:
    pos = {n: i for i, n in enumerate(order)}
    return all(pos[p] < pos[n] for n, ps in preds.items() for p in ps)
