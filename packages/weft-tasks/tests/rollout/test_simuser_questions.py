"""A harness that asks the simulated user mid-turn, on a real MegaMCP host: the user answers from
what it holds, the turn goes on, and only the reply that asks nothing ends it (and verifies it)."""

import json
import re

import pytest

from weft_core.models import ChatMessage, ToolCall, ToolCallFunction, ViewMode
from weft_tasks.harness.mcp_tools import group_client, result_text, result_value
from weft_tasks.harness.protocol import HarnessRun
from weft_tasks.rollout import RolloutSettings, plan_rollouts, run_rollout, trace_ledger_problems
from weft_tasks.views import PERSONAS

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

QUIET = RolloutSettings(progress=False, retry_backoff_s=0.0)
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


class AskingHarness:
    """Solves the sample task, but does not read the first request: it asks the user for the
    customer's email (after one question about a later step) and uses the email it is told."""

    name = "asking"
    modes = frozenset({ViewMode.SIMUSER})
    model_name = "asking-script"

    def __init__(self) -> None:
        self.answers: list[str] = []

    async def run(self, task, endpoints, on_turn):
        messages = [ChatMessage(role="user", content=task.first_request)]
        n = 0

        async def call(tool, args):
            nonlocal n
            n += 1
            cid = f"q{n}"
            fn = ToolCallFunction(name=tool, arguments=json.dumps(args, sort_keys=True))
            messages.append(
                ChatMessage(role="assistant", tool_calls=[ToolCall(id=cid, function=fn)])
            )
            result = await group.call_tool(tool, args, raise_on_error=False)
            messages.append(
                ChatMessage(
                    role="tool", tool_call_id=cid, name=tool, content=result_text(result.content)
                )
            )
            return result_value(result)

        async def say(text):
            messages.append(ChatMessage(role="assistant", content=text))
            reply = await on_turn(list(messages))
            if reply is not None:
                messages.append(ChatMessage(role="user", content=reply))
            return reply

        group = group_client(endpoints)
        async with group:
            self.answers.append(await say("Before I start: what priority should the ticket get?"))
            self.answers.append(await say("What is the email address of the customer?"))
            email = EMAIL.search(self.answers[-1]).group(0)
            customer = await call("crm_get_customer_by_email", {"email": email})
            await say(f"Found customer {customer['id']}.")
            await call("crm_update_customer_tier", {"customer_id": customer["id"], "tier": "gold"})
            await say("The customer is on the gold tier now.")
            ticket = await call(
                "helpdesk_create_ticket",
                {"customer_email": email, "subject": "Gold tier upgrade", "priority": "high"},
            )
            await say(f"Opened ticket {ticket['id']}.")
        return HarnessRun(messages=messages, model=self.model_name, turns=3)


class StubbornHarness:
    """Asks the user again and again in the first turn and never acts."""

    name = "stubborn"
    modes = frozenset({ViewMode.SIMUSER})
    model_name = "stubborn-script"

    async def run(self, task, endpoints, on_turn):
        messages = [ChatMessage(role="user", content=task.first_request)]
        for i in range(10):
            messages.append(ChatMessage(role="assistant", content=f"Question {i}: which email?"))
            reply = await on_turn(list(messages))
            if reply is None:
                break
            messages.append(ChatMessage(role="user", content=reply))
            if "Upgrade" in reply or "upgrade" in reply:
                break  # the next turn's request: the user moved on
        return HarnessRun(messages=messages, model=self.model_name, turns=1)


def _plan(graph, harness, disclosure="vague"):
    return plan_rollouts([graph], [("simuser", disclosure)], [harness])[0]


async def test_a_question_mid_turn_is_answered_and_the_turn_verifies_after_it(megamcp):
    client, graph = megamcp
    harness = AskingHarness()
    trace = await run_rollout(_plan(graph, "asking"), client, harness, settings=QUIET)
    assert trace.error is None, trace.error
    later, email = harness.answers[:2]
    # the ticket's priority belongs to the third turn: the user does not say it in the first
    assert "high" not in later.lower()
    assert "ada@example.com" in email
    # the answers are in the transcript, inside the first turn's segment, and no checkpoint ran
    # on a question: one segment per node, each passed
    assert [s.node_id for s in trace.segments] == ["n1", "n2", "n3"]
    assert all(s.outcome.passed for s in trace.segments), trace.segments
    assert trace.final.passed and trace.reward == 1.0
    first = trace.segments[0]
    turn_one = [m.content for m in trace.messages[first.start : first.end] if m.role == "user"]
    assert turn_one[1:] == [later, email]
    assert trace.messages[first.end - 1].content == "Found customer 1."
    assert first.ledger_seqs == {"crm": [0]}
    assert trace_ledger_problems(trace.messages, trace.ledger) == []


async def test_a_harness_that_only_asks_ends_its_turn_when_patience_runs_out(megamcp):
    client, graph = megamcp
    trace = await run_rollout(_plan(graph, "stubborn"), client, StubbornHarness(), settings=QUIET)
    users = [m.content for m in trace.messages if m.role == "user"]
    insists = {p.insist for p in PERSONAS}
    # answers, then one insistence, then the next turn's request
    assert sum(u in insists for u in users) == 1
    at = next(i for i, u in enumerate(users) if u in insists)
    assert at == len(users) - 2 and "gold" in users[-1]
    # the first turn ended on the last question and was verified then: nothing was done
    assert trace.segments[0].outcome is not None and not trace.segments[0].outcome.passed


async def test_an_llm_user_answers_in_a_rollout_and_a_leaking_answer_is_replaced(megamcp):
    from weft_core.testing import ScriptedChatModel

    client, graph = megamcp
    leak = '{"answer": "It will be high priority, and the email is ada@example.com."}'
    simulator = ScriptedChatModel(
        [
            '{"request": "Hi, please find the account of ada@example.com for me."}',
            leak,  # the question about the ticket: leaks turn 3's priority twice -> the rules
            leak,
            '{"answer": "Sure: ada@example.com."}',
            '{"request": "Now upgrade that customer to the gold tier."}',
            '{"request": "Open a high-priority ticket for ada@example.com titled Gold tier upgrade."}',
        ]
    )
    harness = AskingHarness()
    trace = await run_rollout(
        _plan(graph, "asking"), client, harness, settings=QUIET, simulator_model=simulator
    )
    assert trace.error is None and trace.final.passed
    later, email = harness.answers[:2]
    assert "high" not in later.lower() and email == "Sure: ada@example.com."
    assert simulator.remaining == 0
