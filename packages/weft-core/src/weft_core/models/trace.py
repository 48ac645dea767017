"""Trace: one rollout, messages in OpenAI chat format with each tool call tied to its ledger entry."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from weft_core.models._base import Artifact, WeftModel
from weft_core.models.check import EvaluationResult
from weft_core.models.ledger import LedgerEntry
from weft_core.state._checkpoint import CheckpointDiff


class ToolCallFunction(WeftModel):
    name: str
    arguments: str = Field(description="JSON-encoded arguments, as the OpenAI format has them.")


class ToolCall(WeftModel):
    id: str
    type: Literal["function"] = "function"
    function: ToolCallFunction


class ChatMessage(WeftModel):
    """An OpenAI chat message; token ids and logprobs when the model gave them (TITO training)."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None


class ModelCall(WeftModel):
    """One call to the policy, token-exact (TITO): the ids the engine conditioned on, the ids it
    sampled with their logprobs, its raw text and why it stopped. Training samples are built from
    these ids, never by re-tokenising `messages` (notes/token-capture.md §4)."""

    message_index: int = Field(description="Index in `Trace.messages` of the reply this call made.")
    prompt_token_ids: list[int] = Field(default_factory=list)
    completion_token_ids: list[int] = Field(default_factory=list)
    completion_logprobs: list[float] = Field(
        default_factory=list, description="Processed logprob of each completion id."
    )
    text: str | None = Field(default=None, description="The completion exactly as sampled.")
    finish_reason: str | None = None


class TurnSegment(WeftModel):
    """The messages and ledger entries of one atomic-task turn, and its checkpoint outcome."""

    node_id: str
    start: int = Field(description="Index of the first message of the turn.")
    end: int = Field(description="Index after the last message of the turn.")
    ledger_seqs: dict[str, list[int]] = Field(
        default_factory=dict, description="MCP -> seq numbers of the turn's ledger entries."
    )
    outcome: EvaluationResult | None = None
    attempts: int = Field(
        default=1, description="Samples of this turn, the kept one included (rejection sampling)."
    )
    teacher_calls: int = Field(
        default=0, description="Model calls spent on this turn, all attempts."
    )
    tokens: int = Field(
        default=0, description="Completion tokens spent on this turn, all attempts."
    )
    state_diff: CheckpointDiff | None = Field(
        default=None,
        description="Rows and files the turn inserted / updated / deleted, per MCP, as MegaMCP "
        "diffed them at the turn's checkpoint (Trace schema 2; None in older traces).",
    )


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


class Trace(Artifact):
    """One rollout. Its content hash leaves out the ledger's clock fields (`started_at`,
    `duration_ms`): the same episode replayed later is the same trace.

    Schema 2 added `TurnSegment.state_diff`; a schema-1 trace loads unchanged, with its hash.
    """

    SCHEMA_VERSION: ClassVar[int] = 2
    OMIT_ITEM_FIELDS_WHEN_UNSET: ClassVar[dict[str, frozenset[str]]] = {
        "segments": frozenset({"state_diff"})
    }
    CLOCK_FIELDS: ClassVar[dict[str, Any]] = {
        "ledger": {"__all__": {"started_at": True, "duration_ms": True}}
    }
    OMIT_WHEN_UNSET: ClassVar[frozenset[str]] = frozenset({"task_hash"})

    schema_version: int = Field(default=2, description="Format version of this artifact class.")
    id: str
    task_id: str
    task_hash: str | None = Field(
        default=None, description="content_hash of the TaskGraph rolled out (its content address)."
    )
    view: str
    harness: str
    model: str = "programmatic"
    reference: bool = Field(
        default=False,
        description="Played by a policy that reads the task's reference calls (the answer key): "
        "its pass rates hold by construction and are never a policy's result.",
    )
    tools: list[dict[str, Any]] = Field(
        default_factory=list, description="OpenAI tool definitions."
    )
    messages: list[ChatMessage] = Field(default_factory=list)
    ledger: list[LedgerEntry] = Field(default_factory=list)
    segments: list[TurnSegment] = Field(default_factory=list)
    model_calls: list[ModelCall] = Field(
        default_factory=list, description="Every policy call with its token ids, when served so."
    )
    final: EvaluationResult | None = None
    # Model calls a capture gateway recorded for this rollout (any harness; see CapturedCall).
    captured_calls: list[CapturedCall] = Field(default_factory=list)
    infrastructure_retries: int = 0
    error: str | None = Field(default=None, description="Why the rollout did not finish, if so.")

    @property
    def checkpoint_pass_rate(self) -> float:
        done = [s for s in self.segments if s.outcome is not None]
        if not done:
            return 0.0
        return sum(1 for s in done if s.outcome is not None and s.outcome.passed) / len(done)

    @property
    def reward(self) -> float:
        """Mean of binary checkpoint outcomes (paper App. C.2)."""
        return self.checkpoint_pass_rate
