"""Dataset rows: SFT JSONL (messages + tools) and RL task JSONL."""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import Field, field_validator, model_validator

from weft_core._hashing import content_hash
from weft_core.exceptions import ArtifactError
from weft_core.models._base import WeftModel
from weft_core.models.trace import ChatMessage
from weft_core.refs import check_ref


class _HashedRow(WeftModel):
    """A dataset row: one JSONL line with its own schema version and content hash.

    Rows are immutable once written (a new dataset is a new file), so they carry no revision
    number; `content_hash` covers everything but itself and is filled by `sealed()`.
    """

    SCHEMA_VERSION: ClassVar[int] = 1

    @model_validator(mode="after")
    def _check_schema_version(self) -> Self:
        version = getattr(self, "schema_version", 1)
        if version > self.SCHEMA_VERSION:
            raise ValueError(
                f"{type(self).__name__} schema_version {version} is newer than this weft-core "
                f"understands ({self.SCHEMA_VERSION}); upgrade weft-core"
            )
        return self

    def compute_hash(self) -> str:
        return content_hash(self.model_dump(mode="json", exclude={"content_hash"}))

    def sealed(self) -> Self:
        return self.model_copy(update={"content_hash": self.compute_hash()})

    def verify_hash(self) -> None:
        stored = getattr(self, "content_hash", None)
        if stored is not None and stored != self.compute_hash():
            raise ArtifactError(f"{type(self).__name__} content does not match its content_hash")


class SFTRow(_HashedRow):
    """One SFT example, loadable by OpenRLHF's SFT trainer with a chat template that takes tools."""

    schema_version: int = 1
    messages: list[ChatMessage]
    tools: list[dict[str, Any]] = Field(default_factory=list)
    task_id: str | None = None
    trace_id: str | None = None
    content_hash: str | None = None


class RLTaskRow(_HashedRow):
    """One RL task: the prompt the policy starts from and where its task graph and verifier live."""

    schema_version: int = 1
    task_id: str
    prompt: list[ChatMessage]
    tools: list[dict[str, Any]] = Field(default_factory=list)
    task_uri: str = Field(
        description="The TaskGraph JSON: corpus-relative path, content address or object-store URL."
    )
    view: str = "agentic"
    metadata: dict[str, Any] = Field(default_factory=dict)
    content_hash: str | None = None

    @field_validator("task_uri")
    @classmethod
    def _relocatable(cls, value: str) -> str:
        return check_ref(value, field="RLTaskRow.task_uri")
