"""A scripted OpenAI-compatible model server for tests: a real HTTP server on 127.0.0.1 that
answers `/v1/chat/completions` (JSON or SSE stream) with replies a policy function decides, and
returns vLLM's token extras so token capture can be tested without a model.

Tokens come from `ByteChatTemplate`, a ChatML-like template over UTF-8 bytes (ids 0-255) with
special ids for the markers. It is a real template in the sense that matters here: the prompt
ids of call k+1 extend call k's prompt + completion ids exactly when the harness re-sends its
history unchanged, and do not when it rewrites it (re-serialised tool-call arguments, edited
messages) — so prefix merges can both succeed and fail.

Like vLLM it returns `prompt_token_ids`, `choices[].token_ids` and `logprobs` only when asked
(`return_token_ids`, `logprobs`); with `vllm_extras=False` it behaves like a hosted API and
rejects `return_token_ids` with a 400.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from weft_tasks._serve import serving

Policy = Callable[[list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]]
"""`policy(messages, tools)` -> the assistant message (`{"content": ...}` or `{"tool_calls": ...}`)."""

IM_START, IM_END, TOOL_START, TOOL_END, TOOLS = 256, 257, 258, 259, 260


class ByteChatTemplate:
    """ChatML over bytes: `<im_start>role\\n body <im_end>\\n` per message."""

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[int]:
        ids: list[int] = []
        if tools:
            ids += [TOOLS, *self.encode(json.dumps(tools, sort_keys=True)), IM_END]
        for message in messages:
            role = str(message.get("role") or "user")
            ids += [IM_START, *self.encode(role + "\n"), *self.body(message), IM_END]
            ids += self.encode("\n")
        return [*ids, IM_START, *self.encode("assistant\n")]

    def body(self, message: dict[str, Any]) -> list[int]:
        ids = self.encode(_text(message.get("content")))
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            arguments = fn.get("arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments)
            ids += [TOOL_START, *self.encode(f'{{"name": "{fn.get("name")}", "arguments": ')]
            ids += [*self.encode(arguments + "}"), TOOL_END]
        return ids

    def completion(self, message: dict[str, Any]) -> list[int]:
        return [*self.body(message), IM_END]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
    return ""


def _logprob(token: int, position: int) -> float:
    """A deterministic stand-in for the sampled token's logprob (a fixed function of both)."""
    digest = hashlib.blake2b(f"{token}:{position}".encode(), digest_size=2).digest()
    return -int.from_bytes(digest, "big") / 65535.0 * 2.0


