from __future__ import annotations

from typing import Any

from weft_core.models import (
    AtomicTask,
    EntityBinding,
    FieldEquals,
    RowAbsent,
    StateTransition,
    TaskGraph,
    TaskNode,
    ToolContract,
)
from weft_tasks.compose.lifecycle import TransitionGraph, contradictions


def _contract(tool: str, frm: list[str], to: str) -> ToolContract:
    return ToolContract(
        tool=tool,
        state_kind="database",
        operation="action",
        entity="order",
        transitions=[StateTransition(entity="order", field="status", from_values=frm, to_value=to)],
    )


# a permissive generated lifecycle (ship and cancel from almost anything), plus a one-way step
TRANSITIONS = TransitionGraph(
    {
        "shop": [
            _contract("ship_order", ["pending", "paid", "cancelled"], "shipped"),
            _contract("cancel_order", ["pending", "paid", "shipped"], "cancelled"),
            _contract("deliver_order", ["shipped"], "delivered"),
        ]
    }
)


def _node(nid: str, *checks: Any) -> TaskNode:
    task = AtomicTask(id=f"t-{nid}", mcp="shop", intent="x", tool_chain=[])
    return TaskNode(id=nid, task=task, intent="x", checks=list(checks))


def _status(value: str, where: Any = None) -> FieldEquals:
    return FieldEquals(
        table="order", where=where or {"order_id": "O1"}, field="status", value=value
    )


def _graph(*nodes: TaskNode, bindings: list[EntityBinding] | None = None) -> TaskGraph:
    return TaskGraph(
        id="g",
        objective="o",
        nodes=list(nodes),
        order=[n.id for n in nodes],
        bindings=bindings or [],
    )


def test_reversal_of_a_transition_is_caught() -> None:
    found = contradictions(
        _graph(_node("n1", _status("shipped")), _node("n2", _status("cancelled"))), TRANSITIONS
    )
    assert [c.kind for c in found] == ["reversal"]
    assert "n2" in found[0].message and "shipped" in found[0].message


def test_one_way_progression_is_allowed() -> None:
    g = _graph(_node("n1", _status("shipped")), _node("n2", _status("delivered")))
    assert contradictions(g, TRANSITIONS) == []


def test_other_objects_never_conflict() -> None:
    g = _graph(
        _node("n1", _status("shipped")), _node("n2", _status("cancelled", {"order_id": "O2"}))
    )
    assert contradictions(g, TRANSITIONS) == []


def test_binding_reference_and_literal_name_the_same_row() -> None:
    b = EntityBinding(
        name="order", entity="order", value={"order_id": "O1"}, refs={"shop": "order"}
    )
    g = _graph(
        _node("n1", _status("shipped", {"order_id": {"$binding": "order.order_id"}})),
        _node("n2", _status("cancelled")),
        bindings=[b],
    )
    assert [c.kind for c in contradictions(g, TRANSITIONS)] == ["reversal"]


def test_overwrite_and_delete_after_change() -> None:
    phone = FieldEquals(table="order", where={"order_id": "O1"}, field="note", value="a")
    phone2 = FieldEquals(table="order", where={"order_id": "O1"}, field="note", value="b")
    gone = RowAbsent(table="order", where={"order_id": "O1"})
    g = _graph(_node("n1", phone), _node("n2", phone2), _node("n3", gone))
    assert sorted(c.kind for c in contradictions(g, TRANSITIONS)) == [
        "overwrite",
        "undone",
        "undone",
    ]


def test_graph_check_reports_the_contradiction() -> None:
    from weft_tasks.compose.dag_checks import check_graph

    g = _graph(_node("n1", _status("shipped")), _node("n2", _status("cancelled")))
    issues = check_graph(g, {"t-n1", "t-n2"}, TRANSITIONS)
    assert [(i.kind, i.node) for i in issues] == [("contradiction", "n2")]
    assert check_graph(g, {"t-n1", "t-n2"}) == []  # without lifecycles, nothing to judge
