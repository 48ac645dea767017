"""A read after earlier writes on its MCP still reports what they left unchanged (issue 11).

Long tasks write to most tables before their later reads; a read is stale only for the row
and fields an earlier node's completion conditions say it changed (or for a whole table whose
change no condition describes), never for a whole table because something in it was written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from weft_core.models import AtomicTask, DiffContains, Entity, FieldEquals, TaskNode
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.compose.composer import CompositionState, assemble
from weft_tasks.compose.staleness import changed_fields, still_reports

from .test_flows import CUSTOMER, CUSTOMERS, C, F, _bundle, _task

TICKETS = [
    {"ticket_id": "TIC-0001", "customer_id": "CUS-0002", "subject": "Broken login"},
    {"ticket_id": "TIC-0002", "customer_id": "CUS-0003", "subject": "Refund overdue"},
]


@pytest.fixture
def bundles(tmp_path: Path) -> dict[str, BundleView]:
    ticket = Entity(
        name="ticket",
        key="ticket_id",
        fields=[
            F("ticket_id", primary_key=True),
            F("customer_id", foreign_key="customer.customer_id"),
            F("subject"),
            F("priority"),
        ],
    )
    email = Entity(
        name="email",
        key="email_id",
        fields=[
            F("email_id", primary_key=True),
            F("customer_id", foreign_key="customer.customer_id"),
            F("subject"),
        ],
    )
    helpdesk = _bundle(
        tmp_path,
        "helpdesk",
        [CUSTOMER, ticket],
        [
            C("get_ticket", "read", "ticket", [("ticket_id", "ticket_id", "key")]),
            C(
                "update_ticket",
                "update",
                "ticket",
                [("ticket_id", "ticket_id", "key"), ("priority", "priority", "value")],
            ),
            C(
                "retitle_ticket",
                "update",
                "ticket",
                [("ticket_id", "ticket_id", "key"), ("subject", "subject", "value")],
            ),
        ],
        {"customer": CUSTOMERS, "ticket": TICKETS},
    )
    mailbox = _bundle(
        tmp_path,
        "mailbox",
        [CUSTOMER, email],
        [
            C(
                "send_email",
                "create",
                "email",
                [("customer_id", "customer_id", "reference"), ("subject", "subject", "value")],
            )
        ],
        {"customer": CUSTOMERS, "email": []},
    )
    return {"helpdesk": helpdesk, "mailbox": mailbox}


def _node(node_id: str, task: AtomicTask, checks: list[Any]) -> TaskNode:
    return TaskNode(id=node_id, task=task, intent=task.intent, checks=checks)


def _writer(bundles: dict[str, BundleView], tool: str) -> AtomicTask:
    t = _task(bundles["helpdesk"], tool, f"helpdesk.{tool}")
    return t.model_copy(update={"writes": True, "entities": ["ticket"]})


def test_changed_fields_are_read_from_the_conditions(bundles: dict[str, BundleView]) -> None:
    upd = _writer(bundles, "update_ticket")
    row = TICKETS[0]
    on_row = [
        DiffContains(table="ticket", change="update", where={"ticket_id": "TIC-0001"}),
        FieldEquals(
            table="ticket", where={"ticket_id": "TIC-0001"}, field="priority", value="high"
        ),
    ]
    assert changed_fields([_node("n1", upd, on_row)], "helpdesk", "ticket", row) == {"priority"}
    # another row changed: this one is untouched
    other = [DiffContains(table="ticket", change="update", where={"ticket_id": "TIC-0002"})]
    assert changed_fields([_node("n1", upd, other)], "helpdesk", "ticket", row) == set()
    # an insert changes no existing row
    new = [DiffContains(table="ticket", change="insert", where={"subject": "New"})]
    assert changed_fields([_node("n1", upd, new)], "helpdesk", "ticket", row) == set()
    # a delete of the row, or a change of it with no field named, is the whole row
    gone = [DiffContains(table="ticket", change="delete", where={"ticket_id": "TIC-0001"})]
    assert changed_fields([_node("n1", upd, gone)], "helpdesk", "ticket", row) == {"*"}
    vague = [DiffContains(table="ticket", change="update", where={"ticket_id": "TIC-0001"})]
    assert changed_fields([_node("n1", upd, vague)], "helpdesk", "ticket", row) == {"*"}
    # a write no condition describes may have changed any row of its tables
    assert changed_fields([_node("n1", upd, [])], "helpdesk", "ticket", row) == {"*"}
    # bound values name the row as well as literal ones
    bound = [
        DiffContains(table="ticket", change="update", where={"ticket_id": {"$binding": "t.id"}})
    ]
    nodes = [_node("n1", upd, bound)]
    assert changed_fields(nodes, "helpdesk", "ticket", row, {"t.id": "TIC-0002"}) == set()
    assert changed_fields(nodes, "helpdesk", "ticket", row, {"t.id": "TIC-0001"}) == {"*"}
    # other MCPs never make a row stale
    assert changed_fields(nodes, "mailbox", "ticket", row, {"t.id": "TIC-0001"}) == set()
    keep = still_reports([_node("n1", upd, on_row)], "helpdesk")
    assert keep("ticket", row, "subject") and not keep("ticket", row, "priority")


def _graph_inputs(bundles: dict[str, BundleView], first: AtomicTask) -> dict[str, Any]:
    get = _task(bundles["helpdesk"], "get_ticket", "helpdesk.get")
    send = _task(bundles["mailbox"], "send_email", "mailbox.send")
    state = CompositionState(
        graph_id="g", profile="Standard", objective="o", nodes_wanted=3, pool=[first, get, send]
    )
    graph = assemble(state, [first, get, send], bundles, None)
    return {i.name: i for i in graph.node("n3").inputs}


def test_a_read_after_a_write_of_other_fields_still_feeds_a_later_task(
    bundles: dict[str, BundleView],
) -> None:
    get = _task(bundles["helpdesk"], "get_ticket", "helpdesk.get")
    read_row = next(r for r in get.seed_rows["ticket"] if r["ticket_id"] == get.inputs[0].value)
    # an earlier node changes the priority of the very ticket the read reports
    upd = _writer(bundles, "update_ticket")
    assert {i.name: i.value for i in upd.inputs}["ticket_id"] == read_row["ticket_id"]
    fed = _graph_inputs(bundles, upd)["subject"]
    assert (fed.source, fed.from_node, fed.value) == ("upstream", "n2", read_row["subject"])
    # an earlier node that retitles that ticket: the subject the read reports is stale
    retitle = _writer(bundles, "retitle_ticket")
    assert _graph_inputs(bundles, retitle)["subject"].source == "given"
