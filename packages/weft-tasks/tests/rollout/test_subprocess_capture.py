"""Any harness gets its model calls captured: a subprocess harness with its own loop calls the
model at WEFT_MODEL_BASE_URL (the capture gateway in front of the scripted model server), and the
rollout's trace holds every call with token ids, tied to the transcript the harness reported."""

import sys
from pathlib import Path

import pytest

from weft_core.models import ViewMode
from weft_tasks.gateway import CaptureGateway
from weft_tasks.harness import SubprocessHarness
from weft_tasks.rollout import RolloutSettings, plan_rollouts, run_rollout, trace_ledger_problems
from weft_tasks.testing import ScriptedOpenAIServer, reference_replies

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

AGENT = str(Path(__file__).parent / "data" / "model_agent.py")


async def test_a_subprocess_harness_model_calls_are_captured(megamcp):
    client, graph = megamcp
    server = ScriptedOpenAIServer(reference_replies(graph))
    async with server.running() as url:
        gateway = CaptureGateway(url)
        async with gateway.running():
            harness = SubprocessHarness("mine", [sys.executable, AGENT], gateway=gateway)
            [plan] = plan_rollouts([graph], [(ViewMode.AGENTIC, "full")], ["mine"])
            trace = await run_rollout(
                plan,
                client,
                harness,
                settings=RolloutSettings(max_infra_retries=0),
                gateway=gateway,
            )
    assert trace.error is None, trace.error
    assert trace.final is not None and trace.final.passed
    assert trace_ledger_problems(trace.messages, trace.ledger) == []
    calls = trace.captured_calls
    assert len(calls) == len(server.requests) == 4
    assert all(c.has_token_ids and not c.stream for c in calls)
    # the harness reports its transcript without its system prompt: calls are still tied
    assert trace.messages[0].role == "user"
    assert [c.message_index for c in calls] == [1, 3, 5, 7]
    assert all(trace.messages[c.message_index].role == "assistant" for c in calls)
