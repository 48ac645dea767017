"""Ids created on one MCP, filed as references on another (issue 11).

A helpdesk that opens tickets and a mailbox whose emails name the ticket they answer
(`email.ticket_ref`, a plain text field: the ticket lives in the helpdesk's database). Tasks
come from the real templates; composition must mark the email's reference as the id the
ticket's create returns, and the replay's id must end up in the checks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from weft_core.models import EdgeKind, Entity, RowExists, TaskGraph
from weft_tasks.atomic.bundle import BundleView
from weft_tasks.compose.composer import CompositionState, compose_graph
from weft_tasks.compose.created import (
    Created,
    created_ids,
    id_references,
    is_placeholder,
    settle,
    unsettled,
)
from weft_tasks.compose.dag_checks import check_graph
from weft_tasks.compose.selection import FlowIndex, with_created_reference

from .test_flows import CUSTOMER, CUSTOMERS, C, F, _bundle, _task


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
            F("ticket_ref", description="Helpdesk ticket the email is about, e.g. TIC-0001."),
            F("folder", enum=["inbox", "sent"]),
        ],
    )
    helpdesk = _bundle(
        tmp_path,
        "helpdesk",
        [CUSTOMER, ticket],
        [
            C(
                "create_ticket",
                "create",
                "ticket",
                [("customer_id", "customer_id", "reference"), ("subject", "subject", "value")],
            )
        ],
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
                    ("ticket_ref", "ticket_ref", "value"),
                ],
            )
        ],
        {"customer": CUSTOMERS, "email": []},
    )
    return {"helpdesk": helpdesk, "mailbox": mailbox}


def test_a_reference_field_names_the_kind_of_object_it_refers_to(
    bundles: dict[str, BundleView],
) -> None:
    send = _task(bundles["mailbox"], "send_email", "mailbox.send")
    assert id_references(send, bundles["mailbox"]) == {"ticket_ref": "ticket"}
    make = _task(bundles["helpdesk"], "create_ticket", "helpdesk.make")
    made = created_ids(make, bundles["helpdesk"], 0)
    assert [(c.output, c.entity) for c in made] == [("ticket_id", "ticket")]
    assert made[0].placeholder == "<new ticket id from n1>" and is_placeholder(made[0].placeholder)
    # the subject is free text, not a reference; a create never refers to its own kind here
    assert id_references(make, bundles["helpdesk"]) == {}
    flows = FlowIndex([make, send], bundles)
    assert flows.feeds(make, send) and not flows.feeds(send, make)


def _composed(bundles: dict[str, BundleView]) -> TaskGraph:
    make = _task(bundles["helpdesk"], "create_ticket", "helpdesk.make")
    send = _task(bundles["mailbox"], "send_email", "mailbox.send")
    state = compose_graph(
        CompositionState(
            graph_id="g",
            profile="Standard",
            objective="open a ticket and mail the customer about it",
            nodes_wanted=2,
            pool=[send, make],  # the consumer first: the order must put the create first
        ),
        bundles,
    )
    assert state.graph is not None and state.issues == [], [i.message for i in state.issues]
    assert check_graph(state.graph, {make.id, send.id}) == []
    return state.graph


def test_the_created_id_feeds_the_reference_on_the_other_mcp(
    bundles: dict[str, BundleView],
) -> None:
    graph = _composed(bundles)
    first, second = (graph.node(n) for n in graph.order)
    assert first.task.mcp == "helpdesk" and second.task.mcp == "mailbox"
    ref = {i.name: i for i in second.inputs}["ticket_ref"]
    assert (ref.source, ref.from_node, ref.from_output) == ("upstream", first.id, "ticket_id")
    assert ref.value == "<new ticket id from n1>"
    assert any(
        e.kind is EdgeKind.INFORMATION and (e.source, e.target) == (first.id, second.id)
        for e in graph.edges
    )
    # the checks verify the downstream row holds the created id; the intent names the step
    exists = next(c for c in second.checks if isinstance(c, RowExists))
    assert exists.where["ticket_ref"] == "<new ticket id from n1>"
    assert "from step n1" in second.intent and "<new" not in second.intent
    assert unsettled(graph) == ["<new ticket id from n1>"]


def test_settle_puts_the_replayed_id_everywhere_the_placeholder_was(
    bundles: dict[str, BundleView],
) -> None:
    graph = _composed(bundles)
    assert settle(graph, {}) is graph  # nothing ran yet: nothing to settle
    done = settle(graph, {"n1": {"ticket_id": "TIC-0042"}})
    assert unsettled(done) == [] and "<new ticket id" not in done.model_dump_json()
    second = done.node(done.order[1])
    assert {i.name: i.value for i in second.inputs}["ticket_ref"] == "TIC-0042"
    exists = next(c for c in second.checks if isinstance(c, RowExists))
    assert exists.where["ticket_ref"] == "TIC-0042"
    assert settle(done, {"n1": {"ticket_id": "TIC-0043"}}) is done  # settled once, for good


def test_a_created_id_never_feeds_a_task_on_its_own_mcp(bundles: dict[str, BundleView]) -> None:
    from weft_tasks.compose.created import pick_created

    send = _task(bundles["mailbox"], "send_email", "mailbox.send")
    same = [("mailbox", [Created(0, "ticket_id", "ticket")])]
    assert pick_created(send, send.inputs, bundles["mailbox"], same) is None
    other = [("helpdesk", [Created(0, "ticket_id", "ticket")])]
    assert pick_created(send, send.inputs, bundles["mailbox"], other) == (
        "ticket_ref",
        Created(0, "ticket_id", "ticket"),
    )


def test_a_combination_without_a_filed_id_swaps_one_in(bundles: dict[str, BundleView]) -> None:

    make = _task(bundles["helpdesk"], "create_ticket", "helpdesk.make")
    send = _task(bundles["mailbox"], "send_email", "mailbox.send")
    # a second mailbox task that files no ticket: the email without the reference
    plain = send.model_copy(
        update={
            "id": "mailbox.plain",
            "tool_chain": ["send_email"],
            "inputs": [i for i in send.inputs if i.name != "ticket_ref"],
            "reference_calls": [
                c.model_copy(
                    update={
                        "arguments": {k: v for k, v in c.arguments.items() if k != "ticket_ref"}
                    }
                )
                for c in send.reference_calls
            ],
        }
    )
    flows = FlowIndex([make, send, plain], bundles)
    assert not flows.files_created([make, plain]) and flows.files_created([make, send])
    # same MCPs, same size; the email that files the new ticket takes the plain one's place
    swapped = with_created_reference([make, plain], [make, plain, send], set(), flows)
    assert [t.id for t in swapped] == ["helpdesk.make", "mailbox.send"]
    # nothing to swap in: unchanged
    assert with_created_reference([make, plain], [make, plain], set(), flows) == [make, plain]
    assert with_created_reference([make, plain], [make, plain, send], {"mailbox.send"}, flows) == [
        make,
        plain,
    ]


def test_the_pool_holds_a_create_and_a_task_that_files_its_id(
    bundles: dict[str, BundleView],
) -> None:
    from weft_tasks.atomic.library import LibraryManifest, MCPLibrary
    from weft_tasks.compose.sampler import Combination, CoverageSampler

    make = _task(bundles["helpdesk"], "create_ticket", "helpdesk.make")
    send = _task(bundles["mailbox"], "send_email", "mailbox.send")
    # other tasks of each MCP, none of which creates a ticket or files one
    fillers = {
        m: [
            t.model_copy(
                update={
                    "id": f"{m}.other{k}",
                    "outputs": {},
                    "inputs": [i for i in t.inputs if i.name != "ticket_ref"],
                    "reference_calls": [
                        c.model_copy(
                            update={
                                "bind": {},
                                "arguments": {
                                    a: v for a, v in c.arguments.items() if a != "ticket_ref"
                                },
                            }
                        )
                        for c in t.reference_calls
                    ],
                }
            )
            for k in range(3)
        ]
        for m, t in (("helpdesk", make), ("mailbox", send))
    }
    libs = [
        MCPLibrary(
            manifest=LibraryManifest(mcp=m, domain=m, bundle_path=m),
            tasks=[*fillers[m], t],
            bundle=bundles[m],
        )
        for m, t in (("helpdesk", make), ("mailbox", send))
    ]
    sampler = CoverageSampler(libs, surplus=0.5, seed=0)
    combo = Combination(mcps=["helpdesk", "mailbox"], domains=["helpdesk", "mailbox"], score=1)
    pool = sampler.draw(combo, 2)
    assert make in pool and send in pool and {t.mcp for t in pool} == {"helpdesk", "mailbox"}
    assert len(pool) == 3
    # one MCP alone files nothing across services: its pool is left as drawn
    solo = Combination(mcps=["mailbox"], domains=["mailbox"], score=1)
    drawn = [t for t in libs[1].tasks if t is not send][:2]
    assert sampler._with_filed_id(solo, drawn) is drawn


def test_a_reference_takes_only_a_reference_to_its_own_kind() -> None:
    from weft_tasks.compose.flows import Found, _fits

    ticket = Found(0, "event_ticket_ref", "ticket_ref", "TIC-0001")
    assert _fits("ticket_ref", ticket)
    assert not _fits("deal_ref", ticket)  # the suffix says "a reference", not to what
    assert not _fits("order_id", Found(0, "x", "customer_id", "CUS-0001"))
    # a word that names the kind of value still matches across entities
    assert _fits("shipping_address", Found(0, "x", "billing_address", "1 Main St"))


def test_a_probe_runs_only_up_to_the_last_create_a_placeholder_waits_for(
    bundles: dict[str, BundleView],
) -> None:
    from weft_tasks.compose.created import probe_prefix

    graph = _composed(bundles)
    assert probe_prefix(graph).order == graph.order[:1]  # the ticket's create, not the email
    assert probe_prefix(settle(graph, {"n1": {"ticket_id": "TIC-0042"}})).order == []


def test_the_objective_says_the_id_was_created_not_found(bundles: dict[str, BundleView]) -> None:
    from weft_tasks.compose.objective import objective_problems, write_objective

    graph = _composed(bundles)
    text = write_objective(graph, bundles)
    assert "using the ticket id created in helpdesk" in text, text
    assert "<new" not in text and objective_problems(text, graph, bundles) == []


def test_one_replay_request_carries_the_created_id_host_side(
    bundles: dict[str, BundleView],
) -> None:
    """The replay's batch (`replay_ops`): each node's names live in its own scope, and the
    reference fed by an upstream create refers to that create's bound output; the placeholder
    stays only as the literal a missing output falls back to, as in the per-node replay."""
    from weft_tasks.grounding.reachability import replay_ops

    graph = _composed(bundles)
    first, second = (graph.node(n) for n in graph.order)
    ops = replay_ops(graph, {"helpdesk": "hd", "mailbox": "mb"}, probe=False)
    assert [o["op"] for o in ops] == ["set", "call", "verify", "set", "call", "verify", "verify"]
    create, send = ops[1], ops[4]
    assert create["mcp"] == "hd" and send["mcp"] == "mb"
    assert "__n0__ticket_id" in create["bind"]
    assert ops[3]["refs"] == {"__n1__ticket_ref": "__n0__ticket_id"}
    assert ops[3]["values"]["__n1__ticket_ref"] == "<new ticket id from n1>"
    # every template of the consumer's call names its own scope
    assert "{{__n1__ticket_ref}}" in str(send["arguments"])
    assert "{{ticket_ref}}" not in str(send["arguments"])
    assert [o.get("checkpoint") for o in ops if o["op"] == "verify"] == [first.id, second.id, None]
    probe = replay_ops(graph, {}, probe=True)
    assert [o["op"] for o in probe] == ["set", "call", "set", "call"]
