"""Reference flows: a key one MCP's read reports feeds a task on another MCP (issue 11).

Two small interlinked MCPs built in memory, shaped like the examples (string keys, customers
seeded identically in both): a helpdesk whose tickets reference customers, and a mailbox that
sends email to a customer. Tasks come from the real templates, so the flows are reasoned over
the same contracts, entity models and fixture rows as a corpus run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from weft_core.models import (
    ArgMapping,
    AtomicTask,
    ContractSet,
    EdgeKind,
    Entity,
    EntityField,
    EntityModel,
    MCPSpec,
    RowExists,
    StateKind,
    ToolContract,
    ToolSpec,
)
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.atomic.synthesis import _draft_to_task
from weft_tasks.atomic.templates import draft_for_tool
from weft_tasks.compose.composer import CompositionState, compose_graph
from weft_tasks.compose.dag_checks import check_graph
from weft_tasks.compose.flows import identity, link_references, reported_ids
from weft_tasks.compose.selection import FlowIndex, execution_order

CUSTOMERS = [
    {"customer_id": "CUS-0001", "name": "Ashley Wells", "email": "ashley.wells@example.com"},
    {"customer_id": "CUS-0002", "name": "Tina Ellison", "email": "tina.ellison@example.com"},
    {"customer_id": "CUS-0003", "name": "Omar Haddad", "email": "omar.haddad@example.com"},
]


def F(name: str, type_: str = "string", **kw: Any) -> EntityField:
    return EntityField(name=name, type=type_, **kw)  # type: ignore[arg-type]


CUSTOMER = Entity(
    name="customer",
    key="customer_id",
    fields=[F("customer_id", primary_key=True), F("name"), F("email", unique=True)],
)


def C(tool: str, op: str, entity: str, maps: list[tuple[str, str, str]]) -> ToolContract:
    return ToolContract(
        tool=tool,
        state_kind=StateKind.DATABASE,
        operation=op,  # type: ignore[arg-type]
        entity=entity,
        mappings=[
            ArgMapping(argument=a, entity=entity, field=f, role=r)  # type: ignore[arg-type]
            for a, f, r in maps
        ],
        reads=[entity],
        writes=[entity] if op in ("create", "update", "action", "delete") else [],
    )


def _spec(name: str, contracts: list[ToolContract]) -> MCPSpec:
    tools = [
        ToolSpec(
            name=c.tool,
            input_schema={
                "type": "object",
                "properties": {m.argument: {"type": "string"} for m in c.mappings},
                "required": [m.argument for m in c.mappings],
            },
        )
        for c in contracts
    ]
    return MCPSpec(name=name, domain=name, tools=tools)


def _bundle(
    tmp: Path, name: str, entities: list[Entity], contracts: list[ToolContract], rows: Any
) -> BundleView:
    return BundleView(
        path=tmp / name,
        spec=_spec(name, contracts),
        entities=EntityModel(mcp=name, entities=entities),
        contracts=ContractSet(mcp=name, contracts=contracts),
        _rows=rows,
    )


@pytest.fixture
def bundles(tmp_path: Path) -> dict[str, BundleView]:
    ticket = Entity(
        name="ticket",
        key="ticket_id",
        fields=[
            F("ticket_id", primary_key=True),
            F("customer_id", foreign_key="customer.customer_id"),
            F("subject"),
        ],
    )
    email = Entity(
        name="email",
        key="email_id",
        fields=[
            F("email_id", primary_key=True),
            F("customer_id", foreign_key="customer.customer_id"),
            F("subject"),
            F("body"),
        ],
    )
    helpdesk = _bundle(
        tmp_path,
        "helpdesk",
        [CUSTOMER, ticket],
        [C("get_ticket", "read", "ticket", [("ticket_id", "ticket_id", "key")])],
        {
            "customer": CUSTOMERS,
            "ticket": [
                {"ticket_id": "TIC-0001", "customer_id": "CUS-0002", "subject": "Broken login"}
            ],
        },
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
                [
                    ("customer_id", "customer_id", "reference"),
                    ("subject", "subject", "value"),
                    ("body", "body", "value"),
                ],
            )
        ],
        {"customer": CUSTOMERS, "email": []},
    )
    return {"helpdesk": helpdesk, "mailbox": mailbox}


def _task(bundle: BundleView, tool: str, tid: str) -> AtomicTask:
    draft = draft_for_tool(bundle, tool, 0, compound=False)
    assert draft is not None
    return _draft_to_task(bundle.mcp, tid, draft)


def test_identity_follows_foreign_keys(bundles: dict[str, BundleView]) -> None:
    hd = bundles["helpdesk"]
    assert identity(hd, "ticket", "customer_id") == "customer.customer_id"
    assert identity(hd, "customer", "customer_id") == "customer.customer_id"
    assert identity(hd, "customer", "email") == "email"
    assert identity(hd, "ticket", "subject") is None


def test_a_read_reports_the_keys_of_its_row(bundles: dict[str, BundleView]) -> None:
    get = _task(bundles["helpdesk"], "get_ticket", "helpdesk.t1")
    found = dict(reported_ids(get, bundles["helpdesk"], 0))
    assert found["customer.customer_id"].value == "CUS-0002"  # the ticket's customer


def test_a_new_record_is_regrounded_on_the_object_found_elsewhere(
    bundles: dict[str, BundleView],
) -> None:
    get = _task(bundles["helpdesk"], "get_ticket", "helpdesk.t1")
    send = _task(bundles["mailbox"], "send_email", "mailbox.t1")
    assert {i.name: i.value for i in send.inputs}["customer_id"] == "CUS-0001"
    earlier = [("helpdesk", reported_ids(get, bundles["helpdesk"], 0))]
    moved, fed = link_references(send, bundles["mailbox"], earlier)
    assert fed["customer_id"].node == 0 and fed["customer_id"].output == "customer_id"
    assert {i.name: i.value for i in moved.inputs}["customer_id"] == "CUS-0002"
    # the mailbox's own row of that customer, not a copy of the old one renamed
    assert moved.seed_rows["customer"] == [CUSTOMERS[1]]
    exists = [c for c in moved.checks if isinstance(c, RowExists)]
    assert exists and exists[0].where["customer_id"] == "{{customer_id}}"
    # an object the mailbox does not hold cannot be the target: no flow, task unchanged
    earlier = [
        ("helpdesk", [(k, f.__class__(0, f.output, f.field, "CUS-0999")) for k, f in earlier[0][1]])
    ]
    same, fed = link_references(send, bundles["mailbox"], earlier)
    assert fed == {} and same == send
    # an input aligned to the graph's bound object is never moved to another object
    same, fed = link_references(
        send,
        bundles["mailbox"],
        [("helpdesk", reported_ids(get, bundles["helpdesk"], 0))],
        fixed={"customer_id"},
    )
    assert fed == {} and same == send


def test_composed_graph_carries_the_found_customer_across_mcps(
    bundles: dict[str, BundleView],
) -> None:
    get = _task(bundles["helpdesk"], "get_ticket", "helpdesk.t1")
    send = _task(bundles["mailbox"], "send_email", "mailbox.t1")
    state = compose_graph(
        CompositionState(
            graph_id="g",
            profile="Standard",
            objective="answer the ticket's customer",
            nodes_wanted=2,
            pool=[send, get],  # the consumer first: the order must still put the read first
        ),
        bundles,
    )
    graph = state.graph
    assert graph is not None and state.issues == [], [i.message for i in state.issues]
    assert check_graph(graph, {get.id, send.id}) == []
    first, second = (graph.node(n) for n in graph.order)
    assert first.task.mcp == "helpdesk" and second.task.mcp == "mailbox"
    fed = {i.name: i for i in second.inputs}["customer_id"]
    assert (fed.source, fed.from_node, fed.from_output) == ("upstream", first.id, "customer_id")
    assert fed.value == "CUS-0002"
    assert any(
        e.kind is EdgeKind.INFORMATION and (e.source, e.target) == (first.id, second.id)
        for e in graph.edges
    )
    # the user never states the customer: no given input of the task holds it
    given = {str(i.value) for n in graph.nodes for i in n.inputs if i.source == "given"}
    assert "CUS-0002" not in given
    # the node's checks verify the downstream use of the found value (by value, or through
    # the bound object the graph names it by)
    exists = next(c for c in second.checks if isinstance(c, RowExists))
    expected = exists.where["customer_id"]
    if isinstance(expected, dict):
        name, _, key = expected["$binding"].partition(".")
        expected = next(b.value[key] for b in graph.bindings if b.name == name)
    assert expected == "CUS-0002"
    assert "CUS-0001" not in str([c.model_dump() for c in second.checks])
    assert "CUS-0002" not in second.intent


def test_execution_order_puts_a_feeding_task_first(bundles: dict[str, BundleView]) -> None:
    get = _task(bundles["helpdesk"], "get_ticket", "helpdesk.t1")
    send = _task(bundles["mailbox"], "send_email", "mailbox.t1")
    flows = FlowIndex([get, send], bundles)
    assert flows.feeds(get, send) and not flows.feeds(send, get)
    # base order says mailbox first; the feed overrides it
    order = execution_order([send, get], lambda t: t.mcp != "mailbox", flows)
    assert [t.id for t in order] == [get.id, send.id]
