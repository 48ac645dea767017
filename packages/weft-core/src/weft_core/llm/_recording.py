"""Recording and replaying chat models: a run with a model can be repeated without it.

`RecordingChatModel(inner, path)` forwards every call to any LangChain chat model and appends
the prompt and the reply to a JSONL file; `ReplayChatModel(path)` answers the same prompts from
that file and contacts nothing. A replayed run is the recorded run byte for byte (every stage
without a model is deterministic), so a run with a sampled, changing or paid model can be
re-verified, resumed or extended later.

A call is keyed by the content hash of its messages (type, text, tool calls, tool-call ids) and
stop words, never by provider metadata or message ids, which vary between runs. Identical
prompts are answered in the order they were recorded. Lines follow the order calls finished,
which may vary under concurrency; replay looks calls up by key, so that order does not matter.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, message_to_dict, messages_from_dict
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, PrivateAttr

from weft_core._hashing import content_hash
from weft_core.exceptions import UserError, WeftRuntimeError

RECORD_FORMAT = "weft-model-calls/1"


class ReplayMissError(WeftRuntimeError):
    """A replayed run sent a prompt the recording does not hold (the run diverged)."""


class RecordingError(UserError):
    """A recording file is missing or malformed."""


def _message_key(message: BaseMessage) -> dict[str, Any]:
    """What of a message decides the reply: not ids, timings or provider metadata."""
    out: dict[str, Any] = {"type": message.type, "content": message.content}
    tool_calls = getattr(message, "tool_calls", None)
    if tool_calls:
        out["tool_calls"] = [
            {"name": c.get("name"), "args": c.get("args"), "id": c.get("id")} for c in tool_calls
        ]
    tool_call_id = getattr(message, "tool_call_id", None)
    if tool_call_id:
        out["tool_call_id"] = tool_call_id
    return out


def call_key(messages: Sequence[BaseMessage], stop: Sequence[str] | None = None) -> str:
    """The content hash that identifies one model call."""
    return content_hash({"messages": [_message_key(m) for m in messages], "stop": stop or []})


def _reply_dict(message: BaseMessage) -> dict[str, Any]:
    data = message_to_dict(message)
    # Ids and provider metadata describe one HTTP exchange, not the reply.
    data["data"] = {
        k: v
        for k, v in data["data"].items()
        if k not in ("id", "response_metadata", "usage_metadata")
    }
    return data


class RecordingChatModel(BaseChatModel):
    """Any chat model, with every call appended to a JSONL recording (see the module doc)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    inner: BaseChatModel
    path: Path

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, inner: BaseChatModel, path: str | Path, **kwargs: Any) -> None:
        super().__init__(inner=inner, path=Path(path), **kwargs)

    @property
    def _llm_type(self) -> str:
        return f"recording-{self.inner._llm_type}"

    def _write(
        self, messages: list[BaseMessage], stop: list[str] | None, reply: BaseMessage
    ) -> None:
        line = json.dumps(
            {
                "format": RECORD_FORMAT,
                "key": call_key(messages, stop),
                "prompt": [_message_key(m) for m in messages],
                "reply": _reply_dict(reply),
            },
            sort_keys=True,
            ensure_ascii=False,
            default=str,
        )
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        result = self.inner._generate(messages, stop=stop, **kwargs)
        self._write(messages, stop, result.generations[0].message)
        return result

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        result = await self.inner._agenerate(messages, stop=stop, **kwargs)
        self._write(messages, stop, result.generations[0].message)
        return result

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """The inner model's tool binding (its provider's tool format), recorded through self."""
        bound = self.inner.bind_tools(tools, tool_choice=tool_choice, **kwargs)
        return self.bind(**dict(getattr(bound, "kwargs", {}) or {}))


class ReplayChatModel(BaseChatModel):
    """Answers from a recording made by `RecordingChatModel`; contacts no model."""

    path: Path
    model_name: str = "replay"

    _replies: dict[str, deque[dict[str, Any]]] = PrivateAttr(default_factory=dict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, path: str | Path, **kwargs: Any) -> None:
        super().__init__(path=Path(path), **kwargs)
        replies: dict[str, deque[dict[str, Any]]] = defaultdict(deque)
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise RecordingError(
                f"{self.path}: cannot read the recording: {exc.strerror}"
            ) from None
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                if rec.get("format") != RECORD_FORMAT:
                    raise ValueError(f"format {rec.get('format')!r}, expected {RECORD_FORMAT!r}")
                replies[str(rec["key"])].append(rec["reply"])
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise RecordingError(f"{self.path}:{n}: not a model-call record: {exc}") from None
        self._replies = dict(replies)

    @property
    def _llm_type(self) -> str:
        return "weft-replay"

    @property
    def remaining(self) -> int:
        return sum(len(q) for q in self._replies.values())

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        key = call_key(messages, stop)
        with self._lock:
            queue = self._replies.get(key)
            if not queue:
                last = str(messages[-1].content)[:120] if messages else ""
                raise ReplayMissError(
                    f"{self.path}: no recorded reply for this prompt ({key[:19]}…, last "
                    f"message {last!r}); the replayed run diverged from the recorded one"
                )
            reply = queue.popleft()
        message = messages_from_dict([reply])[0]
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Tools in OpenAI form (the replies are recorded; the tools only shape the request)."""
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools])
