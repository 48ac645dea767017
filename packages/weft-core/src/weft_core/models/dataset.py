"""Dataset rows: SFT JSONL (messages + tools) and RL task JSONL."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from weft_core.models._base import WeftModel
from weft_core.models.trace import ChatMessage


class SFTRow(WeftModel):
    """One SFT example, loadable by OpenRLHF's SFT trainer with a chat template that takes tools."""

    schema_version: int = 1
    messages: list[ChatMessage]
    tools: list[dict[str, Any]] = Field(default_factory=list)
    task_id: str | None = None
    trace_id: str | None = None
    content_hash: str | None = None


class RLTaskRow(WeftModel):
    """One RL task: the prompt the policy starts from and where its task graph and verifier live."""

    schema_version: int = 1
    task_id: str
    prompt: list[ChatMessage]
    tools: list[dict[str, Any]] = Field(default_factory=list)
    task_uri: str = Field(description="Where the TaskGraph JSON is stored.")
    view: str = "agentic"
    metadata: dict[str, Any] = Field(default_factory=dict)
    content_hash: str | None = None
