"""Asking a chat model for a node's product with structured output, and checking the answer."""

from __future__ import annotations

import json
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ValidationError

from weft_core.llm import reply_payload
from weft_core.models import MCPSpec

T = TypeVar("T", bound=BaseModel)


@runtime_checkable
class StructuredChatModel(Protocol):
    """What the LLM strategies need from a chat model (any LangChain BaseChatModel fits).

    Contract: `with_structured_output(schema, include_raw=True)` returns a runnable whose
    `invoke(prompt)` gives {"raw", "parsed", "parsing_error"} or the parsed object; `invoke(prompt)`
    gives a message whose tool calls or JSON text carry the answer. Answers are never trusted:
    every product is checked deterministically and replaced by the programmatic one when wrong.
    """

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Any: ...

    def invoke(self, input: Any, *args: Any, **kwargs: Any) -> Any: ...


def spec_digest(spec: MCPSpec, *, limit: int = 12000) -> str:
    """The spec as compact JSON for a prompt (cut at `limit` characters)."""
    data = {
        "name": spec.name,
        "domain": spec.domain,
        "description": spec.description,
        "tools": [
            {"name": t.name, "description": t.description[:300], "input_schema": t.input_schema}
            for t in spec.tools
        ],
    }
    text = json.dumps(data, separators=(",", ":"))
    return text[:limit]


def ask_structured(llm: Any, schema: type[T], prompt: str) -> tuple[T | None, str | None]:
    """Ask `llm` for a `schema` instance. Returns (value, None) or (None, why it is unusable).

    Uses the model's structured output (tool calling) when it has one and falls back to parsing a
    JSON reply, so any LangChain chat model works; never raises on a bad answer.
    """
    raw: Any = None
    try:
        structured = llm.with_structured_output(schema, include_raw=True)
        out = structured.invoke(prompt)
        if isinstance(out, dict):
            if out.get("parsed") is not None:
                parsed = out["parsed"]
                return (
                    parsed if isinstance(parsed, schema) else schema.model_validate(parsed)
                ), None
            raw = out.get("raw")
        else:
            return (out if isinstance(out, schema) else schema.model_validate(out)), None
    except ValidationError as exc:
        return None, f"schema violation: {exc.errors()[0]['msg']}"
    except NotImplementedError:
        raw = None
    except Exception as exc:  # a model failing is a reason to fall back, not to crash the batch
        raw = None
        err = f"{type(exc).__name__}: {exc}"[:200]
        try:
            raw = llm.invoke(prompt)
        except Exception:
            return None, err
    try:
        if raw is None:
            raw = llm.invoke(prompt)
        return schema.model_validate(reply_payload(raw)), None
    except ValidationError as exc:
        return None, f"schema violation: {exc.errors()[0]['msg']}"
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"[:200]
