import json
import sqlite3
import sys
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from weft_core.models import Disclosure
from weft_core.testing import tool_call_message
from weft_tasks.atomic.execution import TemplateError, render
from weft_tasks.harness import (
    Harness,
    HarnessConfigError,
    HarnessRuntimeError,
    HarnessTask,
    MCPEndpoint,
    ReActHarness,
    ReferenceChainTeacher,
    SubprocessHarness,
)
from weft_tasks.views import SimUser, build_view, sample_persona

pytestmark = pytest.mark.integration


def _row(db, sql, *args):
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchone()
    finally:
        conn.close()


def _task(graph, mode="agentic", disclosure="full"):
    view = build_view(graph, mode, disclosure)
    first = view.brief if mode == "agentic" else view.requests[0]
    return HarnessTask(graph=graph, view=view, first_request=first)


def test_harnesses_satisfy_the_protocol(scripted):
    assert isinstance(ReferenceChainTeacher(), Harness)
    assert isinstance(ReActHarness(scripted(["hi"])), Harness)


def test_templates_keep_types_and_fill_strings():
    scope = {"customer_id": 1, "customer": {"email": "a@b"}}
    assert render({"id": "{{customer_id}}"}, scope) == {"id": 1}
    assert render({"q": "mail {{customer.email}}!"}, scope) == {"q": "mail a@b!"}
    assert render(["{{customer.email}}"], {"customer.email": "flat"}) == ["flat"]  # exact first
    with pytest.raises(TemplateError, match="missing") as err:
        render({"x": "{{missing}}"}, scope)
    assert err.value.name == "missing"


async def test_teacher_solves_the_task_in_agentic_mode(graph, endpoints):
    turns = []

    async def on_turn(transcript):
        turns.append(len(transcript))
        return None

    run = await ReferenceChainTeacher().run(_task(graph), endpoints, on_turn)
    assert len(turns) == 1 and run.turns == 1
    assert _row(endpoints.db_paths["crm"], "SELECT tier FROM customer WHERE id=1") == ("gold",)
    assert _row(
        endpoints.db_paths["helpdesk"],
        "SELECT priority FROM ticket WHERE customer_email='ada@example.com'",
    ) == ("high",)
    names = [tc.function.name for m in run.messages if m.tool_calls for tc in m.tool_calls]
    assert names == [
        "crm_get_customer_by_email",
        "crm_update_customer_tier",
        "helpdesk_create_ticket",
    ]
    # The upstream customer_id was taken from the lookup's result, not from the task text.
    upgrade = next(
        m for m in run.messages if m.tool_calls and "tier" in m.tool_calls[0].function.arguments
    )
    assert json.loads(upgrade.tool_calls[0].function.arguments) == {
        "customer_id": 1,
        "tier": "gold",
    }
    assert {t["function"]["name"] for t in run.tools} >= set(names)


async def test_teacher_takes_one_node_per_simuser_turn(graph, endpoints):
    sim = SimUser(graph, Disclosure.PARTIAL, sample_persona(0))
    first = await sim.next_request()
    seen_tool_calls = []

    async def on_turn(transcript):
        seen_tool_calls.append(sum(len(m.tool_calls or []) for m in transcript))
        nxt = await sim.next_request()
        return nxt.request if nxt else None

    run = await ReferenceChainTeacher().run(
        HarnessTask(
            graph=graph, view=build_view(graph, "simuser", "partial"), first_request=first.request
        ),
        endpoints,
        on_turn,
    )
    assert seen_tool_calls == [1, 2, 3]
    assert [m.role for m in run.messages].count("user") == 3
    assert run.turns == 3


async def test_react_with_a_scripted_model_completes_the_task(graph, endpoints, scripted):
    model = scripted(
        [
            tool_call_message("crm_get_customer_by_email", {"email": "ada@example.com"}, id="c1"),
            tool_call_message(
                "crm_update_customer_tier", {"customer_id": 1, "tier": "gold"}, id="c2"
            ),
            tool_call_message(
                "helpdesk_create_ticket",
                {
                    "customer_email": "ada@example.com",
                    "subject": "Gold tier upgrade",
                    "priority": "high",
                },
                id="c3",
            ),
            AIMessage("Ada is now gold and ticket 2 is open."),
        ]
    )
    calls = []

    async def on_turn(transcript):
        calls.append(transcript)
        return None

    run = await ReActHarness(model).run(_task(graph), endpoints, on_turn)
    assert len(calls) == 1
    roles = [m.role for m in run.messages]
    assert roles[:2] == ["system", "user"] and roles.count("tool") == 3
    assert run.messages[-1].content == "Ada is now gold and ticket 2 is open."
    tool_msgs = [m for m in run.messages if m.role == "tool"]
    assert "gold" in tool_msgs[1].content
    assert _row(endpoints.db_paths["crm"], "SELECT tier FROM customer WHERE id=1") == ("gold",)


async def test_react_sees_tool_errors_and_recovers_within_the_turn(graph, endpoints, scripted):
    model = scripted(
        [
            tool_call_message(
                "crm_get_customer_by_email", {"email": "nobody@example.com"}, id="c1"
            ),
            tool_call_message("crm_get_customer_by_email", {"email": "ada@example.com"}, id="c2"),
            AIMessage("Found Ada, id 1."),
            tool_call_message(
                "crm_update_customer_tier", {"customer_id": 1, "tier": "gold"}, id="c3"
            ),
            AIMessage("Upgraded."),
        ]
    )
    requests = iter(["Now upgrade her to gold.", None])

    async def on_turn(transcript):
        return next(requests)

    run = await ReActHarness(model).run(_task(graph, "simuser"), endpoints, on_turn)
    tool_msgs = [m for m in run.messages if m.role == "tool"]
    assert "no customer" in tool_msgs[0].content
    assert run.turns == 2
    assert _row(endpoints.db_paths["crm"], "SELECT tier FROM customer WHERE id=1") == ("gold",)


async def test_a_wrong_token_is_an_exception_not_a_policy_message(graph, endpoints):
    bad = {k: MCPEndpoint(mcp=k, url=v.url, token="wrong") for k, v in endpoints.items()}

    async def on_turn(transcript):
        return None

    with pytest.raises(Exception):  # noqa: B017 - transport/auth failures propagate unchanged
        await ReferenceChainTeacher().run(_task(graph), bad, on_turn)


EXTERNAL = str(Path(__file__).parent / "data" / "external_agent.py")


@pytest.mark.slow  # a fresh Python process importing fastmcp: ~5-10 s here
async def test_subprocess_harness_runs_an_external_agent_over_the_endpoints(graph, endpoints):
    harness = SubprocessHarness("external", [sys.executable, EXTERNAL])
    turns = []

    async def on_turn(transcript):
        turns.append(transcript)
        return None

    run = await harness.run(_task(graph), endpoints, on_turn)
    assert run.model == "external-stand-in" and run.turns == 1
    assert [m.role for m in run.messages] == ["user"] + ["assistant", "tool"] * 3 + ["assistant"]
    assert _row(endpoints.db_paths["crm"], "SELECT tier FROM customer WHERE id=1") == ("gold",)


async def test_a_crashing_external_harness_is_a_clear_runtime_error(graph, endpoints):
    harness = SubprocessHarness(
        "external", [sys.executable, EXTERNAL], env={"EXTERNAL_AGENT_CRASH": "1"}
    )

    async def on_turn(transcript):
        return None

    with pytest.raises(HarnessRuntimeError, match="exited mid-turn"):
        await harness.run(_task(graph), endpoints, on_turn)
    with pytest.raises(HarnessConfigError):
        SubprocessHarness("x", [])
