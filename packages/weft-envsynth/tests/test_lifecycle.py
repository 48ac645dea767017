"""Status lifecycles from the definitions (lifecycle.py): which states each transition leaves,
refused in the backend and probed by validation."""

from __future__ import annotations

import pytest

from weft_core.models import MCPSpec, ToolSpec
from weft_envsynth import lifecycle
from weft_envsynth.analyze import analyze_programmatic, check_analysis


def _tool(name: str, props: dict, required: list[str] | None = None, desc: str = "") -> ToolSpec:
    return ToolSpec(
        name=name,
        description=desc,
        input_schema={"type": "object", "properties": props, "required": required or []},
    )


def _sources(spec: MCPSpec) -> dict[str, list[str]]:
    a = analyze_programmatic(spec)
    assert check_analysis(spec, a) == []
    return {e.tool: e.transitions[0].from_values for e in a.tools if e.transitions}


_ORDER_STATES = ["pending", "paid", "shipped", "delivered", "cancelled", "refunded"]


def _orders(cancel_desc: str = "Cancel an order.") -> MCPSpec:
    key = {"order_id": {"type": "string"}}
    return MCPSpec(
        name="shop",
        tools=[
            _tool(
                "create_order",
                {"customer_id": {"type": "string"}, "total": {"type": "number"}},
                ["customer_id"],
                "Place an order.",
            ),
            _tool(
                "list_orders",
                {"status": {"type": "string", "enum": _ORDER_STATES}},
                desc="List orders by status.",
            ),
            _tool("ship_order", key, ["order_id"], "Mark an order as shipped."),
            _tool("deliver_order", key, ["order_id"], "Mark an order as delivered."),
            _tool("cancel_order", key, ["order_id"], cancel_desc),
            _tool("refund_order", key, ["order_id"], "Refund an order."),
            _tool("close_order", key, ["order_id"], "Close an order."),
        ],
    )


def test_the_documented_states_order_the_lifecycle() -> None:
    src = _sources(_orders())
    # Paid orders ship; shipped ones are delivered; only what has not left can be cancelled.
    assert src["ship_order"] == ["paid"]
    assert src["deliver_order"] == ["shipped"]
    assert src["cancel_order"] == ["pending", "paid"]
    assert src["refund_order"] == ["paid", "shipped", "delivered"]
    # Nothing leaves a terminal state: a cancelled or refunded order is not closed (the old rule
    # let every transition leave "any other value").
    assert "cancelled" not in src["close_order"] and "refunded" not in src["close_order"]
    assert src["close_order"] == ["pending", "paid", "shipped", "delivered"]


def test_the_tools_own_words_come_first() -> None:
    # "has not shipped" excludes shipped and what follows it on the main line.
    src = _sources(_orders("Cancel an order that has not shipped yet."))
    assert src["cancel_order"] == ["pending", "paid"]
    src = _sources(_orders("Cancel an order. Only pending orders can be cancelled."))
    assert src["cancel_order"] == ["pending"]
    src = _sources(_orders("Cancel a paid or pending order (refunds the payment)."))
    assert src["cancel_order"] == ["pending", "paid"]


def test_undocumented_states_start_where_the_descriptions_say() -> None:
    key = {"request_id": {"type": "string"}}
    spec = MCPSpec(
        name="hr",
        tools=[
            _tool(
                "create_leave_request", {"days": {"type": "integer"}}, ["days"], "Request leave."
            ),
            _tool("approve_leave_request", key, ["request_id"], "Approve a pending leave request."),
            _tool("reject_leave_request", key, ["request_id"], "Reject a pending leave request."),
            _tool("create_employee", {"name": {"type": "string"}}, ["name"], "Hire someone."),
            _tool("terminate_employee", {"employee_id": {"type": "string"}}, ["employee_id"]),
        ],
    )
    a = analyze_programmatic(spec)
    leave = next(e for e in a.entities if e.name == "leave_request")
    assert (leave.field("status").enum or [])[0] == "pending"  # what a new request starts as
    assert _sources(spec)["approve_leave_request"] == ["pending"]
    assert _sources(spec)["reject_leave_request"] == ["pending"]  # an approved one stays approved
    employee = next(e for e in a.entities if e.name == "employee")
    assert employee.field("status").enum == ["active", "terminated"]