class ScriptedOpenAIServer:
    """Serve `policy` as an OpenAI-compatible chat endpoint; `requests` keeps every body seen."""

    def __init__(
        self,
        policy: Policy,
        *,
        model: str = "scripted-policy",
        vllm_extras: bool = True,
        chunk_bytes: int = 12,
    ) -> None:
        self.policy = policy
        self.model = model
        self.vllm_extras = vllm_extras
        self.chunk_bytes = chunk_bytes
        self.template = ByteChatTemplate()
        self.requests: list[dict[str, Any]] = []
        self.url: str | None = None
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        """Yields the base URL (`http://127.0.0.1:PORT/v1`)."""
        async with serving(self.app) as root:
            self.url = f"{root}/v1"
            try:
                yield self.url
            finally:
                self.url = None

    async def _models(self, request: Request) -> Response:
        return JSONResponse(
            {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "weft"}]}
        )

    async def _chat(self, request: Request) -> Response:
        body = json.loads(await request.body())
        self.requests.append(body)
        if not self.vllm_extras and "return_token_ids" in body:
            return JSONResponse(
                {
                    "error": {
                        "message": "Unrecognized request argument supplied: return_token_ids",
                        "type": "invalid_request_error",
                    }
                },
                status_code=400,
            )
        messages = list(body.get("messages") or [])
        tools = list(body.get("tools") or [])
        reply = dict(self.policy(messages, tools))
        reply["role"] = "assistant"
        if reply.get("tool_calls"):
            reply.setdefault("content", None)
        prompt = self.template.render(messages, tools)
        completion = self.template.completion(reply)
        finish = "tool_calls" if reply.get("tool_calls") else "stop"
        ids = bool(body.get("return_token_ids"))
        logprobs = bool(body.get("logprobs"))
        usage = {
            "prompt_tokens": len(prompt),
            "completion_tokens": len(completion),
            "total_tokens": len(prompt) + len(completion),
        }
        rid = f"chatcmpl-{len(self.requests)}"
        if not body.get("stream"):
            choice: dict[str, Any] = {"index": 0, "message": reply, "finish_reason": finish}
            if ids:
                choice["token_ids"] = completion
            if logprobs:
                choice["logprobs"] = {"content": self._logprobs(completion, 0)}
            out: dict[str, Any] = {
                "id": rid,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model") or self.model,
                "choices": [choice],
                "usage": usage,
            }
            if ids:
                out["prompt_token_ids"] = prompt
            return JSONResponse(out)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return StreamingResponse(
            self._stream(
                rid, body, reply, prompt, completion, finish, ids, logprobs, usage, include_usage
            ),
            media_type="text/event-stream",
        )

    def _logprobs(self, tokens: list[int], start: int) -> list[dict[str, Any]]:
        return [
            {"token": f"token_id:{t}", "logprob": _logprob(t, start + i), "top_logprobs": []}
            for i, t in enumerate(tokens)
        ]

    async def _stream(
        self,
        rid: str,
        body: dict[str, Any],
        reply: dict[str, Any],
        prompt: list[int],
        completion: list[int],
        finish: str,
        ids: bool,
        logprobs: bool,
        usage: dict[str, Any],
        include_usage: bool,
    ) -> AsyncIterator[bytes]:
        base = {
            "id": rid,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
        }

        def chunk(delta: dict[str, Any], tokens: list[int], at: int, **extra: Any) -> bytes:
            choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": None}
            if ids:
                choice["token_ids"] = tokens
            if logprobs:
                choice["logprobs"] = {"content": self._logprobs(tokens, at)}
            return b"data: " + json.dumps({**base, "choices": [choice], **extra}).encode() + b"\n\n"

        first_extra = {"prompt_token_ids": prompt} if ids else {}
        yield chunk({"role": "assistant", "content": ""}, [], 0, **first_extra)
        # The completion's ids are streamed in the order the template renders them.
        pieces = self._pieces(reply)
        at = 0
        for delta, n in pieces:
            tokens = completion[at : at + n]
            yield chunk(delta, tokens, at)
            at += n
        last: dict[str, Any] = {"index": 0, "delta": {}, "finish_reason": finish}
        if ids:
            last["token_ids"] = completion[at:]
        if logprobs:
            last["logprobs"] = {"content": self._logprobs(completion[at:], at)}
        end = {**base, "choices": [last]}
        yield b"data: " + json.dumps(end).encode() + b"\n\n"
        if include_usage:
            yield b"data: " + json.dumps({**base, "choices": [], "usage": usage}).encode() + b"\n\n"
        yield b"data: [DONE]\n\n"

    def _pieces(self, reply: dict[str, Any]) -> list[tuple[dict[str, Any], int]]:
        """(delta, number of completion ids it carries), in template order."""
        t = self.template
        out: list[tuple[dict[str, Any], int]] = []
        text = _text(reply.get("content"))
        step = self.chunk_bytes
        for i in range(0, len(text), step):
            piece = text[i : i + step]
            out.append(({"content": piece}, len(t.encode(piece))))
        for index, call in enumerate(reply.get("tool_calls") or []):
            fn = call.get("function") or {}
            arguments = fn.get("arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments)
            head = 1 + len(t.encode(f'{{"name": "{fn.get("name")}", "arguments": '))
            half = len(arguments) // 2
            out.append(
                (
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call.get("id"),
                                "type": "function",
                                "function": {"name": fn.get("name"), "arguments": ""},
                            }
                        ]
                    },
                    head,
                )
            )
            for part, extra in ((arguments[:half], 0), (arguments[half:], 2)):
                # The last part also carries the closing brace and the tool-call end marker.
                out.append(
                    (
                        {"tool_calls": [{"index": index, "function": {"arguments": part}}]},
                        len(t.encode(part)) + extra,
                    )
                )
        return out
