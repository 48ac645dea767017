"""The policy server: renders the chat with the model's own template, samples on the local policy,
parses `<tool_call>` blocks into OpenAI tool calls and answers in vLLM 0.33's shape
(notes/token-capture.md §1): top-level `prompt_token_ids`, `choices[].token_ids`, and
`choices[].logprobs.content[].{token, logprob, bytes, top_logprobs}` with processed logprobs.

Streaming follows vLLM's chunk layout (role + `prompt_token_ids` first, then the content or tool-call
delta with its `token_ids` and logprobs, then `finish_reason`, usage, `[DONE]`). The completion is
sampled whole before it is sent: tool calls can only be parsed from the complete text.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from weft_train.errors import TrainUserError
from weft_train.policy import Generation, Policy, SamplingParams, parse_reply
from weft_train.serve.protocol import ChatRequest

DEFAULT_MAX_TOKENS = 512


def _error(status: int, message: str) -> JSONResponse:
    kind = "BadRequestError" if status == 400 else "InternalServerError"
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status)


def _normalise(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Content parts -> text, so the template sees plain strings (OpenAI allows both)."""
    out = []
    for m in messages:
        m = dict(m)
        content = m.get("content")
        if isinstance(content, list):
            m["content"] = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        out.append(m)
    return out


def _sampling(req: ChatRequest) -> SamplingParams:
    return SamplingParams(
        temperature=1.0 if req.temperature is None else req.temperature,
        top_p=req.top_p or 1.0,
        max_tokens=req.max_completion_tokens or req.max_tokens or DEFAULT_MAX_TOKENS,
        seed=req.seed,
    )


class _Completion:
    """One sampled reply in OpenAI form."""

    def __init__(self, policy: Policy, req: ChatRequest, prompt: list[int], gen: Generation):
        self.prompt = prompt
        self.gen = gen
        reply = parse_reply(gen.text, policy.tokenizer.eos_token)
        self.content = reply.content
        self.tool_calls = [
            {
                "id": f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in reply.calls
        ]
        if gen.finish_reason == "length":
            self.finish = "length"
        else:
            self.finish = "tool_calls" if self.tool_calls else "stop"
        self.logprobs: dict[str, Any] | None = None
        if req.logprobs:
            self.logprobs = {"content": _logprob_entries(policy, req, gen)}

    def usage(self) -> dict[str, int]:
        n, m = len(self.prompt), len(self.gen.token_ids)
        return {"prompt_tokens": n, "completion_tokens": m, "total_tokens": n + m}


def _logprob_entries(policy: Policy, req: ChatRequest, gen: Generation) -> list[dict[str, Any]]:
    entries = []
    for tid, lp in zip(gen.token_ids, gen.logprobs, strict=True):
        text = policy.decode([tid])
        token = f"token_id:{tid}" if req.return_tokens_as_token_ids else text
        entries.append(
            {"token": token, "logprob": lp, "bytes": list(text.encode()), "top_logprobs": []}
        )
    return entries


def build_app(policy: Policy, name: str | None = None) -> Starlette:
    """The ASGI app serving `policy` under model name `name` (default: the policy's)."""
    served = name or policy.name

    async def models(_: Request) -> JSONResponse:
        return JSONResponse(
            {
                "object": "list",
                "data": [{"id": served, "object": "model", "owned_by": "weft", "created": 0}],
            }
        )

    async def completions(request: Request) -> Response:
        try:
            req = ChatRequest.model_validate(await request.json())
        except json.JSONDecodeError:
            return _error(400, "request body is not JSON")
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "(body)"
            return _error(400, f"{loc}: {first['msg']}")
        try:
            prompt = policy.render(_normalise(req.messages), req.tools)
            gen = (await policy.generate([prompt], _sampling(req)))[0]
        except TrainUserError as exc:
            return _error(400, str(exc))
        except Exception as exc:  # the template rejects malformed messages with its own errors
            return _error(400, f"messages: cannot render: {type(exc).__name__}: {exc}")
        done = _Completion(policy, req, prompt, gen)
        rid = f"chatcmpl-{uuid.uuid4().hex}"
        if req.stream:
            return StreamingResponse(
                _stream(req, served, rid, done), media_type="text/event-stream"
            )
        message: dict[str, Any] = {"role": "assistant", "content": done.content}
        if done.tool_calls:
            message["tool_calls"] = done.tool_calls
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "logprobs": done.logprobs,
            "finish_reason": done.finish,
        }
        body: dict[str, Any] = {
            "id": rid,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": served,
            "choices": [choice],
            "usage": done.usage(),
        }
        if req.return_token_ids:
            choice["token_ids"] = gen.token_ids
            body["prompt_token_ids"] = prompt
        return JSONResponse(body)

    return Starlette(
        routes=[
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/chat/completions", completions, methods=["POST"]),
        ]
    )


async def _stream(req: ChatRequest, served: str, rid: str, done: _Completion) -> AsyncIterator[str]:
    created = int(time.time())

    def chunk(choice: dict[str, Any] | None, **extra: Any) -> str:
        body: dict[str, Any] = {
            "id": rid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": served,
            "choices": [choice] if choice is not None else [],
            **extra,
        }
        return f"data: {json.dumps(body)}\n\n"

    first: dict[str, Any] = {"prompt_token_ids": done.prompt} if req.return_token_ids else {}
    yield chunk({"index": 0, "delta": {"role": "assistant", "content": ""}}, **first)
    delta: dict[str, Any] = {}
    if done.content:
        delta["content"] = done.content
    if done.tool_calls:
        delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(done.tool_calls)]
    body: dict[str, Any] = {"index": 0, "delta": delta, "logprobs": done.logprobs}
    if req.return_token_ids:
        body["token_ids"] = done.gen.token_ids
    yield chunk(body)
    yield chunk({"index": 0, "delta": {}, "finish_reason": done.finish})
    if req.stream_options and req.stream_options.include_usage:
        yield chunk(None, usage=done.usage())
    yield "data: [DONE]\n\n"


def serve(
    model_dir: str | Path, *, host: str = "127.0.0.1", port: int = 8000, name: str | None = None
) -> None:
    """Load the policy in `model_dir` and serve it until interrupted."""
    import uvicorn

    policy = Policy.load(model_dir)
    uvicorn.run(build_app(policy, name), host=host, port=port, log_level="warning")
