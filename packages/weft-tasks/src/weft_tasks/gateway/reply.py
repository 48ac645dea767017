"""What an OpenAI-compatible chat completion returned, assembled from a JSON body or from the
chunks of its SSE stream: the message, token ids, logprobs, finish reason and usage.

vLLM's extras are read when present: top-level `prompt_token_ids` (first chunk only when
streaming), `choices[0].token_ids` (per-chunk deltas when streaming) and `logprobs.content[]`,
whose `token` is `"token_id:<id>"` under `return_tokens_as_token_ids` (the fallback for ids).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from weft_core.models import ChatMessage, ToolCall, ToolCallFunction


@dataclass
class _ToolCallParts:
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass
class Reply:
    """Accumulates one completion; `feed_chunk` per streamed chunk or `feed_body` once."""

    content: str = ""
    has_content: bool = False
    tool_calls: dict[int, _ToolCallParts] = field(default_factory=dict)
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    logprob_token_ids: list[int] | None = None
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    error: str | None = None

    def feed_body(self, body: dict[str, Any]) -> None:
        self._top(body)
        choice = _first_choice(body)
        if choice is None:
            return
        message = choice.get("message") or {}
        if isinstance(message.get("content"), str):
            self.content, self.has_content = message["content"], True
        for i, call in enumerate(message.get("tool_calls") or []):
            fn = call.get("function") or {}
            self.tool_calls[i] = _ToolCallParts(
                id=str(call.get("id") or ""),
                name=str(fn.get("name") or ""),
                arguments=str(fn.get("arguments") or ""),
            )
        self._choice_extras(choice)

    def feed_chunk(self, chunk: dict[str, Any]) -> None:
        self._top(chunk)
        choice = _first_choice(chunk)
        if choice is None:
            return
        delta = choice.get("delta") or {}
        if isinstance(delta.get("content"), str):
            self.content += delta["content"]
            self.has_content = True
        for part in delta.get("tool_calls") or []:
            slot = self.tool_calls.setdefault(int(part.get("index", 0)), _ToolCallParts())
            fn = part.get("function") or {}
            if part.get("id"):
                slot.id = str(part["id"])
            if fn.get("name"):
                slot.name += str(fn["name"])
            if fn.get("arguments"):
                slot.arguments += str(fn["arguments"])
        self._choice_extras(choice)

    def feed_sse_event(self, data: str) -> None:
        """One `data:` payload of the stream (`[DONE]` and non-JSON payloads are skipped)."""
        if data.strip() == "[DONE]":
            return
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError:
            return
        if isinstance(chunk, dict):
            if "error" in chunk and not chunk.get("choices"):
                self.error = _error_text(chunk["error"])
                return
            self.feed_chunk(chunk)

    def _top(self, body: dict[str, Any]) -> None:
        ids = body.get("prompt_token_ids")
        if isinstance(ids, list) and self.prompt_token_ids is None:
            self.prompt_token_ids = [int(i) for i in ids]
        if isinstance(body.get("usage"), dict):
            self.usage = body["usage"]

    def _choice_extras(self, choice: dict[str, Any]) -> None:
        ids = choice.get("token_ids")
        if isinstance(ids, list):
            self.completion_token_ids = (self.completion_token_ids or []) + [int(i) for i in ids]
        content = (choice.get("logprobs") or {}).get("content")
        if isinstance(content, list):
            self.logprobs = self.logprobs or []
            for item in content:
                if not isinstance(item, dict) or "logprob" not in item:
                    continue
                self.logprobs.append(float(item["logprob"]))
                token = item.get("token")
                if isinstance(token, str) and token.startswith("token_id:"):
                    self.logprob_token_ids = self.logprob_token_ids or []
                    self.logprob_token_ids.append(int(token.removeprefix("token_id:")))
        if choice.get("finish_reason"):
            self.finish_reason = str(choice["finish_reason"])

    @property
    def completion_ids(self) -> list[int] | None:
        """Completion ids: `token_ids` when returned, else the `token_id:<id>` logprob tokens."""
        if self.completion_token_ids is not None:
            return self.completion_token_ids
        if (
            self.logprob_token_ids is not None
            and self.logprobs is not None
            and len(self.logprob_token_ids) == len(self.logprobs)
        ):
            return self.logprob_token_ids
        return None

    def message(self) -> ChatMessage | None:
        if not self.has_content and not self.tool_calls:
            return None
        calls = [
            ToolCall(
                id=part.id or f"call_{i}",
                function=ToolCallFunction(name=part.name, arguments=part.arguments),
            )
            for i, part in sorted(self.tool_calls.items())
        ]
        return ChatMessage(
            role="assistant",
            content=self.content if self.has_content and self.content else None,
            tool_calls=calls or None,
        )


def _first_choice(body: dict[str, Any]) -> dict[str, Any] | None:
    choices = body.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return None


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)


class SSEParser:
    """Splits a byte stream into SSE events and hands each `data:` payload to `reply`."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self._buffer = b""

    def feed(self, data: bytes) -> None:
        # A CR may end one read and its LF start the next: hold a trailing CR back.
        data = self._buffer + data
        held = b"\r" if data.endswith(b"\r") else b""
        buffer = (data[:-1] if held else data).replace(b"\r\n", b"\n")
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            self._event(event)
        self._buffer = buffer + held

    def close(self) -> None:
        if self._buffer.strip():
            self._event(self._buffer.replace(b"\r\n", b"\n"))
        self._buffer = b""

    def _event(self, event: bytes) -> None:
        lines = [
            line[5:].removeprefix(b" ") for line in event.split(b"\n") if line.startswith(b"data:")
        ]
        if lines:
            self.reply.feed_sse_event(b"\n".join(lines).decode(errors="replace"))
