"""TITO chat rendering for rollouts: the first prompt is rendered once, every later piece (tool
observations, the next user request) is rendered as a template *delta* and appended as ids; the
history is never retokenized, so the ids the trainer sees are the ids the policy sampled.

The policy's own chat template (the tokenizer's `chat_template`) is the one source of truth: the
prompt is its render of system + user, and a delta is what it adds after a finished assistant turn
(`render(base + tail)[len(render(base)):]`), which is well defined because the template is
prefix-preserving (checked on every delta). So the observation a policy sees in RL is the `tool`
turn it was trained on in SFT and is served with, whatever model's template that is. A delta never
contains the sampled assistant ids, so they are never re-rendered.

`HermesTemplate` reads replies in the Hermes/Qwen3 layout (`<tool_call>{"name", "arguments"}
</tool_call>` blocks ending in `<|im_end|>`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Protocol

from weft_train.errors import TrainUserError
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


# A finished conversation every delta is appended to: deltas follow an assistant turn that ended
# with the stop id, and a prefix-preserving template renders what follows independently of it.
_BASE = (
    {"role": "system", "content": "s"},
    {"role": "user", "content": "u"},
    {"role": "assistant", "content": "a"},
)


class HermesTemplate:
    """`TurnTemplate` from the tokenizer's chat template; `tools` (OpenAI function schemas) are
    rendered into the prompt the way the template places them (the policy's: the system turn)."""

    stop_token = "<|im_end|>"

    def __init__(self, tokenizer: Any, tools: Sequence[dict[str, Any]] | None = None) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise TrainUserError("HermesTemplate: the tokenizer has no chat template")
        self.tok = tokenizer
        self.tools = list(tools) if tools else None

    def _ids(self, text: str) -> list[int]:
        return list(self.tok.encode(text, add_special_tokens=False))

    def _render(self, messages: Sequence[dict[str, Any]], generation_prompt: bool) -> str:
        return str(
            self.tok.apply_chat_template(
                list(messages),
                tools=self.tools,
                add_generation_prompt=generation_prompt,
                tokenize=False,
            )
        )

    def _delta(self, tail: Sequence[dict[str, Any]]) -> list[int]:
        before = self._render(_BASE, False)
        after = self._render([*_BASE, *tail], True)
        if not after.startswith(before):
            raise TrainUserError(
                "HermesTemplate: the chat template is not prefix-preserving (a finished assistant "
                "turn renders differently once a message follows it), so deltas are undefined"
            )
        return self._ids(after[len(before) :])

    def prompt(self, system: str, user: str) -> list[int]:
        return self._ids(
            self._render(
                [{"role": "system", "content": system}, {"role": "user", "content": user}], True
            )
        )

    def observation_delta(self, results: Sequence[str]) -> list[int]:
        """One `tool` message per result, in call order."""
        return self._delta([{"role": "tool", "content": r} for r in results])

    def user_delta(self, user: str) -> list[int]:
        return self._delta([{"role": "user", "content": user}])

    def encode(self, text: str) -> list[int]:
        """Ids of text the model writes (demonstrations, scripted replies); rollouts never call it."""
        return self._ids(text)

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
