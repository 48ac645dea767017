"""The policy server on 127.0.0.1 (uvicorn), called over HTTP like vLLM."""

from __future__ import annotations

import asyncio
import json
import socket

import httpx
import pytest
import pytest_asyncio
import uvicorn

from weft_train.serve import build_app

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "crm__get_customer",
            "description": "Find a customer by email.",
            "parameters": {"type": "object", "properties": {"email": {"type": "string"}}},
        },
    }
]
MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": [{"type": "text", "text": "Find ada@example.com"}]},
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server(tiny_policy):
    port = _free_port()
    app = build_app(tiny_policy, "tiny")
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(srv.serve())
    while not srv.started:
        await asyncio.sleep(0.02)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}/v1", timeout=60) as client:
        yield client
    srv.should_exit = True
    await task


async def test_token_fields_and_logprobs_match_a_forward_pass(server, tiny_policy):
    body = {
        "model": "tiny",
        "messages": MESSAGES,
        "tools": TOOLS,
        "max_tokens": 20,
        "temperature": 0.8,
        "seed": 1,
        "logprobs": True,
        "top_logprobs": 0,
        "return_token_ids": True,
    }
    res = (await server.post("/chat/completions", json=body)).json()
    choice = res["choices"][0]
    prompt, ids = res["prompt_token_ids"], choice["token_ids"]
    flat = [{"role": m["role"], "content": "Find ada@example.com"} for m in MESSAGES[1:]]
    assert prompt == tiny_policy.render([MESSAGES[0], *flat], TOOLS)
    lps = [e["logprob"] for e in choice["logprobs"]["content"]]
    assert len(lps) == len(ids) == res["usage"]["completion_tokens"]
    # The trainer's view: one forward pass over prompt + completion at the same temperature.
    scored = tiny_policy.score(prompt, ids, 0.8)
    assert max(abs(a - b) for a, b in zip(scored, lps, strict=True)) < 1e-5
    assert choice["finish_reason"] in {"stop", "length", "tool_calls"}
    assert "".join(e["token"] for e in choice["logprobs"]["content"]) == tiny_policy.decode(ids)


async def test_stream_carries_the_same_fields_in_vllm_chunks(server):
    body = {
        "model": "tiny",
        "messages": MESSAGES,
        "max_tokens": 12,
        "seed": 4,
        "stream": True,
        "stream_options": {"include_usage": True},
        "logprobs": True,
        "return_token_ids": True,
        "return_tokens_as_token_ids": True,
    }
    plain = (await server.post("/chat/completions", json={**body, "stream": False})).json()
    chunks = []
    async with server.stream("POST", "/chat/completions", json=body) as res:
        async for line in res.aiter_lines():
            if line.startswith("data: "):
                chunks.append(line[6:])
    assert chunks[-1] == "[DONE]"
    parsed = [json.loads(c) for c in chunks[:-1]]
    assert parsed[0]["choices"][0]["delta"]["role"] == "assistant"
    assert parsed[0]["prompt_token_ids"] == plain["prompt_token_ids"]
    ids = [t for p in parsed for c in p["choices"] for t in c.get("token_ids") or []]
    assert ids == plain["choices"][0]["token_ids"]  # same seed, same sample
    tokens = [
        e["token"]
        for p in parsed
        for c in p["choices"]
        for e in ((c.get("logprobs") or {}).get("content") or [])
    ]
    assert tokens == [f"token_id:{i}" for i in ids]
    assert parsed[-1]["usage"]["completion_tokens"] == len(ids)
    assert parsed[-2]["choices"][0]["finish_reason"] == plain["choices"][0]["finish_reason"]


async def test_bad_requests_get_a_one_line_400(server):
    res = await server.post("/chat/completions", json={"model": "tiny", "messages": []})
    assert res.status_code == 400
    assert res.json()["error"]["message"].startswith("messages:")
    res = await server.post("/chat/completions", content=b"{nope")
    assert res.status_code == 400
    models = (await server.get("/models")).json()
    assert models["data"][0]["id"] == "tiny"
