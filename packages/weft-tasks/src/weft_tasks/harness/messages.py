"""LangChain messages -> OpenAI chat format (`weft_core.models.ChatMessage`).

A reply from a token-capturing model (`vllm:` models, `weft_core.llm.TITO_KEY` in its response
metadata) keeps the model's own bytes: tool-call arguments are the JSON strings the server sent, not
a re-serialised dict, and the message carries its completion ids and logprobs; `model_calls` lists
every such reply as a `ModelCall`. Other models' arguments are serialised as given.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from weft_core.llm import TITO_KEY
from weft_core.models import ChatMessage, ModelCall, ToolCall, ToolCallFunction


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
        tito = _tito(message)
        raw: list[str] = list(tito.get("arguments") or []) if tito else []
        calls = [
            ToolCall(
                id=str(tc.get("id") or f"call_{i}"),
                function=ToolCallFunction(
                    name=tc["name"],
                    arguments=raw[i]
                    if len(raw) == len(message.tool_calls)
                    else json.dumps(tc.get("args") or {}),
                ),
            )
            for i, tc in enumerate(message.tool_calls)
        ]
        return ChatMessage(
            role="assistant",
            content=_text(message.content) or None,
            tool_calls=calls or None,
            token_ids=list(tito["token_ids"]) if tito and tito.get("token_ids") else None,
            logprobs=list(tito["logprobs"]) if tito and tito.get("logprobs") else None,
        )
    return ChatMessage(role="user", content=_text(message.content))


def to_chat_messages(messages: list[BaseMessage]) -> list[ChatMessage]:
    return [to_chat_message(m) for m in messages]


def _tito(message: AIMessage) -> dict[str, Any] | None:
    record = message.response_metadata.get(TITO_KEY)
    return record if isinstance(record, dict) else None


def model_calls(messages: list[BaseMessage]) -> list[ModelCall]:
    """The token-exact record of every reply in `messages` that carries one (index = position)."""
    calls = []
    for i, message in enumerate(messages):
        tito = _tito(message) if isinstance(message, AIMessage) else None
        if tito is None:
            continue
        calls.append(
            ModelCall(
                message_index=i,
                prompt_token_ids=list(tito.get("prompt_token_ids") or []),
                completion_token_ids=list(tito.get("token_ids") or []),
                completion_logprobs=list(tito.get("logprobs") or []),
                text=tito.get("text"),
                finish_reason=tito.get("finish_reason"),
            )
        )
    return calls
