"""The text field of a simulator model's reply (JSON `{"<key>": "..."}`, fenced or bare)."""

from __future__ import annotations

import json
from typing import Any


def reply_field(content: Any, key: str) -> str:
    """`content`'s `key` when it is a JSON object holding that string, else the text itself."""
    text = (
        content
        if isinstance(content, str)
        else "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content or [])
    )
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`").removeprefix("json").strip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError:
            return text.strip()
        if isinstance(data, dict) and isinstance(data.get(key), str):
            return str(data[key]).strip()
    return text.strip()
