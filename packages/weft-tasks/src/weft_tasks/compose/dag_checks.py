"""Deterministic checks of a composed task graph, and its stable topological order.

A graph passes when: every node uses one of the selected atomic tasks; entity bindings are
conflict-free; no node undoes what an earlier node did to the same object
(`weft_tasks.compose.lifecycle`); every input comes from the initial state (given, or retrieved by the node's own
tool chain) or from an upstream node's outcome; edges name existing nodes and form no cycle.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection
from typing import Literal

from pydantic import BaseModel

from weft_core.models import TaskGraph
from weft_tasks.atomic.execution import template_names
from weft_tasks.compose.lifecycle import TransitionGraph, contradictions

IssueKind = Literal[
    "unselected_task",
    "duplicate_node",
    "dangling_edge",
    "cycle",
    "binding_conflict",
    "unsourced_input",
    "contradiction",
    "invalid_output",
]

BINDING_KEY = "x-binding"


class GraphIssue(BaseModel):
    kind: IssueKind
    message: str
    node: str | None = None


def stable_order(graph: TaskGraph) -> list[str] | None:
    """Kahn's algorithm, ties broken by node position: the same graph always yields the same
    order. None when the edges have a cycle."""
    index = {n.id: i for i, n in enumerate(graph.nodes)}
    indeg = dict.fromkeys(index, 0)
    succ: dict[str, list[str]] = {n: [] for n in index}
    for e in graph.edges:
        if e.source in index and e.target in index:
            succ[e.source].append(e.target)
            indeg[e.target] += 1
    heap = [(index[n], n) for n, d in indeg.items() if d == 0]
    heapq.heapify(heap)
    order: list[str] = []
    while heap:
        _, n = heapq.heappop(heap)
        order.append(n)
        for m in succ[n]:
            indeg[m] -= 1
            if indeg[m] == 0:
                heapq.heappush(heap, (index[m], m))
    return order if len(order) == len(index) else None


def ancestors(graph: TaskGraph) -> dict[str, set[str]]:
    preds: dict[str, set[str]] = {n.id: set() for n in graph.nodes}
    for e in graph.edges:
        if e.target in preds and e.source in preds:
            preds[e.target].add(e.source)
    out: dict[str, set[str]] = {}

    def visit(n: str, trail: frozenset[str]) -> set[str]:
        if n in out:
            return out[n]
        acc: set[str] = set()
        for p in preds[n]:
            if p in trail:
                continue
            acc |= {p} | visit(p, trail | {p})
        out[n] = acc
        return acc

    for n in preds:
        visit(n, frozenset({n}))
    return out


def check_graph(
    graph: TaskGraph, selected: Collection[str], transitions: TransitionGraph | None = None
) -> list[GraphIssue]:
    """Every issue of `graph`; with `transitions` (the MCPs' lifecycles) also every pair of
    nodes where a later one undoes an earlier one's effect on the same object."""
    issues: list[GraphIssue] = []
    ids = [n.id for n in graph.nodes]
    dup = {i for i in ids if ids.count(i) > 1}
    for i in sorted(dup):
        issues.append(
            GraphIssue(
                kind="duplicate_node", node=i, message=f"node id {i!r} is used {ids.count(i)} times"
            )
        )
    chosen = set(selected)
    combination = {t.split(".")[0] for t in chosen}
    for n in graph.nodes:
        if n.task.id not in chosen:
            mcp = n.task.id.split(".")[0]
            outside = f" (MCP {mcp!r} is not in this combination)" if mcp not in combination else ""
            issues.append(
                GraphIssue(
                    kind="unselected_task",
                    node=n.id,
                    message=f"node {n.id} uses task {n.task.id!r}, which was not among the selected tasks{outside}",
                )
            )
    known = set(ids)
    for e in graph.edges:
        for end in (e.source, e.target):
            if end not in known:
                issues.append(
                    GraphIssue(
                        kind="dangling_edge",
                        message=f"edge {e.source}->{e.target} names unknown node {end!r}",
                    )
                )
        if e.source == e.target:
            issues.append(
                GraphIssue(
                    kind="cycle", node=e.source, message=f"node {e.source} depends on itself"
                )
            )
    if stable_order(graph) is None:
        issues.append(GraphIssue(kind="cycle", message="the dependency edges form a cycle"))
    issues += _binding_issues(graph)
    issues += _input_issues(graph)
    if transitions is not None:
        issues += [
            GraphIssue(kind="contradiction", node=c.second.node, message=c.message)
            for c in contradictions(graph, transitions)
        ]
    return issues


def _binding_issues(graph: TaskGraph) -> list[GraphIssue]:
    out: list[GraphIssue] = []
    names = [b.name for b in graph.bindings]
    for name in sorted({n for n in names if names.count(n) > 1}):
        out.append(
            GraphIssue(
                kind="binding_conflict",
                message=f"binding {name!r} is declared {names.count(name)} times",
            )
        )
    mcps = {n.task.mcp for n in graph.nodes}
    claimed: dict[tuple[str, str, str, str], str] = {}
    for b in graph.bindings:
        for mcp in b.refs:
            if mcp not in mcps:
                out.append(
                    GraphIssue(
                        kind="binding_conflict",
                        message=f"binding {b.name!r} refers to MCP {mcp!r}, which no node uses",
                    )
                )
        for key, value in b.value.items():
            for mcp, table in b.refs.items():
                slot = (mcp, table, key, repr(value))
                if slot in claimed and claimed[slot] != b.name:
                    out.append(
                        GraphIssue(
                            kind="binding_conflict",
                            message=f"{mcp}.{table} {key}={value!r} is bound to both {claimed[slot]!r} and {b.name!r}",
                        )
                    )
                claimed[slot] = b.name
    values = {b.name: b.value for b in graph.bindings}
    for n in graph.nodes:
        for i in n.inputs:
            ref = i.schema_.get(BINDING_KEY)
            if not ref:
                continue
            bname, _, key = str(ref).partition(".")
            if bname not in values or key not in values[bname]:
                out.append(
                    GraphIssue(
                        kind="binding_conflict",
                        node=n.id,
                        message=f"input {i.name} of {n.id} names unknown binding {ref!r}",
                    )
                )
            elif values[bname][key] != i.value:
                out.append(
                    GraphIssue(
                        kind="binding_conflict",
                        node=n.id,
                        message=f"input {i.name} of {n.id} is {i.value!r} but binding {ref} is {values[bname][key]!r}",
                    )
                )
    return out


def _input_issues(graph: TaskGraph) -> list[GraphIssue]:
    out: list[GraphIssue] = []
    up = ancestors(graph)
    nodes = {n.id: n for n in graph.nodes}
    for n in graph.nodes:
        # a retrieved input exists only once a call of the node has bound it
        names = {i.name for i in n.inputs if i.source != "retrieved"}
        bound: set[str] = set()
        for call in n.task.reference_calls:
            missing = template_names(call.arguments) - names - bound
            if missing:
                out.append(
                    GraphIssue(
                        kind="unsourced_input",
                        node=n.id,
                        message=f"{n.id}: call {call.tool} needs {sorted(missing)}, which no input or earlier call provides",
                    )
                )
            bound |= set(call.bind)
        for i in n.inputs:
            if i.source == "given" and i.value is None:
                out.append(
                    GraphIssue(
                        kind="unsourced_input",
                        node=n.id,
                        message=f"{n.id}: given input {i.name} has no value",
                    )
                )
            elif i.source == "retrieved" and i.name not in bound:
                out.append(
                    GraphIssue(
                        kind="unsourced_input",
                        node=n.id,
                        message=f"{n.id}: input {i.name} is marked retrieved but no call of the node retrieves it",
                    )
                )
            elif i.source == "upstream":
                src = nodes.get(i.from_node or "")
                if src is None or src.id not in up.get(n.id, set()):
                    out.append(
                        GraphIssue(
                            kind="unsourced_input",
                            node=n.id,
                            message=f"{n.id}: input {i.name} comes from {i.from_node!r}, which is not upstream of it",
                        )
                    )
                elif (i.from_output or "") not in src.outcomes:
                    out.append(
                        GraphIssue(
                            kind="unsourced_input",
                            node=n.id,
                            message=f"{n.id}: input {i.name} uses outcome {i.from_output!r}, which {src.id} does not produce",
                        )
                    )
    return out
