"""The capture gateway between a real OpenAI client and the scripted OpenAI-compatible server,
both on 127.0.0.1: streaming and JSON answers relayed unchanged, every call recorded with token
ids, forced fields dropped for an upstream that refuses them, failures recorded."""

import asyncio
import json
import re

import httpx
import pytest
from openai import AsyncOpenAI

from weft_tasks.gateway import CaptureGateway, merge_calls, tie_calls, transcript_of
from weft_tasks.testing import ByteChatTemplate, ScriptedOpenAIServer

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "mcp__crm__get_customer",
            "description": "Find a customer by email.",
            "parameters": {"type": "object", "properties": {"email": {"type": "string"}}},
        },
    }
]


def call_then_answer(messages, tools):
    """Call the tool once (decided from the first user message on), then answer."""
    first = next(i for i, m in enumerate(messages) if m["role"] == "user")
    if not any(m["role"] == "tool" for m in messages[first:]):
        return {
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{len(messages)}",
                    "type": "function",
                    "function": {
                        "name": tools[0]["function"]["name"],
                        "arguments": json.dumps({"email": "ada@example.com"}),
                    },
                }
            ],
        }
    return {"content": "Ada's account is C-1, tier gold."}


async def _episode(client: AsyncOpenAI, *, stream: bool, reserialize: bool = False):
    """A two-call tool loop as a harness runs it; returns the transcript it sent."""
    messages = [
        {"role": "system", "content": "You operate a CRM."},
        {"role": "user", "content": "What tier is ada@example.com?"},
    ]
    for _ in range(2):
        if stream:
            pieces = await client.chat.completions.create(
                model="m",
                messages=messages,
                tools=TOOLS,
                stream=True,
                stream_options={"include_usage": True},
            )
            content, calls = "", {}
            async for chunk in pieces:
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                content += delta.content or ""
                for tc in delta.tool_calls or []:
                    slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                    slot["id"] = tc.id or slot["id"]
                    slot["name"] += (tc.function.name or "") if tc.function else ""
                    slot["arguments"] += (tc.function.arguments or "") if tc.function else ""
            message = {"role": "assistant", "content": content or None}
            if calls:
                message["tool_calls"] = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    }
                    for c in calls.values()
                ]
        else:
            reply = await client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
            message = reply.choices[0].message.model_dump(exclude_none=True)
            message.setdefault("content", None)
        if reserialize and message.get("tool_calls"):
            for c in message["tool_calls"]:  # the way some harnesses store arguments
                c["function"]["arguments"] = json.dumps(
                    json.loads(c["function"]["arguments"]), indent=1
                )
        messages.append(message)
        if not message.get("tool_calls"):
            return messages
        for c in message["tool_calls"]:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": c["id"],
                    "content": '{"id": "C-1", "tier": "gold"}',
                }
            )
    return messages


@pytest.fixture
async def served():
    upstream = ScriptedOpenAIServer(call_then_answer)
    async with upstream.running() as url:
        gateway = CaptureGateway(url)
        async with gateway.running():
            yield upstream, gateway


@pytest.mark.parametrize("stream", [True, False])
async def test_every_call_is_recorded_with_token_ids(served, stream):
    upstream, gateway = served
    client = AsyncOpenAI(base_url=gateway.base_url("r-1"), api_key="sk-local")
    sent = await _episode(client, stream=stream)
    assert sent[-1] == {"role": "assistant", "content": "Ada's account is C-1, tier gold."}
    calls = gateway.records("r-1")
    assert [c.index for c in calls] == [0, 1]
    assert [c.finish_reason for c in calls] == ["tool_calls", "stop"]
    template = ByteChatTemplate()
    for call, body in zip(calls, upstream.requests, strict=True):
        # the upstream was asked for ids and logprobs the harness never requested
        assert body["return_token_ids"] is True and body["logprobs"] is True
        assert sorted(call.forced) == ["logprobs", "return_token_ids", "top_logprobs"]
        assert call.prompt_token_ids == template.render(body["messages"], body["tools"])
        assert call.completion_token_ids and len(call.completion_logprobs) == len(
            call.completion_token_ids
        )
        assert call.stream is stream and call.status == 200 and call.latency_s > 0
        assert call.usage is None or call.usage["completion_tokens"] == len(
            call.completion_token_ids
        )
        assert "messages" not in call.request and call.request["model"] == "m"
    first = calls[0].message
    assert first.tool_calls[0].function.name == "mcp__crm__get_customer"
    assert json.loads(first.tool_calls[0].function.arguments) == {"email": "ada@example.com"}
    assert calls[0].completion_token_ids == template.completion(
        {"tool_calls": [tc.model_dump() for tc in first.tool_calls]}
    )
    if stream:
        assert calls[1].usage == {
            "prompt_tokens": len(calls[1].prompt_token_ids),
            "completion_tokens": len(calls[1].completion_token_ids),
            "total_tokens": len(calls[1].prompt_token_ids) + len(calls[1].completion_token_ids),
        }


