from __future__ import annotations

from typing import Any

from weft_core.models import (
    AtomicTask,
    EntityBinding,
    FieldEquals,
    ReturnContains,
    RowAbsent,
    StateTransition,
    TaskGraph,
    TaskInput,
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


def test_a_transition_applied_twice_is_caught() -> None:
    # ship needs pending/paid/cancelled: shipping a shipped order again is no transition
    g = _graph(_node("n1", _status("shipped")), _node("n2", _status("shipped")))
    found = contradictions(g, TRANSITIONS)
    assert [c.kind for c in found] == ["repeated"] and "again after n1" in found[0].message
    # an ordinary field set twice to the same value is no contradiction
    note = FieldEquals(table="order", where={"order_id": "O1"}, field="note", value="a")
    assert contradictions(_graph(_node("n1", note), _node("n2", note)), TRANSITIONS) == []


def _reader(nid: str, inputs: dict[str, Any], *checks: Any) -> TaskNode:
    row = {"order_id": "O1", "status": "paid", "note": "gift"}
    task = AtomicTask(
        id=f"t-{nid}", mcp="shop", intent="x", tool_chain=[], seed_rows={"order": [row]}
    )
    return TaskNode(
        id=nid,
        task=task,
        intent="x",
        inputs=[TaskInput(name=k, value=v) for k, v in inputs.items()],
        checks=list(checks),
    )


def test_a_read_of_what_an_earlier_node_removed_or_changed_is_stale() -> None:
    gone = RowAbsent(table="order", where={"order_id": "O1"})
    g = _graph(_node("n1", gone), _reader("n2", {"order_id": "O1"}))
    found = contradictions(g, TRANSITIONS)
    assert [c.kind for c in found] == ["stale"] and "n1 deleted" in found[0].message
    # listing the paid orders after n1 shipped the one the listing must report
    g = _graph(_node("n1", _status("shipped")), _reader("n2", {"status": "paid"}))
    found = contradictions(g, TRANSITIONS)
    assert [c.kind for c in found] == ["stale"] and "status='paid'" in found[0].message
    # an answer expected to show the value n1 changed
    shows = ReturnContains(tool="get_order", value="gift")
    note = FieldEquals(table="order", where={"order_id": "O1"}, field="note", value="rush")
    g = _graph(_node("n1", note), _reader("n2", {}, shows))
    assert [c.kind for c in contradictions(g, TRANSITIONS)] == ["stale"]


def test_a_read_that_does_not_depend_on_the_change_stays() -> None:
    # n2 reads the order by its id and reports its note: shipping it changes neither
    shows = ReturnContains(tool="get_order", value="gift")
    g = _graph(_node("n1", _status("shipped")), _reader("n2", {"order_id": "O1"}, shows))
    assert contradictions(g, TRANSITIONS) == []
    # reads before the change, and reads of another order, are never stale
    g = _graph(_reader("n1", {"status": "paid"}), _node("n2", _status("shipped")))
    assert contradictions(g, TRANSITIONS) == []
    other = _status("shipped", {"order_id": "O2"})
    assert (
        contradictions(_graph(_node("n1", other), _reader("n2", {"status": "paid"})), TRANSITIONS)
        == []
    )
