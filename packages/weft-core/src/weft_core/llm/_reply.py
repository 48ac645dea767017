"""Reading the JSON answer out of a chat model's reply.

Models answer a structured request either with a tool call (native structured output / bound tools)
or with JSON in the message text — bare, fenced in ```json, or wrapped in prose. Every LLM strategy in
Weft reads answers the same way, through `reply_payload`, and then validates them itself.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.DOTALL)


def reply_text(reply: Any) -> str:
    """The text of a message (str content or a list of content blocks), or of a plain string."""
    content = getattr(reply, "content", reply)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b if isinstance(b, str) else str(b.get("text", "")) if isinstance(b, dict) else ""
            for b in content
        )
    return "" if content is None else str(content)


def reply_payload(reply: Any) -> Any:
    """The JSON value a reply carries: the first tool call's arguments, else the first JSON object
    or array in its text (inside a code fence if there is one; prose around it is ignored).

    Raises ValueError naming what was wrong when the reply carries no JSON value.
    """
    tool_calls = getattr(reply, "tool_calls", None) or []
    if tool_calls:
        return tool_calls[0]["args"]
    text = reply_text(reply)
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1)
    decoder = json.JSONDecoder()
    for start, char in enumerate(text):
        if char in "{[":
            try:
                value, _ = decoder.raw_decode(text, start)
            except ValueError:
                continue
            return value
    raise ValueError(f"the reply holds no JSON object: {text[:120]!r}")
