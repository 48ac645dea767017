"""One model call as a capture gateway saw it: what the harness asked and what the engine sampled,
token-exact where the upstream returns token ids (vLLM's `return_token_ids`)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from weft_core.models._base import WeftModel
from weft_core.models.trace import ChatMessage, Trace


class CapturedCall(WeftModel):
    """A chat-completion call of one rollout, recorded by the capture gateway.

    `prompt_token_ids` is the prompt the engine conditioned on and `completion_token_ids` with
    `completion_logprobs` what it sampled, so one call is a retokenization-free training sample.
    `merges_with_previous` says whether this call's prompt starts with the previous call's prompt
    and completion ids exactly (then both belong to one token sequence); None when either call has
    no ids or it is the rollout's first call.
    """

    index: int = Field(ge=0, description="Position of the call within its rollout.")
    request: dict[str, Any] = Field(
        default_factory=dict,
        description="The harness's request body without `messages` and `tools` (sampling options).",
    )
    prompt_messages: int = Field(
        default=0, ge=0, description="How many messages the request's prompt had."
    )
    message_index: int | None = Field(
        default=None, description="Index in Trace.messages of the assistant message it produced."
    )
    forced: list[str] = Field(
        default_factory=list, description="Request fields the gateway added (return_token_ids...)."
    )
    stream: bool = False
    status: int = Field(default=200, description="HTTP status the upstream answered.")
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    completion_logprobs: list[float] | None = None
    message: ChatMessage | None = Field(default=None, description="The parsed assistant reply.")
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    latency_s: float = Field(default=0.0, ge=0, description="Request to last byte, in seconds.")
    error: str | None = Field(default=None, description="Why the call failed, if it did.")
    merges_with_previous: bool | None = None

    @property
    def has_token_ids(self) -> bool:
        return self.prompt_token_ids is not None and self.completion_token_ids is not None


# Trace names CapturedCall only for type checkers (this module imports trace.py); resolve it here.
Trace.model_rebuild(_types_namespace={"CapturedCall": CapturedCall})
