"""ScriptedChatModel: a fake chat model that plays a script and behaves like a real one.

It answers each call with the next scripted item, records every prompt and every tool binding,
supports `bind_tools` (returns itself, so agents built on `create_agent` work) and
`with_structured_output` (parses the reply like a real integration would, and raises on garbage,
so tests exercise a node's handling of a model that answers wrongly).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.exceptions import OutputParserException
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, Field, PrivateAttr, TypeAdapter, ValidationError

from weft_core.exceptions import WeftRuntimeError
from weft_core.llm._reply import reply_payload

ScriptItem = (
    BaseMessage
    | str
    | dict[str, Any]
    | BaseException
    | Callable[[list[BaseMessage]], "BaseMessage | str | dict[str, Any]"]
)


class ScriptExhaustedError(WeftRuntimeError):
    """The model was called more times than its script has replies."""


def tool_call_message(
    name: str, args: dict[str, Any] | None = None, *, id: str | None = None, content: str = ""
) -> AIMessage:
    """An AIMessage asking for one tool call."""
    return AIMessage(
        content=content,
        tool_calls=[{"name": name, "args": args or {}, "id": id, "type": "tool_call"}],
    )


def _message_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return "".join(parts)


def _extract_json(text: str) -> Any:
    try:
        return reply_payload(text)
    except ValueError:
        raise OutputParserException(
            f"model reply is not JSON: {text[:200]!r}", llm_output=text
        ) from None


def _parse_structured(message: BaseMessage, schema: Any) -> Any:
    tool_calls = getattr(message, "tool_calls", None) or []
    data = tool_calls[0]["args"] if tool_calls else _extract_json(_message_text(message))
    if isinstance(schema, dict):
        if not isinstance(data, dict):
            raise OutputParserException(f"expected a JSON object, got {type(data).__name__}")
        missing = [k for k in schema.get("required", []) if k not in data]
        if missing:
            raise OutputParserException(f"model reply lacks required field(s) {missing}")
        return data
    try:
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            return schema.model_validate(data)
        return TypeAdapter(schema).validate_python(data)
    except ValidationError as exc:
        name = getattr(schema, "__name__", str(schema))
        raise OutputParserException(
            f"model reply does not fit {name}: {exc.error_count()} error(s): {exc.errors()[0]['msg']}",
            llm_output=json.dumps(data, default=str)[:500],
        ) from exc


class ScriptedChatModel(FakeMessagesListChatModel):
    """A chat model that replies from a script, in order, and never cycles.

    Script items: an AIMessage (tool calls allowed; missing tool-call ids are filled in), a str
    (text reply), a dict (a JSON reply, e.g. a structured-output payload), an exception instance
    (raised, to simulate a failing endpoint), or a callable `(messages) -> AIMessage | str | dict`
    for replies that depend on the prompt. `prompts` records every message list received;
    `bound_tools` the tools of every `bind_tools` call. Calls past the end raise
    ScriptExhaustedError.
    """

    responses: list[Any] = Field(default_factory=list)
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    bound_tools: list[list[Any]] = Field(default_factory=list)
    tool_choices: list[Any] = Field(default_factory=list)
    structured_schemas: list[Any] = Field(default_factory=list)

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, responses: Sequence[ScriptItem] | None = None, **kwargs: Any) -> None:
        items = list(responses if responses is not None else kwargs.pop("responses", []))
        for n, item in enumerate(items):
            if not isinstance(item, BaseMessage | str | dict | BaseException) and not callable(
                item
            ):
                raise TypeError(
                    f"script item {n} is a {type(item).__name__}; expected AIMessage, str, dict, "
                    "exception or callable"
                )
        super().__init__(responses=items, **kwargs)

    @property
    def _llm_type(self) -> str:
        return "weft-scripted-chat-model"

    @property
    def calls(self) -> int:
        return len(self.prompts)

    @property
    def remaining(self) -> int:
        return len(self.responses) - self.i

    def _to_message(self, item: Any, messages: list[BaseMessage], n: int) -> BaseMessage:
        if isinstance(item, BaseException):
            raise item
        if callable(item) and not isinstance(item, BaseMessage):
            item = item(messages)
        if isinstance(item, str):
            return AIMessage(content=item)
        if isinstance(item, dict):
            return AIMessage(content=json.dumps(item))
        if (
            isinstance(item, AIMessage)
            and item.tool_calls
            and any(not c.get("id") for c in item.tool_calls)
        ):
            calls = [
                {**c, "id": c.get("id") or f"call_{n}_{k}"} for k, c in enumerate(item.tool_calls)
            ]
            return item.model_copy(update={"tool_calls": calls})
        if isinstance(item, BaseMessage):
            return item
        raise TypeError(f"script item {n} produced a {type(item).__name__}, not a message")

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._lock:
            n = self.i
            self.prompts.append(list(messages))
            if n >= len(self.responses):
                last = _message_text(messages[-1])[:120] if messages else ""
                raise ScriptExhaustedError(
                    f"ScriptedChatModel script exhausted: call {n + 1} but only {len(self.responses)} "
                    f"scripted replies; last prompt message: {last!r}"
                )
            self.i = n + 1
            item = self.responses[n]
        message = self._to_message(item, list(messages), n)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> ScriptedChatModel:
        """Record the tools and return the model itself (the script decides what to call)."""
        self.bound_tools.append(list(tools))
        self.tool_choices.append(tool_choice)
        return self

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[Any, Any]:
        """Parse each reply into `schema` (pydantic model, TypedDict/type, or JSON-schema dict)
        from its first tool call's arguments or its JSON text; raise OutputParserException on
        garbage (or return it under "parsing_error" with include_raw=True)."""
        self.structured_schemas.append(schema)

        def parse(message: BaseMessage) -> Any:
            if not include_raw:
                return _parse_structured(message, schema)
            try:
                return {
                    "raw": message,
                    "parsed": _parse_structured(message, schema),
                    "parsing_error": None,
                }
            except OutputParserException as exc:
                return {"raw": message, "parsed": None, "parsing_error": exc}

        return self | RunnableLambda(parse, name="ScriptedStructuredOutput")

    def assert_exhausted(self) -> None:
        """Fail when scripted replies were left unused (the code under test called too rarely)."""
        if self.remaining:
            raise AssertionError(
                f"{self.remaining} scripted repl(ies) never used of {len(self.responses)}"
            )
