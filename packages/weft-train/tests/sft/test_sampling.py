"""Prefix-preserving rejection sampling against a real MegaMCP host (snapshot/restore, server-side
verifier) with a scripted teacher that gets a turn wrong first."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage

from weft_core.testing import ScriptedChatModel, tool_call_message
from weft_train.sft.sampling import SamplingConfig, sample_trajectory

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

ADA = "ada@example.com"


def _calls(*calls: tuple[str, dict]) -> AIMessage:
    return AIMessage(
        "",
        tool_calls=[{"name": n, "args": a, "id": None, "type": "tool_call"} for n, a in calls],
    )


LOOKUP = [tool_call_message("crm_get_customer_by_email", {"email": ADA}), "Ada is customer 1."]
# Wrong: upgrades the other customer and opens a stray ticket; the n2 checkpoint fails.
WRONG_UPGRADE = [
    _calls(
        ("crm_update_customer_tier", {"customer_id": 2, "tier": "gold"}),
        ("helpdesk_create_ticket", {"customer_email": ADA, "subject": "stray", "priority": "low"}),
    ),
    "Upgraded.",
]
UPGRADE = [
    tool_call_message("crm_update_customer_tier", {"customer_id": 1, "tier": "gold"}),
    "Upgraded.",
]
TICKET = [
    tool_call_message(
        "helpdesk_create_ticket",
        {"customer_email": ADA, "subject": "Gold tier upgrade", "priority": "high"},
    ),
    # Read the final state back through the MCPs, so the test sees what the group holds.
    _calls(
        ("helpdesk_list_tickets", {"customer_email": ADA}),
        ("crm_get_customer_by_email", {"email": "alan@example.com"}),
    ),
    "Ticket opened.",
]


def _tool_results(trace, name):  # type: ignore[no-untyped-def]
    ids = {tc.id for m in trace.messages for tc in m.tool_calls or [] if tc.function.name == name}
    return [json.loads(m.content) for m in trace.messages if m.tool_call_id in ids]


async def test_restore_and_resample_leaves_no_trace_of_the_discarded_attempt(megamcp):
    client, graph = megamcp
    teacher = ScriptedChatModel([*LOOKUP, *WRONG_UPGRADE, *UPGRADE, *TICKET])
    got = await sample_trajectory(graph, client, teacher, SamplingConfig(method="prefix", k=1))
    assert got.accepted, got.trace.error
    assert [s.attempts for s in got.trace.segments] == [1, 2, 1]
    assert [s.teacher_calls for s in got.trace.segments] == [2, 4, 3]
    assert got.teacher_calls == teacher.calls == 9
    assert all(s.outcome is not None and s.outcome.passed for s in got.trace.segments)
    text = got.trace.model_dump_json()
    # The kept n2 turn's state diff (restored baseline) is its own upgrade, nothing discarded.
    n2 = got.trace.segments[1].state_diff
    assert n2 is not None and n2.since == "n1"
    assert {m for m, c in n2.mcps.items() if not c.empty} == {"crm"}
    updates = n2.mcps["crm"].db.tables["customer"].updates
    assert {k: u.changed["tier"].new for k, u in updates.items()} == {"1": "gold"}
    # History: the discarded attempt's calls, results and reply are gone.
    assert "stray" not in text and '"customer_id": 2' not in text
    # Ledger (restored with the state): only the kept calls, each tied to a kept message.
    served = [(e.mcp, e.tool) for e in got.trace.ledger]
    assert served == [
        ("crm", "get_customer_by_email"),
        ("crm", "update_customer_tier"),
        ("helpdesk", "create_ticket"),
        ("helpdesk", "list_tickets"),
        ("crm", "get_customer_by_email"),
    ]
    assert all(e.call_id for e in got.trace.ledger)
    # State: no stray ticket, the other customer untouched.
    (tickets,) = _tool_results(got.trace, "helpdesk_list_tickets")
    assert [t["priority"] for t in tickets] == ["high"]
    alan = _tool_results(got.trace, "crm_get_customer_by_email")[-1]
    assert alan["tier"] == "bronze"
    row = got.sft_row()
    assert [m.role for m in row.messages].count("assistant") == 7


async def test_turn_out_of_attempts_rejects_the_trajectory(megamcp):
    client, graph = megamcp
    teacher = ScriptedChatModel([*LOOKUP, *WRONG_UPGRADE, *WRONG_UPGRADE])
    got = await sample_trajectory(graph, client, teacher, SamplingConfig(method="prefix", k=1))
    assert not got.accepted
    assert got.rejected_at == "n2"
    assert [s.attempts for s in got.trace.segments] == [1, 2]
    with pytest.raises(ValueError, match="rejected"):
        got.sft_row()


async def test_end_to_end_retries_the_whole_task_from_the_initial_state(megamcp):
    client, graph = megamcp
    teacher = ScriptedChatModel([*LOOKUP, *WRONG_UPGRADE, *LOOKUP, *UPGRADE, *TICKET])
    got = await sample_trajectory(graph, client, teacher, SamplingConfig(method="end_to_end", k=1))
    assert got.accepted, got.trace.error
    assert got.attempts == 2
    assert got.teacher_calls == 2 + 2 + 2 + 2 + 3
    assert "stray" not in got.trace.model_dump_json()
    (tickets,) = _tool_results(got.trace, "helpdesk_list_tickets")
    assert [t["priority"] for t in tickets] == ["high"]
