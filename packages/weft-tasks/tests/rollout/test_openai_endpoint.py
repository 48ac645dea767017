"""`--model vllm:MODEL@URL`: ReAct on langchain-openai's ChatOpenAI against an OpenAI-compatible
endpoint on 127.0.0.1, through MegaMCP. The endpoint's "model" is the reference policy (no LLM
exists here), so the test exercises the real wire format: tool schemas sent, tool_calls with
JSON-string arguments parsed back, tool results returned as role=tool messages."""

import asyncio
import json
import socket
import time

import pytest
import pytest_asyncio
import uvicorn
from langchain_core.messages import convert_to_messages, convert_to_openai_messages
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from weft_core.llm import make_chat_model
from weft_core.models import ViewMode
from weft_tasks.harness import ReActHarness, ReferencePolicyModel
from weft_tasks.rollout import RolloutSettings, plan_rollouts, run_rollout, trace_ledger_problems

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest_asyncio.fixture(loop_scope="module")
async def endpoint(megamcp):
    client, graph = megamcp
    seen: list[dict] = []

    async def completions(request: Request) -> JSONResponse:
        body = await request.json()
        seen.append(body)
        mode = ViewMode.SIMUSER if body["model"].endswith("simuser") else ViewMode.AGENTIC
        policy = ReferencePolicyModel(graph=graph, mode=mode)
        reply = policy._next(convert_to_messages(body["messages"]))
        message = convert_to_openai_messages([reply])[0]
        if message.get("tool_calls"):
            message["content"] = None
        return JSONResponse(
            {
                "id": f"cmpl-{len(seen)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )

    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.02)
    yield client, graph, f"http://127.0.0.1:{port}/v1", seen
    server.should_exit = True
    await task


@pytest.mark.parametrize("mode", ["agentic", "simuser"])
async def test_react_on_an_openai_compatible_endpoint_completes_the_task(endpoint, mode):
    client, graph, url, seen = endpoint
    model = make_chat_model(f"vllm:policy-{mode}@{url}")
    harness = ReActHarness(model)
    plan = plan_rollouts([graph], [(mode, "partial")], ["react"])[0]
    trace = await run_rollout(plan, client, harness, settings=RolloutSettings(progress=False))
    assert trace.error is None, trace.error
    assert trace.model == f"policy-{mode}"
    assert trace.final.passed and all(s.outcome.passed for s in trace.segments)
    assert trace_ledger_problems(trace.messages, trace.ledger) == []
    # The endpoint received OpenAI tool definitions named <mcp>_<tool> and the tool results.
    tools = {t["function"]["name"] for t in seen[0]["tools"]}
    assert {"crm_get_customer_by_email", "helpdesk_create_ticket"} <= tools
    assert any(m["role"] == "tool" for body in seen for m in body["messages"])
    call = next(tc for m in trace.messages if m.tool_calls for tc in m.tool_calls)
    assert json.loads(call.function.arguments) == {"email": "ada@example.com"}
