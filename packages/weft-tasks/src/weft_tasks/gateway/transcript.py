"""A harness's own transcript, rebuilt from the capture gateway's records.

An external harness sends its whole history on every model call, so the latest call's request
messages plus its reply are the transcript, in the harness's own words: its system prompt, its
wrapping of tool results, the context messages it injects. Each captured call is tied to the
transcript by `message_index` (the assistant message it produced) when the history is
append-only; a call whose reply is not found there keeps `message_index = None`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from weft_core.models import CapturedCall, ChatMessage, ToolCall, ToolCallFunction

_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    return json.dumps(content)


def openai_message(raw: dict[str, Any]) -> ChatMessage:
    """An OpenAI-format request message as a `ChatMessage` (extra keys such as `reasoning` are
    dropped; content parts are joined as text)."""
    role = str(raw.get("role") or "user")
    if role in ("tool", "function"):
        return ChatMessage(
            role="tool",
            content=_text(raw.get("content")),
            tool_call_id=raw.get("tool_call_id"),
            name=raw.get("name"),
        )
    calls = [
        ToolCall(
            id=str(c.get("id") or f"call_{i}"),
            function=ToolCallFunction(
                name=str((c.get("function") or {}).get("name") or ""),
                arguments=_arguments((c.get("function") or {}).get("arguments")),
            ),
        )
        for i, c in enumerate(raw.get("tool_calls") or [])
        if isinstance(c, dict)
    ]
    return ChatMessage(
        role=_ROLES.get(role, "user"),
        content=_text(raw.get("content")),
        tool_calls=calls or None,
    )


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {})


def transcript_of(
    last_request: dict[str, Any] | None, calls: Sequence[CapturedCall]
) -> list[ChatMessage]:
    """The latest request's messages plus the latest reply (empty with no call)."""
    if last_request is None:
        return []
    messages = [
        openai_message(m) for m in last_request.get("messages") or [] if isinstance(m, dict)
    ]
    if calls and calls[-1].message is not None and calls[-1].prompt_messages == len(messages):
        messages.append(calls[-1].message)
    return messages


def tie_calls(messages: Sequence[ChatMessage], calls: Sequence[CapturedCall]) -> list[CapturedCall]:
    """`calls` with `message_index` set to the assistant message each produced: the message right
    after the call's prompt when the transcript is the request history (external harnesses), else
    the next not-yet-tied assistant message with the same reply (a harness that reports its
    transcript without its system prompt)."""
    out = []
    cursor = 0
    for call in calls:
        index = None
        if call.message is not None:
            at = call.prompt_messages
            order = (
                [at, *range(cursor, len(messages))]
                if at >= cursor
                else range(cursor, len(messages))
            )
            index = next(
                (i for i in order if i < len(messages) and _same(messages[i], call.message)), None
            )
        if index is not None:
            cursor = index + 1
        out.append(call.model_copy(update={"message_index": index}))
    return out


def _same(a: ChatMessage, b: ChatMessage) -> bool:
    """Same reply: same tools with the same arguments (ids and JSON spacing may be rewritten by
    the harness, e.g. OpenClaw drops `_` from call ids), or the same text."""
    if a.role != "assistant":
        return False
    calls_a = [(c.function.name, _parsed(c.function.arguments)) for c in a.tool_calls or []]
    calls_b = [(c.function.name, _parsed(c.function.arguments)) for c in b.tool_calls or []]
    if calls_a or calls_b:
        return calls_a == calls_b
    return (a.content or "").strip() == (b.content or "").strip()


def _parsed(arguments: str) -> Any:
    try:
        return json.loads(arguments or "{}")
    except ValueError:
        return arguments


def offered_tools(last_request: dict[str, Any] | None) -> list[dict[str, Any]]:
    tools = (last_request or {}).get("tools")
    return [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []
