"""What a tool returned, as MCP results appear in the ledger: structured content and/or text."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any


def _texts_and_structured(result: Any) -> tuple[list[str], list[Any]]:
    texts: list[str] = []
    structured: list[Any] = []

    def add_text(text: str) -> None:
        texts.append(text)
        stripped = text.strip()
        if stripped[:1] in ("{", "[", '"') or stripped in ("true", "false", "null"):
            with contextlib.suppress(ValueError):
                structured.append(json.loads(stripped))

    def add_blocks(blocks: list[Any]) -> bool:
        if not blocks or not all(isinstance(b, Mapping) and "type" in b for b in blocks):
            return False
        for block in blocks:
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                add_text(block["text"])
            elif block.get("type") == "resource" and isinstance(block.get("resource"), Mapping):
                text = block["resource"].get("text")
                if isinstance(text, str):
                    add_text(text)
        return True

    if isinstance(result, str):
        add_text(result)
    elif isinstance(result, Mapping) and (
        {"content", "structuredContent", "structured_content"} & set(result)
    ):
        # An MCP CallToolResult: structured content and content blocks are two views of one return.
        for key in ("structuredContent", "structured_content"):
            if result.get(key) is not None:
                structured.append(result[key])
        content = result.get("content")
        if isinstance(content, list):
            if not add_blocks(content):
                structured.append(content)
        elif isinstance(content, str):
            add_text(content)
        elif content is not None:
            structured.append(content)
    elif isinstance(result, list) and add_blocks(result):
        pass
    elif result is not None:
        structured.append(result)
    return texts, structured


def result_views(result: Any) -> tuple[list[str], list[Any]]:
    """(texts the agent saw, structured values: structured content and texts that parse as JSON)."""
    return _texts_and_structured(result)
