"""The part of the MegaMCP client SDK a rollout needs (weft_megamcp.client.MegaMCPClient has it).

Kept as a Protocol so the runner states exactly what it relies on: a session group per rollout
created from the task's initial snapshots with the task's checks as its verifier; checkpoint
verification run server-side; a real MCP call into a group (agentic ledger replay); freeze,
final verification, the ledger, and close.
"""

from __future__ import annotations

from typing import Any, Protocol

from weft_core.models import Verifier


class SessionLike(Protocol):
    url: str
    token: str


class GroupLike(Protocol):
    group_id: str
    sessions: Any  # Mapping[str, SessionLike]


class VerificationLike(Protocol):
    outcomes: Any  # list[CheckOutcome]
    passed: bool


class GroupService(Protocol):
    """Contract: every method talks to a real MegaMCP host; failures of the host raise
    (WeftRuntimeError or transport errors), input errors raise UserError subclasses."""

    async def create_group(
        self,
        mcps: dict[str, str | None],
        verifier: Verifier | None = None,
        task_id: str | None = None,
        bindings: dict[str, Any] | None = None,
    ) -> Any: ...

    async def checkpoint_verify(self, group: Any, checkpoint: str) -> Any: ...

    async def call_tool(
        self, group: Any, mcp_id: str, tool: str, arguments: dict[str, Any] | None = None
    ) -> Any: ...

    async def freeze(self, group: Any) -> Any: ...

    async def verify(self, group: Any) -> Any: ...

    async def ledger(self, group: Any) -> Any: ...

    async def close(self, group: Any) -> Any: ...
