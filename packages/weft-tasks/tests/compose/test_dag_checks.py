from __future__ import annotations

from typing import Any

import pytest

from weft_core.models import EdgeKind, EntityBinding, TaskEdge, TaskGraph
from weft_tasks.compose.composer import CompositionState, compose_graph
from weft_tasks.compose.dag_checks import BINDING_KEY, check_graph, stable_order


def _pool(libraries: list[Any], *mcps: str) -> list[Any]:
    return [t for lib in libraries if lib.mcp in mcps for t in lib.tasks]


@pytest.fixture
def composed(libraries: list[Any]) -> tuple[TaskGraph, set[str]]:
    bundles = {
        lib.mcp: lib.bundle for lib in libraries if lib.mcp in ("crm", "helpdesk", "billing")
    }
    pool = _pool(libraries, "crm", "helpdesk", "billing")
    state = compose_graph(
        CompositionState(
            graph_id="g", profile="Complex", objective="serve Ada", nodes_wanted=6, pool=pool
        ),
        bundles,
    )
    assert state.graph is not None and state.issues == [], [i.message for i in state.issues]
    return state.graph, {t.id for t in pool}


def kinds(graph: TaskGraph, selected: set[str]) -> set[str]:
    return {i.kind for i in check_graph(graph, selected)}


def test_composed_graph_passes_and_links_mcps(composed: tuple[TaskGraph, set[str]]) -> None:
    graph, selected = composed
    assert check_graph(graph, selected) == []
    assert len(graph.mcps) == 3 and graph.bindings
    info = [e for e in graph.edges if e.kind is EdgeKind.INFORMATION]
    assert info, "the shared customer email flows from one MCP to another"
    src = graph.node(info[0].source)
    dst = graph.node(info[0].target)
    assert src.task.mcp != dst.task.mcp or src.id != dst.id
    upstream = [i for n in graph.nodes for i in n.inputs if i.source == "upstream"]
    # an upstream input is the bound object's key, or a value an earlier node found
    assert upstream and all(
        i.schema_.get(BINDING_KEY) or i.from_output in graph.node(i.from_node or "").outcomes
        for i in upstream
    )
    given = {str(i.value) for n in graph.nodes for i in n.inputs if i.source == "given"}
    fresh = [i for i in upstream if str(i.value) not in given]
    assert fresh, "some value reaches a later node without the user ever stating it"
    for n in graph.nodes:
        for i in n.inputs:
            if i.source == "upstream" and len(str(i.value)) >= 3:
                assert str(i.value) not in n.intent, "the intent names the step, not the value"
    assert graph.order == stable_order(graph)
    # checks name the bound object by reference, not by a copied value
    dumped = str([c.model_dump() for n in graph.nodes for c in n.checks])
    assert "$binding" in dumped


def test_unselected_task(composed: tuple[TaskGraph, set[str]]) -> None:
    graph, selected = composed
    assert kinds(graph, selected - {graph.nodes[0].task.id}) == {"unselected_task"}


def test_cycle_and_dangling_edges(composed: tuple[TaskGraph, set[str]]) -> None:
    graph, selected = composed
    a, b = graph.order[0], graph.order[-1]
    cyclic = graph.model_copy(
        update={"edges": [*graph.edges, TaskEdge(source=b, target=a, kind=EdgeKind.STATE)]}
    )
    assert "cycle" in kinds(cyclic, selected)
    assert stable_order(cyclic) is None
    selfloop = graph.model_copy(
        update={"edges": [TaskEdge(source=a, target=a, kind=EdgeKind.STATE)]}
    )
    assert "cycle" in kinds(selfloop, selected)
    dangling = graph.model_copy(
        update={"edges": [TaskEdge(source="n99", target=a, kind=EdgeKind.STATE)]}
    )
    assert "dangling_edge" in kinds(dangling, selected)


def test_binding_conflicts(composed: tuple[TaskGraph, set[str]]) -> None:
    graph, selected = composed
    b = graph.bindings[0]
    twice = graph.model_copy(update={"bindings": [b, b]})
    assert "binding_conflict" in kinds(twice, selected)
    other = EntityBinding(name="other", entity=b.entity, value=dict(b.value), refs=dict(b.refs))
    same_object = graph.model_copy(update={"bindings": [b, other]})
    assert "binding_conflict" in kinds(same_object, selected)
    foreign = b.model_copy(update={"refs": {**b.refs, "payroll": "employee"}})
    assert "binding_conflict" in kinds(graph.model_copy(update={"bindings": [foreign]}), selected)
    # an input claiming the binding but holding another value
    nodes = []
    for n in graph.nodes:
        inputs = [
            i.model_copy(update={"value": "someone.else@example.org"})
            if i.schema_.get(BINDING_KEY)
            else i
            for i in n.inputs
        ]
        nodes.append(n.model_copy(update={"inputs": inputs}))
    assert "binding_conflict" in kinds(graph.model_copy(update={"nodes": nodes}), selected)


def test_unsourced_inputs(composed: tuple[TaskGraph, set[str]]) -> None:
    graph, selected = composed
    up_node = next(n for n in graph.nodes if any(i.source == "upstream" for i in n.inputs))
    # an upstream input whose source is not upstream of it (edges removed)
    no_edges = graph.model_copy(update={"edges": []})
    assert "unsourced_input" in kinds(no_edges, selected)

    def patch(node_id: str, fn: Any) -> TaskGraph:
        nodes = [
            n.model_copy(update={"inputs": [fn(i) for i in n.inputs]}) if n.id == node_id else n
            for n in graph.nodes
        ]
        return graph.model_copy(update={"nodes": nodes})

    wrong_output = patch(
        up_node.id,
        lambda i: i.model_copy(update={"from_output": "nope"}) if i.source == "upstream" else i,
    )
    assert "unsourced_input" in kinds(wrong_output, selected)
    given_none = patch(
        graph.nodes[0].id,
        lambda i: i.model_copy(update={"value": None}) if i.source == "given" else i,
    )
    assert "unsourced_input" in kinds(given_none, selected)
    retrieved_nowhere = patch(
        graph.nodes[0].id, lambda i: i.model_copy(update={"source": "retrieved"})
    )
    assert "unsourced_input" in kinds(retrieved_nowhere, selected)
    missing = patch(graph.nodes[0].id, lambda i: i)
    first = missing.nodes[0]
    dropped = first.model_copy(update={"inputs": first.inputs[1:]})
    assert "unsourced_input" in kinds(
        missing.model_copy(update={"nodes": [dropped, *missing.nodes[1:]]}), selected
    )


def test_stable_order_is_deterministic_and_topological(
    composed: tuple[TaskGraph, set[str]],
) -> None:
    graph, _ = composed
    order = stable_order(graph)
    assert order == stable_order(graph.model_copy(update={"edges": list(reversed(graph.edges))}))
    pos = {n: i for i, n in enumerate(order or [])}
    assert all(pos[e.source] < pos[e.target] for e in graph.edges)
