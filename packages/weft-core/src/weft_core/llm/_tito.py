"""ChatOpenAI that keeps vLLM's token fields (TITO) on every reply.

langchain-openai parses a chat completion into an AIMessage and drops what OpenAI does not define:
vLLM's `prompt_token_ids` and `choices[].token_ids`, and the raw JSON text of tool-call arguments
(it keeps a parsed dict). This subclass asks for them (`return_token_ids`, `logprobs`) and stores them
in `response_metadata["weft_tito"]`: prompt ids, completion ids, processed logprobs, the raw completion
text (from the logprob bytes) and each tool call's argument string exactly as the server sent it.
"""

from __future__ import annotations

from typing import Any

import openai
from langchain_core.outputs import ChatResult
from langchain_openai import ChatOpenAI

from weft_core.llm._names import TITO_KEY


class TokenCapturingChatOpenAI(ChatOpenAI):
    """A ChatOpenAI for vLLM-compatible servers whose replies carry their token ids."""

    def __init__(self, **kwargs: Any) -> None:
        extra = dict(kwargs.pop("extra_body", None) or {})
        extra.setdefault("return_token_ids", True)
        kwargs.setdefault("logprobs", True)
        super().__init__(extra_body=extra, **kwargs)

    def _create_chat_result(
        self,
        response: dict[str, Any] | openai.BaseModel,
        generation_info: dict[str, Any] | None = None,
    ) -> ChatResult:
        result = super()._create_chat_result(response, generation_info)
        data = response if isinstance(response, dict) else response.model_dump(warnings=False)
        prompt_ids = data.get("prompt_token_ids")
        for gen, choice in zip(result.generations, data.get("choices") or [], strict=False):
            gen.message.response_metadata[TITO_KEY] = tito_record(choice, prompt_ids)
        return result


def tito_record(choice: dict[str, Any], prompt_ids: list[int] | None) -> dict[str, Any]:
    """The token-exact record of one choice of a chat completion."""
    entries = ((choice.get("logprobs") or {}).get("content")) or []
    raw = b"".join(bytes(e.get("bytes") or []) for e in entries)
    calls = (choice.get("message") or {}).get("tool_calls") or []
    return {
        "prompt_token_ids": list(prompt_ids or []),
        "token_ids": list(choice.get("token_ids") or []),
        "logprobs": [float(e["logprob"]) for e in entries if "logprob" in e],
        "text": raw.decode("utf-8", errors="replace") if entries else None,
        "finish_reason": choice.get("finish_reason"),
        "arguments": [str((c.get("function") or {}).get("arguments", "")) for c in calls],
    }
