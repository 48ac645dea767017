"""LangChain messages -> OpenAI chat format (`weft_core.models.ChatMessage`)."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from weft_core.models import ChatMessage, ToolCall, ToolCallFunction


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "\n".join(parts)


def to_chat_message(message: BaseMessage) -> ChatMessage:
    if isinstance(message, SystemMessage):
        return ChatMessage(role="system", content=_text(message.content))
    if isinstance(message, HumanMessage):
        return ChatMessage(role="user", content=_text(message.content))
    if isinstance(message, ToolMessage):
        return ChatMessage(
            role="tool",
            content=_text(message.content),
            tool_call_id=message.tool_call_id,
            name=message.name,
        )
    if isinstance(message, AIMessage):
        calls = [
            ToolCall(
                id=str(tc.get("id") or f"call_{i}"),
                function=ToolCallFunction(
                    name=tc["name"], arguments=json.dumps(tc.get("args") or {}, sort_keys=True)
                ),
            )
            for i, tc in enumerate(message.tool_calls)
        ]
        return ChatMessage(
            role="assistant", content=_text(message.content) or None, tool_calls=calls or None
        )
    return ChatMessage(role="user", content=_text(message.content))


def to_chat_messages(messages: list[BaseMessage]) -> list[ChatMessage]:
    return [to_chat_message(m) for m in messages]