async def test_history_resent_verbatim_merges_into_one_sequence(served):
    _, gateway = served
    await _episode(AsyncOpenAI(base_url=gateway.base_url("r-2"), api_key="x"), stream=True)
    report = merge_calls(gateway.records("r-2"))
    assert (report.calls_with_ids, report.merged, report.mismatches) == (2, 1, 0)
    [seq] = report.sequences
    calls = gateway.records("r-2")
    assert seq.token_ids == calls[1].prompt_token_ids + calls[1].completion_token_ids
    assert sum(seq.loss_mask) == len(calls[0].completion_token_ids) + len(
        calls[1].completion_token_ids
    )
    assert all((lp is None) == (m == 0) for lp, m in zip(seq.logprobs, seq.loss_mask, strict=True))


async def test_rewritten_history_is_a_merge_mismatch(served):
    _, gateway = served
    await _episode(
        AsyncOpenAI(base_url=gateway.base_url("r-3"), api_key="x"), stream=True, reserialize=True
    )
    report = merge_calls(gateway.records("r-3"))
    assert (report.merged, report.mismatches, len(report.sequences)) == (0, 1, 2)


async def test_rollouts_are_kept_apart_and_taken_once(served):
    _, gateway = served
    await _episode(AsyncOpenAI(base_url=gateway.base_url("a"), api_key="x"), stream=False)
    await _episode(AsyncOpenAI(base_url=gateway.base_url("b"), api_key="x"), stream=True)
    assert len(gateway.take("a")) == 2 and gateway.records("a") == []
    assert len(gateway.records("b")) == 2


async def test_transcript_is_the_last_request_plus_reply(served):
    _, gateway = served
    sent = await _episode(AsyncOpenAI(base_url=gateway.base_url("t"), api_key="x"), stream=True)
    calls = gateway.records("t")
    messages = transcript_of(gateway.last_request("t"), calls)
    assert [m.role for m in messages] == [m["role"] for m in sent]
    tied = tie_calls(messages, calls)
    assert [c.message_index for c in tied] == [2, 4]
    assert messages[2].tool_calls[0].id == sent[2]["tool_calls"][0]["id"]


async def test_an_upstream_without_token_ids_is_asked_once_then_spared():
    upstream = ScriptedOpenAIServer(call_then_answer, vllm_extras=False)
    async with upstream.running() as url:
        gateway = CaptureGateway(url)
        async with gateway.running():
            client = AsyncOpenAI(base_url=gateway.base_url("h"), api_key="x")
            sent = await _episode(client, stream=True)
    assert sent[-1]["content"].startswith("Ada")
    assert gateway.unsupported == {"return_token_ids"}
    # first call: refused then retried; second call: not asked again
    assert ["return_token_ids" in b for b in upstream.requests] == [True, False, False]
    calls = gateway.records("h")
    assert all(c.prompt_token_ids is None for c in calls)
    # logprobs still came, and their `token_id:<id>` tokens stand in for completion ids
    assert all(
        c.completion_token_ids and len(c.completion_logprobs) == len(c.completion_token_ids)
        for c in calls
    )


async def test_unreachable_upstream_is_a_502_and_a_failed_record():
    gateway = CaptureGateway("http://127.0.0.1:9/v1")
    async with gateway.running(), httpx.AsyncClient() as http:
        r = await http.post(
            gateway.base_url("u") + "/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        )
        bad = await http.post(gateway.base_url("u") + "/chat/completions", content=b"[1]")
    assert r.status_code == 502 and "unreachable" in r.json()["error"]["message"]
    assert bad.status_code == 400
    [call] = gateway.records("u")
    assert call.status == 502 and call.error and call.message is None


async def test_models_pass_through(served):
    _, gateway = served
    async with httpx.AsyncClient() as http:
        r = await http.get(gateway.base_url("m") + "/models")
    assert r.json()["data"][0]["id"] == "scripted-policy"


async def test_the_stream_reaches_the_harness_byte_for_byte(served):
    upstream, gateway = served
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "What tier is ada@example.com?"}],
        "tools": TOOLS,
        "stream": True,
        # what the gateway would force, so the direct answer is the same answer
        "return_token_ids": True,
        "logprobs": True,
        "top_logprobs": 0,
    }

    def normal(raw: bytes) -> bytes:
        return re.sub(rb'"created": \d+|chatcmpl-\d+', b"", raw)

    async with httpx.AsyncClient() as http:
        direct = await http.post(upstream.url + "/chat/completions", json=body)
        relayed = await http.post(gateway.base_url("bytes") + "/chat/completions", json=body)
    assert relayed.headers["content-type"].startswith("text/event-stream")
    assert normal(relayed.content) == normal(direct.content)
    assert relayed.content.endswith(b"data: [DONE]\n\n")
    [call] = gateway.records("bytes")
    assert call.forced == [] and call.has_token_ids  # nothing left to force


async def test_concurrent_rollouts_keep_their_calls_apart_and_in_order(served):
    _, gateway = served
    ids = [f"c{i}" for i in range(8)]
    await asyncio.gather(
        *(
            _episode(AsyncOpenAI(base_url=gateway.base_url(r), api_key="x"), stream=i % 2 == 0)
            for i, r in enumerate(ids)
        )
    )
    for r in ids:
        calls = gateway.take(r)
        assert [c.index for c in calls] == [0, 1]
        assert [c.finish_reason for c in calls] == ["tool_calls", "stop"]
        assert merge_calls(calls).mismatches == 0
