"""TITO chat rendering for rollouts: the first prompt is rendered once, every later piece (tool
observations, the next user request) is rendered as a template *delta* and appended as ids; the
history is never retokenized, so the ids the trainer sees are the ids the policy sampled.

`HermesTemplate` is the Qwen3/Hermes layout (`<|im_start|>role ... <|im_end|>`, tool calls as
`<tool_call>{"name", "arguments"}</tool_call>`, tool results as `<tool_response>` in a user turn).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Protocol

from weft_train.rl.credit import AssistantMessage, ParsedCall

_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


class TurnTemplate(Protocol):
    """Contract: `prompt` renders system + first user request ending in the assistant generation
    prompt; `observation_delta` and `user_delta` render what follows an assistant message that
    ended with the stop id, ending again in the generation prompt; `parse` reads a generated
    assistant message (stop id stripped) into text, calls and parse errors."""

    stop_token: str

    def prompt(self, system: str, user: str) -> list[int]: ...

    def observation_delta(self, results: Sequence[str]) -> list[int]: ...

    def user_delta(self, user: str) -> list[int]: ...

    def parse(self, ids: Sequence[int]) -> AssistantMessage: ...

    def decode(self, ids: Sequence[int]) -> str: ...


class HermesTemplate:
    stop_token = "<|im_end|>"

    def __init__(self, tokenizer: Any) -> None:
        self.tok = tokenizer

    def _ids(self, text: str) -> list[int]:
        return list(self.tok.encode(text, add_special_tokens=False))

    def prompt(self, system: str, user: str) -> list[int]:
        return self._ids(
            f"<|im_start|>system\n{system}<|im_end|>\n"
            f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
        )

    def observation_delta(self, results: Sequence[str]) -> list[int]:
        body = "\n".join(f"<tool_response>\n{r}\n</tool_response>" for r in results)
        return self._ids(f"\n<|im_start|>user\n{body}<|im_end|>\n<|im_start|>assistant\n")

    def user_delta(self, user: str) -> list[int]:
        return self._ids(f"\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n")

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.tok.decode(list(ids), skip_special_tokens=False))

    def parse(self, ids: Sequence[int]) -> AssistantMessage:
        text = self.decode(ids)
        if text.endswith(self.stop_token):
            text = text[: -len(self.stop_token)]
        calls: list[ParsedCall] = []
        errors: list[str] = []
        for n, m in enumerate(_CALL.finditer(text), 1):
            try:
                body = json.loads(m.group(1))
            except json.JSONDecodeError as exc:
                errors.append(f"tool call {n}: not JSON ({exc.msg})")
                continue
            if not isinstance(body, dict) or not isinstance(body.get("name"), str):
                errors.append(f"tool call {n}: no 'name' string")
                continue
            calls.append(ParsedCall(body["name"], body.get("arguments", {})))
        opened, closed = text.count("<tool_call>"), text.count("</tool_call>")
        if opened != closed:
            errors.append(f"{opened} <tool_call> but {closed} </tool_call>")
        return AssistantMessage(text=text, calls=tuple(calls), parse_errors=tuple(errors))
