"""Parse the tool calls out of a completion written in the template's `<tool_call>` format.

Arguments are returned verbatim: the exact characters the model wrote for the `arguments` value,
found with a JSON decoder's end index rather than re-serialised, so a trace (and a re-render of the
history) keeps the model's own bytes. A block that is not valid JSON with a string `name` and an
object `arguments` is not a call; the whole text then stays content.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel

_BLOCK = re.compile(r"<tool_call>\n(.*?)\n</tool_call>", re.DOTALL)
_ARGS_KEY = re.compile(r'"arguments"\s*:\s*')


class ParsedCall(BaseModel):
    name: str
    arguments: str


class ParsedReply(BaseModel):
    """`content` is the text before the first call (None when empty); `calls` the parsed calls."""

    content: str | None
    calls: list[ParsedCall]


def parse_reply(text: str, eos: str = "<|im_end|>") -> ParsedReply:
    body = text[: -len(eos)] if text.endswith(eos) else text
    calls: list[ParsedCall] = []
    first: int | None = None
    for match in _BLOCK.finditer(body):
        call = _parse_call(match.group(1))
        if call is None:
            return ParsedReply(content=body or None, calls=[])
        calls.append(call)
        first = match.start() if first is None else first
    if not calls:
        return ParsedReply(content=body or None, calls=[])
    head = body[:first]
    return ParsedReply(content=head or None, calls=calls)


def _parse_call(block: str) -> ParsedCall | None:
    try:
        obj = json.loads(block)
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    args = obj.get("arguments", {})
    if not isinstance(args, dict):
        return None
    key = _ARGS_KEY.search(block)
    if key is None:
        return ParsedCall(name=obj["name"], arguments="{}")
    try:
        _, end = json.JSONDecoder().raw_decode(block, key.end())
    except json.JSONDecodeError:
        return None
    return ParsedCall(name=obj["name"], arguments=block[key.end() : end])