@pytest.mark.parametrize(
    ("verb", "to", "states", "expected"),
    [
        ("unfreeze", "active", ["active", "frozen", "closed"], ["frozen"]),
        ("freeze", "frozen", ["active", "frozen", "closed"], ["active"]),
        ("close", "closed", ["active", "frozen", "closed"], ["active", "frozen"]),
        ("reopen", "open", ["open", "in_progress", "resolved", "closed"], ["resolved", "closed"]),
        ("escalate", "escalated", ["open", "resolved", "closed", "escalated"], ["open"]),
        ("unlock", "unlocked", ["locked", "unlocked"], ["locked"]),
        ("archive", "archived", ["draft", "closed", "archived"], ["draft", "closed"]),
        # An unknown state word is an ordinary open state: never refused by a rule.
        ("close", "closed", ["triaged", "closed"], ["triaged"]),
        # No state fits the rule: the transition still leaves the live ones (never stuck).
        ("deliver", "delivered", ["cancelled", "delivered", "open"], ["open"]),
    ],
)
def test_verb_rules(verb: str, to: str, states: list[str], expected: list[str]) -> None:
    assert lifecycle.rule_sources(verb, to, states) == expected


def test_described_states_positive_and_negative() -> None:
    t = _tool(
        "cancel_order",
        {"order_id": {"type": "string", "description": "An order that is not yet shipped"}},
        desc="Cancel an order.",
    )
    pos, neg = lifecycle.described_states(t, "order", _ORDER_STATES)
    assert pos == set() and neg == {"shipped"}
    t = _tool("close_ticket", {}, desc="A ticket that is already closed cannot be closed again.")
    assert lifecycle.described_states(t, "ticket", ["open", "closed"]) == (set(), {"closed"})
    t = _tool("close_ticket", {}, desc="Closes any open or in-progress ticket.")
    pos, _ = lifecycle.described_states(t, "ticket", ["open", "in_progress", "closed"])
    assert pos == {"open", "in_progress"}


def test_hostile_definitions() -> None:
    # Contradictory words: a tool says it leaves only the state it leads to -> ignored, the rule
    # decides; a documented enum not naming the described state -> the documentation wins.
    spec = _orders("Cancel a cancelled order only.")
    assert _sources(spec)["cancel_order"] == ["pending", "paid"]
    spec = _orders("Cancel an archived order.")  # `archived` is not a documented state
    assert _sources(spec)["cancel_order"] == ["pending", "paid"]
    # No enum at all, no description, 50 parameters: one open state, still a working lifecycle.
    props = {f"p{i}": {"type": "string"} for i in range(50)}
    spec = MCPSpec(
        name="x",
        tools=[
            _tool("create_widget", props),
            _tool("cancel_widget", {"widget_id": {"type": "string"}}, ["widget_id"]),
        ],
    )
    assert _sources(spec)["cancel_widget"] == ["open"]


def test_check_analysis_catches_transitions_outside_the_states() -> None:
    spec = _orders()
    a = analyze_programmatic(spec)
    cancel = a.effect("cancel_order").transitions[0]
    cancel.from_values = ["pending", "lost_in_mail"]
    ship = a.effect("ship_order").transitions[0]
    ship.from_values = ["paid", "shipped"]
    problems = check_analysis(spec, a)
    assert any("'lost_in_mail'" in p and "cancel_order" in p for p in problems), problems
    assert any("ship_order" in p and "'shipped' for itself" in p for p in problems), problems
