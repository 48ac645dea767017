"""Ledger entries: every tool call MegaMCP serves."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import Field

from weft_core.models._base import WeftModel


class ErrorKind(StrEnum):
    """Why a call failed. Tool and argument errors are the policy's; the rest are infrastructure."""

    TOOL_ERROR = "tool_error"
    INVALID_ARGUMENTS = "invalid_arguments"
    UNKNOWN_TOOL = "unknown_tool"
    SERVER_CRASH = "server_crash"
    TIMEOUT = "timeout"
    INFRASTRUCTURE = "infrastructure"

    @property
    def is_infrastructure(self) -> bool:
        return self in (ErrorKind.SERVER_CRASH, ErrorKind.TIMEOUT, ErrorKind.INFRASTRUCTURE)


class LedgerEntry(WeftModel):
    seq: int = Field(description="Order of the call within its session, from 0.")
    session_id: str
    group_id: str | None = None
    mcp: str = Field(description="MCP identifier as registered.")
    mcp_version: int | None = None
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = Field(
        default=None, description="Structured result or text content the agent saw."
    )
    is_error: bool = False
    error_kind: ErrorKind | None = None
    started_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    duration_ms: float = 0.0
    mutated: bool = Field(
        default=False, description="Whether the call changed DB or workspace state."
    )
    state_version: int = Field(default=0, description="Session state version after the call.")
    call_id: str | None = Field(default=None, description="The agent's tool_call id, when known.")
