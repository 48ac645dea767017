"""Trace: one rollout, messages in OpenAI chat format with each tool call tied to its ledger entry."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar, Literal, Self

from pydantic import Field, ModelWrapValidatorHandler, PrivateAttr, model_validator

from weft_core._hashing import content_hash
from weft_core.exceptions import ArtifactError
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
        "diffed them at the turn's checkpoint (Trace schema 3; None in older traces).",
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


class FailureKind(StrEnum):
    """What went wrong in a rollout, so a reader can tell the policy's outcome from the rest."""

    INFRASTRUCTURE = "infrastructure"
    """MegaMCP, a transport or the model endpoint failed (retries exhausted): the rollout says
    nothing about the policy and is counted apart, never as a failed task."""
    HARNESS = "harness"
    """The harness could not run or finish the episode (unknown, unsupported mode, stopped)."""
    VERIFIER = "verifier"
    """A checkpoint or the final verification returned an error instead of an outcome."""
    LEDGER = "ledger"
    """The transcript's tool calls and MegaMCP's ledger disagree (or the agentic replay diverged)."""
    ROLLOUT = "rollout"
    """Any other exception while rolling out (a bug, a bad task): the message names it."""


class TraceFailure(WeftModel):
    """One thing that went wrong in a rollout (a trace may finish and still carry some)."""

    kind: FailureKind
    message: str = Field(description="What happened, in one line (exception type and text).")
    where: str | None = Field(
        default=None,
        description="The rollout step it happened in: 'harness', 'checkpoint <node id>', "
        "'final verification', 'ledger', 'agentic replay'; None when not known.",
    )

    def __str__(self) -> str:
        at = f" at {self.where}" if self.where else ""
        return f"{self.kind.value}{at}: {self.message}"


# Schema 1 kept every failure in `error: str | None`, an infrastructure failure marked by this prefix.
_V1_INFRA_PREFIX = "infrastructure: "
_V1_FORMS = (
    ("harness stopped: ", FailureKind.HARNESS, "harness"),
    ("unknown harness ", FailureKind.HARNESS, None),
    ("harness ", FailureKind.HARNESS, None),
    ("final verification: verifier error: ", FailureKind.VERIFIER, "final verification"),
    ("checkpoint ", FailureKind.VERIFIER, None),
    ("agentic replay diverged", FailureKind.LEDGER, "agentic replay"),
    ("ledger entry ", FailureKind.LEDGER, "ledger"),
    ("tool call ", FailureKind.LEDGER, "ledger"),
)
_NOT_MIGRATED = object()


def failures_from_v1(error: str | None) -> list[TraceFailure]:
    """The failures a schema-1 `error` string stood for. The old string joined several problems
    with '; ' (and a message may contain '; ' itself), so it becomes one failure, its kind read
    from the string's first problem; nothing of the text is lost."""
    if not error:
        return []
    if error.startswith(_V1_INFRA_PREFIX):
        return [
            TraceFailure(kind=FailureKind.INFRASTRUCTURE, message=error[len(_V1_INFRA_PREFIX) :])
        ]
    for prefix, kind, where in _V1_FORMS:
        if error.startswith(prefix):
            return [TraceFailure(kind=kind, message=error, where=where)]
    return [TraceFailure(kind=FailureKind.ROLLOUT, message=error)]


class Trace(Artifact):
    """One rollout. Its content hash leaves out the ledger's clock fields (`started_at`,
    `duration_ms`): the same episode replayed later is the same trace.

    Schema 3 added `TurnSegment.state_diff`; a schema-2 trace (none recorded) loads unchanged,
    with its hash, as it is left out of the hash while unset.
    """

    # 2: typed `failures` replace the `error` string; 3: `TurnSegment.state_diff`.
    SCHEMA_VERSION: ClassVar[int] = 3
    OMIT_ITEM_FIELDS_WHEN_UNSET: ClassVar[dict[str, frozenset[str]]] = {
        "segments": frozenset({"state_diff"})
    }
    CLOCK_FIELDS: ClassVar[dict[str, Any]] = {
        "ledger": {"__all__": {"started_at": True, "duration_ms": True}}
    }
    OMIT_WHEN_UNSET: ClassVar[frozenset[str]] = frozenset({"task_hash"})

    schema_version: int = Field(default=3, description="Format version of this artifact class.")
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
    failures: list[TraceFailure] = Field(
        default_factory=list,
        description="What went wrong: why the rollout did not finish, or what it finished with "
        "(a verifier error, a ledger mismatch); empty for a clean rollout.",
    )
    # The `error` string of a schema-1 trace this one was migrated from (its hash covers it).
    _v1_error: object = PrivateAttr(default=_NOT_MIGRATED)

    @model_validator(mode="wrap")
    @classmethod
    def _migrate_v1(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        """Schema 1 (an `error` string, infrastructure marked by a prefix) loads as schema 2."""
        legacy: object = _NOT_MIGRATED
        # Every schema-1 file names its version; a constructor call that passes `error`
        # (no version) is refused as an unknown field rather than guessed at.
        version = data.get("schema_version") if isinstance(data, dict) else None
        if isinstance(data, dict) and isinstance(version, int) and version < 2:
            data = dict(data)
            legacy = data.pop("error", None)
            data["failures"] = failures_from_v1(legacy if isinstance(legacy, str) else None)
            data["schema_version"] = 2
        trace = handler(data)
        trace._v1_error = legacy
        return trace

    @property
    def error(self) -> str | None:
        """Every failure in one line (for display), or None for a clean rollout."""
        return "; ".join(str(f) for f in self.failures) or None

    @property
    def failed_on_infrastructure(self) -> bool:
        """The rollout did not run to the end for reasons that are not the policy's: leave it
        out of every policy figure (pass rates, rewards, tool-error rates)."""
        return any(f.kind is FailureKind.INFRASTRUCTURE for f in self.failures)

    def verify_hash(self) -> None:
        if self.content_hash is None or self.content_hash == self.compute_hash():
            return
        if self._v1_error is not _NOT_MIGRATED and self.content_hash == self._v1_hash():
            return  # a migrated schema-1 trace, intact
        raise ArtifactError("Trace content does not match its content_hash")

    def _v1_hash(self) -> str:
        """The hash this trace had as schema 1: `error` in place of `failures`."""
        data = self.hashed_content()
        data.pop("failures")
        data["error"], data["schema_version"] = self._v1_error, 1
        return content_hash(data)

    @classmethod
    def from_json(cls, text: str | bytes, *, source: str = "<string>") -> Self:
        trace = super().from_json(text, source=source)
        # Sealed again under schema 2, so a saved copy checks against today's rule.
        return trace if trace._v1_error is _NOT_MIGRATED else trace.sealed()

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
