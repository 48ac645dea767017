"""Asking a chat model for a node's product with structured output, and checking the answer."""

from __future__ import annotations

import json
from typing import TypeVar

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel

from weft_core.llm import ask_structured
from weft_core.models import MCPSpec

T = TypeVar("T", bound=BaseModel)


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


def ask_or_none(llm: BaseChatModel, schema: type[T], prompt: str) -> tuple[T | None, str | None]:
    """`weft_core.llm.ask_structured` (no retry) for a node with a programmatic fallback: returns
    (value, None) or (None, why the answer or the model was unusable); never raises."""
    try:
        return ask_structured(llm, schema, prompt, retries=0), None
    except Exception as exc:  # a wrong answer or a failing model: the node falls back
        return None, f"{type(exc).__name__}: {exc}"[:300]
